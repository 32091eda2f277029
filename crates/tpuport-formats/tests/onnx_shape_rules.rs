//! tpuport's ONNX shape rules against ONNX's own shape inference, on the committed models of
//! `tests/data/shape_rules` (written by `scripts/testdata/shape_rule_fixtures.py`: one node per
//! case, graph outputs untyped, and what `onnx.shape_inference.infer_shapes(strict_mode=True,
//! data_prop=True)` gives each output in `expected.json`). Every output's element type and
//! every dimension (numbers and symbol names) must be the same.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::PathBuf;

use tpuport_formats::ImportOptions;
use tpuport_formats::onnx::dtype::from_onnx;
use tpuport_model::{Dim, Shape};

/// The ops whose shape rules were written against these fixtures; each must have a case.
const COVERED: &[&str] = &[
    "Attention",
    "BitCast",
    "BlackmanWindow",
    "CenterCropPad",
    "CumProd",
    "DepthToSpace",
    "DequantizeLinear",
    "EyeLike",
    "HammingWindow",
    "HannWindow",
    "NegativeLogLikelihoodLoss",
    "OneHot",
    "QLinearMatMul",
    "QuantizeLinear",
    "Resize",
    "RotaryEmbedding",
    "Scan",
    "SoftmaxCrossEntropyLoss",
    "SpaceToDepth",
    "SwiGLU",
    "Swish",
    "Upsample",
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/shape_rules")
}

fn expected() -> BTreeMap<String, BTreeMap<String, (i32, Vec<serde_json::Value>)>> {
    let text = std::fs::read_to_string(dir().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn want_shape(dims: &[serde_json::Value]) -> Shape {
    Shape(
        dims.iter()
            .map(|d| match d {
                serde_json::Value::Number(n) => Dim::Known(n.as_u64().unwrap()),
                serde_json::Value::String(s) => Dim::Sym(s.clone()),
                other => panic!("dim {other}"),
            })
            .collect(),
    )
}

#[test]
fn shape_rules_match_onnx_shape_inference() {
    let mut failures = Vec::new();
    let mut ops = Vec::new();
    let mut checked = 0;
    for (file, outputs) in expected() {
        let m = tpuport_formats::open(&dir().join(&file), &ImportOptions::default()).unwrap();
        ops.extend(m.graph.nodes.iter().map(|n| n.op.clone()));
        for (name, (code, dims)) in outputs {
            let Some(v) = m.graph.values.iter().find(|v| v.name == name) else {
                failures.push(format!("{file}: no value {name}"));
                continue;
            };
            let want = (from_onnx(code), Some(want_shape(&dims)));
            let got = (v.ty.dtype, v.ty.shape.clone());
            checked += 1;
            if got != want {
                failures.push(format!("{file} {name}: tpuport {got:?}, onnx {want:?}"));
            }
        }
    }
    assert!(checked >= 40, "only {checked} outputs checked");
    for op in COVERED {
        assert!(ops.iter().any(|o| o == op), "no case for {op}");
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}
