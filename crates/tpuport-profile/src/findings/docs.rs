//! Generated profile-finding documentation: `docs/profile/<CODE>.md` and
//! `docs/profile/README.md`, and what `tpuport explain CODE` prints — one [`CodeDocs`] set, laid
//! out by `tpuport-codedoc`.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`; the same
//! test fails when the checked-in files differ from what the code generates.

use tpuport_codedoc::{CodeDocs, CodePage, Fact};

use super::{CodeDoc, FAMILIES, registry};

/// Directory of the generated pages, relative to the repository root.
pub const DOCS_DIR: &str = "docs/profile";

/// The command that regenerates [`DOCS_DIR`].
pub const REGENERATE: &str = "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs";

/// The documentation of one code: its severity, and the `tpuport check` rules that find the
/// same problem before a run.
#[must_use]
pub fn code_page(doc: &CodeDoc) -> CodePage {
    let links: Vec<String> =
        doc.check_rules.iter().map(|c| format!("[{c}](../rules/{c}.md)")).collect();
    CodePage {
        code: doc.code.to_owned(),
        name: doc.name.to_owned(),
        family: doc.family(),
        facts: vec![
            Fact {
                label: "Default severity",
                column: "Severity",
                value: doc.severity.to_string(),
                short: doc.severity.to_string(),
            },
            Fact {
                label: "Found before a run by `tpuport check`",
                column: "Check rules",
                value: if links.is_empty() { "-".to_owned() } else { links.join(", ") },
                short: doc.check_rules.join(", "),
            },
        ],
        source: doc.source,
        doc: doc.doc(),
        summary: doc.summary(),
    }
}

/// Every code's documentation, in code order.
#[must_use]
pub fn code_docs() -> CodeDocs {
    CodeDocs {
        registry: "profile",
        title: "tpuport profile findings",
        regenerate: REGENERATE,
        intro: "`tpuport profile PATH…` reports these (see [../profile.md](../profile.md)); run `tpuport explain CODE` for the same text in a terminal.",
        noun: "codes",
        families: FAMILIES.to_vec(),
        pages: registry().iter().map(code_page).collect(),
    }
}

/// Every generated file: (file name inside `docs/profile/`, contents).
#[must_use]
pub fn generate() -> Vec<(String, String)> {
    code_docs().files()
}
