//! TPU305: the `nccl` process-group backend.

use tpuport_python::ast::Call;

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.distributed.init_process_group("nccl", ...)` (positional or
    /// `backend="nccl"`).
    ///
    /// ## Why is this bad on TPU?
    /// NCCL is NVIDIA's collective library; it does not exist on TPU VMs. DDP on TPUs uses the
    /// `xla` backend registered by `torch_xla.distributed.xla_backend`, with
    /// `init_method="xla://"`.
    ///
    /// ## Example
    /// ```python
    /// dist.init_process_group("nccl", rank=rank, world_size=world_size)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// import torch_xla.distributed.xla_backend
    /// dist.init_process_group("xla", init_method="xla://")
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it switches the backend to `"xla"` and adds
    /// `import torch_xla.distributed.xla_backend`; rank and world size then come from the
    /// XLA runtime (TPU509 adds `init_method`).
    ///
    /// ## References
    /// - [pytorch/xla#5303: DDP hangs until `init_process_group("xla", init_method="pjrt://")`](https://github.com/pytorch/xla/issues/5303)
    /// - [PyTorch/XLA DDP guide](https://docs.pytorch.org/xla/release/r2.8/perf/ddp.html)
    pub(crate) struct NcclBackend {}
}

impl Violation for NcclBackend {
    fn message(&self) -> String {
        "`nccl` backend is CUDA-only".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Use the `xla` backend: `dist.init_process_group(\"xla\", init_method=\"xla://\")`"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !checker.semantic.resolves_to(&call.func, &["torch.distributed.init_process_group"]) {
        return;
    }
    let Some(arg) = call.arg(0, "backend") else { return };
    if arg.as_str() != Some("nccl") {
        // Through a variable or an option (`backend = "nccl" if cuda else "gloo"`, argparse's
        // `default="nccl"`): reported where the constant is written, without a fix.
        let source = checker.source;
        for (span, s) in checker.semantic.consts.reaching(arg, source) {
            if s == "nccl" && !checker.reported(crate::codes::Rule::NcclBackend, span) {
                checker.report(&NcclBackend {}, span);
            }
        }
        return;
    }
    let span = arg.span;
    let mut edits = vec![Edit::replace(span, "\"xla\"")];
    edits.extend(checker.import_edit("import torch_xla.distributed.xla_backend"));
    if let Some(d) = checker.report(&NcclBackend {}, span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}
