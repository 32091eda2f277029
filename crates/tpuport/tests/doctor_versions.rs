//! `tpuport doctor` judges version pairs: a throw-away venv whose site-packages holds only
//! distribution metadata (`*.dist-info/METADATA`, read by the venv's own `importlib.metadata`)
//! with a jaxlib that does not match jax and a torch that does not match torch_xla.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A venv without pip whose site-packages holds the given (name, version, Requires-Dist) dists.
fn fake_venv(dir: &Path, dists: &[(&str, &str, &[&str])]) {
    let st = Command::new(common::python())
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(dir.join("bin/python"))
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .unwrap();
    let site = String::from_utf8(out.stdout).unwrap();
    for (name, version, requires) in dists {
        let info =
            Path::new(site.trim()).join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        std::fs::create_dir_all(&info).unwrap();
        let mut meta = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
        for r in *requires {
            meta.push_str(&format!("Requires-Dist: {r}\n"));
        }
        std::fs::write(info.join("METADATA"), meta).unwrap();
    }
}

fn doctor(venv: &Path) -> Value {
    let o = common::output(
        common::command().env("VIRTUAL_ENV", venv).args(["--format", "json", "doctor"]),
    );
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

const JAX_REQUIRES: &[&str] =
    &["jaxlib<=0.10.2,>=0.10.1", "ml_dtypes>=0.5.0", "libtpu==0.0.42.*; extra == \"tpu\""];

#[test]
fn mismatched_pairs_are_flagged_with_rule_source_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    fake_venv(
        &venv,
        &[
            ("jax", "0.10.2", JAX_REQUIRES),
            ("jaxlib", "0.9.0", &[]),
            ("torch", "2.15.0", &[]),
            ("torch_xla", "2.9.0", &[]),
        ],
    );
    let v = doctor(&venv);
    assert_eq!(v["python"]["jaxlib"], "0.9.0", "{v:#}");
    let verdicts = v["versions"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{verdicts:#?}");
    let jax = verdicts
        .iter()
        .find(|x| x["message"].as_str().unwrap().starts_with("jaxlib 0.9.0"))
        .unwrap();
    assert_eq!(jax["level"], "error");
    assert!(jax["rule"].as_str().unwrap().contains("jax 0.10.2 requires jaxlib<=0.10.2,>=0.10.1"));
    assert!(jax["source"].as_str().unwrap().contains("Requires-Dist"));
    assert!(jax["fix"].as_str().unwrap().starts_with("pip install 'jaxlib<=0.10.2,>=0.10.1'"));
    let torch = verdicts
        .iter()
        .find(|x| x["message"].as_str().unwrap().starts_with("torch 2.15.0 with torch_xla 2.9.0"))
        .unwrap();
    assert_eq!(torch["source"], "pytorch/xla README.md release table");

    let o = common::output(common::command().env("VIRTUAL_ENV", &venv).arg("doctor"));
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("note: error: jaxlib 0.9.0 does not satisfy"), "{}", o.stdout);
}

#[test]
fn matching_pairs_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    fake_venv(
        &venv,
        &[("jax", "0.10.2", JAX_REQUIRES), ("jaxlib", "0.10.2", &[]), ("libtpu", "0.0.42.1", &[])],
    );
    let v = doctor(&venv);
    assert_eq!(v["versions"], serde_json::json!([]), "{v:#}");
    assert!(
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("version pairs: no known mismatch"))
    );
}
