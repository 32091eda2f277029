//! TPU801: `torch.save` in a torch_xla program.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.save(...)` in files that use torch_xla.
    ///
    /// ## Why is this bad on TPU?
    /// `torch.save` pickles XLA tensors as XLA tensors: the file can only be loaded where an
    /// XLA device exists, and in multi-process runs every process writes the same file.
    /// `xm.save` moves tensors to the CPU first and writes from the master ordinal only.
    ///
    /// ## Example
    /// ```python
    /// torch.save(model.state_dict(), "ckpt.pt")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// xm.save(model.state_dict(), "ckpt.pt")
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it calls `xm.save` (adding
    /// `import torch_xla.core.xla_model as xm`), which writes only on the master process.
    ///
    /// ## References
    /// - [torch_xla API guide: `xm.save`](https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html)
    /// - [pytorch/xla#6465: checkpointing under SPMD](https://github.com/pytorch/xla/issues/6465)
    pub(crate) struct TorchSaveOnXla {}
}

impl Violation for TorchSaveOnXla {
    fn message(&self) -> String {
        "`torch.save` of XLA tensors: saves device tensors from every process".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `xm.save(...)` (moves to CPU, writes on the master only)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TorchXla)
        || !checker.semantic.resolves_to(&call.func, &["torch.save"])
    {
        return;
    }
    let mut edits = vec![Edit::replace(call.func.span, "xm.save")];
    edits.extend(checker.import_edit("import torch_xla.core.xla_model as xm"));
    if let Some(d) = checker.report(&TorchSaveOnXla {}, call.func.span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}
