//! tpuport-python: the one crate that knows how Python source is parsed.
//!
//! Design decision: tpuport parses Python with the pinned `ruff_python_parser` crates (exact
//! byte ranges, error recovery, a grammar a production linter keeps current), but no other crate
//! names them. This facade converts ruff's tree into tpuport's own, smaller [`ast`] (the node
//! kinds tpuport's rules look at, with everything else kept as generic children so a walk still
//! reaches every expression), and exposes comments with ranges, a line index and byte-range
//! slicing. A switch of parser (the documented fallback is tree-sitter-python) touches only this
//! crate.

pub mod ast;
mod convert;
mod error;
mod parse;
mod source;
mod span;
pub mod visitor;

pub use error::ParseError;
pub use parse::{Comment, ParsedModule, parse_module};
pub use source::{LineCol, LineIndex};
pub use span::Span;
