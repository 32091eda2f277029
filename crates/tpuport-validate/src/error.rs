use tpuport_exec::ExecError;
use tpuport_formats::FormatError;
use tpuport_lower::LowerError;
use tpuport_model::ModelError;
use tpuport_pjrt::PjrtError;

/// Why a pipeline could not run. `Display` is one line; [`ValidateError::Context`] layers
/// read as `outer: inner` through [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValidateError {
    /// Reading a model or tensor file.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Lowering or rewriting a module.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The PJRT runtime (plugin, compile, transfer, execute).
    #[error(transparent)]
    Pjrt(#[from] PjrtError),
    /// Tensor bytes that do not match their type.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Opening, binding or running the model.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Options or data that cannot work together; the message names what and where.
    #[error("{0}")]
    Invalid(String),
    /// A file or process operation.
    #[error("{what}")]
    Io {
        /// What was being done (`writing out/candidate.mlir`).
        what: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An error with what was being done when it happened.
    #[error("{what}")]
    Context {
        /// What was being done (`running m.mlir (candidate)`).
        what: String,
        /// Cause.
        #[source]
        source: Box<ValidateError>,
    },
}

/// Result alias of this crate.
pub type Result<T, E = ValidateError> = std::result::Result<T, E>;

/// `with_context` for results of this crate.
pub(crate) trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<ValidateError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ValidateError::Context { what: what(), source: Box::new(e.into()) })
    }
}

/// An [`ValidateError::Invalid`].
pub(crate) fn invalid(msg: impl Into<String>) -> ValidateError {
    ValidateError::Invalid(msg.into())
}

/// An [`ValidateError::Io`].
pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> ValidateError {
    ValidateError::Io { what: what.into(), source }
}
