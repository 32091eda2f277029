//! TPU201: `.item()` in the step loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::host_sync::host_method_in_step;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `.item()` inside a training or evaluation step loop: a `for`/`while` loop
    /// whose body calls `loss.backward()`, `optimizer.step()`, a `*_step(...)` function or a
    /// jitted function (or inside such a step function). Calls under `if step % N == 0:` are
    /// not flagged, and neither is an `.item()` after the loop.
    ///
    /// ## Why is this bad on TPU?
    /// `.item()` needs the value on the host, so the pending lazy graph is cut, compiled,
    /// executed and copied back before Python can continue. Every step then waits for the
    /// device instead of overlapping tracing with execution (`aten::_local_scalar_dense` in the
    /// metrics report).
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     total += loss.item()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     total += loss.detach()
    ///     if step % 100 == 0:
    ///         print(total.item())
    /// ```
    /// or report from `xm.add_step_closure`.
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#2120: `.item()` made a Reformer run ~100x slower](https://github.com/pytorch/xla/issues/2120)
    /// - [pytorch/xla#2770: `xm.add_step_closure` for logging](https://github.com/pytorch/xla/issues/2770)
    pub(crate) struct ItemInStepLoop {}
}

impl Violation for ItemInStepLoop {
    fn message(&self) -> String {
        "`.item()` in the step loop syncs the device every step".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Accumulate on device and read it every N steps (`if step % N == 0:`) or in `xm.add_step_closure`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if let Some(span) = host_method_in_step(checker, call, "item") {
        checker.report(&ItemInStepLoop {}, span);
    }
}
