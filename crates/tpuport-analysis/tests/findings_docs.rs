//! `docs/findings/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs`.

use tpuport_analysis::findings::docs;

#[test]
fn findings_docs_are_current() {
    let dir = tpuport_testkit::repo_root().join(docs::DOCS_DIR);
    tpuport_testkit::docs::check_dir(&dir, &docs::generate(), docs::REGENERATE);
}
