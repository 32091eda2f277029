//! TPU407: Keras `LossScaleOptimizer`.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `mixed_precision.LossScaleOptimizer(opt)` in Keras code.
    ///
    /// ## Why is this bad on TPU?
    /// Loss scaling is for float16. On TPU, with the `mixed_bfloat16` policy, it only adds
    /// work (scale, unscale, finite checks) to every step.
    ///
    /// ## Example
    /// ```python
    /// opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(1e-3))
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// opt = keras.optimizers.Adam(1e-3)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it unwraps the inner optimizer, correct only together with a
    /// bfloat16 policy (TPU403).
    ///
    /// ## References
    /// - [tensorflow/tensorflow#34782: bf16 on TPU without loss scaling](https://github.com/tensorflow/tensorflow/issues/34782)
    /// - [Keras LossScaleOptimizer](https://keras.io/api/mixed_precision/loss_scale_optimizer/)
    pub(crate) struct KerasLossScaleOptimizer {}
}

impl Violation for KerasLossScaleOptimizer {
    fn message(&self) -> String {
        "`LossScaleOptimizer` is float16 loss scaling; not needed with bfloat16 on TPU".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use the inner optimizer directly".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if !(q.ends_with("mixed_precision.LossScaleOptimizer")
        || q.ends_with("mixed_precision.experimental.LossScaleOptimizer"))
    {
        return;
    }
    let fix = call.arg(0, "inner_optimizer").map(|inner| {
        Edit::replace(Span::new(expr.span.start, expr.span.end), checker.text(inner.span))
    });
    if let Some(d) = checker.report(&KerasLossScaleOptimizer {}, call.func.span)
        && let Some(e) = fix
    {
        d.set_fix(Fix::unsafe_(vec![e]));
    }
}
