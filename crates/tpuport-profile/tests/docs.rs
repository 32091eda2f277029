//! `docs/profile/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`.

use tpuport_profile::findings::docs;

#[test]
fn profile_docs_are_current() {
    tpuport_testkit::check_generated_docs(
        docs::DOCS_DIR,
        &docs::generate(),
        "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs",
    );
}
