//! `tpuport explain CODE`: a registry of code documentation sources.
//!
//! Lint codes are one source; other crates (e.g. audit findings) can supply their own
//! [`CodeRegistry`] and the binary tries each in turn.

use crate::codes::Rule;
use crate::docs::rule_page;

/// A source of code documentation.
pub trait CodeRegistry {
    /// Short name of the registry (`lint`, `audit`).
    fn name(&self) -> &'static str;
    /// The Markdown documentation of `code`, if this registry knows it.
    fn explain(&self, code: &str) -> Option<String>;
    /// Every code with its one-line summary.
    fn list(&self) -> Vec<(String, String)>;
}

/// The lint rules.
#[derive(Debug, Default, Clone, Copy)]
pub struct LintCodes;

impl CodeRegistry for LintCodes {
    fn name(&self) -> &'static str {
        "lint"
    }
    fn explain(&self, code: &str) -> Option<String> {
        Rule::from_code(code).map(rule_page)
    }
    fn list(&self) -> Vec<(String, String)> {
        Rule::ALL
            .iter()
            .map(|r| (r.code().to_owned(), format!("{} — {}", r.name(), r.summary())))
            .collect()
    }
}
