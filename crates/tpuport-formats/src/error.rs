use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a file could not be imported. Every variant names the file; `Display` is one line.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The file could not be opened or read.
    #[error("reading {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No importer recognises the file.
    #[error("{}: not a recognised model file ({hint})", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What was expected.
        hint: String,
    },
    /// The file is malformed: truncated, corrupt, inconsistent, or hostile (a size field larger
    /// than the file or the limits). `what` says where and what, e.g.
    /// `header length 1099511627776 exceeds file size 4096`.
    #[error("{}: {what}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field, node or tensor.
        what: String,
    },
    /// The file is well-formed but uses something this importer does not support.
    #[error("{}: unsupported: {what}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is unsupported.
        what: String,
    },
    /// Loading would execute code or otherwise be unsafe (pickle globals outside the
    /// tensor-rebuild allow-list).
    #[error("{}: refusing to load: {what}", path.display())]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What was found, e.g. `pickle global os.system is outside the tensor allow-list`.
        what: String,
    },
    /// Tensors that do not fit a signature, or a lowered artifact's arguments that cannot be
    /// assembled (see [`crate::tensors`] and [`crate::lowered`]).
    #[error("{set}: {problem}")]
    Bind {
        /// The tensor set (a path, or a flag such as `--input`).
        set: String,
        /// What does not fit (boxed: it carries tensor types and keeps this enum small).
        problem: Box<crate::tensors::BindProblem>,
    },
}

impl FormatError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> FormatError {
        FormatError::Io { path: path.to_path_buf(), source }
    }

    /// A malformed-file error on `path`.
    pub fn invalid(path: &Path, what: impl Into<String>) -> FormatError {
        FormatError::Invalid { path: path.to_path_buf(), what: what.into() }
    }

    /// A binding problem of the tensor set named `set`.
    pub fn bind(set: impl Into<String>, problem: crate::tensors::BindProblem) -> FormatError {
        FormatError::Bind { set: set.into(), problem: Box::new(problem) }
    }

    /// An unsupported-feature error on `path`.
    pub fn unsupported(path: &Path, what: impl Into<String>) -> FormatError {
        FormatError::Unsupported { path: path.to_path_buf(), what: what.into() }
    }
}
