//! The crate's error type: start-up failures ([`ServeError`]) and per-request failures
//! ([`InferError`], which carries its protocol status).

use std::path::PathBuf;

/// Why the server or a model could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No model loaded: nothing to serve (`model` is `*`).
    #[error("model `{model}`: {message}")]
    Model {
        /// The model's name.
        model: String,
        /// What failed.
        message: String,
    },
    /// The model repository, a model's config or files, or the PJRT runtime: opening or
    /// loading a model failed (the message names the file or the model).
    #[error(transparent)]
    Exec(#[from] tpuport_exec::ExecError),
    /// The listener could not be bound or served.
    #[error("listening on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl ServeError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ServeError {
        ServeError::Io { path: path.into(), source }
    }
}

/// The kind of a request failure; decides the HTTP status and the gRPC code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed or does not fit the model (400, `INVALID_ARGUMENT`).
    InvalidArgument,
    /// No such model or version (404, `NOT_FOUND`).
    NotFound,
    /// The model cannot take the request now: queue full, draining, not ready (503 with
    /// `Retry-After`, `UNAVAILABLE`).
    Unavailable,
    /// The request waited past its timeout (503 with `Retry-After`, `DEADLINE_EXCEEDED`).
    Timeout,
    /// The body or a tensor is larger than the configured limit (413, `RESOURCE_EXHAUSTED`).
    TooLarge,
    /// Model control is off, or the token is wrong (403, `PERMISSION_DENIED`).
    Forbidden,
    /// The body did not arrive in time (408, `DEADLINE_EXCEEDED`).
    SlowBody,
    /// The runtime failed while executing (500, `INTERNAL`).
    Internal,
}

/// A request failure: a kind and a message for the client (never an internal path).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct InferError {
    /// The kind.
    pub kind: ErrorKind,
    /// The message.
    pub message: String,
    /// Why the inputs were refused, for `tpuport_input_refusals_total` (`None`: another
    /// failure, or a malformed request).
    pub(crate) refusal: Option<crate::drift::Refusal>,
}

impl InferError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> InferError {
        InferError { kind, message: message.into(), refusal: None }
    }

    /// A 400 that refuses the request's inputs for `why`.
    pub(crate) fn refused(why: crate::drift::Refusal, message: impl Into<String>) -> InferError {
        InferError { refusal: Some(why), ..InferError::invalid(message) }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> InferError {
        InferError::new(ErrorKind::InvalidArgument, message)
    }

    /// The HTTP status for this error.
    #[must_use]
    pub fn http_status(&self) -> u16 {
        match self.kind {
            ErrorKind::InvalidArgument => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::Unavailable | ErrorKind::Timeout => 503,
            ErrorKind::TooLarge => 413,
            ErrorKind::Forbidden => 403,
            ErrorKind::SlowBody => 408,
            ErrorKind::Internal => 500,
        }
    }
}
