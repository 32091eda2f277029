//! The ONNX op registry: one [`OnnxOp`] per op, holding everything tpuport knows about it —
//! its family and memory properties, which shape rule infers its outputs, which cost formula
//! counts it, and from which opset the ONNX → StableHLO lowering handles it. Shape inference
//! (`tpuport-formats`), the lowering (`tpuport-lower`) and the cost pass and op taxonomy
//! (`tpuport-analysis`) read their ONNX facts from [`TABLE`] and nowhere else.
//!
//! # Why a registry of names and rule keys, not ops that carry their own facts
//!
//! tract gives each op a type implementing one trait with `output_facts`, `eval` and `cost`,
//! so an op cannot exist without its facts. That needs one crate that can name the shape
//! engine, the StableHLO emitter and the cost model at once. tpuport's layering forbids it:
//! `tpuport-formats` (shape inference) and `tpuport-analysis` (cost) do not depend on
//! `tpuport-lower`, and importers know nothing of StableHLO. The one crate all three depend on
//! is this neutral IR, which cannot hold their code either.
//!
//! So the registry holds the *facts*, and the rules are named by key:
//! - [`ShapeRule`] and [`CostRule`] are closed enums. `tpuport-formats` maps every
//!   [`ShapeRule`] and `tpuport-analysis` every [`CostRule`] to code with an exhaustive
//!   `match` (no wildcard arm), so a new rule key does not compile until both crates implement
//!   it — the compiler does what tract's trait does.
//! - The lowering functions stay in `tpuport-lower`'s per-family tables, keyed by op name; the
//!   registry holds the opset they start at ([`OnnxOp::lowered_since`]). A test in
//!   `tpuport-lower` (`op_facts_agree_with_the_lowering`) fails when a lowering has no
//!   registry entry or the registry claims a lowering that does not exist, and when a lowered
//!   op has no shape rule or no cost rule; a test here fails on an entry nothing implements.
//!
//! Adding an op is one line in [`TABLE`] (plus its lowering function, if it is lowered).
//!
//! Ops are looked up by their exact ONNX name ([`get`]); the analysis taxonomy, which has
//! always matched op names case-insensitively, uses [`get_ignore_case`]. The table is sorted
//! by lowercased name (a test checks it) so both are binary searches. Domains: an entry is
//! either a standard ONNX op or an onnxruntime `com.microsoft` contrib op ([`OnnxDomain`]);
//! shape inference and cost look ops up by name in either domain, as onnxruntime-exported
//! graphs use the contrib names in both; the lowering handles default-domain ops only.

use std::cmp::Ordering;

use super::{OpFamily, OpInfo, props};

pub mod resize;
mod table;

pub use table::TABLE;

/// The domain an ONNX op is defined in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnnxDomain {
    /// The default domain (`""` / `ai.onnx`): the ONNX standard.
    Onnx,
    /// onnxruntime's contrib ops (`com.microsoft`).
    Microsoft,
}

/// Which shape rule of `tpuport-formats`' shape inference gives an op's output types.
///
/// Each variant is one rule; several ops share a rule when their outputs follow the same law.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeRule {
    /// No rule: the op's outputs stay unknown and inference reports the node.
    None,
    /// Outputs keep input 0's dtype and shape (unary ops, softmax, normalizations without a
    /// shape change, scatters, `CumSum`, `RotaryEmbedding`, `SwiGLU`, …); extra outputs are
    /// bool masks of that shape.
    Same,
    /// A bool tensor of input 0's shape (`Not`, `IsNaN`, `IsInf`).
    ToBool,
    /// Numpy broadcast of every input, input 0's dtype.
    Broadcast,
    /// Numpy broadcast of every input, bool.
    Compare,
    /// Input 0 unchanged, with an optional bool mask.
    Dropout,
    /// `Where(cond, x, y)`: broadcast of the three.
    Where,
    /// Input 0's shape in the `to` type (`Cast`) or input 1's type (`CastLike`).
    Cast,
    /// Input 0's shape in the `to` type (same bit width).
    BitCast,
    /// N-d convolution (`Conv`).
    Conv,
    /// N-d transposed convolution.
    ConvTranspose,
    /// `MaxPool` / `AveragePool` / `LpPool` windows.
    Pool,
    /// Global pools: spatial dims become 1.
    GlobalPool,
    /// `BatchNormalization` (with training-mode outputs).
    BatchNorm,
    /// Layer-style normalizations with their optional mean / inverse-std outputs.
    LayerNorm,
    /// Numpy matmul of inputs 0 and 1.
    MatMul,
    /// `QLinearMatMul`: numpy matmul of inputs 0 and 3 in `y_zero_point`'s type.
    QLinearMatMul,
    /// `Gemm` with its transposes.
    Gemm,
    /// `Einsum` by its equation.
    Einsum,
    /// `RNN` / `GRU` / `LSTM` outputs (`Y`, `Y_h`, `Y_c`) in either layout.
    Recurrent,
    /// `Attention` (opset 23): `Y`, present key / value and the QK output.
    Attention,
    /// `Resize` / `Upsample` from scales or sizes.
    Resize,
    /// `Shape`.
    Shape,
    /// `Size`.
    Size,
    /// `Reshape`.
    Reshape,
    /// `Flatten`.
    Flatten,
    /// `Unsqueeze`.
    Unsqueeze,
    /// `Squeeze`.
    Squeeze,
    /// `Expand`.
    Expand,
    /// `Tile`.
    Tile,
    /// `ConstantOfShape`.
    ConstantOfShape,
    /// `Range`.
    Range,
    /// `Transpose`.
    Transpose,
    /// `Concat`.
    Concat,
    /// `Split`.
    Split,
    /// `Slice`.
    Slice,
    /// `Gather`.
    Gather,
    /// `GatherElements`.
    GatherElements,
    /// `GatherND`.
    GatherNd,
    /// `Pad`.
    Pad,
    /// `CenterCropPad`: the `shape` input on the chosen axes.
    CenterCropPad,
    /// `TopK`: values and indices.
    TopK,
    /// `NonZero`.
    NonZero,
    /// `ArgMax` / `ArgMin`.
    ArgReduce,
    /// `Reduce*` ops, axes from the attribute or input.
    Reduce,
    /// `Constant`: the value's type (inferred by the engine).
    Constant,
    /// `If`: the branches' outputs (inferred by the engine).
    If,
    /// `Loop`: carried values and stacked scan outputs (inferred by the engine).
    Loop,
    /// `Scan`: final states and stacked scan outputs (inferred by the engine).
    Scan,
    /// `HannWindow` / `HammingWindow` / `BlackmanWindow`: a 1-D tensor of the given size.
    Window,
    /// `EyeLike`: input 0's shape in the `dtype` type.
    EyeLike,
    /// `OneHot`: the indices' shape with `depth` inserted at `axis`.
    OneHot,
    /// `DepthToSpace`.
    DepthToSpace,
    /// `SpaceToDepth`.
    SpaceToDepth,
    /// `QuantizeLinear`: input 0's shape in the zero point's (or `output_dtype`'s) type.
    Quantize,
    /// `DequantizeLinear`: input 0's shape in the scale's (or `output_dtype`'s) type.
    Dequantize,
    /// `NegativeLogLikelihoodLoss` / `SoftmaxCrossEntropyLoss` by `reduction`.
    Loss,
}

/// Which formula of `tpuport-analysis`' cost pass counts an op (XLA's `HloCostAnalysis`
/// convention; the formulas are documented where the cost pass implements them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostRule {
    /// No formula: the op counts 0 FLOPs and the report says so.
    None,
    /// Moves, reshapes or describes data: 0 FLOPs, bytes only.
    Data,
    /// A fixed number of FLOPs and transcendental evaluations per output element.
    PerElement {
        /// FLOPs per output element.
        flops: u8,
        /// Transcendental evaluations per output element.
        transcendentals: u8,
    },
    /// n-ary `Sum` / `Mean` / `Max` / `Min`: one FLOP per output element per extra operand.
    Variadic,
    /// Layer-style normalization: `8n` FLOPs and one rsqrt per normalized row.
    Normalization,
    /// Local response normalization: a window sum over channels and a power per element.
    Lrn,
    /// Matrix product, `2 · batch · M · N · K` (a Gemm bias adds `M · N`).
    MatMul,
    /// `Einsum`: `2 ·` the product of every index's size for a two-operand contraction.
    Einsum,
    /// Convolution over valid taps.
    Conv,
    /// Transposed convolution.
    ConvTranspose,
    /// ONNX `Attention` (opset 23): both products, scaling, masks, softcap and the softmax.
    Attention,
    /// A fused attention op counted as its two products and a softmax from Q's and K's shapes
    /// (`MultiHeadAttention`).
    FusedAttention,
    /// `RNN` / `GRU` / `LSTM`: every step's products and gate arithmetic.
    Recurrent,
    /// `Resize` / `Upsample`: the interpolation's multiply-adds, axis by axis.
    Resize,
    /// `RotaryEmbedding`: four multiplies and two adds per rotated pair.
    Rotary,
    /// `SwiGLU`: `Swish(A) · B`.
    SwiGlu,
    /// Max / Lp pooling: `(window − 1)` per output element.
    Pool,
    /// Average pooling: `(window − 1) + 1` per output element.
    AveragePool,
    /// A reduction: `input − output` elements.
    Reduce,
    /// A mean: `input − output` adds and one division per output.
    ReduceMean,
    /// A sum of squares (or L2 norm): a multiply per input and `input − output` adds.
    ReduceSquares,
    /// A cumulative sum or product: one op per element.
    Cumulative,
    /// A scatter: its combiner once per update element.
    Scatter,
    /// Sort / top-k: `n · ⌈log₂ n⌉` comparisons.
    Sort,
    /// A loss over its scores input: the picks and reduction (`SoftmaxCrossEntropyLoss` adds
    /// its log-softmax).
    Loss,
    /// `Loop` / `Scan`: the body times the trip count.
    Loop,
    /// `If`: the costlier branch.
    If,
}

impl CostRule {
    /// One FLOP per output element.
    pub const ELEMENTWISE: CostRule = CostRule::PerElement { flops: 1, transcendentals: 0 };
    /// One transcendental evaluation per output element.
    pub const TRANSCENDENTAL: CostRule = CostRule::PerElement { flops: 0, transcendentals: 1 };
}

/// Everything tpuport knows about one ONNX op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnnxOp {
    /// The op type as ONNX spells it.
    pub name: &'static str,
    /// Where the op is defined.
    pub domain: OnnxDomain,
    /// Its family in the analysis taxonomy.
    pub family: OpFamily,
    /// Memory and findings properties ([`props`]); the two cost bits
    /// ([`props::TRANSCENDENTAL`], [`props::FLOP_PER_ELEMENT`]) come from [`OnnxOp::cost`].
    pub props: u16,
    /// The shape rule inferring its outputs.
    pub shape: ShapeRule,
    /// The cost formula counting it.
    pub cost: CostRule,
    /// The oldest opset whose semantics the lowering implements; `None` when it is not lowered.
    pub lowered_since: Option<i64>,
}

impl OnnxOp {
    /// A standard op with no properties and no lowering (table builder).
    #[must_use]
    pub const fn new(
        name: &'static str,
        family: OpFamily,
        shape: ShapeRule,
        cost: CostRule,
    ) -> OnnxOp {
        OnnxOp {
            name,
            domain: OnnxDomain::Onnx,
            family,
            props: 0,
            shape,
            cost,
            lowered_since: None,
        }
    }

    /// The op, lowered from `opset` on (table builder).
    #[must_use]
    pub const fn lowered(self, opset: i64) -> OnnxOp {
        OnnxOp { lowered_since: Some(opset), ..self }
    }

    /// The op with the [`props`] bits `props` (table builder).
    #[must_use]
    pub const fn with(self, props: u16) -> OnnxOp {
        OnnxOp { props, ..self }
    }

    /// The op as an onnxruntime contrib op (table builder).
    #[must_use]
    pub const fn microsoft(self) -> OnnxOp {
        OnnxOp { domain: OnnxDomain::Microsoft, ..self }
    }

    /// Family and properties for the analysis taxonomy, the cost bits derived from
    /// [`OnnxOp::cost`].
    #[must_use]
    pub const fn info(&self) -> OpInfo {
        let derived = match self.cost {
            CostRule::PerElement { flops: 0, transcendentals: 1 } => props::TRANSCENDENTAL,
            CostRule::PerElement { flops: 1, transcendentals: 0 } | CostRule::Variadic => {
                props::FLOP_PER_ELEMENT
            }
            _ => 0,
        };
        OpInfo::new(self.family, self.props | derived)
    }

    /// Whether the lowering handles this op in `domain` (`""`, `ai.onnx`, …) at all.
    #[must_use]
    pub fn lowered_in(&self, domain: &str) -> Option<i64> {
        let default = domain.is_empty() || domain == "ai.onnx";
        self.lowered_since.filter(|_| default && self.domain == OnnxDomain::Onnx)
    }
}

/// Compares two names by their ASCII-lowercased bytes.
fn cmp_ignore_case(a: &str, b: &str) -> Ordering {
    a.bytes().map(|c| c.to_ascii_lowercase()).cmp(b.bytes().map(|c| c.to_ascii_lowercase()))
}

/// The entry for an op name, matched case-insensitively (`relu` finds `Relu`).
#[must_use]
pub fn get_ignore_case(name: &str) -> Option<&'static OnnxOp> {
    TABLE.binary_search_by(|o| cmp_ignore_case(o.name, name)).ok().map(|i| &TABLE[i])
}

/// The entry for an op name as ONNX spells it (`Relu`).
#[must_use]
pub fn get(name: &str) -> Option<&'static OnnxOp> {
    get_ignore_case(name).filter(|o| o.name == name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique_ignoring_case() {
        for w in TABLE.windows(2) {
            assert_eq!(
                cmp_ignore_case(w[0].name, w[1].name),
                Ordering::Less,
                "{} / {}",
                w[0].name,
                w[1].name
            );
        }
    }

    /// An entry nothing implements (no shape rule, no cost rule, no lowering) says nothing.
    #[test]
    fn every_entry_is_implemented_somewhere() {
        let idle: Vec<&str> = TABLE
            .iter()
            .filter(|o| {
                o.shape == ShapeRule::None && o.cost == CostRule::None && o.lowered_since.is_none()
            })
            .map(|o| o.name)
            .collect();
        assert!(idle.is_empty(), "registry entries nothing implements: {idle:?}");
    }

    /// The two cost bits are derived from the cost rule, never written in the table.
    #[test]
    fn cost_bits_are_derived() {
        for o in TABLE {
            assert_eq!(
                o.props & (props::TRANSCENDENTAL | props::FLOP_PER_ELEMENT),
                0,
                "{} sets a cost bit; give it a cost rule instead",
                o.name
            );
        }
        assert!(get("Exp").unwrap().info().is_transcendental());
        assert!(get("Add").unwrap().info().flop_per_element());
        assert!(!get("Softmax").unwrap().info().flop_per_element());
    }

    #[test]
    fn lookups() {
        assert_eq!(get("LSTM").map(|o| o.family), Some(OpFamily::Recurrent));
        assert!(get("lstm").is_none());
        assert_eq!(get_ignore_case("lstm").map(|o| o.name), Some("LSTM"));
        assert!(get("Unheard").is_none());
        let add = get("Add").unwrap();
        assert_eq!(add.lowered_in(""), Some(7));
        assert_eq!(add.lowered_in("ai.onnx"), Some(7));
        assert_eq!(add.lowered_in("com.example"), None);
        assert_eq!(get("FusedMatMul").unwrap().lowered_in("com.microsoft"), None);
    }
}
