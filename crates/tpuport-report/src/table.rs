/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A text table: a header row, aligned columns separated by two spaces, an indent.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
    indent: usize,
}

impl Table {
    /// A table with the given column headers and alignments (an empty header row is skipped).
    #[must_use]
    pub fn new(header: &[&str], align: &[Align]) -> Table {
        Table {
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            align: align.to_vec(),
            rows: Vec::new(),
            indent: 2,
        }
    }

    /// Sets the left indent.
    #[must_use]
    pub fn indent(mut self, n: usize) -> Table {
        self.indent = n;
        self
    }

    /// Adds a row; missing cells are empty.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// True when there are no rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders with a trailing newline per row; trailing spaces trimmed.
    #[must_use]
    pub fn render(&self) -> String {
        let ncol = self.rows.iter().map(Vec::len).chain([self.header.len()]).max().unwrap_or(0);
        let mut width = vec![0usize; ncol];
        let show_header = self.header.iter().any(|h| !h.is_empty());
        for r in self.rows.iter().chain(show_header.then_some(&self.header)) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let mut l = " ".repeat(self.indent);
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                let pad = w - c.chars().count();
                let a = self.align.get(i).copied().unwrap_or(Align::Left);
                if i > 0 {
                    l.push_str("  ");
                }
                if a == Align::Right {
                    l.push_str(&" ".repeat(pad));
                    l.push_str(c);
                } else {
                    l.push_str(c);
                    l.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        if show_header {
            line(&self.header);
        }
        for r in &self.rows {
            line(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns() {
        let mut t = Table::new(&["name", "n"], &[Align::Left, Align::Right]);
        t.row(["a", "1"]);
        t.row(["long", "100"]);
        assert_eq!(t.render(), "  name    n\n  a       1\n  long  100\n");
    }
}
