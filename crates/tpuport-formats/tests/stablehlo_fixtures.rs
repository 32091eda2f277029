//! StableHLO import over the generated JAX fixtures (`make fixtures`):
//! `jax/<name>/{jit,export}.mlir` import, their signature equals `meta.json`, print → parse
//! is stable; `export.mlirbc` is recognised as bytecode with its StableHLO version.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::path::{Path, PathBuf};

use tpuport_formats::stablehlo::{StructureOptions, parse_text, print_model, structure};
use tpuport_formats::{ImportOptions, Limits, open};
use tpuport_model::{DType, ModelFormat, NoteLevel, TensorType};

fn jax_fixtures() -> PathBuf {
    let root = std::env::var_os("TPUPORT_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/fixtures"),
        PathBuf::from,
    );
    let jax = root.join("jax");
    assert!(jax.is_dir(), "fixtures missing: run `make fixtures` (looked in {})", jax.display());
    jax
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
        for file in ["jit.mlir", "export.mlir"] {
            let path = dir.join(file);
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
