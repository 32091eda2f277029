//! TPU307: setting `CUDA_VISIBLE_DEVICES`.

use tpuport_python::ast::Stmt;

use crate::checker::Checker;
use crate::rules::helpers::env_var_set;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for scripts that set `CUDA_VISIBLE_DEVICES` (`os.environ[...] = ...`,
    /// `os.environ.setdefault(...)`, `os.putenv(...)`).
    ///
    /// ## Why is this bad on TPU?
    /// The variable selects NVIDIA GPUs and is ignored by the TPU runtime. Device selection
    /// on TPU VMs goes through `PJRT_DEVICE=TPU` and, per process, `TPU_VISIBLE_CHIPS` /
    /// `TPU_PROCESS_BOUNDS`, or simply the launcher (`torch_xla.launch`, `jax.distributed`).
    ///
    /// ## Example
    /// ```python
    /// os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// os.environ.setdefault("PJRT_DEVICE", "TPU")
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [pytorch/xla#8322: set `PJRT_DEVICE=TPU`](https://github.com/pytorch/xla/issues/8322)
    /// - [huggingface/accelerate#1581: wrong device detection logic](https://github.com/huggingface/accelerate/issues/1581)
    pub(crate) struct CudaVisibleDevices {}
}

impl Violation for CudaVisibleDevices {
    fn message(&self) -> String {
        "`CUDA_VISIBLE_DEVICES` is ignored on TPU".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Select TPU devices with `PJRT_DEVICE=TPU` (and the launcher), not CUDA variables"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    if let Some(("CUDA_VISIBLE_DEVICES", span)) = env_var_set(checker, stmt) {
        checker.report(&CudaVisibleDevices {}, span);
    }
}
