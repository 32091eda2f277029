//! `tpuport doctor`, `run` and `bench` against the real CPU plugin and the JAX fixtures.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
#![allow(unreachable_pub, reason = "the shared test helpers are pub")]

mod common;

use std::path::{Path, PathBuf};

use tpuport_model::{DType, HostTensor};

use common::Out;

/// Runs the binary with its own executable cache directory.
fn tpuport(cache: &Path, args: &[&str]) -> Out {
    common::output(common::runtime_command(cache).args(args))
}

fn cpu_plugin_present() {
    assert!(tpuport_pjrt::find_cpu().is_some(), "CPU PJRT plugin not found: run `make venv`");
}

fn jax(name: &str) -> PathBuf {
    common::fixtures().join("jax").join(name)
}

fn input_args(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for i in 0.. {
        let p = dir.join(format!("inputs/arg{i}.npy"));
        if !p.is_file() {
            break;
        }
        v.push("--input".to_owned());
        v.push(p.to_str().unwrap().to_owned());
    }
    v
}

fn max_rel_err(a: &HostTensor, b: &HostTensor) -> f64 {
    assert_eq!(a.shape, b.shape);
    let (x, y) = (a.to_f64().unwrap(), b.to_f64().unwrap());
    let scale = y.iter().fold(1f64, |m, v| m.max(v.abs()));
    x.iter().zip(&y).fold(0f64, |m, (p, q)| m.max((p - q).abs())) / scale
}

fn run_fixture(cache: &Path, name: &str, form: &str, extra: &[&str]) -> (Out, PathBuf) {
    let dir = jax(name);
    let out_dir = cache.join(format!("out-{name}-{form}"));
    let model = dir.join(form);
    let mut args: Vec<String> =
        vec!["--format".into(), "json".into(), "run".into(), model.to_str().unwrap().into()];
    args.extend(input_args(&dir));
    args.extend(["--out".into(), out_dir.to_str().unwrap().into()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    (tpuport(cache, &refs), out_dir)
}

#[test]
fn doctor_lists_the_cpu_plugin() {
    cpu_plugin_present();
    let tmp = tempfile::tempdir().unwrap();
    let o = tpuport(tmp.path(), &["doctor", "--no-python"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("xla_cpu_pjrt.so"), "{}", o.stdout);
    assert!(o.stdout.contains("PJRT API 0.81"), "{}", o.stdout);
    assert!(o.stdout.contains("StableHLO 0.9.0 .. 1.13.3"), "{}", o.stdout);
    assert!(o.stdout.contains("platform cpu"), "{}", o.stdout);
    // The frameworks are asked of the project venv by name: a binary installed from the wheel
    // (`make test-wheel`) would otherwise ask its own environment's Python, which has no jax.
    let venv_py = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let o = common::output(
        common::runtime_command(tmp.path())
            .env("TPUPORT_PYTHON", &venv_py)
            .args(["--format", "json", "doctor"]),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let cpu =
        v["plugins"].as_array().unwrap().iter().find(|p| p["kind"] == "cpu").expect("cpu plugin");
    assert_eq!(cpu["devices"], 4);
    assert_eq!(cpu["info"]["api_version"], serde_json::json!([0, 81]));
    assert_eq!(v["python"]["jax"], "0.10.2");
}

#[test]
fn doctor_reports_a_bad_plugin_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("libfake_pjrt.so");
    std::fs::write(&fake, b"not a library").unwrap();
    let o = tpuport(tmp.path(), &["doctor", "--no-python", "--plugin", fake.to_str().unwrap()]);
    assert!(o.stdout.contains("error: cannot load PJRT plugin"), "{}", o.stdout);
}

#[test]
fn run_matches_jax_for_text_and_bytecode_and_uses_the_cache() {
    cpu_plugin_present();
    let tmp = tempfile::tempdir().unwrap();
    let want = tpuport_formats::npy::read_npy(&jax("mlp_b1").join("outputs/out0.npy")).unwrap();
    for form in ["jit.mlir", "export.mlirbc"] {
        let (o, out) = run_fixture(tmp.path(), "mlp_b1", form, &[]);
        assert_eq!(o.code, 0, "{form}: {}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["cache"], "miss", "{form}");
        let got = tpuport_formats::npy::read_npy(&out.join("out0.npy")).unwrap();
        assert!(max_rel_err(&got, &want) <= 1e-5, "{form}");
        let (o, out2) = run_fixture(tmp.path(), "mlp_b1", form, &[]);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["cache"], "hit", "{form}: {}", o.stderr);
        assert_eq!(tpuport_formats::npy::read_npy(&out2.join("out0.npy")).unwrap(), got);
    }
    let (o, _) = run_fixture(tmp.path(), "mlp_b1", "jit.mlir", &["--no-cache"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["cache"], "disabled");
}

#[test]
fn sharded_fixtures_run_on_eight_cpu_devices() {
    cpu_plugin_present();
    let tmp = tempfile::tempdir().unwrap();
    for name in
        ["mlp_sharded8_dp", "mlp_sharded8_tp", "mlp_sharded8_dp_gspmd", "mlp_sharded8_tp_gspmd"]
    {
        let (o, out) = run_fixture(tmp.path(), name, "jit.mlir", &[]);
        assert_eq!(o.code, 0, "{name}: {}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["devices"], 8, "{name}");
        let want = tpuport_formats::npy::read_npy(&jax(name).join("outputs/out0.npy")).unwrap();
        let got = tpuport_formats::npy::read_npy(&out.join("out0.npy")).unwrap();
        assert!(max_rel_err(&got, &want) <= 1e-5, "{name}");
    }
}

#[test]
fn wrong_inputs_are_refused_before_the_plugin_with_the_input_named() {
    cpu_plugin_present();
    let tmp = tempfile::tempdir().unwrap();
    let dir = jax("mlp_b1");
    let model = dir.join("jit.mlir");
    let m = model.to_str().unwrap();
    let out = tmp.path().join("o");
    let o_s = out.to_str().unwrap();
    let args = input_args(&dir);
    let inputs: Vec<&str> = args.iter().map(String::as_str).collect();
    // Wrong dtype for arg0.
    let bad = tmp.path().join("bad.npy");
    let t = HostTensor::new(DType::I32, vec![784, 512], vec![0; 784 * 512 * 4]).unwrap();
    tpuport_formats::npy::write_npy(&bad, &t).unwrap();
    let mut a = vec!["run", m, "--input", bad.to_str().unwrap()];
    a.extend_from_slice(&inputs[2..]);
    a.extend_from_slice(&["--out", o_s]);
    let o = tpuport(tmp.path(), &a);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("input arg0 (argument 0): expected f32[784,512], got i32[784, 512]"),
        "{}",
        o.stderr
    );
    // Wrong shape for the last input, by name.
    let bad2 = tmp.path().join("bad2.npy");
    tpuport_formats::npy::write_npy(
        &bad2,
        &HostTensor::from_f32(vec![2, 784], &vec![0.0; 1568]).unwrap(),
    )
    .unwrap();
    let named = format!("arg4={}", bad2.display());
    let mut a = vec!["run", m];
    a.extend_from_slice(&inputs[..8]);
    a.extend_from_slice(&["--input", &named, "--out", o_s]);
    let o = tpuport(tmp.path(), &a);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("input arg4 (argument 4): expected f32[1,784], got f32[2, 784]"),
        "{}",
        o.stderr
    );
    // Too few inputs.
    let mut a = vec!["run", m];
    a.extend_from_slice(&inputs[..8]);
    a.extend_from_slice(&["--out", o_s]);
    let o = tpuport(tmp.path(), &a);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no --input for arg4 (arg4)"), "{}", o.stderr);
    // Unknown name.
    let o = tpuport(tmp.path(), &["run", m, "--input", "nope=x.npy", "--out", o_s]);
    assert!(o.stderr.contains("has no argument named \"nope\""), "{}", o.stderr);
    assert!(!out.exists(), "nothing written on refused input");
}

#[test]
fn bench_reports_latency_percentiles_and_flops() {
    cpu_plugin_present();
    let tmp = tempfile::tempdir().unwrap();
    let model = jax("mlp_b1").join("jit.mlir");
    let o = tpuport(
        tmp.path(),
        &[
            "--format",
            "json",
            "bench",
            model.to_str().unwrap(),
            "--iters",
            "30",
            "--warmup",
            "3",
            "--batch-sweep",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    // The sweep finds mlp_b1 and mlp_b128.
    let batches: Vec<u64> = rows.iter().map(|r| r["batch"].as_u64().unwrap()).collect();
    assert_eq!(batches, vec![1, 128], "{}", o.stdout);
    for r in rows {
        let (p50, p90, p99) = (
            r["p50_us"].as_f64().unwrap(),
            r["p90_us"].as_f64().unwrap(),
            r["p99_us"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p90 && p90 <= p99, "{r}");
        assert!(r["compile_cached_ms"].as_f64().is_some(), "{r}");
        assert!(r["flops"].as_f64().unwrap() > 800_000.0, "{r}");
        assert!(r["achieved_flop_per_s"].as_f64().unwrap() > 0.0);
        // mlp's parameters alone are 784*512 + 512 + 512*10 + 10 f32 values.
        let mem = &r["compiled_memory"];
        assert!(mem["argument"].as_i64().unwrap() >= 4 * 407_050, "{r}");
        assert!(mem["output"].as_i64().unwrap() >= 40, "{r}");
        assert!(mem["temp"].as_i64().is_some(), "{r}");
        assert_eq!(r["platform"], "cpu");
        assert!(r["peak_fraction"].is_null() && r["chip"].is_null(), "{r}");
        let (b, a) = (r["rss_before_bytes"].as_u64(), r["rss_after_bytes"].as_u64());
        assert_eq!(b.is_some() && a.is_some(), cfg!(target_os = "linux"), "{r}");
    }
    let o =
        tpuport(tmp.path(), &["bench", model.to_str().unwrap(), "--iters", "5", "--warmup", "0"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("latency over 5 iters"), "{}", o.stdout);
    assert!(o.stdout.contains("compiled memory: arguments 1.56 MiB"), "{}", o.stdout);
    assert!(o.stdout.contains("peak: unknown for cpu device"), "{}", o.stdout);
    if cfg!(target_os = "linux") {
        assert!(o.stdout.contains("resident memory: "), "{}", o.stdout);
    }
}
