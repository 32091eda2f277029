//! What a run writes: one set of files per part, then the shard's manifest of completed parts
//! and its errors file, each replaced atomically.
//!
//! Part `P` is `part-PPPPP.<output>.npy` per model output (the good rows, in input order, no
//! padding) and `part-PPPPP.keys.json` (each row's key). A part is written before the manifest
//! names it, so a killed run leaves at worst a part the manifest does not list yet: the resumed
//! run writes it again, with the same bytes.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tpuport_exec::TensorSig;

use crate::error::{BatchError, Result};
use crate::source::BadRow;

/// Schema id of the manifest.
pub const MANIFEST_SCHEMA: &str = "tpuport.batch-manifest/1";

/// The manifest of one shard's completed parts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// Hash of everything that decides the output bytes (model signature, input listing,
    /// batch, part size, image spec): a resumed run must match it.
    pub fingerprint: String,
    /// This shard's index.
    pub shard_index: usize,
    /// The shard count.
    pub shard_count: usize,
    /// Parts this shard owns.
    pub parts: usize,
    /// Completed parts, in part order.
    pub done: Vec<PartRecord>,
}

/// One completed part.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartRecord {
    /// The part number (global, the same whatever the sharding).
    pub part: usize,
    /// Rows written.
    pub rows: u64,
    /// Files written, relative to the output folder.
    pub files: Vec<String>,
    /// Rows refused, with the reason.
    pub bad: Vec<BadRow>,
}

/// File names of shard `index` of `count` (`_manifest.json` and `_errors.jsonl` unsharded).
pub(crate) fn shard_files(index: usize, count: usize) -> (String, String) {
    if count == 1 {
        ("_manifest.json".to_owned(), "_errors.jsonl".to_owned())
    } else {
        (
            format!("_manifest.shard-{index:05}-of-{count:05}.json"),
            format!("_errors.shard-{index:05}-of-{count:05}.jsonl"),
        )
    }
}

/// Largest manifest read back.
const MAX_MANIFEST_BYTES: u64 = 1 << 30;

impl Manifest {
    /// Reads the manifest at `path`, `None` when there is none.
    ///
    /// # Errors
    /// Unreadable or not a manifest.
    pub fn read(path: &Path) -> Result<Option<Manifest>> {
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BatchError::io(path, e)),
        };
        if len > MAX_MANIFEST_BYTES {
            return Err(BatchError::Manifest {
                path: path.to_path_buf(),
                message: format!("{len} bytes is too large for a manifest"),
            });
        }
        let text = std::fs::read(path).map_err(|e| BatchError::io(path, e))?;
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| BatchError::Manifest {
            path: path.to_path_buf(),
            message: format!("not a batch manifest: {e}"),
        })?;
        if m.schema != MANIFEST_SCHEMA {
            return Err(BatchError::Manifest {
                path: path.to_path_buf(),
                message: format!("schema {:?}, expected {MANIFEST_SCHEMA:?}", m.schema),
            });
        }
        Ok(Some(m))
    }

    /// Writes the manifest and the errors file (every bad row of the completed parts, then
    /// `extra`), each atomically.
    pub(crate) fn write(&self, dir: &Path, extra: &[BadRow]) -> Result<()> {
        let (m, e) = shard_files(self.shard_index, self.shard_count);
        let path = dir.join(m);
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| BatchError::Manifest { path: path.clone(), message: e.to_string() })?;
        let epath = dir.join(e);
        tpuport_model::fs::write_atomic(&epath, |f| {
            let mut w = std::io::BufWriter::new(f);
            for b in self.done.iter().flat_map(|p| &p.bad).chain(extra) {
                serde_json::to_writer(&mut w, b).map_err(std::io::Error::other)?;
                w.write_all(b"\n")?;
            }
            w.flush()
        })
        .map_err(|e| BatchError::io(&epath, e))?;
        tpuport_model::fs::write_atomic_bytes(&path, &text).map_err(|e| BatchError::io(&path, e))
    }
}

/// Removes the temporary files a killed run of this shard left behind (`.part-P….tmp-PID-N`
/// for the parts it owns, and those of its manifest and errors file). Other shards writing
/// into the same folder at the same time keep theirs; anything else is left alone.
pub(crate) fn remove_stale_temporaries(dir: &Path, index: usize, count: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let (m, e) = shard_files(index, count);
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.contains(".tmp-") {
            continue;
        }
        let part = name
            .strip_prefix(".part-")
            .and_then(|r| r.split('.').next())
            .and_then(|n| n.parse::<usize>().ok());
        let ours = part.is_some_and(|p| p % count == index)
            || name.starts_with(&format!(".{m}.tmp-"))
            || name.starts_with(&format!(".{e}.tmp-"));
        if ours {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A file-name-safe form of an output name.
fn safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(
            |c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' { c } else { '_' },
        )
        .collect();
    if s.is_empty() || s.starts_with('.') { format!("out{s}") } else { s }
}

/// How parts are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// `part-P.<output>.npy` per output and `part-P.keys.json`.
    #[default]
    Npy,
    /// `part-P.parquet`: a `key` column, then one column per output (fixed-size lists of the
    /// output's elements, row-major).
    Parquet,
}

/// Writes part `part` as one Parquet file: `key`, then one column per output.
pub(crate) fn write_part_parquet(
    dir: &Path,
    part: usize,
    outputs: &[TensorSig],
    data: &[Vec<u8>],
    keys: &[String],
) -> Result<Vec<String>> {
    use std::sync::Arc;

    use arrow_array::builder::StringBuilder;
    use arrow_array::{ArrayRef, RecordBatch};
    use arrow_schema::{Field, Schema};

    let file = format!("part-{part:05}.parquet");
    let path = dir.join(&file);
    let invalid = |m: String| BatchError::invalid(path.display().to_string(), m);
    let mut k = StringBuilder::new();
    for key in keys {
        k.append_value(key);
    }
    let mut cols: Vec<ArrayRef> = vec![Arc::new(k.finish())];
    let mut fields = vec![Field::new("key", arrow_schema::DataType::Utf8, false)];
    let mut used = vec!["key".to_owned()];
    for (i, (sig, bytes)) in outputs.iter().zip(data).enumerate() {
        let col = crate::parquet::list_column(sig, bytes)
            .map_err(|m| invalid(format!("output `{}`: {m}", sig.name)))?;
        let mut name = sig.name.clone();
        if used.contains(&name) {
            name = format!("{name}{i}");
        }
        used.push(name.clone());
        fields.push(Field::new(name, col.data_type().clone(), false));
        cols.push(col);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| invalid(e.to_string()))?;
    tpuport_model::fs::write_atomic(&path, |f| {
        let mut w =
            parquet::arrow::ArrowWriter::try_new(f, schema, None).map_err(std::io::Error::other)?;
        w.write(&batch).map_err(std::io::Error::other)?;
        w.close().map(|_| ()).map_err(std::io::Error::other)
    })
    .map_err(|e| BatchError::io(&path, e))?;
    Ok(vec![file])
}

/// Writes part `part`: `rows` rows of every output, and the keys. Returns the file names.
pub(crate) fn write_part(
    dir: &Path,
    part: usize,
    outputs: &[TensorSig],
    data: &[Vec<u8>],
    keys: &[String],
) -> Result<Vec<String>> {
    let rows = keys.len() as u64;
    let mut files = Vec::with_capacity(outputs.len() + 1);
    let mut used: Vec<String> = Vec::new();
    for (i, (sig, bytes)) in outputs.iter().zip(data).enumerate() {
        let mut name = safe(&sig.name);
        if used.contains(&name) {
            name = format!("{name}{i}");
        }
        used.push(name.clone());
        let file = format!("part-{part:05}.{name}.npy");
        let path = dir.join(&file);
        let mut shape = vec![rows];
        shape.extend_from_slice(&sig.row_shape);
        let head = tpuport_formats::npy::npy_header(sig.dtype, &shape)
            .map_err(|m| BatchError::invalid(format!("output `{}`", sig.name), m))?;
        tpuport_model::fs::write_atomic(&path, |f| {
            f.write_all(&head)?;
            f.write_all(bytes)
        })
        .map_err(|e| BatchError::io(&path, e))?;
        files.push(file);
    }
    let file = format!("part-{part:05}.keys.json");
    let path: PathBuf = dir.join(&file);
    let text = serde_json::to_vec(keys)
        .map_err(|e| BatchError::invalid(path.display().to_string(), e.to_string()))?;
    tpuport_model::fs::write_atomic_bytes(&path, &text).map_err(|e| BatchError::io(&path, e))?;
    files.push(file);
    Ok(files)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_safe_and_sharded() {
        assert_eq!(safe("logits"), "logits");
        assert_eq!(safe("a/b:0"), "a_b_0");
        assert_eq!(safe(".x"), "out.x");
        assert_eq!(shard_files(0, 1).0, "_manifest.json");
        assert_eq!(shard_files(2, 3).1, "_errors.shard-00002-of-00003.jsonl");
    }
}
