//! `tpuport inspect` against real exports: the framework's own numbers, recorded by
//! `scripts/testdata/fixtures/` in each fixture's `meta.json`, must be reproduced exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{fixtures, inspect_json, meta};

const TORCH_MODELS: [&str; 5] = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2"];

fn elements(report: &serde_json::Value) -> u64 {
    report["params"]["elements"].as_u64().unwrap()
}

#[test]
fn checkpoints_reproduce_framework_parameter_count() {
    let fx = fixtures();
    for m in TORCH_MODELS {
        let dir = fx.join("torch").join(m);
        let want = meta(&dir)["params"].as_u64().unwrap();
        for file in ["model.safetensors", "model.pt", "sharded/model.safetensors.index.json"] {
            let r = inspect_json(&dir.join(file), &[]);
            assert_eq!(elements(&r), want, "{m}/{file}: parameter count");
        }
    }
}

#[test]
fn onnx_counts_what_the_file_holds_and_explains_the_difference() {
    let fx = fixtures();
    for m in TORCH_MODELS {
        let dir = fx.join("torch").join(m);
        let meta = meta(&dir);
        let framework = meta["params"].as_u64().unwrap();
        for exp in ["legacy", "dynamo"] {
            let file = dir.join(format!("{exp}.onnx"));
            if !file.exists() {
                panic!("{}: missing (export failed? see meta.json)", file.display());
            }
            let want = meta["onnx"][exp]["initializer_elements"].as_u64().unwrap();
            let r = inspect_json(&file, &[]);
            assert_eq!(elements(&r), want, "{m}/{exp}.onnx initializer elements");
            let codes: Vec<&str> = r["explanations"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["code"].as_str())
                .collect();
            if matches!(m, "resnet50" | "mobilenet_v2") {
                assert!(elements(&r) < framework, "{m}/{exp}: BN folding should lose elements");
                assert!(codes.contains(&"bn-folded"), "{m}/{exp}: {codes:?}");
            }
            if m == "gpt2" && exp == "legacy" {
                assert!(codes.contains(&"tied-duplicated"), "{m}/{exp}: {codes:?}");
                let dedup = r["params"]["deduplicated_elements"].as_u64().unwrap();
                assert_eq!(dedup, framework, "gpt2 legacy deduplicated count");
            }
        }
    }
}

#[test]
fn onnx_shapes_are_concrete_once_dims_are_bound() {
    let fx = fixtures();
    for m in TORCH_MODELS {
        let text = matches!(m, "bert_base" | "gpt2");
        for exp in ["legacy", "dynamo"] {
            let file = fx.join("torch").join(m).join(format!("{exp}.onnx"));
            let mut extra = vec!["--batch", "2"];
            if text {
                extra.extend(["--dim", "sequence=128"]);
            }
            let r = inspect_json(&file, &extra);
            for port in
                r["inputs"].as_array().unwrap().iter().chain(r["outputs"].as_array().unwrap())
            {
                let shape = port["shape"].as_array().unwrap_or_else(|| panic!("{m}/{exp}: {port}"));
                assert!(shape.iter().all(serde_json::Value::is_u64), "{m}/{exp}: {port}");
                assert_eq!(shape[0].as_u64(), Some(2), "{m}/{exp}: batch not bound: {port}");
            }
            assert_eq!(r["dynamic_values"].as_u64(), Some(0), "{m}/{exp}: values left dynamic");
        }
    }
}

/// A dimension: its size, or `None` for a symbol. MLIR types carry no symbol names
/// (`tensor<?x784xf32>`), so a symbolic dim only has to stay symbolic, never become a number.
fn dim(d: &serde_json::Value) -> Option<u64> {
    match d {
        serde_json::Value::String(_) => None,
        other => Some(other.as_u64().unwrap_or_else(|| panic!("bad dim {other}"))),
    }
}

#[test]
fn jax_modules_report_their_signature() {
    let fx = fixtures();
    for entry in std::fs::read_dir(fx.join("jax")).unwrap() {
        let dir = entry.unwrap().path();
        let meta = meta(&dir);
        for file in ["jit.mlir", "export.mlir"] {
            let path = dir.join(file);
            if !path.exists() {
                continue;
            }
            let r = inspect_json(&path, &[]);
            assert_eq!(r["framework"], "jax", "{}", path.display());
            for (side, key) in [("inputs", "args"), ("outputs", "outputs")] {
                let got: Vec<(Vec<Option<u64>>, String)> = r[side]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        let shape = p["shape"]
                            .as_array()
                            .map_or_else(Vec::new, |s| s.iter().map(dim).collect());
                        (shape, p["dtype"].as_str().unwrap().to_owned())
                    })
                    .collect();
                let want: Vec<(Vec<Option<u64>>, String)> = meta[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| {
                        let shape = a[0].as_array().unwrap().iter().map(dim).collect();
                        (shape, a[1].as_str().unwrap().to_owned())
                    })
                    .collect();
                assert_eq!(got, want, "{}: {side}", path.display());
            }
        }
    }
}
