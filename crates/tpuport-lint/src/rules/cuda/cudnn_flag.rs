//! TPU304: `torch.backends.cudnn.*` flags.

use tpuport_python::ast::{Stmt, StmtKind};

use crate::checker::Checker;
use crate::fix::{Fix, edits};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for assignments to `torch.backends.cudnn` flags (`benchmark`, `deterministic`,
    /// `enabled`, `allow_tf32`).
    ///
    /// ## Why is this bad on TPU?
    /// cuDNN is not used on XLA devices, so the flag does nothing there; `benchmark = True` in
    /// particular suggests shape-dependent autotuning that TPUs do not do (XLA compiles per
    /// shape instead, see TPU1xx). Leaving the lines in hides what actually controls
    /// performance and determinism on TPU.
    ///
    /// ## Example
    /// ```python
    /// torch.backends.cudnn.benchmark = True
    /// ```
    ///
    /// ## Use instead
    /// Remove the line; on TPU, control matmul precision with
    /// `torch_xla.backends.set_mat_mul_precision(...)` if needed.
    ///
    /// ## Fix safety
    /// The fix is unsafe: it deletes the statement, which changes behaviour if the script
    /// still runs on GPUs.
    ///
    /// ## References
    /// - [pytorch/xla#9503: PyTorch/XLA migration guide](https://github.com/pytorch/xla/issues/9503)
    /// - [torch_xla API guide: `set_mat_mul_precision`](https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html)
    pub(crate) struct CudnnFlag { flag: String }
}

impl Violation for CudnnFlag {
    fn message(&self) -> String {
        format!("`torch.backends.cudnn.{}` has no effect on TPU", self.flag)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Remove the cuDNN flag".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, stmt: &Stmt) {
    let StmtKind::Assign { targets, .. } = &stmt.kind else { return };
    let Some(flag) = targets.iter().find_map(|t| {
        checker
            .semantic
            .qualified_name(t)
            .and_then(|q| q.strip_prefix("torch.backends.cudnn.").map(str::to_owned))
    }) else {
        return;
    };
    let edit = edits::delete_statement(checker.source, stmt, checker.current_stmt_is_sole());
    if let Some(d) = checker.report(&CudnnFlag { flag }, stmt.span) {
        d.set_fix(Fix::unsafe_(vec![edit]));
    }
}
