//! Placeholder: being written (see the foundation issue).

use std::path::Path;

use tpuport_model::Model;

use crate::{FormatError, ImportOptions, Importer};

/// Importer for this format.
#[derive(Debug)]
pub struct TorchImporter;

impl Importer for TorchImporter {
    fn name(&self) -> &'static str {
        "torch"
    }
    fn sniff(&self, _path: &Path, _head: &[u8]) -> bool {
        false
    }
    fn import(&self, path: &Path, _opts: &ImportOptions) -> Result<Model, FormatError> {
        Err(FormatError::unsupported(path, "torch import is not written yet"))
    }
}
