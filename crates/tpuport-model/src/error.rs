use thiserror::Error;

/// Errors raised by IR operations (binding shapes, reading weight bytes, building tensors).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A tensor's byte length does not match its dtype and shape.
    #[error("tensor `{name}`: {got} bytes, but dtype {dtype} and shape {shape} need {expected}")]
    ByteLength {
        /// Tensor name (may be empty for anonymous tensors).
        name: String,
        /// Element type.
        dtype: crate::DType,
        /// Printed shape.
        shape: String,
        /// Byte count implied by dtype and shape.
        expected: u64,
        /// Byte count found.
        got: u64,
    },
    /// A shape's element count overflows `u64`.
    #[error("shape {shape} has more elements than fit in 64 bits")]
    Overflow {
        /// Printed shape.
        shape: String,
    },
    /// A symbolic dimension has no binding where a concrete size is required.
    #[error("dimension `{dim}` is symbolic; bind it (e.g. --input-shape or --batch)")]
    Unbound {
        /// The symbol.
        dim: String,
    },
    /// Reading lazily stored bytes failed.
    #[error("reading weight `{name}` from {path}")]
    Io {
        /// Weight name.
        name: String,
        /// File the bytes live in.
        path: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The stored byte range lies outside the file it points into.
    #[error("weight `{name}`: bytes {offset}..{end} lie past the end of {path} ({len} bytes)")]
    OutOfRange {
        /// Weight name.
        name: String,
        /// File the bytes should live in.
        path: String,
        /// Start offset.
        offset: u64,
        /// End offset.
        end: u64,
        /// File length.
        len: u64,
    },
    /// The weight has no bytes at all (a header-only import, e.g. a pickle's metadata).
    #[error("weight `{name}` has no data in this import (header-only)")]
    NoData {
        /// Weight name.
        name: String,
    },
}

/// An error and its causes as one line (`outer: cause: root`), for the one-line messages every
/// verb prints.
#[must_use]
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
