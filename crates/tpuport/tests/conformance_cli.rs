//! `tpuport conformance`: the whole ONNX backend suite against the committed pass-rate floor
//! (`scripts/testdata/conformance_floor.json`), the JSON summary, and bad input.
//!
//! The cases come from `scripts/testdata/onnx_conformance.py` (`make conformance`), found through
//! `$TPUPORT_CONFORMANCE_DIR`, else the newest complete `~/.cache/tpuport/onnx-conformance-*`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::PathBuf;

fn cases_dir() -> PathBuf {
    tpuport_testkit::generated(
        "TPUPORT_CONFORMANCE_DIR",
        "onnx-conformance-",
        "index.json",
        "conformance",
    )
}

fn references() -> Vec<String> {
    let torch = common::fixtures().join("torch");
    let mut v = Vec::new();
    for m in ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2"] {
        for e in ["legacy", "dynamo"] {
            v.push("--reference".to_owned());
            v.push(torch.join(m).join(format!("{e}.onnx")).display().to_string());
        }
    }
    v
}

/// The whole suite in one process; fails when a pass rate drops below the committed floor.
#[test]
fn suite_meets_committed_floor() {
    let dir = cases_dir();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("summary.json");
    let floor = tpuport_testkit::repo_root().join("scripts/testdata/conformance_floor.json");
    let mut cmd = common::runtime_command(tmp.path());
    cmd.args(["conformance", dir.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .args(["--floor", floor.to_str().unwrap()])
        .args(references());
    let o = common::output(&mut cmd);
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(s["schema"], "tpuport.conformance/1");
    let total = s["total"]["total"].as_u64().unwrap();
    assert!(total >= 2000, "expected the 1884 node + 140 shipped cases, got {total}");
    let cases = s["cases"].as_array().unwrap();
    assert_eq!(cases.len() as u64, total);
    // Non-tensor inputs are classified, not crashed on.
    let seq = cases.iter().find(|c| c["name"] == "test_sequence_insert_at_back").unwrap();
    assert_eq!(seq["outcome"], "unsupported", "{seq}");
    assert!(o.stdout.contains("node, reference ops"), "{}", o.stdout);
}

#[test]
fn bad_directory_is_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = common::tpuport(&["conformance", tmp.path().to_str().unwrap()]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("no test cases"), "{}", o.stderr);
    assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    let o = common::tpuport(&["conformance", "/nonexistent/cases"]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("/nonexistent/cases: not a directory"), "{}", o.stderr);
    let bad = tmp.path().join("floor.json");
    std::fs::write(&bad, "[1, 2]").unwrap();
    let o = common::tpuport(&[
        "conformance",
        tmp.path().to_str().unwrap(),
        "--floor",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("floor.json: expected a JSON object"), "{}", o.stderr);
}
