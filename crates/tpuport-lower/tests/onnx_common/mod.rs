//! Shared helpers for the ONNX lowering tests: lower, compile on the CPU PJRT plugin, run,
//! compare.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code, unreachable_pub, reason = "tests")]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use tpuport_lower::onnx::{ArgSource, Lowered};
use tpuport_model::{DType, HostTensor, Model};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, Program};

pub fn fixtures() -> PathBuf {
    std::env::var_os("TPUPORT_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.cache/fixtures"),
        PathBuf::from,
    )
}

pub fn client() -> &'static Client {
    static C: OnceLock<Client> = OnceLock::new();
    C.get_or_init(|| {
        let plugin = tpuport_pjrt::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
        Client::new(tpuport_pjrt::load(&plugin).unwrap(), &ClientOptions::cpu_devices(1))
            .expect("CPU client")
    })
}

/// Converts f32 host data to bf16 (round to nearest even).
pub fn to_bf16(t: &HostTensor) -> HostTensor {
    let v: Vec<u8> = t
        .data()
        .chunks_exact(4)
        .flat_map(|c| {
            let b = f32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_bits();
            let r = ((b.wrapping_add(0x7fff + ((b >> 16) & 1))) >> 16) as u16;
            r.to_le_bytes()
        })
        .collect();
    HostTensor::new(DType::BF16, t.shape.clone(), v).unwrap()
}

/// Compiles and runs a lowered module with `inputs` by name; weights come from the model.
pub fn run(
    model: &Model,
    low: &Lowered,
    inputs: &HashMap<String, HostTensor>,
) -> Result<Vec<HostTensor>, String> {
    let c = client();
    let exe = c
        .compile(&Program::mlir(low.mlir.clone().into_bytes()), &CompileOptions::default())
        .map_err(|e| format!("compile: {e}"))?;
    let dev = &c.devices()[0];
    let mut bufs = Vec::new();
    for a in &low.args {
        let t = match &a.source {
            ArgSource::Input(n) => inputs.get(n).cloned().ok_or_else(|| format!("no input {n}"))?,
            ArgSource::Weight(n) => {
                let w = model.weights.by_name(n).ok_or_else(|| format!("no weight {n}"))?;
                HostTensor::new(w.dtype, w.shape.clone(), w.bytes().unwrap().into_owned()).unwrap()
            }
        };
        let t = if t.dtype == DType::F32 && a.dtype == DType::BF16 { to_bf16(&t) } else { t };
        assert_eq!((t.dtype, &t.shape), (a.dtype, &a.shape), "argument {:?}", a.source);
        bufs.push(c.buffer_from_host(&t, dev).map_err(|e| format!("upload: {e}"))?);
    }
    let refs: Vec<&tpuport_pjrt::Buffer> = bufs.iter().collect();
    let out = exe.execute_one(&refs).map_err(|e| format!("execute: {e}"))?;
    out.iter().map(|b| b.to_host().map_err(|e| format!("download: {e}"))).collect()
}

/// Max |a-b| / max(1, max|b|).
pub fn rel_err(got: &HostTensor, want: &HostTensor) -> f64 {
    let (g, w) = (got.to_f64().unwrap(), want.to_f64().unwrap());
    assert_eq!(g.len(), w.len());
    let scale = w.iter().fold(1f64, |m, v| m.max(v.abs()));
    g.iter().zip(&w).fold(0f64, |m, (a, b)| {
        let d = if a.is_nan() && b.is_nan() { 0.0 } else { (a - b).abs() };
        m.max(if d.is_nan() { f64::INFINITY } else { d })
    }) / scale
}
