//! TPU203: `.numpy()` in the step loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::host_sync::host_method_in_step;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `.numpy()` inside a training or evaluation step loop (PyTorch tensors, TF
    /// eager tensors, JAX arrays).
    ///
    /// ## Why is this bad on TPU?
    /// Converting to NumPy needs the value on the host: the device must finish the step and
    /// copy the data back before Python continues, every step.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = train_step(x, y)
    ///     history.append(loss.numpy())
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     loss = train_step(x, y)
    ///     if step % 100 == 0:
    ///         history.append(loss.numpy())
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#1399: per-step host reads slow training](https://github.com/pytorch/xla/issues/1399)
    /// - [tensorflow/tpu#797: host work in TPU training loops](https://github.com/tensorflow/tpu/issues/797)
    pub(crate) struct NumpyInStepLoop {}
}

impl Violation for NumpyInStepLoop {
    fn message(&self) -> String {
        "`.numpy()` in the step loop copies to the host and syncs every step".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Read values every N steps, or after the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if let Some(span) = host_method_in_step(checker, call, "numpy") {
        checker.report(&NumpyInStepLoop {}, span);
    }
}
