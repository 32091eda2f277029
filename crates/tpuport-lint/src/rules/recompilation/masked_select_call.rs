//! TPU106: `masked_select` / `tf.boolean_mask`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.masked_select`, `Tensor.masked_select()` and `tf.boolean_mask`.
    ///
    /// ## Why is this bad on TPU?
    /// The result has as many elements as the mask has `True` values, a shape known only at
    /// run time. PyTorch/XLA falls back or recompiles for each distinct count; TF on TPU needs
    /// static shapes inside `TPUStrategy.run`.
    ///
    /// ## Example
    /// ```python
    /// valid = torch.masked_select(logits, mask)
    /// loss = valid.mean()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// loss = (logits * mask).sum() / mask.sum()
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix: the masked computation has to be rewritten by hand.
    ///
    /// ## References
    /// - [pytorch/xla#1509: `masked_select` falls back to CPU](https://github.com/pytorch/xla/issues/1509)
    /// - [pytorch/xla#2661: masking with `torch.where`](https://github.com/pytorch/xla/issues/2661)
    pub(crate) struct MaskedSelectCall { call: String }
}

impl Violation for MaskedSelectCall {
    fn message(&self) -> String {
        format!("`{}` returns a data-dependent number of elements", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Keep the full shape: multiply by the mask or use `torch.where` / `tf.where(mask, x, 0)`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let q = checker.semantic.qualified_name(&call.func).unwrap_or_default();
    let name = match q.as_str() {
        "torch.masked_select" => Some("torch.masked_select".to_owned()),
        "tensorflow.boolean_mask" => Some("tf.boolean_mask".to_owned()),
        _ => match method(call) {
            Some((recv, "masked_select"))
                if checker.uses(Framework::PyTorch)
                    && checker.semantic.qualified_name(recv).is_none() =>
            {
                Some(".masked_select()".to_owned())
            }
            _ => None,
        },
    };
    if let Some(call_name) = name {
        checker.report(&MaskedSelectCall { call: call_name }, call.func.span);
    }
}
