//! TPU204: `.tolist()` in the step loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::host_sync::host_method_in_step;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `.tolist()` inside a training or evaluation step loop.
    ///
    /// ## Why is this bad on TPU?
    /// `.tolist()` materialises every element as a Python object on the host: the device
    /// syncs, the tensor is copied back and converted element by element, every step.
    ///
    /// ## Example
    /// ```python
    /// for batch in loader:
    ///     logits = model(batch)
    ///     loss = criterion(logits, batch["labels"])
    ///     loss.backward()
    ///     optimizer.step()
    ///     predictions.extend(logits.argmax(-1).tolist())
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for batch in loader:
    ///     ...
    ///     predictions.append(logits.argmax(-1))   # device tensors
    /// predictions = torch.cat(predictions).tolist()  # once, after the loop
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [PyTorch/XLA troubleshooting: execution caused by accessing tensor values](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    /// - [pytorch/xla#909: `_local_scalar_dense` grows](https://github.com/pytorch/xla/issues/909)
    pub(crate) struct TolistInStepLoop {}
}

impl Violation for TolistInStepLoop {
    fn message(&self) -> String {
        "`.tolist()` in the step loop copies to the host and syncs every step".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Collect device tensors and convert once after the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if let Some(span) = host_method_in_step(checker, call, "tolist") {
        checker.report(&TolistInStepLoop {}, span);
    }
}
