//! `tpuport serve` as a process: the ONNX path (lowered at start), readiness, an inference over
//! HTTP, SIGTERM ends it with exit 0; a bad repository is a one-line error and exit 2.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::process::Stdio;

use common::http;

#[test]
fn serves_an_onnx_model_and_exits_0_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    common::onnx_repo(tmp.path(), "");
    let mut child = common::command()
        .args(["serve", tmp.path().to_str().unwrap(), "--port", "0", "--no-cache"])
        .arg("--final-metrics")
        .arg(tmp.path().join("final.prom"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, lines, mut err) = common::wait_ready(&mut child);
    assert!(
        lines.iter().any(|l| l.contains("model lin loaded") && l.contains("buckets [2, 4]")),
        "{lines:?}"
    );
    let (st, meta) = http(&addr, "GET", "/v2/models/lin", "");
    assert_eq!(st, 200, "{meta}");
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(meta["platform"], "onnx");
    assert_eq!(meta["inputs"][0]["name"], "X");
    assert_eq!(meta["inputs"][0]["shape"], serde_json::json!([-1, 16]));
    // Y = X @ W + B with the fixture's reference inputs/outputs (3 rows: padded into bucket 4).
    let fx = common::fixtures().join("onnx_small");
    let npz = |f: &str| {
        let out = tpuport_testkit::run_python(
            "import numpy as np, sys, json; d = np.load(sys.argv[1]); print(json.dumps({k: d[k].tolist() for k in d}))",
            &[fx.join(f)],
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let x = npz("external_data.inputs.npz");
    let y = npz("external_data.outputs.npz");
    let (xk, xv) = x.as_object().unwrap().iter().next().unwrap();
    assert_eq!(xk, "X");
    let body = serde_json::json!({"inputs": [{"name": "X", "shape": [3, 16], "datatype": "FP32", "data": xv}]});
    let (st, resp) = http(&addr, "POST", "/v2/models/lin/infer", &body.to_string());
    assert_eq!(st, 200, "{resp}");
    let resp: serde_json::Value = serde_json::from_str(&resp).unwrap();
    let got: Vec<f64> = resp["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let want: Vec<f64> = y
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>())
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{g} vs {w}");
    }
    let (st, metrics) = http(&addr, "GET", "/metrics", "");
    assert_eq!(st, 200);
    assert!(metrics.contains("tpuport_compiles_after_ready_total 0\n"), "{metrics}");
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    assert!(rest.contains("shutting down") && rest.contains("stopped"), "{rest}");
    // --final-metrics: the counts after the drain, the one infer among them.
    let last = std::fs::read_to_string(tmp.path().join("final.prom")).unwrap();
    assert!(
        last.contains("tpuport_requests_total{model=\"lin\",protocol=\"http\",code=\"200\"} 1\n"),
        "{last}"
    );
    assert!(last.contains("tpuport_compiles_after_ready_total 0\n"), "{last}");
}

#[test]
fn a_missing_repository_is_a_one_line_error_and_exit_2() {
    let out = common::tpuport(&["serve", "/nonexistent/repo", "--port", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("/nonexistent/repo"), "{}", out.stderr);
}
