//! TPU504: `jax.pmap`.

use tpuport_python::ast::Expr;

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for references to `jax.pmap` (calls, decorators, `partial(jax.pmap, ...)`).
    ///
    /// ## Why is this bad on TPU?
    /// Since JAX 0.8 `pmap` is implemented on top of `jit` + `shard_map` and is "not a perfect
    /// replacement" for either; its escape hatch is scheduled for removal. `pmap` also forces
    /// a leading device axis on every input and replicates parameters per device. `jax.jit`
    /// with `NamedSharding` over a `Mesh` (or `jax.shard_map` for per-device code) is the
    /// supported path and lets XLA shard parameters.
    ///
    /// ## Example
    /// ```python
    /// p_train_step = jax.pmap(train_step, axis_name="batch")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    /// data_sharding = NamedSharding(mesh, P("batch"))
    /// train_step = jax.jit(train_step, donate_argnums=(0,))
    /// batch = jax.device_put(batch, data_sharding)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix here; `tpuport port --to jax` rewrites common pmap programs and lists
    /// what it could not.
    ///
    /// ## References
    /// - [JAX: migrating from `pmap`](https://docs.jax.dev/en/latest/migrate_pmap.html)
    /// - [jax-ml/jax#32701: `pmap(...).__wrapped__` gone](https://github.com/jax-ml/jax/issues/32701)
    /// - [blackjax-devs/blackjax#805: users unsure how to rewrite pmap code](https://github.com/blackjax-devs/blackjax/issues/805)
    pub(crate) struct PmapUsage {}
}

impl Violation for PmapUsage {
    fn message(&self) -> String {
        "`jax.pmap` is legacy: use `jax.jit` with `NamedSharding` (or `jax.shard_map`)".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Shard inputs over a `Mesh` with `NamedSharding` and `jax.jit` the step (`tpuport port --to jax`)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr) {
    if checker.semantic.qualified_name(expr).as_deref() != Some("jax.pmap") {
        return;
    }
    if checker.parent_expr().is_some_and(|p| p.dotted().is_some()) {
        return;
    }
    checker.report(&PmapUsage {}, expr.span);
}
