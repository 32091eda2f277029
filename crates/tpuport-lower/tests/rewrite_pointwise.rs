//! The 1×1-convolution rewrite (`rewrite::pointwise`): each module is compiled and run on the
//! CPU plugin as written and as rewritten, and the two must agree to f32 rounding; what must
//! stay a convolution comes back unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod conv_common;
mod onnx_common;

use conv_common::{module, ops, same_values};
use tpuport_lower::rewrite::{DEFAULT_CPU_REWRITES, cpu_rewrites, for_cpu_with};

/// Rewritten by the pointwise rewrite alone: one `dot_general`, no convolution, `transposes`
/// transposes, and the same values as the convolution.
fn agrees(text: &str, x: &str, w: &str, transposes: usize) {
    let rewritten =
        for_cpu_with(text, false, true).unwrap_or_else(|| panic!("not rewritten:\n{text}"));
    assert_eq!(ops(&rewritten, "stablehlo.convolution"), 0, "{rewritten}");
    assert_eq!(ops(&rewritten, "stablehlo.dot_general"), 1, "{rewritten}");
    assert_eq!(ops(&rewritten, "stablehlo.transpose"), transposes, "{rewritten}");
    same_values(text, &rewritten, x, w, (3, 4));
}

#[test]
fn nchw_like_torch_exports() {
    let text = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[0, 0], [0, 0]]",
        1,
        "2x24x7x5",
        "40x24x1x1",
        "2x40x7x5",
    );
    agrees(&text, "2x24x7x5", "40x24x1x1", 1);
}

#[test]
fn strided_projection_like_resnet_downsampling() {
    // H: (9 - 1) / 2 + 1 = 5; W: (8 - 1) / 2 + 1 = 4
    let text = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [2, 2]",
        1,
        "3x16x9x8",
        "32x16x1x1",
        "3x32x5x4",
    );
    agrees(&text, "3x16x9x8", "32x16x1x1", 1);
}

#[test]
fn nhwc_hwio_like_jax_and_keras_needs_no_transpose() {
    let text = module(
        "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
        "stride = [1, 1]",
        1,
        "2x6x6x12",
        "1x1x12x20",
        "2x6x6x20",
    );
    agrees(&text, "2x6x6x12", "1x1x12x20", 0);
}

#[test]
fn kernel_input_before_output_and_layouts_that_differ() {
    // kernel [i, o, 0, 1]; output features first
    let text = module(
        "[b, f, 0, 1]x[i, o, 0, 1]->[f, b, 0, 1]",
        "stride = [1, 3]",
        1,
        "2x8x4x7",
        "8x6x1x1",
        "6x2x4x3",
    );
    agrees(&text, "2x8x4x7", "8x6x1x1", 1);
}

#[test]
fn one_dimensional_pointwise() {
    let text =
        module("[b, f, 0]x[o, i, 0]->[b, f, 0]", "stride = [1]", 1, "4x10x33", "7x10x1", "4x7x33");
    agrees(&text, "4x10x33", "7x10x1", 1);
}

#[test]
fn what_is_not_pointwise_stays_a_convolution() {
    // a 3×3 kernel
    let k3 = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[1, 1], [1, 1]]",
        1,
        "1x4x6x6",
        "8x4x3x3",
        "1x8x6x6",
    );
    assert!(for_cpu_with(&k3, false, true).is_none());
    // 1×1 but padded: the border is the bias-free zero of a convolution, not a matrix product
    let padded = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1], pad = [[1, 1], [1, 1]]",
        1,
        "1x4x6x6",
        "8x4x1x1",
        "1x8x8x8",
    );
    assert!(for_cpu_with(&padded, false, true).is_none());
    // 1×1 with two groups
    let grouped = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1]",
        2,
        "1x8x6x6",
        "8x4x1x1",
        "1x8x6x6",
    );
    assert!(for_cpu_with(&grouped, false, true).is_none());
    // the depthwise rewrite alone leaves a pointwise convolution alone
    let pw = module(
        "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
        "stride = [1, 1]",
        1,
        "1x4x6x6",
        "8x4x1x1",
        "1x8x6x6",
    );
    assert!(for_cpu_with(&pw, true, false).is_none());
    assert!(for_cpu_with(&pw, true, true).is_some());
    // and the 1×1 rewrite is opt-in: the default set leaves it alone
    assert_eq!(cpu_rewrites(DEFAULT_CPU_REWRITES), (true, false));
    assert_eq!(cpu_rewrites("depthwise, pointwise"), (true, true));
    assert_eq!(cpu_rewrites("none"), (false, false));
}

/// torchvision MobileNetV2 and ResNet-50 (dynamo exports of the fixture set) at batch 2: every
/// 1×1 convolution becomes a `dot_general`, the others stay, and the rewritten module gives the
/// outputs of the original on the fixture's inputs to f32 rounding.
#[test]
fn torchvision_exports_lose_their_1x1_convolutions_and_keep_their_outputs() {
    use std::collections::HashMap;
    use tpuport_formats::ImportOptions;
    use tpuport_formats::npy::read_npz;
    use tpuport_lower::onnx::{LowerOptions, lower};
    // (model, convolutions, of which 1×1: MobileNetV2 16 expand + 17 project + the last;
    // ResNet-50 two per bottleneck + 4 projections)
    for (model, convs, pointwise) in [("mobilenet_v2", 52, 34), ("resnet50", 53, 36)] {
        let dir = onnx_common::fixtures().join("torch").join(model);
        let inputs: HashMap<_, _> = read_npz(&dir.join("inputs.npz"))
            .unwrap()
            .into_iter()
            .map(|(n, t)| {
                let mut shape = t.shape.clone();
                shape[0] *= 2;
                let data = t.data().repeat(2);
                (n, tpuport_model::HostTensor::new(t.dtype, shape, data).unwrap())
            })
            .collect();
        let shapes = inputs
            .iter()
            .map(|(n, t)| (n.clone(), tpuport_model::Shape::fixed(&t.shape)))
            .collect();
        let opts = ImportOptions { input_shapes: shapes, ..ImportOptions::default() };
        let m = tpuport_formats::open(&dir.join("dynamo.onnx"), &opts).unwrap();
        let low = lower(&m, &LowerOptions::default()).unwrap();
        assert_eq!(ops(&low.mlir, "stablehlo.convolution"), convs, "{model}");
        let mut rewritten = low.clone();
        rewritten.mlir = for_cpu_with(&low.mlir, false, true).unwrap();
        assert_eq!(ops(&rewritten.mlir, "stablehlo.convolution"), convs - pointwise, "{model}");
        assert_eq!(ops(&rewritten.mlir, "stablehlo.dot_general"), pointwise + 1, "{model}");
        let want = onnx_common::run(&m, &low, &inputs).unwrap();
        let got = onnx_common::run(&m, &rewritten, &inputs).unwrap();
        for (g, w) in got.iter().zip(&want) {
            let err = onnx_common::rel_err(g, w);
            assert!(err < 1e-5, "{model}: relative error {err}");
        }
    }
}
