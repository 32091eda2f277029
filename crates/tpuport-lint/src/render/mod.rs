//! Renderers: ruff-style text with source frames, JSON, SARIF 2.1.0, statistics, diffs.
//! They return strings; the binary prints them.

mod json;
mod sarif;
mod text;

pub use json::render_json;
pub use sarif::render_sarif;
pub use text::{TextOptions, render_diagnostic, render_statistics, render_summary, render_text};

use std::path::Path;

/// Base URL of the rule documentation (`<base>/<CODE>.md`).
pub const DOCS_BASE_URL: &str = "https://example.invalid/tpuport/blob/main/docs/rules";

/// The documentation URL of `code`.
#[must_use]
pub fn rule_url(code: &str) -> String {
    format!("{DOCS_BASE_URL}/{code}.md")
}

/// A unified diff from `old` to `new`, labelled with `path`.
#[must_use]
pub fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// A path as shown in reports: relative with `/` separators.
#[must_use]
pub fn display_path(path: &Path) -> String {
    let s = path.display().to_string().replace('\\', "/");
    s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
}
