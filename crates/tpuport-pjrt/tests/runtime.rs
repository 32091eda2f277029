//! Runtime tests against the real OpenXLA CPU plugin from the project venv.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod common;

use common::{cpu_client, data, f32s, rel_err, tanh_mm, values};
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{
    CacheStatus, CompileOptions, ExecutableCache, PjrtError, Program, Value, find_value,
};

fn tanh_inputs() -> (HostTensor, HostTensor) {
    let x = HostTensor::from_f32(vec![2, 3], &values(6, 1)).unwrap();
    let y = HostTensor::from_f32(vec![3, 4], &values(12, 2)).unwrap();
    (x, y)
}

#[test]
fn text_and_bytecode_compile_and_match_the_host_reference() {
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let (x, y) = tanh_inputs();
    let want = tanh_mm(&f32s(&x), &f32s(&y), 2, 3, 4);
    let bx = client.buffer_from_host(&x, dev).unwrap();
    let by = client.buffer_from_host(&y, dev).unwrap();
    for name in ["tanh_mm.mlir", "tanh_mm.mlirbc"] {
        let prog = Program::mlir(data(name));
        assert_eq!(prog.is_bytecode(), name.ends_with("bc"));
        let exe = client.compile(&prog, &CompileOptions::default()).unwrap();
        let out = exe.execute_one(&[&bx, &by]).unwrap();
        assert_eq!(out.len(), 1);
        let t = out[0].to_host().unwrap();
        assert_eq!(t.shape, vec![2, 4]);
        let err = rel_err(&f32s(&t), &want);
        assert!(err <= 1e-5, "{name}: error {err}");
    }
}

#[test]
fn two_outputs_of_different_types() {
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let a: Vec<u8> = [3i32, -1, 0, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
    let a = HostTensor::new(DType::I32, vec![4], a).unwrap();
    let b = HostTensor::from_f32(vec![3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let exe =
        client.compile(&Program::mlir(data("two_out.mlir")), &CompileOptions::default()).unwrap();
    let info = exe.executable().outputs().unwrap();
    assert_eq!(info.len(), 2);
    assert_eq!((info[0].dtype, info[0].dims.clone()), (DType::I32, vec![4]));
    assert_eq!((info[1].dtype, info[1].dims.clone()), (DType::F32, vec![2]));
    let ba = client.buffer_from_host(&a, dev).unwrap();
    let bb = client.buffer_from_host(&b, dev).unwrap();
    let out = exe.execute_one(&[&ba, &bb]).unwrap();
    let o0 = out[0].to_host().unwrap();
    let ints: Vec<i32> =
        o0.data().chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(ints, vec![7, -1, 1, 15]);
    assert_eq!(f32s(&out[1].to_host().unwrap()), vec![9.0, 12.0]);
}

#[test]
fn bf16_round_trips_through_the_device() {
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let xs = [0.5f32, -1.0, 2.0, 3.25, 0.0, -0.125, 8.0, 100.0];
    let bytes: Vec<u8> = xs.iter().flat_map(|v| half::bf16::from_f32(*v).to_le_bytes()).collect();
    let x = HostTensor::new(DType::BF16, vec![8], bytes).unwrap();
    let exe =
        client.compile(&Program::mlir(data("bf16.mlir")), &CompileOptions::default()).unwrap();
    let bx = client.buffer_from_host(&x, dev).unwrap();
    assert_eq!(bx.dtype().unwrap(), DType::BF16);
    let out = exe.execute_one(&[&bx]).unwrap()[0].to_host().unwrap();
    assert_eq!(out.dtype, DType::BF16);
    let got = out.to_f64().unwrap();
    let want: Vec<f64> = xs.iter().map(|v| f64::from(v * 2.0 + 1.0)).collect();
    assert_eq!(got, want);
}

#[test]
fn input_buffers_are_borrowed_and_reusable() {
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let (x, y) = tanh_inputs();
    let exe =
        client.compile(&Program::mlir(data("tanh_mm.mlir")), &CompileOptions::default()).unwrap();
    let bx = client.buffer_from_host(&x, dev).unwrap();
    let by = client.buffer_from_host(&y, dev).unwrap();
    let first = exe.execute_one(&[&bx, &by]).unwrap()[0].to_host().unwrap();
    for _ in 0..20 {
        let again = exe.execute_one(&[&bx, &by]).unwrap()[0].to_host().unwrap();
        assert_eq!(again, first);
    }
    // The inputs are intact after all executions.
    assert_eq!(bx.to_host().unwrap(), x);
    assert_eq!(by.to_host().unwrap(), y);
}

#[test]
fn introspection_reports_cost_memory_and_fingerprint() {
    let client = cpu_client(1);
    let exe =
        client.compile(&Program::mlir(data("tanh_mm.mlir")), &CompileOptions::default()).unwrap();
    let e = exe.executable();
    assert_eq!(e.name().unwrap(), "jit__lambda");
    assert_eq!(e.num_outputs().unwrap(), 1);
    assert_eq!(e.num_partitions().unwrap(), 1);
    assert_eq!(e.num_replicas().unwrap(), 1);
    let cost = e.cost_analysis().unwrap();
    let Some(Value::Float(flops)) = find_value(&cost, "flops") else {
        panic!("no flops in {cost:?}")
    };
    // 2*2*3*4 multiply-adds at least.
    assert!(*flops >= 48.0, "flops {flops}");
    let mem = e.compiled_memory_stats().unwrap();
    assert_eq!(mem.argument, (6 + 12) * 4);
    assert_eq!(mem.output, 8 * 4);
    let fp = e.fingerprint().unwrap();
    assert!(!fp.is_empty());
    let again =
        client.compile(&Program::mlir(data("tanh_mm.mlir")), &CompileOptions::default()).unwrap();
    assert_eq!(again.executable().fingerprint().unwrap(), fp);
}

#[test]
fn wrong_arity_is_an_error_not_a_crash() {
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let (x, _) = tanh_inputs();
    let exe =
        client.compile(&Program::mlir(data("tanh_mm.mlir")), &CompileOptions::default()).unwrap();
    let bx = client.buffer_from_host(&x, dev).unwrap();
    let e = exe.execute_one(&[&bx]).unwrap_err();
    assert!(matches!(e, PjrtError::Call { .. }), "{e}");
    assert!(e.to_string().contains("PJRT_LoadedExecutable_Execute"), "{e}");
    // Two device lists for a one-device executable.
    let e = exe.execute(&[&[&bx], &[&bx]]).unwrap_err();
    assert!(e.to_string().contains("1 device(s) but 2 argument list(s)"), "{e}");
}

#[test]
fn bad_module_reports_the_compiler_error() {
    let client = cpu_client(1);
    let e = client.compile(
        &Program::mlir(b"module { this is not mlir }".to_vec()),
        &CompileOptions::default(),
    );
    let e = e.unwrap_err().to_string();
    assert!(e.starts_with("PJRT_Client_Compile failed"), "{e}");
}

/// Host-side split of the dp module's x (rows over 8 devices) and the reference result.
fn dp_case() -> (HostTensor, Vec<HostTensor>, Vec<f32>) {
    let w = values(12, 3);
    let x = values(64, 4);
    let wt = HostTensor::from_f32(vec![4, 3], &w).unwrap();
    let shards =
        (0..8).map(|d| HostTensor::from_f32(vec![2, 4], &x[d * 8..d * 8 + 8]).unwrap()).collect();
    // reference: tanh(x @ w) without the +1
    let want: Vec<f32> = tanh_mm(&x, &w, 16, 4, 3).into_iter().map(|v| v - 1.0).collect();
    (wt, shards, want)
}

fn run_dp(module: &str, opts: &CompileOptions) -> Result<Vec<f32>, PjrtError> {
    let client = cpu_client(8);
    let exe = client.compile(&Program::mlir(data(module)), opts)?;
    assert_eq!(exe.num_devices(), 8);
    assert_eq!(exe.executable().num_partitions()?, 8);
    assert_eq!(exe.executable().outputs()?[0].dims, vec![2, 3]);
    let (w, xs, _) = dp_case();
    let devices = exe.devices();
    let mut bufs = Vec::new();
    for (d, dev) in devices.iter().enumerate() {
        bufs.push((client.buffer_from_host(&w, dev)?, client.buffer_from_host(&xs[d], dev)?));
    }
    let lists: Vec<Vec<&tpuport_pjrt::Buffer>> = bufs.iter().map(|(w, x)| vec![w, x]).collect();
    let refs: Vec<&[&tpuport_pjrt::Buffer]> = lists.iter().map(Vec::as_slice).collect();
    let out = exe.execute(&refs)?;
    assert_eq!(out.len(), 8);
    let mut all = Vec::new();
    for per_dev in &out {
        assert_eq!(per_dev.len(), 1);
        all.extend(f32s(&per_dev[0].to_host()?));
    }
    Ok(all)
}

#[test]
fn sharded_dp_runs_on_eight_cpu_devices() {
    let (_, _, want) = dp_case();
    let shardy = run_dp("dp_shardy.mlir", &CompileOptions::spmd(8, true)).unwrap();
    assert!(rel_err(&shardy, &want) <= 1e-5);
    let gspmd = run_dp("dp_gspmd.mlir", &CompileOptions::spmd(8, false)).unwrap();
    assert!(rel_err(&gspmd, &want) <= 1e-5);
    let gspmd_da =
        run_dp("dp_gspmd.mlir", &CompileOptions::spmd(8, true).with_identity_assignment()).unwrap();
    assert!(rel_err(&gspmd_da, &want) <= 1e-5);
}

#[test]
fn shardy_module_without_the_shardy_flag_fails_cleanly() {
    let client = cpu_client(8);
    let e = client
        .compile(&Program::mlir(data("dp_shardy.mlir")), &CompileOptions::spmd(8, false))
        .unwrap_err();
    assert!(e.to_string().contains("PJRT_Client_Compile"), "{e}");
}

#[test]
fn cache_hit_returns_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ExecutableCache::at(dir.path().join("exe"));
    let client = cpu_client(1);
    let dev = &client.devices()[0];
    let prog = Program::mlir(data("tanh_mm.mlir"));
    let opts = CompileOptions::default();
    let (x, y) = tanh_inputs();
    let bx = client.buffer_from_host(&x, dev).unwrap();
    let by = client.buffer_from_host(&y, dev).unwrap();
    let cold = cache.get_or_compile(&client, &prog, &opts).unwrap();
    assert_eq!(cold.status, CacheStatus::Miss);
    let warm = cache.get_or_compile(&client, &prog, &opts).unwrap();
    assert_eq!(warm.status, CacheStatus::Hit);
    assert_eq!(warm.key, cold.key);
    let a = cold.executable.execute_one(&[&bx, &by]).unwrap()[0].to_host().unwrap();
    let b = warm.executable.execute_one(&[&bx, &by]).unwrap()[0].to_host().unwrap();
    assert_eq!(a, b);
    // Other options or other bytes give another key.
    assert_ne!(ExecutableCache::key(&client, &prog, &CompileOptions::spmd(2, false)), cold.key);
    assert_ne!(ExecutableCache::key(&client, &Program::mlir(data("bf16.mlir")), &opts), cold.key);
    // A corrupt entry is a miss and gets rewritten.
    let entry = dir.path().join("exe").join(format!("{}.pjrt", cold.key));
    std::fs::write(&entry, b"garbage").unwrap();
    assert_eq!(cache.get_or_compile(&client, &prog, &opts).unwrap().status, CacheStatus::Miss);
    assert_eq!(cache.get_or_compile(&client, &prog, &opts).unwrap().status, CacheStatus::Hit);
    assert_eq!(
        ExecutableCache::disabled().get_or_compile(&client, &prog, &opts).unwrap().status,
        CacheStatus::Disabled
    );
}

#[test]
fn one_client_from_four_threads_at_once() {
    let client = cpu_client(1);
    let dev = client.devices()[0].clone();
    let (x, y) = tanh_inputs();
    let want = tanh_mm(&f32s(&x), &f32s(&y), 2, 3, 4);
    let exe =
        client.compile(&Program::mlir(data("tanh_mm.mlir")), &CompileOptions::default()).unwrap();
    let bx = client.buffer_from_host(&x, &dev).unwrap();
    let by = client.buffer_from_host(&y, &dev).unwrap();
    let barrier = std::sync::Barrier::new(4);
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (client, exe, bx, by, dev, want, barrier) =
                (&client, &exe, &bx, &by, &dev, &want, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..50u32 {
                    // Shared buffers and per-thread buffers, mixed.
                    let own = HostTensor::from_f32(vec![2, 3], &values(6, 1)).unwrap();
                    let bown = client.buffer_from_host(&own, dev).unwrap();
                    let args: [&tpuport_pjrt::Buffer; 2] =
                        if (i + t) % 2 == 0 { [bx, by] } else { [&bown, by] };
                    let out = exe.execute_one(&args).unwrap()[0].to_host().unwrap();
                    assert!(rel_err(&f32s(&out), want) <= 1e-5);
                }
            });
        }
    });
}

#[test]
fn default_client_has_four_devices_and_count_option_works() {
    let p = common::cpu_plugin();
    let c = tpuport_pjrt::Client::new(p, &tpuport_pjrt::ClientOptions::default()).unwrap();
    assert_eq!(c.devices().len(), 4);
    assert_eq!(c.platform_name(), "cpu");
    let d = c.devices()[0].description().unwrap();
    assert_eq!(d.kind, "cpu");
    assert_eq!(cpu_client(3).devices().len(), 3);
    assert_eq!(c.default_device_assignment(1, 4).unwrap(), vec![vec![0, 1, 2, 3]]);
    let (platform, descs) = c.topology().unwrap();
    assert_eq!(platform, "cpu");
    assert!(!descs.is_empty());
    // Memory stats are unsupported on CPU: an error, not a crash.
    assert!(c.devices()[0].memory_stats().is_err());
}
