//! `docs/findings/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tpuport_analysis::findings::docs;

#[test]
fn findings_docs_are_current() {
    let dir = tpuport_testkit::repo_root().join(docs::DOCS_DIR);
    let files = docs::generate();
    if std::env::var_os(docs::UPDATE_DOCS_ENV).is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.extension().is_some_and(|e| e == "md") && !files.iter().any(|(n, _)| *n == name) {
                std::fs::remove_file(&p).unwrap();
            }
        }
        for (name, text) in &files {
            let tmp = dir.join(format!(".{name}.tmp"));
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, dir.join(name)).unwrap();
        }
        return;
    }
    let mut stale = Vec::new();
    for (name, text) in &files {
        if std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(text.as_str()) {
            stale.push(name.clone());
        }
    }
    let on_disk = std::fs::read_dir(&dir).map_or(0, |d| {
        d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md")))
            .count()
    });
    assert!(
        stale.is_empty() && on_disk == files.len(),
        "docs/findings is stale ({stale:?}, {on_disk} files on disk for {} generated): run `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs`",
        files.len()
    );
}
