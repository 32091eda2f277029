//! StableHLO rewrites: structure of the emulated / retyped / exposed modules, and that every
//! printed module reads back. Their numerics are checked end to end through PJRT in
//! `crates/tpuport/tests/validate_cli.rs`.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::Limits;
use tpuport_formats::stablehlo::{parse_text, print_model};
use tpuport_lower::rewrite::{MatmulPrecision, emulate_matmul, expose, retype};
use tpuport_model::{DType, Model};

const MODULE: &str = r#"
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<3x2xbf16>) -> (tensor<4x3xf32> {jax.result_info = "a"}, tensor<4x2xbf16> {jax.result_info = "b"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("jit(f)/dot_general"("m.py":3:4))
    %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<4x8xf32>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %3 = stablehlo.convert %2 : (tensor<4x3xf32>) -> tensor<4x3xbf16>
    %4 = stablehlo.dot_general %3, %arg2, contracting_dims = [1] x [0] : (tensor<4x3xbf16>, tensor<3x2xbf16>) -> tensor<4x2xbf16>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<4x2xbf16>
    %6 = stablehlo.add %4, %5 : tensor<4x2xbf16>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %7 = stablehlo.reduce(%6 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<4x2xbf16>, tensor<bf16>) -> tensor<4xbf16>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<4xbf16>) -> tensor<4x2xbf16>
    return %2, %8 : tensor<4x3xf32>, tensor<4x2xbf16>
  }
}
"#;

fn parse(text: &str) -> Model {
    parse_text(Path::new("test.mlir"), text, &Limits::default()).unwrap()
}

fn count(m: &Model, op: &str) -> usize {
    m.graph.walk_nodes().filter(|n| n.op == op).count()
}

/// Prints and reads back; returns the re-read model.
fn round_trip(m: &Model) -> (String, Model) {
    let text = print_model(m).unwrap();
    let back = parse_text(Path::new("printed.mlir"), &text, &Limits::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, back)
}

#[test]
fn default_rounds_each_f32_operand_once_and_honours_precision_config() {
    let mut m = parse(MODULE);
    let s = emulate_matmul(&mut m, MatmulPrecision::Default).unwrap();
    // %0 and %2 at DEFAULT, %1 raised to HIGHEST by its precision_config, %4 is bf16
    assert_eq!((s.default, s.high, s.highest, s.raised_by_precision_config), (2, 0, 1, 1));
    assert_eq!(s.skipped.len(), 1, "{:?}", s.skipped);
    assert!(s.skipped[0].contains("bf16"), "{:?}", s.skipped);
    let (text, back) = round_trip(&m);
    // DEFAULT: 2 roundings per op; HIGHEST: 3 parts per operand, 6 products, 5 adds
    assert_eq!(count(&back, "stablehlo.reduce_precision"), 2 * 2 + 2 * 3, "{text}");
    assert_eq!(count(&back, "stablehlo.dot_general"), 2 + 6 + 1);
    assert_eq!(count(&back, "stablehlo.subtract"), 2 * 2);
    assert!(text.contains("exponent_bits = 8 : i32") && text.contains("mantissa_bits = 7 : i32"));
    // new ops keep the location of the op they serve
    let located = back
        .graph
        .nodes
        .iter()
        .filter(|n| n.op == "stablehlo.reduce_precision")
        .filter(|n| n.location.as_deref().is_some_and(|l| l.contains("m.py")))
        .count();
    assert_eq!(located, 2);
    // the signature is unchanged
    assert_eq!(back.graph.inputs.len(), 3);
    assert_eq!(back.graph.outputs.len(), 2);
}

#[test]
fn high_and_highest_use_three_and_six_passes() {
    for (level, passes) in [(MatmulPrecision::High, 3), (MatmulPrecision::Highest, 6)] {
        let mut m = parse(MODULE);
        let s = emulate_matmul(&mut m, level).unwrap();
        assert_eq!(level.passes(), passes);
        let (_, back) = round_trip(&m);
        let emulated = s.default + s.high + s.highest;
        assert_eq!(emulated, 3);
        // the HIGHEST-configured op always has 6 passes
        let dots = count(&back, "stablehlo.dot_general");
        assert_eq!(dots, 2 * passes + 6 + 1, "{level:?}");
    }
    assert_eq!(
        MatmulPrecision::from_config("[#stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>]"),
        Some(MatmulPrecision::High)
    );
    assert_eq!(
        MatmulPrecision::from_config("[#stablehlo<precision HIGHEST>]"),
        Some(MatmulPrecision::Highest)
    );
    assert_eq!(MatmulPrecision::from_config("{}"), None);
}

#[test]
fn retype_promotes_internals_and_keeps_the_arguments() {
    let mut m = parse(MODULE);
    let n = retype(&mut m, &[DType::BF16], DType::F32).unwrap();
    assert!(n > 5, "{n}");
    let (text, back) = round_trip(&m);
    let main = text.lines().find(|l| l.contains("function_type")).unwrap();
    // arguments as before (the bf16 one converted on entry), results now f32
    assert!(main.contains("tensor<3x2xbf16>) -> (tensor<4x3xf32>, tensor<4x2xf32>)"), "{main}");
    // bf16 survives only in the signature, the block argument, its entry convert, and the two
    // constants' literals with their converts
    let bf16_lines = text.lines().filter(|l| l.contains("bf16")).count();
    assert_eq!(bf16_lines, 1 + 1 + 1 + 2 + 2, "{text}");
    let reduce = back.graph.nodes.iter().find(|n| n.op == "stablehlo.reduce").unwrap();
    let region = &reduce.subgraphs[0].1;
    assert!(region.values.iter().all(|v| v.ty.dtype == Some(DType::F32)));

    // the other direction: the whole model in bf16
    let mut m = parse(MODULE);
    retype(&mut m, &[DType::F32], DType::BF16).unwrap();
    let (text, _) = round_trip(&m);
    let main = text.lines().find(|l| l.contains("function_type")).unwrap();
    assert!(main.contains("(tensor<4x8xf32>, tensor<8x3xf32>, tensor<3x2xbf16>) -> (tensor<4x3xbf16>, tensor<4x2xbf16>)"), "{main}");
}

#[test]
fn retype_refuses_bitcasts() {
    let text = r"
func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xi32> {
  %0 = stablehlo.bitcast_convert %arg0 : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}";
    let mut m = parse(text);
    let e = retype(&mut m, &[DType::F32], DType::BF16).unwrap_err();
    assert!(e.to_string().contains("bitcast_convert"), "{e}");
}

#[test]
fn expose_returns_intermediates_in_order() {
    let mut m = parse(MODULE);
    let ex = expose(&mut m, None).unwrap();
    // every op result except constants: %0..%8 (9 values)
    let names: Vec<&str> = ex.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["%0", "%1", "%2", "%3", "%4", "%5", "%6", "%7", "%8"]);
    assert_eq!(ex[0].result, 2);
    assert_eq!(ex[0].location.as_deref(), Some("\"jit(f)/dot_general\"(\"m.py\":3:4)"));
    assert_eq!((ex[7].dtype, ex[7].shape.as_slice()), (DType::BF16, &[4u64][..]));
    let (_, back) = round_trip(&m);
    assert_eq!(back.graph.outputs.len(), 2 + 9);
    // exposing, then emulating, keeps the exposed values' positions
    let s = emulate_matmul(&mut m, MatmulPrecision::High).unwrap();
    assert_eq!(s.high, 2);
    let (_, back) = round_trip(&m);
    assert_eq!(back.graph.outputs.len(), 2 + 9);

    let mut m = parse(MODULE);
    let ex = expose(&mut m, Some(&["1".to_owned(), "%6".to_owned()])).unwrap();
    assert_eq!(ex.iter().map(|e| e.result).collect::<Vec<_>>(), [2, 3]);
    let e = expose(&mut parse(MODULE), Some(&["%nope".to_owned()])).unwrap_err();
    assert!(e.to_string().contains("%nope"), "{e}");
}

#[test]
fn jax_fixtures_emulate_and_print() {
    let jax = tpuport_testkit::fixtures("jax");
    for name in ["mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16"] {
        for file in ["jit.mlir", "export.mlir"] {
            let path = jax.join(name).join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let mut m = parse_text(&path, &text, &Limits::default()).unwrap();
            let before = count(&m, "stablehlo.dot_general") + count(&m, "stablehlo.convolution");
            expose(&mut m, None).unwrap();
            let s = emulate_matmul(&mut m, MatmulPrecision::Highest).unwrap();
            retype(&mut m, &[DType::BF16], DType::F32).unwrap();
            let (_, back) = round_trip(&m);
            let after =
                count(&back, "stablehlo.dot_general") + count(&back, "stablehlo.convolution");
            assert_eq!(after, before + 5 * s.highest, "{name}/{file}");
            if name == "encoder_bf16" {
                assert_eq!(s.highest, 0, "bf16 matmuls are not emulated");
            } else {
                assert!(s.highest >= 2 && s.skipped.is_empty(), "{name}/{file}: {s:?}");
            }
        }
    }
}

#[test]
fn unshard_drops_annotations_and_refuses_manual_programs() {
    use tpuport_lower::rewrite::unshard;
    let jax = tpuport_testkit::fixtures("jax");
    for name in
        ["mlp_sharded8_dp", "mlp_sharded8_tp", "mlp_sharded8_dp_gspmd", "mlp_sharded8_tp_gspmd"]
    {
        let path = jax.join(name).join("jit.mlir");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("sharding"), "{name}");
        let mut m = parse_text(&path, &text, &Limits::default()).unwrap();
        let n = unshard(&mut m).unwrap();
        assert!(n >= 6, "{name}: {n}");
        let (printed, back) = round_trip(&m);
        assert!(
            !printed.contains("sharding") && !printed.contains("sdy.mesh"),
            "{name}\n{printed}"
        );
        assert!(printed.contains("mhlo.num_partitions = 1 : i32"), "{name}");
        assert_eq!(back.graph.inputs.len(), 5);
    }
    let manual = r#"
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.all_reduce"(%arg0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;
    let e = unshard(&mut parse(manual)).unwrap_err();
    assert!(
        e.to_string().contains("stablehlo.all_reduce")
            && e.to_string().contains("manually partitioned"),
        "{e}"
    );
}

#[test]
fn plain_dot_is_emulated_too() {
    let text = r#"
func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %0 = "stablehlo.dot"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}"#;
    let mut m = parse(text);
    let s = emulate_matmul(&mut m, MatmulPrecision::High).unwrap();
    assert_eq!(s.high, 1);
    let (_, back) = round_trip(&m);
    assert_eq!(count(&back, "stablehlo.dot"), 3);
    assert_eq!(count(&back, "stablehlo.add"), 2);
}
