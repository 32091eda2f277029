//! ONNX external data: `location` / `offset` / `length` entries resolved against the model's
//! directory, with traversal rejected and ranges checked against the data file's size.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use tpuport_model::WeightData;

use crate::FormatError;

use super::proto::StringStringEntryProto;

/// Memory maps of the external data files a model refers to, one per file.
#[derive(Debug, Default)]
pub(crate) struct ExternalFiles {
    maps: HashMap<PathBuf, (Arc<Mmap>, Arc<PathBuf>)>,
}

/// Maps a whole file read-only.
#[allow(
    unsafe_code,
    reason = "memory-mapping model and weight files is the point of the lazy store"
)]
pub(crate) fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the mapping is read-only and tpuport never writes to model files; a file
    // truncated or rewritten by another process while mapped is outside what any mmap reader
    // can guard against, and is documented as unsupported.
    unsafe { Mmap::map(file) }
}

impl ExternalFiles {
    /// Resolves a tensor's external data to a mapped byte range of `need` bytes.
    pub(crate) fn resolve(
        &mut self,
        model: &Path,
        dir: &Path,
        entries: &[StringStringEntryProto],
        what: &str,
        need: u64,
    ) -> Result<WeightData, FormatError> {
        let get = |k: &str| entries.iter().rev().find(|e| e.key == k).map(|e| e.value.as_str());
        let location = get("location").filter(|l| !l.is_empty()).ok_or_else(|| {
            FormatError::invalid(model, format!("{what}: external data has no location"))
        })?;
        let parse = |k: &str| -> Result<Option<u64>, FormatError> {
            get(k)
                .map(|v| {
                    v.trim().parse::<u64>().map_err(|_| {
                        FormatError::invalid(
                            model,
                            format!("{what}: external data {k} '{v}' is not a byte count"),
                        )
                    })
                })
                .transpose()
        };
        let offset = parse("offset")?.unwrap_or(0);
        let length = parse("length")?;
        let rel = Path::new(location);
        let escapes = rel.is_absolute()
            || rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        if escapes {
            return Err(FormatError::invalid(
                model,
                format!("{what}: external data location '{location}' leaves the model's directory"),
            ));
        }
        let full = dir.join(rel);
        let (map, path) = self.map(model, dir, &full, what)?;
        let flen = map.len() as u64;
        let len = length.unwrap_or_else(|| flen.saturating_sub(offset));
        let end = offset.saturating_add(len);
        if end > flen {
            return Err(FormatError::invalid(
                model,
                format!(
                    "{what}: external data bytes {offset}..{end} lie past the end of {} ({flen} bytes)",
                    full.display()
                ),
            ));
        }
        if len != need {
            return Err(FormatError::invalid(
                model,
                format!(
                    "{what}: external data holds {len} bytes, but its dtype and shape need {need}"
                ),
            ));
        }
        Ok(WeightData::Mapped { map, path, offset, len })
    }

    fn map(
        &mut self,
        model: &Path,
        dir: &Path,
        full: &Path,
        what: &str,
    ) -> Result<(Arc<Mmap>, Arc<PathBuf>), FormatError> {
        if let Some((m, p)) = self.maps.get(full) {
            return Ok((Arc::clone(m), Arc::clone(p)));
        }
        let fail = |e: std::io::Error| {
            FormatError::invalid(
                model,
                format!("{what}: external data file {}: {e}", full.display()),
            )
        };
        // A symlink inside the model directory may still point outside it: compare real paths.
        let real = full.canonicalize().map_err(fail)?;
        let real_dir = dir.canonicalize().map_err(fail)?;
        if !real.starts_with(&real_dir) {
            return Err(FormatError::invalid(
                model,
                format!(
                    "{what}: external data file {} resolves outside the model's directory",
                    full.display()
                ),
            ));
        }
        let file = File::open(&real).map_err(fail)?;
        if !file.metadata().map_err(fail)?.is_file() {
            return Err(FormatError::invalid(
                model,
                format!("{what}: external data {} is not a regular file", full.display()),
            ));
        }
        let map = Arc::new(map_file(&file).map_err(fail)?);
        let path = Arc::new(full.to_path_buf());
        self.maps.insert(full.to_path_buf(), (Arc::clone(&map), Arc::clone(&path)));
        Ok((map, path))
    }
}
