//! Byte ranges into a source text.

use std::fmt;

/// A half-open UTF-8 byte range `start..end` into a source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end` (swapped if given in the wrong order).
    #[must_use]
    pub fn new(start: u32, end: u32) -> Span {
        if start <= end { Span { start, end } } else { Span { start: end, end: start } }
    }

    /// An empty span at `offset` (an insertion point).
    #[must_use]
    pub fn empty(offset: u32) -> Span {
        Span { start: offset, end: offset }
    }

    /// Length in bytes.
    #[must_use]
    pub fn len(self) -> u32 {
        self.end - self.start
    }

    /// Whether the span covers no byte.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// Whether `other` lies inside this span.
    #[must_use]
    pub fn contains(self, other: Span) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// The `usize` range, for slicing a `str`.
    #[must_use]
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The text this span covers in `source`, or `""` if it is out of bounds or splits a char.
    #[must_use]
    pub fn slice(self, source: &str) -> &str {
        source.get(self.range()).unwrap_or("")
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}
