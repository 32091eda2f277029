//! TPU701: `jax.jit(...)` inside a loop.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `jax.jit(...)` / `jax.pmap(...)` called inside a loop body.
    ///
    /// ## Why is this bad on TPU?
    /// Each call builds a new jitted wrapper; when the wrapped function is a fresh lambda or
    /// closure (the common case inside a loop) its cache key changes and the function is
    /// traced and compiled again every iteration ("TRACING CACHE MISS … function redefined").
    /// TPU compiles take seconds to minutes.
    ///
    /// ## Example
    /// ```python
    /// for batch in batches:
    ///     step = jax.jit(lambda s, b: update(s, b, lr))
    ///     state = step(state, batch)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// step = jax.jit(update, static_argnames="lr")
    /// for batch in batches:
    ///     state = step(state, batch, lr=lr)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [jax-ml/jax#19129: explaining cache misses](https://github.com/jax-ml/jax/issues/19129)
    /// - [JAX: slow tracing and compilation](https://docs.jax.dev/en/latest/debugging/slow_tracing_compilation.html)
    pub(crate) struct JitInLoop { name: String }
}

impl Violation for JitInLoop {
    fn message(&self) -> String {
        format!("`{}(...)` inside a loop re-traces and recompiles on every iteration", self.name)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Create the jitted function once, before the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_loop() || call.args.is_empty() {
        return;
    }
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if matches!(q.as_str(), "jax.jit" | "jax.pmap") {
        let name = checker.text(call.func.span).to_owned();
        checker.report(&JitInLoop { name }, call.func.span);
    }
}
