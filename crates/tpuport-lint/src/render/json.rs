//! JSON output (schema version 1).

use serde_json::{Value, json};
use tpuport_python::{LineIndex, Span};

use crate::files::FileReport;
use crate::fix::Applicability;
use crate::render::{display_path, rule_url};

fn location(source: &str, lines: &LineIndex, offset: u32) -> Value {
    let lc = lines.line_col(source, offset);
    json!({ "row": lc.line, "column": lc.column })
}

fn span_json(source: &str, lines: &LineIndex, span: Span) -> (Value, Value) {
    (location(source, lines, span.start), location(source, lines, span.end))
}

/// `{"version": 1, "findings": [...], "errors": [...], "fixed": {...}}`.
#[must_use]
pub fn render_json(reports: &[FileReport], threshold: Applicability) -> String {
    let mut findings = Vec::new();
    let mut errors = Vec::new();
    let mut fixed = serde_json::Map::new();
    for r in reports {
        let path = display_path(&r.path);
        if let Some(e) = &r.error {
            errors.push(json!({ "filename": path, "message": crate::error_chain(e) }));
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
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
