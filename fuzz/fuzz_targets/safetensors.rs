//! Fuzz target: the safetensors importer must return Ok or a FormatError on any bytes, never panic,
//! hang or allocate without bound. Importers read files, so each input is written to a file in
//! a per-process temp dir (on tmpfs where available) first.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tpuport_formats::{ImportOptions, Importer};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tpuport-fuzz-safetensors-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("input.safetensors");
    if std::fs::write(&path, data).is_ok() {
        let _ = tpuport_formats::safetensors::SafetensorsImporter.import(&path, &ImportOptions::default());
    }
});
