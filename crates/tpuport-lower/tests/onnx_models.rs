//! The five reference models (both torch exporters) lower, compile on the CPU PJRT plugin and
//! match onnxruntime's outputs recorded in the fixtures (batch 1, f32, max error relative to
//! the output scale <= 1e-4).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr, reason = "tests")]

mod onnx_common;

use std::collections::HashMap;

use tpuport_formats::ImportOptions;
use tpuport_formats::npy::read_npz;
use tpuport_lower::onnx::{LowerOptions, lower};

fn check(model: &str, exporter: &str) {
    let dir = onnx_common::fixtures().join("torch").join(model);
    let inputs: HashMap<_, _> = read_npz(&dir.join("inputs.npz")).unwrap().into_iter().collect();
    let wants = read_npz(&dir.join(format!("outputs_{exporter}.npz"))).unwrap();
    let mut shapes = std::collections::BTreeMap::new();
    for (n, t) in &inputs {
        shapes.insert(n.clone(), tpuport_model::Shape::fixed(&t.shape));
    }
    let opts = ImportOptions { input_shapes: shapes, ..ImportOptions::default() };
    let m = tpuport_formats::open(&dir.join(format!("{exporter}.onnx")), &opts).unwrap();
    let t = std::time::Instant::now();
    let low =
        lower(&m, &LowerOptions::default()).unwrap_or_else(|e| panic!("{model}/{exporter}: {e}"));
    let lower_s = t.elapsed().as_secs_f64();
    if let Ok(d) = std::env::var("TPUPORT_DUMP_MLIR") {
        std::fs::write(format!("{d}/{model}_{exporter}.mlir"), &low.mlir).unwrap();
    }
    let got =
        onnx_common::run(&m, &low, &inputs).unwrap_or_else(|e| panic!("{model}/{exporter}: {e}"));
    assert_eq!(got.len(), wants.len());
    for ((name, want), (g, rb)) in wants.iter().zip(got.iter().zip(&low.results)) {
        assert_eq!(&rb.name, name, "{model}/{exporter}: result order");
        assert_eq!(g.shape, want.shape, "{model}/{exporter}/{name}");
        let err = onnx_common::rel_err(g, want);
        eprintln!("{model}/{exporter}/{name}: rel err {err:.2e} (lowered in {lower_s:.2}s)");
        assert!(err <= 1e-4, "{model}/{exporter}/{name}: rel err {err}");
    }
}

macro_rules! model_tests {
    ($($name:ident: $m:literal, $e:literal;)*) => {$(
        #[test]
        fn $name() {
            check($m, $e);
        }
    )*};
}

model_tests! {
    resnet50_legacy: "resnet50", "legacy";
    resnet50_dynamo: "resnet50", "dynamo";
    mobilenet_v2_legacy: "mobilenet_v2", "legacy";
    mobilenet_v2_dynamo: "mobilenet_v2", "dynamo";
    vit_b_16_legacy: "vit_b_16", "legacy";
    vit_b_16_dynamo: "vit_b_16", "dynamo";
    bert_base_legacy: "bert_base", "legacy";
    bert_base_dynamo: "bert_base", "dynamo";
    gpt2_legacy: "gpt2", "legacy";
    gpt2_dynamo: "gpt2", "dynamo";
}
