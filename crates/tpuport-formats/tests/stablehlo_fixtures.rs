//! StableHLO import over the generated JAX fixtures (`make fixtures`):
//! `jax/<name>/{jit,export}.mlir` import, their signature equals `meta.json`, print → parse
//! is stable; `export.mlirbc` is recognised as bytecode with its StableHLO version.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::path::{Path, PathBuf};

use tpuport_formats::stablehlo::{StructureOptions, parse_text, print_model, structure};
use tpuport_formats::{ImportOptions, Limits, open};
use tpuport_model::{DType, ModelFormat, NoteLevel, TensorType};

fn jax_fixtures() -> PathBuf {
    tpuport_testkit::fixtures("jax")
}

fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(jax_fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("meta.json").exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "fixtures missing: run `make fixtures` (no jax/*/meta.json)");
    dirs
}

fn meta_sig(v: &serde_json::Value) -> Vec<(Vec<i64>, DType)> {
    v.as_array()
        .expect("a list of [shape, dtype]")
        .iter()
        .map(|e| {
            let shape = e[0].as_array().unwrap().iter().map(|d| d.as_i64().unwrap_or(-1)).collect();
            let dt = DType::from_name(e[1].as_str().unwrap())
                .unwrap_or_else(|| panic!("dtype {}", e[1]));
            (shape, dt)
        })
        .collect()
}

fn ty_sig(t: &TensorType) -> (Vec<i64>, DType) {
    let shape = t
        .shape
        .as_ref()
        .expect("ranked")
        .0
        .iter()
        .map(|d| d.known().map_or(-1, |n| n as i64))
        .collect();
    (shape, t.dtype.expect("dtype"))
}

#[test]
fn jax_text_fixtures_import_match_meta_and_round_trip() {
    for dir in fixture_dirs() {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
        // jax.jit needs concrete shapes: a shape-polymorphic fixture has only export.mlir.
        let symbolic =
            meta["args"].as_array().unwrap().iter().any(|a| {
                a[0].as_array().is_some_and(|s| s.iter().any(serde_json::Value::is_string))
            });
        for file in ["jit.mlir", "export.mlir"] {
            let path = dir.join(file);
            if file == "jit.mlir" && symbolic && !path.exists() {
                continue;
            }
            assert!(
                path.exists(),
                "fixtures missing: run `make fixtures` ({} absent)",
                path.display()
            );
            let m = open(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(m.format, ModelFormat::StablehloText);
            assert_eq!(m.metadata.framework, tpuport_model::Framework::Jax, "{}", path.display());
            let g = &m.graph;
            let ins: Vec<_> = g.inputs.iter().map(|&i| ty_sig(&g.value(i).ty)).collect();
            let outs: Vec<_> = g.outputs.iter().map(|&i| ty_sig(&g.value(i).ty)).collect();
            assert_eq!(ins, meta_sig(&meta["args"]), "{}: inputs", path.display());
            assert_eq!(outs, meta_sig(&meta["outputs"]), "{}: outputs", path.display());
            let text = print_model(&m).unwrap();
            let m2 = parse_text(&path, &text, &Limits::default())
                .unwrap_or_else(|e| panic!("printed {}: {e}", path.display()));
            let o = StructureOptions { locations: true };
            assert_eq!(
                structure(&m, o),
                structure(&m2, o),
                "{}: round trip differs",
                path.display()
            );
        }
    }
}

#[test]
fn jax_bytecode_fixtures_are_sniffed_with_version() {
    for dir in fixture_dirs() {
        let path = dir.join("export.mlirbc");
        assert!(path.exists(), "fixtures missing: run `make fixtures` ({} absent)", path.display());
        let m = open(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.format, ModelFormat::StablehloBytecode);
        assert!(
            m.metadata.producer.as_deref().is_some_and(|p| p.starts_with("StableHLO_v")),
            "{:?}",
            m.metadata.producer
        );
        assert!(m.metadata.stablehlo_version.is_some());
        assert!(m.notes.iter().any(|n| n.code == "bytecode-opaque" && n.level == NoteLevel::Info));
        assert!(m.graph.nodes.is_empty());
    }
}

const CHECK: &str = r#"
import json, os, sys
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np
import jax, jax.numpy as jnp
from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir
from jax._src import xla_bridge
from jax._src.lib import xla_client as xc

def plugin_client():
    """The OpenXLA CPU PJRT plugin (PyPI xla-cpu-pjrt), loaded beside jaxlib's own CPU client."""
    so = os.path.join(os.path.dirname(jax.__file__), "..", "xla_plugins", "xla_cpu_pjrt", "xla_cpu_pjrt.so")
    assert os.path.exists(so), f"xla-cpu-pjrt plugin missing at {so}"
    xc.load_pjrt_plugin_dynamically("xla_cpu_pjrt", so)
    return xc.make_c_api_client("xla_cpu_pjrt")

def plugin_compile(client, text):
    # JAX registers its LAPACK FFI handlers only in jaxlib's client, not in the plugin.
    if "lapack_" in text:
        return False
    client.compile_and_load(text, xc.DeviceList(tuple(client.devices()[:1])), xc.CompileOptions())
    return True

def load(d, f, want):
    a = np.load(os.path.join(d, f["file"]))
    return a.view(jnp.bfloat16) if want == "bf16" and a.dtype == np.uint16 else a

backend = xla_bridge.get_backend("cpu")
plugin = plugin_client()
fails = 0
for job in json.load(open(sys.argv[1])):
    text = open(job["printed"]).read()
    label = os.path.basename(job["printed"])
    try:
        with jmlir.make_ir_context():
            assert ir.Module.parse(text).operation.verify(), "verify failed"
        if not job["run"]:
            print(f"OK {label} verified")
            continue
        d, meta = job["dir"], json.load(open(os.path.join(job["dir"], "meta.json")))
        args = [load(os.path.join(d, "inputs"), f, a[1]) for f, a in zip(meta["input_files"], meta["args"])]
        want = [load(os.path.join(d, "outputs"), f, o[1]) for f, o in zip(meta["output_files"], meta["outputs"])]
        exe = backend.compile_and_load(text, xc.DeviceList(tuple(backend.local_devices()[:1])), xc.CompileOptions())
        res = exe.execute_sharded([jax.device_put(a) for a in args]).disassemble_into_single_device_arrays()
        got = [np.asarray(r[0]) for r in res]
        assert len(got) == len(want), f"{len(got)} outputs, want {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape and g.dtype == w.dtype, f"output {k}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
            tol = 2e-2 if w.dtype == jnp.bfloat16 else 1e-4
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
        via = ", plugin-compiled" if plugin_compile(plugin, text) else ""
        print(f"OK {label} verified, compiled, executed{via}")
    except Exception as e:
        fails += 1
        print(f"FAIL {label}: {type(e).__name__}: {str(e)[:2000]}")
sys.exit(1 if fails else 0)
"#;

/// The printed generic text of every fixture is verified by MLIR; single-device ones are
/// compiled by XLA's CPU backend and reproduce the fixture's recorded outputs.
#[test]
fn printed_jax_fixtures_compile_and_reproduce_outputs() {
    let root = std::env::var_os("TPUPORT_ROOT")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from);
    let python = root.join(".venv/bin/python");
    assert!(python.exists(), "venv python missing at {}: run `make venv`", python.display());
    let tmp = tempfile::tempdir().unwrap();
    let mut jobs = Vec::new();
    for dir in fixture_dirs() {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
        let (file, run) = if dir.join("jit.mlir").exists() {
            ("jit.mlir", meta["num_partitions"].as_i64() == Some(1))
        } else {
            ("export.mlir", false)
        };
        let m = open(&dir.join(file), &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !m.notes.iter().any(|n| n.code == "unparsed-op-syntax"),
            "{}: {:?}",
            dir.display(),
            m.notes
        );
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let printed = tmp.path().join(format!("{name}.{file}.printed.mlir"));
        std::fs::write(&printed, print_model(&m).unwrap()).unwrap();
        jobs.push(serde_json::json!({"printed": printed, "dir": dir, "run": run}));
    }
    let manifest = tmp.path().join("jobs.json");
    std::fs::write(&manifest, serde_json::to_string(&jobs).unwrap()).unwrap();
    let script = tmp.path().join("check.py");
    std::fs::write(&script, CHECK).unwrap();
    let out = std::process::Command::new(python).arg(&script).arg(&manifest).output().unwrap();
    let report =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
    assert_eq!(report.lines().filter(|l| l.starts_with("OK ")).count(), jobs.len(), "{report}");
    let ran = jobs.iter().filter(|j| j["run"] == true).count();
    assert!(ran >= 4, "only {ran} fixtures were executed:\n{report}");
    assert_eq!(report.lines().filter(|l| l.contains("executed")).count(), ran, "{report}");
    let plugin = report.lines().filter(|l| l.contains("plugin-compiled")).count();
    assert_eq!(plugin, ran, "every executed fixture also compiles on xla-cpu-pjrt:\n{report}");
}
