//! One op taxonomy for the passes: what family an op belongs to and which properties the cost,
//! memory, layout and findings passes rely on, for ONNX and StableHLO (and CHLO / Shardy) op
//! names alike.
//!
//! Two tables answer: ONNX ops come from the one ONNX registry,
//! [`tpuport_model::ops::onnx`] (which also names each op's shape rule, cost formula and
//! lowering opset); the dialect names of StableHLO, CHLO, `func` and Shardy modules are in
//! [`DIALECT`] here. A name both spell alike (`add`, `tanh`, `gather`, `erf`, …) is in both,
//! and a test checks the two agree.
//!
//! Ops are looked up by their *short name*: the dialect prefix dropped and lowercased, so
//! `stablehlo.exponential`, `Exp` and `chlo.erf` give `exponential`, `exp` and `erf`; the
//! dialect table answers first, then the ONNX registry (case-insensitively). An op in neither
//! is [`OpFamily::Other`] with no properties.
//!
//! The [`OpInfo`] properties are named for the pass that needs them and kept apart where two
//! passes mean different things by a similar list (see [`OpInfo`]).

use tpuport_model::ops::onnx;
use tpuport_model::ops::props::{
    ALIAS, CONSTANT, FLOP_PER_ELEMENT, FOLDED, FUSIBLE, IN_PLACE, PASS_THROUGH, STREAMING,
    TRANSCENDENTAL,
};
pub use tpuport_model::ops::{OpFamily, OpInfo};

use OpFamily::{
    Attention, Collective, Composite, Contraction, ControlFlow, Convolution, DataMovement,
    Elementwise, GatherScatter, Metadata, Random, Reduction, Sort,
};

const fn e(family: OpFamily, props: u16) -> OpInfo {
    OpInfo::new(family, props)
}

/// StableHLO, CHLO, `func`, MHLO and Shardy ops by short name, sorted (a test checks the order
/// and that names are unique). ONNX ops are in [`tpuport_model::ops::onnx::TABLE`].
const DIALECT: &[(&str, OpInfo)] = &[
    ("abs", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("acos", e(Elementwise, TRANSCENDENTAL)),
    ("acosh", e(Elementwise, TRANSCENDENTAL)),
    ("add", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("after_all", e(Metadata, 0)),
    ("all_gather", e(Collective, 0)),
    ("all_reduce", e(Collective, 0)),
    ("all_to_all", e(Collective, 0)),
    ("and", e(Elementwise, FLOP_PER_ELEMENT)),
    ("asin", e(Elementwise, TRANSCENDENTAL)),
    ("asinh", e(Elementwise, TRANSCENDENTAL)),
    ("atan", e(Elementwise, TRANSCENDENTAL)),
    ("atan2", e(Elementwise, TRANSCENDENTAL)),
    ("atanh", e(Elementwise, TRANSCENDENTAL)),
    ("batch_norm_inference", e(Composite, 0)),
    ("batch_norm_training", e(Composite, 0)),
    ("bitcast_convert", e(DataMovement, ALIAS | FUSIBLE)),
    ("broadcast", e(DataMovement, FUSIBLE)),
    ("broadcast_in_dim", e(DataMovement, FOLDED | FUSIBLE | PASS_THROUGH)),
    ("call", e(ControlFlow, 0)),
    ("case", e(ControlFlow, 0)),
    ("cbrt", e(Elementwise, TRANSCENDENTAL)),
    ("ceil", e(Elementwise, FLOP_PER_ELEMENT)),
    ("clamp", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("collective_broadcast", e(Collective, 0)),
    ("collective_permute", e(Collective, 0)),
    ("compare", e(Elementwise, FLOP_PER_ELEMENT)),
    ("complex", e(Elementwise, FLOP_PER_ELEMENT)),
    ("concatenate", e(DataMovement, 0)),
    ("constant", e(DataMovement, FOLDED | FUSIBLE | CONSTANT)),
    ("convert", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE | PASS_THROUGH)),
    ("convolution", e(Convolution, 0)),
    ("copy", e(DataMovement, 0)),
    ("cosh", e(Elementwise, TRANSCENDENTAL)),
    ("cosine", e(Elementwise, TRANSCENDENTAL)),
    ("count_leading_zeros", e(Elementwise, FLOP_PER_ELEMENT)),
    ("custom_call_sharding", e(Metadata, 0)),
    ("divide", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("dot", e(Contraction, 0)),
    ("dot_general", e(Contraction, 0)),
    ("dynamic_broadcast_in_dim", e(DataMovement, 0)),
    ("dynamic_slice", e(DataMovement, 0)),
    ("dynamic_update_slice", e(DataMovement, 0)),
    ("einsum", e(Contraction, 0)),
    ("erf", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("exponential", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("exponential_minus_one", e(Elementwise, TRANSCENDENTAL)),
    ("floor", e(Elementwise, FLOP_PER_ELEMENT)),
    ("gather", e(GatherScatter, 0)),
    ("get_dimension_size", e(Metadata, 0)),
    ("get_tuple_element", e(Metadata, FUSIBLE)),
    ("if", e(ControlFlow, 0)),
    ("imag", e(Elementwise, FLOP_PER_ELEMENT)),
    ("iota", e(DataMovement, FOLDED | FUSIBLE | CONSTANT)),
    ("is_finite", e(Elementwise, FLOP_PER_ELEMENT)),
    ("log", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("log_plus_one", e(Elementwise, TRANSCENDENTAL)),
    ("logistic", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("maximum", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("minimum", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("multiply", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("negate", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("not", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("optimization_barrier", e(Metadata, ALIAS)),
    ("or", e(Elementwise, FLOP_PER_ELEMENT)),
    ("pad", e(DataMovement, 0)),
    ("partition_id", e(Metadata, 0)),
    ("popcnt", e(Elementwise, FLOP_PER_ELEMENT)),
    ("power", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("real", e(Elementwise, FLOP_PER_ELEMENT)),
    ("reduce", e(Reduction, STREAMING)),
    ("reduce_scatter", e(Collective, 0)),
    ("reduce_window", e(Reduction, STREAMING)),
    ("remainder", e(Elementwise, FLOP_PER_ELEMENT)),
    ("replica_id", e(Metadata, 0)),
    ("reshape", e(DataMovement, ALIAS | FUSIBLE | PASS_THROUGH)),
    ("reshard", e(Metadata, ALIAS | FUSIBLE)),
    ("return", e(Metadata, FUSIBLE)),
    ("reverse", e(DataMovement, 0)),
    ("rng", e(Random, 0)),
    ("rng_bit_generator", e(Random, 0)),
    ("round_nearest_afz", e(Elementwise, FLOP_PER_ELEMENT)),
    ("round_nearest_even", e(Elementwise, FLOP_PER_ELEMENT)),
    ("rsqrt", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("scaled_dot_product_attention", e(Attention, 0)),
    ("scatter", e(GatherScatter, 0)),
    ("select", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("select_and_scatter", e(GatherScatter, 0)),
    ("sharding_constraint", e(Metadata, ALIAS | FUSIBLE)),
    ("shift_left", e(Elementwise, FLOP_PER_ELEMENT)),
    ("shift_right_arithmetic", e(Elementwise, FLOP_PER_ELEMENT)),
    ("shift_right_logical", e(Elementwise, FLOP_PER_ELEMENT)),
    ("sign", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("silu", e(Composite, 0)),
    ("sine", e(Elementwise, TRANSCENDENTAL)),
    ("sinh", e(Elementwise, TRANSCENDENTAL)),
    ("slice", e(DataMovement, 0)),
    ("sort", e(Sort, 0)),
    ("sqrt", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("square", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("subtract", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("tan", e(Elementwise, TRANSCENDENTAL)),
    ("tanh", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("transpose", e(DataMovement, PASS_THROUGH)),
    ("tuple", e(Metadata, FUSIBLE)),
    ("while", e(ControlFlow, 0)),
    ("xor", e(Elementwise, FLOP_PER_ELEMENT)),
];

/// The short name of an op: dialect prefix dropped, lowercased (`stablehlo.add` and `Add` give
/// `add`).
#[must_use]
pub fn short_name(op: &str) -> String {
    op.rsplit('.').next().unwrap_or(op).to_ascii_lowercase()
}

/// Family and properties of an op, by its short name (see [`short_name`]): the dialect table,
/// then the ONNX registry.
#[must_use]
pub fn lookup(short: &str) -> OpInfo {
    match DIALECT.binary_search_by(|(name, _)| name.cmp(&short)) {
        Ok(i) => DIALECT[i].1,
        Err(_) => onnx::get_ignore_case(short).map_or(OpInfo::UNKNOWN, onnx::OnnxOp::info),
    }
}

/// Family and properties of an op as the file spells it (`stablehlo.add`, `Add`).
#[must_use]
pub fn info(op: &str) -> OpInfo {
    lookup(&short_name(op))
}

/// How a convolution stores its kernel operand (input 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelLayout {
    /// `[out, in / groups, spatial…]` (ONNX `Conv`, `ConvInteger`).
    OutInSpatial,
    /// Given by the op's dimension numbers (`stablehlo.convolution`).
    DimensionNumbers,
}

/// The kernel layout of a convolution whose kernel is its second operand; `None` for other ops
/// (and for convolutions that keep the kernel elsewhere or in another order: `QLinearConv`,
/// `ConvTranspose`).
#[must_use]
pub fn kernel_layout(op: &str) -> Option<KernelLayout> {
    match short_name(op).as_str() {
        "conv" | "convinteger" => Some(KernelLayout::OutInSpatial),
        "convolution" => Some(KernelLayout::DimensionNumbers),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in DIALECT.windows(2) {
            assert!(w[0].0 < w[1].0, "{} / {}", w[0].0, w[1].0);
        }
    }

    /// A name both tables hold means the same op in both.
    #[test]
    fn shared_names_agree_with_the_onnx_registry() {
        for (name, info) in DIALECT {
            if let Some(o) = onnx::get_ignore_case(name) {
                assert_eq!(*info, o.info(), "`{name}`: dialect table and ONNX registry differ");
            }
        }
    }

    #[test]
    fn spellings_agree() {
        assert_eq!(info("stablehlo.exponential"), info("Exp"));
        assert_eq!(info("stablehlo.add").family, OpFamily::Elementwise);
        assert!(info("stablehlo.dot_general").runs_on_mxu());
        assert!(info("Conv").runs_on_mxu());
        assert!(!info("Softmax").runs_on_mxu());
        assert_eq!(info("com.example.Unheard"), OpInfo::UNKNOWN);
    }

    #[test]
    fn the_two_elementwise_meanings_differ() {
        // One FLOP per element, but never written in place by the memory pass.
        assert!(info("Equal").flop_per_element() && !info("Equal").writes_in_place());
        // Written in place, but a transcendental for the cost pass.
        assert!(info("Exp").writes_in_place() && !info("Exp").flop_per_element());
        // A composite written in place.
        assert!(info("Softmax").writes_in_place() && info("Softmax").family == OpFamily::Composite);
    }

    #[test]
    fn kernel_layouts() {
        assert_eq!(kernel_layout("Conv"), Some(KernelLayout::OutInSpatial));
        assert_eq!(kernel_layout("stablehlo.convolution"), Some(KernelLayout::DimensionNumbers));
        assert_eq!(kernel_layout("ConvTranspose"), None);
    }
}
