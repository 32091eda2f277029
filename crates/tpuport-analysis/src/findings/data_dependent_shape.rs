//! AUD101: ops whose output shape depends on the data.

use super::ctx::{is_mlir, label, op_counts, short_op};
use super::{Ctx, Rule, Sink};

/// ONNX ops whose output size is decided by tensor values.
const ONNX: &[&str] = &["NonZero", "Unique", "Compress", "StringSplit"];

/// StableHLO ops that take or produce shapes as runtime values.
const STABLEHLO: &[&str] = &[
    "real_dynamic_slice",
    "dynamic_broadcast_in_dim",
    "dynamic_reshape",
    "dynamic_iota",
    "dynamic_pad",
    "dynamic_gather",
    "dynamic_conv",
    "get_dimension_size",
    "set_dimension_size",
];

finding_rule! {
    /// ## What it finds
    /// Ops whose output shape depends on tensor values: ONNX `NonZero`, `Unique`, `Compress`
    /// (what `torch.nonzero`, `torch.unique`, `x[mask]` and `torch.masked_select` export to),
    /// and StableHLO dynamic-shape ops (`real_dynamic_slice`, `dynamic_reshape`,
    /// `dynamic_broadcast_in_dim`, `dynamic_iota`, `dynamic_pad`, `dynamic_gather`,
    /// `dynamic_conv`, `get_dimension_size`, `set_dimension_size`).
    ///
    /// ## Why it hurts on TPU
    /// XLA compiles for static shapes. A value-dependent size either does not compile for TPU,
    /// or forces the framework to sync the size to the host and compile a new program for each
    /// distinct size (PyTorch/XLA lists `nonzero` and boolean masking as the classic cause of
    /// recompilation; pytorch/xla#2661, pytorch/xla#1509).
    ///
    /// ## What to do
    /// Keep shapes static: replace `x[mask]` with `torch.where(mask, x, 0)` or multiply by the
    /// mask; give `nonzero` / `unique` a static `size=` (`jnp.nonzero(x, size=N,
    /// fill_value=...)`, `jnp.unique(x, size=N)`) and carry a validity mask; do box filtering on
    /// fixed-size padded arrays.
    ///
    /// ## References
    /// - [PyTorch/XLA troubleshooting: dynamic shapes](https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md)
    /// - [StableHLO spec: dynamism](https://github.com/openxla/stablehlo/blob/main/docs/spec.md)
    /// - pytorch/xla#2661 (masked_select), pytorch/xla#1509 (variable-length inputs)
    pub(crate) struct DataDependentShape;
}

impl Rule for DataDependentShape {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut ops = Vec::new();
        let mut nodes = Vec::new();
        for (g, n) in cx.nodes() {
            let hit = if is_mlir(n) {
                STABLEHLO.contains(&short_op(n).as_str())
            } else {
                ONNX.contains(&n.op.as_str())
            };
            if hit {
                ops.push(n.op.clone());
                nodes.push(label(g, n));
            }
        }
        if ops.is_empty() {
            return;
        }
        sink.emit(
            "Data-dependent output shapes".to_owned(),
            format!(
                "{} op(s) produce tensors whose size depends on the data ({}); XLA needs static shapes, so these fail to compile for TPU or recompile for every new size",
                ops.len(),
                op_counts(&ops)
            ),
            nodes,
            "use fixed-size forms: torch.where / multiply by the mask instead of boolean indexing; nonzero/unique with a static size= and a validity mask",
        );
    }
}
