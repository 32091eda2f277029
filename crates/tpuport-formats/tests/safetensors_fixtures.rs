//! Generated fixtures (`make fixtures`): every `torch/<model>/model.safetensors` and its
//! `sharded/` copy hold exactly the tensors and elements the generator counted in `meta.json`.
//! Fails (never skips) when the fixtures are missing.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use tpuport_formats::ImportOptions;

fn fixtures() -> PathBuf {
    let torch = tpuport_testkit::fixtures("torch");
    torch.parent().map(Path::to_path_buf).unwrap_or(torch)
}

fn models() -> Vec<(PathBuf, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(fixtures().join("torch")).unwrap() {
        let d = e.unwrap().path();
        let meta = d.join("meta.json");
        if meta.is_file() {
            out.push((d, serde_json::from_slice(&std::fs::read(meta).unwrap()).unwrap()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "fixtures missing: run `make fixtures` (no torch/<model>/meta.json)");
    out
}

#[test]
fn safetensors_fixtures_match_meta() {
    for (dir, meta) in models() {
        let want_t = meta["state_dict"]["tensors"].as_u64().unwrap();
        let want_e = meta["state_dict"]["elements"].as_u64().unwrap();
        let want_b = meta["state_dict"]["bytes"].as_u64().unwrap();
        for p in [
            dir.join("model.safetensors"),
            dir.join("sharded/model.safetensors.index.json"),
            dir.join("sharded"),
        ] {
            let m = tpuport_formats::open(&p, &ImportOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(m.weights.len() as u64, want_t, "{}", p.display());
            assert_eq!(m.weights.total_elements(), want_e, "{}", p.display());
            let bytes: u64 = m.weights.iter().map(tpuport_model::Weight::nbytes).sum();
            assert_eq!(bytes, want_b, "{}", p.display());
            assert_eq!(m.metadata.producer.as_deref(), Some("pt"));
            assert!(m.notes.is_empty(), "{}: {:?}", p.display(), m.notes);
        }
    }
}
