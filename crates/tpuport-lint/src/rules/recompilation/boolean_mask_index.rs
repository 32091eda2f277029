//! TPU107: indexing a tensor with a boolean mask.

use tpuport_python::ast::{Expr, ExprKind};

use crate::checker::Checker;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for reads like `x[x > 0]`, `x[~mask]` or `x[(a > 0) & (b < 1)]`: indexing a
    /// tensor with a boolean mask built from a comparison.
    ///
    /// ## Why is this bad on TPU?
    /// Boolean indexing is `nonzero` in disguise: the result's length depends on the data.
    /// PyTorch/XLA must sync to learn the length and compiles a new graph for each new length;
    /// under `jax.jit` it raises `NonConcreteBooleanIndexError`.
    ///
    /// Assignments such as `x[x < 0] = 0` are not flagged: they keep the shape.
    ///
    /// ## Example
    /// ```python
    /// positives = scores[scores > 0.5]
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// positives = torch.where(scores > 0.5, scores, torch.zeros_like(scores))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix: what replaces the dropped elements depends on the use.
    ///
    /// ## References
    /// - [pytorch/xla#2661: boolean masking recompiles](https://github.com/pytorch/xla/issues/2661)
    /// - [PyTorch/XLA troubleshooting: dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    pub(crate) struct BooleanMaskIndex {}
}

impl Violation for BooleanMaskIndex {
    fn message(&self) -> String {
        "Boolean-mask indexing gives a data-dependent shape".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Use `torch.where(mask, x, 0)` / `jnp.where(mask, x, 0)` and keep the full shape"
                .to_owned(),
        )
    }
}

fn is_mask(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Compare { ops, .. } => ops.iter().all(|o| {
            !matches!(
                o,
                tpuport_python::ast::CmpOp::Is
                    | tpuport_python::ast::CmpOp::IsNot
                    | tpuport_python::ast::CmpOp::In
                    | tpuport_python::ast::CmpOp::NotIn
            )
        }),
        ExprKind::UnaryOp { op: "~", operand } => {
            is_mask(operand) || operand.as_name().is_some_and(|n| n.contains("mask"))
        }
        ExprKind::BinOp { op: "&" | "|", left, right } => is_mask(left) || is_mask(right),
        _ => false,
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr) {
    if !(checker.uses(Framework::PyTorch) || checker.uses(Framework::Jax))
        || checker.is_store_target(expr.span)
    {
        return;
    }
    let ExprKind::Subscript { slice, .. } = &expr.kind else { return };
    if is_mask(slice) {
        checker.report(&BooleanMaskIndex {}, expr.span);
    }
}
