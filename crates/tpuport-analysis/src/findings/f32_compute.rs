//! AUD401: matmul / conv FLOPs in f32 that could run in bf16.

use tpuport_model::DType;

use super::{Ctx, Rule, Sink};
use crate::cost;
use crate::workload::Workload;

tpuport_codes::documented! {
    /// ## What it finds
    /// Models whose matmul / convolution / attention FLOPs run mostly in float32: the share of
    /// MXU FLOPs with f32 operands is at least `f32_share` (default 50 %); when unbound dims
    /// leave the FLOPs unknown, the share of matmul / conv ops (of those with a known type). The finding names the largest
    /// f32 ops.
    ///
    /// ## Why it hurts on TPU
    /// The MXU multiplies bf16. At default precision XLA already runs f32 matmuls as bf16
    /// passes on TPU (jax-ml/jax#9973), so f32 storage mostly costs twice the HBM bytes and
    /// bandwidth for little accuracy; at `HIGHEST` precision each f32 matmul takes six bf16
    /// passes. bf16 weights and activations with f32 accumulation are the TPU default for
    /// training and inference.
    ///
    /// ## What to do
    /// Inference: cast weights and activations to bf16, accumulate in f32
    /// (`preferred_element_type=jnp.float32`), keep softmax / norms / losses in f32 (see
    /// AUD402–AUD404) and check the outputs against the f32 model. Training: bf16 compute with
    /// f32 master weights and optimizer state (mixed precision; no loss scaling needed with
    /// bf16).
    ///
    /// ## References
    /// - [Cloud TPU: bfloat16](https://cloud.google.com/tpu/docs/bfloat16)
    /// - jax-ml/jax#9973, jax-ml/jax#18934 (default matmul precision on TPU)
    pub(crate) struct F32Compute;
}

impl Rule for F32Compute {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let report = cost::analyze(cx.model);
        let mxu = |o: &&cost::OpCost| o.class.runs_on_mxu();
        let all: Vec<&cost::OpCost> = report.ops.iter().filter(mxu).collect();
        let mut f32_ops: Vec<&cost::OpCost> = all.iter().copied().filter(|o| o.dtype == Some(DType::F32)).collect();
        let total = all.iter().fold(0u64, |a, o| a.saturating_add(o.mxu_flops));
        let f32_flops = f32_ops.iter().fold(0u64, |a, o| a.saturating_add(o.mxu_flops));
        if f32_ops.is_empty() {
            return;
        }
        // With unbound symbolic dims the FLOPs are unknown: fall back to the share of ops.
        let by_flops = total > 0;
        let typed = all.iter().filter(|o| o.dtype.is_some()).count().max(1);
        #[allow(clippy::cast_precision_loss, reason = "a share")]
        let share = if by_flops { f32_flops as f64 / total as f64 } else { f32_ops.len() as f64 / typed as f64 };
        if share < cx.opts.f32_share {
            return;
        }
        f32_ops.sort_by_key(|o| std::cmp::Reverse(o.mxu_flops));
        let nodes = f32_ops.iter().map(|o| o.node.clone()).collect();
        #[allow(clippy::cast_precision_loss, reason = "display")]
        let what = if by_flops {
            format!("{:.0} % of the matmul/conv FLOPs ({:.3} GFLOP per step at the model's shapes, {} op(s))", share * 100.0, f32_flops as f64 / 1e9, f32_ops.len())
        } else {
            format!("{} of {typed} matmul/conv ops with a known type (FLOPs unknown: unbound dims)", f32_ops.len())
        };
        let fix = if cx.opts.workload == Workload::Infer {
            "cast weights and activations to bf16 with f32 accumulation; keep softmax/norms in f32 and compare outputs"
        } else {
            "train in mixed precision: bf16 compute, f32 master weights and optimizer state"
        };
        sink.emit(
            "f32 matmul / conv compute could be bf16".to_owned(),
            format!("{what} run in f32; the MXU is a bf16 unit, so f32 costs twice the HBM traffic (six passes at HIGHEST precision)"),
            nodes,
            fix,
        );
    }
}
