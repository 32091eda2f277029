//! TPU507: `jax.device_put_replicated` / `device_put_sharded`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `jax.device_put_replicated` and `jax.device_put_sharded`, and for their Flax
    /// helpers `flax.jax_utils.replicate` and `flax.jax_utils.prefetch_to_device` (which
    /// stacks each batch per local device for `pmap`).
    ///
    /// ## Why is this bad on TPU?
    /// Both build the per-device stacked arrays that `pmap` wants and are deprecated. They
    /// copy the full value once per device; with `jit` and a `Mesh`, `jax.device_put(x,
    /// sharding)` places (or shards) it in one call.
    ///
    /// ## Example
    /// ```python
    /// params = jax.device_put_replicated(params, jax.local_devices())
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// params = jax.device_put(params, NamedSharding(mesh, P()))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix: the sharding to use depends on the mesh.
    ///
    /// ## References
    /// - [google-deepmind/chex#440: `device_put_sharded`/`device_put_replicated` deprecated](https://github.com/google-deepmind/chex/issues/440)
    /// - [JAX: migrating from `pmap`](https://docs.jax.dev/en/latest/migrate_pmap.html)
    pub(crate) struct DevicePutReplicated { name: String }
}

impl Violation for DevicePutReplicated {
    fn message(&self) -> String {
        if self.name.ends_with("prefetch_to_device") {
            format!("`{}` stacks each batch per device for `pmap`", self.name)
        } else if self.name.contains("jax_utils") {
            format!("`{}` places one copy per device for `pmap`", self.name)
        } else {
            format!("`jax.{}` is deprecated", self.name)
        }
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `jax.device_put(x, NamedSharding(mesh, spec))`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if let Some(name @ ("device_put_replicated" | "device_put_sharded")) = q.strip_prefix("jax.") {
        checker.report(&DevicePutReplicated { name: name.to_owned() }, call.func.span);
    } else if let Some(name @ ("replicate" | "prefetch_to_device")) =
        q.strip_prefix("flax.jax_utils.")
    {
        checker.report(&DevicePutReplicated { name: format!("jax_utils.{name}") }, call.func.span);
    }
}
