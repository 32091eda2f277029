//! The crate's error type.

use std::path::PathBuf;

/// Why a batch run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An option or an input does not fit the model (the field or file is named).
    #[error("{what}: {message}")]
    Invalid {
        /// The option, file or field at fault.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The model could not be opened.
    #[error("opening the model")]
    Model(#[from] tpuport_exec::ExecError),
    /// Executing a batch failed.
    #[error("executing a batch of part {part}")]
    Execute {
        /// The output part the batch belongs to.
        part: usize,
        /// The runtime's failure.
        #[source]
        source: tpuport_pjrt::PjrtError,
    },
    /// The output folder holds a manifest from another run.
    #[error("{path}: {message}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What does not match.
        message: String,
    },
    /// `--fail-fast`: the first bad row stopped the run (completed parts are kept).
    #[error("stopped at the first bad row (--fail-fast): {key}: {reason}")]
    BadRow {
        /// The row's key.
        key: String,
        /// Why it was refused.
        reason: String,
    },
}

impl BatchError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> BatchError {
        BatchError::Io { path: path.into(), source }
    }

    pub(crate) fn invalid(what: impl Into<String>, message: impl Into<String>) -> BatchError {
        BatchError::Invalid { what: what.into(), message: message.into() }
    }
}

/// Results of this crate.
pub type Result<T, E = BatchError> = std::result::Result<T, E>;
