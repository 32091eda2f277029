//! `tpuport compile --target cpu --save` writes an executable and its manifest; `tpuport serve`
//! loads them instead of compiling (zero compiles, answers equal to `tpuport run`); a stale
//! manifest is reported and compiled instead (or refused under `only`), a truncated executable
//! fails its model by name while the others serve.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use common::http;

fn jax() -> PathBuf {
    common::fixtures().join("jax")
}

/// `<root>/<name>`: the JAX MLP (buckets 1 and 128) as a stablehlo-kind model with its weights,
/// and `executables` as the config's `[executables]` body ("" for none).
fn mlp_model(root: &Path, name: &str, executables: &str) -> PathBuf {
    let fx = jax();
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("exe")).unwrap();
    std::fs::copy(fx.join("mlp_b1/jit.mlir"), dir.join("mlp_b1.mlir")).unwrap();
    std::fs::copy(fx.join("mlp_b128/jit.mlir"), dir.join("mlp_b128.mlir")).unwrap();
    let mut ts = Vec::new();
    for (i, n) in ["w1", "b1", "w2", "b2"].iter().enumerate() {
        let t =
            tpuport_formats::npy::read_npy(&fx.join(format!("mlp_b1/inputs/arg{i}.npy"))).unwrap();
        ts.push(tpuport_formats::safetensors::TensorOut {
            name: (*n).to_owned(),
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: Cow::Owned(t.data().to_vec()),
        });
    }
    tpuport_formats::safetensors::write_safetensors(&dir.join("weights.safetensors"), &ts, &[])
        .unwrap();
    let exe = if executables.is_empty() {
        String::new()
    } else {
        format!("[executables]\n{executables}\n")
    };
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[model]\nkind = \"stablehlo\"\npath = \"weights.safetensors\"\n\
             modules = {{ \"1\" = \"mlp_b1.mlir\", \"128\" = \"mlp_b128.mlir\" }}\n\
             args = [\"weight:w1\", \"weight:b1\", \"weight:w2\", \"weight:b2\", \"input:x\"]\n\
             [[input]]\nname = \"x\"\n[[output]]\nname = \"probs\"\n\
             [batching]\nbuckets = [1, 128]\n{exe}"
        ),
    )
    .unwrap();
    dir
}

/// `tpuport compile MODULE --target cpu --save OUT`; returns the manifest.
fn save(module: &Path, out: &Path) -> serde_json::Value {
    let o = common::output(common::command().args(["compile"]).arg(module).args([
        "--target",
        "cpu",
        "--save",
        out.to_str().unwrap(),
    ]));
    assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("PJRT CPU plugin"), "{}", o.stdout);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{}.json", out.display())).unwrap())
            .unwrap();
    assert_eq!(m["platform"], "cpu");
    assert_eq!(m["executable_bytes"].as_u64().unwrap(), std::fs::metadata(out).unwrap().len());
    m
}

fn start(root: &Path) -> (Child, String, Vec<String>) {
    let mut child = common::command()
        .args(["serve", root.to_str().unwrap(), "--port", "0", "--no-cache"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, lines, _err) = common::wait_ready(&mut child);
    (child, addr, lines)
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let mut st = child.wait().unwrap();
    if st.code() != Some(0) {
        let mut rest = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut rest);
        }
        st = child.wait().unwrap();
        panic!("serve exited {st:?}: {rest}");
    }
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// The MLP's answer for the fixture's input row, as f32 bits.
fn infer_row(addr: &str, model: &str, x: &[f32]) -> Vec<u32> {
    let body = serde_json::json!({
        "inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": x}],
    });
    let (st, resp) = http(addr, "POST", &format!("/v2/models/{model}/infer"), &body.to_string());
    assert_eq!(st, 200, "{resp}");
    let v: serde_json::Value = serde_json::from_str(&resp).unwrap();
    #[allow(clippy::cast_possible_truncation)]
    v["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f.as_f64().unwrap() as f32).to_bits())
        .collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn saved_cpu_executables_serve_with_zero_compiles_and_match_tpuport_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let dir = mlp_model(
        &root,
        "mlp",
        "files = { \"1\" = \"exe/b1.pjrt\", \"128\" = \"exe/b128.pjrt\" }\nonly = true",
    );
    for b in [1, 128] {
        save(&dir.join(format!("mlp_b{b}.mlir")), &dir.join(format!("exe/b{b}.pjrt")));
    }
    let (child, addr, lines) = start(&root);
    assert!(
        lines.iter().any(|l| l.contains("model mlp loaded") && l.contains("executables: 2 saved")),
        "{lines:?}"
    );
    let (_, m) = http(&addr, "GET", "/metrics", "");
    assert_eq!(metric(&m, "tpuport_compiles_total{model=\"mlp\"}"), Some(0.0), "{m}");
    assert_eq!(
        metric(&m, "tpuport_compile_cache_total{model=\"mlp\",status=\"saved\"}"),
        Some(2.0),
        "{m}"
    );

    // The fixture's own input through the server and through `tpuport run`: the same bits.
    let fx = jax().join("mlp_b1");
    let x = f32s(tpuport_formats::npy::read_npy(&fx.join("inputs/arg4.npy")).unwrap().data());
    let served = infer_row(&addr, "mlp", &x);
    let out = tmp.path().join("run");
    let mut run = common::command();
    run.arg("run").arg(fx.join("jit.mlir")).arg("--no-cache").arg("--out").arg(&out);
    for i in 0..5 {
        run.arg("--input").arg(fx.join(format!("inputs/arg{i}.npy")));
    }
    let o = common::output(&mut run);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let want: Vec<u32> =
        f32s(tpuport_formats::npy::read_npy(&out.join("out0.npy")).unwrap().data())
            .iter()
            .map(|v| v.to_bits())
            .collect();
    assert_eq!(served, want);
    let (_, m) = http(&addr, "GET", "/metrics", "");
    assert_eq!(metric(&m, "tpuport_compiles_total{model=\"mlp\"}"), Some(0.0), "{m}");
    assert_eq!(metric(&m, "tpuport_compiles_after_ready_total"), Some(0.0), "{m}");
    stop(child);
}

#[test]
fn a_stale_manifest_is_compiled_instead_or_refused_and_a_truncated_executable_fails_its_model() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let files = "files = { \"1\" = \"exe/b1.pjrt\", \"128\" = \"exe/b128.pjrt\" }";
    let stale = mlp_model(&root, "stale", files);
    let only = mlp_model(&root, "only", &format!("{files}\nonly = true"));
    let cut = mlp_model(&root, "cut", files);
    for b in [1, 128] {
        save(&stale.join(format!("mlp_b{b}.mlir")), &stale.join(format!("exe/b{b}.pjrt")));
        for d in [&only, &cut] {
            for ext in ["", ".json"] {
                let f = format!("exe/b{b}.pjrt{ext}");
                std::fs::copy(stale.join(&f), d.join(&f)).unwrap();
            }
        }
    }
    // `stale`: bucket 1's manifest names another PJRT API version.
    let edit = |path: &Path, key: &[&str], value: &str| {
        let mut m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut v = &mut m;
        for k in key {
            v = &mut v[*k];
        }
        *v = serde_json::Value::String(value.to_owned());
        std::fs::write(path, m.to_string()).unwrap();
    };
    edit(&stale.join("exe/b1.pjrt.json"), &["compiler", "pjrt_api"], "0.1");
    // `only`: bucket 128's manifest names another program.
    edit(&only.join("exe/b128.pjrt.json"), &["program_sha256"], &"ab".repeat(32));
    // `cut`: bucket 128's executable lost its second half.
    let f = cut.join("exe/b128.pjrt");
    let len = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&f).unwrap().set_len(len / 2).unwrap();

    let (child, addr, lines) = start(&root);
    let all = lines.join("");
    let line = |needle: &str| {
        lines.iter().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {all}"))
    };
    let w = line("model stale: bucket 1:");
    assert!(
        w.contains("PJRT API (compiler.pjrt_api): manifest \"0.1\"")
            && w.contains("compiling it instead"),
        "{w}"
    );
    assert!(line("model stale loaded").contains("executables: 1 saved, 1 compiled"), "{all}");
    let e = line("model only failed to load");
    assert!(e.contains("bucket 128") && e.contains("another program (program_sha256"), "{e}");
    let e = line("model cut failed to load");
    assert!(
        e.contains("bucket 128")
            && e.contains(&format!("{} bytes, its manifest says {len}", len / 2))
            && e.contains("truncated"),
        "{e}"
    );
    assert!(line("ready:").contains("1 model(s) serving, 2 failed"), "{all}");
    let (_, m) = http(&addr, "GET", "/metrics", "");
    assert_eq!(metric(&m, "tpuport_compiles_total{model=\"stale\"}"), Some(1.0), "{m}");
    assert_eq!(
        metric(&m, "tpuport_compile_cache_total{model=\"stale\",status=\"saved\"}"),
        Some(1.0),
        "{m}"
    );
    // The model that loaded answers; the failed ones say so.
    let x =
        f32s(tpuport_formats::npy::read_npy(&jax().join("mlp_b1/inputs/arg4.npy")).unwrap().data());
    assert_eq!(infer_row(&addr, "stale", &x).len(), 10);
    let (st, _) = http(&addr, "GET", "/v2/models/cut/ready", "");
    assert_ne!(st, 200);
    stop(child);
}
