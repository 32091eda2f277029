//! The lint rules as a registry of stable codes: `docs/rules/<CODE>.md`, `docs/rules/README.md`
//! and what `tpuport explain CODE` prints, laid out by `tpuport-codes` from each rule's doc
//! comment, its status and its fix.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current`; the
//! same test fails when the checked-in files differ from what the code generates.

use tpuport_codes::{Fact, Registry, StableCode};

use crate::codes::{FAMILIES, Rule, RuleStatus};

static RULES: Registry = Registry {
    name: "lint",
    title: "tpuport rules",
    docs_dir: "docs/rules",
    regenerate: "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current",
    intro: "Run `tpuport explain CODE` for the same text in a terminal.",
    noun: "rules",
    summary_heading: "## What it does",
    families: &FAMILIES,
};

impl StableCode for Rule {
    fn registry() -> &'static Registry {
        &RULES
    }
    fn all() -> &'static [Rule] {
        Rule::ALL
    }
    fn code(&self) -> &'static str {
        Rule::code(*self)
    }
    fn name(&self) -> String {
        Rule::name(*self)
    }
    fn source(&self) -> &'static str {
        self.source_file()
    }
    fn raw_doc(&self) -> &'static str {
        self.doc_comment()
    }
    /// Its status and whether it has a fix.
    fn facts(&self) -> Vec<Fact> {
        let (status, short) = match self.status() {
            RuleStatus::Stable => ("stable", "stable"),
            RuleStatus::Preview => {
                ("preview (enable with `--preview` or select the code)", "preview")
            }
        };
        vec![
            Fact {
                label: "Status",
                column: "Status",
                value: status.to_owned(),
                short: short.to_owned(),
            },
            Fact::new("Fix", fix_note(&self.doc())),
        ]
    }
}

/// `none`, `unsafe`, `display-only` or `safe`, from the first line of the "Fix safety" section.
fn fix_note(doc: &str) -> &'static str {
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
