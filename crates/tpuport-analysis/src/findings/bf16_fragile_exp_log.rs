//! AUD403: exp / log outside softmax, fragile in bf16.

use super::ctx::{is_low_precision, label, short_op, softmax_exps};
use super::{Ctx, Rule, Severity, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Exponentials and logarithms outside the softmax pattern (which AUD402 reports): ONNX
    /// `Exp`, `Log`, `Softplus`, `ReduceLogSumExp`, `ReduceLogSum`, and `stablehlo.exponential`,
    /// `log`, `log_plus_one`, `exponential_minus_one`. A warning when they run in bf16 / f16,
    /// information otherwise.
    ///
    /// ## Why it hurts on TPU
    /// `exp` turns an absolute input error into a relative output error: with bf16's 8-bit
    /// mantissa an input of 10 already carries ±0.04, i.e. ±4 % after `exp`; `log` of values
    /// near 1 cancels almost every digit (`log(1+x)` for small `x`), and `exp` overflows bf16
    /// like f32 but underflows to zero early in products of probabilities. Losses and
    /// log-probabilities computed this way drift between TPU and GPU
    /// (marin-community/marin#7183).
    ///
    /// ## What to do
    /// Keep these ops and their inputs in f32 when the model moves to bf16; use the stable
    /// forms (`log1p`, `expm1`, `logsumexp`, `log_softmax`, `softplus` from the framework) and
    /// compute losses in f32.
    ///
    /// ## References
    /// - marin-community/marin#7183, huggingface/transformers#12332
    /// - [Cloud TPU: bfloat16](https://cloud.google.com/tpu/docs/bfloat16)
    pub(crate) struct Bf16FragileExpLog;
}

impl Rule for Bf16FragileExpLog {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut low = 0usize;
        for r in &cx.graphs {
            let g = r.graph;
            let soft = softmax_exps(g);
            for n in &g.nodes {
                let hit = matches!(
                    short_op(n).as_str(),
                    "exp" | "exponential" | "log" | "log_plus_one" | "exponential_minus_one" | "softplus" | "reducelogsumexp" | "reducelogsum"
                );
                if hit && !soft.iter().any(|s| std::ptr::eq(*s, n)) {
                    low += usize::from(is_low_precision(g, n));
                    nodes.push(label(g, n));
                }
            }
        }
        if nodes.is_empty() {
            return;
        }
        let severity = if low > 0 { Severity::Warning } else { sink.default_severity() };
        let state = if low > 0 { format!("{low} already run in bf16/f16") } else { "all run in f32 now".to_owned() };
        sink.emit_at(
            severity,
            "exp / log are fragile in bf16".to_owned(),
            format!("{} exp/log op(s) outside softmax; {state}; bf16's 8-bit mantissa makes exp errors relative and log near 1 cancel", nodes.len()),
            nodes,
            "keep exp/log and their inputs in f32 when moving to bf16; use log1p/expm1/logsumexp forms; compute losses in f32",
        );
    }
}
