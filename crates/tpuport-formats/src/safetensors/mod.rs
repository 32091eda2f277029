//! safetensors: single files and sharded checkpoints (`*.safetensors.index.json`).
//!
//! Import reads the header only: the file is memory-mapped once and every tensor becomes a
//! [`WeightData::Mapped`] range of that mapping, so inspecting a 70 GB checkpoint touches a few
//! kilobytes. [`header::parse`] validates the whole header before any weight is created.
//! `__metadata__` goes to [`tpuport_model::Metadata::properties`]; its `format` entry (`pt`,
//! `tf`, `flax`, `np`, `mlx`) becomes the producer and the framework guess.
//!
//! Sharded checkpoints are read by [`index`]: a shard named by the index is opened relative to
//! the index's folder (absolute names and `..` are refused), and the index and the shards must
//! agree: a tensor the index maps to a shard that does not hold it is an error; a tensor a
//! shard holds but the index does not name is imported with a `shard-unlisted-tensor` warning;
//! a tensor held by a shard other than the one the index names (a duplicate) is an error when
//! the mapped shard lacks it, else the extra copy is skipped with a `shard-duplicate-tensor`
//! warning.
#![allow(unsafe_code, reason = "memory-mapping safetensors files (memmap2)")]

pub mod header;
pub mod hf_config;
mod index;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use tpuport_model::{Framework, Model, ModelFormat, NoteLevel, Weight, WeightData};

pub use header::{Header, TensorEntry, dtype_name};
pub use write::{TensorOut, write_safetensors};

use crate::{FormatError, ImportOptions, Importer, Limits};

/// Importer for `.safetensors` files, their `.safetensors.index.json` and folders holding one.
#[derive(Debug)]
pub struct SafetensorsImporter;

impl Importer for SafetensorsImporter {
    fn name(&self) -> &'static str {
        "safetensors"
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".safetensors.index.json") || name.ends_with(".safetensors") {
            return true;
        }
        if path.is_dir() {
            return index::find_in_dir(path).is_some();
        }
        looks_like_header(head)
    }

    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
        import_with(path, &opts.limits)
    }
}

/// True when `head` starts with a plausible header length followed by `{`.
fn looks_like_header(head: &[u8]) -> bool {
    let (Some(len), Some(&b'{')) = (head.get(..8), head.get(8)) else {
        return false;
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(len);
    let n = u64::from_le_bytes(a);
    n >= 2 && n <= crate::Limits::default().max_header_bytes
}

/// Imports a `.safetensors` file, an index, or a folder holding an index (or exactly one
/// `.safetensors` file).
///
/// # Errors
/// [`FormatError`] naming the file and the field that is wrong.
pub fn import_with(path: &Path, limits: &Limits) -> Result<Model, FormatError> {
    let mut model = import_tensors(path, limits)?;
    // A Hugging Face folder's config.json, beside the index or the file.
    let dir = if path.is_dir() { Some(path) } else { path.parent() };
    if let Some((config, problems)) = dir.map(hf_config::read).transpose()?.flatten() {
        hf_config::attach(&mut model, config, problems);
    }
    Ok(model)
}

fn import_tensors(path: &Path, limits: &Limits) -> Result<Model, FormatError> {
    if path.is_dir() {
        return match index::find_in_dir(path) {
            Some(p) if p.to_string_lossy().ends_with(".json") => index::import(&p, limits),
            Some(p) => import_file(&p, limits),
            None => Err(FormatError::invalid(
                path,
                "folder holds no *.safetensors.index.json and not exactly one .safetensors file",
            )),
        };
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.ends_with(".json") {
        return index::import(path, limits);
    }
    import_file(path, limits)
}

/// Imports one `.safetensors` file.
///
/// # Errors
/// As [`import_with`].
pub fn import_file(path: &Path, limits: &Limits) -> Result<Model, FormatError> {
    let (map, h) = open_file(path, limits)?;
    let mut model = Model::empty(ModelFormat::Safetensors);
    apply_metadata(&mut model, &h.metadata);
    add_tensors(&mut model, path, &map, &h, None);
    note_gaps(&mut model, path, &h);
    Ok(model)
}

/// Maps a file and parses its header.
pub(crate) fn open_file(path: &Path, limits: &Limits) -> Result<(Arc<Mmap>, Header), FormatError> {
    let f = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
    let len = f.metadata().map_err(|e| FormatError::io(path, e))?.len();
    let map = if len == 0 {
        None
    } else {
        // SAFETY: read-only private mapping; the bytes are treated as untrusted and every
        // offset is validated by `header::parse` before use. A concurrent truncation of the
        // file could fault on access, the documented memmap2 caveat accepted for weight files.
        Some(unsafe { Mmap::map(&f) }.map_err(|e| FormatError::io(path, e))?)
    };
    let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
    let h = header::parse(path, bytes, limits)?;
    let map = match map {
        Some(m) => Arc::new(m),
        None => return Err(FormatError::invalid(path, "file is empty")),
    };
    Ok((map, h))
}

/// Adds every tensor of a parsed file as a mapped weight; `keep` filters by name.
pub(crate) fn add_tensors(
    model: &mut Model,
    path: &Path,
    map: &Arc<Mmap>,
    h: &Header,
    keep: Option<&dyn Fn(&str) -> bool>,
) {
    let p: Arc<PathBuf> = Arc::new(path.to_path_buf());
    for t in &h.tensors {
        if keep.is_some_and(|k| !k(&t.name)) {
            continue;
        }
        model.weights.push(Weight {
            name: t.name.clone(),
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: WeightData::Mapped {
                map: map.clone(),
                path: p.clone(),
                offset: h.data_start + t.begin,
                len: t.end - t.begin,
            },
        });
    }
}

pub(crate) fn note_gaps(model: &mut Model, path: &Path, h: &Header) {
    let unused: u64 = h.gaps.iter().map(|(b, e)| e - b).sum();
    if unused > 0 {
        model.note(
            NoteLevel::Warning,
            "safetensors-gap",
            format!(
                "{}: {unused} bytes of the data buffer belong to no tensor (first at {}..{})",
                path.display(),
                h.gaps[0].0,
                h.gaps[0].1
            ),
        );
    }
}

/// Records `__metadata__` and derives producer and framework from its `format` entry.
pub(crate) fn apply_metadata(model: &mut Model, meta: &[(String, String)]) {
    for (k, v) in meta {
        if !model.metadata.properties.iter().any(|(pk, _)| pk == k) {
            model.metadata.properties.push((k.clone(), v.clone()));
        }
        if k == "format" && model.metadata.producer.is_none() {
            model.metadata.producer = Some(v.clone());
            model.metadata.framework = framework_of(v);
        }
    }
}

/// The framework a `__metadata__.format` value names.
#[must_use]
pub fn framework_of(format: &str) -> Framework {
    match format.to_ascii_lowercase().as_str() {
        "pt" | "torch" | "pytorch" => Framework::PyTorch,
        "tf" | "tensorflow" => Framework::TensorFlow,
        "keras" => Framework::Keras,
        "flax" => Framework::Flax,
        "jax" => Framework::Jax,
        "np" | "numpy" | "mlx" | "paddle" => Framework::Other,
        _ => Framework::Unknown,
    }
}

/// Reads and validates the header of the safetensors file at `path` (memory-mapped; no tensor
/// data is read): what a reader of row ranges (`tpuport batch`) needs to seek.
///
/// # Errors
/// As [`header::parse`], and [`FormatError::Io`] when the file cannot be opened.
pub fn read_header(path: &Path, limits: &Limits) -> Result<Header, FormatError> {
    let map = crate::torch::archive::map_file(path)?;
    header::parse(path, &map, limits)
}
