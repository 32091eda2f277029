//! The depthwise-convolution unrolling (`rewrite::depthwise`): each module is compiled and run
//! on the CPU plugin as written and as rewritten, and the two must agree to f32 rounding; the
//! cases that must stay convolutions must come back unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod conv_common;
mod onnx_common;

use conv_common::{module, ops, same_values};
use tpuport_lower::rewrite::for_cpu;

/// Rewritten, checks the rewrite's shape (no convolution left, `taps` multiplies) and that it
/// computes what the convolution computes.
fn agrees(text: &str, x: &str, w: &str, taps: usize) {
    let rewritten = for_cpu(text).unwrap_or_else(|| panic!("not rewritten:\n{text}"));
    assert_eq!(ops(&rewritten, "stablehlo.convolution"), 0, "{rewritten}");
    assert_eq!(ops(&rewritten, "stablehlo.multiply"), taps, "{rewritten}");
    same_values(text, &rewritten, x, w, (1, 2));
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
