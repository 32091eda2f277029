//! TPU405: `jax_enable_x64`.

use tpuport_python::ast::{Call, Expr, ExprKind, Stmt};

use crate::checker::Checker;
use crate::rules::helpers::env_var_set;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for turning on 64-bit JAX: `jax.config.update("jax_enable_x64", True)` or the
    /// `JAX_ENABLE_X64` environment variable.
    ///
    /// ## Why is this bad on TPU?
    /// With x64 enabled, Python floats and `jnp.array` default to float64 and int64. TPUs
    /// emulate 64-bit arithmetic with 32-bit operations: much slower steps and twice the HBM
    /// for every such array.
    ///
    /// ## Example
    /// ```python
    /// jax.config.update("jax_enable_x64", True)
    /// ```
    ///
    /// ## Use instead
    /// Leave x64 off and ask for 64 bits only where it matters, on the host (NumPy).
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [JAX sharp bits: double precision](https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html)
    /// - [jax-ml/jax#7010: backend precision differences](https://github.com/jax-ml/jax/issues/7010)
    pub(crate) struct JaxEnableX64 {}
}

impl Violation for JaxEnableX64 {
    fn message(&self) -> String {
        "`jax_enable_x64` makes arrays 64-bit, which TPUs emulate slowly".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Keep x64 off on TPU; use float32 / bfloat16".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let is_update = checker
        .semantic
        .resolves_to(&call.func, &["jax.config.update", "jax.config.config.update"])
        || (call.func.last_name() == Some("update")
            && call.func.root_name() == Some("config")
            && checker.semantic.resolves_to(
                match &call.func.kind {
                    ExprKind::Attribute { value, .. } => value,
                    _ => return,
                },
                &["jax.config"],
            ));
    if !is_update {
        return;
    }
    let (Some(name), Some(value)) = (call.args.first(), call.args.get(1)) else { return };
    if name.as_str() == Some("jax_enable_x64") && !matches!(value.kind, ExprKind::Bool(false)) {
        checker.report(&JaxEnableX64 {}, name.span);
    }
}

pub(crate) fn check_env(checker: &mut Checker, stmt: &Stmt) {
    if let Some(("JAX_ENABLE_X64", span)) = env_var_set(checker, stmt) {
        checker.report(&JaxEnableX64 {}, span);
    }
}
