//! AUD501: many ops on tiny tensors.

use tpuport_model::DType;

use super::ctx::{dtype, elems, label, short_op};
use super::{Ctx, Rule, Sink};

/// Ops that do no work at run time (folded, aliases, structure).
const FREE: &[&str] = &[
    "constant", "shape", "identity", "return", "call", "size", "constantofshape", "reshape", "squeeze", "unsqueeze", "flatten",
    "optimization_barrier", "tuple", "get_tuple_element",
];

tpuport_codes::documented! {
    /// ## What it finds
    /// Graphs where most ops work on tiny tensors: at least `tiny_fraction` (default 50 %) of
    /// the ops with known shapes, and at least `tiny_min_ops` (default 32) ops, produce fewer
    /// than `tiny_elements` (default 4096) elements. Constants, shape computations (integer
    /// results) and free ops (reshape, identity) are not counted.
    ///
    /// ## Why it hurts on TPU
    /// One TPU vector register holds 8×128 = 1024 32-bit values and the MXU wants 128×128 (256
    /// on v6e) tiles: an op on a few hundred elements uses a fraction of one cycle's width but
    /// still pays fixed costs (a kernel launch per unfused op, a trip to HBM, a pipeline
    /// bubble). Graphs of many tiny ops — small-batch inference, per-sample loops, scalar
    /// bookkeeping — run at a small fraction of the chip's peak and are latency-bound.
    ///
    /// ## What to do
    /// Give each op more work: raise the batch (`--batch`; a multiple of 8 or 128), vectorize
    /// per-sample code with `vmap` instead of loops, concatenate small parameters into one
    /// tensor, and move scalar bookkeeping to the host or out of the step.
    ///
    /// ## References
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    /// - [TPU system architecture](https://cloud.google.com/tpu/docs/system-architecture-tpu-vm)
    pub(crate) struct TinyOps;
}

impl Rule for TinyOps {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let (mut sized, mut tiny) = (0usize, Vec::new());
        for (g, n) in cx.nodes() {
            if FREE.contains(&short_op(n).as_str()) || n.outputs.is_empty() {
                continue;
            }
            let int_only = n.outputs.iter().all(|o| matches!(dtype(g, *o), Some(DType::I64 | DType::I32)));
            if int_only {
                continue;
            }
            let Some(size) = n.outputs.iter().map(|o| elems(g, *o)).collect::<Option<Vec<u64>>>() else { continue };
            sized += 1;
            if size.iter().copied().max().unwrap_or(0) < cx.opts.tiny_elements {
                tiny.push(label(g, n));
            }
        }
        #[allow(clippy::cast_precision_loss, reason = "a share")]
        let frac = if sized == 0 { 0.0 } else { tiny.len() as f64 / sized as f64 };
        if tiny.len() < cx.opts.tiny_min_ops || frac < cx.opts.tiny_fraction {
            return;
        }
        sink.emit(
            "Many ops on tiny tensors".to_owned(),
            format!(
                "{} of {sized} ops ({:.0} %) produce fewer than {} elements; each pays fixed per-op costs while filling a fraction of the vector unit and MXU",
                tiny.len(),
                frac * 100.0,
                cx.opts.tiny_elements
            ),
            tiny,
            "give each op more work: raise the batch (multiple of 8/128), vmap per-sample code, concatenate small parameters",
        );
    }
}
