//! AUD101: ops whose output shape depends on the data.

use std::collections::HashSet;

use tpuport_model::{DType, Graph, ValueId, ValueKind};

use super::ctx::{is_mlir, label, op_counts, producer, short_op};
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
    "set_dimension_size",
];

/// True when an integer shape operand is computed from tensor data rather than from input
/// shapes (`get_dimension_size`, dimension arguments of shape-polymorphic exports) and
/// constants. Shape-polymorphic exports (`jax.export` with symbolic dims) use dynamic ops on
/// shapes only; XLA refines them to static shapes at compile time.
fn shape_from_data(g: &Graph, v: ValueId) -> bool {
    let mut stack = vec![v];
    let mut seen = HashSet::new();
    while let Some(v) = stack.pop() {
        if !seen.insert(v) || seen.len() > 512 {
            continue;
        }
        let val = g.value(v);
        match val.kind {
            ValueKind::Weight(_) => {}
            ValueKind::Input | ValueKind::Outer => {
                // Dimension arguments are integer scalars; anything else is data.
                let scalar_int = val.ty.shape.as_ref().is_some_and(|s| s.rank() == 0)
                    && val.ty.dtype.is_some_and(|d| matches!(d, DType::I32 | DType::I64 | DType::U32 | DType::U64));
                if !scalar_int {
                    return true;
                }
            }
            ValueKind::Intermediate => {
                let Some(p) = producer(g, v) else { continue };
                match short_op(p).as_str() {
                    "constant" | "get_dimension_size" | "iota" => {}
                    "call" => return true,
                    _ => stack.extend(p.inputs.iter().flatten()),
                }
            }
        }
    }
    false
}

tpuport_codes::documented! {
    /// ## What it finds
    /// Ops whose output shape depends on tensor values: ONNX `NonZero`, `Unique`, `Compress`
    /// (what `torch.nonzero`, `torch.unique`, `x[mask]` and `torch.masked_select` export to),
    /// and StableHLO dynamic-shape ops (`real_dynamic_slice`, `dynamic_reshape`,
    /// `dynamic_broadcast_in_dim`, `dynamic_iota`, `dynamic_pad`, `dynamic_gather`,
    /// `dynamic_conv`, `set_dimension_size`) whose shape operands are computed from tensor
    /// data. Dynamic ops fed only by input shapes and constants (what `jax.export` emits for
    /// a symbolic batch) are refined to static shapes at compile time and are not reported.
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
                let op = short_op(n);
                let data_at = usize::from(op != "dynamic_iota");
                STABLEHLO.contains(&op.as_str())
                    && (op == "set_dimension_size"
                        || n.inputs.iter().enumerate().skip(data_at).filter_map(|(_, v)| *v).any(|v| shape_from_data(g, v)))
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
