//! TPU101: a `DataLoader` that keeps the last, smaller batch.

use tpuport_python::ast::{Call, ExprKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::rules::helpers::{LoaderKeyword, is_dataloader, is_eval_loader, loader_keyword};
use crate::semantic::Literal;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `torch.utils.data.DataLoader(...)` calls that batch training data without
    /// `drop_last=True`, also when the keywords come in a `**kwargs` dict built in the same
    /// file. Evaluation loaders (assigned to, or reading, a `test` / `val` / `eval` name) are
    /// not flagged: they must see every sample, so pad their last batch instead.
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
    if !is_dataloader(checker, call) || is_eval_loader(checker, call) {
        return;
    }
    match loader_keyword(checker.semantic, call, "batch_sampler") {
        LoaderKeyword::Absent => {}
        _ => return,
    }
    match loader_keyword(checker.semantic, call, "batch_size") {
        LoaderKeyword::Explicit(k) if matches!(k.value.kind, ExprKind::NoneLit) => return,
        LoaderKeyword::FromDict(e) if e.value == Literal::Falsy => return,
        _ => {}
    }
    let (edit, explicit_false) = match loader_keyword(checker.semantic, call, "drop_last") {
        LoaderKeyword::Explicit(k) if Literal::of(&k.value) != Literal::True => {
            if !matches!(Literal::of(&k.value), Literal::Falsy | Literal::Zero) {
                return;
            }
            (Edit::replace(k.value.span, "True"), true)
        }
        LoaderKeyword::Absent => (edits::append_argument(call, "drop_last=True"), false),
        _ => return,
    };
    let span = call.func.span;
    if let Some(d) = checker.report(&DataloaderWithoutDropLast { explicit_false }, span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
