//! Shared helpers for the binary's integration tests.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses a subset; pub within a test crate"
)]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command};
use std::time::Duration;

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

/// Runs `tpuport --format json audit <args>` and parses the report; panics with stderr when it
/// exits non-zero.
pub fn audit_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--format", "json", "audit"];
    all.extend_from_slice(args);
    let o = tpuport(&all);
    assert_eq!(o.code, 0, "audit {args:?}: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("bad JSON: {e}\n{}", o.stdout))
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

/// A one-model `tpuport serve` repository at `root`: `root/lin` around the ONNX fixture
/// `onnx_small/external_data` (Y = X @ W + B, X f32[N, 16]), buckets 2 and 4, with `batching`
/// (TOML lines) added to its `[batching]` table. Returns `root`.
pub fn onnx_repo(root: &Path, batching: &str) -> PathBuf {
    let fx = fixtures().join("onnx_small");
    let dir = root.join("lin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fx.join("external_data.onnx"), dir.join("external_data.onnx")).unwrap();
    std::fs::copy(fx.join("external_data.bin"), dir.join("external_data.bin")).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[model]\nkind = \"onnx\"\npath = \"external_data.onnx\"\n[batching]\nbuckets = [2, 4]\n{batching}"
        ),
    )
    .unwrap();
    root.to_owned()
}

/// Reads a starting `tpuport serve`'s stderr (piped) up to its `ready:` line. Returns the
/// address it listens on, the lines read, and the reader for the rest; panics with the lines
/// when the server ends first.
pub fn wait_ready(child: &mut Child) -> (String, Vec<String>, BufReader<ChildStderr>) {
    let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut addr = String::new();
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("server ended: {lines:?}");
        }
        if let Some(a) = line.strip_prefix("listening on ") {
            addr = a.split(' ').next().unwrap().to_owned();
        }
        lines.push(line.clone());
        if line.starts_with("ready:") {
            return (addr, lines, err);
        }
    }
}

/// One HTTP/1.1 request with `Connection: close`: status and body.
pub fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_owned();
    (status, body)
}

/// The audit's per-device HBM estimate for `chip` from an audit report (`--format json`): the
/// figure `audit --compiler libtpu` puts next to libtpu's (`compiler.estimate_bytes`), read
/// from the memory section so that a `--compiler none` run gives it without compiling:
/// `memory.per_device_padded[chip].total` for a partitioned module, else
/// `memory.padded[chip].inference`.
pub fn audit_estimate(report: &serde_json::Value, chip: &str) -> u64 {
    let of = |key: &str| {
        report["memory"][key]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r[0] == chip).map(|r| r[1].clone()))
    };
    if let Some(d) = of("per_device_padded") {
        return d["total"].as_u64().unwrap();
    }
    let f = of("padded").unwrap_or_else(|| panic!("no memory.padded for {chip}"));
    f["inference"].as_u64().unwrap()
}

/// `(a - b) / b`, for the 10 % checks against libtpu.
#[allow(clippy::cast_precision_loss, reason = "a ratio")]
pub fn rel_diff(a: u64, b: u64) -> f64 {
    (a as f64 - b as f64) / b as f64
}
