//! Test-only helpers shared by the crates' integration tests (a dev-dependency only).
//!
//! Tests never skip: when the generated fixtures or the project venv are missing, these
//! helpers panic with the `make` target that provides them.

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

/// Environment variable that makes generated-docs tests rewrite their folder instead of comparing.
pub const UPDATE_DOCS_ENV: &str = "TPUPORT_UPDATE_DOCS";

/// Compares generated doc pages with the Markdown files in `<repo>/<dir>` (same names, same
/// contents, no extra `.md` files), or rewrites the folder when [`UPDATE_DOCS_ENV`] is set.
/// `regenerate` is the command a failure message tells the user to run.
pub fn check_generated_docs(dir: &str, files: &[(String, String)], regenerate: &str) {
    let dir = repo_root().join(dir);
    let is_md = |p: &Path| p.extension().is_some_and(|e| e == "md");
    if std::env::var_os(UPDATE_DOCS_ENV).is_some() {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if is_md(&p) && !files.iter().any(|(n, _)| *n == name) {
                std::fs::remove_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            }
        }
        for (name, text) in files {
            let tmp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
            std::fs::rename(&tmp, dir.join(name))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        return;
    }
    let stale: Vec<&str> = files
        .iter()
        .filter(|(name, text)| {
            std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(name, _)| name.as_str())
        .collect();
    let on_disk =
        std::fs::read_dir(&dir).map_or(0, |d| d.flatten().filter(|e| is_md(&e.path())).count());
    assert!(
        stale.is_empty() && on_disk == files.len(),
        "{} is stale ({stale:?}, {on_disk} files on disk for {} generated): run `{regenerate}`",
        dir.display(),
        files.len()
    );
}
