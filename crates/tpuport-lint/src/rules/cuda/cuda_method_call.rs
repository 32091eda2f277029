//! TPU301: `.cuda()`.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::fix::{Edit, Fix};
use crate::rules::helpers::{method, method_span};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `.cuda()` on modules and tensors.
    ///
    /// ## Why is this bad on TPU?
    /// `.cuda()` fails without a CUDA device, or, behind an `is_available()` gate, silently
    /// leaves the model on the CPU. On TPU, modules and tensors go to the XLA device.
    ///
    /// ## Example
    /// ```python
    /// model = ResNet50().cuda()
    /// images = images.cuda(non_blocking=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// device = torch_xla.device()
    /// model = ResNet50().to(device)
    /// images = images.to(device, non_blocking=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe: it rewrites `.cuda()` to `.to(device)` when a `device` variable
    /// exists, else to `.to(torch_xla.device())` and adds `import torch_xla`; the device
    /// changes from CUDA to XLA.
    ///
    /// ## References
    /// - [pytorch/xla#9324: device-agnostic code with `torch.device('xla')`](https://github.com/pytorch/xla/issues/9324)
    /// - [pytorch/xla#9503: PyTorch/XLA migration guide](https://github.com/pytorch/xla/issues/9503)
    /// - [torch_xla API guide: `torch_xla.device()`](https://docs.pytorch.org/xla/release/r2.8/learn/api-guide.html)
    pub(crate) struct CudaMethodCall {}
}

impl Violation for CudaMethodCall {
    fn message(&self) -> String {
        "`.cuda()` moves to a CUDA device".to_owned()
    }
    fn fix_title(&self) -> Option<String> {
        Some("Move to the XLA device with `.to(device)` (`device = torch_xla.device()`)".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.uses(Framework::PyTorch) {
        return;
    }
    let Some((recv, "cuda")) = method(call) else { return };
    if checker.semantic.qualified_name(recv).is_some() {
        return; // `torch.cuda` itself, not a method call on a tensor
    }
    let Some(span) = method_span(call) else { return };
    let device = checker.device_expr(call.func.span.start);
    let mut args = vec![device.to_owned()];
    if let Some(k) = call.keyword("non_blocking") {
        args.push(checker.text(k.span).to_owned());
    }
    let mut edits = vec![Edit::replace(span, format!("to({})", args.join(", ")))];
    if device != "device" {
        edits.extend(checker.import_edit("import torch_xla"));
    }
    if let Some(d) = checker.report(&CudaMethodCall {}, span) {
        d.set_fix(Fix::unsafe_(edits));
    }
}
