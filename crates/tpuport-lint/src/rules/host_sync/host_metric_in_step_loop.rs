//! TPU208: a host-side metric fed device tensors on every step.

use tpuport_python::ast::{Call, Expr};

use crate::checker::Checker;
use crate::rules::helpers::method;
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for host-side metric objects updated with tensors inside a training or
    /// evaluation step loop: `metric.add_batch(predictions=..., references=...)` and
    /// `metric.add(...)` (🤗 `evaluate` / `datasets` metrics, which store NumPy arrays), outside
    /// any jitted function.
    ///
    /// ## Why is this bad on TPU?
    /// These metrics convert every argument to NumPy as they receive it, so each batch waits
    /// for the device to finish the step and copy predictions and labels back: one host sync
    /// per batch, and the lazy graph is cut there.
    ///
    /// ## Example
    /// ```python
    /// for batch in eval_loader:
    ///     predictions = model(**batch).logits.argmax(dim=-1)
    ///     metric.add_batch(predictions=predictions, references=batch["labels"])
    /// score = metric.compute()
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// preds, refs = [], []
    /// for batch in eval_loader:
    ///     preds.append(model(**batch).logits.argmax(dim=-1))
    ///     refs.append(batch["labels"])
    /// metric.add_batch(predictions=torch.cat(preds).cpu(), references=torch.cat(refs).cpu())
    /// score = metric.compute()
    /// ```
    /// or count correct predictions on the device (`(preds == labels).sum()`) and read the
    /// total once.
    ///
    /// ## Fix safety
    /// There is no fix.
    ///
    /// ## References
    /// - [PyTorch/XLA troubleshooting: operations that need the value on the host](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    pub(crate) struct HostMetricInStepLoop { call: String }
}

impl Violation for HostMetricInStepLoop {
    fn message(&self) -> String {
        format!("`{}` copies device tensors to the host on every step", self.call)
    }
    fn fix_title(&self) -> Option<String> {
        Some("Accumulate on the device and update the metric once after the loop".to_owned())
    }
}

pub(crate) fn check(checker: &mut Checker, _expr: &Expr, call: &Call) {
    if !checker.in_step_region() || checker.jit_context().is_some() {
        return;
    }
    if !(checker.uses(Framework::PyTorch) || checker.uses(Framework::TensorFlow)) {
        return;
    }
    let Some((recv, m @ ("add_batch" | "add"))) = method(call) else { return };
    let Some(name) = recv.last_name() else { return };
    if !name.to_ascii_lowercase().contains("metric") {
        return;
    }
    let args = call.args.iter().chain(call.keywords.iter().map(|k| &k.value));
    let device_args = args.clone().any(|a| checker.is_tensor(a) || a.as_call().is_some());
    if !device_args {
        return;
    }
    let text = format!("{}.{m}(...)", checker.text(recv.span));
    checker.report(&HostMetricInStepLoop { call: text }, call.func.span);
}
