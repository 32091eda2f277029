//! Test-only helpers shared by the crates' integration tests (a dev-dependency only).
//!
//! Tests never skip: when the generated fixtures or the project venv are missing, these
//! helpers panic with the `make` target that provides them. The one exception is libtpu
//! ([`libtpu`]), which PyPI may not offer for every machine: without it the TPU checks say so
//! in one line on stderr and pass, and the rest of the suite runs.

#![allow(clippy::missing_panics_doc, reason = "panicking with the fix is the point")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Environment variable naming the fixture set (set by `make`).
pub const TPUPORT_FIXTURES: &str = "TPUPORT_FIXTURES";

/// The repository root.
#[must_use]
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The generated fixture set: `$TPUPORT_FIXTURES`, else `<repo>/.cache/fixtures`, with `sub`
/// (e.g. `"torch"`, `"jax"`) required to exist.
#[must_use]
pub fn fixtures(sub: &str) -> PathBuf {
    let root = std::env::var_os(TPUPORT_FIXTURES)
        .map_or_else(|| repo_root().join(".cache/fixtures"), PathBuf::from);
    let dir = root.join(sub);
    assert!(dir.is_dir(), "fixtures missing: run `make fixtures` (looked in {})", dir.display());
    dir
}

/// A fixture directory's `meta.json`.
#[must_use]
pub fn meta(dir: &Path) -> serde_json::Value {
    let p = dir.join("meta.json");
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The project venv's python.
#[must_use]
pub fn python() -> PathBuf {
    let p = repo_root().join(".venv/bin/python");
    assert!(p.exists(), "python venv missing at {}: run `make venv`", p.display());
    p
}

/// Runs `python -c code args…` with the venv's python; panics with its output on failure.
#[must_use]
pub fn run_python<S: AsRef<std::ffi::OsStr>>(code: &str, args: &[S]) -> Output {
    let out = Command::new(python())
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running python: {e}"));
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Position-weighted byte sum (`sum(b[i] * (i % 251 + 1))`, wrapping), the checksum the
/// interop tests' Python side computes with numpy.
#[must_use]
pub fn position_checksum(b: &[u8]) -> u64 {
    b.iter()
        .enumerate()
        .map(|(i, &x)| u64::from(x) * (i as u64 % 251 + 1))
        .fold(0, u64::wrapping_add)
}

/// Environment variable naming a libtpu for the tests (else `.cache/libtpu/<version>/`).
pub const TPUPORT_LIBTPU: &str = "TPUPORT_LIBTPU";

/// libtpu for the TPU-compiler tests: `$TPUPORT_LIBTPU`, else the newest version that
/// `make libtpu` (scripts/tools/libtpu_fetch.sh) unpacked under `<repo>/.cache/libtpu/`. When there
/// is none, writes one line saying so to stderr (past the test harness's capture, so it shows
/// in `make test`'s log) and returns `None`; the caller returns early.
#[must_use]
pub fn libtpu(test: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(TPUPORT_LIBTPU).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "${TPUPORT_LIBTPU} names {}, which is not a file", p.display());
        return Some(p);
    }
    let root = repo_root().join(".cache/libtpu");
    let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let version: Option<Vec<u64>> = e
                        .file_name()
                        .to_string_lossy()
                        .split('.')
                        .map(|n| n.parse::<u64>().ok())
                        .collect();
                    let lib = e.path().join("libtpu/libtpu.so");
                    Some((version?, lib)).filter(|(_, l)| l.is_file())
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    let last = found.pop().map(|(_, p)| p);
    if last.is_none() {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "{test}: libtpu not installed (run `make libtpu`); TPU compiler check not run"
        );
    }
    last
}

/// A generated reference set: `$env` when set (it must hold `marker`), else the newest
/// `<cache>/tpuport/<prefix>*` directory holding `marker`, where `<cache>` is
/// `$XDG_CACHE_HOME` or `~/.cache`. Panics naming `make <target>` when there is none.
#[must_use]
pub fn generated(env: &str, prefix: &str, marker: &str, target: &str) -> PathBuf {
    if let Some(d) = std::env::var_os(env) {
        let d = PathBuf::from(d);
        assert!(d.join(marker).is_file(), "{} incomplete: run `make {target}`", d.display());
        return d;
    }
    let root = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("neither XDG_CACHE_HOME nor HOME is set")
        .join("tpuport");
    std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                && p.join(marker).is_file()
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no {prefix}* under {}: run `make {target}`", root.display()))
}

pub mod docs;
pub mod graph;
#[cfg(feature = "mlp-repo")]
pub mod mlp_repo;
