use std::path::PathBuf;

/// Everything that can go wrong in the PJRT layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PjrtError {
    /// No plugin was found where tpuport looks.
    #[error("no PJRT plugin found (looked in: {searched}); pass --plugin PATH or set {env}")]
    NotFound {
        /// The places searched, comma-separated.
        searched: String,
        /// The environment variable that names a plugin.
        env: &'static str,
    },
    /// The file could not be loaded as a shared library.
    #[error("cannot load PJRT plugin {path}: {message}")]
    Load {
        /// Plugin path.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The library has no `GetPjrtApi` symbol, or it returned null.
    #[error("{path} is not a PJRT plugin: {what}")]
    NotAPlugin {
        /// Plugin path.
        path: PathBuf,
        /// What is missing.
        what: String,
    },
    /// The plugin's PJRT API version cannot be used with this build.
    #[error(
        "PJRT plugin {path} has PJRT API {major}.{minor}, which this tpuport (built against PJRT \
         API 0.{header_minor}) cannot use: {why}"
    )]
    IncompatibleVersion {
        /// Plugin path.
        path: PathBuf,
        /// Plugin's major version.
        major: i32,
        /// Plugin's minor version.
        minor: i32,
        /// Header minor version tpuport was written against.
        header_minor: i32,
        /// Why.
        why: String,
    },
    /// A function lies past the end of the plugin's function table (or is null there).
    #[error(
        "PJRT function {function} is not available in this plugin (PJRT API {major}.{minor}, \
         function table of {table_bytes} bytes)"
    )]
    Unavailable {
        /// The C function name.
        function: &'static str,
        /// Plugin's major version.
        major: i32,
        /// Plugin's minor version.
        minor: i32,
        /// The plugin's `PJRT_Api.struct_size`.
        table_bytes: usize,
    },
    /// A PJRT call returned an error.
    #[error("{function} failed ({code}): {message}")]
    Call {
        /// The C function name.
        function: &'static str,
        /// The error code's name (`INVALID_ARGUMENT`, …).
        code: ErrorCode,
        /// The plugin's message.
        message: String,
    },
    /// The platform reports no devices (e.g. libtpu on a machine without a TPU).
    #[error("no {platform} devices: {detail}")]
    NoDevices {
        /// `tpu`, `gpu`, `cpu`, or the plugin's platform name.
        platform: String,
        /// The plugin's message.
        detail: String,
    },
    /// The process environment must be prepared before the plugin can be used here (libtpu on
    /// a machine without a TPU: see [`crate::libtpu_offline_env`]).
    #[error("{plugin}: {what}")]
    Environment {
        /// Plugin path.
        plugin: PathBuf,
        /// What to set and why.
        what: String,
    },
    /// An argument the caller passed is wrong (count, device, dtype).
    #[error("{0}")]
    InvalidArgument(String),
    /// A dtype has no PJRT buffer type, or the plugin returned one tpuport does not know.
    #[error("unsupported element type {0}")]
    UnsupportedType(String),
    /// Reading or writing a file (cache entries).
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

impl PjrtError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        PjrtError::Io { path: path.into(), source }
    }

    /// The PJRT error code, when this error came from a plugin call.
    #[must_use]
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            PjrtError::Call { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A PJRT (absl) status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// `INVALID_ARGUMENT`.
    pub const INVALID_ARGUMENT: ErrorCode = ErrorCode(3);
    /// `NOT_FOUND`.
    pub const NOT_FOUND: ErrorCode = ErrorCode(5);
    /// `FAILED_PRECONDITION`.
    pub const FAILED_PRECONDITION: ErrorCode = ErrorCode(9);
    /// `UNIMPLEMENTED`.
    pub const UNIMPLEMENTED: ErrorCode = ErrorCode(12);

    /// The code's canonical name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "OK",
            1 => "CANCELLED",
            2 => "UNKNOWN",
            3 => "INVALID_ARGUMENT",
            4 => "DEADLINE_EXCEEDED",
            5 => "NOT_FOUND",
            6 => "ALREADY_EXISTS",
            7 => "PERMISSION_DENIED",
            8 => "RESOURCE_EXHAUSTED",
            9 => "FAILED_PRECONDITION",
            10 => "ABORTED",
            11 => "OUT_OF_RANGE",
            12 => "UNIMPLEMENTED",
            13 => "INTERNAL",
            14 => "UNAVAILABLE",
            15 => "DATA_LOSS",
            16 => "UNAUTHENTICATED",
            _ => "UNKNOWN_CODE",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Result alias for this crate.
pub type Result<T, E = PjrtError> = std::result::Result<T, E>;
