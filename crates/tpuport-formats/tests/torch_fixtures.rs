//! Generated fixtures (`make fixtures`): every `torch/<model>/model.pt` (a real `torch.save` of a
//! full state dict, tied weights once per name) holds the tensors and elements `meta.json`
//! counts, scans clean, and its bytes equal the safetensors copy's. Fails (never skips) when the
//! fixtures are missing.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use tpuport_formats::{ImportOptions, torch};

fn fixtures() -> PathBuf {
    let torch = tpuport_testkit::fixtures("torch");
    torch.parent().map(Path::to_path_buf).unwrap_or(torch)
}

#[test]
fn torch_fixtures_match_meta_and_safetensors() {
    let mut seen = 0;
    for e in std::fs::read_dir(fixtures().join("torch")).unwrap() {
        let dir = e.unwrap().path();
        let Ok(meta) = std::fs::read(dir.join("meta.json")) else { continue };
        let meta: serde_json::Value = serde_json::from_slice(&meta).unwrap();
        let p = dir.join("model.pt");
        let m = tpuport_formats::open(&p, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let want = &meta["state_dict_pt"];
        assert_eq!(m.weights.len() as u64, want["tensors"].as_u64().unwrap(), "{}", p.display());
        assert_eq!(
            m.weights.total_elements(),
            want["elements"].as_u64().unwrap(),
            "{}",
            p.display()
        );
        let rep = torch::scan(&p).unwrap();
        assert!(rep.is_clean(), "{}: {:?}", p.display(), rep.notes);
        let st = tpuport_formats::open(&dir.join("model.safetensors"), &ImportOptions::default())
            .unwrap();
        for w in st.weights.iter() {
            let t = m
                .weights
                .by_name(&w.name)
                .unwrap_or_else(|| panic!("{}: {} missing", p.display(), w.name));
            assert_eq!((t.dtype, &t.shape), (w.dtype, &w.shape), "{}", w.name);
            assert!(
                t.bytes().unwrap() == w.bytes().unwrap(),
                "{}: bytes of {} differ",
                p.display(),
                w.name
            );
        }
        seen += 1;
    }
    assert!(seen > 0, "fixtures missing: run `make fixtures` (no torch/<model>/meta.json)");
}
