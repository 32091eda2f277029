//! Reader for `tpuport lower`'s `manifest.json` (`tpuport.lower/1`).
//!
//! Kept in one small module on purpose: the manifest type is moving into a library crate, and
//! this reader is to be replaced by it.

use std::path::Path;

use serde::Deserialize;
use tpuport_model::DType;

use crate::error::ServeError;

/// Largest manifest read (a manifest lists arguments, not data).
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The manifest.
#[derive(Debug, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) schema: String,
    #[serde(default)]
    pub(crate) weights_file: Option<String>,
    pub(crate) buckets: Vec<Bucket>,
}

/// One lowered module.
#[derive(Debug, Deserialize)]
pub(crate) struct Bucket {
    pub(crate) batch: Option<u64>,
    pub(crate) module: String,
    pub(crate) args: Vec<Arg>,
    pub(crate) results: Vec<Result_>,
}

/// Where an argument comes from.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub(crate) enum Source {
    Input(String),
    Weight(String),
}

#[derive(Debug, Deserialize)]
pub(crate) struct Arg {
    pub(crate) source: Source,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Result_ {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<u64>,
}

/// Reads `dir/manifest.json`.
pub(crate) fn read(dir: &Path) -> Result<Manifest, ServeError> {
    let path = dir.join("manifest.json");
    let len = std::fs::metadata(&path).map_err(|e| ServeError::io(&path, e))?.len();
    if len > MAX_MANIFEST_BYTES {
        return Err(ServeError::config(&path, format!("{len} bytes is too large for a manifest")));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| ServeError::io(&path, e))?;
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| ServeError::config(&path, format!("not a tpuport lower manifest: {e}")))?;
    if m.schema != "tpuport.lower/1" {
        return Err(ServeError::config(
            &path,
            format!("schema {:?}: expected \"tpuport.lower/1\"", m.schema),
        ));
    }
    if m.buckets.is_empty() {
        return Err(ServeError::config(&path, "buckets: empty"));
    }
    Ok(m)
}
