//! What a rule reports, and where its user documentation comes from.

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

/// The documentation captured from a violation's doc comment (implemented by [`violation!`]).
pub(crate) trait ViolationDoc {
    /// The doc comment, one `#[doc]` line per line.
    const DOC: &'static str;
}

/// Declares a violation struct and captures its doc comment as [`ViolationDoc::DOC`].
///
/// Doc comments are `#[doc = "..."]` attributes, which `macro_rules!` can match, so the
/// rule's documentation lives in exactly one place: above the struct.
macro_rules! violation {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident { $($fvis:vis $field:ident : $ty:ty),* $(,)? }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone)]
        $vis struct $name { $($fvis $field: $ty),* }

        impl $crate::violation::ViolationDoc for $name {
            const DOC: &'static str = concat!($($doc, "\n"),*);
        }
    };
}
pub(crate) use violation;
