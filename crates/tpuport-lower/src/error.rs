use thiserror::Error;

/// Everything that can stop a lowering or a rewrite.
#[derive(Debug, Error)]
pub enum LowerError {
    /// An op, an attribute value or an opset this lowering does not handle.
    #[error("node `{node}` ({op}, opset {opset}): {what}")]
    Unsupported {
        /// Node name (or `#index` when the node has none).
        node: String,
        /// Domain-qualified op name.
        op: String,
        /// Opset version of the op's domain in the model.
        opset: i64,
        /// What is not supported.
        what: String,
    },
    /// An op needs an operand's value at lowering time (a target shape, axes, pads, slice
    /// bounds) and the operand is neither a constant nor a graph input whose value was bound
    /// with [`crate::onnx::lower_with_values`].
    #[error(
        "node `{node}` ({op}, opset {opset}): {what} (input {operand}) must be known at lowering \
         time (a constant or a bound input value)"
    )]
    NeedsHostValue {
        /// Node name (or `#index` when the node has none).
        node: String,
        /// Domain-qualified op name.
        op: String,
        /// Opset version of the op's domain in the model.
        opset: i64,
        /// What the operand is (`the target shape`, `axes`, ...).
        what: String,
        /// Index of the operand among the node's inputs.
        operand: usize,
        /// ONNX name of the value feeding that operand.
        value: String,
    },
    /// The model is malformed or not static where it must be.
    #[error("{0}")]
    Invalid(String),
    /// Reading or printing through `tpuport-formats` failed.
    #[error(transparent)]
    Format(#[from] tpuport_formats::FormatError),
}

impl LowerError {
    /// Whether the lowering stopped at something it does not handle (as opposed to a
    /// malformed model or a file error): [`LowerError::Unsupported`] and
    /// [`LowerError::NeedsHostValue`].
    #[must_use]
    pub fn is_unsupported(&self) -> bool {
        matches!(self, LowerError::Unsupported { .. } | LowerError::NeedsHostValue { .. })
    }
}
