//! `tpuport audit` through the binary: JSON schema, exit codes (0 ran, 1 findings at
//! `--fail-on`, 2 could not run), one-line errors, and agreement with XLA's own numbers on a
//! JAX fixture.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};

use common::{audit_json, tpuport};

fn small() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit_small.mlir")
}

/// Exit 2 and one `error:` line containing every needle.
fn rejected(args: &[&str], needles: &[&str]) {
    let mut all = vec!["audit"];
    all.extend_from_slice(args);
    let o = tpuport(&all);
    assert_eq!(o.code, 2, "{args:?}: exit code; stderr {}", o.stderr);
    assert!(o.stdout.is_empty(), "{args:?}: stdout {}", o.stdout);
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines[0].starts_with("error:"), "{args:?}: {}", o.stderr);
    for n in needles {
        assert!(o.stderr.contains(n), "{args:?}: `{n}` missing from {}", o.stderr);
    }
}

#[test]
fn json_report_has_schema_and_sections() {
    let p = small();
    let r = audit_json(&[p.to_str().unwrap()]);
    assert_eq!(r["schema"], "tpuport.audit/1");
    for k in ["summary", "findings", "cost", "layout", "memory", "fits", "roofline"] {
        assert!(r.get(k).is_some(), "missing section {k}");
    }
    // conv: 2·8·8·4·(3·8−2)² valid taps; dot 2·8·512·10; 4 tanh iterations.
    let t = &r["cost"]["totals"];
    assert_eq!(t["matmul_conv_flops"], 2 * 8 * 8 * 4 * 22 * 22 + 2 * 8 * 512 * 10);
    assert_eq!(t["transcendentals"], 4 * 8 * 512);
    assert_eq!(r["batch"], 8);
    assert_eq!(r["roofline"]["chips"].as_array().unwrap().len(), 5);
}

#[test]
fn slice_restricts_to_one_generation_and_gives_a_verdict() {
    let p = small();
    let r = audit_json(&[
        p.to_str().unwrap(),
        "--slice",
        "v6e-8",
        "--workload",
        "train",
        "--optimizer",
        "adafactor",
    ]);
    assert_eq!(r["slice"], "v6e-8");
    assert_eq!(r["summary"]["slice_fit"], "replicated");
    assert_eq!(r["optimizer"], "adafactor");
    assert_eq!(r["workload"], "train");
    let chips: Vec<&str> = r["roofline"]["chips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chip"].as_str().unwrap())
        .collect();
    assert_eq!(chips, vec!["v6e"]);
    let text = tpuport(&["audit", p.to_str().unwrap(), "--slice", "v6e-8"]);
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("Summary\n  v6e-8: fits"), "{}", text.stdout);
}

#[test]
fn cannot_run_exits_2_with_one_line() {
    let p = small();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.onnx");
    std::fs::write(&junk, b"\x08\x07garbage-not-a-protobuf\xff\xff\xff").unwrap();
    rejected(&[junk.to_str().unwrap()], &["junk.onnx"]);
    rejected(&[dir.path().join("missing.onnx").to_str().unwrap()], &["missing.onnx"]);
    rejected(&[p.to_str().unwrap(), "--slice", "v9z-8"], &["v9z-8"]);
    rejected(&[p.to_str().unwrap(), "--batch", "0"], &["--batch"]);
    let st = dir.path().join("w.safetensors");
    std::fs::write(&st, b"\x02\x00\x00\x00\x00\x00\x00\x00{}").unwrap();
    rejected(&[st.to_str().unwrap()], &["not a computation graph"]);
    let big = dir.path().join("big.mlir");
    std::fs::write(
        &big,
        "module @m {\n  func.func public @main(%arg0: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {\n    %0 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [1] x [0] : (tensor<4294967296x4294967296xf32>, tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32>\n    return %0 : tensor<4294967296x4294967296xf32>\n  }\n}\n",
    )
    .unwrap();
    rejected(&[big.to_str().unwrap()], &["big.mlir", "too large to audit"]);
    let bc = common::fixtures().join("jax/mlp_b1/export.mlirbc");
    rejected(&[bc.to_str().unwrap()], &["export.mlirbc", "bytecode"]);
}

#[test]
fn jax_fixture_flops_match_xla_through_the_binary() {
    let dir = common::fixtures().join("jax/cnn_b8");
    let meta = common::meta(&dir);
    let r = audit_json(&[dir.join("jit.mlir").to_str().unwrap()]);
    let ours = r["cost"]["totals"]["flops"].as_f64().unwrap();
    let xla = meta["xla"]["flops"].as_f64().unwrap();
    assert!((ours - xla).abs() / xla < 0.02, "tpuport {ours} vs XLA {xla}");
    assert_eq!(r["batch"], 8);
}

/// XLA itself compiles the hand-written module (conv with SAME padding, a call, a counted while
/// loop): FLOPs agree; XLA's cost analysis counts the while body once where tpuport multiplies
/// it by the constant trip count (4), so transcendentals (the body's tanh) differ by exactly 4x.
#[test]
fn hand_written_module_matches_xla_cost_analysis() {
    let p = small();
    let code = r"
import json, sys, jax
c = jax.devices('cpu')[0].client
txt = open(sys.argv[1]).read()
exe = c.compile_and_load(txt, c.devices()[:1]) if hasattr(c, 'compile_and_load') else c.compile(txt)
ca = exe.cost_analysis()
ca = ca[0] if isinstance(ca, list) else ca
print(json.dumps({'flops': ca['flops'], 'transcendentals': ca['transcendentals']}))
";
    let out = tpuport_testkit::run_python(code, &[p.to_str().unwrap()]);
    let xla: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = audit_json(&[p.to_str().unwrap()]);
    let ours = r["cost"]["totals"]["flops"].as_f64().unwrap();
    let want = xla["flops"].as_f64().unwrap();
    assert!((ours - want).abs() / want < 0.001, "tpuport {ours} vs XLA {want}");
    let t = r["cost"]["totals"]["transcendentals"].as_f64().unwrap();
    assert_eq!(t, 4.0 * xla["transcendentals"].as_f64().unwrap());
}

/// BERT bound for the batch only: the sequence dim stays symbolic, a recompilation risk the
/// findings pass reports as a warning (AUD102). `--fail-on warning` exits 1, `--fail-on error`
/// and the default exit 0; the report is written either way.
#[test]
fn fail_on_threshold_sets_exit_code_1() {
    let bert = common::fixtures().join("torch/bert_base/dynamo.onnx");
    let b = bert.to_str().unwrap();
    let run = |fail_on: &[&str]| {
        let mut args = vec!["--format", "json", "audit", b, "--batch", "1"];
        args.extend_from_slice(fail_on);
        tpuport(&args)
    };
    let o = run(&["--fail-on", "warning"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let r: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let codes: Vec<&str> =
        r["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"AUD102"), "{codes:?}");
    assert!(o.stderr.contains("unbound symbolic dims (sequence)"), "{}", o.stderr);
    assert_eq!(run(&["--fail-on", "error"]).code, 0);
    assert_eq!(run(&[]).code, 0);
    // Fully bound: no warning left, so `--fail-on warning` passes.
    assert_eq!(run(&["--dim", "sequence=128", "--fail-on", "warning"]).code, 0);
}

/// ONNX ops that `tpuport lower` has no rule for are AUD305 findings (exit 0 without
/// `--fail-on`); a model whose ops all lower has none.
#[test]
fn ops_without_a_lowering_are_findings() {
    let data =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tpuport-analysis/tests/data/findings");
    let codes = |file: &str| -> Vec<(String, String)> {
        let r = audit_json(&[data.join(file).to_str().unwrap()]);
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["code"].as_str().unwrap().to_owned(), f["fix"].to_string()))
            .collect()
    };
    let nms = codes("nms.onnx");
    let f = nms.iter().find(|(c, _)| c == "AUD305").expect("AUD305 for NonMaxSuppression");
    assert!(f.1.contains("tpuport lower"), "{}", f.1);
    assert!(!codes("clean.onnx").iter().any(|(c, _)| c == "AUD305"));
}
