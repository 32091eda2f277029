//! AUD402: softmax and normalization statistics, fragile in bf16.

use super::ctx::{input, is_low_precision, is_mlir, label, short_op, softmax_exps, source};
use super::{Ctx, Rule, Severity, Sink};
use crate::workload::Workload;

/// ONNX ops that compute a softmax or normalization statistics.
const ONNX: &[&str] = &[
    "Softmax",
    "LogSoftmax",
    "LayerNormalization",
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
    "RMSNormalization",
    "LpNormalization",
    "SkipLayerNormalization",
    "SimplifiedLayerNormalization",
    "SkipSimplifiedLayerNormalization",
];

tpuport_codes::documented! {
    /// ## What it finds
    /// Softmax and normalization statistics: ONNX `Softmax`, `LogSoftmax`,
    /// `LayerNormalization`, `BatchNormalization`, `InstanceNormalization`,
    /// `GroupNormalization`, `RMSNormalization` (and onnxruntime's fused layer norms),
    /// `stablehlo.batch_norm_*`, and the decomposed forms: a sum of exponentials (softmax,
    /// log-sum-exp) and a (reciprocal) square root of a mean (layer / RMS norm variance). The
    /// finding is a warning when these already run in bf16 / f16, information otherwise.
    ///
    /// ## Why it hurts on TPU
    /// bf16 keeps 8 bits of mantissa: sums of many exponentials and variances (mean of squares
    /// minus square of mean) lose most of their digits, so softmax rows stop summing to 1 and
    /// normalized activations drift; in training the errors compound (`XLA_USE_BF16=1` made a
    /// loss fall far slower, pytorch/xla#3167). These are the ops to keep in f32 when the rest
    /// of the model moves to bf16.
    ///
    /// ## What to do
    /// Compute softmax, logits and normalization statistics in f32 (upcast the input,
    /// downcast the result): `jax.nn.softmax(x.astype(jnp.float32))`, Flax/Keras layer norms
    /// with `dtype=bf16, param_dtype=f32` keep statistics in f32; PyTorch autocast already
    /// does this for `softmax` and `layer_norm`.
    ///
    /// ## References
    /// - pytorch/xla#3167, pytorch/xla#2425 (bf16 accumulation), huggingface/transformers#12332
    /// - [Cloud TPU: bfloat16](https://cloud.google.com/tpu/docs/bfloat16)
    pub(crate) struct Bf16FragileNorm;
}

impl Rule for Bf16FragileNorm {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut low = 0usize;
        let (mut softmax, mut norm) = (0usize, 0usize);
        for r in &cx.graphs {
            let g = r.graph;
            for n in &g.nodes {
                let kind = if is_mlir(n) {
                    let op = short_op(n);
                    if op.starts_with("batch_norm") {
                        Some(false)
                    } else if matches!(op.as_str(), "rsqrt" | "sqrt") {
                        // variance: (r)sqrt of (mean + eps) where the mean is a sum reduction
                        is_stat(g, n).then_some(false)
                    } else {
                        None
                    }
                } else if ONNX.contains(&n.op.as_str()) {
                    Some(n.op.contains("Softmax"))
                } else if n.op == "Sqrt" {
                    is_stat(g, n).then_some(false)
                } else {
                    None
                };
                if let Some(is_softmax) = kind {
                    if is_softmax { softmax += 1 } else { norm += 1 }
                    low += usize::from(is_low_precision(g, n));
                    nodes.push(label(g, n));
                }
            }
            for e in softmax_exps(g) {
                softmax += 1;
                low += usize::from(is_low_precision(g, e));
                nodes.push(label(g, e));
            }
        }
        if nodes.is_empty() {
            return;
        }
        let severity = if low > 0 { Severity::Warning } else { sink.default_severity() };
        let state = if low > 0 {
            format!("{low} of them already run in bf16/f16")
        } else {
            "they run in f32 now; keep them there when moving to bf16".to_owned()
        };
        let train = if cx.opts.workload == Workload::Infer { "" } else { " (training compounds the error through the gradients)" };
        sink.emit_at(
            severity,
            "Softmax / normalization statistics are fragile in bf16".to_owned(),
            format!("{softmax} softmax / log-sum-exp and {norm} normalization op(s); {state}{train}"),
            nodes,
            "compute softmax, logits and normalization statistics in f32 (upcast input, downcast result); keep norm params in f32",
        );
    }
}

/// A square root of a mean / sum reduction, possibly scaled and plus epsilon: a variance or
/// an RMS (`rsqrt(sum(x²) / n + eps)`).
fn is_stat(g: &tpuport_model::Graph, n: &tpuport_model::Node) -> bool {
    let mut frontier: Vec<&tpuport_model::Node> = input(n, 0).and_then(|v| source(g, v)).into_iter().collect();
    for _ in 0..3 {
        if frontier.iter().any(|p| is_reduce(p)) {
            return true;
        }
        frontier = frontier
            .iter()
            .filter(|p| matches!(short_op(p).as_str(), "add" | "multiply" | "divide" | "mul" | "div"))
            .flat_map(|p| [0, 1].into_iter().filter_map(|i| input(p, i).and_then(|v| source(g, v))))
            .collect();
    }
    false
}

fn is_reduce(n: &tpuport_model::Node) -> bool {
    matches!(short_op(n).as_str(), "reduce" | "reducemean" | "reducesum" | "reducesumsquare")
}
