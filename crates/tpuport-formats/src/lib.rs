//! Importers: read a file a user brings into tpuport's neutral [`Model`].
//!
//! Every importer implements [`Importer`]: a cheap [`Importer::sniff`] on the first bytes and
//! the path, and [`Importer::import`]. [`open`] picks the importer. Importers know nothing
//! about TPUs and never print; problems that do not stop the import become
//! [`tpuport_model::Note`]s on the model.
//!
//! Hostile input is expected: every size field read from a file is checked against the file's
//! length and against [`Limits`] before anything is allocated, recursion is bounded, and no
//! importer panics on any input (each has a fuzz target under `fuzz/`).

pub mod lowered;
pub mod npy;
pub mod onnx;
pub mod safetensors;
pub mod stablehlo;
pub mod tensors;
pub mod torch;

mod error;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

pub use error::FormatError;
use tpuport_model::{Model, Shape};

/// Resource limits applied while importing untrusted files.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest JSON header accepted (safetensors, index files).
    pub max_header_bytes: u64,
    /// Deepest nesting of regions / subgraphs / brackets accepted.
    pub max_nesting: usize,
    /// Largest total uncompressed size read from an archive member into memory (pickles,
    /// npz members read whole).
    pub max_inflated_bytes: u64,
    /// Largest number of tensors, nodes or values in one file.
    pub max_items: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: 100 << 20,
            max_nesting: 256,
            max_inflated_bytes: 1 << 30,
            max_items: 50_000_000,
        }
    }
}

/// Options for an import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Concrete sizes for symbolic dimensions (`batch=8`).
    pub dims: BTreeMap<String, u64>,
    /// Full shapes for named inputs (`--input-shape x=1x3x224x224`).
    pub input_shapes: BTreeMap<String, Shape>,
    /// Size for the leading dimension of every input whose first dimension is symbolic.
    pub batch: Option<u64>,
    /// Resource limits.
    pub limits: Limits,
}

/// One file format's reader.
pub trait Importer: Sync {
    /// Short name (`onnx`, `stablehlo`, `safetensors`, `torch`, `npy`).
    fn name(&self) -> &'static str;
    /// Whether this importer recognises the file from its path and first bytes (up to 64).
    fn sniff(&self, path: &Path, head: &[u8]) -> bool;
    /// Reads the file.
    ///
    /// # Errors
    /// A [`FormatError`] naming the file and what is wrong with it.
    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError>;
}

/// All importers, in the order `open` tries their `sniff`.
#[must_use]
pub fn importers() -> &'static [&'static dyn Importer] {
    &[
        &safetensors::SafetensorsImporter,
        &npy::NpyImporter,
        &torch::TorchImporter,
        &stablehlo::StablehloImporter,
        &onnx::OnnxImporter,
    ]
}

/// Opens a model, checkpoint or tensor file, choosing the importer by content and extension.
///
/// # Errors
/// [`FormatError::Io`] when the file cannot be read, [`FormatError::UnknownFormat`] when no
/// importer recognises it, or the importer's own error.
pub fn open(path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
    let mut head = Vec::with_capacity(64);
    if path.is_file() {
        std::fs::File::open(path)
            .and_then(|f| f.take(64).read_to_end(&mut head))
            .map_err(|source| FormatError::io(path, source))?;
    } else if let Err(source) = std::fs::metadata(path) {
        return Err(FormatError::io(path, source));
    }
    for imp in importers() {
        if imp.sniff(path, &head) {
            return imp.import(path, opts);
        }
    }
    Err(FormatError::UnknownFormat {
        path: path.to_path_buf(),
        hint: "expected .onnx, .mlir (StableHLO text or bytecode), .safetensors (or its \
               .index.json), .pt/.pth/.bin, .npy or .npz"
            .to_owned(),
    })
}
