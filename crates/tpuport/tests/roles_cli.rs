//! Argument roles through the binary (issue 21) on a keras-hub GPT-2 causal LM exported with
//! its weights as arguments (`make stablehlo-exports`): the batch, the parameters and the tied
//! table in `audit` and `inspect`, `--data-args` by position and by name, a batch read from a
//! weight refused, and `--batch` on a static module scaling instead of re-lowering.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::PathBuf;

use common::tpuport;

fn gpt2() -> (PathBuf, serde_json::Value) {
    let root = tpuport_testkit::generated(
        "TPUPORT_STABLEHLO_EXPORTS",
        "stablehlo-exports-",
        ".done",
        "stablehlo-exports",
    );
    let dir = root.join("kerashub_gpt2");
    let meta =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    (dir, meta)
}

fn json(args: &[&str]) -> serde_json::Value {
    let o = tpuport(args);
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("bad JSON: {e}\n{}", o.stdout))
}

fn data_indices(r: &serde_json::Value) -> Vec<u64> {
    r["roles"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["role"] == "data")
        .map(|a| a["index"].as_u64().unwrap())
        .collect()
}

#[test]
fn audit_reads_batch_params_and_tied_table() {
    let (dir, meta) = gpt2();
    let m = dir.join("jit.mlir");
    let r = json(&["--format", "json", "audit", m.to_str().unwrap()]);
    assert_eq!(r["batch"], meta["batch"]);
    assert_eq!(r["module_batch"], meta["batch"]);
    assert_eq!(r["roles"]["sequence"], meta["sequence"]);
    assert_eq!(r["model"]["params"], meta["params"]);
    assert_eq!(r["model"]["tied"].as_array().unwrap().len(), 1);
    let want: Vec<u64> =
        meta["data_args"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(data_indices(&r), want);
    let sps = r["summary"]["samples_per_s"].as_f64().unwrap();
    let per_sample = r["cost"]["totals"]["flops"].as_f64().unwrap() / r["batch"].as_f64().unwrap();
    let head = r["summary"]["chip"].as_str().unwrap();
    let chip =
        r["roofline"]["chips"].as_array().unwrap().iter().find(|c| c["chip"] == head).unwrap();
    assert!(sps * per_sample <= chip["peak_flops"].as_f64().unwrap());

    let text = tpuport(&["audit", m.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("batch 2, sequence 32, from the leading dim of data argument"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("tied: `%arg"), "{}", text.stdout);
}

#[test]
fn data_args_override_by_index_and_name() {
    let (dir, meta) = gpt2();
    let m = dir.join("export.mlir");
    let tokens = meta["data_args"][0].as_u64().unwrap();
    let idx = tokens.to_string();
    let r = json(&["--format", "json", "audit", m.to_str().unwrap(), "--data-args", &idx]);
    assert_eq!(data_indices(&r), vec![tokens]);
    assert_eq!(r["roles"]["args"][tokens as usize]["rule"], "user");
    let r = json(&["--format", "json", "inspect", m.to_str().unwrap(), "--data-args", "data[0]"]);
    assert_eq!(data_indices(&r), vec![tokens]);

    // A name that is no argument: exit 2, one line naming the file and the name.
    let o = tpuport(&["audit", m.to_str().unwrap(), "--data-args", "nosuch"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.starts_with("error:")
            && o.stderr.contains("export.mlir")
            && o.stderr.contains("`nosuch`"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_batch_read_from_a_weight_gives_no_samples_per_second() {
    let (dir, _) = gpt2();
    let m = dir.join("jit.mlir");
    let r = json(&["--format", "json", "audit", m.to_str().unwrap()]);
    let table = r["roles"]["args"].as_array().unwrap().iter().find(|a| a["tied"] == true).unwrap();
    let vocab = table["shape"][0].as_u64().unwrap();
    let idx = table["index"].as_u64().unwrap().to_string();
    // The user names the embedding table as the data: the batch becomes the vocabulary.
    let r = json(&["--format", "json", "audit", m.to_str().unwrap(), "--data-args", &idx]);
    assert_eq!(r["batch"].as_u64(), Some(vocab));
    assert!(r["summary"]["samples_per_s"].is_null(), "{}", r["summary"]);
    let why = r["summary"]["samples_per_s_refused"].as_str().unwrap();
    assert!(why.contains("looks read from a weight"), "{why}");
}

#[test]
fn batch_on_a_static_module_scales_and_says_so() {
    let (dir, meta) = gpt2();
    let m = dir.join("jit.mlir");
    let base = json(&["--format", "json", "audit", m.to_str().unwrap()]);
    let r = json(&["--format", "json", "audit", m.to_str().unwrap(), "--batch", "8"]);
    assert_eq!(r["batch"], 8);
    assert_eq!(r["module_batch"], meta["batch"]);
    let notes = r["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("static at batch 2")), "{notes:?}");
    // Weights are read once per step: 4x the batch is more samples/s, but at most 4x.
    let (s2, s8) = (
        base["summary"]["samples_per_s"].as_f64().unwrap(),
        r["summary"]["samples_per_s"].as_f64().unwrap(),
    );
    assert!(s8 > s2 && s8 <= 4.0 * s2 * 1.000_001, "{s2} -> {s8}");
}

#[test]
fn inspect_counts_weight_arguments() {
    let (dir, meta) = gpt2();
    let m = dir.join("export.mlir");
    let r = json(&["--format", "json", "inspect", m.to_str().unwrap()]);
    assert_eq!(r["params"]["elements"], meta["params"]);
    let codes: Vec<&str> =
        r["explanations"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert!(
        codes.contains(&"weights-as-arguments") && codes.contains(&"tied-argument"),
        "{codes:?}"
    );
    let o = tpuport(&["inspect", m.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("argument roles"), "{}", o.stdout);
    assert!(o.stdout.contains("data %arg43 `data[0]`"), "{}", o.stdout);
    assert!(o.stdout.contains("and 36 weight arguments"), "{}", o.stdout);
}

#[test]
fn zero_flops_per_sample_gives_no_samples_per_second() {
    // A module that only moves data: nothing to divide by.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("transpose.mlir");
    std::fs::write(
        &m,
        "module @m {\n  func.func public @main(%arg0: tensor<4x8xf32>) -> tensor<8x4xf32> {\n    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>\n    return %0 : tensor<8x4xf32>\n  }\n}\n",
    )
    .unwrap();
    let r = json(&["--format", "json", "audit", m.to_str().unwrap()]);
    assert_eq!(r["cost"]["totals"]["flops"], 0);
    assert!(r["summary"]["samples_per_s"].is_null(), "{}", r["summary"]);
    assert!(r["summary"]["samples_per_s_refused"].as_str().unwrap().contains("0 FLOPs"));
}
