//! TPU207: waiting for the device every step.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `x.block_until_ready()`, `jax.block_until_ready(x)` and
    /// `xm.wait_device_ops()` inside a step loop.
    ///
    /// ## Why is this bad on TPU?
    /// JAX and PyTorch/XLA dispatch asynchronously: the host queues step N+1 while the TPU
    /// runs step N. Waiting for completion every step removes that overlap and leaves the TPU
    /// idle while Python prepares the next step.
    ///
    /// ## Example
    /// ```python
    /// for batch in batches:
    ///     state, metrics = train_step(state, batch)
    ///     metrics["loss"].block_until_ready()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for batch in batches:
    ///     state, metrics = train_step(state, batch)
    /// jax.block_until_ready(state)   # once, e.g. before timing or checkpointing
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [JAX asynchronous dispatch](https://docs.jax.dev/en/latest/async_dispatch.html)
    /// - [huggingface/transformers#11773: blocking host work cost ~40% of a step](https://github.com/huggingface/transformers/issues/11773)
    pub(crate) struct BlockingWaitInStepLoop { call: String }
}

impl Violation for BlockingWaitInStepLoop {
    fn message(&self) -> String {
        format!("`{}` in the step loop waits for the device every step", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Wait once, outside the loop (before timing, logging or saving)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() {
        return;
    }
    let name = if checker.semantic.resolves_to(
        &call.func,
        &["jax.block_until_ready", "torch_xla.core.xla_model.wait_device_ops"],
    ) {
        checker.text(call.func.span).to_owned()
    } else if matches!(method(call), Some((_, "block_until_ready"))) {
        ".block_until_ready()".to_owned()
    } else {
        return;
    };
    checker.report(&BlockingWaitInStepLoop { call: name }, call.func.span);
}
