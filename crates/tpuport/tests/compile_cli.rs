//! `tpuport compile` with the real libtpu on a machine without a TPU (`make libtpu`; without
//! it each test says so in one line and passes).
//!
//! Expectations written before the first run:
//! - every JAX fixture and every torch ONNX export compiles for v5e-8 and fits one chip;
//! - the argument bytes the compiler reports equal the sum, over the parameters, of the bytes
//!   their reported layouts take (`XlaLayout::device_bytes`), and are never below the
//!   parameters' logical size;
//! - the 8-way sharded fixtures run on 8 devices, each holding less than the whole argument
//!   set, with the sharded dimension split 8 ways;
//! - a GPT-2 at a batch whose activations exceed 16 GiB is refused for lack of HBM (exit 1,
//!   "DOES NOT FIT"), an unknown custom call is a one-line error with exit 2;
//! - for each torch export, `audit`'s per-chip HBM estimate (same batch and dims) is within
//!   10 % of the compile's HBM buffers on v5e-8 (v6e-8: audit_compiler.rs);
//! - without `--plugin`, `compile` and `audit --compiler auto` find the libtpu `make libtpu`
//!   unpacked under `.cache/libtpu/<version>/` in the current directory or a parent.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};

use common::{Out, command, fixtures, output};
use serde_json::Value;

fn libtpu(test: &str) -> Option<PathBuf> {
    tpuport_testkit::libtpu(test)
}

fn compile(lib: &Path, args: &[&str]) -> Out {
    let mut c = command();
    c.arg("compile").args(args).arg("--plugin").arg(lib);
    output(&mut c)
}

fn compile_json(lib: &Path, args: &[&str]) -> (Out, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let out = compile(lib, &all);
    let v = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}); exit {}\nstdout {}\nstderr {}", out.code, out.stdout, out.stderr)
    });
    (out, v)
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64().unwrap_or_else(|| panic!("{path:?} not a number in {v}"))
}

/// The checks every successful single-program compile must pass.
fn check_compiled(what: &str, v: &Value) {
    assert_eq!(v["schema"], "tpuport.compile/1", "{what}");
    assert_eq!(v["outcome"], "compiled", "{what}");
    assert_eq!(v["per_device"]["fits"], true, "{what}");
    let args = u(v, &["per_device", "arguments"]);
    let params = v["parameters"].as_array().unwrap();
    assert!(!params.is_empty(), "{what}: no parameters listed");
    let layout_sum: u64 = params.iter().map(|p| p["device_bytes"].as_u64().unwrap_or(0)).sum();
    let logical: u64 = params.iter().map(|p| p["logical_bytes"].as_u64().unwrap_or(0)).sum();
    assert!(
        params.iter().all(|p| p["device_bytes"].is_u64()),
        "{what}: a parameter without device bytes: {params:?}"
    );
    assert_eq!(args, layout_sum, "{what}: compiler's argument bytes vs layouts");
    assert!(args >= logical, "{what}: {args} < logical {logical}");
    let total = u(v, &["per_device", "total"]);
    assert!(total >= args + u(v, &["per_device", "generated_code"]), "{what}");
    assert!(total < u(v, &["per_device", "hbm"]), "{what}");
}

#[test]
fn jax_fixtures_compile_for_v5e_and_v6e() {
    let Some(lib) = libtpu("jax_fixtures_compile_for_v5e_and_v6e") else { return };
    let jax = fixtures().join("jax");
    for name in ["mlp_b1", "mlp_b128", "cnn_b8", "encoder", "encoder_bf16"] {
        let m = jax.join(name).join("jit.mlir");
        for target in ["v5e-8", "v6e-8"] {
            let (out, v) = compile_json(&lib, &[m.to_str().unwrap(), "--target", target]);
            assert_eq!(out.code, 0, "{name} {target}: {}", out.stderr);
            let what = format!("{name} on {target}");
            check_compiled(&what, &v);
            assert_eq!(v["program_devices"], 1, "{what}");
            assert_eq!(v["slice_devices"], 8, "{what}");
            let kind = if target == "v5e-8" { "TPU v5 lite" } else { "TPU v6 lite" };
            assert_eq!(v["device_kind"], kind, "{what}");
            assert!(v["cost"]["flops"].as_f64().unwrap() > 0.0, "{what}");
        }
    }
    // The text report leads with the verdict.
    let m = jax.join("mlp_b128/jit.mlir");
    let out = compile(&lib, &[m.to_str().unwrap(), "--target", "v5e-8"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = out.stdout.lines().next().unwrap();
    assert!(first.contains("for v5e-8") && first.contains("compiled on 1 device"), "{first}");
    assert!(out.stdout.contains("fits: yes"), "{}", out.stdout);
}

#[test]
fn sharded_fixtures_use_the_slices_eight_chips() {
    let Some(lib) = libtpu("sharded_fixtures_use_the_slices_eight_chips") else { return };
    let jax = fixtures().join("jax");
    let whole = {
        let m = jax.join("mlp_b128/jit.mlir");
        let (_, v) = compile_json(&lib, &[m.to_str().unwrap(), "--target", "v5e-8"]);
        u(&v, &["per_device", "arguments"])
    };
    for name in
        ["mlp_sharded8_dp", "mlp_sharded8_dp_gspmd", "mlp_sharded8_tp", "mlp_sharded8_tp_gspmd"]
    {
        let m = jax.join(name).join("jit.mlir");
        let (out, v) = compile_json(&lib, &[m.to_str().unwrap(), "--target", "v5e-8"]);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        check_compiled(name, &v);
        assert_eq!(v["program_devices"], 8, "{name}");
        let args = u(&v, &["per_device", "arguments"]);
        assert!(args < whole, "{name}: {args} per device vs {whole} unsharded");
        let params = v["parameters"].as_array().unwrap();
        let split = params.iter().filter(|p| {
            p["sharding"].as_str().is_some_and(|s| s.contains("devices=") && s.contains('8'))
        });
        assert!(split.count() >= 1, "{name}: no parameter split 8 ways: {params:?}");
    }
    // A module with more partitions than the slice has devices is refused up front.
    let m = jax.join("mlp_sharded8_dp/jit.mlir");
    let out = compile(&lib, &[m.to_str().unwrap(), "--target", "v5e-4"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("partitioned over 8 devices but v5e-4 has 4"), "{}", out.stderr);
}

fn torch_export(model: &str, extra: &[&str]) {
    let Some(lib) = libtpu(&format!("torch_{model}_compiles")) else { return };
    let m = fixtures().join("torch").join(model).join("dynamo.onnx");
    let mut args = vec![m.to_str().unwrap(), "--target", "v5e-8", "--batch", "8"];
    args.extend(extra);
    let (out, v) = compile_json(&lib, &args);
    assert_eq!(out.code, 0, "{model}: {}", out.stderr);
    check_compiled(model, &v);
    assert_eq!(v["source"], "onnx (lowered by tpuport)", "{model}");
    let params = common::meta(&fixtures().join("torch").join(model))["params"].as_u64().unwrap();
    let args_bytes = u(&v, &["per_device", "arguments"]);
    assert!(args_bytes >= params * 4, "{model}: {args_bytes} B for {params} f32 parameters");
    // `audit`'s per-chip HBM estimate for the same model, batch and dims is within 10 % of
    // this compile's HBM buffers (arguments + outputs - aliased + temporaries, the figure
    // `audit --compiler libtpu` compares with), without a second libtpu compile.
    let libtpu_bytes = u(&v, &["per_device", "arguments"])
        + u(&v, &["per_device", "outputs"])
        + u(&v, &["per_device", "temporaries"])
        - v["per_device"]["aliased"].as_u64().unwrap_or(0);
    let mut audit = vec!["--format", "json", "audit", m.to_str().unwrap(), "--batch", "8"];
    audit.extend(extra);
    audit.extend(["--slice", "v5e-8", "--compiler", "none"]);
    let o = common::tpuport(&audit);
    assert_eq!(o.code, 0, "{model} audit: {}", o.stderr);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    let estimate = common::audit_estimate(&r, "v5e");
    let off = common::rel_diff(estimate, libtpu_bytes);
    assert!(
        off.abs() <= 0.10,
        "{model} v5e-8: audit estimate {estimate} vs libtpu {libtpu_bytes} ({:+.1} %)",
        off * 100.0
    );
}

#[test]
fn torch_resnet50_compiles() {
    torch_export("resnet50", &[]);
}

#[test]
fn torch_mobilenet_v2_compiles() {
    torch_export("mobilenet_v2", &[]);
}

#[test]
fn torch_vit_b_16_compiles() {
    torch_export("vit_b_16", &[]);
}

#[test]
fn torch_bert_base_compiles() {
    torch_export("bert_base", &["--dim", "sequence=128"]);
}

#[test]
fn torch_gpt2_compiles() {
    torch_export("gpt2", &["--dim", "sequence=128"]);
}

#[test]
fn an_uncompilable_module_is_one_line_and_exit_2() {
    let Some(lib) = libtpu("an_uncompilable_module_is_one_line_and_exit_2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("bad.mlir");
    std::fs::write(
        &m,
        "module @bad {\n  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n    \
         %0 = stablehlo.custom_call @tpuport_no_such_target(%a) : (tensor<4xf32>) -> tensor<4xf32>\n    \
         return %0 : tensor<4xf32>\n  }\n}\n",
    )
    .unwrap();
    let out = compile(&lib, &[m.to_str().unwrap(), "--target", "v5e-1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| !l.contains("hugepage_text.cc")).collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(lines[0].starts_with("error: libtpu could not compile"), "{}", lines[0]);
    assert!(lines[0].contains("for v5e-1 (v5e:1x1)"), "{}", lines[0]);
}

#[test]
fn save_writes_the_executable_and_its_manifest() {
    let Some(lib) = libtpu("save_writes_the_executable_and_its_manifest") else { return };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("mlp.tpu");
    let m = fixtures().join("jax/mlp_b128/jit.mlir");
    let (out, v) = compile_json(
        &lib,
        &[m.to_str().unwrap(), "--target", "v6e-4", "--save", exe.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let bytes = std::fs::read(&exe).unwrap();
    assert_eq!(v["saved"]["bytes"].as_u64(), Some(bytes.len() as u64));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("mlp.tpu.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["schema"], "tpuport.tpu-executable/1");
    assert_eq!(manifest["topology"], "v6e:2x2");
    assert_eq!(manifest["executable_bytes"].as_u64(), Some(bytes.len() as u64));
    assert_eq!(manifest["executable_sha256"], v["saved"]["sha256"]);
    assert_eq!(manifest["model_sha256"], v["model_sha256"]);
    assert!(manifest["compiler"]["version"].is_string(), "{manifest}");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
}

#[test]
fn bad_targets_and_missing_libtpu_are_one_line_errors() {
    let m = fixtures().join("jax/mlp_b1/jit.mlir");
    let mut c = command();
    c.args(["compile", m.to_str().unwrap(), "--target", "v5p-4"]);
    let out = output(&mut c);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("count TensorCores"), "{}", out.stderr);
    let mut c = command();
    c.args([
        "compile",
        m.to_str().unwrap(),
        "--target",
        "v5e-8",
        "--plugin",
        "/nonexistent/libtpu.so",
    ]);
    let out = output(&mut c);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("/nonexistent/libtpu.so"), "{}", out.stderr);
}

#[test]
fn gpt2_at_a_batch_over_16_gib_does_not_fit_one_v5e_chip() {
    let Some(lib) = libtpu("gpt2_at_a_batch_over_16_gib_does_not_fit_one_v5e_chip") else {
        return;
    };
    // Batch 32 x 1024 tokens needs 15.0 GiB on one v5e chip (measured); batch 64 doubles the
    // logits (f32[64,1024,50257] alone is 13.2 GB) and cannot fit.
    let m = fixtures().join("torch/gpt2/dynamo.onnx");
    let (out, v) = compile_json(
        &lib,
        &[m.to_str().unwrap(), "--target", "v5e-1", "--batch", "64", "--dim", "sequence=1024"],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(v["outcome"], "out_of_memory");
    assert_eq!(v["per_device"]["fits"], false);
    let limit = u(&v, &["per_device", "compiler_hbm_limit"]);
    let need = u(&v, &["per_device", "total"]);
    let hbm = u(&v, &["per_device", "hbm"]);
    assert!(limit <= hbm && limit > hbm / 10 * 9, "compiler limit {limit} vs HBM {hbm}");
    assert!(need > limit, "{need} vs {limit}");
    assert!(v["compiler_message"].as_str().unwrap().contains("RESOURCE_EXHAUSTED"), "{v}");
}

/// What `make libtpu` leaves in a checkout, `.cache/libtpu/<version>/libtpu/libtpu.so` (here a
/// link to the real library), in a scratch project; `compile` and `audit --compiler auto` run
/// from a folder below it with no `--plugin` and no plugin variable find it.
#[test]
fn compile_and_audit_find_make_libtpus_copy_without_plugin() {
    let Some(lib) = libtpu("compile_and_audit_find_make_libtpus_copy_without_plugin") else {
        return;
    };
    let lib = lib.canonicalize().unwrap();
    let version = lib
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.split('.').all(|p| p.parse::<u64>().is_ok()))
        .unwrap_or_else(|| "0.0.0".to_owned());
    let proj = tempfile::tempdir().unwrap();
    let dst = proj.path().join(".cache/libtpu").join(&version).join("libtpu/libtpu.so");
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&lib, &dst).unwrap();
    let cwd = proj.path().join("work/sub");
    std::fs::create_dir_all(&cwd).unwrap();
    let empty_cache = proj.path().join("xdg");
    let run = |args: &[&str]| {
        let mut c = command();
        c.args(args)
            .current_dir(&cwd)
            .env_remove("TPUPORT_PJRT_PLUGIN")
            .env_remove("TPU_LIBRARY_PATH")
            .env("XDG_CACHE_HOME", &empty_cache);
        output(&mut c)
    };
    let m = fixtures().join("jax/mlp_b128/jit.mlir");
    let m = m.to_str().unwrap();
    let out = run(&["--format", "json", "compile", m, "--target", "v5e-1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "compiled", "{v}");
    let used = PathBuf::from(v["compiler"]["path"].as_str().unwrap());
    assert_eq!(used.canonicalize().unwrap(), lib, "{v}");
    let out = run(&["--format", "json", "audit", m, "--slice", "v5e-8"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    let c = &r["compiler"];
    assert_eq!(c["outcome"], "compiled", "no compiler check: {}", r["notes"]);
    assert!(c["compiler"].as_str().unwrap().starts_with("libtpu"), "{c}");
    // doctor says where it was found.
    let out = run(&["--format", "json", "doctor", "--no-python"]);
    let d: Value = serde_json::from_str(&out.stdout).unwrap();
    let found = d["plugins"].as_array().unwrap().iter().find(|p| p["kind"] == "tpu").unwrap();
    let want = format!(".cache/libtpu in {}", proj.path().canonicalize().unwrap().display());
    assert!(found["source"].as_str().unwrap().starts_with(&want), "{found} vs {want}");
}

/// A matmul result, a batched contraction's operand and its result, returned so that their
/// layouts are the compiler's own choice like those of the values inside a program.
const COMPUTED: &str = r#"func.func @main(%x: tensor<1024x512xf32>, %w: tensor<512x64xf32>, %q: tensor<96x128x64xf32>, %k: tensor<96x128x64xf32>) -> (tensor<1024x64xf32>, tensor<96x128x128xf32>, tensor<96x128x64xf32>) {
  %h = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<1024x512xf32>, tensor<512x64xf32>) -> tensor<1024x64xf32>
  %t = stablehlo.tanh %h : tensor<1024x64xf32>
  %s = stablehlo.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<96x128x64xf32>, tensor<96x128x64xf32>) -> tensor<96x128x128xf32>
  %v = stablehlo.tanh %q : tensor<96x128x64xf32>
  return %t, %s, %v : tensor<1024x64xf32>, tensor<96x128x128xf32>, tensor<96x128x64xf32>
}
"#;

/// `audit` sizes matmul operands with the layout rules measured on libtpu's arguments
/// (`tpuport_hw::device_layout`); values the compiler computes get the same layouts: the
/// f32[1024,64] matmul result is stored transposed and unpadded (`{0,1:T(8,128)}`, 256 KiB,
/// where logical order would pad 64 to 128 lanes), the [96,128,64] with its 64 major.
#[test]
fn computed_values_follow_the_argument_layout_rules() {
    let Some(lib) = libtpu("computed_values_follow_the_argument_layout_rules") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("computed.mlir");
    std::fs::write(&m, COMPUTED).unwrap();
    let (out, v) = compile_json(&lib, &[m.to_str().unwrap(), "--target", "v5e-1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cat = tpuport_hw::Catalog::builtin();
    let chip = cat.chip("v5e").unwrap();
    let outputs = v["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 3, "{v}");
    for o in outputs {
        let shape: Vec<u64> =
            o["shard"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        let want = tpuport_hw::device_layout(&shape, tpuport_model::DType::F32, chip).unwrap();
        assert_eq!(o["layout"], want.notation().as_str(), "{o}");
        assert_eq!(o["device_bytes"], want.bytes, "{o}");
        assert_eq!(o["device_bytes"], o["logical_bytes"], "{o}");
    }
}
