//! Per-family lowering tests on tiny graphs: each is lowered, compiled and run on the CPU PJRT
//! plugin and compared with hand-computed values.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp, reason = "tests")]

mod onnx_common;

use std::collections::HashMap;

use onnx_common::build::{G, f32s, i64s};
use tpuport_lower::LowerError;
use tpuport_lower::onnx::{ComputeType, LowerOptions, Support, lower, support};
use tpuport_model::{Attr, DType, HostTensor, Shape};

fn run_with(g: &G, opts: &LowerOptions, inputs: &[(&str, HostTensor)]) -> Vec<HostTensor> {
    let low = lower(&g.m, opts).unwrap_or_else(|e| panic!("{e}"));
    let map: HashMap<String, HostTensor> =
        inputs.iter().map(|(n, t)| ((*n).to_owned(), t.clone())).collect();
    onnx_common::run(&g.m, &low, &map).unwrap_or_else(|e| panic!("{e}\n{}", low.mlir))
}

fn run(g: &G, inputs: &[(&str, HostTensor)]) -> Vec<HostTensor> {
    run_with(g, &LowerOptions::default(), inputs)
}

fn vals(t: &HostTensor) -> Vec<f64> {
    t.to_f64().unwrap()
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (a, b) in got.iter().zip(want) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{got:?} vs {want:?}");
    }
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

#[test]
fn elementwise_broadcast_activation_compare_where() {
    let mut g2 = G::new(17);
    g2.input("a", DType::F32, &[2, 3])
        .weight("b", &f32s(&[3], &[1.0, -2.0, 0.5]))
        .weight("lo", &f32s(&[], &[-1.0]))
        .weight("hi", &f32s(&[], &[2.0]));
    g2.node("Add", &["a", "b"], &["s"], vec![])
        .node("Relu", &["s"], &["r"], vec![])
        .node("Greater", &["a", "b"], &["gt"], vec![])
        .node("Where", &["gt", "a", "b"], &["w"], vec![])
        .node("Clip", &["a", "lo", "hi"], &["c"], vec![])
        .output("r")
        .output("gt")
        .output("w")
        .output("c");
    let a = [0.0f32, -3.0, 1.0, 4.0, -1.5, 0.25];
    let out = run(&g2, &[("a", f32s(&[2, 3], &a))]);
    close(&vals(&out[0]), &[1.0, 0.0, 1.5, 5.0, 0.0, 0.75]);
    assert_eq!(out[1].dtype, DType::Bool);
    close(&vals(&out[1]), &[0.0, 0.0, 1.0, 1.0, 1.0, 0.0]);
    close(&vals(&out[2]), &[1.0, -2.0, 1.0, 4.0, -1.5, 0.5]);
    close(&vals(&out[3]), &[0.0, -1.0, 1.0, 2.0, -1.0, 0.25]);
}

#[test]
fn integer_mod_is_python_style_and_cast_truncates() {
    let mut g = G::new(17);
    g.input("a", DType::I64, &[4])
        .input("b", DType::I64, &[4])
        .input("f", DType::F32, &[3])
        .node("Mod", &["a", "b"], &["m"], vec![])
        .node("Cast", &["f"], &["c"], vec![("to", Attr::Int(6))])
        .output("m")
        .output("c");
    let out = run(
        &g,
        &[
            ("a", i64s(&[4], &[7, -7, 7, -7])),
            ("b", i64s(&[4], &[3, 3, -3, -3])),
            ("f", f32s(&[3], &[1.7, -1.7, 2.0])),
        ],
    );
    close(&vals(&out[0]), &[1.0, 2.0, -2.0, -1.0]);
    assert_eq!(out[1].dtype, DType::I32);
    close(&vals(&out[1]), &[1.0, -1.0, 2.0]);
}

#[test]
fn matmul_broadcasts_batches_and_gemm_transposes() {
    let mut g = G::new(17);
    g.input("a", DType::F32, &[2, 1, 2, 3])
        .input("b", DType::F32, &[3, 3, 2])
        .input("x", DType::F32, &[2, 3])
        .weight("w", &f32s(&[2, 3], &[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]))
        .weight("c", &f32s(&[2], &[10.0, 20.0]))
        .node("MatMul", &["a", "b"], &["y"], vec![])
        .node(
            "Gemm",
            &["x", "w", "c"],
            &["z"],
            vec![("transB", Attr::Int(1)), ("alpha", Attr::Float(2.0))],
        )
        .output("y")
        .output("z");
    let a: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let b: Vec<f32> = (0..18).map(|v| (v % 5) as f32 - 2.0).collect();
    let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let out = run(
        &g,
        &[("a", f32s(&[2, 1, 2, 3], &a)), ("b", f32s(&[3, 3, 2], &b)), ("x", f32s(&[2, 3], &x))],
    );
    assert_eq!(out[0].shape, vec![2, 3, 2, 2]);
    let mut want = Vec::new();
    for i in 0..2 {
        for j in 0..3 {
            for m in 0..2 {
                for n in 0..2 {
                    let s: f32 = (0..3).map(|k| a[i * 6 + m * 3 + k] * b[j * 6 + k * 2 + n]).sum();
                    want.push(f64::from(s));
                }
            }
        }
    }
    close(&vals(&out[0]), &want);
    // x @ w^T * 2 + c: rows (1+3, 2), (4+6, 5).
    close(&vals(&out[1]), &[18.0, 24.0, 30.0, 30.0]);
}

#[test]
fn conv_pool_and_global_average() {
    let mut g = G::new(17);
    g.input("x", DType::F32, &[1, 1, 4, 4])
        .weight("w", &f32s(&[2, 1, 3, 3], &[1.0; 18]))
        .weight("bias", &f32s(&[2], &[0.0, 100.0]))
        .node("Conv", &["x", "w", "bias"], &["c"], vec![("pads", ints(&[1, 1, 1, 1]))])
        .node(
            "MaxPool",
            &["x"],
            &["mp"],
            vec![("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))],
        )
        .node(
            "AveragePool",
            &["x"],
            &["ap"],
            vec![
                ("kernel_shape", ints(&[3, 3])),
                ("pads", ints(&[1, 1, 1, 1])),
                ("strides", ints(&[3, 3])),
            ],
        )
        .node("GlobalAveragePool", &["x"], &["gp"], vec![])
        .output("c")
        .output("mp")
        .output("ap")
        .output("gp");
    let out = run(&g, &[("x", f32s(&[1, 1, 4, 4], &[1.0; 16]))]);
    assert_eq!(out[0].shape, vec![1, 2, 4, 4]);
    let counts = [4.0, 6.0, 6.0, 4.0, 6.0, 9.0, 9.0, 6.0, 6.0, 9.0, 9.0, 6.0, 4.0, 6.0, 6.0, 4.0];
    let mut want: Vec<f64> = counts.to_vec();
    want.extend(counts.iter().map(|c| c + 100.0));
    close(&vals(&out[0]), &want);
    assert_eq!(out[1].shape, vec![1, 1, 2, 2]);
    close(&vals(&out[1]), &[1.0; 4]);
    // count_include_pad=0: every window averages ones only.
    close(&vals(&out[2]), &[1.0; 4]);
    assert_eq!(out[3].shape, vec![1, 1, 1, 1]);
    close(&vals(&out[3]), &[1.0]);
}

#[test]
fn softmax_layernorm_reduce_argmax() {
    let mut g = G::new(18);
    g.input("x", DType::F32, &[2, 3])
        .weight("axes", &i64s(&[1], &[1]))
        .weight("scale", &f32s(&[3], &[1.0, 2.0, 1.0]))
        .node("Softmax", &["x"], &["sm"], vec![])
        .node("LayerNormalization", &["x", "scale"], &["ln"], vec![("epsilon", Attr::Float(0.0))])
        .node("ReduceSum", &["x", "axes"], &["rs"], vec![("keepdims", Attr::Int(0))])
        .node("ArgMax", &["x"], &["am"], vec![("axis", Attr::Int(1))])
        .output("sm")
        .output("ln")
        .output("rs")
        .output("am");
    let x = [1.0f32, 2.0, 3.0, 3.0, 3.0, 0.0];
    let out = run(&g, &[("x", f32s(&[2, 3], &x))]);
    let e = |v: f64| v.exp();
    let s0 = e(1.0) + e(2.0) + e(3.0);
    let s1 = 2.0 * e(3.0) + 1.0;
    close(
        &vals(&out[0]),
        &[e(1.0) / s0, e(2.0) / s0, e(3.0) / s0, e(3.0) / s1, e(3.0) / s1, 1.0 / s1],
    );
    let sd0 = (2.0f64 / 3.0).sqrt();
    let sd1 = 2f64.sqrt();
    close(&vals(&out[1]), &[-1.0 / sd0, 0.0, 1.0 / sd0, 1.0 / sd1, 2.0 / sd1, -2.0 / sd1]);
    close(&vals(&out[2]), &[6.0, 6.0]);
    assert_eq!((out[3].dtype, out[3].shape.clone()), (DType::I64, vec![2, 1]));
    close(&vals(&out[3]), &[2.0, 0.0]);
}

#[test]
fn shape_chain_folds_on_the_host() {
    // torch-style Reshape target: Shape -> Gather -> Unsqueeze -> Concat.
    let mut g = G::new(17);
    g.input("x", DType::F32, &[2, 3, 4])
        .weight("i0", &i64s(&[], &[0]))
        .weight("ax", &i64s(&[1], &[0]))
        .weight("m1", &i64s(&[1], &[-1]))
        .node("Shape", &["x"], &["s"], vec![])
        .node("Gather", &["s", "i0"], &["b"], vec![])
        .node("Unsqueeze", &["b", "ax"], &["bu"], vec![])
        .node("Concat", &["bu", "m1"], &["tgt"], vec![("axis", Attr::Int(0))])
        .node("Reshape", &["x", "tgt"], &["y"], vec![])
        .node("Transpose", &["y"], &["t"], vec![("perm", ints(&[1, 0]))])
        .output("t");
    let low = lower(&g.m, &LowerOptions::default()).unwrap();
    assert!(!low.mlir.contains("gather"), "shape chain should fold:\n{}", low.mlir);
    let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
    let out = run(&g, &[("x", f32s(&[2, 3, 4], &x))]);
    assert_eq!(out[0].shape, vec![12, 2]);
    let want: Vec<f64> = (0..12).flat_map(|i| [f64::from(i), f64::from(i + 12)]).collect();
    close(&vals(&out[0]), &want);
}

#[test]
fn slice_split_pad_expand_tile() {
    let mut g = G::new(18);
    g.input("x", DType::F32, &[2, 4])
        .weight("st", &i64s(&[1], &[-1]))
        .weight("en", &i64s(&[1], &[i64::MIN]))
        .weight("ax", &i64s(&[1], &[1]))
        .weight("sp", &i64s(&[1], &[-2]))
        .weight("pads", &i64s(&[4], &[0, 1, 0, 2]))
        .weight("shape", &i64s(&[3], &[2, 2, 4]))
        .weight("reps", &i64s(&[2], &[1, 2]))
        .node("Slice", &["x", "st", "en", "ax", "sp"], &["sl"], vec![])
        .node(
            "Split",
            &["x"],
            &["p0", "p1"],
            vec![("axis", Attr::Int(1)), ("num_outputs", Attr::Int(2))],
        )
        .node("Pad", &["x", "pads"], &["pd"], vec![("mode", Attr::Str("reflect".into()))])
        .node("Expand", &["x", "shape"], &["ex"], vec![])
        .node("Tile", &["x", "reps"], &["tl"], vec![])
        .output("sl")
        .output("p1")
        .output("pd")
        .output("ex")
        .output("tl");
    let x = [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
    let out = run(&g, &[("x", f32s(&[2, 4], &x))]);
    close(&vals(&out[0]), &[3.0, 1.0, 7.0, 5.0]);
    close(&vals(&out[1]), &[2.0, 3.0, 6.0, 7.0]);
    assert_eq!(out[2].shape, vec![2, 7]);
    close(&vals(&out[2]), &[1.0, 0.0, 1.0, 2.0, 3.0, 2.0, 1.0, 5.0, 4.0, 5.0, 6.0, 7.0, 6.0, 5.0]);
    assert_eq!(out[3].shape, vec![2, 2, 4]);
    assert_eq!(out[4].shape, vec![2, 8]);
    close(&vals(&out[4])[..8], &[0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn gather_gathernd_scatternd() {
    let mut g = G::new(17);
    g.input("x", DType::F32, &[2, 3])
        .input("idx", DType::I64, &[2])
        .weight("nd", &i64s(&[2, 2], &[1, 2, 0, 0]))
        .weight("si", &i64s(&[1, 1], &[1]))
        .weight("su", &f32s(&[1, 3], &[9.0, 9.0, 9.0]))
        .node("Gather", &["x", "idx"], &["g"], vec![("axis", Attr::Int(1))])
        .node("GatherND", &["x", "nd"], &["gn"], vec![])
        .node("ScatterND", &["x", "si", "su"], &["sn"], vec![])
        .output("g")
        .output("gn")
        .output("sn");
    let x = [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0];
    let out = run(&g, &[("x", f32s(&[2, 3], &x)), ("idx", i64s(&[2], &[-1, 0]))]);
    close(&vals(&out[0]), &[2.0, 0.0, 5.0, 3.0]);
    close(&vals(&out[1]), &[5.0, 0.0]);
    close(&vals(&out[2]), &[0.0, 1.0, 2.0, 9.0, 9.0, 9.0]);
}

#[test]
fn exposed_values_follow_the_outputs() {
    let mut g = G::new(17);
    g.input("x", DType::F32, &[3])
        .node("Neg", &["x"], &["n"], vec![])
        .node("Exp", &["n"], &["y"], vec![])
        .output("y");
    let opts = LowerOptions { expose: vec!["n".into()], ..LowerOptions::default() };
    let low = lower(&g.m, &opts).unwrap();
    assert_eq!(low.results.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["y", "n"]);
    let out = run_with(&g, &opts, &[("x", f32s(&[3], &[0.0, 1.0, 2.0]))]);
    close(&vals(&out[1]), &[0.0, -1.0, -2.0]);
    let bad = LowerOptions { expose: vec!["nope".into()], ..LowerOptions::default() };
    assert!(matches!(lower(&g.m, &bad), Err(LowerError::Invalid(m)) if m.contains("nope")));
}

#[test]
fn bf16_weights_and_compute_stay_close_to_f32() {
    let mut g = G::new(17);
    let w: Vec<f32> = (0..128).map(|v| (v as f32 * 0.37).sin()).collect();
    g.input("x", DType::F32, &[4, 8])
        .weight("w", &f32s(&[8, 16], &w))
        .node("MatMul", &["x", "w"], &["y"], vec![])
        .node("ReduceMean", &["y"], &["m"], vec![("axes", ints(&[1]))])
        .output("y")
        .output("m");
    let x: Vec<f32> = (0..32).map(|v| (v as f32 * 0.11).cos()).collect();
    let inputs = [("x", f32s(&[4, 8], &x))];
    let f = run(&g, &inputs);
    let opts = LowerOptions { compute: ComputeType::Bf16, ..LowerOptions::default() };
    let low = lower(&g.m, &opts).unwrap();
    assert!(low.args.iter().any(|a| a.dtype == DType::BF16), "weights become bf16 arguments");
    assert!(low.mlir.contains("-> tensor<4x16xf32>"), "dot accumulates in f32:\n{}", low.mlir);
    let b = run_with(&g, &opts, &inputs);
    assert_eq!(b[0].dtype, DType::F32, "outputs convert back to the model's type");
    let err = onnx_common::rel_err(&b[0], &f[0]);
    assert!(err < 2e-2 && err > 0.0, "bf16 error {err}");
}

#[test]
fn unsupported_op_names_node_op_and_opset() {
    let mut g = G::new(17);
    g.input("x", DType::F32, &[3]).node("Frobnicate", &["x"], &["y"], vec![]).output("y");
    let e = lower(&g.m, &LowerOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, LowerError::Unsupported { opset: 17, .. }), "{msg}");
    assert!(
        msg.contains("n0_Frobnicate") && msg.contains("Frobnicate") && msg.contains("opset 17"),
        "{msg}"
    );
    assert_eq!(support("Frobnicate", "", 17), Support::Unsupported);
    assert!(matches!(support("Conv", "", 17), Support::Supported { family: "conv_pool", .. }));
    assert!(matches!(support("LayerNormalization", "", 13), Support::OldOpset { since: 17 }));
}

#[test]
fn symbolic_input_is_a_clear_error() {
    let mut g = G::new(17);
    g.input_shape("x", DType::F32, Shape::parse_dims("batchx3"))
        .node("Relu", &["x"], &["y"], vec![])
        .output("y");
    let msg = lower(&g.m, &LowerOptions::default()).unwrap_err().to_string();
    assert!(msg.contains("`x`") && msg.contains("--batch"), "{msg}");
}
