//! TPU505: `jax.experimental.shard_map`.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, Stmt, StmtKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for imports and uses of `jax.experimental.shard_map.shard_map`.
    ///
    /// ## Why is this bad on TPU?
    /// `shard_map` moved to `jax.shard_map`; the experimental module is deprecated and goes
    /// away in newer JAX releases, so the script breaks on the JAX version a TPU image
    /// ships. The new function takes `mesh`, `in_specs` and `out_specs` as keywords only, and
    /// `check_rep` became `check_vma` (TPU506).
    ///
    /// ## Example
    /// ```python
    /// from jax.experimental.shard_map import shard_map
    /// f = shard_map(g, mesh, in_specs=P("x"), out_specs=P("x"))
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// from jax import shard_map
    /// f = shard_map(g, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it rewrites the import (or the dotted call) to `jax.shard_map` and
    /// turns positional `mesh, in_specs, out_specs` into keywords; `auto=` has no direct
    /// equivalent (use `axis_names`) and is left for review.
    ///
    /// ## References
    /// - [jax.shard_map API](https://docs.jax.dev/en/latest/_autosummary/jax.shard_map.html)
    /// - [jax-ml/jax#32533: `jax.experimental.shard_map` deprecation](https://github.com/jax-ml/jax/issues/32533)
    /// - [AI-Hypercomputer/maxtext#2527: migrating to `jax.shard_map` / `check_vma`](https://github.com/AI-Hypercomputer/maxtext/pull/2527)
    pub(crate) struct ExperimentalShardMap {}
}

impl Violation for ExperimentalShardMap {
    fn message(&self) -> String {
        "`jax.experimental.shard_map` is deprecated; use `jax.shard_map`".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Import `shard_map` from `jax` and pass `mesh`/`in_specs`/`out_specs` as keywords"
                .to_owned(),
        )
    }
}

const OLD: &str = "jax.experimental.shard_map.shard_map";

pub(crate) fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let StmtKind::ImportFrom { module: Some(m), level: 0, names } = &stmt.kind else { return };
    if m != "jax.experimental.shard_map" {
        return;
    }
    let fix = match names.as_slice() {
        [a] if a.name == "shard_map" => {
            let alias = a.asname.as_ref().map(|n| format!(" as {n}")).unwrap_or_default();
            Some(Fix::unsafe_(vec![Edit::replace(
                stmt.span,
                format!("from jax import shard_map{alias}"),
            )]))
        }
        _ => None,
    };
    if let Some(d) = checker.report(&ExperimentalShardMap {}, stmt.span)
        && let Some(f) = fix
    {
        d.set_fix(f);
    }
}

pub(crate) fn check_attr(checker: &mut Checker, expr: &Expr) {
    if checker.semantic.qualified_name(expr).as_deref() != Some(OLD)
        || expr.dotted_parts().is_some_and(|p| p.len() == 1)
    {
        return;
    }
    if checker.parent_expr().is_some_and(|p| p.dotted().is_some()) {
        return;
    }
    let fix = expr
        .dotted()
        .filter(|d| d.starts_with("jax.experimental.shard_map."))
        .map(|_| Fix::unsafe_(vec![Edit::replace(expr.span, "jax.shard_map")]));
    if let Some(d) = checker.report(&ExperimentalShardMap {}, expr.span)
        && let Some(f) = fix
    {
        d.set_fix(f);
    }
}

/// Positional `shard_map(f, mesh, in_specs, out_specs)` → keywords, for the new API.
pub(crate) fn check_call(checker: &mut Checker, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if q != OLD && q != "jax.shard_map" {
        return;
    }
    const NAMES: [&str; 3] = ["mesh", "in_specs", "out_specs"];
    let edits: Vec<Edit> = call
        .args
        .iter()
        .skip(1)
        .take(3)
        .zip(NAMES)
        .filter(|(a, _)| !matches!(a.kind, tpuport_python::ast::ExprKind::Starred(_)))
        .map(|(a, n)| Edit::insert(a.span.start, format!("{n}=")))
        .collect();
    if edits.is_empty() || q == OLD {
        return; // the old API accepts positional arguments; the import fix comes first
    }
    let span = Span::new(call.args[1].span.start, call.args[call.args.len().min(4) - 1].span.end);
    if let Some(d) = checker.report(&ExperimentalShardMap {}, span) {
        d.message =
            "`jax.shard_map` takes `mesh`, `in_specs` and `out_specs` as keywords only".to_owned();
        d.set_fix(Fix::unsafe_(edits));
    }
}
