//! TPU205: `print(tensor)` in the step loop.

use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::rules::helpers::is_builtin_call;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `print(...)` of a tensor (directly or inside an f-string) in a training or
    /// evaluation step loop. Printing a Python number (e.g. `loss.item()`, flagged by TPU201)
    /// or a string is not flagged here.
    ///
    /// ## Why is this bad on TPU?
    /// Formatting a tensor reads its values, which executes the pending graph and copies the
    /// data to the host. One user saw a single `print(tensor)` take over two minutes.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     print(f"loss {loss}")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     ...
    ///     if step % 100 == 0:
    ///         xm.add_step_closure(lambda l=loss: print(f"loss {l}"))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#7596: `print(tensor)` took over 2 minutes](https://github.com/pytorch/xla/issues/7596)
    /// - [pytorch/xla#1399: printing progress every step slows training](https://github.com/pytorch/xla/issues/1399)
    pub(crate) struct PrintTensorInStepLoop {}
}

impl Violation for PrintTensorInStepLoop {
    fn message(&self) -> String {
        "`print` of a tensor in the step loop syncs the device every step".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Print every N steps, or from `xm.add_step_closure`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() || !is_builtin_call(checker, call, "print") {
        return;
    }
    let prints_tensor = call.args.iter().any(|a| match &a.kind {
        ExprKind::FString(parts) => parts.iter().any(|p| checker.is_tensor(p)),
        _ => checker.is_tensor(a),
    });
    if prints_tensor {
        checker.report(&PrintTensorInStepLoop {}, call.func.span);
    }
}
