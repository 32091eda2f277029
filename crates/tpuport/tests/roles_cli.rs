//! Argument roles through the binary (issue 21) on a keras-hub GPT-2 causal LM exported with
//! its weights as arguments (`make stablehlo-exports`): the batch, the parameters and the tied
//! table in `audit` and `inspect`, `--data-args` by position and by name, a batch read from a
//! weight refused, `--batch` on a static module scaling instead of re-lowering, and `--dim`
//! on a static module reported as not applied. ONNX graphs by the `onnx-graph` rule (the
//! `logreg_iris.onnx` onnxruntime ships, and a fixture with initializers). The same roles in
//! `bench` (items/s at the data batch) and `batch` (a Flax NNX export whose weights lead the
//! signature, its weights from a safetensors file next to the module).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};

use common::tpuport;

fn export(name: &str) -> (PathBuf, serde_json::Value) {
    let root = tpuport_testkit::generated(
        "TPUPORT_STABLEHLO_EXPORTS",
        "stablehlo-exports-",
        ".done",
        "stablehlo-exports",
    );
    let dir = root.join(name);
    let meta =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    (dir, meta)
}

fn gpt2() -> (PathBuf, serde_json::Value) {
    export("kerashub_gpt2")
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

#[test]
fn dim_on_a_static_module_is_reported_not_applied() {
    let (dir, meta) = gpt2();
    let m = dir.join("jit.mlir");
    let seq = meta["sequence"].as_u64().unwrap();
    let base = json(&["--format", "json", "audit", m.to_str().unwrap()]);
    assert_eq!(base["dims_not_applied"].as_array().unwrap().len(), 0);
    let other = (2 * seq).to_string();
    let r = json(&[
        "--format",
        "json",
        "audit",
        m.to_str().unwrap(),
        "--dim",
        &format!("sequence={other}"),
    ]);
    let d = r["dims_not_applied"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["name"], "sequence");
    assert_eq!(d[0]["value"].as_u64(), Some(2 * seq));
    assert_eq!(d[0]["module"].as_u64(), Some(seq));
    // Nothing re-lowered, nothing scaled: the figures are the module's.
    assert_eq!(r["cost"]["totals"], base["cost"]["totals"]);
    assert_eq!(r["summary"]["samples_per_s"], base["summary"]["samples_per_s"]);
    let notes: Vec<&str> =
        r["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(
        notes.iter().any(|n| n.starts_with(&format!("--dim sequence={other} not applied"))
            && n.contains(&format!("static at sequence {seq}"))),
        "{notes:?}"
    );
    // The module's own sequence: nothing to say.
    let r = json(&[
        "--format",
        "json",
        "audit",
        m.to_str().unwrap(),
        "--dim",
        &format!("sequence={seq}"),
    ]);
    assert_eq!(r["dims_not_applied"].as_array().unwrap().len(), 0);
    // A name the module has no dimension for.
    let r = json(&["--format", "json", "audit", m.to_str().unwrap(), "--dim", "heads=8"]);
    assert!(r["dims_not_applied"][0]["module"].is_null(), "{}", r["dims_not_applied"]);
    // The text says so under the header.
    let o = tpuport(&["audit", m.to_str().unwrap(), "--dim", &format!("sequence={other}")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(&format!(
            "--dim sequence={other} not applied: the module's shapes are static at sequence {seq}"
        )),
        "{}",
        o.stdout
    );
    // inspect reads the module as it is, and says the binding was not applied.
    let o = tpuport(&["inspect", m.to_str().unwrap(), "--dim", &format!("sequence={other}")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!(
            "--dim sequence={other} not applied: a StableHLO module's shapes are static"
        )),
        "{}",
        o.stderr
    );
}

/// `logreg_iris.onnx` from the onnxruntime wheel in the venv (MIT; read in place): an
/// `ai.onnx.ml` LinearClassifier with one static input `float_input` f32[3, 2] and its
/// coefficients in attributes (no initializers).
fn logreg_iris() -> PathBuf {
    let o = tpuport_testkit::run_python::<&str>(
        "import onnxruntime, os; print(os.path.join(os.path.dirname(onnxruntime.__file__), 'datasets', 'logreg_iris.onnx'))",
        &[],
    );
    let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    assert!(p.is_file(), "{} missing from the onnxruntime wheel", p.display());
    p
}

#[test]
fn onnx_inputs_are_data_by_the_onnx_graph_rule() {
    let m = logreg_iris();
    let m = m.to_str().unwrap();
    let r = json(&["--format", "json", "audit", m]);
    let roles = &r["roles"];
    assert_eq!(roles["weights_in"], "initializers", "{roles}");
    let args = roles["args"].as_array().unwrap();
    assert_eq!(args.len(), 1);
    assert_eq!(args[0]["rule"], "onnx-graph");
    assert_eq!(args[0]["role"], "data");
    assert_eq!(roles["decided_by"], serde_json::json!([["onnx-graph", 1]]));
    assert_eq!(roles["batch"], 3);
    assert_eq!(r["batch"], 3);
    let o = tpuport(&["audit", m]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("inputs: 1 data (the graph inputs); weights: 0 initializers"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("decided: 1 by onnx-graph"), "{}", o.stdout);
    for stablehlo_only in
        ["JAX passes the parameters", "`tpuport lower` on an ONNX model", "re-export", "jax.export"]
    {
        assert!(!o.stdout.contains(stablehlo_only), "`{stablehlo_only}` in:\n{}", o.stdout);
    }
    // --batch on an input static at 3: scaled, with the ONNX way to re-bind it.
    let r = json(&["--format", "json", "audit", m, "--batch", "8"]);
    assert_eq!(r["batch"], 8);
    assert_eq!(r["module_batch"], 3);
    let notes: Vec<&str> =
        r["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(notes.iter().any(|n| n.contains("--input-shape NAME=8x")), "{notes:?}");
    assert!(
        !notes.iter().any(|n| n.contains("tpuport lower") || n.contains("re-export")),
        "{notes:?}"
    );
    // A symbolic batch bound by --batch is the module's: nothing scaled.
    let fx = common::fixtures().join("onnx_small/external_data.onnx");
    let r = json(&["--format", "json", "audit", fx.to_str().unwrap(), "--batch", "4"]);
    assert_eq!(
        (r["batch"].as_u64(), r["module_batch"].as_u64()),
        (Some(4), Some(4)),
        "{}",
        r["notes"]
    );
    // Initializers are the weights: counted as the parameters are.
    assert_eq!(r["roles"]["weights_in"], "initializers");
    assert!(r["roles"]["weights"]["args"].as_u64().unwrap() >= 1, "{}", r["roles"]);
    assert_eq!(r["roles"]["weights"]["elements"], r["model"]["params"]);
    assert!(
        r["roles"]["args"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["rule"] == "onnx-graph" && a["role"] == "data")
    );
}

/// The module's arguments: (dtype, shape) in order.
fn signature(m: &Path) -> Vec<(tpuport_model::DType, Vec<u64>)> {
    let model = tpuport_formats::open(m, &tpuport_formats::ImportOptions::default()).unwrap();
    let g = &model.graph;
    g.inputs
        .iter()
        .map(|&i| {
            let v = g.value(i);
            (
                v.ty.dtype.unwrap(),
                v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed).unwrap(),
            )
        })
        .collect()
}

fn data_args(meta: &serde_json::Value) -> Vec<usize> {
    meta["data_args"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect()
}

#[test]
fn bench_items_per_second_use_the_data_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let bench = |m: &Path| {
        let mut c = common::runtime_command(&cache);
        c.args(["--format", "json", "bench"]).arg(m).args(["--iters", "3", "--warmup", "1"]);
        let o = common::output(&mut c);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        v["results"][0].clone()
    };
    // The data first, the weight last: the last argument's leading dim (3) is not the batch.
    let m = tmp.path().join("xw.mlir");
    std::fs::write(
        &m,
        "module @m {\n  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>) -> tensor<4x5xf32> {\n    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>\n    return %0 : tensor<4x5xf32>\n  }\n}\n",
    )
    .unwrap();
    let r = bench(&m);
    assert_eq!(r["batch"], 4, "{r}");
    let (items, execs) =
        (r["items_per_s"].as_f64().unwrap(), r["executions_per_s"].as_f64().unwrap());
    assert!((items - 4.0 * execs).abs() <= 1e-9 * items, "{r}");
    // A Flax NNX decoder exported with its parameters leading: the token ids' batch.
    let (dir, meta) = export("nnx_transformer");
    let r = bench(&dir.join("jit.mlir"));
    assert_eq!(r["batch"], meta["batch"], "{r}");
}

#[test]
fn batch_runs_a_weights_first_export_with_its_weights_file() {
    use tpuport_formats::tensors::SplitMix;
    use tpuport_model::{DType, HostTensor};
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let (dir, meta) = export("nnx_transformer");
    let m = tmp.path().join("model/jit.mlir");
    std::fs::create_dir_all(m.parent().unwrap()).unwrap();
    std::fs::copy(dir.join("jit.mlir"), &m).unwrap();
    let sig = signature(&m);
    let data = data_args(&meta);
    assert_eq!(data, vec![sig.len() - 1], "one data argument, last");
    let b = meta["batch"].as_u64().unwrap();
    let seq = meta["sequence"].as_u64().unwrap();
    // The first argument (an attention bias, [heads, head_dim]) leads with 4 like the batch,
    // by chance; other weights do not: taking every argument as an input at the first one's
    // leading dim (the former binding) cannot load it.
    assert!(sig.iter().any(|(_, s)| s.first() != Some(&b)));
    // Rows: 2 * batch - 1 token sequences (the last batch padded).
    let rows = 2 * b - 1;
    let mut rng = SplitMix(3);
    let tokens: Vec<i32> = (0..rows * seq).map(|_| (rng.next_u64() % 512) as i32).collect();
    let tbytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    tpuport_formats::npy::write_npy(
        &input.join("tokens.npy"),
        &HostTensor::new(DType::I32, vec![rows, seq], tbytes.clone()).unwrap(),
    )
    .unwrap();
    let batch = |out: &Path, extra: &[&str]| {
        let mut c = common::runtime_command(&cache);
        c.args(["--format", "json", "batch"])
            .arg(&m)
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(out)
            .args(extra);
        common::output(&mut c)
    };
    // No weights file: a one-line error naming the first weight argument and the file to add.
    let o = batch(&tmp.path().join("out0"), &[]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.starts_with("error:")
            && o.stderr.contains("argument 0 `")
            && o.stderr.contains("jit.safetensors")
            && o.stderr.trim_end().lines().count() == 1,
        "{}",
        o.stderr
    );
    // The weights, named `argN`, random (seeded).
    let mut weights = Vec::new();
    for (i, (dt, shape)) in sig.iter().enumerate() {
        if data.contains(&i) {
            continue;
        }
        let n: u64 = shape.iter().product();
        // Floats small and random; anything else (a random-number state) zero.
        let v: Vec<u8> = if *dt == DType::F32 {
            (0..n).flat_map(|_| ((rng.normal() * 0.05) as f32).to_le_bytes()).collect()
        } else {
            vec![0; usize::try_from(dt.storage_bytes(n).unwrap()).unwrap()]
        };
        weights.push((i, HostTensor::new(*dt, shape.clone(), v).unwrap()));
    }
    let outs: Vec<_> = weights
        .iter()
        .map(|(i, t)| tpuport_formats::safetensors::TensorOut {
            name: format!("arg{i}"),
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: t.data().to_vec().into(),
        })
        .collect();
    tpuport_formats::safetensors::write_safetensors(&m.with_extension("safetensors"), &outs, &[])
        .unwrap();
    let out = tmp.path().join("out");
    let o = batch(&out, &["--no-cache"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(s["model"]["buckets"], serde_json::json!([b]), "{s}");
    assert_eq!(s["rows"].as_u64(), Some(rows));
    assert_eq!(s["batches"], 2);
    // The same rows through `tpuport run` with the same weights, batch by batch (zero-padded).
    let out_name = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("part-00000.") && n.ends_with(".npy") && !n.contains("keys"))
        .unwrap();
    let got = tpuport_formats::npy::read_npy(&out.join(&out_name)).unwrap();
    assert_eq!(got.shape[0], rows);
    let mut want = Vec::new();
    for w in 0..2 {
        let mut c = common::runtime_command(&cache);
        c.arg("run").arg(&m);
        for (i, t) in &weights {
            let p = tmp.path().join(format!("arg{i}.npy"));
            tpuport_formats::npy::write_npy(&p, t).unwrap();
            c.arg("--input").arg(p);
        }
        let first = (w * b) as usize;
        let n = ((rows - w * b).min(b)) as usize;
        let row = (seq * 4) as usize;
        let mut x = tbytes[first * row..(first + n) * row].to_vec();
        x.resize(b as usize * row, 0);
        let xp = tmp.path().join("x.npy");
        tpuport_formats::npy::write_npy(
            &xp,
            &HostTensor::new(DType::I32, vec![b, seq], x).unwrap(),
        )
        .unwrap();
        let rdir = tmp.path().join(format!("run{w}"));
        c.arg("--input").arg(&xp).arg("--out").arg(&rdir);
        let r = common::output(&mut c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let y = tpuport_formats::npy::read_npy(&rdir.join("out0.npy")).unwrap();
        let per_row = y.data().len() / b as usize;
        want.extend_from_slice(&y.data()[..n * per_row]);
    }
    assert!(got.data() == want.as_slice(), "batch and run differ");
    // `--data-args` names the data as `audit` does: the same binding; an unknown name stops.
    let idx = data[0].to_string();
    let o = batch(&tmp.path().join("out-named"), &["--no-cache", "--data-args", &idx]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let named =
        tpuport_formats::npy::read_npy(&tmp.path().join("out-named").join(&out_name)).unwrap();
    assert!(named.data() == got.data(), "--data-args {idx} binds otherwise");
    let o = batch(&tmp.path().join("out-bad"), &["--data-args", "nosuch"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.starts_with("error:") && o.stderr.contains("`nosuch`"), "{}", o.stderr);
    // A model-repository entry without `model.args` binds the module by the same roles.
    std::fs::write(
        m.with_file_name("config.toml"),
        format!("[model]\nkind = \"stablehlo\"\npath = \"jit.safetensors\"\nmodules = {{ \"{b}\" = \"jit.mlir\" }}\n"),
    )
    .unwrap();
    let entry = m.parent().unwrap().to_owned();
    let out2 = tmp.path().join("out-entry");
    let mut c = common::runtime_command(&cache);
    c.args(["--format", "json", "batch"])
        .arg(&entry)
        .arg("--input")
        .arg(&input)
        .arg("--output")
        .arg(&out2)
        .arg("--no-cache");
    let o = common::output(&mut c);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let again = tpuport_formats::npy::read_npy(&out2.join(&out_name)).unwrap();
    assert!(again.data() == got.data(), "the repository entry and the lone module differ");
}
