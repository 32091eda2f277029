//! TPU506: `check_rep=` → `check_vma=`.

use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::fix::{Applicability, Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `shard_map(..., check_rep=...)`.
    ///
    /// ## Why is this bad on TPU?
    /// The replication check was renamed: `jax.shard_map` takes `check_vma` (varying manual
    /// axes) and no longer accepts `check_rep`, so the call fails on current JAX.
    ///
    /// ## Example
    /// ```python
    /// f = jax.shard_map(g, mesh=mesh, in_specs=P("x"), out_specs=P(), check_rep=False)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// f = jax.shard_map(g, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is safe on `jax.shard_map` (a rename of the same switch) and unsafe on the
    /// deprecated `jax.experimental.shard_map.shard_map`, whose older releases only know
    /// `check_rep`.
    ///
    /// ## References
    /// - [jax-ml/jax#32533: `check_rep` → `check_vma`](https://github.com/jax-ml/jax/issues/32533)
    /// - [jax.shard_map API](https://docs.jax.dev/en/latest/_autosummary/jax.shard_map.html)
    pub(crate) struct ShardMapCheckRep {}
}

impl Violation for ShardMapCheckRep {
    fn message(&self) -> String {
        "`check_rep` was renamed to `check_vma`".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Rename `check_rep=` to `check_vma=`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    let applicability = match q.as_str() {
        "jax.shard_map" => Applicability::Safe,
        "jax.experimental.shard_map.shard_map" => Applicability::Unsafe,
        _ => return,
    };
    let Some(k) = call.keyword("check_rep") else { return };
    let Some(arg) = &k.arg else { return };
    let edit = Edit::replace(arg.span, "check_vma");
    if let Some(d) = checker.report(&ShardMapCheckRep {}, arg.span) {
        d.set_fix(Fix::new(vec![edit], applicability));
    }
}
