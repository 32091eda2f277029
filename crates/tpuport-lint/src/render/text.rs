//! Text output: `path:line:col: CODE [*] message`, a source frame with a caret underline, and
//! a `help:` line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tpuport_python::LineIndex;

use crate::codes::Rule;
use crate::diagnostic::Diagnostic;
use crate::files::FileReport;
use crate::fix::Applicability;
use crate::render::display_path;

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

/// Renders every finding of every file, then the summary.
#[must_use]
pub fn render_text(reports: &[FileReport], opts: TextOptions) -> String {
    let mut out = String::new();
    for r in reports {
        let Some(source) = &r.source else { continue };
        if r.diagnostics.is_empty() {
            continue;
        }
        let lines = LineIndex::new(source);
        let path = display_path(&r.path);
        for d in &r.diagnostics {
            out.push_str(&render_diagnostic(&path, source, &lines, d, opts));
            out.push('\n');
        }
    }
    out.push_str(&render_summary(reports, opts.threshold));
    out
}

/// `Found N findings.` with fix counts, in ruff's words.
#[must_use]
pub fn render_summary(reports: &[FileReport], threshold: Applicability) -> String {
    let all: Vec<&Diagnostic> = reports.iter().flat_map(|r| &r.diagnostics).collect();
    let fixed: usize = reports.iter().flat_map(|r| r.fixed.values()).sum();
    let remaining = all.len();
    let mut out = String::new();
    if fixed > 0 {
        let _ = writeln!(
            out,
            "Found {} finding{} ({fixed} fixed, {remaining} remaining).",
            fixed + remaining,
            plural(fixed + remaining)
        );
    } else if remaining > 0 {
        let _ = writeln!(out, "Found {remaining} finding{}.", plural(remaining));
    } else if reports.iter().any(|r| r.error.is_some()) {
        // Never "All checks passed!" when a file could not be read or parsed.
        let n = reports.iter().filter(|r| r.error.is_some()).count();
        let _ = writeln!(out, "No findings, but {n} file{} could not be checked.", plural(n));
    } else {
        out.push_str("All checks passed!\n");
    }
    let safe = all.iter().filter(|d| d.fix.as_ref().is_some_and(|f| f.applies(threshold))).count();
    let hidden = all
        .iter()
        .filter(|d| {
            d.fix
                .as_ref()
                .is_some_and(|f| f.applicability == Applicability::Unsafe && !f.applies(threshold))
        })
        .count();
    if safe > 0 {
        let _ = write!(out, "[*] {safe} fixable with the `--fix` option");
        if hidden > 0 {
            let _ = write!(
                out,
                " ({hidden} hidden fix{} can be enabled with the `--unsafe-fixes` option)",
                if hidden == 1 { "" } else { "es" }
            );
        }
        out.push_str(".\n");
    } else if hidden > 0 {
        let _ = writeln!(
            out,
            "No fixes available ({hidden} hidden fix{} can be enabled with the `--unsafe-fixes` option).",
            if hidden == 1 { "" } else { "es" }
        );
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `--statistics`: one line per code, most frequent first.
#[must_use]
pub fn render_statistics(reports: &[FileReport], threshold: Applicability) -> String {
    let mut counts: BTreeMap<Rule, (usize, bool)> = BTreeMap::new();
    for d in reports.iter().flat_map(|r| &r.diagnostics) {
        let e = counts.entry(d.rule).or_default();
        e.0 += 1;
        e.1 |= d.fix.as_ref().is_some_and(|f| f.applies(threshold));
    }
    let mut rows: Vec<(Rule, usize, bool)> =
        counts.into_iter().map(|(r, (n, f))| (r, n, f)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let width = rows.iter().map(|r| r.1.to_string().len()).max().unwrap_or(1);
    let mut out = String::new();
    for (rule, n, fixable) in rows {
        let mark = if fixable { "[*]" } else { "[ ]" };
        let _ = writeln!(out, "{n:>width$}\t{}\t{mark} {}", rule.code(), rule.name());
    }
    out
}
