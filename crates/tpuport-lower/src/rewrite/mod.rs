//! StableHLO → StableHLO rewrites used by `tpuport validate` and the CPU compile paths. Each works on a [`Model`] read by
//! the `tpuport_formats` StableHLO importer and leaves it printable with
//! `tpuport_formats::stablehlo::print_model`, which the PJRT plugins compile.
//!
//! - [`emulate_matmul`]: TPU matmul numerics for f32 `dot_general` / `convolution` on any
//!   backend (one, three or six bf16 passes with f32 accumulation);
//! - [`retype`]: every internal tensor of some float types becomes another float type, the
//!   `@main` signature kept (`--emulate bf16`, and the f32 reference of a mixed-precision
//!   module);
//! - [`expose`]: op results of `@main` returned as extra function results, for bisection;
//! - [`unshard`]: an automatically partitioned module as a single-device one;
//! - [`unroll_depthwise`] / [`depthwise::for_cpu`]: depthwise convolutions as per-tap
//!   multiply-adds, which XLA:CPU runs an order of magnitude faster.
//!
//! Graph surgery conventions: new values get names starting with `%tpuport_` (unique in their
//! graph); new nodes copy the location of the node they serve, so a report still points at the
//! user's source line; after a rewrite every value's `producer` is recomputed.

pub mod depthwise;
mod emulate;
mod expose;
mod retype;
mod unshard;

pub use depthwise::unroll_depthwise;
pub use emulate::{EmulationStats, MatmulPrecision, emulate_matmul};
pub use expose::{Exposed, expose};
pub use retype::retype;
pub use unshard::unshard;

use tpuport_model::{Graph, Node, NodeId, TensorType, Value, ValueId, ValueKind};

/// Adds an intermediate value with a fresh `%tpuport_<hint><n>` name.
pub(crate) fn fresh_value(g: &mut Graph, hint: &str, ty: TensorType) -> ValueId {
    let mut n = g.values.len();
    let mut name = format!("%tpuport_{hint}{n}");
    while g.values.iter().any(|v| v.name == name) {
        n += 1;
        name = format!("%tpuport_{hint}{n}");
    }
    g.add_value(Value { name, ty, kind: ValueKind::Intermediate, producer: None })
}

/// A StableHLO op node with no attributes.
pub(crate) fn simple_op(
    op: &str,
    inputs: &[ValueId],
    output: ValueId,
    location: Option<String>,
) -> Node {
    Node {
        name: String::new(),
        op: op.to_owned(),
        domain: op.split_once('.').map_or("", |(d, _)| d).to_owned(),
        inputs: inputs.iter().map(|&i| Some(i)).collect(),
        outputs: vec![output],
        attrs: Vec::new(),
        subgraphs: Vec::new(),
        location,
    }
}

/// Sets every value's producer from the node list (after nodes were inserted or reordered).
pub(crate) fn recompute_producers(g: &mut Graph) {
    for v in &mut g.values {
        v.producer = None;
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let id = NodeId(u32::try_from(i).unwrap_or(u32::MAX));
        for o in &n.outputs {
            if let Some(v) = g.values.get_mut(o.0 as usize) {
                v.producer = Some(id);
            }
        }
    }
}

/// The type of a value with `dtype` replaced.
pub(crate) fn with_dtype(ty: &TensorType, dtype: tpuport_model::DType) -> TensorType {
    TensorType { dtype: Some(dtype), shape: ty.shape.clone() }
}
