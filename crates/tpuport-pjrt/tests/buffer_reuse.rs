//! Freeing a sample's input buffers and uploading the next sample's must not let an execution
//! see the previous values: the pattern of every caller that does not hold its buffers (a
//! server frees and uploads constantly).
//!
//! This guards the hazard `validate`'s `KeepAlive` was added for (xla-cpu-pjrt 0.0.1, "1 run in
//! 3 with `--random 2` on mlp_b128"), which could not be reproduced on the current binding
//! layer; see `tpuport_pjrt::KeepAlive` for what was ruled out.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use tpuport_model::HostTensor;
use tpuport_pjrt::{Buffer, CompileOptions, Program};

fn sample(seed: u32) -> Vec<HostTensor> {
    let shapes: [&[u64]; 5] = [&[784, 512], &[512], &[512, 10], &[10], &[128, 784]];
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let n = s.iter().product::<u64>() as usize;
            HostTensor::from_f32(s.to_vec(), &common::values(n, seed * 10 + i as u32)).unwrap()
        })
        .collect()
}

#[test]
fn freed_inputs_are_not_reused() {
    let path = tpuport_testkit::fixtures("jax").join("mlp_b128/jit.mlir");
    let text = std::fs::read(&path).unwrap();
    let (trials, samples) = (3, 4u32);
    let mut bad = Vec::new();
    for trial in 0..trials {
        let client = common::cpu_client(1);
        let dev = &client.devices()[0];
        let exe = client.compile(&Program::mlir(text.clone()), &CompileOptions::default()).unwrap();
        // reference: every sample with its buffers alive until the end
        let mut keep: Vec<Vec<Buffer>> = Vec::new();
        let mut want = Vec::new();
        for s in 0..samples {
            let bufs: Vec<Buffer> =
                sample(s).iter().map(|t| client.buffer_from_host(t, dev).unwrap()).collect();
            let refs: Vec<&Buffer> = bufs.iter().collect();
            want.push(exe.execute_one(&refs).unwrap()[0].to_host().unwrap());
            keep.push(bufs);
        }
        drop(keep);
        // freed after each sample
        for s in 0..samples {
            let bufs: Vec<Buffer> =
                sample(s).iter().map(|t| client.buffer_from_host(t, dev).unwrap()).collect();
            let refs: Vec<&Buffer> = bufs.iter().collect();
            let got = exe.execute_one(&refs).unwrap()[0].to_host().unwrap();
            if got != want[s as usize] {
                let like = (0..samples).find(|&k| want[k as usize] == got);
                bad.push(format!("trial {trial} sample {s} (equals sample {like:?})"));
            }
        }
    }
    assert!(bad.is_empty(), "executions computed with other values: {bad:?}");
}
