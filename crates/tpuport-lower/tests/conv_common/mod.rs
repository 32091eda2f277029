//! Shared by the CPU convolution-rewrite tests: a one-convolution module, deterministic
//! tensors, a run on the CPU plugin (the crate root must declare `mod onnx_common`), op counts.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::Limits;
use tpuport_formats::stablehlo::parse_text;
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{CompileOptions, Program};

/// `func @main(x, w) -> conv(x, w)` with the given dimension numbers, window and types.
pub fn module(dn: &str, window: &str, groups: u64, x: &str, w: &str, out: &str) -> String {
    format!(
        "func.func public @main(%arg0: tensor<{x}xf32>, %arg1: tensor<{w}xf32>) -> tensor<{out}xf32> {{\n  \
         %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = {dn}, window = {{{window}}} \
         {{batch_group_count = 1 : i64, feature_group_count = {groups} : i64}} : \
         (tensor<{x}xf32>, tensor<{w}xf32>) -> tensor<{out}xf32>\n  \
         return %0 : tensor<{out}xf32>\n}}\n"
    )
}

pub fn dims(s: &str) -> Vec<u64> {
    s.split('x').map(|d| d.parse().unwrap()).collect()
}

/// Deterministic values in [-1, 1).
pub fn tensor(shape: &[u64], seed: u64) -> HostTensor {
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

pub fn run(text: &str, x: &HostTensor, w: &HostTensor) -> HostTensor {
    let c = crate::onnx_common::client();
    let exe = c
        .compile(&Program::mlir(text.as_bytes().to_vec()), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let dev = &c.devices()[0];
    let bx = c.buffer_from_host(x, dev).unwrap();
    let bw = c.buffer_from_host(w, dev).unwrap();
    exe.execute_one(&[&bx, &bw]).unwrap().remove(0).to_host().unwrap()
}

pub fn ops(text: &str, op: &str) -> usize {
    let m = parse_text(Path::new("t.mlir"), text, &Limits::default()).unwrap();
    m.graph.walk_nodes().filter(|n| n.op == op).count()
}

/// `rewritten` computes what `text` computes on random `x` and `w` (seeded `seeds`), to f32
/// rounding (relative error < 1e-5), with the same output shape.
pub fn same_values(text: &str, rewritten: &str, x: &str, w: &str, seeds: (u64, u64)) {
    let (xt, wt) = (tensor(&dims(x), seeds.0), tensor(&dims(w), seeds.1));
    let want = run(text, &xt, &wt);
    let got = run(rewritten, &xt, &wt);
    assert_eq!(got.shape, want.shape);
    let err = crate::onnx_common::rel_err(&got, &want);
    assert!(err < 1e-5, "relative error {err}\n{rewritten}");
}
