//! `docs/profile/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`.

use tpuport_profile::findings::docs;

#[test]
fn profile_docs_are_current() {
    let dir = tpuport_testkit::repo_root().join(docs::DOCS_DIR);
    tpuport_testkit::docs::check_dir(&dir, &docs::generate(), docs::REGENERATE);
}
