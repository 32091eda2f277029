//! TPU501: DDP with CUDA `device_ids`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Fix, edits};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `DistributedDataParallel(model, device_ids=[...], output_device=...)`.
    ///
    /// ## Why is this bad on TPU?
    /// `device_ids` and `output_device` name CUDA devices by index. With the `xla` backend
    /// each process owns one XLA device already; DDP is constructed from the model alone
    /// (optionally `gradient_as_bucket_view=True`).
    ///
    /// ## Example
    /// ```python
    /// model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// model = DDP(model, gradient_as_bucket_view=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it removes `device_ids` and `output_device`, which is only right
    /// once the model is on the XLA device and the process group uses the `xla` backend.
    ///
    /// ## References
    /// - [PyTorch/XLA DDP guide](https://docs.pytorch.org/xla/release/r2.8/perf/ddp.html)
    /// - [pytorch/xla#5303: DDP on TPU needs the `xla` backend](https://github.com/pytorch/xla/issues/5303)
    pub(crate) struct DdpDeviceIds {}
}

impl Violation for DdpDeviceIds {
    fn message(&self) -> String {
        "`DistributedDataParallel` with CUDA `device_ids` / `output_device`".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Drop `device_ids` / `output_device`; each XLA process owns its device".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.semantic.resolves_to(
        &call.func,
        &[
            "torch.nn.parallel.DistributedDataParallel",
            "torch.nn.parallel.distributed.DistributedDataParallel",
        ],
    ) {
        return;
    }
    let kws: Vec<_> = call
        .keywords
        .iter()
        .filter(|k| {
            k.arg.as_ref().is_some_and(|a| a.name == "device_ids" || a.name == "output_device")
        })
        .collect();
    let Some(first) = kws.first() else { return };
    // Remove one keyword per pass; the re-lint removes the next.
    let edit = edits::remove_argument(checker.source, call, first.span);
    if let Some(d) = checker.report(&DdpDeviceIds {}, first.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
