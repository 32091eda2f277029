//! The crate's error type.

use tpuport_exec::ExecError;
use tpuport_formats::FormatError;
use tpuport_lower::LowerError;
use tpuport_pjrt::PjrtError;

/// Why a compile could not run (a program that does not fit is not an error: the report says
/// so). `Display` is one line; [`CompileError::Context`] layers read as `outer: inner` through
/// [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// Reading a model file.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Lowering or rewriting a module.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The PJRT runtime (plugin, topology, compile, serialize).
    #[error(transparent)]
    Pjrt(#[from] PjrtError),
    /// Reading a StableHLO module with its signature.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Options or data that cannot work together, no libtpu, or a program the compiler
    /// rejects; the message names what and where.
    #[error("{0}")]
    Invalid(String),
    /// A file operation.
    #[error("{what}")]
    Io {
        /// What was being done (`writing m.pjrt`).
        what: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An error with what was being done when it happened.
    #[error("{what}")]
    Context {
        /// What was being done (`lowering m.onnx to StableHLO`).
        what: String,
        /// Cause.
        #[source]
        source: Box<CompileError>,
    },
}

/// Result alias of this crate.
pub type Result<T, E = CompileError> = std::result::Result<T, E>;

/// `with_context` for results of this crate.
pub(crate) trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<CompileError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| CompileError::Context { what: what(), source: Box::new(e.into()) })
    }
}

/// A [`CompileError::Invalid`].
pub(crate) fn invalid(msg: impl Into<String>) -> CompileError {
    CompileError::Invalid(msg.into())
}

/// A [`CompileError::Io`].
pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> CompileError {
    CompileError::Io { what: what.into(), source }
}
