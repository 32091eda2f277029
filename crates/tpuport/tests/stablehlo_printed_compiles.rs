//! The foundation's round trip, end to end through the real runtime: every single-device JAX
//! fixture is imported by tpuport, printed back in generic form by tpuport's printer, compiled
//! by the CPU PJRT plugin through tpuport's own binding layer, run, and compared with the
//! outputs JAX recorded.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use tpuport_formats::{ImportOptions, npy::read_npy};
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

/// bf16 fixtures store bf16 bit patterns as uint16 (numpy has no bf16).
fn read(path: &std::path::Path) -> HostTensor {
    let t = read_npy(path).unwrap_or_else(|e| panic!("{e}"));
    if t.dtype == DType::U16 && path.to_string_lossy().contains("_bf16") {
        return HostTensor::new(DType::BF16, t.shape.clone(), t.into_data()).unwrap();
    }
    t
}

#[test]
fn printed_stablehlo_compiles_and_matches_jax() {
    let fx = common::fixtures();
    let plugin = tpuport_pjrt::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
    let client = Client::new(tpuport_pjrt::load(&plugin).unwrap(), &ClientOptions::cpu_devices(1))
        .expect("CPU client");
    let dev = &client.devices()[0];
    let mut checked = 0;
    for name in ["mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16"] {
        let dir = fx.join("jax").join(name);
        for form in ["jit.mlir", "export.mlir"] {
            let src = dir.join(form);
            let model = tpuport_formats::open(&src, &ImportOptions::default()).unwrap();
            let text = tpuport_formats::stablehlo::print_model(&model).unwrap();
            let exe = client
                .compile(&Program::mlir(text.into_bytes()), &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{name}/{form}: printed module does not compile: {e}"));
            let n_in = model.graph.inputs.len();
            let inputs: Vec<_> = (0..n_in)
                .map(|i| {
                    client.buffer_from_host(&read(&dir.join(format!("inputs/arg{i}.npy"))), dev)
                })
                .collect::<Result<_, _>>()
                .unwrap();
            let args: Vec<&tpuport_pjrt::Buffer> = inputs.iter().collect();
            let out = exe.execute_one(&args).unwrap();
            let got = out[0].to_host().unwrap();
            let want = read(&dir.join("outputs/out0.npy"));
            assert_eq!((got.dtype, &got.shape), (want.dtype, &want.shape), "{name}/{form}");
            let (g, w) = (got.to_f64().unwrap(), want.to_f64().unwrap());
            let scale = w.iter().fold(1f64, |m, v| m.max(v.abs()));
            let err = g.iter().zip(&w).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale;
            let tol = if want.dtype == DType::BF16 { 2e-2 } else { 1e-5 };
            assert!(err <= tol, "{name}/{form}: max error {err} relative to scale");
            checked += 1;
        }
    }
    assert_eq!(checked, 10);
}
