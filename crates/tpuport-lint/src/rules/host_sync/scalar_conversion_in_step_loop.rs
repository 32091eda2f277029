//! TPU206: `float(loss)` / `int(t)` / `bool(t)` in the step loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::is_builtin_call;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `float(x)`, `int(x)` and `bool(x)` on a tensor inside a training or
    /// evaluation step loop.
    ///
    /// ## Why is this bad on TPU?
    /// The conversion calls `.item()` under the hood: the device runs the pending graph and
    /// sends the scalar back before the next step can be traced.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     losses.append(float(loss))
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for x, y in loader:
    ///     ...
    ///     losses.append(loss.detach())
    /// mean_loss = torch.stack(losses).mean().item()   # once
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#2120: scalar reads slowed training ~100x](https://github.com/pytorch/xla/issues/2120)
    /// - [pytorch/xla#909: implicit `_local_scalar_dense`](https://github.com/pytorch/xla/issues/909)
    pub(crate) struct ScalarConversionInStepLoop { func: String }
}

impl Violation for ScalarConversionInStepLoop {
    fn message(&self) -> String {
        format!("`{}()` of a tensor in the step loop syncs the device every step", self.func)
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Keep the value as a device tensor; convert every N steps or after the loop".to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() || call.args.len() != 1 {
        return;
    }
    for func in ["float", "int", "bool"] {
        if is_builtin_call(checker, call, func) && checker.is_tensor(&call.args[0]) {
            checker.report(&ScalarConversionInStepLoop { func: func.to_owned() }, call.func.span);
        }
    }
}
