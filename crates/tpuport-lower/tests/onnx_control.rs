//! Data-dependent control flow and recurrent-op errors on small hand-built graphs: `If` on a
//! runtime condition becomes `stablehlo.if`, `Loop` with a runtime condition or trip count
//! becomes `stablehlo.while`, and what a static lowering cannot express is refused with an
//! error naming the node and the reason. Values are checked against hand-computed results on
//! the CPU PJRT plugin.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp, reason = "tests")]

mod onnx_common;

use std::collections::HashMap;

use onnx_common::build::{G, f32s, i64s};
use tpuport_formats::ImportOptions;
use tpuport_lower::LowerError;
use tpuport_lower::onnx::{LowerOptions, Lowered, lower, lower_with_values};
use tpuport_model::{Attr, DType, Graph, HostTensor, Shape, TensorType, Value, ValueKind};

fn bools(v: bool) -> HostTensor {
    HostTensor::new(DType::Bool, vec![], vec![u8::from(v)]).unwrap()
}

/// Declares `name` in a subgraph as a value of the enclosing graph (subgraphs built here hold no
/// weights of their own: the builder's weight store belongs to the model it builds).
fn outer(g: &mut G, name: &str, dt: DType, shape: &[u64]) {
    g.m.graph.add_value(Value {
        name: name.into(),
        ty: TensorType::new(dt, Shape::fixed(shape)),
        kind: ValueKind::Outer,
        producer: None,
    });
}

/// Attaches `sub` to the last node as graph attribute `attr`.
fn attach(g: &mut G, attr: &str, sub: Graph) {
    let n = g.m.graph.nodes.last_mut().unwrap();
    n.attrs.push((attr.into(), Attr::Graph(n.subgraphs.len())));
    n.subgraphs.push((attr.into(), sub));
}

/// Infers shapes (as the importer does) and lowers.
fn lowered(g: &mut G, values: &[(String, HostTensor)]) -> Result<Lowered, LowerError> {
    tpuport_formats::onnx::infer_shapes(&mut g.m, &ImportOptions::default());
    lower_with_values(&g.m, &LowerOptions::default(), values)
}

fn run(g: &G, low: &Lowered, inputs: &[(&str, HostTensor)]) -> Vec<Vec<f64>> {
    let map: HashMap<String, HostTensor> =
        inputs.iter().map(|(n, t)| ((*n).to_owned(), t.clone())).collect();
    let out = onnx_common::run(&g.m, low, &map).unwrap_or_else(|e| panic!("{e}\n{}", low.mlir));
    out.iter().map(|t| t.to_f64().unwrap()).collect()
}

/// `x` doubled while `sum(x) < limit` (and at most `M` times when `M` is given).
fn doubling_loop(with_trip: bool) -> G {
    let mut body = G::new(17);
    body.input("i", DType::I64, &[]).input("c", DType::Bool, &[]).input("xin", DType::F32, &[3]);
    outer(&mut body, "limit", DType::F32, &[]);
    outer(&mut body, "two", DType::F32, &[]);
    body.node("Mul", &["xin", "two"], &["xo"], vec![])
        .node("ReduceSum", &["xo"], &["s"], vec![("keepdims", Attr::Int(0))])
        .node("Less", &["s", "limit"], &["co"], vec![])
        .output("co")
        .output("xo");
    let mut g = G::new(17);
    g.input("x", DType::F32, &[3]).input("limit", DType::F32, &[]).input("go", DType::Bool, &[]);
    g.weight("two", &f32s(&[], &[2.0]));
    if with_trip {
        g.input("m", DType::I64, &[]);
    }
    g.node("Loop", &[if with_trip { "m" } else { "" }, "go", "x"], &["y"], vec![]);
    attach(&mut g, "body", body.m.graph);
    g.output("y");
    g
}

#[test]
fn loop_with_a_data_dependent_condition_is_a_while() {
    let mut g = doubling_loop(false);
    let low = lowered(&mut g, &[]).unwrap();
    assert!(low.mlir.contains("\"stablehlo.while\""), "{}", low.mlir);
    let ones = f32s(&[3], &[1.0, 1.0, 1.0]);
    let lim = f32s(&[], &[20.0]);
    let inputs = [("x", ones.clone()), ("limit", lim.clone()), ("go", bools(true))];
    // sums 6, 12, 24: the third iteration ends the loop.
    assert_eq!(run(&g, &low, &inputs)[0], [8.0, 8.0, 8.0]);
    let inputs = [("x", ones), ("limit", lim), ("go", bools(false))];
    assert_eq!(
        run(&g, &low, &inputs)[0],
        [1.0, 1.0, 1.0],
        "a false initial condition runs 0 times"
    );
}

#[test]
fn loop_with_a_data_dependent_trip_count_is_a_while() {
    let mut g = doubling_loop(true);
    let low = lowered(&mut g, &[]).unwrap();
    assert!(low.mlir.contains("\"stablehlo.while\""), "{}", low.mlir);
    let ones = f32s(&[3], &[1.0, 1.0, 1.0]);
    for (m, want) in [(0, 1.0), (1, 2.0), (2, 4.0), (9, 8.0)] {
        let inputs = [
            ("x", ones.clone()),
            ("limit", f32s(&[], &[20.0])),
            ("go", bools(true)),
            ("m", i64s(&[], &[m])),
        ];
        assert_eq!(run(&g, &low, &inputs)[0], [want; 3], "M = {m}");
    }
}

#[test]
fn loop_carried_value_that_grows_is_refused() {
    let mut body = G::new(17);
    body.input("i", DType::I64, &[]).input("c", DType::Bool, &[]).input("xin", DType::F32, &[2]);
    body.node("Concat", &["xin", "xin"], &["xo"], vec![("axis", Attr::Int(0))])
        .node("Identity", &["c"], &["co"], vec![])
        .output("co")
        .output("xo");
    let mut g = G::new(17);
    g.input("x", DType::F32, &[2]).input("m", DType::I64, &[]);
    g.node("Loop", &["m", "", "x"], &["y"], vec![]);
    attach(&mut g, "body", body.m.graph);
    g.output("y");
    let e = lowered(&mut g, &[]).unwrap_err().to_string();
    assert!(e.contains("loop-carried value `xo`") && e.contains("static shapes"), "{e}");
}

/// `If(c)`: then `x + 1`, else `-x` (or `concat(x, x)` with `mismatched`).
fn branch(mismatched: bool) -> G {
    let mut then_b = G::new(17);
    outer(&mut then_b, "x", DType::F32, &[2]);
    outer(&mut then_b, "one", DType::F32, &[]);
    then_b.node("Add", &["x", "one"], &["t"], vec![]).output("t");
    let mut else_b = G::new(17);
    outer(&mut else_b, "x", DType::F32, &[2]);
    if mismatched {
        else_b.node("Concat", &["x", "x"], &["e"], vec![("axis", Attr::Int(0))]);
    } else {
        else_b.node("Neg", &["x"], &["e"], vec![]);
    }
    else_b.output("e");
    let mut g = G::new(17);
    g.input("c", DType::Bool, &[]).input("x", DType::F32, &[2]).weight("one", &f32s(&[], &[1.0]));
    g.node("If", &["c"], &["y"], vec![]);
    attach(&mut g, "then_branch", then_b.m.graph);
    attach(&mut g, "else_branch", else_b.m.graph);
    g.output("y");
    g
}

#[test]
fn if_on_a_data_dependent_condition_is_a_stablehlo_if() {
    let mut g = branch(false);
    let low = lowered(&mut g, &[]).unwrap();
    assert!(low.mlir.contains("\"stablehlo.if\""), "{}", low.mlir);
    let x = f32s(&[2], &[1.5, -2.0]);
    assert_eq!(run(&g, &low, &[("c", bools(true)), ("x", x.clone())])[0], [2.5, -1.0]);
    assert_eq!(run(&g, &low, &[("c", bools(false)), ("x", x)])[0], [-1.5, 2.0]);
}

#[test]
fn if_whose_branches_differ_in_shape_needs_the_condition_bound() {
    let mut g = branch(true);
    let e = lowered(&mut g, &[]).unwrap_err();
    // The typed error a caller acts on: bind the value it names and lower again.
    assert!(
        matches!(&e, LowerError::NeedsHostValue { what, operand: 0, value, .. }
            if what.contains("different or unknown shapes") && value == "c"),
        "{e:?}"
    );
    // With the condition bound, only the taken branch is lowered (the module keeps `c`).
    let low = lowered(&mut g, &[("c".to_owned(), bools(false))]).unwrap();
    assert!(!low.mlir.contains("\"stablehlo.if\""));
    let x = f32s(&[2], &[1.5, -2.0]);
    assert_eq!(run(&g, &low, &[("c", bools(false)), ("x", x)])[0], [1.5, -2.0, 1.5, -2.0]);
}

/// A one-node LSTM graph with `W` of `w_rows` rows.
fn lstm(w_rows: u64, attrs: Vec<(&str, Attr)>) -> G {
    let mut g = G::new(17);
    let (i, h) = (3, 2);
    g.input("x", DType::F32, &[4, 1, i])
        .weight("w", &f32s(&[1, w_rows, i], &vec![0.1; (w_rows * i) as usize]))
        .weight("r", &f32s(&[1, 4 * h, h], &vec![0.1; (4 * h * h) as usize]))
        .node("LSTM", &["x", "w", "r"], &["y", "yh"], attrs)
        .output("y")
        .output("yh");
    g
}

#[test]
fn recurrent_ops_refuse_bad_weights_and_attributes() {
    let e = lower(&lstm(7, vec![]).m, &LowerOptions::default()).unwrap_err();
    assert!(matches!(e, LowerError::Invalid(_)) && e.to_string().contains("do not fit"), "{e}");
    let acts = Attr::Strs(vec!["Sigmoid".into(), "Gaussian".into(), "Tanh".into()]);
    let e = lower(&lstm(8, vec![("activations", acts)]).m, &LowerOptions::default()).unwrap_err();
    assert!(e.to_string().contains("activation `Gaussian`"), "{e}");
    let acts = Attr::Strs(vec!["Sigmoid".into(), "Tanh".into()]);
    let e = lower(&lstm(8, vec![("activations", acts)]).m, &LowerOptions::default()).unwrap_err();
    assert!(e.to_string().contains("2 activations given; 3 expected"), "{e}");
    let e = lower(
        &lstm(8, vec![("direction", Attr::Str("sideways".into()))]).m,
        &LowerOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("direction `sideways`"), "{e}");
    let e = lower(&lstm(8, vec![("hidden_size", Attr::Int(3))]).m, &LowerOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("hidden_size 3"), "{e}");
}

#[test]
fn lstm_with_constant_weights_matches_a_hand_computed_step() {
    // W = R = 0.1 everywhere, no bias, x = 1: every gate of step 1 has pre-activation 0.3.
    let low = lower(&lstm(8, vec![]).m, &LowerOptions::default()).unwrap();
    let g = lstm(8, vec![]);
    let x = f32s(&[4, 1, 3], &[1.0; 12]);
    let out = run(&g, &low, &[("x", x)]);
    let s = |v: f64| 1.0 / (1.0 + (-v).exp());
    let c1 = s(0.3) * 0.3f64.tanh();
    let h1 = s(0.3) * c1.tanh();
    assert!((out[0][0] - h1).abs() < 1e-6, "{} vs {h1}", out[0][0]);
    assert_eq!(out[0].len(), 4 * 2);
    assert_eq!(out[1], out[0][6..8], "Y_h is the last step of Y");
}

#[test]
fn recurrent_output_shapes_are_inferred() {
    let shape_of = |g: &G, name: &str| {
        let v = g.m.graph.values.iter().find(|v| v.name == name).unwrap();
        v.ty.shape.as_ref().and_then(Shape::as_fixed)
    };
    // layout 1, bidirectional: X [batch 5, seq 4, input 3], hidden 2.
    let mut g = G::new(17);
    g.input("x", DType::F32, &[5, 4, 3])
        .weight("w", &f32s(&[2, 8, 3], &[0.0; 48]))
        .weight("r", &f32s(&[2, 8, 2], &[0.0; 32]))
        .node(
            "LSTM",
            &["x", "w", "r"],
            &["y", "yh", "yc"],
            vec![("layout", Attr::Int(1)), ("direction", Attr::Str("bidirectional".into()))],
        )
        .output("y");
    tpuport_formats::onnx::infer_shapes(&mut g.m, &ImportOptions::default());
    assert_eq!(shape_of(&g, "y"), Some(vec![5, 4, 2, 2]));
    assert_eq!(shape_of(&g, "yh"), Some(vec![5, 2, 2]));
    assert_eq!(shape_of(&g, "yc"), Some(vec![5, 2, 2]));
    // layout 0, one direction, hidden size from the attribute.
    let mut g = G::new(17);
    g.input("x", DType::F32, &[4, 5, 3])
        .weight("w", &f32s(&[1, 6, 3], &[0.0; 18]))
        .weight("r", &f32s(&[1, 6, 2], &[0.0; 12]))
        .node("GRU", &["x", "w", "r"], &["y", "yh"], vec![("hidden_size", Attr::Int(2))])
        .output("y");
    tpuport_formats::onnx::infer_shapes(&mut g.m, &ImportOptions::default());
    assert_eq!(shape_of(&g, "y"), Some(vec![4, 1, 5, 2]));
    assert_eq!(shape_of(&g, "yh"), Some(vec![1, 5, 2]));
}

#[test]
fn loop_with_only_a_trip_count_and_a_scan_output() {
    // Loop(M) with neither a condition nor loop-carried values (trailing inputs omitted).
    let mut body = G::new(17);
    body.input("i", DType::I64, &[]).input("c", DType::Bool, &[]);
    outer(&mut body, "two", DType::I64, &[]);
    body.node("Mul", &["i", "two"], &["s"], vec![])
        .node("Identity", &["c"], &["co"], vec![])
        .output("co")
        .output("s");
    let mut g = G::new(17);
    g.input("x", DType::F32, &[1]).weight("m", &i64s(&[], &[3])).weight("two", &i64s(&[], &[2]));
    g.node("Loop", &["m"], &["s_all"], vec![]);
    attach(&mut g, "body", body.m.graph);
    g.node("Identity", &["x"], &["xo"], vec![]).output("s_all").output("xo");
    let low = lowered(&mut g, &[]).unwrap();
    assert_eq!(run(&g, &low, &[("x", f32s(&[1], &[0.5]))])[0], [0.0, 2.0, 4.0]);
}
