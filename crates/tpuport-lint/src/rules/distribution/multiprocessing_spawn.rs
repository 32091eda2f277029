//! TPU502: `torch.multiprocessing.spawn`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.multiprocessing.spawn(fn, nprocs=...)` launches.
    ///
    /// ## Why is this bad on TPU?
    /// `mp.spawn` with `nprocs=torch.cuda.device_count()` starts one process per GPU; on a
    /// TPU VM that count is 0, and the TPU runtime must be initialised per process by
    /// torch_xla. `torch_xla.launch` starts one process per local TPU device and sets up the
    /// PJRT runtime (or run with `torchrun` and the `xla://` init method).
    ///
    /// ## Example
    /// ```python
    /// mp.spawn(train, args=(cfg,), nprocs=torch.cuda.device_count())
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// torch_xla.launch(train, args=(cfg,))
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix: the spawned function's signature (rank argument) may need changes.
    ///
    /// ## References
    /// - [pytorch/xla#7974: spawn hangs with zombie processes](https://github.com/pytorch/xla/issues/7974)
    /// - [Lightning-AI/pytorch-lightning#18335: torchrun support on TPU](https://github.com/Lightning-AI/pytorch-lightning/issues/18335)
    pub(crate) struct MultiprocessingSpawn {}
}

impl Violation for MultiprocessingSpawn {
    fn message(&self) -> String {
        "`torch.multiprocessing.spawn` launches one process per CUDA device".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Launch with `torch_xla.launch(fn, args=...)` (one process per TPU device)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if checker.semantic.resolves_to(
        &call.func,
        &["torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"],
    ) {
        checker.report(&MultiprocessingSpawn {}, call.func.span);
    }
}
