//! One op taxonomy for the passes: what family an op belongs to and which properties the cost,
//! memory, layout and findings passes rely on, for ONNX and StableHLO (and CHLO / Shardy) op
//! names alike.
//!
//! Ops are looked up by their *short name*: the dialect prefix dropped and lowercased, so
//! `stablehlo.exponential`, `Exp` and `chlo.erf` give `exponential`, `exp` and `erf`. An op that
//! is not in the table is [`OpFamily::Other`] with no properties.
//!
//! Properties are named for the pass that needs them and kept apart where two passes mean
//! different things by a similar list: [`OpInfo::flop_per_element`] (the cost pass counts one
//! FLOP per output element) is not [`OpInfo::writes_in_place`] (the memory pass lets the result
//! take a dying operand's buffer), and neither implies the other.

/// What kind of work an op does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpFamily {
    /// Arithmetic, comparison, logic, conversion and transcendental functions on each element.
    Elementwise,
    /// Ops XLA expands into several elementwise and reduction steps: softmax, normalizations,
    /// compound activations (GELU, SELU, Mish, …).
    Composite,
    /// Reductions over axes or windows, pooling, scans.
    Reduction,
    /// Matrix products (dot, MatMul, Gemm, einsum and their quantized forms).
    Contraction,
    /// Convolutions (and transposed convolutions).
    Convolution,
    /// Fused attention ops.
    Attention,
    /// Indexed reads and writes: gather and scatter in their forms.
    GatherScatter,
    /// Sorting and top-k.
    Sort,
    /// Moves, reshapes or materialises data without arithmetic: reshape, transpose, slice,
    /// concat, pad, broadcast, constants and iotas.
    DataMovement,
    /// Produces no tensor data of its own: shapes, sizes, tuples, tokens, device ids, sharding
    /// annotations, returns.
    Metadata,
    /// Random number generation.
    Random,
    /// Cross-device communication.
    Collective,
    /// Calls, loops and conditionals.
    ControlFlow,
    /// Not in the table.
    Other,
}

/// Named properties, one bit each.
mod bit {
    /// Counts as one transcendental evaluation per output element.
    pub(super) const TRANSCENDENTAL: u16 = 1 << 0;
    /// Counts as one FLOP per output element.
    pub(super) const FLOP_PER_ELEMENT: u16 = 1 << 1;
    /// May write its result into a same-sized operand that dies at it.
    pub(super) const IN_PLACE: u16 = 1 << 2;
    /// Its result shares its first operand's buffer (a view).
    pub(super) const ALIAS: u16 = 1 << 3;
    /// Folded into its consumers by XLA: takes no buffer of its own.
    pub(super) const FOLDED: u16 = 1 << 4;
    /// Data movement XLA fuses into a neighbour: moves no bytes of its own.
    pub(super) const FUSIBLE: u16 = 1 << 5;
    /// A reduction that consumes its input while writing a smaller result.
    pub(super) const STREAMING: u16 = 1 << 6;
    /// Produces a value known at compile time.
    pub(super) const CONSTANT: u16 = 1 << 7;
    /// Passes element values through unchanged up to layout or type (reshape, cast, …).
    pub(super) const PASS_THROUGH: u16 = 1 << 8;
}

use OpFamily::{
    Attention, Collective, Composite, Contraction, ControlFlow, Convolution, DataMovement,
    Elementwise, GatherScatter, Metadata, Random, Reduction, Sort,
};
use bit::{
    ALIAS, CONSTANT, FLOP_PER_ELEMENT, FOLDED, FUSIBLE, IN_PLACE, PASS_THROUGH, STREAMING,
    TRANSCENDENTAL,
};

/// Family and properties of one op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The op's family.
    pub family: OpFamily,
    props: u16,
}

impl OpInfo {
    /// An op that is not in the table.
    pub const UNKNOWN: OpInfo = OpInfo { family: OpFamily::Other, props: 0 };

    const fn has(self, bit: u16) -> bool {
        self.props & bit != 0
    }

    /// Counts as one transcendental evaluation per output element (exp, log, tanh, sqrt, …),
    /// in XLA's cost convention.
    #[must_use]
    pub const fn is_transcendental(self) -> bool {
        self.has(TRANSCENDENTAL)
    }

    /// Counts as one FLOP per output element (arithmetic, compare, select, convert, …).
    #[must_use]
    pub const fn flop_per_element(self) -> bool {
        self.has(FLOP_PER_ELEMENT)
    }

    /// May write its result into a same-sized operand buffer that dies at this op.
    #[must_use]
    pub const fn writes_in_place(self) -> bool {
        self.has(IN_PLACE)
    }

    /// Its result is a view of its first operand's buffer (reshape, squeeze, bitcast, …).
    #[must_use]
    pub const fn aliases_operand(self) -> bool {
        self.has(ALIAS)
    }

    /// XLA folds it into its consumers (broadcast, constant, iota): no buffer of its own.
    #[must_use]
    pub const fn folds_into_consumers(self) -> bool {
        self.has(FOLDED)
    }

    /// Data movement XLA fuses into a neighbour, moving no bytes of its own.
    #[must_use]
    pub const fn fuses_away(self) -> bool {
        self.has(FUSIBLE)
    }

    /// A reduction whose dying input can be released before its (smaller) result is written.
    #[must_use]
    pub const fn streams_input(self) -> bool {
        self.has(STREAMING)
    }

    /// Produces a value known at compile time (constant, constant-of-shape, iota).
    #[must_use]
    pub const fn is_constant_source(self) -> bool {
        self.has(CONSTANT)
    }

    /// Passes element values through unchanged up to layout or element type (reshape,
    /// transpose, broadcast, squeeze, identity, cast).
    #[must_use]
    pub const fn passes_values_through(self) -> bool {
        self.has(PASS_THROUGH)
    }

    /// Runs on the MXU (matrix units).
    #[must_use]
    pub const fn runs_on_mxu(self) -> bool {
        matches!(self.family, Contraction | Convolution | Attention)
    }
}

const fn e(family: OpFamily, props: u16) -> OpInfo {
    OpInfo { family, props }
}

/// The table, sorted by short name (a test checks the order and that names are unique).
const TABLE: &[(&str, OpInfo)] = &[
    ("abs", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("acos", e(Elementwise, TRANSCENDENTAL)),
    ("acosh", e(Elementwise, TRANSCENDENTAL)),
    ("add", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("after_all", e(Metadata, 0)),
    ("all_gather", e(Collective, 0)),
    ("all_reduce", e(Collective, 0)),
    ("all_to_all", e(Collective, 0)),
    ("and", e(Elementwise, FLOP_PER_ELEMENT)),
    ("argmax", e(Reduction, 0)),
    ("argmin", e(Reduction, 0)),
    ("asin", e(Elementwise, TRANSCENDENTAL)),
    ("asinh", e(Elementwise, TRANSCENDENTAL)),
    ("atan", e(Elementwise, TRANSCENDENTAL)),
    ("atan2", e(Elementwise, TRANSCENDENTAL)),
    ("atanh", e(Elementwise, TRANSCENDENTAL)),
    ("attention", e(Attention, 0)),
    ("averagepool", e(Reduction, STREAMING)),
    ("batch_norm_inference", e(Composite, 0)),
    ("batch_norm_training", e(Composite, 0)),
    ("batchnormalization", e(Composite, IN_PLACE)),
    ("biasgelu", e(Composite, 0)),
    ("bitcast_convert", e(DataMovement, ALIAS | FUSIBLE)),
    ("bitshift", e(Elementwise, FLOP_PER_ELEMENT)),
    ("bitwiseand", e(Elementwise, FLOP_PER_ELEMENT)),
    ("bitwisenot", e(Elementwise, FLOP_PER_ELEMENT)),
    ("bitwiseor", e(Elementwise, FLOP_PER_ELEMENT)),
    ("bitwisexor", e(Elementwise, FLOP_PER_ELEMENT)),
    ("broadcast", e(DataMovement, FUSIBLE)),
    ("broadcast_in_dim", e(DataMovement, FOLDED | FUSIBLE | PASS_THROUGH)),
    ("call", e(ControlFlow, 0)),
    ("case", e(ControlFlow, 0)),
    ("cast", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE | PASS_THROUGH)),
    ("castlike", e(Elementwise, FLOP_PER_ELEMENT)),
    ("cbrt", e(Elementwise, TRANSCENDENTAL)),
    ("ceil", e(Elementwise, FLOP_PER_ELEMENT)),
    ("celu", e(Composite, 0)),
    ("clamp", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("clip", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("collective_broadcast", e(Collective, 0)),
    ("collective_permute", e(Collective, 0)),
    ("compare", e(Elementwise, FLOP_PER_ELEMENT)),
    ("complex", e(Elementwise, FLOP_PER_ELEMENT)),
    ("concat", e(DataMovement, 0)),
    ("concatenate", e(DataMovement, 0)),
    ("constant", e(DataMovement, FOLDED | FUSIBLE | CONSTANT)),
    ("constantofshape", e(DataMovement, CONSTANT)),
    ("conv", e(Convolution, 0)),
    ("convert", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE | PASS_THROUGH)),
    ("convinteger", e(Convolution, 0)),
    ("convolution", e(Convolution, 0)),
    ("convtranspose", e(Convolution, 0)),
    ("copy", e(DataMovement, 0)),
    ("cos", e(Elementwise, TRANSCENDENTAL)),
    ("cosh", e(Elementwise, TRANSCENDENTAL)),
    ("cosine", e(Elementwise, TRANSCENDENTAL)),
    ("count_leading_zeros", e(Elementwise, FLOP_PER_ELEMENT)),
    ("cumsum", e(Reduction, 0)),
    ("custom_call_sharding", e(Metadata, 0)),
    ("depthtospace", e(DataMovement, 0)),
    ("div", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("divide", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("dot", e(Contraction, 0)),
    ("dot_general", e(Contraction, 0)),
    ("dropout", e(DataMovement, 0)),
    ("dynamic_broadcast_in_dim", e(DataMovement, 0)),
    ("dynamic_slice", e(DataMovement, 0)),
    ("dynamic_update_slice", e(DataMovement, 0)),
    ("einsum", e(Contraction, 0)),
    ("elu", e(Composite, 0)),
    ("equal", e(Elementwise, FLOP_PER_ELEMENT)),
    ("erf", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("exp", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("expand", e(DataMovement, FUSIBLE)),
    ("exponential", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("exponential_minus_one", e(Elementwise, TRANSCENDENTAL)),
    ("fastgelu", e(Composite, 0)),
    ("flatten", e(DataMovement, ALIAS | FUSIBLE)),
    ("floor", e(Elementwise, FLOP_PER_ELEMENT)),
    ("fusedmatmul", e(Contraction, 0)),
    ("gather", e(GatherScatter, 0)),
    ("gatherelements", e(GatherScatter, 0)),
    ("gathernd", e(GatherScatter, 0)),
    ("gelu", e(Composite, IN_PLACE)),
    ("gemm", e(Contraction, 0)),
    ("get_dimension_size", e(Metadata, 0)),
    ("get_tuple_element", e(Metadata, FUSIBLE)),
    ("globalaveragepool", e(Reduction, STREAMING)),
    ("globalmaxpool", e(Reduction, STREAMING)),
    ("greater", e(Elementwise, FLOP_PER_ELEMENT)),
    ("greaterorequal", e(Elementwise, FLOP_PER_ELEMENT)),
    ("groupnormalization", e(Composite, 0)),
    ("hardsigmoid", e(Composite, 0)),
    ("hardswish", e(Composite, 0)),
    ("identity", e(DataMovement, ALIAS | FUSIBLE | PASS_THROUGH)),
    ("if", e(ControlFlow, 0)),
    ("imag", e(Elementwise, FLOP_PER_ELEMENT)),
    ("instancenormalization", e(Composite, 0)),
    ("iota", e(DataMovement, FOLDED | FUSIBLE | CONSTANT)),
    ("is_finite", e(Elementwise, FLOP_PER_ELEMENT)),
    ("isinf", e(Elementwise, FLOP_PER_ELEMENT)),
    ("isnan", e(Elementwise, FLOP_PER_ELEMENT)),
    ("layernormalization", e(Composite, IN_PLACE)),
    ("leakyrelu", e(Elementwise, FLOP_PER_ELEMENT)),
    ("less", e(Elementwise, FLOP_PER_ELEMENT)),
    ("lessorequal", e(Elementwise, FLOP_PER_ELEMENT)),
    ("log", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("log_plus_one", e(Elementwise, TRANSCENDENTAL)),
    ("logistic", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("logsoftmax", e(Composite, 0)),
    ("loop", e(ControlFlow, 0)),
    ("lppool", e(Reduction, 0)),
    ("matmul", e(Contraction, 0)),
    ("matmulinteger", e(Contraction, 0)),
    ("max", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("maximum", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("maxpool", e(Reduction, STREAMING)),
    ("mean", e(Elementwise, FLOP_PER_ELEMENT)),
    ("min", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("minimum", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("mish", e(Composite, 0)),
    ("mod", e(Elementwise, FLOP_PER_ELEMENT)),
    ("mul", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("multiheadattention", e(Attention, 0)),
    ("multiply", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("neg", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("negate", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("not", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("onehot", e(DataMovement, 0)),
    ("optimization_barrier", e(Metadata, ALIAS)),
    ("or", e(Elementwise, FLOP_PER_ELEMENT)),
    ("pad", e(DataMovement, 0)),
    ("partition_id", e(Metadata, 0)),
    ("popcnt", e(Elementwise, FLOP_PER_ELEMENT)),
    ("pow", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("power", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("prelu", e(Elementwise, FLOP_PER_ELEMENT)),
    ("qlinearconv", e(Convolution, 0)),
    ("qlinearmatmul", e(Contraction, 0)),
    ("range", e(DataMovement, 0)),
    ("real", e(Elementwise, FLOP_PER_ELEMENT)),
    ("reciprocal", e(Elementwise, TRANSCENDENTAL)),
    ("reduce", e(Reduction, STREAMING)),
    ("reduce_scatter", e(Collective, 0)),
    ("reduce_window", e(Reduction, STREAMING)),
    ("reducel1", e(Reduction, 0)),
    ("reducel2", e(Reduction, 0)),
    ("reducelogsum", e(Reduction, 0)),
    ("reducelogsumexp", e(Reduction, 0)),
    ("reducemax", e(Reduction, STREAMING)),
    ("reducemean", e(Reduction, STREAMING)),
    ("reducemin", e(Reduction, 0)),
    ("reduceprod", e(Reduction, 0)),
    ("reducesum", e(Reduction, STREAMING)),
    ("reducesumsquare", e(Reduction, 0)),
    ("relu", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("remainder", e(Elementwise, FLOP_PER_ELEMENT)),
    ("replica_id", e(Metadata, 0)),
    ("reshape", e(DataMovement, ALIAS | FUSIBLE | PASS_THROUGH)),
    ("reshard", e(Metadata, ALIAS | FUSIBLE)),
    ("return", e(Metadata, FUSIBLE)),
    ("reverse", e(DataMovement, 0)),
    ("rmsnormalization", e(Composite, 0)),
    ("rng", e(Random, 0)),
    ("rng_bit_generator", e(Random, 0)),
    ("round", e(Elementwise, FLOP_PER_ELEMENT)),
    ("round_nearest_afz", e(Elementwise, FLOP_PER_ELEMENT)),
    ("round_nearest_even", e(Elementwise, FLOP_PER_ELEMENT)),
    ("rsqrt", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("scaled_dot_product_attention", e(Attention, 0)),
    ("scan", e(ControlFlow, 0)),
    ("scatter", e(GatherScatter, 0)),
    ("scatterelements", e(GatherScatter, 0)),
    ("scatternd", e(GatherScatter, 0)),
    ("select", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("select_and_scatter", e(GatherScatter, 0)),
    ("selu", e(Composite, 0)),
    ("shape", e(Metadata, FUSIBLE)),
    ("sharding_constraint", e(Metadata, ALIAS | FUSIBLE)),
    ("shift_left", e(Elementwise, FLOP_PER_ELEMENT)),
    ("shift_right_arithmetic", e(Elementwise, FLOP_PER_ELEMENT)),
    ("shift_right_logical", e(Elementwise, FLOP_PER_ELEMENT)),
    ("sigmoid", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("sign", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("silu", e(Composite, 0)),
    ("simplifiedlayernormalization", e(Composite, 0)),
    ("sin", e(Elementwise, TRANSCENDENTAL)),
    ("sine", e(Elementwise, TRANSCENDENTAL)),
    ("sinh", e(Elementwise, TRANSCENDENTAL)),
    ("size", e(Metadata, 0)),
    ("skiplayernormalization", e(Composite, 0)),
    ("slice", e(DataMovement, 0)),
    ("softmax", e(Composite, IN_PLACE)),
    ("softplus", e(Elementwise, TRANSCENDENTAL)),
    ("softsign", e(Elementwise, TRANSCENDENTAL)),
    ("sort", e(Sort, 0)),
    ("spacetodepth", e(DataMovement, 0)),
    ("split", e(DataMovement, 0)),
    ("sqrt", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("square", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("squeeze", e(DataMovement, ALIAS | FUSIBLE | PASS_THROUGH)),
    ("sub", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("subtract", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("sum", e(Elementwise, FLOP_PER_ELEMENT)),
    ("swish", e(Composite, 0)),
    ("tan", e(Elementwise, TRANSCENDENTAL)),
    ("tanh", e(Elementwise, TRANSCENDENTAL | IN_PLACE)),
    ("thresholdedrelu", e(Composite, 0)),
    ("tile", e(DataMovement, 0)),
    ("topk", e(Sort, 0)),
    ("transpose", e(DataMovement, PASS_THROUGH)),
    ("tuple", e(Metadata, FUSIBLE)),
    ("unsqueeze", e(DataMovement, ALIAS | FUSIBLE | PASS_THROUGH)),
    ("where", e(Elementwise, FLOP_PER_ELEMENT | IN_PLACE)),
    ("while", e(ControlFlow, 0)),
    ("xor", e(Elementwise, FLOP_PER_ELEMENT)),
];

/// The short name of an op: dialect prefix dropped, lowercased (`stablehlo.add` and `Add` give
/// `add`).
#[must_use]
pub fn short_name(op: &str) -> String {
    op.rsplit('.').next().unwrap_or(op).to_ascii_lowercase()
}

/// Family and properties of an op, by its short name (see [`short_name`]).
#[must_use]
pub fn lookup(short: &str) -> OpInfo {
    TABLE.binary_search_by(|(name, _)| name.cmp(&short)).map_or(OpInfo::UNKNOWN, |i| TABLE[i].1)
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
        for w in TABLE.windows(2) {
            assert!(w[0].0 < w[1].0, "{} / {}", w[0].0, w[1].0);
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
