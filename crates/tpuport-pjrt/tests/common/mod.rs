//! Shared helpers for the tpuport-pjrt integration tests (real CPU plugin).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::PathBuf;

use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{Client, ClientOptions, Plugin};

/// The CPU plugin; fails the test with the fix when it is missing.
pub fn cpu_plugin() -> &'static Plugin {
    let path = tpuport_pjrt::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
    tpuport_pjrt::load(&path).expect("load CPU plugin")
}

/// A CPU client with `n` devices.
pub fn cpu_client(n: u32) -> Client {
    Client::new(cpu_plugin(), &ClientOptions::cpu_devices(n)).expect("CPU client")
}

/// A test module from `tests/data`.
pub fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Deterministic f32 values in [-1, 1).
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            #[allow(clippy::cast_precision_loss)]
            let v = (s % 20_000) as f32 / 10_000.0 - 1.0;
            v
        })
        .collect()
}

/// f32 values of a tensor.
pub fn f32s(t: &HostTensor) -> Vec<f32> {
    assert_eq!(t.dtype, DType::F32);
    t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// `tanh(x @ y) + 1` on the host, x [m,k], y [k,n].
pub fn tanh_mm(x: &[f32], y: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f64;
            for l in 0..k {
                acc += f64::from(x[i * k + l]) * f64::from(y[l * n + j]);
            }
            #[allow(clippy::cast_possible_truncation)]
            let v = (acc.tanh() + 1.0) as f32;
            out[i * n + j] = v;
        }
    }
    out
}

/// Max abs error relative to the reference's scale (max |ref|, at least 1).
pub fn rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1f32, |m, v| m.max(v.abs()));
    got.iter().zip(want).fold(0f32, |m, (a, b)| m.max((a - b).abs())) / scale
}

/// Minimal `.npy` reader (little-endian, C order) for fixture comparisons.
pub fn read_npy(path: &std::path::Path) -> HostTensor {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{}", path.display());
    let (hlen, start) = if bytes[6] == 1 {
        (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10)
    } else {
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = std::str::from_utf8(&bytes[start..start + hlen]).unwrap();
    let descr = header.split("'descr':").nth(1).unwrap().split('\'').nth(1).unwrap();
    assert!(header.contains("'fortran_order': False"), "{header}");
    let dtype = match descr {
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "|b1" => DType::Bool,
        "<f2" => DType::F16,
        "<u2" => DType::U16,
        "<V2" | "|V2" => DType::BF16,
        other => panic!("unsupported npy dtype {other}"),
    };
    let shape_s = header.split("'shape':").nth(1).unwrap();
    let shape_s = &shape_s[shape_s.find('(').unwrap() + 1..shape_s.find(')').unwrap()];
    let shape: Vec<u64> = shape_s
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    HostTensor::new(dtype, shape, bytes[start + hlen..].to_vec()).unwrap()
}
