//! TPU109: `unique` without a static size.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.unique` / `Tensor.unique()` and `jnp.unique` without `size=`.
    ///
    /// ## Why is this bad on TPU?
    /// The number of distinct values is only known after computing them, so the result shape
    /// is dynamic: a sync plus a compilation per distinct count in PyTorch/XLA, an error under
    /// `jax.jit`.
    ///
    /// ## Example
    /// ```python
    /// classes = torch.unique(labels)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// counts = torch.bincount(labels, minlength=num_classes)  # static length
    /// ```
    /// In JAX: `jnp.unique(labels, size=num_classes, fill_value=-1)`.
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [PyTorch/XLA troubleshooting: dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    /// - [jax.numpy.unique: the `size` argument](https://docs.jax.dev/en/latest/_autosummary/jax.numpy.unique.html)
    pub(crate) struct UniqueWithoutSize { call: String }
}

impl Violation for UniqueWithoutSize {
    fn message(&self) -> String {
        format!("`{}` has a data-dependent output shape", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Use a fixed-size alternative (`bincount(minlength=…)`) or pass `size=` in JAX"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let q = checker.semantic.qualified_name(&call.func).unwrap_or_default();
    let name = match q.as_str() {
        "torch.unique" | "torch.unique_consecutive" => Some(q.clone()),
        "jax.numpy.unique" if call.keyword("size").is_none() => Some("jnp.unique".to_owned()),
        _ => match method(call) {
            Some((recv, "unique"))
                if checker.uses(Framework::PyTorch)
                    && checker.semantic.qualified_name(recv).is_none()
                    // `dataset.unique("label")` (🤗 datasets, pandas) takes a column name.
                    && call.args.first().is_none_or(|a| a.as_str().is_none()) =>
            {
                Some(".unique()".to_owned())
            }
            _ => None,
        },
    };
    if let Some(call_name) = name {
        checker.report(&UniqueWithoutSize { call: call_name }, call.func.span);
    }
}
