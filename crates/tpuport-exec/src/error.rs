//! The error of everything that opens, binds, compiles, loads or runs a model: this crate's,
//! and the pipelines built on it (`tpuport-compile`, `tpuport-validate`) return it too, built
//! with [`invalid`], [`io`] and [`Context::context`].

use std::path::PathBuf;

use tpuport_formats::FormatError;
use tpuport_lower::LowerError;
use tpuport_model::ModelError;
use tpuport_pjrt::PjrtError;

/// Why a model could not be opened, compiled, loaded, run or checked. `Display` is one line;
/// [`ExecError::Context`] layers read as `outer: inner` through [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// Reading a model or tensor file (a lowered folder's manifest, a module): the message
    /// names the file and the field.
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
    Tensor(#[from] ModelError),
    /// Options or data that cannot work together; the message names what and where.
    #[error("{0}")]
    Invalid(String),
    /// A file or process operation.
    #[error("{what}")]
    Io {
        /// What was being done (`writing out/out0.npy`).
        what: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An error with what was being done when it happened.
    #[error("{what}")]
    Context {
        /// What was being done (`compiling m.mlir`).
        what: String,
        /// Cause.
        #[source]
        source: Box<ExecError>,
    },
    /// A file of a model (its folder, `config.toml`, a module) could not be read.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A model's configuration is wrong: a `config.toml` value, a path that leaves the
    /// repository, a module or weights file that does not fit the config.
    #[error("{path}: {message}")]
    Config {
        /// The file (or the flag) at fault.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A model could not be loaded (its signature, a bucket, a saved executable).
    #[error("model `{model}`: {message}")]
    Load {
        /// The model's name.
        model: String,
        /// What failed.
        message: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = ExecError> = std::result::Result<T, E>;

impl ExecError {
    pub(crate) fn config(path: impl Into<PathBuf>, message: impl Into<String>) -> ExecError {
        ExecError::Config { path: path.into(), message: message.into() }
    }

    pub(crate) fn load(model: &str, message: impl Into<String>) -> ExecError {
        ExecError::Load { model: model.to_owned(), message: message.into() }
    }

    pub(crate) fn file(path: impl Into<PathBuf>, source: std::io::Error) -> ExecError {
        ExecError::File { path: path.into(), source }
    }
}

/// `with_context` for results that convert into an [`ExecError`].
pub trait Context<T> {
    /// The error wrapped in an [`ExecError::Context`] saying what was being done.
    ///
    /// # Errors
    /// The error of `self`, with the context.
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<ExecError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ExecError::Context { what: what(), source: Box::new(e.into()) })
    }
}

/// An [`ExecError::Invalid`].
#[must_use]
pub fn invalid(msg: impl Into<String>) -> ExecError {
    ExecError::Invalid(msg.into())
}

/// An [`ExecError::Io`].
#[must_use]
pub fn io(what: impl Into<String>, source: std::io::Error) -> ExecError {
    ExecError::Io { what: what.into(), source }
}
