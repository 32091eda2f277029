//! `docs/profile/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`.

use tpuport_codes::StableCode;
use tpuport_profile::findings::CodeDoc;

#[test]
fn profile_docs_are_current() {
    tpuport_testkit::docs::check_code_docs(&CodeDoc::docs());
}
