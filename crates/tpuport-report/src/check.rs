//! `tpuport check` reports: ruff-style text (each finding's frame from
//! [`tpuport_lint::render::render_diagnostic`], then a summary), `--statistics`, JSON (schema
//! version 1) and SARIF 2.1.0.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};
use tpuport_codes::StableCode;
use tpuport_lint::codes::{Rule, RuleStatus};
use tpuport_lint::files::FileReport;
use tpuport_lint::fix::Applicability;
use tpuport_lint::render::{TextOptions, display_path, render_diagnostic, rule_url};
use tpuport_lint::{Diagnostic, error_chain};
use tpuport_python::{LineIndex, Span};

use crate::ReportError;
use crate::sarif;

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

fn location(source: &str, lines: &LineIndex, offset: u32) -> Value {
    let lc = lines.line_col(source, offset);
    json!({ "row": lc.line, "column": lc.column })
}

fn span_json(source: &str, lines: &LineIndex, span: Span) -> (Value, Value) {
    (location(source, lines, span.start), location(source, lines, span.end))
}

/// `{"version": 1, "findings": [...], "errors": [...], "fixed": {...}}`.
///
/// # Errors
/// When the document cannot be serialised.
pub fn render_json(
    reports: &[FileReport],
    threshold: Applicability,
) -> Result<String, ReportError> {
    let mut findings = Vec::new();
    let mut errors = Vec::new();
    let mut fixed = serde_json::Map::new();
    for r in reports {
        let path = display_path(&r.path);
        if let Some(e) = &r.error {
            errors.push(json!({ "filename": path, "message": error_chain(e) }));
        }
        for (rule, n) in &r.fixed {
            let entry = fixed.entry(rule.code().to_owned()).or_insert(json!(0));
            *entry = json!(entry.as_u64().unwrap_or(0) + *n as u64);
        }
        let Some(source) = &r.source else { continue };
        let lines = LineIndex::new(source);
        for d in &r.diagnostics {
            let (start, end) = span_json(source, &lines, d.span);
            let fix = d.fix.as_ref().map(|f| {
                let edits: Vec<Value> = f
                    .edits()
                    .iter()
                    .map(|e| {
                        let (s, en) = span_json(source, &lines, e.range);
                        json!({ "content": e.content, "location": s, "end_location": en })
                    })
                    .collect();
                json!({
                    "applicability": f.applicability,
                    "applies": f.applies(threshold),
                    "message": d.help,
                    "edits": edits,
                })
            });
            findings.push(json!({
                "code": d.rule.code(),
                "name": d.rule.name(),
                "message": d.message,
                "help": d.help,
                "filename": path,
                "location": start,
                "end_location": end,
                "fix": fix,
                "url": rule_url(d.rule.code()),
                "frameworks": r.frameworks,
            }));
        }
    }
    let doc = json!({ "version": 1, "tool": "tpuport", "findings": findings, "errors": errors, "fixed": fixed });
    crate::json::to_pretty(&doc)
}

fn rule_descriptor(rule: Rule) -> sarif::Rule {
    let summary = rule.summary();
    let mut properties = serde_json::Map::new();
    properties.insert("family".into(), rule.family().title().into());
    let status = if rule.status() == RuleStatus::Stable { "stable" } else { "preview" };
    properties.insert("status".into(), status.into());
    sarif::Rule {
        id: rule.code().to_owned(),
        name: rule.name(),
        short_description: sarif::Message::new(summary.clone()),
        full_description: sarif::Message::new(summary.clone()),
        help_uri: rule_url(rule.code()),
        help: sarif::Help { text: summary, markdown: rule.doc() },
        default_configuration: sarif::Configuration { level: sarif::Level::Warning },
        properties,
    }
}

/// One SARIF log with one run: every known rule in `tool.driver.rules`, one result per finding,
/// and one `toolExecutionNotifications` entry per file that could not be checked.
///
/// # Errors
/// When the log cannot be serialised.
pub fn render_sarif(reports: &[FileReport]) -> Result<String, ReportError> {
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for r in reports {
        let uri = display_path(&r.path);
        if let Some(e) = &r.error {
            notifications.push(sarif::Notification {
                level: sarif::Level::Error,
                message: sarif::Message::new(error_chain(e)),
                locations: vec![sarif::Location::file(
                    sarif::ArtifactLocation { uri: uri.clone(), uri_base_id: None },
                    None,
                )],
            });
        }
        let Some(source) = &r.source else { continue };
        let lines = LineIndex::new(source);
        for d in &r.diagnostics {
            let s = lines.line_col(source, d.span.start);
            let e = lines.line_col(source, d.span.end);
            let mut text = d.message.clone();
            if let Some(help) = &d.help {
                text.push_str(". Help: ");
                text.push_str(help);
            }
            results.push(sarif::Finding {
                rule_id: d.rule.code().to_owned(),
                rule_index: Rule::ALL.iter().position(|x| *x == d.rule).unwrap_or(0),
                level: sarif::Level::Warning,
                message: sarif::Message::new(text),
                locations: vec![sarif::Location::file(
                    sarif::ArtifactLocation {
                        uri: uri.clone(),
                        uri_base_id: Some("%SRCROOT%".to_owned()),
                    },
                    Some(sarif::Region {
                        start_line: s.line,
                        start_column: s.column,
                        end_line: e.line,
                        end_column: e.column,
                    }),
                )],
            });
        }
    }
    let run = sarif::Run {
        tool: sarif::Tool {
            driver: sarif::Driver {
                name: "tpuport".to_owned(),
                information_uri: "https://example.invalid/tpuport".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                rules: Rule::ALL.iter().map(|r| rule_descriptor(*r)).collect(),
            },
        },
        column_kind: "unicodeCodePoints",
        results,
        invocations: vec![sarif::Invocation {
            execution_successful: notifications.is_empty(),
            tool_execution_notifications: notifications,
        }],
    };
    sarif::Log::new(vec![run]).render()
}
