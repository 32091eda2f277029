//! TPU306: `pin_memory=True`.

use tpuport_python::ast::{Call, ExprKind};

use crate::checker::Checker;
use crate::fix::{Fix, edits};
use crate::rules::helpers::{LoaderKeyword, is_dataloader, loader_keyword};
use crate::semantic::Literal;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `DataLoader(..., pin_memory=True)`, also as a `"pin_memory": True` entry of
    /// a dict passed to the loader as `**kwargs` (reported at the entry).
    ///
    /// ## Why is this bad on TPU?
    /// Pinned (page-locked) host memory speeds up CUDA host-to-device copies. It does nothing
    /// for XLA devices, where `MpDeviceLoader` handles the transfer, but still costs host
    /// memory and a pinning thread.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, num_workers=8, pin_memory=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, num_workers=8)
    /// loader = pl.MpDeviceLoader(loader, device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is safe: it removes the argument, which has no effect on XLA devices.
    ///
    /// ## References
    /// - [pytorch/xla#2320: `MpDeviceLoader` for host-to-device transfer](https://github.com/pytorch/xla/issues/2320)
    /// - [pytorch/xla#2723: host memory with data loaders](https://github.com/pytorch/xla/issues/2723)
    pub(crate) struct PinMemory {}
}

impl Violation for PinMemory {
    fn message(&self) -> String {
        "`pin_memory=True` only helps CUDA transfers".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Remove `pin_memory=True`".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !is_dataloader(checker, call) {
        return;
    }
    let k = match loader_keyword(checker.semantic, call, "pin_memory") {
        LoaderKeyword::Explicit(k) => k,
        // In a `**kwargs` dict: reported at its key; removing it is left to a person (the
        // dict may serve other calls).
        LoaderKeyword::FromDict(e) if e.value == Literal::True => {
            checker.report(&PinMemory {}, e.key_span);
            return;
        }
        _ => return,
    };
    if !matches!(k.value.kind, ExprKind::Bool(true)) {
        return;
    }
    let edit = edits::remove_argument(checker.source, call, k.span);
    if let Some(d) = checker.report(&PinMemory {}, k.span) {
        d.set_fix(Fix::safe(vec![edit]));
    }
}
