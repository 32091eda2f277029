//! `tpuport batch` as a process: outputs equal `tpuport run` on the same rows (a JAX MLP over
//! `.npy` shards with padded last batches; MobileNetV2 and ResNet-50 lowered from ONNX over
//! generated JPEGs), SIGKILL then resume writes byte-identical files, three shards equal one
//! run, corrupt inputs are skipped and recorded (or stop the run with `--fail-fast`) without
//! losing parts, and a repository entry's `[image]` table equals the image flags.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tpuport_formats::tensors::SplitMix;
use tpuport_model::{DType, HostTensor};

const MLP_ROW: usize = 784;

/// A model-repository entry for the JAX MLP fixture: its bucket-1 and bucket-128 modules with
/// the weights as arguments, the weights in a safetensors file.
fn mlp_entry(dir: &Path) -> PathBuf {
    let fx = common::fixtures().join("jax");
    let m = dir.join("mlp");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::copy(fx.join("mlp_b1/jit.mlir"), m.join("m1.mlir")).unwrap();
    std::fs::copy(fx.join("mlp_b128/jit.mlir"), m.join("m128.mlir")).unwrap();
    let names = ["w1", "b1", "w2", "b2"];
    let tensors: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let t = tpuport_formats::npy::read_npy(&fx.join(format!("mlp_b128/inputs/arg{i}.npy")))
                .unwrap();
            tpuport_formats::safetensors::TensorOut {
                name: (*n).to_owned(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                data: t.into_data().into(),
            }
        })
        .collect();
    tpuport_formats::safetensors::write_safetensors(&m.join("weights.safetensors"), &tensors, &[])
        .unwrap();
    std::fs::write(
        m.join("config.toml"),
        "[model]\nkind = \"stablehlo\"\npath = \"weights.safetensors\"\n\
         modules = { \"1\" = \"m1.mlir\", \"128\" = \"m128.mlir\" }\n\
         args = [\"weight:w1\", \"weight:b1\", \"weight:w2\", \"weight:b2\", \"input:x\"]\n",
    )
    .unwrap();
    m
}

fn random_rows(rows: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix(seed);
    (0..rows * MLP_ROW).map(|_| rng.normal() as f32).collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn write_rows(path: &Path, rows: usize, seed: u64) -> Vec<f32> {
    let v = random_rows(rows, seed);
    let t = HostTensor::new(DType::F32, vec![rows as u64, MLP_ROW as u64], bytes(&v)).unwrap();
    tpuport_formats::npy::write_npy(path, &t).unwrap();
    v
}

fn batch(cache: &Path, model: &Path, input: &Path, out: &Path, extra: &[&str]) -> common::Out {
    let mut c = common::runtime_command(cache);
    c.args(["--format", "json", "batch"])
        .arg(model)
        .arg("--input")
        .arg(input)
        .arg("--output")
        .arg(out)
        .args(extra);
    common::output(&mut c)
}

/// Every file of a folder (name → bytes), temporaries excluded.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// The data rows of an `.npy` written by batch (f32, C order).
fn npy_f32(path: &Path) -> (Vec<u64>, Vec<u8>) {
    let t = tpuport_formats::npy::read_npy(path).unwrap();
    (t.shape.clone(), t.into_data())
}

#[test]
fn mlp_over_npy_shards_equals_run_including_padded_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    // a.npy: 300 rows → parts of 256 and 44 rows; b.npy: 13 rows. Windows of 128: the 44- and
    // 13-row windows are padded into bucket 128 (the only bucket that holds them).
    let a = write_rows(&input.join("a.npy"), 300, 1);
    let b = write_rows(&input.join("b.npy"), 13, 2);
    let out = tmp.path().join("out");
    let o = batch(&cache, &model, &input, &out, &["--rows-per-part", "256", "--no-cache"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(s["schema"], "tpuport.batch/1");
    assert_eq!(s["rows"], 313);
    assert_eq!(s["bad_rows"], 0);
    assert_eq!(s["parts_written"], 3);
    assert_eq!(s["batches"], 4);
    let waste = s["padding_waste"].as_f64().unwrap();
    assert!((waste - (84.0 + 115.0) / 512.0).abs() < 1e-9, "{waste}");
    assert!(s["device_busy"].as_f64().unwrap() > 0.0);
    // Expected parts: (file rows, first row, rows).
    let parts = [(&a, 0usize, 256usize), (&a, 256, 44), (&b, 0, 13)];
    let fx = common::fixtures().join("jax/mlp_b128/inputs");
    for (p, (src, first, n)) in parts.iter().enumerate() {
        let (shape, got) = npy_f32(&out.join(format!("part-{p:05}.output0.npy")));
        assert_eq!(shape, vec![*n as u64, 10], "part {p}");
        let keys: Vec<String> = serde_json::from_slice(
            &std::fs::read(out.join(format!("part-{p:05}.keys.json"))).unwrap(),
        )
        .unwrap();
        let file = if p < 2 { "a.npy" } else { "b.npy" };
        assert_eq!(keys.len(), *n);
        assert_eq!(keys[0], format!("{file}:{first}"));
        // The same rows through `tpuport run`, 128 at a time, zero-padded like batch pads.
        let mut want = Vec::new();
        for w in (0..*n).step_by(128) {
            let rows = (*n - w).min(128);
            let mut x = src[(first + w) * MLP_ROW..(first + w + rows) * MLP_ROW].to_vec();
            x.resize(128 * MLP_ROW, 0.0);
            let xp = tmp.path().join("x.npy");
            let t = HostTensor::new(DType::F32, vec![128, MLP_ROW as u64], bytes(&x)).unwrap();
            tpuport_formats::npy::write_npy(&xp, &t).unwrap();
            let rdir = tmp.path().join(format!("run-{p}-{w}"));
            let mut c = common::runtime_command(&cache);
            c.arg("run").arg(common::fixtures().join("jax/mlp_b128/jit.mlir"));
            for i in 0..4 {
                c.arg("--input").arg(fx.join(format!("arg{i}.npy")));
            }
            c.arg("--input").arg(&xp).arg("--out").arg(&rdir);
            let r = common::output(&mut c);
            assert_eq!(r.code, 0, "{}", r.stderr);
            let (_, y) = npy_f32(&rdir.join("out0.npy"));
            want.extend_from_slice(&y[..rows * 10 * 4]);
        }
        assert!(got == want, "part {p}: batch and run differ");
    }
    // Nothing padded was written, nothing is left over.
    let names: Vec<String> = files(&out).into_keys().collect();
    assert_eq!(names.len(), 3 * 2 + 2, "{names:?}");
    assert_eq!(std::fs::read(out.join("_errors.jsonl")).unwrap(), b"");
}

/// 24 files of 200 rows; with parts of 128 rows, 48 parts.
fn big_input(dir: &Path) -> PathBuf {
    let input = dir.join("big");
    std::fs::create_dir_all(&input).unwrap();
    for f in 0..24 {
        write_rows(&input.join(format!("shard-{f:02}.npy")), 200, 100 + f);
    }
    input
}

fn done_parts(manifest: &Path) -> usize {
    std::fs::read(manifest)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["done"].as_array().map(Vec::len))
        .unwrap_or(0)
}

#[test]
fn sigkill_then_resume_writes_identical_files() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let input = big_input(tmp.path());
    // Bucket 1: 4,800 executions, slow enough to be killed at chosen points.
    let args = ["--rows-per-part", "128", "--decoders", "2", "--batch", "1"];
    let whole = tmp.path().join("whole");
    let o = batch(&cache, &model, &input, &whole, &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let want = files(&whole);
    assert_eq!(want.len(), 48 * 2 + 2);
    // How long a whole run takes with the executable cached (a release binary runs the 4,800
    // executions in well under a second): the random kills land inside it.
    let t = Instant::now();
    let o = batch(&cache, &model, &input, &tmp.path().join("timed"), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let run_ms = u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX).max(2);
    let mut rng = SplitMix(7);
    // Kill after k parts are recorded, and twice at a random moment of the run (k = 0).
    for (trial, k) in [1usize, 17, 40, 0, 0].into_iter().enumerate() {
        let out = tmp.path().join(format!("killed-{trial}"));
        let manifest = out.join("_manifest.json");
        // A run can still end before the kill on a loaded machine: then the trial starts
        // again on a fresh folder, killing earlier.
        let mut window_ms = run_ms * 4 / 5;
        let mut before = 48;
        for _attempt in 0..5 {
            let _ = std::fs::remove_dir_all(&out);
            let mut c = common::runtime_command(&cache);
            c.args(["batch"]).arg(&model).arg("--input").arg(&input).arg("--output").arg(&out);
            let mut child =
                c.args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            let t = Instant::now();
            if k == 0 {
                std::thread::sleep(Duration::from_millis(rng.next_u64() % window_ms.max(1)));
            } else {
                while done_parts(&manifest) < k && t.elapsed() < Duration::from_secs(120) {
                    if child.try_wait().unwrap().is_some() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            child.kill().unwrap(); // SIGKILL
            let _ = child.wait();
            before = done_parts(&manifest);
            if before < 48 {
                break;
            }
            window_ms /= 2;
        }
        assert!(before < 48, "trial {trial}: the run finished before the kill, 5 times");
        let o = batch(&cache, &model, &input, &out, &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(s["parts_skipped"].as_u64().unwrap() as usize, before, "trial {trial}");
        assert_eq!(s["parts_written"].as_u64().unwrap() as usize, 48 - before, "trial {trial}");
        let got = files(&out);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "trial {trial}: other files (stale temporaries?)"
        );
        for (name, bytes) in &want {
            assert!(&got[name] == bytes, "trial {trial}: {name} differs after resume");
        }
    }
}

#[test]
fn three_shards_equal_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for f in 0..4 {
        write_rows(&input.join(format!("s{f}.npy")), 150 + 37 * f as usize, 200 + f);
    }
    let args = ["--rows-per-part", "128"];
    let one = tmp.path().join("one");
    assert_eq!(batch(&cache, &model, &input, &one, &args).code, 0);
    let sharded = tmp.path().join("sharded");
    // Shard 1 from the Indexed Job variable, the others from the flag.
    for i in 0..3 {
        let mut c = common::runtime_command(&cache);
        c.env("TPUPORT_SHARD_COUNT", "3")
            .arg("batch")
            .arg(&model)
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(&sharded)
            .args(args);
        if i == 1 {
            c.env("JOB_COMPLETION_INDEX", "1");
        } else {
            c.env_remove("JOB_COMPLETION_INDEX").args(["--shard-index", &i.to_string()]);
        }
        let o = common::output(&mut c);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    let data = |d: &Path| -> BTreeMap<String, Vec<u8>> {
        files(d).into_iter().filter(|(n, _)| n.starts_with("part-")).collect()
    };
    let (a, b) = (data(&one), data(&sharded));
    assert!(a.len() >= 2 * 6, "{:?}", a.keys());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, v) in &a {
        assert!(&b[k] == v, "{k} differs between the sharded and the single run");
    }
    let mut parts = Vec::new();
    for i in 0..3 {
        let m = sharded.join(format!("_manifest.shard-{i:05}-of-00003.json"));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(m).unwrap()).unwrap();
        for d in v["done"].as_array().unwrap() {
            let p = d["part"].as_u64().unwrap();
            assert_eq!(p % 3, i, "part {p} written by shard {i}");
            parts.push(p);
        }
    }
    parts.sort_unstable();
    assert_eq!(parts, (0..parts.len() as u64).collect::<Vec<_>>());
}

#[test]
fn corrupt_inputs_are_recorded_and_fail_fast_keeps_finished_parts() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    write_rows(&input.join("a-good.npy"), 130, 11);
    // b: the header says 50 rows, the data stops in the middle of row 30.
    write_rows(&input.join("b-truncated.npy"), 50, 12);
    let full = std::fs::read(input.join("b-truncated.npy")).unwrap();
    let cut = full.len() - 50 * MLP_ROW * 4 + 30 * MLP_ROW * 4 + 100;
    std::fs::write(input.join("b-truncated.npy"), &full[..cut]).unwrap();
    std::fs::write(input.join("c-garbage.npy"), b"this is not an npy file").unwrap();
    // d: rows of the wrong width.
    let t = HostTensor::new(DType::F32, vec![2, 3], bytes(&[0.0; 6])).unwrap();
    tpuport_formats::npy::write_npy(&input.join("d-shape.npy"), &t).unwrap();
    let out = tmp.path().join("out");
    let o = batch(&cache, &model, &input, &out, &["--rows-per-part", "128"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(s["rows"], 130 + 30);
    assert_eq!(s["bad_rows"], 20 + 2);
    assert!(o.stderr.contains("skipped b-truncated.npy:30: truncated"), "{}", o.stderr);
    let errors: Vec<serde_json::Value> = std::fs::read_to_string(out.join("_errors.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let keys: Vec<&str> = errors.iter().map(|e| e["key"].as_str().unwrap()).collect();
    let mut want: Vec<String> = (30..50).map(|i| format!("b-truncated.npy:{i}")).collect();
    want.push("c-garbage.npy".into());
    want.push("d-shape.npy".into());
    assert_eq!(keys, want);
    assert!(errors[20]["reason"].as_str().unwrap().contains("magic"), "{errors:?}");
    assert!(errors[21]["reason"].as_str().unwrap().contains("784"), "{errors:?}");
    // The truncated file's complete rows were written.
    let (shape, _) = npy_f32(&out.join("part-00002.output0.npy"));
    assert_eq!(shape, vec![30, 10]);

    // --fail-fast: parts before the bad row stay, the run stops with exit 2 and one line.
    let ff = tmp.path().join("ff");
    let o = batch(
        &cache,
        &model,
        &input,
        &ff,
        &["--rows-per-part", "128", "--fail-fast", "--decoders", "1"],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    let last = o.stderr.lines().last().unwrap();
    assert!(last.starts_with("error:") && last.contains("b-truncated.npy:30"), "{}", o.stderr);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ff.join("_manifest.json")).unwrap()).unwrap();
    let done: Vec<u64> =
        m["done"].as_array().unwrap().iter().map(|d| d["part"].as_u64().unwrap()).collect();
    assert_eq!(done, vec![0, 1]);
    assert!(ff.join("part-00001.output0.npy").is_file());
    assert!(
        std::fs::read_to_string(ff.join("_errors.jsonl")).unwrap().contains("b-truncated.npy:30")
    );
}

#[test]
fn bad_invocations_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    write_rows(&input.join("a.npy"), 3, 1);
    let out = tmp.path().join("out");
    for (extra, want) in [
        (vec!["--batch", "7"], "not one of the model's buckets"),
        (vec!["--shard-index", "3", "--shard-count", "3"], "outside 0..3"),
        (vec!["--rows-per-part", "0"], "--rows-per-part"),
    ] {
        let o = batch(&cache, &model, &input, &out, &extra);
        assert_eq!(o.code, 2, "{extra:?}: {}", o.stderr);
        assert!(o.stderr.contains(want), "{extra:?}: {}", o.stderr);
        assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    }
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = batch(&cache, &model, &empty, &out, &[]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("no .npy"), "{}", o.stderr);
    // A manifest from another run is refused, not silently mixed.
    assert_eq!(batch(&cache, &model, &input, &out, &[]).code, 0);
    write_rows(&input.join("b.npy"), 3, 2);
    let o = batch(&cache, &model, &input, &out, &[]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("--restart"), "{}", o.stderr);
    assert_eq!(batch(&cache, &model, &input, &out, &["--restart"]).code, 0);
}

/// A model-repository entry around a hand-written StableHLO module at bucket 4 that sums each
/// channel of an `[3, 8, 8]` image row (no weights, nothing to lower), with `image` appended
/// to its `config.toml`.
fn channel_sum_entry(dir: &Path, name: &str, image: &str) -> PathBuf {
    let m = dir.join(name);
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(
        m.join("m4.mlir"),
        "module @channel_sum {\n  func.func public @main(%arg0: tensor<4x3x8x8xf32>) -> \
         tensor<4x3xf32> {\n    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n    \
         %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = \
         [2, 3] : (tensor<4x3x8x8xf32>, tensor<f32>) -> tensor<4x3xf32>\n    \
         return %0 : tensor<4x3xf32>\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        m.join("config.toml"),
        format!("[model]\nkind = \"stablehlo\"\nmodules = {{ \"4\" = \"m4.mlir\" }}\n{image}"),
    )
    .unwrap();
    m
}

/// The `[image]` table of a repository entry's config gives the same bytes as the same values
/// given as flags; a flag overrides its field; a config value that does not fit the model, or
/// a malformed one, is a one-line error naming the file and the field.
#[test]
fn config_image_table_equals_the_flags_and_a_flag_overrides_it() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let imgs = tmp.path().join("imgs");
    std::fs::create_dir_all(&imgs).unwrap();
    let mut rng = SplitMix(5);
    // 5 images: a window of 4, then 1 row padded into bucket 4.
    for i in 0..5u32 {
        let img = image::RgbImage::from_fn(12 + i, 10, |_, _| {
            let v = rng.next_u64();
            image::Rgb([v as u8, (v >> 8) as u8, (v >> 16) as u8])
        });
        img.save(imgs.join(format!("img{i}.png"))).unwrap();
    }
    let mean = "0.485,0.456,0.406";
    let std = "0.229,0.224,0.225";
    let plain = channel_sum_entry(tmp.path(), "plain", "");
    let configured = channel_sum_entry(
        tmp.path(),
        "configured",
        "[image]\nsize = [8, 8]\nmean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 0.225]\n\
         layout = \"NCHW\"\n",
    );
    let part = |out: &Path| std::fs::read(out.join("part-00000.output0.npy")).unwrap();
    let run = |model: &Path, out: &str, extra: &[&str]| {
        let out = tmp.path().join(out);
        let o = batch(&cache, model, &imgs, &out, extra);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!((s["rows"].as_u64(), s["batches"].as_u64()), (Some(5), Some(2)));
        part(&out)
    };
    let by_flags = run(&plain, "flags", &["--mean", mean, "--std", std]);
    let by_config = run(&configured, "config", &[]);
    assert!(by_config == by_flags, "the config's [image] and the same flags differ");
    // The defaults (mean 0, std 1) give other bytes: the config's values were applied.
    assert!(run(&plain, "defaults", &[]) != by_flags);
    // --mean overrides the config's mean alone: the same as both flags with that mean.
    let other = "0.5,0.5,0.5";
    let overridden = run(&configured, "override", &["--mean", other]);
    assert!(overridden != by_config, "--mean did not override the config");
    assert!(overridden == run(&plain, "flags2", &["--mean", other, "--std", std]));

    for (name, table, want) in [
        ("big", "[image]\nsize = [9, 9]\n", "image.size 9x9 differs from the model's input 8x8"),
        ("nhwc", "[image]\nlayout = \"NHWC\"\n", "image.layout Nhwc does not fit"),
        ("short", "[image]\nmean = [0.5, 0.5]\n", "image.mean: 2 value(s); give 3"),
        ("typo", "[image]\nmeans = [0.5, 0.5, 0.5]\n", "unknown field `means`"),
    ] {
        let entry = channel_sum_entry(tmp.path(), name, table);
        let o = batch(&cache, &entry, &imgs, &tmp.path().join(format!("o-{name}")), &[]);
        assert_eq!(o.code, 2, "{name}: {}", o.stderr);
        // One line (after the model's load note when the model loaded first).
        let errors: Vec<&str> = o.stderr.lines().filter(|l| !l.contains("loaded on")).collect();
        assert_eq!(errors.len(), 1, "{name}: {}", o.stderr);
        assert!(
            errors[0].starts_with("error:") && errors[0].contains(want),
            "{name}: {}",
            o.stderr
        );
        assert!(errors[0].contains(&format!("{name}/config.toml")), "{name}: {}", o.stderr);
    }
    // A flag that fits the model wins over a config value that does not.
    let entry = tmp.path().join("big");
    let o = batch(&cache, &entry, &imgs, &tmp.path().join("o-big2"), &["--image-size", "8"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// A torchvision model (torch.onnx dynamo export, `fixture` under the fixture set) lowered at
/// `buckets`, over 6 generated JPEGs of assorted sizes and one truncated JPEG: outputs equal
/// `tpuport run` on the windows batch forms, the broken image is recorded.
///
/// Windows are 4 listed files in path order, the broken one included (`img2b-broken.jpg` sorts
/// after `img2.jpg`), so each window holds 3 good rows padded into bucket 4 (the last window is
/// the last 3 files). The reference must put every row at the same position of the same padded
/// batch: XLA's CPU kernels give one row results that differ in the last bit with its position
/// in the batch (MobileNetV2's row `img3.jpg` differed by 7.5e-8 at position 3 instead of 0 on
/// 2026-12-05).
fn convnet_over_jpegs_equals_run(fixture: &str, buckets: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let onnx = common::fixtures().join(fixture).join("dynamo.onnx");
    let lowered = tmp.path().join("lowered");
    let o = common::output(
        common::runtime_command(&cache)
            .arg("lower")
            .arg(&onnx)
            .args(["--batch", buckets, "-o"])
            .arg(&lowered),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let imgs = tmp.path().join("imgs");
    std::fs::create_dir_all(imgs.join("sub")).unwrap();
    let mut rng = SplitMix(3);
    let mut names = Vec::new();
    for i in 0..6u32 {
        let (w, h) = (200 + 13 * i, 150 + 21 * i);
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            let n = (rng.next_u64() % 64) as u32;
            image::Rgb([((x * 255 / w) + n) as u8, ((y * 255 / h) + n / 2) as u8, (n * 3) as u8])
        });
        // One in a sub-folder: the walk is recursive, keys are relative paths.
        let name = if i == 4 { format!("sub/img{i}.jpg") } else { format!("img{i}.jpg") };
        img.save(imgs.join(&name)).unwrap();
        names.push(name);
    }
    let good = std::fs::read(imgs.join("img0.jpg")).unwrap();
    std::fs::write(imgs.join("img2b-broken.jpg"), &good[..good.len() / 3]).unwrap();
    let out = tmp.path().join("out");
    let norm = ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"];
    let o = batch(&cache, &lowered, &imgs, &out, &norm);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(s["rows"], 6);
    assert_eq!(s["bad_rows"], 1);
    assert_eq!(s["batches"], 2);
    let errors = std::fs::read_to_string(out.join("_errors.jsonl")).unwrap();
    assert!(errors.starts_with("{\"key\":\"img2b-broken.jpg\""), "{errors}");
    assert_eq!(errors.lines().count(), 1);
    let keys: Vec<String> =
        serde_json::from_slice(&std::fs::read(out.join("part-00000.keys.json")).unwrap()).unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let (shape, got) = npy_f32(&out.join("part-00000.output.npy"));
    assert_eq!(shape, vec![6, 1000]);
    // The same windows through `tpuport run` on the bucket-4 module, each padded from 3 rows.
    let spec = tpuport_batch::ImageSpec::for_input(
        &[3, 224, 224],
        &tpuport_batch::ImageOptions {
            mean: Some([0.485, 0.456, 0.406]),
            std: Some([0.229, 0.224, 0.225]),
            ..Default::default()
        },
    )
    .unwrap();
    let mut listed = sorted.clone();
    listed.push("img2b-broken.jpg".to_owned());
    listed.sort();
    let mut want = Vec::new();
    for (w, window) in listed.chunks(4).enumerate() {
        let chunk: Vec<&String> = window.iter().filter(|k| !k.contains("broken")).collect();
        let mut x = Vec::new();
        for k in &chunk {
            spec.decode_into(&imgs.join(k), &mut x).unwrap();
        }
        x.resize(4 * spec.row_bytes(), 0);
        let t = HostTensor::new(DType::F32, vec![4, 3, 224, 224], x).unwrap();
        let xp = tmp.path().join(format!("x{w}.npy"));
        tpuport_formats::npy::write_npy(&xp, &t).unwrap();
        let rdir = tmp.path().join(format!("run{w}"));
        let r = common::output(
            common::runtime_command(&cache)
                .arg("run")
                .arg(&lowered)
                .arg("--input")
                .arg(&xp)
                .arg("--out")
                .arg(&rdir),
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let (_, y) = npy_f32(&rdir.join("out0.npy"));
        want.extend_from_slice(&y[..chunk.len() * 1000 * 4]);
    }
    assert!(got == want, "{fixture}: batch and run differ");
}

#[test]
fn mobilenet_over_jpegs_equals_run() {
    convnet_over_jpegs_equals_run("torch/mobilenet_v2", "1,4");
}

/// ResNet-50 at the one bucket 4 (both windows padded into it), to keep the compile short.
#[test]
fn resnet50_over_jpegs_equals_run() {
    convnet_over_jpegs_equals_run("torch/resnet50", "4");
}

/// An ONNX model lowered on the fly at `--buckets 2,4`, over the fixture's `.npz` of inputs
/// (3 rows: a window of 2, then 1 row padded into bucket 2), against onnxruntime's outputs.
#[test]
fn onnx_lowered_on_the_fly_over_an_npz_matches_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let fx = common::fixtures().join("onnx_small");
    let out = tmp.path().join("out");
    let o = batch(
        &cache,
        &fx.join("external_data.onnx"),
        &fx.join("external_data.inputs.npz"),
        &out,
        &["--buckets", "2,4", "--batch", "2"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(s["model"]["buckets"], serde_json::json!([2, 4]));
    assert_eq!(s["batches"], 2);
    let want = tpuport_formats::npy::read_npz(&fx.join("external_data.outputs.npz")).unwrap();
    let want = &want[0].1;
    let part = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".npy"))
        .unwrap();
    let got = tpuport_formats::npy::read_npy(&part).unwrap();
    assert_eq!(got.shape, want.shape);
    let f = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    for (g, w) in f(got.data()).iter().zip(f(want.data())) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{g} vs {w}");
    }
}

/// The MLP over a Parquet file (one `x` column of fixed-size lists, plus a `id` column it
/// ignores) writes the same bytes as over the same rows in `.npy`, which equal `tpuport run`
/// (above); a row of the wrong length in a variable-list file is recorded, the others kept.
#[test]
fn mlp_over_parquet_equals_the_npy_run() {
    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int64Builder, ListBuilder};
    use arrow_array::{Array, RecordBatch};
    use arrow_schema::{Field, Schema};

    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let model = mlp_entry(tmp.path());
    let (npy, pq) = (tmp.path().join("npy"), tmp.path().join("pq"));
    std::fs::create_dir_all(&npy).unwrap();
    std::fs::create_dir_all(&pq).unwrap();
    let rows = 150;
    let v = write_rows(&npy.join("a.npy"), rows, 31);
    let write = |path: &Path, fixed: bool, short_row: Option<usize>| {
        let mut ids = Int64Builder::new();
        let x: Arc<dyn Array> = if fixed {
            let mut b = FixedSizeListBuilder::new(Float32Builder::new(), MLP_ROW as i32);
            for r in 0..rows {
                b.values().append_slice(&v[r * MLP_ROW..(r + 1) * MLP_ROW]);
                b.append(true);
                ids.append_value(r as i64);
            }
            Arc::new(b.finish())
        } else {
            let mut b = ListBuilder::new(Float32Builder::new());
            for r in 0..rows {
                let n = if Some(r) == short_row { MLP_ROW - 1 } else { MLP_ROW };
                b.values().append_slice(&v[r * MLP_ROW..r * MLP_ROW + n]);
                b.append(true);
                ids.append_value(r as i64);
            }
            Arc::new(b.finish())
        };
        let ids = Arc::new(ids.finish());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", ids.data_type().clone(), false),
            Field::new("x", x.data_type().clone(), false),
        ]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ids, x]).unwrap();
        let f = std::fs::File::create(path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    write(&pq.join("a.parquet"), true, None);
    let args = ["--rows-per-part", "128"];
    let (o1, o2) = (tmp.path().join("o-npy"), tmp.path().join("o-pq"));
    assert_eq!(batch(&cache, &model, &npy, &o1, &args).code, 0);
    let o = batch(&cache, &model, &pq, &o2, &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for p in 0..2 {
        let name = format!("part-{p:05}.output0.npy");
        assert!(std::fs::read(o1.join(&name)).unwrap() == std::fs::read(o2.join(&name)).unwrap());
    }
    let keys: Vec<String> =
        serde_json::from_slice(&std::fs::read(o2.join("part-00001.keys.json")).unwrap()).unwrap();
    assert_eq!(keys[0], "a.parquet:128");

    // Variable-length lists, row 140 one value short.
    let pq2 = tmp.path().join("pq2");
    std::fs::create_dir_all(&pq2).unwrap();
    write(&pq2.join("a.parquet"), false, Some(140));
    let o3 = tmp.path().join("o-pq2");
    let o = batch(&cache, &model, &pq2, &o3, &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let s: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!((s["rows"].as_u64(), s["bad_rows"].as_u64()), (Some(149), Some(1)));
    let errors = std::fs::read_to_string(o3.join("_errors.jsonl")).unwrap();
    assert!(
        errors.contains("\"key\":\"a.parquet:140\"") && errors.contains("783 values"),
        "{errors}"
    );
    assert!(
        std::fs::read(o1.join("part-00000.output0.npy")).unwrap()
            == std::fs::read(o3.join("part-00000.output0.npy")).unwrap()
    );

    // Parquet output: a key column and the output rows, equal to the .npy parts; a second run
    // writes the same bytes.
    let o4 = tmp.path().join("o-pq-out");
    let pargs = ["--rows-per-part", "128", "--output-format", "parquet"];
    assert_eq!(batch(&cache, &model, &npy, &o4, &pargs).code, 0);
    let first = std::fs::read(o4.join("part-00001.parquet")).unwrap();
    assert_eq!(batch(&cache, &model, &npy, &o4, &[&pargs[..], &["--restart"]].concat()).code, 0);
    assert!(std::fs::read(o4.join("part-00001.parquet")).unwrap() == first);
    for p in 0..2 {
        let f = std::fs::File::open(o4.join(format!("part-{p:05}.parquet"))).unwrap();
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        let mut keys = Vec::new();
        let mut vals = Vec::new();
        for b in r {
            let b = b.unwrap();
            let k = b.column(0).as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
            keys.extend((0..k.len()).map(|i| k.value(i).to_owned()));
            let l = b.column(1).as_any().downcast_ref::<arrow_array::FixedSizeListArray>().unwrap();
            assert_eq!(l.value_length(), 10);
            let v = l.values().as_any().downcast_ref::<arrow_array::Float32Array>().unwrap();
            vals.extend(v.values().iter().flat_map(|x| x.to_le_bytes()));
        }
        let want_keys: Vec<String> = serde_json::from_slice(
            &std::fs::read(o1.join(format!("part-{p:05}.keys.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(keys, want_keys);
        let (_, want) = npy_f32(&o1.join(format!("part-{p:05}.output0.npy")));
        assert!(vals == want, "part {p}: parquet values differ from the npy part");
    }
}
