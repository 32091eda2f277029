//! AUD302: scatter-heavy graphs.

use super::ctx::{is_mlir, label, short_op};
use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Graphs with many scatters: ONNX `ScatterND`, `ScatterElements`, `Scatter`,
    /// `stablehlo.scatter` (what `x.at[i].set/add` in JAX and `index_put_` / `scatter_add_`
    /// in PyTorch lower to). It fires at `scatter_min_ops` scatters (default 4) or when
    /// scatters are at least `scatter_fraction` (default 5 %) of the ops.
    ///
    /// ## Why it hurts on TPU
    /// Scatter with arbitrary indices is serialized on TPU: XLA cannot vectorize updates that
    /// may collide, so it loops over update rows, and each scatter is a fusion barrier that
    /// writes its whole operand back to HBM. Embedding-gradient scatters and KV-cache writes by
    /// index are the common culprits.
    ///
    /// ## What to do
    /// Replace index updates with dense forms: one-hot matmul for small vocabularies,
    /// `dynamic_update_slice` for contiguous writes (KV cache at a position), `segment_sum`
    /// with sorted indices (`indices_are_sorted=True`, `unique_indices=True` when true), or
    /// batch many updates into one scatter.
    ///
    /// ## References
    /// - [StableHLO scatter](https://github.com/openxla/stablehlo/blob/main/docs/spec.md#scatter)
    /// - [jax.numpy.ndarray.at](https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html)
    pub(crate) struct ScatterHeavy;
}

impl Rule for ScatterHeavy {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut total = 0usize;
        let mut nodes = Vec::new();
        for (g, n) in cx.nodes() {
            total += 1;
            let hit = if is_mlir(n) {
                short_op(n) == "scatter"
            } else {
                matches!(n.op.as_str(), "ScatterND" | "ScatterElements" | "Scatter")
            };
            if hit {
                nodes.push(label(g, n));
            }
        }
        let count = nodes.len();
        #[allow(clippy::cast_precision_loss, reason = "a ratio")]
        let frac = if total == 0 { 0.0 } else { count as f64 / total as f64 };
        if count == 0 || (count < cx.opts.scatter_min_ops && frac < cx.opts.scatter_fraction) {
            return;
        }
        sink.emit(
            "Scatter-heavy graph".to_owned(),
            format!(
                "{count} scatter op(s), {:.1} % of {total} ops; TPU scatters with arbitrary indices are serialized and each is a fusion barrier",
                frac * 100.0
            ),
            nodes,
            "use dense forms: one-hot matmuls, dynamic_update_slice for contiguous writes, sorted/unique segment sums, or one batched scatter",
        );
    }
}
