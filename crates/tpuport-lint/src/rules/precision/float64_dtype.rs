//! TPU404: float64 on the device.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::{method, method_span};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for float64 device dtypes: `torch.float64` / `torch.double`, `Tensor.double()`,
    /// `jnp.float64`, `tf.float64` / `tf.double`. NumPy's `np.float64` (host data) is not
    /// flagged.
    ///
    /// ## Why is this bad on TPU?
    /// TPU matrix units have no float64; XLA emulates it with several float32 operations, so
    /// float64 math is many times slower and doubles HBM use.
    ///
    /// ## Example
    /// ```python
    /// weights = torch.zeros(1024, 1024, dtype=torch.float64)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// weights = torch.zeros(1024, 1024, dtype=torch.float32)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it switches to float32, which changes precision.
    ///
    /// ## References
    /// - [Cloud TPU performance guide: supported data types](https://cloud.google.com/tpu/docs/performance-guide)
    /// - [jax-ml/jax#7010: precision differences between backends](https://github.com/jax-ml/jax/issues/7010)
    pub(crate) struct Float64Dtype { what: String }
}

impl Violation for Float64Dtype {
    fn message(&self) -> String {
        format!("`{}`: TPUs emulate float64 slowly", self.what)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use float32 (or bfloat16) on the device".to_owned())
    }
}

const F64: &[(&str, &str)] = &[
    ("torch.float64", "float32"),
    ("torch.double", "float32"),
    ("jax.numpy.float64", "float32"),
    ("tensorflow.float64", "float32"),
    ("tensorflow.double", "float32"),
];

pub(crate) fn check_attr(checker: &mut Checker, expr: &Expr) {
    let Some(q) = checker.semantic.qualified_name(expr) else { return };
    let Some((_, to)) = F64.iter().find(|(n, _)| *n == q) else { return };
    if let Some(p) = checker.parent_expr()
        && p.dotted().is_some()
    {
        return; // only the full attribute chain
    }
    let text = checker.text(expr.span).to_owned();
    let edit = match text.rfind('.') {
        Some(i) => Edit::replace(
            tpuport_python::Span::new(
                expr.span.start + u32::try_from(i + 1).unwrap_or(0),
                expr.span.end,
            ),
            *to,
        ),
        None => return,
    };
    if let Some(d) = checker.report(&Float64Dtype { what: text }, expr.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}

pub(crate) fn check_call(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::PyTorch) || !call.args.is_empty() {
        return;
    }
    let Some((recv, "double")) = method(call) else { return };
    if checker.semantic.qualified_name(recv).is_some() {
        return;
    }
    let Some(span) = method_span(call) else { return };
    if let Some(d) = checker.report(&Float64Dtype { what: ".double()".to_owned() }, span) {
        d.set_fix(Fix::unsafe_(vec![Edit::replace(span, "float()")]));
    }
}
