//! TPU104: padding each batch to its own longest element.

use tpuport_python::ast::{Call, ExprKind};

use crate::checker::Checker;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for per-batch dynamic padding: tokenizer calls with `padding=True` or
    /// `padding="longest"`, `DataCollatorWithPadding` without `padding="max_length"`, and
    /// `torch.nn.utils.rnn.pad_sequence`.
    ///
    /// ## Why is this bad on TPU?
    /// Padding to the longest sequence of each batch gives every batch a different sequence
    /// length, and XLA compiles a new program for each new shape. Runs that recompile on most
    /// steps are typically 10–100x slower than with fixed shapes.
    ///
    /// ## Example
    /// ```python
    /// batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// batch = tokenizer(texts, padding="max_length", max_length=512, truncation=True, return_tensors="pt")
    /// ```
    /// or pad to a few fixed buckets (e.g. 128, 256, 512).
    ///
    /// ## Fix safety
    /// There is no fix: the right `max_length` or buckets depend on the data.
    ///
    /// ## References
    /// - [pytorch/xla#3356: RoBERTa recompiled 429 times in 493 steps](https://github.com/pytorch/xla/issues/3356)
    /// - [pytorch/xla#1509: variable-length inputs](https://github.com/pytorch/xla/issues/1509)
    /// - [huggingface/trl#2001: padding to `max_length` took a step from 10 min to 2 s](https://github.com/huggingface/trl/issues/2001)
    pub(crate) struct DynamicPadding { what: String }
}

impl Violation for DynamicPadding {
    fn message(&self) -> String {
        format!("{}: every batch gets its own sequence length, so XLA recompiles", self.what)
    }
    fn fix_title(&self) -> Option<String> {
        Some(
            "Pad to a fixed `max_length` (`padding=\"max_length\"`) or to a few fixed buckets"
                .to_owned(),
        )
    }
}

pub(crate) fn check(checker: &mut Checker, call: &Call) {
    let callee = call.func.last_name().unwrap_or("").to_owned();
    let lower = callee.to_ascii_lowercase();
    if checker.semantic.resolves_to(&call.func, &["torch.nn.utils.rnn.pad_sequence"]) {
        checker.report(
            &DynamicPadding {
                what: "`pad_sequence` pads to the longest sequence in the batch".to_owned(),
            },
            call.func.span,
        );
        return;
    }
    if checker
        .semantic
        .qualified_name(&call.func)
        .is_some_and(|q| q.starts_with("transformers.") && q.ends_with("DataCollatorWithPadding"))
    {
        let fixed = call.keyword("padding").and_then(|k| k.value.as_str()) == Some("max_length");
        if !fixed {
            checker.report(
                &DynamicPadding {
                    what: "`DataCollatorWithPadding` pads to the longest example".to_owned(),
                },
                call.func.span,
            );
        }
        return;
    }
    let Some(k) = call.keyword("padding") else { return };
    let dynamic =
        matches!(k.value.kind, ExprKind::Bool(true)) || k.value.as_str() == Some("longest");
    let receiver = match &call.func.kind {
        ExprKind::Attribute { value, .. } => value.last_name().unwrap_or("").to_ascii_lowercase(),
        _ => String::new(),
    };
    let tokenizerish = lower.contains("token")
        || lower.ends_with("encode_plus")
        || lower.contains("processor")
        || (lower == "pad" && (receiver.contains("token") || receiver.contains("processor")));
    if dynamic && tokenizerish {
        checker.report(
            &DynamicPadding { what: format!("`{callee}(padding={})`", checker.text(k.value.span)) },
            // From the call to its `padding=`: the finding sits on the call's first line.
            tpuport_python::Span::new(call.func.span.start, k.span.end),
        );
    }
}
