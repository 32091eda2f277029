//! TPU508: `MASTER_ADDR` / `MASTER_PORT` set by hand.

use tpuport_python::ast::Stmt;

use crate::checker::Checker;
use crate::rules::helpers::env_var_set;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for PyTorch scripts setting `MASTER_ADDR` or `MASTER_PORT`.
    ///
    /// ## Why is this bad on TPU?
    /// The `env://` rendezvous with a hand-set master address is the GPU recipe. On TPU VMs
    /// the XLA runtime knows the topology: set `PJRT_DEVICE=TPU` and initialise with
    /// `init_method="xla://"`; a stale `MASTER_ADDR` is a common cause of multi-host hangs.
    ///
    /// ## Example
    /// ```python
    /// os.environ["MASTER_ADDR"] = "localhost"
    /// os.environ["MASTER_PORT"] = "12355"
    /// dist.init_process_group("nccl", rank=rank, world_size=world_size)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// dist.init_process_group("xla", init_method="xla://")
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#8322: use `PJRT_DEVICE=TPU` instead of `MASTER_ADDR/PORT`](https://github.com/pytorch/xla/issues/8322)
    /// - [pytorch/xla#5303: DDP init on TPU](https://github.com/pytorch/xla/issues/5303)
    pub(crate) struct MasterAddrEnv { var: String }
}

impl Violation for MasterAddrEnv {
    fn message(&self) -> String {
        format!(
            "`{}` is the GPU rendezvous; TPU processes rendezvous through the XLA runtime",
            self.var
        )
    }
    fn fix_title(&self) -> Option<String> {
        Some("Set `PJRT_DEVICE=TPU` and use `init_method=\"xla://\"`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    if !checker.uses(Framework::PyTorch) {
        return;
    }
    if let Some((var @ ("MASTER_ADDR" | "MASTER_PORT"), span)) = env_var_set(checker, stmt) {
        checker.report(&MasterAddrEnv { var: var.to_owned() }, span);
    }
}
