//! Which rules run: `--select` / `--ignore` by code or prefix, preview gating.

use crate::codes::{Rule, RuleStatus};
use crate::error::LintError;

/// A code, a code prefix (`TPU2`, `TPU20`) or `ALL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector(String);

impl Selector {
    /// Parses a selector; it must match at least one rule.
    ///
    /// # Errors
    /// When no rule code starts with `text`.
    pub fn parse(text: &str) -> Result<Selector, LintError> {
        let t = text.trim().to_ascii_uppercase();
        if t == "ALL" || Rule::ALL.iter().any(|r| r.code().starts_with(&t)) && !t.is_empty() {
            Ok(Selector(t))
        } else {
            Err(LintError::UnknownSelector(text.to_owned()))
        }
    }

    fn matches(&self, rule: Rule) -> bool {
        self.0 == "ALL" || rule.code().starts_with(&self.0)
    }

    fn is_exact(&self, rule: Rule) -> bool {
        self.0 == rule.code()
    }
}

/// The enabled rules.
#[derive(Clone, Debug)]
pub struct RuleSet {
    /// Indexed by `Rule as usize` (a lookup per check and per report).
    enabled: Vec<bool>,
}

impl RuleSet {
    /// Stable rules, plus preview rules with `preview`; narrowed by `select`, minus `ignore`.
    /// A preview rule selected by its exact code runs without `preview`.
    #[must_use]
    pub fn new(select: &[Selector], ignore: &[Selector], preview: bool) -> RuleSet {
        let enabled = Rule::ALL
            .iter()
            .copied()
            .map(|r| {
                let selected =
                    if select.is_empty() { true } else { select.iter().any(|s| s.matches(r)) };
                let status_ok = r.status() == RuleStatus::Stable
                    || preview
                    || select.iter().any(|s| s.is_exact(r));
                selected && status_ok && !ignore.iter().any(|s| s.matches(r))
            })
            .collect();
        RuleSet { enabled }
    }

    /// Every rule, preview included.
    #[must_use]
    pub fn all() -> RuleSet {
        RuleSet { enabled: vec![true; Rule::ALL.len()] }
    }

    /// Exactly these rules.
    #[must_use]
    pub fn only(rules: &[Rule]) -> RuleSet {
        let mut enabled = vec![false; Rule::ALL.len()];
        for r in rules {
            enabled[*r as usize] = true;
        }
        RuleSet { enabled }
    }

    /// Whether `rule` runs.
    #[must_use]
    pub fn enabled(&self, rule: Rule) -> bool {
        self.enabled[rule as usize]
    }
}

impl Default for RuleSet {
    fn default() -> Self {
        RuleSet::new(&[], &[], false)
    }
}
