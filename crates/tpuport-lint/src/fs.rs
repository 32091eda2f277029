//! Atomic file replacement.

use std::io::Write;
use std::path::Path;

use crate::error::LintError;

/// Replaces `path` with `contents` via a temporary file in the same folder and a rename, keeping
/// the original's permissions. A failure leaves the original untouched.
///
/// # Errors
/// When the temporary file cannot be created, written or renamed.
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), LintError> {
    let err = |source| LintError::Write { path: path.to_owned(), source };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let perms = std::fs::metadata(path).map(|m| m.permissions()).ok();
    let mut tmp = tempfile::Builder::new()
        .prefix(".tpuport-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    tmp.write_all(contents.as_bytes()).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    if let Some(p) = perms {
        std::fs::set_permissions(tmp.path(), p).map_err(err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}
