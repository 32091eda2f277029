//! TPU105: `nonzero` / `argwhere` / one-argument `where`: output shape depends on data.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.nonzero`, `Tensor.nonzero()`, `torch.argwhere`, `jnp.nonzero` /
    /// `jnp.argwhere` / `jnp.flatnonzero` without `size=`, and one-argument `tf.where(cond)`.
    ///
    /// ## Why is this bad on TPU?
    /// The number of results depends on the values in the tensor, so the output shape is only
    /// known after the device has computed it. PyTorch/XLA has to sync with the device and
    /// compile a graph for each new count (the `aten::nonzero` counter); under `jax.jit` the
    /// call fails unless `size=` fixes the shape.
    ///
    /// ## Example
    /// ```python
    /// idx = torch.nonzero(mask)
    /// selected = x[idx]
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// selected = torch.where(mask, x, torch.zeros_like(x))
    /// ```
    /// In JAX, pass a static bound: `jnp.nonzero(mask, size=max_n, fill_value=0)`.
    ///
    /// ## Fix safety
    /// There is no fix: the rewrite depends on what the indices are used for.
    ///
    /// ## References
    /// - [pytorch/xla#2661: replace masking with `torch.where`](https://github.com/pytorch/xla/issues/2661)
    /// - [PyTorch/XLA troubleshooting: dynamic shapes and `aten::nonzero`](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    pub(crate) struct NonzeroCall { call: String }
}

impl Violation for NonzeroCall {
    fn message(&self) -> String {
        format!("`{}` has a data-dependent output shape", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `torch.where` / multiply by the mask, or give JAX a static `size=`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let q = checker.semantic.qualified_name(&call.func).unwrap_or_default();
    let name = match q.as_str() {
        "torch.nonzero" | "torch.argwhere" => Some(q.clone()),
        "jax.numpy.nonzero" | "jax.numpy.argwhere" | "jax.numpy.flatnonzero"
            if call.keyword("size").is_none() =>
        {
            Some(q.replace("jax.numpy", "jnp"))
        }
        "tensorflow.where" if call.args.len() == 1 && call.keywords.is_empty() => {
            Some("tf.where(cond)".to_owned())
        }
        _ => None,
    };
    let name = name.or_else(|| match method(call) {
        Some((recv, "nonzero"))
            if checker.uses(Framework::PyTorch)
                && checker.semantic.qualified_name(recv).is_none() =>
        {
            Some(".nonzero()".to_owned())
        }
        _ => None,
    });
    if let Some(call_name) = name {
        checker.report(&NonzeroCall { call: call_name }, call.func.span);
    }
}
