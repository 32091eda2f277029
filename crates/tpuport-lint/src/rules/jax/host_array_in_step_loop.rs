//! TPU703: `np.asarray` / `jax.device_get` on device arrays in the step loop.

use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks JAX step loops for `np.asarray(x)`, `np.array(x)` and `jax.device_get(x)`.
    ///
    /// ## Why is this bad on TPU?
    /// Converting a device array to NumPy blocks until the computation that produces it has
    /// finished and copies it to the host. Inside the step loop this removes JAX's
    /// asynchronous dispatch: the host stops queueing the next step while it waits.
    ///
    /// ## Example
    /// ```python
    /// for batch in batches:
    ///     state, metrics = train_step(state, batch)
    ///     losses.append(np.asarray(metrics["loss"]))
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for step, batch in enumerate(batches):
    ///     state, metrics = train_step(state, batch)
    ///     if step % 100 == 0:
    ///         losses.append(jax.device_get(metrics["loss"]))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [JAX asynchronous dispatch](https://docs.jax.dev/en/latest/async_dispatch.html)
    /// - [p-doom/jasmine#158: device-to-host bubbles](https://github.com/p-doom/jasmine/issues/158)
    pub(crate) struct HostArrayInStepLoop { call: String }
}

impl Violation for HostArrayInStepLoop {
    fn message(&self) -> String {
        format!("`{}` in the step loop blocks on the device every step", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Fetch values every N steps or after the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::Jax) || !checker.in_step_region() || checker.jit_context().is_some()
    {
        return;
    }
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if !matches!(q.as_str(), "numpy.asarray" | "numpy.array" | "jax.device_get") {
        return;
    }
    let Some(arg) = call.args.first() else { return };
    if matches!(
        arg.kind,
        ExprKind::List(_) | ExprKind::Tuple(_) | ExprKind::Int(_) | ExprKind::Float(_)
    ) {
        return;
    }
    let name = checker.text(call.func.span).to_owned();
    checker.report(&HostArrayInStepLoop { call: name }, call.func.span);
}
