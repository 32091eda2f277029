//! AUD401: matmul / conv FLOPs in f32 that could run in bf16.

use tpuport_model::DType;

use super::{Ctx, Rule, Sink};
use crate::cost::{self, OpClass};
use crate::workload::Workload;

finding_rule! {
    /// ## What it finds
    /// Models whose matmul / convolution / attention FLOPs run mostly in float32: the share of
    /// MXU FLOPs with f32 operands is at least `f32_share` (default 50 %). The finding names
    /// the largest f32 ops.
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
    /// AUD402–AUD404) and compare outputs with `tpuport compare`. Training: bf16 compute with
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
        let mxu = |o: &&cost::OpCost| matches!(o.class, OpClass::Matmul | OpClass::Conv | OpClass::Attention);
        let total: u64 = report.ops.iter().filter(mxu).map(|o| o.mxu_flops).sum();
        let mut f32_ops: Vec<&cost::OpCost> =
            report.ops.iter().filter(mxu).filter(|o| o.dtype == Some(DType::F32)).collect();
        let f32_flops: u64 = f32_ops.iter().map(|o| o.mxu_flops).sum();
        if total == 0 || f32_flops == 0 {
            return;
        }
        #[allow(clippy::cast_precision_loss, reason = "a share")]
        let share = f32_flops as f64 / total as f64;
        if share < cx.opts.f32_share {
            return;
        }
        f32_ops.sort_by_key(|o| std::cmp::Reverse(o.mxu_flops));
        let nodes = f32_ops.iter().map(|o| o.node.clone()).collect();
        #[allow(clippy::cast_precision_loss, reason = "display")]
        let gflop = f32_flops as f64 / 1e9;
        let fix = if cx.opts.workload == Workload::Infer {
            "cast weights and activations to bf16 with f32 accumulation; keep softmax/norms in f32 and compare outputs"
        } else {
            "train in mixed precision: bf16 compute, f32 master weights and optimizer state"
        };
        sink.emit(
            "f32 matmul / conv compute could be bf16".to_owned(),
            format!(
                "{:.0} % of the matmul/conv FLOPs ({gflop:.3} GFLOP per step at the model's shapes, {} op(s)) run in f32; the MXU is a bf16 unit, so f32 costs twice the HBM traffic (six passes at HIGHEST precision)",
                share * 100.0,
                f32_ops.len()
            ),
            nodes,
            fix,
        );
    }
}
