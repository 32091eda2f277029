//! Graph inputs that an op needs at lowering time: the typed [`LowerError::NeedsHostValue`]
//! names the operand, and [`lower_with_values`] lowers once the caller binds it; the bound
//! input stays a module argument and the module computes with the bound value.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod onnx_common;

use std::collections::HashMap;

use onnx_common::build::{G, f32s, i64s};
use tpuport_lower::LowerError;
use tpuport_lower::onnx::{ArgSource, LowerOptions, lower, lower_with_values};
use tpuport_model::DType;

/// y = Reshape(x, Concat(head, [3])): the target shape is computed from a graph input.
fn graph() -> G {
    let mut g = G::new(17);
    g.input("x", DType::F32, &[6])
        .input("head", DType::I64, &[1])
        .weight("tail", &i64s(&[1], &[3]))
        .node("Concat", &["head", "tail"], &["shape"], vec![("axis", tpuport_model::Attr::Int(0))])
        .node("Reshape", &["x", "shape"], &["y"], vec![])
        .output("y");
    g
}

#[test]
fn names_the_operand_then_lowers_with_the_bound_value() {
    let g = graph();
    let e = lower(&g.m, &LowerOptions::default()).unwrap_err();
    assert!(e.is_unsupported());
    let msg = e.to_string();
    let LowerError::NeedsHostValue { node, op, operand, value, .. } = e else { panic!("{e}") };
    assert_eq!((node.as_str(), op.as_str(), operand), ("n1_Reshape", "Reshape", 1));
    // the operand is computed from a graph input: the caller learns which value, not yet which
    // input; binding the input `head` folds the Concat at lowering time
    assert_eq!(value, "shape");
    assert!(msg.contains("(input 1) must be known at lowering time"), "{msg}");

    let head = i64s(&[1], &[2]);
    let low = lower_with_values(&g.m, &LowerOptions::default(), &[("head".into(), head.clone())])
        .unwrap_or_else(|e| panic!("{e}"));
    let inputs: Vec<&ArgSource> = low.args.iter().map(|a| &a.source).collect();
    assert_eq!(
        inputs,
        [&ArgSource::Input("x".into()), &ArgSource::Input("head".into())],
        "the bound input stays an argument"
    );
    assert_eq!(low.results[0].shape, [2, 3]);
    let x = f32s(&[6], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let map: HashMap<String, _> = [("x".to_owned(), x), ("head".to_owned(), head)].into();
    let y = onnx_common::run(&g.m, &low, &map).unwrap();
    assert_eq!((y[0].dtype, y[0].shape.clone()), (DType::F32, vec![2, 3]));
    assert_eq!(y[0].to_f64().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}
