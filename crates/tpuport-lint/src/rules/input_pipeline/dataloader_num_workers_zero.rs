//! TPU601: a `DataLoader` that loads in the training process.

use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::rules::helpers::{LoaderKeyword, is_dataloader, loader_keyword};
use crate::semantic::Literal;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `DataLoader(...)` with `num_workers=0` or without `num_workers` (default 0),
    /// looking into dicts passed as `**kwargs`.
    ///
    /// ## Why is this bad on TPU?
    /// With no workers, decoding and augmentation run in the training process between steps,
    /// and the TPU waits. A TPU needs many host cores to stay fed (ResNet-50 on ImageNet
    /// needed 64+ CPUs); the profiler then shows the step as "input bound".
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(train_set, batch_size=128, shuffle=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8,
    ///                     persistent_workers=True, drop_last=True)
    /// ```
    ///
    /// ## Fix safety
    /// There is no fix: the right worker count depends on the host.
    ///
    /// ## References
    /// - [pytorch/xla#1843: ResNet-50 needs 64+ CPUs to saturate the TPU](https://github.com/pytorch/xla/issues/1843)
    /// - [Cloud TPU performance guide: input-bound models](https://cloud.google.com/tpu/docs/performance-guide)
    pub(crate) struct DataloaderNumWorkersZero { explicit: bool }
}

impl Violation for DataloaderNumWorkersZero {
    fn message(&self) -> String {
        if self.explicit {
            "`DataLoader(num_workers=0)` loads data in the training process".to_owned()
        } else {
            "`DataLoader` without `num_workers` loads data in the training process".to_owned()
        }
    }
    fn fix_title(&self) -> Option<String> {
        Some("Set `num_workers` to several host cores per TPU device (e.g. 4–8)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !is_dataloader(checker, call) {
        return;
    }
    match loader_keyword(checker.semantic, call, "num_workers") {
        LoaderKeyword::Absent if call.args.len() < 6 => {
            checker.report(&DataloaderNumWorkersZero { explicit: false }, call.func.span);
        }
        LoaderKeyword::Explicit(k) if matches!(k.value.kind, ExprKind::Int(Some(0))) => {
            checker.report(&DataloaderNumWorkersZero { explicit: true }, k.span);
        }
        LoaderKeyword::FromDict(e) if e.value == Literal::Zero => {
            checker.report(&DataloaderNumWorkersZero { explicit: true }, e.key_span);
        }
        _ => {}
    }
}
