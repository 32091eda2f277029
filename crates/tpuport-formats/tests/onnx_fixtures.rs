//! ONNX importer over the generated torch fixtures (`make fixtures`): both exporters' files of
//! ResNet-50, MobileNetV2, ViT-B/16, BERT-base and GPT-2 import, every node output gets a
//! static shape from tpuport's own inference (the files' `value_info` types are discarded
//! first), the inferred shapes agree with what the dynamo exporter declares, initializer
//! element counts match the `onnx` package's count in `meta.json`, and the exporter is told
//! apart.
//!
//! Exporter signals seen in these files (torch 2.15): both say `producer_name` `pytorch`;
//! dynamo files import only the default domain but carry `pkg.torch.onnx.*` node metadata,
//! name nodes `node_*` and values `val_N`; legacy files name nodes `/inner/embeddings/Shape`
//! and values `onnx::Slice_206` / `/inner/.../Shape_output_0`.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::PathBuf;

use tpuport_analysis::inventory::duplicate_tensors;
use tpuport_formats::onnx::{OnnxImporter, infer_shapes};
use tpuport_formats::{ImportOptions, Importer};
use tpuport_model::{Framework, Graph, Model, Shape, TensorType, ValueKind};

const MODELS: [&str; 5] = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2"];

fn root() -> PathBuf {
    let torch = tpuport_testkit::fixtures("torch");
    torch.parent().map(std::path::Path::to_path_buf).unwrap_or(torch)
}

fn fixture(model: &str, exporter: &str) -> (PathBuf, serde_json::Value) {
    let dir = root().join("torch").join(model);
    let p = dir.join(format!("{exporter}.onnx"));
    assert!(
        p.is_file() && dir.join("meta.json").is_file(),
        "fixtures missing: run `make fixtures` ({} absent)",
        p.display()
    );
    let meta =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    (p, meta)
}

fn bindings() -> ImportOptions {
    ImportOptions {
        batch: Some(1),
        dims: BTreeMap::from([("sequence".to_owned(), 128)]),
        ..ImportOptions::default()
    }
}

fn strip_types(g: &mut Graph) {
    for v in &mut g.values {
        if v.kind == ValueKind::Intermediate {
            v.ty = TensorType::default();
        }
    }
    for n in &mut g.nodes {
        for (_, sg) in &mut n.subgraphs {
            strip_types(sg);
        }
    }
}

fn initializer_elements(m: &Model) -> u64 {
    m.graph
        .values
        .iter()
        .filter_map(|v| match v.kind {
            ValueKind::Weight(id) => Some(m.weights.get(id)),
            _ => None,
        })
        .filter(|w| !w.shape.is_empty())
        .map(tpuport_model::Weight::elements)
        .sum()
}

fn check(model: &str, exporter: &str) {
    let (path, meta) = fixture(model, exporter);
    let m = OnnxImporter.import(&path, &ImportOptions::default()).unwrap();
    assert_eq!(m.metadata.framework, Framework::PyTorch);
    let want =
        if exporter == "dynamo" { "torch.onnx (dynamo)" } else { "torch.onnx (TorchScript)" };
    assert_eq!(m.metadata.exporter.as_deref(), Some(want), "{model} {exporter}");
    assert!(
        !m.notes.iter().any(|n| n.code == "shape-inference"),
        "{model} {exporter} symbolic: {:?}",
        m.notes
    );

    // Our own inference, from input types only.
    let mut ours = m.clone();
    strip_types(&mut ours.graph);
    let r = infer_shapes(&mut ours, &bindings());
    assert!(r.failures.is_empty(), "{model} {exporter}: {:#?}", r.failures);
    assert_eq!(r.static_outputs, r.node_outputs, "{model} {exporter}: every node output static");
    assert!(r.node_outputs > 50);
    assert!(r.unbound.is_empty(), "{model} {exporter}: {:?}", r.unbound);

    // Agreement with declared types (dynamo files declare every value).
    let declared = OnnxImporter.import(&path, &bindings()).unwrap();
    let mismatches: Vec<_> = declared.notes.iter().filter(|n| n.code == "shape-mismatch").collect();
    assert!(mismatches.is_empty(), "{model} {exporter}: {mismatches:#?}");
    for (a, b) in declared.graph.values.iter().zip(&ours.graph.values) {
        assert_eq!(a.name, b.name);
        if a.ty.shape.as_ref().is_some_and(Shape::is_static) && a.kind == ValueKind::Intermediate {
            assert_eq!(a.ty, b.ty, "{model} {exporter}: value '{}'", a.name);
        }
    }

    // Graph outputs as the meta records them, bound.
    let outs = &meta["onnx"][exporter]["output_types"];
    for id in &ours.graph.outputs {
        let v = ours.graph.value(*id);
        let dims: Vec<u64> = outs[&v.name][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap_or(if d == "sequence" { 128 } else { 1 }))
            .collect();
        assert_eq!(
            v.ty.shape,
            Some(Shape::fixed(&dims)),
            "{model} {exporter}: output '{}'",
            v.name
        );
    }

    if let Some(n) = meta["onnx"][exporter]["initializer_elements"].as_u64() {
        assert_eq!(initializer_elements(&m), n, "{model} {exporter}: initializer elements");
    }
    if let Some(n) = meta["onnx"][exporter]["nodes"].as_u64() {
        assert_eq!(m.graph.nodes.len() as u64, n, "{model} {exporter}: nodes");
    }
}

#[test]
fn resnet50() {
    check("resnet50", "legacy");
    check("resnet50", "dynamo");
}

#[test]
fn mobilenet_v2() {
    check("mobilenet_v2", "legacy");
    check("mobilenet_v2", "dynamo");
}

#[test]
fn vit_b_16() {
    check("vit_b_16", "legacy");
    check("vit_b_16", "dynamo");
}

#[test]
fn bert_base() {
    check("bert_base", "legacy");
    check("bert_base", "dynamo");
}

#[test]
fn gpt2() {
    check("gpt2", "legacy");
    check("gpt2", "dynamo");
}

#[test]
fn gpt2_legacy_tied_embedding_is_a_transposed_duplicate() {
    let (path, _) = fixture("gpt2", "legacy");
    let m = OnnxImporter.import(&path, &ImportOptions::default()).unwrap();
    let groups = duplicate_tensors(&m, 1);
    let wte = ["inner.transformer.wte.weight", "transformer.wte.weight"]
        .into_iter()
        .find(|n| m.weights.id_of(n).is_some())
        .unwrap();
    let g = groups.iter().find(|g| g.names.iter().any(|n| n == wte)).expect("wte has a duplicate");
    assert_eq!(g.names.len(), 2, "{:?}", g.names);
    let other = m.weights.by_name(g.names.iter().find(|n| *n != wte).unwrap()).unwrap();
    assert_eq!(other.shape, vec![768, 50257]);
    // Only the tied embedding is duplicated in this (perturbed) export.
    assert_eq!(groups.len(), 1, "{groups:?}");
}

#[test]
fn all_models_present() {
    for m in MODELS {
        for e in ["legacy", "dynamo"] {
            let _ = fixture(m, e);
        }
    }
}

/// The hand-built corner cases (`onnx_small/`): each imports, binds the symbols its reference
/// run used (read off the reference output shapes), and infers the reference output shapes.
#[test]
fn onnx_small_corner_cases() {
    let dir = root().join("onnx_small");
    let meta_path = dir.join("meta.json");
    assert!(
        meta_path.is_file(),
        "fixtures missing: run `make fixtures` ({} absent)",
        meta_path.display()
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(meta_path).unwrap()).unwrap();
    let cases = meta.as_object().unwrap();
    assert!(cases.len() >= 8, "{:?}", cases.keys().collect::<Vec<_>>());
    for (name, case) in cases {
        let path = dir.join(format!("{name}.onnx"));
        let mut dims = BTreeMap::new();
        let want = &case["reference"]["output_shapes"];
        for (out, ty) in case["output_types"].as_object().unwrap() {
            for (d, n) in ty[0].as_array().unwrap().iter().zip(want[out].as_array().unwrap()) {
                if let Some(sym) = d.as_str() {
                    dims.insert(sym.to_owned(), n.as_u64().unwrap());
                }
            }
        }
        let m = OnnxImporter
            .import(&path, &ImportOptions { dims, ..ImportOptions::default() })
            .unwrap();
        let warnings: Vec<_> =
            m.notes.iter().filter(|n| n.level >= tpuport_model::NoteLevel::Warning).collect();
        assert!(warnings.is_empty(), "{name}: {warnings:#?}");
        for id in &m.graph.outputs {
            let v = m.graph.value(*id);
            let dims: Vec<u64> =
                want[&v.name].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
            assert_eq!(v.ty.shape, Some(Shape::fixed(&dims)), "{name}: output '{}'", v.name);
        }
        assert_eq!(
            initializer_elements(&m),
            case["initializer_elements"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(m.functions.len() as u64, case["functions"].as_u64().unwrap(), "{name}");
        assert_eq!(m.graph.nodes.len() as u64, case["nodes"].as_u64().unwrap(), "{name}");
        let subgraphs: usize = m.graph.walk_nodes().map(|n| n.subgraphs.len()).sum();
        assert_eq!(subgraphs as u64, case["subgraphs"].as_u64().unwrap(), "{name}");
    }
}
