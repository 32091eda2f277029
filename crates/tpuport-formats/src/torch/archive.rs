//! Zip archives read under [`Limits`]: torch checkpoints and `.npz` files.
//!
//! The whole file is memory-mapped once; the central directory is read by the `zip` crate.
//! Members are inflated only within the `max_inflated_bytes` budget (the size the central
//! directory declares is checked before reading, and reading stops one byte past it, so a
//! member that inflates to more than it declares fails instead of filling memory). Members
//! stored uncompressed are not read at all: [`Archive::stored_range`] finds their bytes in the
//! mapping from the local file header, for [`tpuport_model::WeightData::Mapped`] weights.
#![allow(unsafe_code, reason = "memory-mapping the checkpoint file (memmap2)")]

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use zip::{CompressionMethod, ZipArchive};

use crate::{FormatError, Limits};

/// Memory-maps a whole file read-only.
pub(crate) fn map_file(path: &Path) -> Result<Arc<Mmap>, FormatError> {
    let f = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
    // SAFETY: the mapping is read-only and private to this process. Its contents are treated as
    // untrusted bytes (every offset is bounds-checked before use), so a file that changes
    // underneath can give wrong values but not unsoundness in our code; truncation by another
    // process while mapped is the documented memmap2 caveat we accept for checkpoint files.
    let map = unsafe { Mmap::map(&f) }.map_err(|e| FormatError::io(path, e))?;
    Ok(Arc::new(map))
}

#[derive(Clone)]
struct MapBytes(Arc<Mmap>);

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// What the central directory says about one member.
#[derive(Clone, Debug)]
pub(crate) struct MemberInfo {
    /// Member name.
    pub name: String,
    /// Declared uncompressed size.
    pub size: u64,
    /// True when stored without compression.
    pub stored: bool,
    /// Offset of the local file header.
    pub header_start: u64,
}

/// An open zip archive with an inflation budget.
pub(crate) struct Archive {
    path: PathBuf,
    map: Arc<Mmap>,
    zip: ZipArchive<Cursor<MapBytes>>,
    members: Vec<MemberInfo>,
    budget: u64,
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Archive({}, {} members)", self.path.display(), self.members.len())
    }
}

impl Archive {
    /// Opens `path` as a zip archive.
    pub(crate) fn open(path: &Path, limits: &Limits) -> Result<Archive, FormatError> {
        let map = map_file(path)?;
        Archive::from_map(path, map, limits)
    }

    /// Reads the central directory of an already mapped file.
    pub(crate) fn from_map(
        path: &Path,
        map: Arc<Mmap>,
        limits: &Limits,
    ) -> Result<Archive, FormatError> {
        let mut zip = ZipArchive::new(Cursor::new(MapBytes(map.clone())))
            .map_err(|e| FormatError::invalid(path, format!("not a readable zip archive: {e}")))?;
        if zip.len() as u64 > limits.max_items {
            return Err(FormatError::invalid(
                path,
                format!("zip holds {} members, over the limit of {}", zip.len(), limits.max_items),
            ));
        }
        let mut members = Vec::with_capacity(zip.len());
        for i in 0..zip.len() {
            let f = zip.by_index_raw(i).map_err(|e| {
                FormatError::invalid(path, format!("zip member #{i} is unreadable: {e}"))
            })?;
            if f.encrypted() {
                return Err(FormatError::unsupported(
                    path,
                    format!("zip member {} is encrypted", f.name()),
                ));
            }
            members.push(MemberInfo {
                name: f.name().to_owned(),
                size: f.size(),
                stored: f.compression() == CompressionMethod::Stored,
                header_start: f.header_start(),
            });
        }
        Ok(Archive {
            path: path.to_path_buf(),
            map,
            zip,
            members,
            budget: limits.max_inflated_bytes,
        })
    }

    /// The mapping of the whole archive file.
    pub(crate) fn map(&self) -> &Arc<Mmap> {
        &self.map
    }

    /// All members, in central-directory order.
    pub(crate) fn members(&self) -> &[MemberInfo] {
        &self.members
    }

    /// The member called `name`.
    pub(crate) fn member(&self, name: &str) -> Option<&MemberInfo> {
        self.members.iter().find(|m| m.name == name)
    }

    /// Reads a member whole, charging its size to the inflation budget.
    pub(crate) fn read(&mut self, name: &str) -> Result<Vec<u8>, FormatError> {
        let Some(idx) = self.members.iter().position(|m| m.name == name) else {
            return Err(FormatError::invalid(&self.path, format!("zip member {name} is missing")));
        };
        let declared = self.members[idx].size;
        if declared > self.budget {
            return Err(FormatError::invalid(
                &self.path,
                format!(
                    "zip member {name} declares {declared} bytes uncompressed, over the \
                     remaining inflation limit of {} bytes (possible zip bomb)",
                    self.budget
                ),
            ));
        }
        let path = self.path.clone();
        let bad = |e: &dyn std::fmt::Display| {
            FormatError::invalid(&path, format!("zip member {name} is corrupt: {e}"))
        };
        let f = self.zip.by_index(idx).map_err(|e| bad(&e))?;
        let cap = usize::try_from(declared).unwrap_or(0).min(self.map.len().saturating_mul(4));
        let mut buf = Vec::with_capacity(cap);
        f.take(declared + 1).read_to_end(&mut buf).map_err(|e| bad(&e))?;
        if buf.len() as u64 > declared {
            return Err(FormatError::invalid(
                &self.path,
                format!(
                    "zip member {name} inflates past its declared {declared} bytes (zip bomb?)"
                ),
            ));
        }
        if (buf.len() as u64) < declared {
            return Err(FormatError::invalid(
                &self.path,
                format!(
                    "zip member {name} inflates to {} bytes but declares {declared}",
                    buf.len()
                ),
            ));
        }
        self.budget -= declared;
        Ok(buf)
    }

    /// The absolute byte range of a stored (uncompressed) member's data in the mapping, found
    /// from its local file header. `None` for compressed members.
    pub(crate) fn stored_range(&self, m: &MemberInfo) -> Result<Option<(u64, u64)>, FormatError> {
        if !m.stored {
            return Ok(None);
        }
        let bad = |what: String| {
            FormatError::invalid(&self.path, format!("zip member {}: {what}", m.name))
        };
        let map: &[u8] = &self.map;
        let h = usize::try_from(m.header_start).unwrap_or(usize::MAX);
        let Some(hdr) = h.checked_add(30).and_then(|e| map.get(h..e)) else {
            return Err(bad("local header lies past the end of the file".to_owned()));
        };
        if hdr[..4] != [0x50, 0x4b, 0x03, 0x04] {
            return Err(bad("local header signature is wrong".to_owned()));
        }
        let name_len = u64::from(u16::from_le_bytes([hdr[26], hdr[27]]));
        let extra_len = u64::from(u16::from_le_bytes([hdr[28], hdr[29]]));
        let start = m.header_start + 30 + name_len + extra_len;
        let end =
            start.checked_add(m.size).filter(|&e| e <= map.len() as u64).ok_or_else(|| {
                bad(format!(
                    "{} data bytes at offset {start} run past the end of the file ({} bytes)",
                    m.size,
                    map.len()
                ))
            })?;
        Ok(Some((start, end)))
    }
}
