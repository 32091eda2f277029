//! `--save`: the serialized executable and its manifest next to it, each written atomically.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};
use tpuport_exec::error::{Context as _, Result, invalid, io};
use tpuport_pjrt::{Executable, NamedValue, Program};

use crate::{CompileReport, CompilerInfo, Operand, PerDevice, Saved};

/// Manifest schema of a saved executable (a CPU one too: its `platform` says `cpu`).
pub use tpuport_exec::saved::MANIFEST_SCHEMA;

/// Manifest written next to a saved executable. `tpuport serve` checks `platform`,
/// `device_kind`, `program_devices`, `compile_options_hex`, `compiler.build`,
/// `compiler.pjrt_api` and `program_sha256` against the plugin it runs on and the program it
/// would compile, and `executable_bytes` / `executable_sha256` against the file.
#[derive(Debug, Serialize)]
struct Manifest<'a> {
    schema: &'static str,
    /// `tpu` or `cpu`: the PJRT platform the executable runs on.
    platform: &'a str,
    executable: String,
    executable_sha256: String,
    executable_bytes: u64,
    model: &'a str,
    model_sha256: &'a str,
    /// SHA-256 of the StableHLO program compiled (the module file's bytes; for ONNX, the
    /// program tpuport lowered it to).
    program_sha256: String,
    source: &'a str,
    target: &'a str,
    pub(crate) topology: &'a str,
    topology_options: Vec<NamedValue>,
    device_kind: &'a str,
    program_devices: u32,
    compile_options_hex: String,
    compiler: &'a CompilerInfo,
    per_device: &'a PerDevice,
    parameters: &'a [Operand],
    outputs: &'a [Operand],
}

/// What a saved executable was compiled for.
pub(crate) struct SavedFor<'a> {
    pub(crate) platform: &'a str,
    pub(crate) topology: &'a str,
    pub(crate) topology_options: &'a [NamedValue],
    pub(crate) compile_options: &'a tpuport_pjrt::CompileOptions,
    pub(crate) program: &'a Program,
}

/// Writes the executable and then its manifest, each atomically
/// ([`tpuport_model::fs::write_atomic_bytes`]), so a manifest on disk always describes a
/// complete executable.
pub(crate) fn save(
    file: &Path,
    exe: &Executable,
    r: &CompileReport,
    on: &SavedFor<'_>,
) -> Result<Saved> {
    let bytes = exe.serialize().context(|| "serializing the executable".into())?;
    let sha = hex(&Sha256::digest(&bytes));
    let manifest_path = PathBuf::from(format!("{}.json", file.display()));
    tpuport_model::fs::write_atomic_bytes(file, &bytes)
        .map_err(|e| io(format!("writing {}", file.display()), e))?;
    let m = Manifest {
        schema: MANIFEST_SCHEMA,
        platform: on.platform,
        executable: file.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        executable_sha256: sha.clone(),
        executable_bytes: bytes.len() as u64,
        model: &r.model,
        model_sha256: &r.model_sha256,
        program_sha256: hex(&Sha256::digest(on.program.code())),
        source: &r.source,
        target: &r.target,
        topology: on.topology,
        topology_options: on.topology_options.to_vec(),
        device_kind: &r.device_kind,
        program_devices: r.program_devices,
        compile_options_hex: hex(&on.compile_options.encode()),
        compiler: &r.compiler,
        per_device: &r.per_device,
        parameters: &r.parameters,
        outputs: &r.outputs,
    };
    let json = serde_json::to_string_pretty(&m)
        .map_err(|e| invalid(format!("encoding the manifest: {e}")))?
        + "\n";
    tpuport_model::fs::write_atomic_bytes(&manifest_path, json.as_bytes())
        .map_err(|e| io(format!("writing {}", manifest_path.display()), e))?;
    Ok(Saved {
        executable: file.display().to_string(),
        manifest: manifest_path.display().to_string(),
        bytes: bytes.len() as u64,
        sha256: sha,
    })
}

/// SHA-256 of a file, read in a stream.
pub(crate) fn hash_file(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| io(format!("reading {}", path.display()), e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| io(format!("reading {}", path.display()), e))?;
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
