//! What a rule reports. Its user documentation is the violation struct's doc comment, captured
//! by `tpuport_codes::documented!`.

/// A reported pattern. The struct's doc comment is the rule's user documentation.
pub(crate) trait Violation {
    /// One-line message shown after the code.
    fn message(&self) -> String;
    /// What to do about it (shown as `help:`); also the title of the fix, if any.
    fn fix_title(&self) -> Option<String> {
        None
    }
}

/// Ties a violation type to its row in the code table (implemented by `codes.rs`).
pub(crate) trait AsRule {
    /// The rule.
    const RULE: crate::codes::Rule;
}
