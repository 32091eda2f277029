//! TPU604: iterating a `DataLoader` directly in the step loop.

use tpuport_python::Span;
use tpuport_python::ast::{Expr, Stmt, StmtKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for step loops that iterate a `torch.utils.data.DataLoader` variable directly
    /// (`for x, y in loader:` or `enumerate(loader)`) instead of through
    /// `torch_xla.distributed.parallel_loader.MpDeviceLoader`.
    ///
    /// ## Why is this bad on TPU?
    /// Each batch is then copied to the device synchronously inside the step, after the
    /// previous step's graph, so transfer and compute do not overlap. `MpDeviceLoader`
    /// preloads batches onto the device in the background and marks the step boundary.
    ///
    /// ## Example
    /// ```python
    /// for x, y in train_loader:
    ///     x, y = x.to(device), y.to(device)
    ///     ...
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// for x, y in pl.MpDeviceLoader(train_loader, device):
    ///     ...
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it wraps the loader and adds
    /// `import torch_xla.distributed.parallel_loader as pl`; the batches then arrive on the
    /// device already.
    ///
    /// ## References
    /// - [pytorch/xla#2320: `MpDeviceLoader`](https://github.com/pytorch/xla/issues/2320)
    /// - [pytorch/xla#5490: SPMD loaders block without `MpDeviceLoader`](https://github.com/pytorch/xla/issues/5490)
    pub(crate) struct DataloaderWithoutDeviceLoader { name: String }
}

impl Violation for DataloaderWithoutDeviceLoader {
    fn message(&self) -> String {
        format!(
            "Step loop iterates `{}` directly; batches are copied to the device synchronously",
            self.name
        )
    }
    fn fix_title(&self) -> Option<String> {
        Some("Wrap the loader: `pl.MpDeviceLoader(loader, device)`".to_owned())
    }
}

fn loader_name<'e>(checker: &Checker, iter: &'e Expr) -> Option<&'e Expr> {
    let inner = match iter.as_call() {
        Some(c) if c.func.as_name() == Some("enumerate") => c.args.first()?,
        _ => iter,
    };
    let name = inner.dotted()?;
    checker.semantic.dataloaders.contains(&name).then_some(inner)
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    let StmtKind::For(f) = &stmt.kind else { return };
    if !checker.semantic.step_loops.contains(&stmt.span) {
        return;
    }
    let Some(loader) = loader_name(checker, &f.iter) else { return };
    let name = checker.text(loader.span).to_owned();
    let device = checker.device_expr(stmt.span.start);
    let mut edits = vec![Edit::replace(
        Span::new(loader.span.start, loader.span.end),
        format!("pl.MpDeviceLoader({name}, {device})"),
    )];
    edits.extend(checker.import_edit("import torch_xla.distributed.parallel_loader as pl"));
    if device != "device" {
        edits.extend(checker.import_edit("import torch_xla"));
    }
    if let Some(d) = checker.report(&DataloaderWithoutDeviceLoader { name }, loader.span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}
