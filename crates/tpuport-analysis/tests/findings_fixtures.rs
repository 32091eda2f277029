//! Every finding code fires on a fixture built for it (`scripts/testdata/findings_fixtures.py`,
//! committed under `tests/data/findings/`), and clean models — hand-made ONNX and StableHLO, the
//! JAX fixtures — do not trigger it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use tpuport_analysis::findings::{self, CodeDoc, Finding, FindingOptions, Severity};
use tpuport_codes::StableCode;
use tpuport_formats::ImportOptions;

fn data(name: &str) -> PathBuf {
    tpuport_testkit::repo_root().join("crates/tpuport-analysis/tests/data/findings").join(name)
}

fn run_at(path: &std::path::Path, opts: &FindingOptions) -> Vec<Finding> {
    let m = tpuport_formats::open(path, &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    findings::check(&m, opts)
}

fn run(name: &str) -> Vec<Finding> {
    run_at(&data(name), &FindingOptions::default())
}

fn codes(f: &[Finding]) -> BTreeSet<&'static str> {
    f.iter().map(|f| f.code).collect()
}

/// (fixture, code it must trigger).
const TRIGGERS: &[(&str, &str)] = &[
    ("nonzero.onnx", "AUD101"),
    ("dynamic_reshape.mlir", "AUD101"),
    ("dynamic_dims.onnx", "AUD102"),
    ("loop_dynamic.onnx", "AUD103"),
    ("while_dynamic.mlir", "AUD103"),
    ("strings.onnx", "AUD201"),
    ("float64.onnx", "AUD202"),
    ("float64_stablehlo.mlir", "AUD202"),
    ("dft.onnx", "AUD203"),
    ("fft.mlir", "AUD203"),
    ("topk.onnx", "AUD301"),
    ("sort.mlir", "AUD301"),
    ("scatter.onnx", "AUD302"),
    ("scatter_stablehlo.mlir", "AUD302"),
    ("random.onnx", "AUD303"),
    ("rng.mlir", "AUD303"),
    ("nms.onnx", "AUD304"),
    ("contrib.onnx", "AUD305"),
    ("host_callback.mlir", "AUD305"),
    ("f32_matmul.onnx", "AUD401"),
    ("softmax_norm.onnx", "AUD402"),
    ("softmax_bf16.mlir", "AUD402"),
    ("exp_log.onnx", "AUD403"),
    ("long_reduce.onnx", "AUD404"),
    ("cumsum_bf16.mlir", "AUD404"),
    ("tiny_ops.onnx", "AUD501"),
];

#[test]
fn every_code_has_a_triggering_fixture() {
    let covered: BTreeSet<&str> = TRIGGERS.iter().map(|(_, c)| *c).collect();
    let all: BTreeSet<&str> = CodeDoc::all().iter().map(|d| d.code).collect();
    assert_eq!(covered, all, "codes without a fixture (or fixtures for unknown codes)");
}

#[test]
fn fixtures_trigger_their_code() {
    let failures: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = TRIGGERS
            .iter()
            .map(|(file, code)| {
                s.spawn(move || {
                    let f = run(file);
                    let hit = f.iter().find(|x| x.code == *code);
                    match hit {
                        None => Some(format!("{file}: expected {code}, got {:?}", codes(&f))),
                        Some(x)
                            if x.nodes.is_empty() || x.fix.is_none() || x.message.is_empty() =>
                        {
                            Some(format!(
                                "{file}: {code} must name nodes and say what to do: {x:?}"
                            ))
                        }
                        Some(_) => None,
                    }
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn clean_models_trigger_nothing() {
    for file in ["clean.onnx", "clean_stablehlo.mlir"] {
        let f = run(file);
        assert!(f.is_empty(), "{file}: {f:#?}");
    }
}

#[test]
fn near_misses_do_not_trigger() {
    // Only the batch is symbolic: no AUD102.
    assert!(!codes(&run("batch_only.onnx")).contains("AUD102"));
    // Constant trip counts: no AUD103.
    assert!(!codes(&run("loop_static.onnx")).contains("AUD103"));
    assert!(!codes(&run("while_static.mlir")).contains("AUD103"));
    // A shape-polymorphic jax.export (symbolic batch, dynamic_broadcast_in_dim on shapes,
    // shape_assertion custom call): no AUD101 / AUD102 / AUD305.
    let poly = tpuport_testkit::fixtures("jax").join("mlp_poly/export.mlir");
    let c = codes(&run_at(&poly, &FindingOptions::default()));
    for code in ["AUD101", "AUD102", "AUD305"] {
        assert!(!c.contains(code), "mlp_poly: {c:?}");
    }
    // A small dense layer in f32 is not "many tiny ops" and sorts nothing.
    let c = codes(&run("f32_matmul.onnx"));
    assert_eq!(c, BTreeSet::from(["AUD401"]));
}

#[test]
fn jax_mlp_reports_only_precision_advice() {
    // mlp_b1: f32 dense layers and a softmax; nothing else is wrong with it.
    let p = tpuport_testkit::fixtures("jax").join("mlp_b1/export.mlir");
    let f = run_at(&p, &FindingOptions::default());
    assert_eq!(codes(&f), BTreeSet::from(["AUD401", "AUD402"]), "{f:#?}");
    assert!(f.iter().all(|x| x.severity == Severity::Info));
    // bf16 encoder: no f32 advice.
    let p = tpuport_testkit::fixtures("jax").join("encoder_bf16/export.mlir");
    let c = codes(&run_at(&p, &FindingOptions::default()));
    assert!(!c.contains("AUD401"), "{c:?}");
}

#[test]
fn severity_rises_for_low_precision_and_thresholds_apply() {
    let f = run("softmax_bf16.mlir");
    let x = f.iter().find(|x| x.code == "AUD402").unwrap();
    assert_eq!(x.severity, Severity::Warning, "{x:?}");
    let f = run("softmax_norm.onnx");
    assert_eq!(f.iter().find(|x| x.code == "AUD402").unwrap().severity, Severity::Info);
    // Raising the threshold silences the sort finding; lowering the tiny-op count triggers it.
    let opts =
        FindingOptions { large_sort: 1 << 20, large_topk: 1 << 20, ..FindingOptions::default() };
    assert!(!codes(&run_at(&data("sort.mlir"), &opts)).contains("AUD301"));
    let opts = FindingOptions { tiny_min_ops: 1, ..FindingOptions::default() };
    assert!(codes(&run_at(&data("exp_log.onnx"), &opts)).contains("AUD501"));
}

#[test]
fn lowering_hook_reports_unlowered_onnx_ops() {
    fn no_relu(op: &str, _domain: &str, opset: i64) -> bool {
        assert!(opset > 0, "the model's opset reaches the hook");
        op != "Relu"
    }
    let opts = FindingOptions { onnx_lowering: Some(no_relu), ..FindingOptions::default() };
    let f = run_at(&data("batch_only.onnx"), &opts);
    let x = f.iter().find(|x| x.code == "AUD305").expect("AUD305 from the hook");
    assert_eq!(x.nodes, vec!["relu".to_owned()]);
}

#[test]
fn registry_is_complete_and_documented() {
    let reg = CodeDoc::all();
    let mut prev = "";
    for d in reg {
        assert!(d.code > prev, "codes sorted and unique: {}", d.code);
        prev = d.code;
        let doc = d.doc();
        for section in
            ["## What it finds", "## Why it hurts on TPU", "## What to do", "## References"]
        {
            assert!(doc.contains(section), "{}: missing {section}", d.code);
        }
        assert!(
            !d.summary().is_empty() && d.summary().ends_with('.'),
            "{}: {}",
            d.code,
            d.summary()
        );
        assert!(tpuport_testkit::repo_root().join(d.source).exists(), "{}", d.source);
        assert_eq!(CodeDoc::lookup(&d.code.to_ascii_lowercase()).map(|x| x.code), Some(d.code));
    }
    assert!(CodeDoc::lookup("TPU101").is_none());
    assert_eq!("warn".parse::<Severity>(), Ok(Severity::Warning));
    assert!("fatal".parse::<Severity>().is_err());
    assert_eq!(serde_json::to_value(Severity::Error).unwrap(), "error");
}

#[test]
fn shared_fixture_set_raises_only_advice() {
    // The generated JAX and small ONNX fixtures all compile and run on XLA: nothing above
    // `info` may fire on them (no false errors from sharding custom calls, shape-polymorphic
    // dynamic ops, Loop/If subgraphs or ONNX functions), and nothing panics.
    let mut paths = Vec::new();
    for e in std::fs::read_dir(tpuport_testkit::fixtures("jax")).unwrap() {
        let d = e.unwrap().path();
        for f in ["export.mlir", "jit.mlir"] {
            if d.join(f).exists() {
                paths.push(d.join(f));
            }
        }
    }
    for e in std::fs::read_dir(tpuport_testkit::fixtures("onnx_small")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "onnx") {
            paths.push(p);
        }
    }
    assert!(paths.len() >= 25, "fixture set incomplete: {}", paths.len());
    let bad: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = paths
            .iter()
            .map(|p| {
                s.spawn(move || {
                    let f = run_at(p, &FindingOptions::default());
                    let worse: Vec<_> =
                        f.iter().filter(|x| x.severity > Severity::Info).map(|x| x.code).collect();
                    (!worse.is_empty()).then(|| format!("{}: {worse:?}", p.display()))
                })
            })
            .collect();
        hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
    });
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn hostile_shapes_and_deep_nesting_do_not_panic() {
    use tpuport_model::{Graph, Model, ModelFormat, Node, Shape, TensorType, Value, ValueKind};
    fn node(op: &str, inputs: Vec<tpuport_model::ValueId>, out: tpuport_model::ValueId) -> Node {
        Node {
            name: op.to_lowercase(),
            op: op.into(),
            domain: String::new(),
            inputs: inputs.into_iter().map(Some).collect(),
            outputs: vec![out],
            attrs: vec![],
            subgraphs: vec![],
            location: None,
            scope: None,
        }
    }
    let huge =
        TensorType::new(tpuport_model::DType::F32, Shape::fixed(&[1 << 40, 1 << 40, 1 << 40]));
    let mut g = Graph::default();
    let x = g.add_value(Value {
        name: "x".into(),
        ty: huge.clone(),
        kind: ValueKind::Input,
        producer: None,
    });
    g.inputs.push(x);
    let mut prev = x;
    for op in ["ReduceSum", "MatMul", "Exp", "TopK", "CumSum", "Softmax"] {
        let y = g.add_value(Value {
            name: format!("{op}_out"),
            ty: huge.clone(),
            kind: ValueKind::Intermediate,
            producer: None,
        });
        let ins = if op == "MatMul" { vec![prev, prev] } else { vec![prev] };
        g.add_node(node(op, ins, y));
        prev = y;
    }
    g.outputs.push(prev);
    // A Loop nested 200 deep (past the walker's depth bound).
    let mut inner = Graph::default();
    for _ in 0..200 {
        let mut outer = Graph::default();
        let o = outer.add_value(Value {
            name: "o".into(),
            ty: TensorType::default(),
            kind: ValueKind::Intermediate,
            producer: None,
        });
        let mut n = node("Loop", vec![], o);
        n.subgraphs.push(("body".into(), inner));
        outer.add_node(n);
        inner = outer;
    }
    let mut m = Model::empty(ModelFormat::Onnx);
    m.graph = g;
    m.functions.push(inner);
    // AUD401 is left out here (it runs the cost pass); the whole audit on hostile shapes,
    // AUD401 included, is tests/audit_hostile.rs.
    let opts = FindingOptions { ignore: vec!["aud401".into()], ..FindingOptions::default() };
    let f = findings::check(&m, &opts);
    assert!(codes(&f).contains("AUD103"), "{:?}", codes(&f));
    assert!(!codes(&f).contains("AUD401"));
}

#[test]
fn ignore_skips_codes_and_families() {
    let all = codes(&run("softmax_bf16.mlir"));
    assert!(all.contains("AUD402"), "{all:?}");
    let opts = FindingOptions { ignore: vec!["AUD4".into()], ..FindingOptions::default() };
    let c = codes(&run_at(&data("softmax_bf16.mlir"), &opts));
    assert!(c.iter().all(|c| !c.starts_with("AUD4")), "{c:?}");
    let opts = FindingOptions { ignore: vec![String::new()], ..FindingOptions::default() };
    assert_eq!(codes(&run_at(&data("softmax_bf16.mlir"), &opts)), all);
}
