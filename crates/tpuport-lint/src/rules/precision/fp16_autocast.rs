//! TPU401: fp16 / CUDA autocast.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for CUDA or float16 autocast: `torch.cuda.amp.autocast(...)`,
    /// `torch.autocast("cuda", ...)`, `torch.amp.autocast(device_type="cuda")`, and any
    /// autocast with `dtype=torch.float16`.
    ///
    /// ## Why is this bad on TPU?
    /// TPUs compute in bfloat16, not float16. `torch.cuda.amp.autocast` silently does nothing
    /// for XLA tensors, `autocast("cuda", bf16)` fails with XLA tensors, and fp16 on XLA gave
    /// "Unsupported XLA type". bfloat16 has float32's exponent range, so no loss scaling is
    /// needed either.
    ///
    /// ## Example
    /// ```python
    /// with torch.cuda.amp.autocast():
    ///     logits = model(images)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// with torch.autocast("xla", dtype=torch.bfloat16):
    ///     logits = model(images)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it replaces the autocast call with
    /// `torch.autocast("xla", dtype=torch.bfloat16)`, which changes numerics and only works on
    /// XLA devices.
    ///
    /// ## References
    /// - [pytorch/pytorch#61804: `torch.cuda.amp.autocast` is a no-op for XLA tensors](https://github.com/pytorch/pytorch/issues/61804)
    /// - [pytorch/xla#2917: fp16 AMP on TPU: "Unsupported XLA type 10"](https://github.com/pytorch/xla/issues/2917)
    /// - [pytorch/xla#5505: torch_xla disables autocast for non-bf16 dtypes](https://github.com/pytorch/xla/pull/5505)
    pub(crate) struct Fp16Autocast { call: String }
}

impl Violation for Fp16Autocast {
    fn message(&self) -> String {
        format!("`{}` is CUDA / float16 autocast", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use `torch.autocast(\"xla\", dtype=torch.bfloat16)`".to_owned())
    }
}

fn is_fp16(checker: &Checker, e: &Expr) -> bool {
    checker.semantic.resolves_to(e, &["torch.float16", "torch.half"])
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    let Some(q) = checker.semantic.qualified_name(&call.func) else { return };
    let dtype = call.keyword("dtype").map(|k| &k.value);
    let flagged = match q.as_str() {
        "torch.cuda.amp.autocast" => true,
        "torch.autocast" | "torch.amp.autocast" | "torch.amp.autocast_mode.autocast" => {
            let device = call.arg(0, "device_type").and_then(Expr::as_str);
            device == Some("cuda") || dtype.is_some_and(|d| is_fp16(checker, d))
        }
        _ => false,
    };
    if !flagged
        || dtype.is_some_and(|d| checker.semantic.resolves_to(d, &["torch.bfloat16"]))
            && q != "torch.cuda.amp.autocast"
            && call.arg(0, "device_type").and_then(Expr::as_str) != Some("cuda")
    {
        return;
    }
    let torch = "torch";
    let mut edits = vec![Edit::replace(
        Span::new(call.func.span.start, call.arguments_span.end),
        format!("{torch}.autocast(\"xla\", dtype={torch}.bfloat16)"),
    )];
    if !checker.semantic.is_imported("torch") {
        edits.extend(checker.import_edit("import torch"));
    }
    let shown = checker.text(call.func.span).to_owned();
    if let Some(d) = checker.report(&Fp16Autocast { call: shown }, call.func.span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}
