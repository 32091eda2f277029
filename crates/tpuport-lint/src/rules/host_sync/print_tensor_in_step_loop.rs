//! TPU205: `print(tensor)` in the step loop.

use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::rules::helpers::is_builtin_call;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `print(...)` of a tensor (directly or inside an f-string) in a training or
    /// evaluation step loop; for a tensor formatted into any call's argument there
    /// (`pbar.set_description(f"loss {loss}")`, `log("%f" % loss)`, `"{}".format(loss)`); and
    /// for a tensor handed to a logging sink that converts it (`writer.add_scalar(tag, loss)`,
    /// `pbar.set_postfix(loss=loss)`). Printing a Python number (e.g. `loss.item()`, flagged by
    /// TPU201) or a string is not flagged here.
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
    pub(crate) struct PrintTensorInStepLoop { what: &'static str }
}

impl Violation for PrintTensorInStepLoop {
    fn message(&self) -> String {
        format!("{} in the step loop syncs the device every step", self.what)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Print every N steps, or from `xm.add_step_closure`".to_owned())
    }
}

/// Logging sinks that turn a tensor argument into a host number.
const SINKS: &[&str] = &["add_scalar", "add_scalars", "add_histogram", "set_postfix"];

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() {
        return;
    }
    let values = || call.args.iter().chain(call.keywords.iter().map(|k| &k.value));
    if is_builtin_call(checker, call, "print") {
        if values().any(|a| checker.is_tensor(a) || formats_tensor(checker, a)) {
            checker.report(&PrintTensorInStepLoop { what: "`print` of a tensor" }, call.func.span);
        }
        return;
    }
    if values().any(|a| formats_tensor(checker, a)) {
        checker.report(&PrintTensorInStepLoop { what: "Formatting a tensor" }, call.func.span);
    } else if call.func.last_name().is_some_and(|n| SINKS.contains(&n))
        && values().any(|a| checker.is_tensor(a))
    {
        checker.report(&PrintTensorInStepLoop { what: "Logging a tensor" }, call.func.span);
    }
}

/// A string built from a tensor: an f-string interpolating one, `"..." % t` or
/// `"..." % (.., t, ..)`, `"...".format(.., t, ..)`.
fn formats_tensor(checker: &Checker, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::FString(parts) => parts.iter().any(|p| checker.is_tensor(p)),
        ExprKind::BinOp { left, op: "%", right } if left.as_str().is_some() => match &right.kind {
            ExprKind::Tuple(items) => items.iter().any(|x| checker.is_tensor(x)),
            _ => checker.is_tensor(right),
        },
        ExprKind::Call(c) => {
            matches!(&c.func.kind, ExprKind::Attribute { value, attr }
                if attr.name == "format" && value.as_str().is_some())
                && c.args
                    .iter()
                    .chain(c.keywords.iter().map(|k| &k.value))
                    .any(|x| checker.is_tensor(x))
        }
        _ => false,
    }
}
