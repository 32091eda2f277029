//! Line index: byte offsets to 1-based line and column, and line boundaries.

/// A 1-based line and column. Columns count Unicode scalar values, like ruff's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    /// 1-based line.
    pub line: u32,
    /// 1-based column in characters.
    pub column: u32,
}

/// Start offsets of every line of a text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<u32>,
    len: u32,
}

impl LineIndex {
    /// Indexes `source` (`\n`, `\r\n` and lone `\r` end lines).
    #[must_use]
    pub fn new(source: &str) -> LineIndex {
        let bytes = source.as_bytes();
        let mut starts = vec![0u32];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => starts.push(to_u32(i + 1)),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(to_u32(i + 1)),
                _ => {}
            }
            i += 1;
        }
        LineIndex { starts, len: to_u32(source.len()) }
    }

    /// Number of lines (a trailing newline does not start a counted line of its own).
    #[must_use]
    pub fn line_count(&self) -> usize {
        match self.starts.last() {
            Some(&last) if last == self.len && self.starts.len() > 1 => self.starts.len() - 1,
            _ => self.starts.len(),
        }
    }

    /// 0-based line holding byte `offset`.
    #[must_use]
    pub fn line_of(&self, offset: u32) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// 1-based line and character column of `offset` in `source` (the text this index was built from).
    #[must_use]
    pub fn line_col(&self, source: &str, offset: u32) -> LineCol {
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        let end = (offset as usize).min(source.len());
        let column = source.get(start..end).map_or(end - start, |s| s.chars().count());
        LineCol { line: to_u32(line + 1), column: to_u32(column + 1) }
    }

    /// Byte offset where 0-based `line` starts (the text length past the end).
    #[must_use]
    pub fn line_start(&self, line: usize) -> u32 {
        self.starts.get(line).copied().unwrap_or(self.len)
    }

    /// Byte offset just past 0-based `line`, including its line break.
    #[must_use]
    pub fn line_end_with_newline(&self, line: usize) -> u32 {
        self.starts.get(line + 1).copied().unwrap_or(self.len)
    }

    /// The text of 0-based `line` without its line break.
    #[must_use]
    pub fn line_text<'s>(&self, source: &'s str, line: usize) -> &'s str {
        let start = self.line_start(line) as usize;
        let end = self.line_end_with_newline(line) as usize;
        source.get(start..end).unwrap_or("").trim_end_matches(['\n', '\r'])
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let src = "ab\ncé\r\nx";
        let idx = LineIndex::new(src);
        assert_eq!(idx.line_count(), 3);
        assert_eq!(idx.line_col(src, 0), LineCol { line: 1, column: 1 });
        assert_eq!(idx.line_col(src, 5), LineCol { line: 2, column: 3 });
        assert_eq!(idx.line_col(src, 8), LineCol { line: 3, column: 1 });
        assert_eq!(idx.line_text(src, 1), "cé");
    }
}
