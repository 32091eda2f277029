//! `tpuport lower` end to end: buckets, manifest, weights file, the lowered module compiled and
//! run with the weights from `weights.safetensors`; bad input exits 2 with one clear line.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;

use common::{run_python, tpuport};
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

/// y = relu(x @ W + b) (W large enough to stay an argument; b small, embedded) with a symbolic batch, and a second model with an unknown op.
fn make_models(dir: &Path) {
    let code = format!(
        r#"
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
w = numpy_helper.from_array(np.arange(128, dtype=np.float32).reshape(16, 8) / 100 - 0.5, "W")
b = numpy_helper.from_array(np.linspace(-0.4, 0.3, 8).astype(np.float32), "B")
g = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
     helper.make_node("Add", ["m", "B"], ["a"], name="add"),
     helper.make_node("Relu", ["a"], ["y"], name="relu")],
    "mlp", [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 16])],
    [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 8])], [w, b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), r"{d}/mlp.onnx")
g2 = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], name="weird")], "bad",
    [helper.make_tensor_value_info("x", T.FLOAT, [2])], [helper.make_tensor_value_info("y", T.FLOAT, [2])])
onnx.save(helper.make_model(g2, opset_imports=[helper.make_opsetid("", 17)]), r"{d}/bad.onnx")
"#,
        d = dir.display()
    );
    run_python(&code);
}

/// `got` is `relu(x @ W + b)` of the `mlp.onnx` that `make_models` writes, for `rows` rows.
fn expect_mlp(x: &[f32], got: &[f64], rows: usize) {
    assert_eq!(got.len(), rows * 8);
    for r in 0..rows {
        for c in 0..8 {
            let s: f64 = (0..16)
                .map(|k| f64::from(x[r * 16 + k]) * ((k * 8 + c) as f64 / 100.0 - 0.5))
                .sum();
            let bias = -0.4 + 0.1 * c as f64;
            let want = (s + bias).max(0.0);
            assert!((got[r * 8 + c] - want).abs() < 1e-4, "[{r},{c}] {} vs {want}", got[r * 8 + c]);
        }
    }
}

#[test]
fn lower_writes_buckets_manifest_and_weights_that_run() {
    let t = tempfile::tempdir().unwrap();
    make_models(t.path());
    let out = t.path().join("out");
    let model = t.path().join("mlp.onnx");
    let args = [
        "--format",
        "json",
        "lower",
        model.to_str().unwrap(),
        "--batch",
        "1,3",
        "-o",
        out.to_str().unwrap(),
    ];
    let o = tpuport(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let m: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(on_disk["buckets"], m["buckets"]);
    assert_eq!(m["schema"], "tpuport.lower/1");
    assert_eq!(m["ops"]["MatMul"], 1);
    let buckets = m["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 2);
    assert_eq!(buckets[1]["module"], "model_b3.mlir");
    let args = buckets[1]["args"].as_array().unwrap();
    assert_eq!(args[0]["source"], serde_json::json!({"kind": "input", "name": "x"}));
    assert_eq!(args[0]["shape"], serde_json::json!([3, 16]));
    assert_eq!(args[1]["source"], serde_json::json!({"kind": "weight", "name": "W"}));
    assert_eq!(buckets[1]["results"][0]["shape"], serde_json::json!([3, 8]));

    // Compile the batch-3 module and feed it the weights from weights.safetensors.
    let weights = tpuport_formats::safetensors::import_file(
        &out.join("weights.safetensors"),
        &Default::default(),
    )
    .unwrap();
    let plugin = tpuport_pjrt::find_cpu().expect("CPU PJRT plugin: run `make venv`");
    let client =
        Client::new(tpuport_pjrt::load(&plugin).unwrap(), &ClientOptions::cpu_devices(1)).unwrap();
    let dev = &client.devices()[0];
    let text = std::fs::read(out.join("model_b3.mlir")).unwrap();
    let exe = client.compile(&Program::mlir(text), &CompileOptions::default()).unwrap();
    let x: Vec<f32> = (0..48).map(|v| v as f32 * 0.05 - 1.0).collect();
    let mut bufs = vec![
        client.buffer_from_host(&HostTensor::from_f32(vec![3, 16], &x).unwrap(), dev).unwrap(),
    ];
    for a in &args[1..] {
        let name = a["source"]["name"].as_str().unwrap();
        let w = weights.weights.by_name(name).unwrap();
        let h = HostTensor::new(w.dtype, w.shape.clone(), w.bytes().unwrap().into_owned()).unwrap();
        bufs.push(client.buffer_from_host(&h, dev).unwrap());
    }
    let refs: Vec<_> = bufs.iter().collect();
    let y = exe.execute_one(&refs).unwrap()[0].to_host().unwrap();
    assert_eq!((y.dtype, y.shape.clone()), (DType::F32, vec![3, 8]));
    expect_mlp(&x, &y.to_f64().unwrap(), 3);

    // Lowering again over its own output replaces it.
    let again =
        tpuport(&["lower", model.to_str().unwrap(), "--batch", "2", "-o", out.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("model_b2.mlir"), "{}", again.stdout);
    assert!(!out.join("model_b3.mlir").exists());
}

#[test]
fn lower_rejects_unsupported_ops_unbound_shapes_and_foreign_dirs() {
    let t = tempfile::tempdir().unwrap();
    make_models(t.path());
    let bad = t.path().join("bad.onnx");
    let out = t.path().join("o1");
    let o = tpuport(&["lower", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", o.stderr);
    for needle in ["error:", "bad.onnx", "weird", "Frobnicate", "opset 17"] {
        assert!(lines[0].contains(needle), "`{needle}` missing: {}", lines[0]);
    }
    assert!(!out.exists(), "no partial output");
    assert!(
        std::fs::read_dir(t.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("tmp"))
    );

    let mlp = t.path().join("mlp.onnx");
    let o = tpuport(&["lower", mlp.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("`x`") && o.stderr.contains("--batch"), "{}", o.stderr);

    let foreign = t.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("keep.txt"), "mine").unwrap();
    let o =
        tpuport(&["lower", mlp.to_str().unwrap(), "--batch", "1", "-o", foreign.to_str().unwrap()]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("refusing to overwrite"), "{}", o.stderr);
    assert_eq!(std::fs::read_to_string(foreign.join("keep.txt")).unwrap(), "mine");
}

/// `run` and `bench` take the lower folder: the manifest picks the bucket (by the inputs'
/// shapes for `run`; every bucket, or one module's, for `bench`) and the weight arguments come
/// from `weights.safetensors`; a manifest pointing outside its folder is refused.
#[test]
fn run_and_bench_read_the_lower_folder_through_its_manifest() {
    let t = tempfile::tempdir().unwrap();
    make_models(t.path());
    let out = t.path().join("out");
    let (model, o) = (t.path().join("mlp.onnx"), out.to_str().unwrap());
    let lowered = tpuport(&["lower", model.to_str().unwrap(), "--batch", "1,3", "-o", o]);
    assert_eq!(lowered.code, 0, "{}", lowered.stderr);
    let cache = t.path().join("cache");
    let runtime = |args: &[&str]| common::output(common::runtime_command(&cache).args(args));

    // run: a batch-3 input selects model_b3.mlir; the result is relu(x @ W + b)
    let x: Vec<f32> = (0..48).map(|v| v as f32 * 0.05 - 1.0).collect();
    let x3 = t.path().join("x3.npy");
    tpuport_formats::npy::write_npy(&x3, &HostTensor::from_f32(vec![3, 16], &x).unwrap()).unwrap();
    let res = t.path().join("res");
    let named = format!("x={}", x3.display());
    let r =
        runtime(&["--format", "json", "run", o, "--input", &named, "--out", res.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["model"].as_str().unwrap().ends_with("model_b3.mlir"), "{v}");
    let y = tpuport_formats::npy::read_npy(&res.join("out0.npy")).unwrap();
    assert_eq!(y.shape, [3, 8]);
    expect_mlp(&x, &y.to_f64().unwrap(), 3);
    // a batch no bucket has: exit 2 naming the input and the first bucket's shape
    let x5 = t.path().join("x5.npy");
    tpuport_formats::npy::write_npy(&x5, &HostTensor::from_f32(vec![5, 16], &[0.0; 80]).unwrap())
        .unwrap();
    let r = runtime(&["run", o, "--input", x5.to_str().unwrap(), "--out", res.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("expected f32[1,16], got f32[5, 16]"), "{}", r.stderr);

    // bench: the folder is every bucket; one module is its bucket; --batch-sweep all again
    let bench = |args: &[&str]| {
        let mut all = vec!["--format", "json", "bench", "--iters", "3", "--warmup", "0"];
        all.extend_from_slice(args);
        let r = runtime(&all);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["results"].as_array().unwrap().clone()
    };
    let rows = bench(&[o]);
    let batches: Vec<u64> = rows.iter().map(|r| r["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, [1, 3]);
    // W (16x8 f32) is a module argument fed from the weights file
    assert!(rows[1]["compiled_memory"]["argument"].as_i64().unwrap() >= 4 * (3 * 16 + 16 * 8));
    let b3 = out.join("model_b3.mlir");
    assert_eq!(bench(&[b3.to_str().unwrap()]).len(), 1);
    assert_eq!(bench(&[b3.to_str().unwrap(), "--batch-sweep"]).len(), 2);

    // a manifest that points outside its folder
    let m = out.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap().replace("\"model_b1.mlir\"", "\"../x.mlir\"");
    std::fs::write(&m, text).unwrap();
    let r = runtime(&["bench", o]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("manifest.json") && r.stderr.contains("\"../x.mlir\""),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
}
