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
    /// The model is malformed or not static where it must be.
    #[error("{0}")]
    Invalid(String),
    /// Reading or printing through `tpuport-formats` failed.
    #[error(transparent)]
    Format(#[from] tpuport_formats::FormatError),
}
