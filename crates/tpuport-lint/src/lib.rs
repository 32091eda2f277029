//! tpuport-lint: TPU-migration lint rules for Python training scripts, fixes as byte-range
//! edits, renderers, and the `port` codemods.
//!
//! Layout follows ruff: one rule per file under `rules/<family>/<rule>.rs`, whose violation
//! struct's doc comment is the user documentation (`tpuport_codes::StableCode::doc`, which
//! [`Rule`] implements); one code table in [`codes`]; fixes are [`fix::Edit`]s on the original text applied in start order and
//! re-linted until stable ([`lint_fix`]). The crate never prints.

mod analyze;
mod checker;
pub mod codes;
mod constants;
mod diagnostic;
mod docs;
mod error;
pub mod files;
pub mod fix;
mod fs;
mod linter;
mod noqa;
pub mod port;
pub mod render;
mod rules;
mod scope;
mod semantic;
pub mod settings;
mod violation;

#[cfg(test)]
mod test;

pub use codes::{Family, Rule, RuleStatus};
pub use diagnostic::Diagnostic;
pub use error::LintError;
pub use fs::write_atomic;
pub use linter::{FixOutcome, LintResult, MAX_FIX_PASSES, lint_fix, lint_parsed, lint_source};
pub use semantic::Framework;
pub use settings::{RuleSet, Selector};

/// An error and its causes as one line (`outer: cause: root`).
pub use tpuport_model::error_chain;
