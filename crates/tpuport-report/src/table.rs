//! Text tables: columns with a header, an alignment, an optional width limit and style; cells
//! separated by two spaces, no borders, trailing spaces trimmed, readable without colour.
//!
//! Widths count characters of the plain text; styles are applied after padding, so a coloured
//! table lines up exactly like the plain one.

use crate::style::{Paint, Style};

/// Column alignment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    #[default]
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// Which end of an over-long cell gives way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Truncate {
    /// Keep the end: `…/layer.3/conv` (node and tensor names, paths).
    #[default]
    Start,
    /// Keep the start: `a long descr…`.
    End,
}

/// `s` cut to at most `max` characters, with `…` where text was dropped.
#[must_use]
pub fn truncate(s: &str, max: usize, how: Truncate) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let keep = max.saturating_sub(1);
    match how {
        Truncate::Start => {
            let tail: String = s.chars().skip(n - keep).collect();
            format!("…{tail}")
        }
        Truncate::End => {
            let head: String = s.chars().take(keep).collect();
            format!("{head}…")
        }
    }
}

/// One column: header, alignment, width limit and style.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Column {
    header: String,
    align: Align,
    max_width: Option<(usize, Truncate)>,
    style: Option<Style>,
}

impl Column {
    /// A left-aligned column (text).
    #[must_use]
    pub fn left(header: &str) -> Column {
        Column { header: header.to_owned(), ..Column::default() }
    }

    /// A right-aligned column (numbers).
    #[must_use]
    pub fn right(header: &str) -> Column {
        Column { header: header.to_owned(), align: Align::Right, ..Column::default() }
    }

    /// Cuts cells longer than `n` characters, keeping the end (see [`Truncate::Start`]).
    #[must_use]
    pub fn max_width(self, n: usize) -> Column {
        self.truncate(n, Truncate::Start)
    }

    /// Cuts cells longer than `n` characters at the given end.
    #[must_use]
    pub fn truncate(mut self, n: usize, how: Truncate) -> Column {
        self.max_width = Some((n.max(1), how));
        self
    }

    /// A style for every cell of this column (a cell's own style wins).
    #[must_use]
    pub fn style(mut self, style: Style) -> Column {
        self.style = Some(style);
        self
    }
}

/// One cell: text and an optional style.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    text: String,
    style: Option<Style>,
}

impl Cell {
    /// A cell drawn in `style` when colour is on.
    #[must_use]
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell { text: text.into(), style: Some(style) }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, style: None }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_owned())
    }
}

impl From<&String> for Cell {
    fn from(text: &String) -> Cell {
        Cell::from(text.clone())
    }
}

/// A text table: a header row (skipped when every header is empty), aligned columns separated
/// by two spaces, a left indent (2 by default).
#[derive(Clone, Debug)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<Cell>>,
    indent: usize,
    header_style: Option<Style>,
    paint: Paint,
}

impl Default for Table {
    fn default() -> Table {
        Table::with_columns(Vec::new())
    }
}

impl Table {
    /// A table with the given column headers and alignments (an empty header row is skipped;
    /// a column without an alignment is left-aligned).
    #[must_use]
    pub fn new(header: &[&str], align: &[Align]) -> Table {
        let n = header.len().max(align.len());
        let columns: Vec<Column> = (0..n)
            .map(|i| Column {
                header: header.get(i).map_or_else(String::new, |h| (*h).to_owned()),
                align: align.get(i).copied().unwrap_or_default(),
                ..Column::default()
            })
            .collect();
        Table::with_columns(columns)
    }

    /// A table with these columns.
    #[must_use]
    pub fn with_columns(columns: impl IntoIterator<Item = Column>) -> Table {
        Table {
            columns: columns.into_iter().collect(),
            rows: Vec::new(),
            indent: 2,
            header_style: None,
            paint: Paint::PLAIN,
        }
    }

    /// Sets the left indent.
    #[must_use]
    pub fn indent(mut self, n: usize) -> Table {
        self.indent = n;
        self
    }

    /// Draws styles with `paint` (plain by default).
    #[must_use]
    pub fn paint(mut self, paint: Paint) -> Table {
        self.paint = paint;
        self
    }

    /// A style for the header row.
    #[must_use]
    pub fn header_style(mut self, style: Style) -> Table {
        self.header_style = Some(style);
        self
    }

    /// Adds a row; missing cells are empty, extra cells make left-aligned columns.
    pub fn row<C: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = C>) {
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
        let ncol = self.rows.iter().map(Vec::len).chain([self.columns.len()]).max().unwrap_or(0);
        let column = |i: usize| self.columns.get(i);
        let cut = |i: usize, text: &str| match column(i).and_then(|c| c.max_width) {
            Some((n, how)) => truncate(text, n, how),
            None => text.to_owned(),
        };
        let show_header = self.columns.iter().any(|c| !c.header.is_empty());
        let header: Vec<Cell> = self
            .columns
            .iter()
            .map(|c| Cell { text: c.header.clone(), style: self.header_style })
            .collect();
        let rows: Vec<Vec<Cell>> = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(i, c)| Cell {
                        text: cut(i, &c.text),
                        style: c.style.or_else(|| column(i).and_then(|c| c.style)),
                    })
                    .collect()
            })
            .collect();
        let mut width = vec![0usize; ncol];
        for r in rows.iter().chain(show_header.then_some(&header)) {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.text.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[Cell]| {
            let mut l = " ".repeat(self.indent);
            for (i, w) in width.iter().enumerate() {
                let (text, style) = cells.get(i).map_or(("", None), |c| (c.text.as_str(), c.style));
                let pad = " ".repeat(w - text.chars().count());
                let painted = match style {
                    Some(s) if !text.is_empty() => self.paint.paint(text, s),
                    _ => text.to_owned(),
                };
                if i > 0 {
                    l.push_str("  ");
                }
                if column(i).map(|c| c.align) == Some(Align::Right) {
                    l.push_str(&pad);
                    l.push_str(&painted);
                } else {
                    l.push_str(&painted);
                    l.push_str(&pad);
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        if show_header {
            line(&header);
        }
        for r in &rows {
            line(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::style::strip_ansi;

    #[test]
    fn aligns() {
        let mut t = Table::new(&["name", "n"], &[Align::Left, Align::Right]);
        t.row(["a", "1"]);
        t.row(["long", "100"]);
        assert_eq!(t.render(), "  name    n\n  a       1\n  long  100\n");
    }

    #[test]
    fn headerless_tables_and_ragged_rows() {
        let mut t = Table::new(&[], &[]).indent(0);
        t.row(vec!["key".to_owned(), "value".to_owned(), "source".to_owned()]);
        t.row(["k", "", "s"]);
        t.row(["only"]);
        assert_eq!(t.render(), "key   value  source\nk            s\nonly\n");
        assert!(!t.is_empty());
        assert!(Table::default().is_empty());
        assert_eq!(Table::default().render(), "");
    }

    #[test]
    fn columns_truncate_at_either_end() {
        let mut t = Table::with_columns([
            Column::left("node").max_width(8),
            Column::left("note").truncate(6, Truncate::End),
            Column::right("n"),
        ]);
        t.row(["/model/layer.3/conv", "a long note", "7"]);
        t.row(["short", "ok", "12"]);
        assert_eq!(
            t.render(),
            "  node      note     n\n  ….3/conv  a lon…   7\n  short     ok      12\n"
        );
        assert_eq!(truncate("abc", 3, Truncate::Start), "abc");
        assert_eq!(truncate("héllo wörld", 5, Truncate::Start), "…örld");
        assert_eq!(truncate("héllo wörld", 5, Truncate::End), "héll…");
        assert_eq!(truncate("abc", 0, Truncate::End), "…");
    }

    #[test]
    fn colour_is_applied_after_padding() {
        let build = |paint| {
            let mut t =
                Table::with_columns([Column::left("sev"), Column::right("n").style(Style::Bold)])
                    .header_style(Style::Bold)
                    .paint(paint);
            t.row([Cell::styled("error", Style::Red), Cell::from("1")]);
            t.row([Cell::styled("info", Style::Cyan), Cell::from("100")]);
            t.render()
        };
        let plain = build(Paint::PLAIN);
        let coloured = build(Paint::new(true));
        assert_eq!(plain, "  sev      n\n  error    1\n  info   100\n");
        assert_ne!(plain, coloured);
        assert!(coloured.contains("\u{1b}[31merror\u{1b}[0m"), "{coloured:?}");
        assert_eq!(strip_ansi(&coloured), plain);
    }
}
