//! The depthwise-convolution unrolling (`rewrite::depthwise`): each module is compiled and run
//! on the CPU plugin as written and as rewritten, and the two must agree to f32 rounding; the
//! cases that must stay convolutions must come back unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod onnx_common;

use std::path::Path;

use tpuport_formats::Limits;
use tpuport_formats::stablehlo::parse_text;
use tpuport_lower::rewrite::depthwise::for_cpu;
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{CompileOptions, Program};

/// `func @main(x, w) -> conv(x, w)` with the given dimension numbers, window and types.
fn module(dn: &str, window: &str, groups: u64, x: &str, w: &str, out: &str) -> String {
    format!(
        "func.func public @main(%arg0: tensor<{x}xf32>, %arg1: tensor<{w}xf32>) -> tensor<{out}xf32> {{\n  \
         %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = {dn}, window = {{{window}}} \
         {{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}} : \
         (tensor<{x}xf32>, tensor<{w}xf32>) -> tensor<{out}xf32>\n  \
         return %0 : tensor<{out}xf32>\n}}\n"
    )
}

fn dims(s: &str) -> Vec<u64> {
    s.split('x').map(|d| d.parse().unwrap()).collect()
}

/// Deterministic values in [-1, 1).
fn tensor(shape: &[u64], seed: u64) -> HostTensor {
    let n: u64 = shape.iter().product();
    let mut s = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut bytes = Vec::with_capacity(n as usize * 4);
    for _ in 0..n {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    HostTensor::new(DType::F32, shape.to_vec(), bytes).unwrap()
}

fn run(text: &str, x: &HostTensor, w: &HostTensor) -> HostTensor {
    let c = onnx_common::client();
    let exe = c
        .compile(&Program::mlir(text.as_bytes().to_vec()), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let dev = &c.devices()[0];
    let bx = c.buffer_from_host(x, dev).unwrap();
    let bw = c.buffer_from_host(w, dev).unwrap();
    exe.execute_one(&[&bx, &bw]).unwrap().remove(0).to_host().unwrap()
}

fn ops(text: &str, op: &str) -> usize {
    let m = parse_text(Path::new("t.mlir"), text, &Limits::default()).unwrap();
    m.graph.walk_nodes().filter(|n| n.op == op).count()
}

/// Rewritten, checks the rewrite's shape (no convolution left, `taps` multiplies) and that it
/// computes what the convolution computes.
fn agrees(text: &str, x: &str, w: &str, taps: usize) {
    let rewritten = for_cpu(text).unwrap_or_else(|| panic!("not rewritten:\n{text}"));
    assert_eq!(ops(&rewritten, "stablehlo.convolution"), 0, "{rewritten}");
    assert_eq!(ops(&rewritten, "stablehlo.multiply"), taps, "{rewritten}");
    let (xt, wt) = (tensor(&dims(x), 1), tensor(&dims(w), 2));
    let want = run(text, &xt, &wt);
    let got = run(&rewritten, &xt, &wt);
    assert_eq!(got.shape, want.shape);
    let err = onnx_common::rel_err(&got, &want);
    assert!(err < 1e-5, "relative error {err}\n{rewritten}");
}

#[test]
fn nchw_strided_padded_like_mobilenet() {
    let text = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]",
        8,
        "2x8x9x9",
        "8x1x3x3",
        "2x8x5x5",
    );
    agrees(&text, "2x8x9x9", "8x1x3x3", 9);
}

#[test]
fn nhwc_hwio_dilated_with_uneven_padding_like_jax_and_keras() {
    // H: 9 + 0 + 1 = 10, window 5 (3 taps, dilation 2) → 6; W: 9 + 2 + 0 = 11 → 7
    let text = module(
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        "stride = [1, 1], pad = [[0, 1], [2, 0]], rhs_dilate = [2, 2]",
        6,
        "3x9x9x6",
        "3x3x1x6",
        "3x6x7x6",
    );
    agrees(&text, "3x9x9x6", "3x3x1x6", 9);
}

#[test]
fn input_and_output_layouts_differ_and_padding_is_negative() {
    // H: 7 - 1 + 0 = 6, window 2 → 5; W: 7 + 0 - 1 = 6, window 2, stride 2 → 3
    let text = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, 0, 1, f]",
        "stride = [1, 2], pad = [[-1, 0], [0, -1]]",
        4,
        "1x4x7x7",
        "4x1x2x2",
        "1x5x3x4",
    );
    agrees(&text, "1x4x7x7", "4x1x2x2", 4);
}

#[test]
fn one_dimensional_depthwise() {
    let text = module(
        "[b, f, 0]x[o, i, 0]->[b, f, 0]",
        "stride = [1], pad = [[2, 2]]",
        5,
        "2x5x16",
        "5x1x5",
        "2x5x16",
    );
    agrees(&text, "2x5x16", "5x1x5", 5);
}

#[test]
fn what_is_not_depthwise_stays_a_convolution() {
    // depth multiplier 2: 8 groups, 16 output features
    let mult = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[1, 1], [1, 1]]",
        8,
        "1x8x6x6",
        "16x1x3x3",
        "1x16x6x6",
    );
    assert!(for_cpu(&mult).is_none());
    // grouped but not depthwise: 2 input features per group
    let grouped = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[1, 1], [1, 1]]",
        4,
        "1x8x6x6",
        "8x2x3x3",
        "1x8x6x6",
    );
    assert!(for_cpu(&grouped).is_none());
    // a 9×9 kernel: more taps than the rewrite takes
    let big = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[4, 4], [4, 4]]",
        3,
        "1x3x12x12",
        "3x1x9x9",
        "1x3x12x12",
    );
    assert!(for_cpu(&big).is_none());
    // no grouped convolution at all: not even parsed
    assert!(for_cpu("func.func @main() { return }").is_none());
}
