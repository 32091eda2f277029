//! TPU202: `.cpu()` in the step loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::host_sync::host_method_in_step;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `.cpu()` inside a training or evaluation step loop.
    ///
    /// ## Why is this bad on TPU?
    /// Moving a tensor to the CPU forces the lazy graph to execute and copies the result
    /// over PCIe; a blocking `.cpu()` every step stops tracing of the next step from
    /// overlapping with execution of this one.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     out = model(x)
    ///     loss = criterion(out, y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     preds.append(out.argmax(-1).cpu())
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for x, y in loader:
    ///     out = model(x)
    ///     loss = criterion(out, y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     correct += (out.argmax(-1) == y).sum()   # stays on device
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#7943: blocking `.cpu()` every step](https://github.com/pytorch/xla/issues/7943)
    /// - [PyTorch/XLA troubleshooting: `TransferFromDeviceTime too frequent`](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    pub(crate) struct CpuInStepLoop {}
}

impl Violation for CpuInStepLoop {
    fn message(&self) -> String {
        "`.cpu()` in the step loop copies to the host and syncs every step".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Keep metrics on device and transfer every N steps or after the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if let Some(span) = host_method_in_step(checker, call, "cpu") {
        checker.report(&CpuInStepLoop {}, span);
    }
}
