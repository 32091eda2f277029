//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong reading a profile input.
///
/// Every message is one line and names the file and, where known, the byte offset or line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// A file or folder could not be read.
    #[error("cannot read `{}`", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A file is not something `profile` reads.
    #[error("`{}`: {what}", path.display())]
    Unrecognized {
        /// The file.
        path: PathBuf,
        /// What it is, or what it lacks, one line.
        what: String,
    },

    /// A trace file is not valid JSON where the scanner stopped.
    #[error("`{}`: byte {offset}: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Offset in the (decompressed) JSON text.
        offset: u64,
        /// What is wrong.
        message: String,
    },

    /// One trace event is larger than the scanner holds at once.
    #[error("`{}`: byte {offset}: a trace event is larger than {limit} bytes", path.display())]
    EventTooLarge {
        /// The file.
        path: PathBuf,
        /// Offset where the event starts.
        offset: u64,
        /// The limit in bytes.
        limit: usize,
    },

    /// A path given on the command line holds no input `profile` reads.
    #[error("`{}`: no trace, metrics report or log found in this folder", path.display())]
    EmptyFolder {
        /// The folder.
        path: PathBuf,
    },
}

impl ProfileError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ProfileError {
        ProfileError::Io { path: path.into(), source }
    }
}
