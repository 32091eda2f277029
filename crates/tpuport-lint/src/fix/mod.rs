//! Fixes are data: byte-range edits on the original text, never a re-printed tree.

mod apply;
pub mod edits;

pub use apply::{AppliedFixes, apply_fixes};

use tpuport_python::Span;

/// Replace `range` with `content` (empty range: insert; empty content: delete).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Edit {
    /// Bytes replaced.
    #[serde(skip)]
    pub range: Span,
    /// Replacement text.
    pub content: String,
}

impl Edit {
    /// Replaces `range` with `content`.
    #[must_use]
    pub fn replace(range: Span, content: impl Into<String>) -> Edit {
        Edit { range, content: content.into() }
    }

    /// Inserts `content` at `offset`.
    #[must_use]
    pub fn insert(offset: u32, content: impl Into<String>) -> Edit {
        Edit { range: Span::empty(offset), content: content.into() }
    }

    /// Deletes `range`.
    #[must_use]
    pub fn delete(range: Span) -> Edit {
        Edit { range, content: String::new() }
    }

    fn overlaps(&self, other: &Edit) -> bool {
        if self == other {
            return false;
        }
        let (a, b) = (self.range, other.range);
        (a.start < b.end && b.start < a.end) || (a.is_empty() && b.is_empty() && a.start == b.start)
    }
}

/// How safe a fix is to apply without review.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown, never applied (needs a decision the tool cannot make).
    DisplayOnly,
    /// Changes behaviour or needs context; applied with `--unsafe-fixes`.
    Unsafe,
    /// Keeps meaning and comments; applied with `--fix`.
    Safe,
}

/// A set of edits that must be applied together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    edits: Vec<Edit>,
    /// How safe it is.
    pub applicability: Applicability,
}

impl Fix {
    /// A fix from `edits` (sorted by position).
    #[must_use]
    pub fn new(mut edits: Vec<Edit>, applicability: Applicability) -> Fix {
        edits.sort();
        edits.dedup();
        Fix { edits, applicability }
    }

    /// A safe fix.
    #[must_use]
    pub fn safe(edits: Vec<Edit>) -> Fix {
        Fix::new(edits, Applicability::Safe)
    }

    /// An unsafe fix.
    #[must_use]
    pub fn unsafe_(edits: Vec<Edit>) -> Fix {
        Fix::new(edits, Applicability::Unsafe)
    }

    /// The edits, sorted by start.
    #[must_use]
    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// Start of the first edit.
    #[must_use]
    pub fn min_start(&self) -> u32 {
        self.edits.first().map_or(0, |e| e.range.start)
    }

    /// Whether this fix may be applied when fixes up to `threshold` are allowed.
    #[must_use]
    pub fn applies(&self, threshold: Applicability) -> bool {
        self.applicability != Applicability::DisplayOnly && self.applicability >= threshold
    }
}
