//! TPU804: `flax.training.checkpoints`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `flax.training.checkpoints.save_checkpoint` / `restore_checkpoint`.
    ///
    /// ## Why is this bad on TPU?
    /// The legacy Flax checkpointer gathers every array to the host of process 0; it is
    /// deprecated in favour of Orbax, which writes sharded arrays from every host in parallel
    /// and restores them directly into their shardings, as multi-host TPU slices need.
    ///
    /// ## Example
    /// ```python
    /// checkpoints.save_checkpoint(ckpt_dir, state, step)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// mngr = ocp.CheckpointManager(ckpt_dir)
    /// mngr.save(step, args=ocp.args.StandardSave(state))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [Flax: migrating to Orbax checkpointing](https://flax.readthedocs.io/en/latest/guides/training_techniques/use_checkpointing.html)
    /// - [AI-Hypercomputer/maxtext#3061: checkpoint conversion failures](https://github.com/AI-Hypercomputer/maxtext/issues/3061)
    pub(crate) struct FlaxLegacyCheckpoints { name: String }
}

impl Violation for FlaxLegacyCheckpoints {
    fn message(&self) -> String {
        format!("`{}` is the deprecated Flax checkpointer", self.name)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use Orbax (`orbax.checkpoint.CheckpointManager`)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    if let Some(
        name @ ("save_checkpoint" | "restore_checkpoint" | "save_checkpoint_multiprocess"),
    ) = q.strip_prefix("flax.training.checkpoints.")
    {
        checker
            .report(&FlaxLegacyCheckpoints { name: format!("checkpoints.{name}") }, call.func.span);
    }
}
