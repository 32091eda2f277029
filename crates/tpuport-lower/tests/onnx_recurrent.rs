//! Recurrent and control-flow models against onnxruntime (`make recurrent-models`, written by
//! `scripts/testdata/recurrent_models.py`, found through `$TPUPORT_RECURRENT` or the newest
//! `~/.cache/tpuport/recurrent-*`): single LSTM / GRU / RNN / ReverseSequence nodes over their
//! attributes, PyTorch exports from both exporters (LSTM, GRU, bidirectional RNN, a branch on
//! a scalar input, a data-dependent while loop), Keras models through tf2onnx, and the
//! voice-activity models shipped in the silero-vad and faster-whisper wheels.
//!
//! Each run is imported at its own input shapes (two sequence lengths, or two values of the
//! branch scalar), lowered, compiled and run on the CPU PJRT plugin, and every output must
//! match onnxruntime's to `max |got − want| ≤ 5e-5 · max(1, max |want|)` (measured: at most 6.7e-6, on silero_vad_op18_ifless). The lowering must
//! contain the StableHLO control flow the case names (`stablehlo.while` for every recurrent
//! op, `stablehlo.if` for a branch on data), so that a fallback to unrolling or inlining
//! cannot pass unnoticed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr, reason = "tests")]

mod onnx_common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tpuport_formats::ImportOptions;
use tpuport_formats::npy::read_npz;
use tpuport_lower::onnx::{LowerOptions, lower_with_values};
use tpuport_model::{HostTensor, Shape};

/// Largest error allowed, relative to `max(1, max |want|)`.
const TOL: f64 = 5e-5;

fn root() -> PathBuf {
    tpuport_testkit::generated(
        "TPUPORT_RECURRENT",
        "recurrent-",
        "manifest.json",
        "recurrent-models",
    )
}

fn manifest(root: &Path) -> Vec<Value> {
    let s = std::fs::read_to_string(root.join("manifest.json")).unwrap();
    let v: Value = serde_json::from_str(&s).unwrap();
    v["cases"].as_array().unwrap().clone()
}

/// Lowers and runs one run of a case; returns the worst error, or what went wrong.
fn check_run(root: &Path, case: &Value, run: &Value) -> Result<f64, String> {
    let inputs =
        read_npz(&root.join(run["inputs"].as_str().unwrap())).map_err(|e| e.to_string())?;
    let wants =
        read_npz(&root.join(run["outputs"].as_str().unwrap())).map_err(|e| e.to_string())?;
    let shapes: BTreeMap<String, Shape> =
        inputs.iter().map(|(n, t)| (n.clone(), Shape::fixed(&t.shape))).collect();
    let opts = ImportOptions { input_shapes: shapes, ..ImportOptions::default() };
    let path = root.join(case["model"].as_str().unwrap());
    let m = tpuport_formats::open(&path, &opts).map_err(|e| format!("import: {e}"))?;
    let bind: Vec<(String, HostTensor)> = run["bind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let n = b.as_str().unwrap();
            let t = inputs.iter().find(|(k, _)| k == n).expect("bound input present");
            (n.to_owned(), t.1.clone())
        })
        .collect();
    let low = lower_with_values(&m, &LowerOptions::default(), &bind)
        .map_err(|e| format!("lower: {e}"))?;
    for op in case["expect"].as_array().unwrap() {
        let op = format!("\"stablehlo.{}\"", op.as_str().unwrap());
        if !low.mlir.contains(&op) {
            return Err(format!("the lowering has no {op}"));
        }
    }
    let by_name: HashMap<String, HostTensor> = inputs.into_iter().collect();
    let got = onnx_common::run(&m, &low, &by_name)?;
    if got.len() != wants.len() {
        return Err(format!("{} results for {} reference outputs", got.len(), wants.len()));
    }
    let mut worst = 0f64;
    for (k, (g, (_, w))) in got.iter().zip(&wants).enumerate() {
        if g.shape != w.shape {
            return Err(format!("output {k}: shape {:?}, onnxruntime {:?}", g.shape, w.shape));
        }
        let err = onnx_common::rel_err(g, w);
        if err.is_nan() || err > TOL {
            return Err(format!("output {k}: error {err:.2e} > {TOL:.0e}"));
        }
        worst = worst.max(err);
    }
    Ok(worst)
}

/// Checks every run of the cases whose model path starts with `prefix`.
fn check(prefix: &str) {
    let root = root();
    let mut failures = Vec::new();
    let mut n = 0;
    for case in manifest(&root) {
        let model = case["model"].as_str().unwrap();
        if !model.starts_with(prefix) {
            continue;
        }
        for (k, run) in case["runs"].as_array().unwrap().iter().enumerate() {
            n += 1;
            match check_run(&root, &case, run) {
                Ok(err) => eprintln!("{model} run {k}: max error {err:.2e}"),
                Err(e) => failures.push(format!("{model} run {k}: {e}")),
            }
        }
    }
    assert!(n > 0, "no {prefix} cases in {}", root.display());
    assert!(failures.is_empty(), "{} of {n} runs failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn single_nodes_match_onnxruntime() {
    check("onnx/");
}

#[test]
fn pytorch_exports_match_onnxruntime() {
    check("torch/");
}

#[test]
fn keras_through_tf2onnx_matches_onnxruntime() {
    check("keras/");
}

#[test]
fn shipped_vad_models_match_onnxruntime() {
    check("vad/");
}

/// `--dtype bf16` on the PyTorch LSTM: the state is carried in bf16 between steps (matmuls
/// accumulate in f32); the outputs stay within 2e-2 of onnxruntime's f32 ones.
#[test]
fn lstm_in_bf16_stays_close_to_f32() {
    use tpuport_lower::onnx::ComputeType;
    let root = root();
    let case = manifest(&root)
        .into_iter()
        .find(|c| c["model"] == "torch/lstm/legacy.onnx")
        .expect("torch/lstm/legacy.onnx in the manifest");
    let run = &case["runs"][1];
    let inputs: HashMap<String, HostTensor> =
        read_npz(&root.join(run["inputs"].as_str().unwrap())).unwrap().into_iter().collect();
    let wants = read_npz(&root.join(run["outputs"].as_str().unwrap())).unwrap();
    let shapes = inputs.iter().map(|(n, t)| (n.clone(), Shape::fixed(&t.shape))).collect();
    let opts = ImportOptions { input_shapes: shapes, ..ImportOptions::default() };
    let m = tpuport_formats::open(&root.join("torch/lstm/legacy.onnx"), &opts).unwrap();
    let lo = LowerOptions { compute: ComputeType::Bf16, ..LowerOptions::default() };
    let low = lower_with_values(&m, &lo, &[]).unwrap();
    assert!(low.mlir.contains("tensor<2x2x16xbf16>"), "the carried state is bf16");
    let got = onnx_common::run(&m, &low, &inputs).unwrap();
    for (k, (g, (_, w))) in got.iter().zip(&wants).enumerate() {
        let err = onnx_common::rel_err(g, w);
        eprintln!("torch/lstm/legacy.onnx bf16 output {k}: error {err:.2e}");
        assert!(err > 0.0 && err <= 2e-2, "output {k}: bf16 error {err}");
    }
}
