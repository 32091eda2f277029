//! `docs/findings/` is generated from the rule sources; this test fails when it is stale and
//! rewrites it with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs`.

use tpuport_analysis::findings::CodeDoc;
use tpuport_codes::StableCode;

#[test]
fn findings_docs_are_current() {
    tpuport_testkit::docs::check_code_docs(&CodeDoc::docs());
}
