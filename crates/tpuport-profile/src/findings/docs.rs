//! Generated profile-finding documentation: `docs/profile/<CODE>.md` and
//! `docs/profile/README.md`.
//!
//! Regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`; the same
//! test fails when the checked-in files differ from what the code generates.

use std::fmt::Write as _;

use super::{CodeDoc, FAMILIES, registry};

/// Directory of the generated pages, relative to the repository root.
pub const DOCS_DIR: &str = "docs/profile";

/// The page of one code (also what `tpuport explain CODE` prints).
#[must_use]
pub fn code_page(doc: &CodeDoc) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} ({})\n", doc.name, doc.code);
    let _ = writeln!(out, "Family: {} · Default severity: {}\n", doc.family(), doc.severity);
    if !doc.check_rules.is_empty() {
        let links: Vec<String> =
            doc.check_rules.iter().map(|c| format!("[{c}](../rules/{c}.md)")).collect();
        let _ = writeln!(out, "Found before a run by `tpuport check`: {}\n", links.join(", "));
    }
    let _ = writeln!(out, "Derived from `{}`.\n", doc.source);
    out.push_str(&doc.doc());
    out
}

/// The index page.
#[must_use]
pub fn index_page() -> String {
    let mut out = String::from("# tpuport profile findings\n\n");
    out.push_str("Generated from the rule sources by `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-profile --test docs`; do not edit by hand.\n");
    out.push_str("`tpuport profile PATH…` reports these (see [../profile.md](../profile.md)); run `tpuport explain CODE` for the same text in a terminal.\n\n");
    let _ = writeln!(out, "{} codes.\n", registry().len());
    for (prefix, title) in FAMILIES {
        let _ = writeln!(out, "## {title} (`{prefix}xx`)\n");
        out.push_str("| Code | Name | Severity | Check rules | Summary |\n|---|---|---|---|---|\n");
        for d in registry().iter().filter(|d| d.code.starts_with(prefix)) {
            let _ = writeln!(
                out,
                "| [{code}]({code}.md) | {} | {} | {} | {} |",
                d.name,
                d.severity,
                d.check_rules.join(", "),
                d.summary().replace('|', "\\|"),
                code = d.code
            );
        }
        out.push('\n');
    }
    out
}

/// Every generated file: (file name inside `docs/profile/`, contents).
#[must_use]
pub fn generate() -> Vec<(String, String)> {
    let mut files = vec![("README.md".to_owned(), index_page())];
    files.extend(registry().iter().map(|d| (format!("{}.md", d.code), code_page(d))));
    files
}
