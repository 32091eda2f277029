//! TPU408: float16 casts and dtypes.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::{method, method_span};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for float16 on the device: `Tensor.half()`, `torch.float16` / `torch.half`,
    /// `jnp.float16`, `tf.float16` (outside autocast calls, which TPU401 covers).
    /// Branches that only run off TPU (the `else` of `if platform == "tpu":`, the body of
    /// `if platform == "gpu":`) are not flagged.
    ///
    /// ## Why is this bad on TPU?
    /// TPUs have native bfloat16, not float16. float16 tensors are computed by conversion or
    /// rejected ("Unsupported XLA type"), and float16's narrow exponent range needs loss
    /// scaling that bfloat16 does not.
    ///
    /// ## Example
    /// ```python
    /// model = model.half()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// model = model.to(torch.bfloat16)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: bfloat16 has less mantissa precision than float16.
    ///
    /// ## References
    /// - [pytorch/xla#2917: "Unsupported XLA type 10" with fp16](https://github.com/pytorch/xla/issues/2917)
    /// - [pytorch/xla#4740: use bf16 on TPU](https://github.com/pytorch/xla/issues/4740)
    pub(crate) struct HalfCast { what: String }
}

impl Violation for HalfCast {
    fn message(&self) -> String {
        format!("`{}`: TPUs compute in bfloat16, not float16", self.what)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use bfloat16".to_owned())
    }
}

const F16: &[&str] = &["torch.float16", "torch.half", "jax.numpy.float16", "tensorflow.float16"];

pub(crate) fn check_attr(checker: &mut Checker, expr: &Expr) {
    if checker.in_non_tpu_branch() {
        return; // `else: jnp.float16` of `if platform == "tpu": jnp.bfloat16`
    }
    let Some(q) = checker.semantic.qualified_name(expr) else { return };
    if !F16.contains(&q.as_str()) {
        return;
    }
    if let Some(p) = checker.parent_expr() {
        if p.dotted().is_some() {
            return;
        }
        if let Some(c) = p.as_call()
            && checker.semantic.qualified_name(&c.func).is_some_and(|n| n.contains("autocast"))
        {
            return;
        }
    }
    let text = checker.text(expr.span).to_owned();
    let Some(i) = text.rfind('.') else { return };
    let start = expr.span.start + u32::try_from(i + 1).unwrap_or(0);
    let edit = Edit::replace(tpuport_python::Span::new(start, expr.span.end), "bfloat16");
    if let Some(d) = checker.report(&HalfCast { what: text }, expr.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}

pub(crate) fn check_call(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::PyTorch) || !call.args.is_empty() || checker.in_non_tpu_branch() {
        return;
    }
    let Some((recv, "half")) = method(call) else { return };
    if checker.semantic.qualified_name(recv).is_some() {
        return;
    }
    let Some(span) = method_span(call) else { return };
    if let Some(d) = checker.report(&HalfCast { what: ".half()".to_owned() }, span) {
        d.set_fix(Fix::unsafe_(vec![Edit::replace(span, "bfloat16()")]));
    }
}
