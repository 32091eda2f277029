//! Generated rule documentation: `docs/rules/<CODE>.md` and `docs/rules/README.md`.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current`; the
//! same test fails when the checked-in files differ from what the code generates.

use std::fmt::Write as _;

use crate::codes::{Family, Rule, RuleStatus};

/// Environment variable that makes the docs test rewrite `docs/rules/` instead of comparing.
pub const UPDATE_DOCS_ENV: &str = "TPUPORT_UPDATE_DOCS";

/// The page of one rule.
#[must_use]
pub fn rule_page(rule: Rule) -> String {
    let mut out = String::new();
    let status = match rule.status() {
        RuleStatus::Stable => "stable",
        RuleStatus::Preview => "preview (enable with `--preview` or select the code)",
    };
    let fix = rule_fix_note(rule);
    let _ = writeln!(out, "# {} ({})\n", rule.name(), rule.code());
    let _ = writeln!(out, "Family: {} · Status: {status} · {fix}\n", rule.family().title());
    let _ = writeln!(out, "Derived from `{}`.\n", rule.source_path());
    out.push_str(&rule.doc());
    out
}

fn rule_fix_note(rule: Rule) -> &'static str {
    let doc = rule.doc();
    let section = doc.split("## Fix safety").nth(1).unwrap_or("");
    let first = section.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if first.starts_with("There is no fix") {
        "Fix: none"
    } else if first.contains("unsafe") {
        "Fix: unsafe"
    } else if first.contains("display") {
        "Fix: display-only"
    } else {
        "Fix: safe"
    }
}

/// The index page.
#[must_use]
pub fn index_page() -> String {
    let mut out = String::from("# tpuport rules\n\n");
    out.push_str("Generated from the rule sources by `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint docs_are_current`; do not edit by hand.\n");
    out.push_str("Run `tpuport explain CODE` for the same text in a terminal.\n\n");
    let _ = writeln!(out, "{} rules.\n", Rule::ALL.len());
    for family in Family::ALL {
        let _ = writeln!(out, "## {} (`{}xx`)\n", family.title(), family.prefix());
        out.push_str("| Code | Name | Status | Fix | Summary |\n|---|---|---|---|---|\n");
        for rule in Rule::ALL.iter().filter(|r| r.family() == family) {
            let status = if rule.status() == RuleStatus::Stable { "stable" } else { "preview" };
            let fix = rule_fix_note(*rule).trim_start_matches("Fix: ");
            let _ = writeln!(
                out,
                "| [{code}]({code}.md) | {} | {status} | {fix} | {} |",
                rule.name(),
                rule.summary().replace('|', "\\|"),
                code = rule.code()
            );
        }
        out.push('\n');
    }
    out
}

/// Every generated file: (file name inside `docs/rules/`, contents).
#[must_use]
pub fn generate() -> Vec<(String, String)> {
    let mut files = vec![("README.md".to_owned(), index_page())];
    files.extend(Rule::ALL.iter().map(|r| (format!("{}.md", r.code()), rule_page(*r))));
    files
}
