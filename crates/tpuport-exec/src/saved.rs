//! Executables saved by `tpuport compile --save` (with `--target` a TPU slice, or `cpu`),
//! loaded with `PJRT_Executable_DeserializeAndLoad` instead of compiled.
//!
//! Each executable `FILE` has its manifest `FILE.json` (schema `tpuport.tpu-executable/1`).
//! Before the bytes are handed to the plugin, the manifest is checked against what this server
//! would compile and run:
//!
//! - **stale** (the executable is fine but was made for something else): another platform,
//!   device kind, plugin build (`compiler.build`, the plugin's version string), PJRT API
//!   version, compile options, a program partitioned over several devices, or another program
//!   (`program_sha256`; manifests without it: `model_sha256`, the module file's hash). The
//!   caller compiles the bucket instead, or fails the model under `[executables] only`.
//! - **broken** (the repository is damaged): a manifest that cannot be read, a file whose size
//!   or SHA-256 differs from its manifest (truncated, replaced), or bytes the plugin refuses
//!   although the manifest matches. The model fails to load, named; the others still serve.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};
use tpuport_pjrt::{Client, CompileOptions, LoadedExecutable};

/// The manifest schema `tpuport compile --save` writes.
pub const MANIFEST_SCHEMA: &str = "tpuport.tpu-executable/1";
/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;
/// Largest executable read.
const MAX_EXECUTABLE_BYTES: u64 = 8 << 30;

/// Why a saved executable was not used.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Made for another plugin, platform, device, option set or program: compile instead
    /// (unless only saved executables may be used).
    Stale(String),
    /// Damaged: the model fails.
    Broken(String),
}

/// The fields of the manifest that are checked (it has more).
#[derive(Debug, Deserialize)]
struct Manifest {
    schema: String,
    /// Absent in manifests written before CPU targets existed: those are TPU executables.
    #[serde(default)]
    platform: Option<String>,
    executable_sha256: String,
    executable_bytes: u64,
    model_sha256: String,
    #[serde(default)]
    program_sha256: Option<String>,
    device_kind: String,
    program_devices: u32,
    compile_options_hex: String,
    compiler: Compiler,
}

#[derive(Debug, Deserialize)]
struct Compiler {
    build: String,
    pjrt_api: String,
}

/// What the running plugin is, in the manifest's terms.
#[derive(Debug)]
pub(crate) struct Running {
    platform: String,
    build: String,
    pjrt_api: String,
    device_kind: String,
    options_hex: String,
}

impl Running {
    /// The facts of `client` and its first device.
    pub(crate) fn of(client: &Client) -> Running {
        let (major, minor) = client.plugin().api_version();
        let device_kind = client
            .devices()
            .first()
            .and_then(|d| d.description().ok())
            .map(|d| d.kind)
            .unwrap_or_default();
        Running {
            platform: client.platform_name().to_ascii_lowercase(),
            build: one_line(client.platform_version()),
            pjrt_api: format!("{major}.{minor}"),
            device_kind,
            options_hex: hex(&client.effective_options(&CompileOptions::default()).encode()),
        }
    }
}

/// Checks `file`'s manifest against `running` and `program` (the bytes this server would
/// compile), then the file against its manifest, and loads it.
pub(crate) fn load(
    client: &Client,
    running: &Running,
    file: &Path,
    program: &[u8],
) -> Result<LoadedExecutable, Refusal> {
    let manifest_path = PathBuf::from(format!("{}.json", file.display()));
    let m = read_manifest(&manifest_path)?;
    let stale = differences(&m, running, program);
    if !stale.is_empty() {
        return Err(Refusal::Stale(format!(
            "{} was made for something else: {}",
            file.display(),
            stale.join("; ")
        )));
    }
    let bytes = read_checked(file, &m)?;
    client.deserialize(&bytes).map_err(|e| {
        Refusal::Broken(format!(
            "{}: the plugin refused the executable although its manifest matches: {}",
            file.display(),
            one_line(&e.to_string())
        ))
    })
}

fn read_manifest(path: &Path) -> Result<Manifest, Refusal> {
    let broken = |why: String| Refusal::Broken(format!("{}: {why}", path.display()));
    let len = std::fs::metadata(path).map_err(|e| broken(format!("cannot be read: {e}")))?.len();
    if len > MAX_MANIFEST_BYTES {
        return Err(broken(format!("{len} bytes is too large for a manifest")));
    }
    let text = std::fs::read(path).map_err(|e| broken(format!("cannot be read: {e}")))?;
    let m: Manifest = serde_json::from_slice(&text)
        .map_err(|e| broken(format!("not a saved-executable manifest: {e}")))?;
    if m.schema != MANIFEST_SCHEMA {
        return Err(broken(format!("schema {:?}, expected {MANIFEST_SCHEMA:?}", m.schema)));
    }
    Ok(m)
}

/// Every way the manifest differs from this server, each as `field: manifest X, here Y`.
fn differences(m: &Manifest, r: &Running, program: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |what: &str, saved: &str, here: &str| {
        if saved != here {
            out.push(format!("{what}: manifest {saved:?}, running {here:?}"));
        }
    };
    cmp("platform", m.platform.as_deref().unwrap_or("tpu"), &r.platform);
    cmp("device kind", &m.device_kind, &r.device_kind);
    cmp("plugin build (compiler.build)", &m.compiler.build, &r.build);
    cmp("PJRT API (compiler.pjrt_api)", &m.compiler.pjrt_api, &r.pjrt_api);
    if m.compile_options_hex != r.options_hex {
        out.push(
            "compile options (compile_options_hex) differ from the ones this server compiles \
             with (another host CPU ISA cap, or sharding options)"
                .to_owned(),
        );
    }
    if m.program_devices != 1 {
        out.push(format!(
            "the program is partitioned over {} devices; the server runs one",
            m.program_devices
        ));
    }
    let here = hex(&Sha256::digest(program));
    let (field, saved) = match &m.program_sha256 {
        Some(p) => ("program_sha256", p.as_str()),
        None => ("model_sha256", m.model_sha256.as_str()),
    };
    if !saved.eq_ignore_ascii_case(&here) {
        out.push(format!(
            "another program ({field}: manifest {}…, this model's module {}…)",
            prefix(saved),
            prefix(&here)
        ));
    }
    out
}

fn read_checked(file: &Path, m: &Manifest) -> Result<Vec<u8>, Refusal> {
    let broken = |why: String| Refusal::Broken(format!("{}: {why}", file.display()));
    let len = std::fs::metadata(file).map_err(|e| broken(format!("cannot be read: {e}")))?.len();
    if len != m.executable_bytes {
        return Err(broken(format!(
            "{len} bytes, its manifest says {} (truncated or replaced)",
            m.executable_bytes
        )));
    }
    if len > MAX_EXECUTABLE_BYTES {
        return Err(broken(format!("{len} bytes is too large for an executable")));
    }
    let bytes = std::fs::read(file).map_err(|e| broken(format!("cannot be read: {e}")))?;
    let sha = hex(&Sha256::digest(&bytes));
    if !sha.eq_ignore_ascii_case(&m.executable_sha256) {
        return Err(broken(format!(
            "SHA-256 {}… differs from its manifest's {}… (corrupt or replaced)",
            prefix(&sha),
            prefix(&m.executable_sha256)
        )));
    }
    Ok(bytes)
}

/// The first 12 characters of a hash (whatever the manifest holds: never a byte slice).
fn prefix(h: &str) -> String {
    h.chars().take(12).collect()
}

fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    b.iter().fold(String::with_capacity(b.len() * 2), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn manifest(program: &[u8]) -> Manifest {
        Manifest {
            schema: MANIFEST_SCHEMA.into(),
            platform: Some("cpu".into()),
            executable_sha256: String::new(),
            executable_bytes: 0,
            model_sha256: "00".into(),
            program_sha256: Some(hex(&Sha256::digest(program))),
            device_kind: "cpu".into(),
            program_devices: 1,
            compile_options_hex: "0a00".into(),
            compiler: Compiler { build: "b1".into(), pjrt_api: "0.90".into() },
        }
    }

    fn running() -> Running {
        Running {
            platform: "cpu".into(),
            build: "b1".into(),
            pjrt_api: "0.90".into(),
            device_kind: "cpu".into(),
            options_hex: "0a00".into(),
        }
    }

    #[test]
    fn a_matching_manifest_has_no_difference() {
        assert!(differences(&manifest(b"p"), &running(), b"p").is_empty());
    }

    #[test]
    fn each_difference_is_named() {
        let mut m = manifest(b"p");
        m.platform = None; // an old TPU manifest
        m.compiler.pjrt_api = "0.54".into();
        let d = differences(&m, &running(), b"other program");
        let all = d.join("; ");
        assert!(all.contains("platform: manifest \"tpu\", running \"cpu\""), "{all}");
        assert!(all.contains("PJRT API (compiler.pjrt_api): manifest \"0.54\""), "{all}");
        assert!(all.contains("another program (program_sha256"), "{all}");
        assert_eq!(d.len(), 3, "{all}");
        let mut m = manifest(b"p");
        m.program_sha256 = None;
        m.model_sha256 = hex(&Sha256::digest(b"p"));
        assert!(differences(&m, &running(), b"p").is_empty());
    }
}
