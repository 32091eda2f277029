//! Reproducer for the "stale input" report (stop 9): executions whose input buffers are freed
//! and replaced by new ones for the next execution must compute with the new values.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod common;

use common::{cpu_client, f32s, values};
use tpuport_model::HostTensor;
use tpuport_pjrt::{CompileOptions, Program};

fn mlp_module() -> Vec<u8> {
    let dir = tpuport_testkit::fixtures("jax").join("mlp_b128");
    std::fs::read(dir.join("jit.mlir")).unwrap()
}

/// Rows `rows` of softmax(relu(x @ w1 + b1) @ w2 + b2) on the host.
fn mlp_rows(a: &[Vec<f32>], rows: &[usize]) -> Vec<Vec<f64>> {
    let (w1, b1, w2, b2, x) = (&a[0], &a[1], &a[2], &a[3], &a[4]);
    rows.iter()
        .map(|&r| {
            let mut h = vec![0f64; 512];
            for (j, hj) in h.iter_mut().enumerate() {
                let mut acc = f64::from(b1[j]);
                for k in 0..784 {
                    acc += f64::from(x[r * 784 + k]) * f64::from(w1[k * 512 + j]);
                }
                *hj = acc.max(0.0);
            }
            let mut o: Vec<f64> = (0..10)
                .map(|j| {
                    f64::from(b2[j])
                        + (0..512).map(|k| h[k] * f64::from(w2[k * 10 + j])).sum::<f64>()
                })
                .collect();
            let m = o.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = o.iter().map(|v| (v - m).exp()).sum();
            for v in &mut o {
                *v = (*v - m).exp() / s;
            }
            o
        })
        .collect()
}

#[test]
fn fresh_buffers_per_execution_give_fresh_results() {
    let client = cpu_client(1);
    let exe = client.compile(&Program::mlir(mlp_module()), &CompileOptions::default()).unwrap();
    check(&client, &exe);
}

#[test]
fn fresh_buffers_with_a_deserialized_executable() {
    let client = cpu_client(1);
    let exe = client.compile(&Program::mlir(mlp_module()), &CompileOptions::default()).unwrap();
    let bytes = exe.executable().serialize().unwrap();
    drop(exe);
    let exe = client.deserialize(&bytes).unwrap();
    check(&client, &exe);
}

fn check(client: &tpuport_pjrt::Client, exe: &tpuport_pjrt::LoadedExecutable) {
    let dev = &client.devices()[0];
    let shapes: [&[u64]; 5] = [&[784, 512], &[512], &[512, 10], &[10], &[128, 784]];
    let rows = [0usize, 77, 127];
    let mut bad = Vec::new();
    for it in 0..40u32 {
        let host: Vec<Vec<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = s.iter().product::<u64>() as usize;
                let scale = if i == 4 { 1.0 } else { 0.05 };
                values(n, it * 10 + i as u32 + 1).into_iter().map(|v| v * scale).collect()
            })
            .collect();
        let bufs: Vec<_> = host
            .iter()
            .zip(shapes)
            .map(|(h, s)| {
                let t = HostTensor::from_f32(s.to_vec(), h).unwrap();
                client.buffer_from_host(&t, dev).unwrap()
            })
            .collect();
        let refs: Vec<_> = bufs.iter().collect();
        let out = exe.execute_one(&refs).unwrap();
        let got = f32s(&out[0].to_host().unwrap());
        drop(out);
        drop(bufs);
        let want = mlp_rows(&host, &rows);
        for (ri, &r) in rows.iter().enumerate() {
            for j in 0..10 {
                let (g, w) = (f64::from(got[r * 10 + j]), want[ri][j]);
                if (g - w).abs() > 1e-4 + 1e-3 * w.abs() {
                    bad.push(format!("iteration {it} row {r} col {j}: got {g}, want {w}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} wrong values, first: {:?}", bad.len(), &bad[..bad.len().min(5)]);
}
