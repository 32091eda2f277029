//! Generated rule documentation: `docs/rules/<CODE>.md` and `docs/rules/README.md`, and what
//! `tpuport explain CODE` prints — one [`CodeDocs`] set, laid out by `tpuport-codedoc`.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current`; the
//! same test fails when the checked-in files differ from what the code generates.

use tpuport_codedoc::{CodeDocs, CodePage, Fact};

use crate::codes::{Family, Rule, RuleStatus};

/// Directory of the generated pages, relative to the repository root.
pub const DOCS_DIR: &str = "docs/rules";

/// The command that regenerates [`DOCS_DIR`].
pub const REGENERATE: &str = "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current";

/// The documentation of one rule.
#[must_use]
pub fn code_page(rule: Rule) -> CodePage {
    let (status, short) = match rule.status() {
        RuleStatus::Stable => ("stable", "stable"),
        RuleStatus::Preview => ("preview (enable with `--preview` or select the code)", "preview"),
    };
    CodePage {
        code: rule.code().to_owned(),
        name: rule.name(),
        family: rule.family().title(),
        facts: vec![
            Fact {
                label: "Status",
                column: "Status",
                value: status.to_owned(),
                short: short.to_owned(),
            },
            Fact::new("Fix", fix_note(rule)),
        ],
        source: rule.source_path(),
        doc: rule.doc(),
        summary: rule.summary(),
    }
}

/// `none`, `unsafe`, `display-only` or `safe`, from the first line of the "Fix safety" section.
fn fix_note(rule: Rule) -> &'static str {
    let doc = rule.doc();
    let section = doc.split("## Fix safety").nth(1).unwrap_or("");
    let first = section.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if first.starts_with("There is no fix") {
        "none"
    } else if first.contains("unsafe") {
        "unsafe"
    } else if first.contains("display") {
        "display-only"
    } else {
        "safe"
    }
}

/// Every rule's documentation, in code order.
#[must_use]
pub fn code_docs() -> CodeDocs {
    CodeDocs {
        registry: "lint",
        title: "tpuport rules",
        regenerate: REGENERATE,
        intro: "Run `tpuport explain CODE` for the same text in a terminal.",
        noun: "rules",
        families: Family::ALL.iter().map(|f| (f.prefix(), f.title())).collect(),
        pages: Rule::ALL.iter().map(|r| code_page(*r)).collect(),
    }
}

/// Every generated file: (file name inside `docs/rules/`, contents).
#[must_use]
pub fn generate() -> Vec<(String, String)> {
    code_docs().files()
}
