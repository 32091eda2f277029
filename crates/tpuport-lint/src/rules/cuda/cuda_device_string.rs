//! TPU302: `"cuda"` as a device.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::{is_cuda_device, method};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `"cuda"` / `"cuda:N"` used as a device: `torch.device("cuda")`,
    /// `.to("cuda")`, `device="cuda"` and `map_location="cuda"` arguments, also when the
    /// string reaches the call through a variable, a conditional, formatting (`f"cuda:{rank}"`)
    /// or an argparse default (reported where the string is written, without a fix); and
    /// Lightning's `Trainer(accelerator="gpu")` / `Fabric(accelerator="cuda")`.
    ///
    /// ## Why is this bad on TPU?
    /// A hard-coded CUDA device fails on a TPU VM (no CUDA), and a
    /// `"cuda" if torch.cuda.is_available() else "cpu"` choice silently trains on the CPU.
    ///
    /// ## Example
    /// ```python
    /// device = torch.device("cuda")
    /// x = torch.zeros(8, 128, device="cuda:0")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// device = torch_xla.device()
    /// x = torch.zeros(8, 128, device=device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it replaces the device with `torch_xla.device()` (adding
    /// `import torch_xla`), and `map_location="cuda"` with `"cpu"` (load on the host, then
    /// move).
    ///
    /// ## References
    /// - [huggingface/transformers#10192: training on CPU instead of TPU](https://github.com/huggingface/transformers/issues/10192)
    /// - [facebookresearch/mmf#693: CUDA gates in training code](https://github.com/facebookresearch/mmf/issues/693)
    /// - [torch_xla API guide: `torch_xla.device()`](https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html)
    pub(crate) struct CudaDeviceString { device: String }
}

impl Violation for CudaDeviceString {
    fn message(&self) -> String {
        format!("Hard-coded CUDA device `{}`", self.device)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Use the XLA device: `torch_xla.device()`".to_owned())
    }
}

fn report(
    checker: &mut Checker,
    arg: &Expr,
    replace_span: tpuport_python::Span,
    replacement: &str,
) {
    let Some(s) = arg.as_str() else {
        // A device built or chosen elsewhere: `f"cuda:{rank}"`, `"cuda:{:d}".format(rank)`,
        // `"cuda" if c else "cpu"`, a variable or an argparse default reaching the call.
        // Reported where the CUDA string is written, without a fix.
        let source = checker.source;
        for (span, s) in checker.semantic.consts.reaching(arg, source) {
            let cuda = is_cuda_device(&s) || s.starts_with("cuda:");
            if cuda && !checker.reported(crate::codes::Rule::CudaDeviceString, span) {
                // A literal is named by its value, a formatted string by its text.
                let text = checker.text(span);
                let device = if text.trim_matches(['"', '\'']) == s { s } else { text.to_owned() };
                checker.report(&CudaDeviceString { device }, span);
            }
        }
        return;
    };
    if !is_cuda_device(s) {
        return;
    }
    let mut edits = vec![Edit::replace(replace_span, replacement)];
    if replacement.starts_with("torch_xla") {
        edits.extend(checker.import_edit("import torch_xla"));
    }
    if let Some(d) = checker.report(&CudaDeviceString { device: s.to_owned() }, arg.span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}

/// Names that hold an integer CUDA ordinal (`model.to(rank)`, `x.to(self.gpu_id)`).
const ORDINAL_NAMES: &[&str] = &[
    "rank",
    "local_rank",
    "gpu",
    "gpu_id",
    "gpu_idx",
    "gpu_index",
    "device_id",
    "device_idx",
    "local_device_id",
];

/// `.to(<int>)`: an integer device is a CUDA ordinal.
fn report_ordinal(checker: &mut Checker, call: &Call, arg: &Expr) {
    let ordinal = match &arg.kind {
        tpuport_python::ast::ExprKind::Int(Some(_)) => true,
        _ => arg
            .last_name()
            .is_some_and(|n| ORDINAL_NAMES.contains(&n.to_ascii_lowercase().as_str())),
    };
    if !ordinal || call.args.len() != 1 {
        return;
    }
    let device = checker.device_expr(call.func.span.start);
    let mut edits = vec![Edit::replace(arg.span, device)];
    if device != "device" {
        edits.extend(checker.import_edit("import torch_xla"));
    }
    let text = checker.text(arg.span).to_owned();
    if let Some(d) = checker.report(&CudaDeviceString { device: text }, arg.span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::PyTorch) {
        return;
    }
    let q = checker.semantic.qualified_name(&call.func).unwrap_or_default();
    if q.contains("autocast") || q.ends_with("GradScaler") {
        return; // TPU401 / TPU402
    }
    if q == "torch.device" {
        if let Some(arg) = call.args.first()
            && call.args.len() == 1
        {
            report(
                checker,
                arg,
                tpuport_python::Span::new(call.func.span.start, call.arguments_span.end),
                "torch_xla.device()",
            );
        }
        return;
    }
    if let Some((_, "to")) = method(call)
        && let Some(arg) = call.args.first()
    {
        report(checker, arg, arg.span, "torch_xla.device()");
        report_ordinal(checker, call, arg);
    }
    // Lightning's `Trainer(accelerator="gpu")` / `Fabric(accelerator="cuda")`.
    if matches!(call.func.last_name(), Some("Trainer" | "Fabric"))
        && let Some(k) = call.keyword("accelerator")
        && k.value.as_str().is_some_and(|s| s == "gpu" || s == "cuda")
    {
        let device = k.value.as_str().unwrap_or_default().to_owned();
        checker.report(&CudaDeviceString { device }, k.value.span);
    }
    for k in &call.keywords {
        match k.arg.as_ref().map(|a| a.name.as_str()) {
            Some("device") => report(checker, &k.value, k.value.span, "torch_xla.device()"),
            Some("map_location") => report(checker, &k.value, k.value.span, "\"cpu\""),
            _ => {}
        }
    }
}
