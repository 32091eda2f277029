//! Reference-model parity of the ONNX lowering: the five torch exports (both exporters) lowered
//! at batch 1 and 8, compiled on the CPU PJRT plugin, run on the same inputs as onnxruntime, and
//! compared with onnxruntime's outputs: max |tpuport - ort| / max |ort| <= 1e-4 per output, f32.
//!
//! Batch 1 uses the fixture set (`inputs.npz`, `outputs_<exporter>.npz`); batch 8 uses
//! `make lower-refs` (`scripts/testdata/lower_refs.py`), found through `$TPUPORT_LOWER_REFS`, else
//! the newest `~/.cache/tpuport/lower-refs-*`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr, reason = "tests")]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tpuport_formats::ImportOptions;
use tpuport_lower::onnx::{ArgSource, LowerOptions};
use tpuport_model::{DType, HostTensor, Shape};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

const MAX_REL: f64 = 1e-4;

fn client() -> &'static Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| {
        let found = tpuport_pjrt::find(None).expect("no PJRT plugin: run `make venv`");
        let plugin = tpuport_pjrt::load(&found.path).expect("loading the PJRT plugin");
        Client::new(plugin, &ClientOptions::cpu_devices(1)).expect("PJRT client")
    })
}

fn refs_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TPUPORT_LOWER_REFS") {
        let d = PathBuf::from(d);
        assert!(d.join(".done").is_file(), "{} incomplete: run `make lower-refs`", d.display());
        return d;
    }
    let root = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME unset")
        .join("tpuport");
    let newest = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("lower-refs-"))
                && p.join(".done").is_file()
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
    newest.unwrap_or_else(|| {
        panic!("batch-8 references missing under {}: run `make lower-refs`", root.display())
    })
}

fn npz(path: &Path) -> Vec<(String, HostTensor)> {
    tpuport_formats::npy::read_npz(path).unwrap_or_else(|e| panic!("{e}"))
}

fn f32s(t: &HostTensor) -> Vec<f64> {
    assert_eq!(t.dtype, DType::F32, "outputs are f32");
    t.data().chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect()
}

/// Lowers, compiles, runs one export on `inputs` and returns a problem per output that differs.
fn check(
    model_path: &Path,
    inputs: &[(String, HostTensor)],
    expected: &[(String, HostTensor)],
) -> Vec<String> {
    let what = model_path.display().to_string();
    let b = inputs[0].1.shape[0];
    let mut opts = ImportOptions::default();
    for (n, t) in inputs {
        opts.input_shapes.insert(n.clone(), Shape::fixed(&t.shape));
    }
    let model = tpuport_formats::open(model_path, &opts).unwrap_or_else(|e| panic!("{e}"));
    let lowered = match tpuport_lower::onnx::lower(&model, &LowerOptions::default()) {
        Ok(l) => l,
        Err(e) => return vec![format!("{what} batch {b}: lowering: {e}")],
    };
    let by_name: HashMap<&str, &HostTensor> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut args = Vec::new();
    for a in &lowered.args {
        let t = match &a.source {
            ArgSource::Input(n) => (*by_name
                .get(n.as_str())
                .unwrap_or_else(|| panic!("{what}: module input {n} not among the test inputs")))
            .clone(),
            ArgSource::Weight(n) => {
                let w = model.weights.by_name(n).unwrap_or_else(|| panic!("{what}: weight {n}"));
                HostTensor::new(w.dtype, w.shape.clone(), w.bytes().unwrap().into_owned()).unwrap()
            }
        };
        assert_eq!((t.dtype, &t.shape), (a.dtype, &a.shape), "{what}: argument {:?}", a.source);
        args.push(t);
    }
    let c = client();
    let exe = match c.compile(&Program::mlir(lowered.mlir.into_bytes()), &CompileOptions::default())
    {
        Ok(e) => e,
        Err(e) => return vec![format!("{what} batch {b}: compile: {e}")],
    };
    let dev = exe.devices().into_iter().next().unwrap();
    let bufs: Vec<_> = args.iter().map(|t| c.buffer_from_host(t, &dev).unwrap()).collect();
    let refs: Vec<_> = bufs.iter().collect();
    let outs = exe.execute_one(&refs).unwrap_or_else(|e| panic!("{what}: execute: {e}"));
    let mut problems = Vec::new();
    for (i, (name, want)) in expected.iter().enumerate() {
        let j = lowered.results.iter().position(|r| &r.name == name).unwrap_or(i);
        let got = outs[j].to_host().unwrap();
        if got.shape != want.shape {
            problems.push(format!(
                "{what} batch {b} {name}: shape {:?}, onnxruntime {:?}",
                got.shape, want.shape
            ));
            continue;
        }
        let (g, w) = (f32s(&got), f32s(want));
        let scale = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = g.iter().zip(&w).fold(0.0f64, |m, (a, b)| {
            if a.is_nan() { f64::INFINITY } else { m.max((a - b).abs()) }
        });
        let rel = err / scale.max(f64::MIN_POSITIVE);
        eprintln!("{what} batch {b} {name}: max rel error {rel:.2e}");
        if rel > MAX_REL {
            problems.push(format!(
                "{what} batch {b} {name}: max rel error {rel:.3e} > {MAX_REL:.0e} (max abs {err:.3e})"
            ));
        }
    }
    problems
}

fn model(name: &str) {
    let dir = common::fixtures().join("torch").join(name);
    let refs = refs_dir().join(name);
    let mut problems = Vec::new();
    for exp in ["legacy", "dynamo"] {
        let path = dir.join(format!("{exp}.onnx"));
        problems.extend(check(
            &path,
            &npz(&dir.join("inputs.npz")),
            &npz(&dir.join(format!("outputs_{exp}.npz"))),
        ));
        problems.extend(check(
            &path,
            &npz(&refs.join("inputs_b8.npz")),
            &npz(&refs.join(format!("outputs_{exp}_b8.npz"))),
        ));
    }
    assert!(problems.is_empty(), "{name}:\n{}", problems.join("\n"));
}

#[test]
fn resnet50_matches_onnxruntime() {
    model("resnet50");
}

#[test]
fn mobilenet_v2_matches_onnxruntime() {
    model("mobilenet_v2");
}

#[test]
fn vit_b_16_matches_onnxruntime() {
    model("vit_b_16");
}

#[test]
fn bert_base_matches_onnxruntime() {
    model("bert_base");
}

#[test]
fn gpt2_matches_onnxruntime() {
    model("gpt2");
}
