//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong while linting or porting.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid Python.
    #[error("{path}: cannot parse")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        #[source]
        source: tpuport_python::ParseError,
    },
    /// A file is not UTF-8.
    #[error("{path}: not valid UTF-8")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// Applying fixes produced invalid Python; the file was left as it was.
    #[error("{path}: fix introduced a syntax error ({rules}); fixes reverted")]
    FixBrokeSyntax {
        /// The file.
        path: PathBuf,
        /// Codes whose fixes were in the failing pass.
        rules: String,
    },
    /// A walk over a folder failed.
    #[error("cannot walk {path}")]
    Walk {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ignore::Error,
    },
    /// `--select` / `--ignore` named no rule.
    #[error(
        "unknown rule selector `{0}` (expected a code like TPU201, a prefix like TPU2, or ALL)"
    )]
    UnknownSelector(String),
}
