//! Every single-device JAX fixture (`make fixtures`), in all three forms (jit text, export
//! text, export bytecode), compiled and run on the CPU plugin and compared with JAX's outputs.
//! The sharded fixtures need host-side splitting by the module's shardings and are covered by
//! `tpuport run` in `crates/tpuport/tests/pjrt_cli.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use tpuport_model::DType;
use tpuport_pjrt::{CompileOptions, Program};

fn jax_fixtures() -> PathBuf {
    tpuport_testkit::fixtures("jax")
}

/// Reads a fixture tensor; `*_bf16` fixtures store bf16 bit patterns as uint16 (meta.json).
fn read(path: &Path, bf16: bool) -> tpuport_model::HostTensor {
    let t = common::read_npy(path);
    if bf16 && t.dtype == DType::U16 {
        return tpuport_model::HostTensor::new(DType::BF16, t.shape.clone(), t.into_data())
            .unwrap();
    }
    t
}

fn max_err(got: &tpuport_model::HostTensor, want: &tpuport_model::HostTensor) -> f64 {
    assert_eq!(got.dtype, want.dtype);
    assert_eq!(got.shape, want.shape);
    let (g, w) = (got.to_f64().unwrap(), want.to_f64().unwrap());
    let scale = w.iter().fold(1f64, |m, v| m.max(v.abs()));
    g.iter().zip(&w).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

#[test]
fn single_device_fixtures_match_jax_in_every_form() {
    let jax = jax_fixtures();
    let client = common::cpu_client(1);
    let dev = &client.devices()[0];
    let mut checked = 0;
    for name in ["mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16"] {
        let dir = jax.join(name);
        if name == "encoder_bf16" && !dir.is_dir() {
            continue;
        }
        let mut inputs = Vec::new();
        for i in 0.. {
            let p = dir.join(format!("inputs/arg{i}.npy"));
            if !p.is_file() {
                break;
            }
            inputs.push(client.buffer_from_host(&read(&p, name.ends_with("_bf16")), dev).unwrap());
        }
        let want = read(&dir.join("outputs/out0.npy"), name.ends_with("_bf16"));
        let tol = if want.dtype == DType::BF16 { 2e-2 } else { 1e-5 };
        for form in ["jit.mlir", "export.mlir", "export.mlirbc"] {
            let prog = Program::mlir(std::fs::read(dir.join(form)).unwrap());
            let exe = client
                .compile(&prog, &CompileOptions::default())
                .unwrap_or_else(|e| panic!("{name}/{form}: {e}"));
            let args: Vec<&tpuport_pjrt::Buffer> = inputs.iter().collect();
            let out = exe.execute_one(&args).unwrap_or_else(|e| panic!("{name}/{form}: {e}"));
            let got = out[0].to_host().unwrap();
            let err = max_err(&got, &want);
            assert!(err <= tol, "{name}/{form}: max error {err} relative to scale");
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked}");
}
