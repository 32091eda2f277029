//! AUD301: large sorts and top-k.

use super::ctx::{const_ints, input, int_attr, is_mlir, label, shape, short_op};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Sorts and top-k selections over long axes: ONNX `TopK` with a large `k` or over a long
    /// axis, `stablehlo.sort`, `chlo.top_k` and `stablehlo.custom_call @TopK` along an axis at
    /// least `large_sort` long (default 4096), or with `k` at least `large_topk` (default 256).
    ///
    /// ## Why it hurts on TPU
    /// TPUs have no sorting hardware: XLA lowers sort to a bitonic network of compare-and-swap
    /// passes on the vector units, O(n log² n) work with many passes over HBM, and large
    /// top-k falls back to a full sort. A vocabulary-sized sort in a sampling loop (top-p over
    /// 50k logits) can cost more than the model's matmuls.
    ///
    /// ## What to do
    /// Use `jax.lax.approx_max_k` / `approx_min_k` (TPU-optimized, recall-tunable), take a small
    /// exact `top_k` (k ≤ 128) before any sort, sort on the host, or restructure (e.g. sample
    /// with Gumbel-max instead of sorting for top-p).
    ///
    /// ## References
    /// - [jax.lax.approx_max_k](https://docs.jax.dev/en/latest/_autosummary/jax.lax.approx_max_k.html)
    /// - [StableHLO sort](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#sort)
    pub(crate) struct LargeSort;
}

impl Rule for LargeSort {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let o = cx.opts;
        let mut nodes = Vec::new();
        let mut worst: (u64, u64) = (0, 0); // (axis length, k)
        for (g, n) in cx.nodes() {
            let op = short_op(n);
            let topk_target = n.attr("call_target_name").and_then(|a| a.as_str()).is_some_and(|t| t.contains("TopK") || t.contains("top_k"));
            let (axis_len, k) = if !is_mlir(n) && n.op == "TopK" {
                let Some(s) = input(n, 0).and_then(|x| shape(g, x)) else { continue };
                let axis = int_attr(n, "axis").unwrap_or(-1);
                let rank = i64::try_from(s.len()).unwrap_or(0);
                let ax = if axis < 0 { axis + rank } else { axis };
                let len = usize::try_from(ax).ok().and_then(|a| s.get(a).copied()).unwrap_or(0);
                let k = input(n, 1).and_then(|kv| const_ints(cx, g, kv)).and_then(|v| v.first().copied());
                (len, k.and_then(|k| u64::try_from(k).ok()).unwrap_or(0))
            } else if is_mlir(n) && (op == "sort" || op == "top_k" || (op == "custom_call" && topk_target)) {
                let Some(s) = input(n, 0).and_then(|x| shape(g, x)) else { continue };
                let len = if op == "sort" {
                    let d = int_attr(n, "dimension").or_else(|| n.attr("dimension").and_then(|a| a.as_str()).and_then(|t| super::ctx::parse_ints(t).first().copied())).unwrap_or(-1);
                    let rank = i64::try_from(s.len()).unwrap_or(0);
                    let d = if d < 0 { d + rank } else { d };
                    usize::try_from(d).ok().and_then(|a| s.get(a).copied()).unwrap_or(0)
                } else {
                    s.last().copied().unwrap_or(0)
                };
                let k = if op == "sort" {
                    0
                } else {
                    n.outputs.first().and_then(|v| shape(g, *v)).and_then(|r| r.last().copied()).unwrap_or(0)
                };
                (len, k)
            } else {
                continue;
            };
            if axis_len >= o.large_sort || k >= o.large_topk {
                nodes.push(label(g, n));
                worst = worst.max((axis_len, k));
            }
        }
        if nodes.is_empty() {
            return;
        }
        let k_note = if worst.1 > 0 { format!(", k up to {}", worst.1) } else { String::new() };
        sink.emit(
            "Large sort / top-k".to_owned(),
            format!(
                "{} sort/top-k op(s) over axes up to {} long{k_note}; TPUs sort with bitonic networks on the vector units, many passes over HBM",
                nodes.len(),
                worst.0
            ),
            nodes,
            "use jax.lax.approx_max_k, a small exact top_k (k <= 128) before sorting, or sort on the host",
        );
    }
}
