//! TPU303: `torch.cuda.*` calls.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, StmtKind};

use crate::checker::Checker;
use crate::fix::{Edit, Fix, edits};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for calls into `torch.cuda` (other than `torch.cuda.amp`, see TPU401/TPU402):
    /// `is_available()`, `device_count()`, `set_device()`, `synchronize()`, `empty_cache()`,
    /// `manual_seed()`, …, and for CUDA tensor types named without a call
    /// (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`). Calls under a CUDA
    /// guard (`if torch.cuda.is_available():`, `if use_cuda:`) are left alone: they never run
    /// on a TPU VM.
    ///
    /// ## Why is this bad on TPU?
    /// On a TPU VM `torch.cuda.is_available()` is `False`, so gates on it fall back to the
    /// CPU; `device_count()` is 0; `set_device` fails. These calls do nothing useful for XLA
    /// devices.
    ///
    /// ## Example
    /// ```python
    /// torch.cuda.manual_seed_all(0)
    /// n = torch.cuda.device_count()
    /// torch.cuda.synchronize()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// torch_xla.manual_seed(0)
    /// n = torch_xla.device_count()
    /// xm.wait_device_ops()
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe and only offered for direct equivalents: `synchronize()` →
    /// `xm.wait_device_ops()`, `manual_seed[_all](s)` → `torch_xla.manual_seed(s)`,
    /// `device_count()` → `torch_xla.device_count()`, and a bare `empty_cache()` statement is
    /// removed. Other calls need a decision (e.g. what an `is_available()` gate should do).
    ///
    /// ## References
    /// - [facebookresearch/mmf#693: `torch.cuda.device_count()` asserts](https://github.com/facebookresearch/mmf/issues/693)
    /// - [pytorch-tpu/llama#21: `torch.cuda.set_device` hacks](https://github.com/pytorch-tpu/llama/issues/21)
    /// - [pytorch/xla#7767: request for `torch.tpu.is_available()`](https://github.com/pytorch/xla/issues/7767)
    pub(crate) struct TorchCudaApi { call: String }
}

impl Violation for TorchCudaApi {
    fn message(&self) -> String {
        format!("`{}` is CUDA-only", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use the torch_xla equivalent (`torch_xla.device_count()`, `xm.wait_device_ops()`, `torch_xla.manual_seed()`) or drop the call".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr, call: &Call) {
    // Under `if torch.cuda.is_available():` (or `if use_cuda:`) the call never runs on a TPU VM.
    if checker.in_non_tpu_branch() {
        return;
    }
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    let Some(name) = q.strip_prefix("torch.cuda.") else { return };
    if name.starts_with("amp") {
        return;
    }
    let args = call.arguments_span.slice(checker.source);
    let call_span = Span::new(call.func.span.start, call.arguments_span.end);
    let fix = match name {
        "synchronize" => {
            Some(("xm.wait_device_ops()".to_string(), "import torch_xla.core.xla_model as xm"))
        }
        "manual_seed" | "manual_seed_all" => {
            Some((format!("torch_xla.manual_seed{args}"), "import torch_xla"))
        }
        "device_count" => Some(("torch_xla.device_count()".to_owned(), "import torch_xla")),
        _ => None,
    };
    let sole = checker.current_stmt_is_sole();
    let stmt = checker.current_stmt();
    let edit_list = match (fix, name, stmt) {
        (Some((text, import)), _, _) => {
            let mut v = vec![Edit::replace(call_span, text)];
            v.extend(checker.import_edit(import));
            Some(v)
        }
        (None, "empty_cache", Some(s)) if matches!(&s.kind, StmtKind::Expr(e) if e.span == expr.span) => {
            Some(vec![edits::delete_statement(checker.source, s, sole)])
        }
        _ => None,
    };
    if let Some(d) =
        checker.report(&TorchCudaApi { call: format!("torch.cuda.{name}") }, call.func.span)
        && let Some(e) = edit_list
    {
        d.set_fix(Fix::unsafe_(e));
    }
}

/// A CUDA tensor type named without being called here (`Tensor = torch.cuda.FloatTensor if cuda
/// else torch.FloatTensor`, then `Tensor(...)` everywhere): every tensor it makes is a CUDA
/// tensor, or a CPU one on a TPU VM. (Called in place, the call check above reports it.)
pub(crate) fn check_attr(checker: &mut Checker, expr: &Expr) {
    if checker.in_non_tpu_branch() {
        return;
    }
    if checker.parent_expr().and_then(Expr::as_call).is_some_and(|c| c.func.span == expr.span) {
        return;
    }
    let Some(q) = checker.semantic.qualified_name(expr) else { return };
    let Some(name) = q.strip_prefix("torch.cuda.") else { return };
    if name.ends_with("Tensor") && !name.contains('.') {
        checker.report(&TorchCudaApi { call: format!("torch.cuda.{name}") }, expr.span);
    }
}
