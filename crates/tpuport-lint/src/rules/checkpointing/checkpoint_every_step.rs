//! TPU802: saving a checkpoint on every step.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for checkpoint writes (`torch.save`, `xm.save`, `model.save`,
    /// `save_weights`, `save_checkpoint`) directly in the step loop, not guarded by an
    /// `if step % N == 0:`.
    ///
    /// ## Why is this bad on TPU?
    /// Saving copies every parameter from HBM to the host and writes it out, while the TPU
    /// waits. Doing it every step turns a training job into a checkpointing job.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     ...
    ///     optimizer.step()
    ///     xm.save(model.state_dict(), "last.pt")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     ...
    ///     optimizer.step()
    ///     if step % 1000 == 0:
    ///         xm.save(model.state_dict(), f"step{step}.pt")
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#1399: per-step host work slows training](https://github.com/pytorch/xla/issues/1399)
    /// - [Orbax: checkpointing with `save_interval_steps`](https://orbax.readthedocs.io/en/latest/guides/checkpoint/checkpoint_manager.html)
    pub(crate) struct CheckpointEveryStep { call: String }
}

impl Violation for CheckpointEveryStep {
    fn message(&self) -> String {
        format!("`{}` on every step stalls the TPU while parameters are copied out", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Save every N steps (`if step % N == 0:`) or at the end of an epoch".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() {
        return;
    }
    let q = checker.semantic.qualified_name(&call.func).unwrap_or_default();
    let hit = matches!(q.as_str(), "torch.save" | "torch_xla.core.xla_model.save")
        || q.ends_with("checkpoints.save_checkpoint")
        || matches!(method(call), Some((recv, "save" | "save_weights")) if recv.last_name().is_some_and(|n| n.to_ascii_lowercase().contains("model")));
    if hit {
        let name = checker.text(call.func.span).to_owned();
        checker.report(&CheckpointEveryStep { call: name }, call.func.span);
    }
}
