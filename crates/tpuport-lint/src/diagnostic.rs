//! A finding: rule, message, byte range and optional fix.

use tpuport_python::Span;

use crate::codes::Rule;
use crate::fix::Fix;

/// One finding in one file.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Which rule.
    pub rule: Rule,
    /// The message.
    pub message: String,
    /// What to do about it; the fix's title when there is a fix.
    pub help: Option<String>,
    /// Where (bytes of the file's text).
    pub span: Span,
    /// The automatic fix, if the rule has one here.
    pub fix: Option<Fix>,
}

impl Diagnostic {
    /// Attaches a fix.
    pub fn set_fix(&mut self, fix: Fix) {
        self.fix = Some(fix);
    }
}
