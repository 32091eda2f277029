//! AUD404: long sum reductions and cumulative sums, fragile in bf16.

use super::ctx::{elems, input, ints_attr, is_low_precision, is_mlir, label, region_combiner, shape, short_op};
use super::{Ctx, Rule, Severity, Sink};

/// ONNX reductions that accumulate (max/min do not lose precision).
const ONNX: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceProd",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "GlobalAveragePool",
];

tpuport_codes::documented! {
    /// ## What it finds
    /// Accumulating reductions over at least `long_reduction` elements per output (default
    /// 4096): ONNX `ReduceSum` / `ReduceMean` / `ReduceSumSquare` / `ReduceL1` / `ReduceL2` /
    /// `ReduceProd` / `ReduceLogSum(Exp)` / `GlobalAveragePool`, `stablehlo.reduce` with an
    /// `add` or `multiply` body; and every cumulative sum (ONNX `CumSum`, the
    /// `stablehlo.reduce_window` prefix-sum pattern). A warning when they run in bf16 / f16,
    /// information otherwise.
    ///
    /// ## Why it hurts on TPU
    /// A bf16 accumulator stops growing once the increments fall below its 8-bit mantissa:
    /// in bf16, 4096 + 1 = 4096 (pytorch/xla#2425), so long sums, means over long sequences,
    /// metric accumulators and prefix sums (cumsum position ids, cumulative probabilities for
    /// top-p sampling) come out wrong. XLA on TPU accumulates reductions of bf16 inputs in f32
    /// only where the framework asks for it.
    ///
    /// ## What to do
    /// Accumulate in f32: upcast before the reduction (`x.astype(jnp.float32).sum()`,
    /// `torch.sum(x, dtype=torch.float32)`), or reduce in chunks (pairwise); keep cumsums in
    /// f32 or int32.
    ///
    /// ## References
    /// - pytorch/xla#2425 (4096 + 1 = 4096 in bf16)
    /// - [StableHLO reduce](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#reduce)
    pub(crate) struct LongReduction;
}

impl Rule for LongReduction {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let (mut longest, mut cumsums, mut low) = (0u64, 0usize, 0usize);
        for (g, n) in cx.nodes() {
            let op = short_op(n);
            let accumulating = if is_mlir(n) {
                op == "reduce" && matches!(region_combiner(n).as_deref(), Some("add" | "multiply"))
            } else {
                ONNX.contains(&n.op.as_str())
            };
            let cumsum = if is_mlir(n) { op == "reduce_window" && is_prefix_sum(g, n) } else { n.op == "CumSum" };
            if accumulating {
                let (Some(i), Some(o)) = (input(n, 0).and_then(|v| elems(g, v)), n.outputs.first().and_then(|v| elems(g, *v))) else { continue };
                let len = i / o.max(1);
                if len < cx.opts.long_reduction {
                    continue;
                }
                longest = longest.max(len);
            } else if cumsum {
                cumsums += 1;
            } else {
                continue;
            }
            low += usize::from(is_low_precision(g, n));
            nodes.push(label(g, n));
        }
        if nodes.is_empty() {
            return;
        }
        let severity = if low > 0 { Severity::Warning } else { sink.default_severity() };
        let long = nodes.len() - cumsums;
        let mut parts = Vec::new();
        if long > 0 {
            parts.push(format!("{long} reduction(s) over up to {longest} elements per output"));
        }
        if cumsums > 0 {
            parts.push(format!("{cumsums} cumulative sum(s)"));
        }
        let state = if low > 0 { format!("{low} accumulate in bf16/f16") } else { "all in f32 now; keep them there in bf16".to_owned() };
        sink.emit_at(
            severity,
            "Long accumulations are fragile in bf16".to_owned(),
            format!("{}; {state} (in bf16, 4096 + 1 = 4096)", parts.join(" and ")),
            nodes,
            "accumulate in f32: upcast before sums/means/cumsums (dtype=float32), or reduce pairwise in chunks",
        );
    }
}

/// The `reduce_window` form of a prefix sum: an `add` body and a window that spans a whole
/// dimension of more than one element.
fn is_prefix_sum(g: &tpuport_model::Graph, n: &tpuport_model::Node) -> bool {
    if region_combiner(n).as_deref() != Some("add") {
        return false;
    }
    let Some(s) = input(n, 0).and_then(|v| shape(g, v)) else { return false };
    let Some(w) = ints_attr(n, "window_dimensions") else { return false };
    w.iter().zip(&s).any(|(w, d)| *d > 1 && u64::try_from(*w).is_ok_and(|w| w == *d))
}
