//! The text frame of one diagnostic (what the rule tests snapshot), unified diffs, and the
//! documentation URL and display path every renderer uses. The whole-run renderers (text,
//! statistics, JSON, SARIF) live in `tpuport-report`, which depends on this crate.

mod frame;

pub use frame::{TextOptions, render_diagnostic};

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
