//! Generated finding documentation: `docs/findings/<CODE>.md` and `docs/findings/README.md`, and
//! what `tpuport explain CODE` prints — one [`CodeDocs`] set, laid out by `tpuport-codedoc`.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs`;
//! the same test fails when the checked-in files differ from what the code generates.

use tpuport_codedoc::{CodeDocs, CodePage, Fact};

use super::{CodeDoc, FAMILIES, registry};

/// Directory of the generated pages, relative to the repository root.
pub const DOCS_DIR: &str = "docs/findings";

/// The command that regenerates [`DOCS_DIR`].
pub const REGENERATE: &str =
    "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs";

/// The documentation of one code.
#[must_use]
pub fn code_page(doc: &CodeDoc) -> CodePage {
    CodePage {
        code: doc.code.to_owned(),
        name: doc.name.to_owned(),
        family: doc.family(),
        facts: vec![Fact {
            label: "Default severity",
            column: "Severity",
            value: doc.severity.to_string(),
            short: doc.severity.to_string(),
        }],
        source: doc.source,
        doc: doc.doc(),
        summary: doc.summary(),
    }
}

/// Every code's documentation, in code order.
#[must_use]
pub fn code_docs() -> CodeDocs {
    CodeDocs {
        registry: "audit",
        title: "tpuport audit findings",
        regenerate: REGENERATE,
        intro: "`tpuport audit MODEL` reports these; run `tpuport explain CODE` for the same text in a terminal.",
        noun: "codes",
        families: FAMILIES.to_vec(),
        pages: registry().iter().map(code_page).collect(),
    }
}

/// Every generated file: (file name inside `docs/findings/`, contents).
#[must_use]
pub fn generate() -> Vec<(String, String)> {
    code_docs().files()
}
