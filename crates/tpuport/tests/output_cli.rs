//! Where output goes and how it ends: a closed pipe exits 0 quietly, any other failed write to
//! stdout exits 2 with one line, and colour on stdout follows `--color` (never for a pipe under
//! `auto`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::process::Stdio;

use common::{command, output, tpuport};

/// A script with one finding; its SARIF log carries every rule's documentation (about 100 KiB),
/// more than a pipe buffer (64 KiB on Linux) holds, so writing it to a pipe nobody reads fails.
fn script() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), "import torch\nx = torch.zeros(3).cuda()\n")
        .unwrap();
    dir
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let dir = script();
    let full = command()
        .args(["--format", "sarif", "check", "train.py"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        full.status.code(),
        Some(1),
        "one finding: {}",
        String::from_utf8_lossy(&full.stderr)
    );
    assert!(
        full.stdout.len() > 64 * 1024,
        "{} bytes: no more than a pipe buffer",
        full.stdout.len()
    );

    let mut child = command()
        .args(["--format", "sarif", "check", "train.py"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
#[cfg(target_os = "linux")]
fn a_failed_write_is_one_error_line_and_exit_2() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = output(command().args(["catalog", "v5e"]).stdout(full));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.starts_with("error: writing to stdout: "), "{}", o.stderr);
}

#[test]
fn colour_on_stdout_follows_the_flag() {
    let always =
        output(command().args(["--color", "always", "catalog", "v5e"]).env_remove("NO_COLOR"));
    assert_eq!(always.code, 0, "{}", always.stderr);
    assert!(always.stdout.contains("\u{1b}[1mTPU v5e (v5e)\u{1b}[0m"), "{}", always.stdout);
    let never =
        output(command().args(["--color", "never", "catalog", "v5e"]).env_remove("NO_COLOR"));
    assert!(!never.stdout.contains('\u{1b}'));
    // `auto` with stdout a pipe (and `NO_COLOR` set by `tpuport()`): plain.
    let auto = tpuport(&["catalog", "v5e"]);
    assert_eq!(auto.stdout, never.stdout);
    let piped = output(command().args(["catalog", "v5e"]).env_remove("NO_COLOR"));
    assert_eq!(piped.stdout, never.stdout);
}
