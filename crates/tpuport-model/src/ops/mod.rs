//! What an op *is*, independent of any one pass: its family and the properties the analysis
//! passes rely on ([`OpInfo`]), and for ONNX ops the one registry ([`onnx`]) that shape
//! inference (`tpuport-formats`), the lowering (`tpuport-lower`) and the cost pass
//! (`tpuport-analysis`) all read.
//!
//! The StableHLO / CHLO / Shardy names keep their own table in `tpuport_analysis::taxonomy`
//! (only analysis reads them); it is built from the same [`OpInfo`] values.

pub mod onnx;

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
    /// Recurrent layers (RNN, GRU, LSTM): one matrix product per step of a loop over the
    /// sequence, plus the gates' elementwise work.
    Recurrent,
    /// Indexed reads and writes: gather and scatter in their forms.
    GatherScatter,
    /// Sorting and top-k.
    Sort,
    /// Moves, reshapes or materialises data without arithmetic: reshape, transpose, slice,
    /// concat, pad, broadcast, resampling, constants and iotas.
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
    /// Not in any table.
    Other,
}

/// Named properties, one bit each (combine with `|` in [`OpInfo::new`]).
pub mod props {
    /// Counts as one transcendental evaluation per output element.
    pub const TRANSCENDENTAL: u16 = 1 << 0;
    /// Counts as one FLOP per output element.
    pub const FLOP_PER_ELEMENT: u16 = 1 << 1;
    /// May write its result into a same-sized operand that dies at it.
    pub const IN_PLACE: u16 = 1 << 2;
    /// Its result shares its first operand's buffer (a view).
    pub const ALIAS: u16 = 1 << 3;
    /// Folded into its consumers by XLA: takes no buffer of its own.
    pub const FOLDED: u16 = 1 << 4;
    /// Data movement XLA fuses into a neighbour: moves no bytes of its own.
    pub const FUSIBLE: u16 = 1 << 5;
    /// A reduction that consumes its input while writing a smaller result.
    pub const STREAMING: u16 = 1 << 6;
    /// Produces a value known at compile time.
    pub const CONSTANT: u16 = 1 << 7;
    /// Passes element values through unchanged up to layout or type (reshape, cast, …).
    pub const PASS_THROUGH: u16 = 1 << 8;
}

use props::{
    ALIAS, CONSTANT, FLOP_PER_ELEMENT, FOLDED, FUSIBLE, IN_PLACE, PASS_THROUGH, STREAMING,
    TRANSCENDENTAL,
};

/// Family and properties of one op.
///
/// Properties are named for the pass that needs them and kept apart where two passes mean
/// different things by a similar list: [`OpInfo::flop_per_element`] (the cost pass counts one
/// FLOP per output element) is not [`OpInfo::writes_in_place`] (the memory pass lets the result
/// take a dying operand's buffer), and neither implies the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The op's family.
    pub family: OpFamily,
    props: u16,
}

impl OpInfo {
    /// An op that is not in any table.
    pub const UNKNOWN: OpInfo = OpInfo { family: OpFamily::Other, props: 0 };

    /// An op of `family` with the [`props`] bits `props`.
    #[must_use]
    pub const fn new(family: OpFamily, props: u16) -> OpInfo {
        OpInfo { family, props }
    }

    /// The [`props`] bits.
    #[must_use]
    pub const fn props(self) -> u16 {
        self.props
    }

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
        matches!(
            self.family,
            OpFamily::Contraction
                | OpFamily::Convolution
                | OpFamily::Attention
                | OpFamily::Recurrent
        )
    }
}
