//! Placeholder: being written (see the foundation issue).

use std::path::Path;

use tpuport_model::Model;

use crate::{FormatError, ImportOptions, Importer};

/// Importer for this format.
#[derive(Debug)]
pub struct NpyImporter;

impl Importer for NpyImporter {
    fn name(&self) -> &'static str {
        "npy"
    }
    fn sniff(&self, _path: &Path, _head: &[u8]) -> bool {
        false
    }
    fn import(&self, path: &Path, _opts: &ImportOptions) -> Result<Model, FormatError> {
        Err(FormatError::unsupported(path, "npy import is not written yet"))
    }
}
