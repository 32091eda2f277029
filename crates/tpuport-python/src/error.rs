//! The crate's one error type.

use crate::span::Span;

/// Python source that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error at {line}:{column}: {message}")]
pub struct ParseError {
    /// What the parser expected or found.
    pub message: String,
    /// Where, as bytes.
    pub span: Span,
    /// 1-based line of `span.start`.
    pub line: u32,
    /// 1-based column (in characters) of `span.start`.
    pub column: u32,
}
