//! TPU101: a `DataLoader` that keeps the last, smaller batch.

use tpuport_python::ast::{Call, ExprKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::rules::helpers::{is_dataloader, keyword_truthy};
use crate::violation::{Violation, violation};

violation! {
    /// ## What it does
    /// Checks for `torch.utils.data.DataLoader(...)` calls that batch data without
    /// `drop_last=True`.
    ///
    /// ## Why is this bad on TPU?
    /// XLA compiles one program per input shape. When the dataset size is not a multiple of
    /// the batch size, the last batch of every epoch is smaller, so the step is compiled a
    /// second time (minutes on a large model) and that graph is kept in memory.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(dataset, batch_size=64, shuffle=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: dropping the last partial batch changes which samples an epoch
    /// sees (and evaluation loaders usually should see every sample; pad them instead).
    ///
    /// ## References
    /// - [pytorch/xla#1279: last partial batch recompiles](https://github.com/pytorch/xla/issues/1279)
    /// - [pytorch/xla#2020: `optimizer_step(barrier=True)` with `drop_last=True`](https://github.com/pytorch/xla/issues/2020)
    /// - [PyTorch/XLA troubleshooting: known performance caveats](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    pub(crate) struct DataloaderWithoutDropLast { explicit_false: bool }
}

impl Violation for DataloaderWithoutDropLast {
    fn message(&self) -> String {
        if self.explicit_false {
            "`DataLoader` with `drop_last=False`: the last partial batch triggers a recompilation"
                .to_owned()
        } else {
            "`DataLoader` without `drop_last=True`: the last partial batch triggers a recompilation"
                .to_owned()
        }
    }
    fn fix_title(&self) -> Option<String> {
        Some("Pass `drop_last=True` (or pad the last batch to the full batch size)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    if !is_dataloader(checker, call)
        || call.has_kwargs_splat()
        || call.keyword("batch_sampler").is_some()
    {
        return;
    }
    if call.keyword("batch_size").is_some_and(|k| matches!(k.value.kind, ExprKind::NoneLit)) {
        return;
    }
    let edit = match (call.keyword("drop_last"), keyword_truthy(call, "drop_last")) {
        (Some(k), Some(false)) => Edit::replace(k.value.span, "True"),
        (None, _) => edits::append_argument(call, "drop_last=True"),
        _ => return,
    };
    let explicit_false = call.keyword("drop_last").is_some();
    let span = call.func.span;
    if let Some(d) = checker.report(&DataloaderWithoutDropLast { explicit_false }, span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
