//! One diagnostic as text: `path:line:col: CODE [*] message`, a source frame with a caret
//! underline, and a `help:` line. The rule tests snapshot this; the whole-run reports (text,
//! statistics, JSON, SARIF) are in `tpuport-report`.

use std::fmt::Write as _;

use tpuport_python::LineIndex;

use crate::diagnostic::Diagnostic;
use crate::fix::Applicability;

/// Text rendering options.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// The least safe fix that `--fix` would apply now (marks `[*]`).
    pub threshold: Applicability,
    /// Lines of context around the flagged line.
    pub context: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { threshold: Applicability::Safe, context: 1 }
    }
}

/// Renders one diagnostic with its frame.
#[must_use]
pub fn render_diagnostic(
    path: &str,
    source: &str,
    lines: &LineIndex,
    d: &Diagnostic,
    opts: TextOptions,
) -> String {
    let mut out = String::new();
    let start = lines.line_col(source, d.span.start);
    let fixable = d.fix.as_ref().is_some_and(|f| f.applies(opts.threshold));
    let marker = if fixable { "[*] " } else { "" };
    let _ = writeln!(
        out,
        "{path}:{}:{}: {} {marker}{}",
        start.line,
        start.column,
        d.rule.code(),
        d.message
    );

    let line0 = lines.line_of(d.span.start);
    let first = line0.saturating_sub(opts.context);
    let last = (line0 + opts.context).min(lines.line_count().saturating_sub(1));
    let width = (last + 1).to_string().len();
    let pad = " ".repeat(width);
    let _ = writeln!(out, "{pad} |");
    for l in first..=last {
        let text = lines.line_text(source, l).replace('\t', "    ");
        let _ = writeln!(out, "{:>width$} | {}", l + 1, text.trim_end());
        if l == line0 {
            let line_text = lines.line_text(source, l);
            let line_start = lines.line_start(l) as usize;
            let col_chars = line_text
                .get(..(d.span.start as usize - line_start).min(line_text.len()))
                .map_or(0, |s| s.chars().count());
            let end_in_line = (d.span.end as usize).min(line_start + line_text.len());
            let len_chars = source
                .get(d.span.start as usize..end_in_line)
                .map_or(1, |s| s.chars().count())
                .max(1);
            let _ = writeln!(
                out,
                "{pad} | {}{} {}",
                " ".repeat(col_chars),
                "^".repeat(len_chars),
                d.rule.code()
            );
        }
    }
    let _ = writeln!(out, "{pad} |");
    if let Some(help) = &d.help {
        let _ = writeln!(out, "{pad} = help: {help}");
    }
    out
}
