//! AUD304: ops XLA lowers poorly on TPU.

use super::ctx::{is_mlir, label, op_counts};
use super::{Ctx, Rule, Sink};

/// ONNX ops with a known poor XLA lowering, and why.
const POOR: &[(&str, &str)] = &[
    ("NonMaxSuppression", "sequential box suppression with a data-dependent output size"),
    ("RoiAlign", "per-box bilinear gathers"),
    ("MaxRoiPool", "per-box gathers"),
    ("GridSample", "per-pixel gathers"),
    ("DeformConv", "per-tap gathers instead of an MXU convolution"),
    ("SequenceConstruct", "sequence types are lists, not tensors"),
    ("SequenceAt", "sequence types are lists, not tensors"),
    ("SequenceInsert", "sequence types are lists, not tensors"),
    ("SequenceErase", "sequence types are lists, not tensors"),
    ("SequenceLength", "sequence types are lists, not tensors"),
    ("SequenceEmpty", "sequence types are lists, not tensors"),
    ("SequenceMap", "sequence types are lists, not tensors"),
    ("SplitToSequence", "sequence types are lists, not tensors"),
    ("ConcatFromSequence", "sequence types are lists, not tensors"),
    ("Det", "small LU factorizations on the vector units"),
    ("RNN", "a sequential recurrence (one small matmul per step)"),
    ("GRU", "a sequential recurrence (one small matmul per step)"),
    ("LSTM", "a sequential recurrence (one small matmul per step)"),
];

tpuport_codes::documented! {
    /// ## What it finds
    /// Ops that XLA can express but runs badly on TPU: `NonMaxSuppression`, `RoiAlign`,
    /// `MaxRoiPool`, `GridSample`, `DeformConv` (gather-per-element ops), ONNX sequence ops
    /// (`SequenceConstruct`, `SequenceAt`, `SplitToSequence`, `ConcatFromSequence` …), `Det`,
    /// and the recurrent `RNN` / `GRU` / `LSTM` ops.
    ///
    /// ## Why it hurts on TPU
    /// The TPU is fast at dense matmuls and elementwise math on large tiles. Per-element
    /// gathers, sequential recurrences (RNNs ran 1747 s/epoch on TPU vs 12 s on GPU,
    /// pytorch/xla#2422) and list-typed sequences (no tensor equivalent in StableHLO) either
    /// have no lowering or lower to loops of tiny ops. Detection post-processing such as NMS
    /// also has data-dependent output sizes. (`Unique` and `NonZero` are reported as AUD101.)
    ///
    /// ## What to do
    /// Keep the backbone on TPU and move post-processing (NMS, RoI ops) to the host, or use
    /// fixed-size padded variants (e.g. a batched NMS returning `max_output_boxes` with a
    /// validity mask); replace sequences with stacked tensors; write recurrences as `lax.scan`
    /// over a batch large enough to fill the MXU, or use attention.
    ///
    /// ## References
    /// - pytorch/xla#2422 (RNNs), tensorflow/tpu#176 (unsupported ops on XLA_TPU_JIT)
    /// - [ONNX operators](https://github.com/onnx/onnx/blob/main/docs/Operators.md)
    pub(crate) struct PoorlyLowered;
}

impl Rule for PoorlyLowered {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut nodes = Vec::new();
        let mut ops = Vec::new();
        let mut why: Vec<String> = Vec::new();
        for (g, n) in cx.nodes() {
            if is_mlir(n) {
                continue;
            }
            if let Some((op, reason)) = POOR.iter().find(|(o, _)| *o == n.op) {
                nodes.push(label(g, n));
                ops.push(n.op.clone());
                let line = format!("{op}: {reason}");
                if !why.contains(&line) {
                    why.push(line);
                }
            }
        }
        if nodes.is_empty() {
            return;
        }
        why.truncate(4);
        sink.emit(
            "Ops XLA lowers poorly".to_owned(),
            format!("{} op(s) run badly on TPU ({}): {}", nodes.len(), op_counts(&ops), why.join("; ")),
            nodes,
            "move post-processing (NMS, RoI ops) to the host or use fixed-size padded variants; replace sequences with stacked tensors; write recurrences as scans over large batches",
        );
    }
}
