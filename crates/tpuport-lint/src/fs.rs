//! Atomic file replacement.

use std::path::Path;

use crate::error::LintError;

/// Replaces `path` with `contents` through [`tpuport_model::fs::write_atomic`] (a temporary
/// file in the same folder, synced, given the original's permissions, renamed over it). A
/// failure leaves the original untouched.
///
/// # Errors
/// When the temporary file cannot be created, written or renamed.
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), LintError> {
    tpuport_model::fs::write_atomic_bytes(path, contents.as_bytes())
        .map_err(|source| LintError::Write { path: path.to_owned(), source })
}
