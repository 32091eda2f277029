//! TPU2xx: device-to-host transfers inside the step loop.

pub(crate) mod blocking_wait_in_step_loop;
pub(crate) mod cpu_in_step_loop;
pub(crate) mod host_metric_in_step_loop;
pub(crate) mod item_in_step_loop;
pub(crate) mod numpy_in_step_loop;
pub(crate) mod print_tensor_in_step_loop;
pub(crate) mod scalar_conversion_in_step_loop;
pub(crate) mod tolist_in_step_loop;

use tpuport_python::Span;
use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::rules::helpers::{method, method_span};
use crate::semantic::Framework;

/// Span of `.name()` when `call` is that method on a value (not a module) inside the step region.
pub(crate) fn host_method_in_step(checker: &Checker, call: &Call, name: &str) -> Option<Span> {
    let (recv, m) = method(call)?;
    if m != name || !call.args.is_empty() || !checker.in_step_region() {
        return None;
    }
    if !(checker.uses(Framework::PyTorch)
        || checker.uses(Framework::TensorFlow)
        || checker.uses(Framework::Jax))
    {
        return None;
    }
    if checker.semantic.qualified_name(recv).is_some() {
        return None;
    }
    method_span(call)
}
