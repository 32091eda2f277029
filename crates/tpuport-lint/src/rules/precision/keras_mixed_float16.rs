//! TPU403: Keras `mixed_float16` policy.

use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for the Keras mixed-precision policy `"mixed_float16"` passed to
    /// `set_global_policy`, `Policy` / `DTypePolicy` or the older `set_policy`.
    ///
    /// ## Why is this bad on TPU?
    /// TPUs do not compute in float16; the TPU policy is `"mixed_bfloat16"`, which also needs
    /// no loss scaling. Porting a `mixed_float16` GPU model unchanged gives slow or failing
    /// float16 ops.
    ///
    /// ## Example
    /// ```python
    /// keras.mixed_precision.set_global_policy("mixed_float16")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// keras.mixed_precision.set_global_policy("mixed_bfloat16")
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it changes the compute dtype and so the numerics.
    ///
    /// ## References
    /// - [tensorflow/tensorflow#34782: porting `mixed_float16` models to `mixed_bfloat16`](https://github.com/tensorflow/tensorflow/issues/34782)
    /// - [Keras mixed precision guide](https://keras.io/api/mixed_precision/)
    pub(crate) struct KerasMixedFloat16 {}
}

impl Violation for KerasMixedFloat16 {
    fn message(&self) -> String {
        "`mixed_float16` policy: TPUs use `mixed_bfloat16`".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use the `\"mixed_bfloat16\"` policy".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !checker.uses(Framework::TensorFlow) {
        return;
    }
    let name = call.func.last_name().unwrap_or("");
    if !matches!(name, "set_global_policy" | "Policy" | "DTypePolicy" | "set_policy") {
        return;
    }
    let Some(arg) = call.arg(0, "name") else { return };
    if arg.as_str() != Some("mixed_float16") {
        return;
    }
    let text = checker.text(arg.span);
    let quote = if text.starts_with('\'') { "'" } else { "\"" };
    let edit = Edit::replace(arg.span, format!("{quote}mixed_bfloat16{quote}"));
    if let Some(d) = checker.report(&KerasMixedFloat16 {}, arg.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
