//! TPU704: splitting the PRNG key on the host every step.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `jax.random.split` / `jax.random.fold_in` in a step loop, outside any
    /// jitted function.
    ///
    /// ## Why is this bad on TPU?
    /// Each split is a separate small device computation dispatched from Python between
    /// steps. In one reported training loop it cost about 40% of step time; inside the
    /// jitted step it fuses into the step's program for free.
    ///
    /// ## Example
    /// ```python
    /// for batch in batches:
    ///     rng, dropout_rng = jax.random.split(rng)
    ///     state, loss = train_step(state, batch, dropout_rng)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// @jax.jit
    /// def train_step(state, batch, rng):
    ///     rng, dropout_rng = jax.random.split(rng)
    ///     ...
    ///     return state, loss, rng
    ///
    /// for batch in batches:
    ///     state, loss, rng = train_step(state, batch, rng)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [huggingface/transformers#11773: RNG split outside jit cost ~40%](https://github.com/huggingface/transformers/issues/11773)
    /// - [JAX: pseudorandom numbers](https://docs.jax.dev/en/latest/random-numbers.html)
    pub(crate) struct RngSplitOutsideJit { call: String }
}

impl Violation for RngSplitOutsideJit {
    fn message(&self) -> String {
        format!(
            "`{}` in the step loop runs on the host side of the step every iteration",
            self.call
        )
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass the key into the jitted step, split it there and return the new key".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() || checker.jit_context().is_some() {
        return;
    }
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if matches!(q.as_str(), "jax.random.split" | "jax.random.fold_in") {
        let name = checker.text(call.func.span).to_owned();
        checker.report(&RngSplitOutsideJit { call: name }, call.func.span);
    }
}
