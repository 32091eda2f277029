//! Lint one source text; fix it until stable.

use std::collections::BTreeMap;

use tpuport_python::{ParseError, ParsedModule, parse_module};

use crate::checker::Checker;
use crate::codes::Rule;
use crate::diagnostic::Diagnostic;
use crate::fix::{Applicability, apply_fixes};
use crate::noqa::NoqaMap;
use crate::semantic::{Framework, Semantic};
use crate::settings::RuleSet;

/// Most fix passes before giving up on convergence.
pub const MAX_FIX_PASSES: usize = 100;

/// Findings of one text.
#[derive(Debug, Default)]
pub struct LintResult {
    /// Findings, by position.
    pub diagnostics: Vec<Diagnostic>,
    /// Frameworks detected from imports.
    pub frameworks: Vec<Framework>,
}

/// Lints an already parsed module.
#[must_use]
pub fn lint_parsed(source: &str, parsed: &ParsedModule, rules: &RuleSet) -> LintResult {
    let semantic = Semantic::build(parsed.module(), source);
    lint_with_semantic(source, parsed, &semantic, rules)
}

/// [`lint_parsed`] with the semantic model of `parsed` already built (the port builds it once
/// per pass for its recipes and the lint).
pub(crate) fn lint_with_semantic(
    source: &str,
    parsed: &ParsedModule,
    semantic: &Semantic,
    rules: &RuleSet,
) -> LintResult {
    let mut diagnostics = Checker::new(source, parsed, semantic, rules).run();
    let noqa = NoqaMap::new(parsed);
    diagnostics.retain(|d| !noqa.suppresses(parsed.lines(), d));
    diagnostics.sort_by_key(|d| (d.span.start, d.rule, d.span.end));
    diagnostics.dedup_by_key(|d| (d.span, d.rule));
    LintResult { diagnostics, frameworks: semantic.frameworks().to_vec() }
}

/// Parses and lints `source`.
///
/// # Errors
/// When `source` is not valid Python.
pub fn lint_source(source: &str, rules: &RuleSet) -> Result<LintResult, ParseError> {
    let parsed = parse_module(source)?;
    Ok(lint_parsed(source, &parsed, rules))
}

/// The outcome of fixing one text.
#[derive(Debug)]
pub struct FixOutcome {
    /// The fixed text (the input when nothing applied).
    pub output: String,
    /// Fixes applied, per rule.
    pub fixed: BTreeMap<Rule, usize>,
    /// Findings left in `output`.
    pub remaining: LintResult,
    /// Set when a pass produced invalid Python: the codes of that pass (which was reverted).
    pub syntax_error: Option<String>,
    /// Set when fixes were still changing the text after [`MAX_FIX_PASSES`].
    pub did_not_converge: bool,
}

/// Applies fixes allowed by `threshold`, re-linting until nothing applies (at most
/// [`MAX_FIX_PASSES`] passes). A pass whose output does not parse is reverted.
///
/// # Errors
/// When `source` itself is not valid Python.
pub fn lint_fix(
    source: &str,
    rules: &RuleSet,
    threshold: Applicability,
) -> Result<FixOutcome, ParseError> {
    let mut current = source.to_owned();
    let mut parsed = parse_module(&current)?;
    let mut fixed: BTreeMap<Rule, usize> = BTreeMap::new();
    let mut syntax_error = None;
    let mut did_not_converge = true;
    for _ in 0..MAX_FIX_PASSES {
        let result = lint_parsed(&current, &parsed, rules);
        let Some(applied) = apply_fixes(&current, &result.diagnostics, threshold) else {
            did_not_converge = false;
            break;
        };
        if applied.output == current {
            did_not_converge = false;
            break;
        }
        match parse_module(&applied.output) {
            Ok(p) => {
                for (rule, n) in applied.fixed {
                    *fixed.entry(rule).or_default() += n;
                }
                current = applied.output;
                parsed = p;
            }
            Err(_) => {
                let codes: Vec<&str> = applied.fixed.keys().map(|r| r.code()).collect();
                syntax_error = Some(codes.join(", "));
                did_not_converge = false;
                break;
            }
        }
    }
    let remaining = lint_parsed(&current, &parsed, rules);
    Ok(FixOutcome { output: current, fixed, remaining, syntax_error, did_not_converge })
}
