//! Shared helpers for the binary's integration tests.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses a subset; pub within a test crate"
)]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The generated fixture set: `$TPUPORT_FIXTURES`, else `<repo>/.cache/fixtures`. Panics with
/// the command to run when it is missing: tests never skip silently.
pub fn fixtures() -> PathBuf {
    let torch = tpuport_testkit::fixtures("torch");
    let root = torch.parent().map(Path::to_path_buf).unwrap_or(torch);
    let _ = tpuport_testkit::fixtures("jax");
    root
}

/// Reads a fixture's `meta.json`.
pub fn meta(dir: &Path) -> serde_json::Value {
    tpuport_testkit::meta(dir)
}

/// Output of one tpuport run.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The binary under test: `$TPUPORT_BIN` when set (`make test-wheel` points it at the binary
/// a wheel installed), else the one cargo built.
pub fn binary() -> PathBuf {
    std::env::var_os("TPUPORT_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tpuport")), PathBuf::from)
}

/// The binary under test with colour off.
pub fn command() -> Command {
    let mut c = Command::new(binary());
    c.env("NO_COLOR", "1");
    c
}

/// The built binary for runtime tests: its own executable cache directory, and plugin
/// discovery not overridden by the caller's environment.
pub fn runtime_command(cache: &Path) -> Command {
    let mut c = command();
    c.env("TPUPORT_CACHE_DIR", cache).env_remove("TPUPORT_PJRT_PLUGIN");
    c
}

/// Runs a command and collects its exit code and output.
pub fn output(cmd: &mut Command) -> Out {
    let o = cmd.output().expect("running tpuport");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs the built binary with `args`.
pub fn tpuport(args: &[&str]) -> Out {
    output(command().args(args))
}

/// Runs `tpuport --format json inspect <path> <extra>` and parses the report; panics with
/// stderr when it fails.
pub fn inspect_json(path: &Path, extra: &[&str]) -> serde_json::Value {
    let p = path.to_str().unwrap();
    let mut args = vec!["--format", "json", "inspect", p];
    args.extend_from_slice(extra);
    let o = tpuport(&args);
    assert_eq!(o.code, 0, "inspect {p} failed: {}", o.stderr);
    serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("bad JSON from {p}: {e}\n{}", o.stdout))
}

/// The venv's python, for tests that build inputs with real Python packages.
pub fn python() -> PathBuf {
    tpuport_testkit::python()
}

/// Runs a Python snippet with the venv's python, panicking with its stderr on failure.
pub fn run_python(code: &str) {
    let _ = tpuport_testkit::run_python::<&str>(code, &[]);
}

/// Runs tpuport with `args` under the venv's python and returns its exit code and peak
/// resident memory in MiB (`getrusage(RUSAGE_CHILDREN).ru_maxrss`).
pub fn peak_rss_mib(args: &[&str]) -> (i32, u64) {
    let code = r"
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps([r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024]))
";
    let o = Command::new(python()).arg("-c").arg(code).arg(binary()).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: (i32, u64) = serde_json::from_slice(&o.stdout).unwrap();
    v
}
