//! SARIF 2.1.0 for GitHub code scanning.

use serde_json::{Value, json};
use tpuport_python::LineIndex;

use crate::codes::{Rule, RuleStatus};
use crate::files::FileReport;
use crate::render::{display_path, rule_url};

/// The schema URI written as `$schema`.
pub(crate) const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn rule_descriptor(rule: Rule) -> Value {
    json!({
        "id": rule.code(),
        "name": rule.name(),
        "shortDescription": { "text": rule.summary() },
        "fullDescription": { "text": rule.summary() },
        "helpUri": rule_url(rule.code()),
        "help": { "text": rule.summary(), "markdown": rule.doc() },
        "defaultConfiguration": { "level": "warning" },
        "properties": {
            "family": rule.family().title(),
            "status": if rule.status() == RuleStatus::Stable { "stable" } else { "preview" },
        },
    })
}

/// One SARIF log with one run: every known rule in `tool.driver.rules`, one result per finding,
/// and one `toolExecutionNotifications` entry per file that could not be checked.
#[must_use]
pub fn render_sarif(reports: &[FileReport]) -> String {
    let rules: Vec<Value> = Rule::ALL.iter().map(|r| rule_descriptor(*r)).collect();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for r in reports {
        let uri = display_path(&r.path);
        if let Some(e) = &r.error {
            notifications.push(json!({
                "level": "error",
                "message": { "text": crate::error_chain(e) },
                "locations": [{ "physicalLocation": { "artifactLocation": { "uri": uri } } }],
            }));
        }
        let Some(source) = &r.source else { continue };
        let lines = LineIndex::new(source);
        for d in &r.diagnostics {
            let s = lines.line_col(source, d.span.start);
            let e = lines.line_col(source, d.span.end);
            let index = Rule::ALL.iter().position(|x| *x == d.rule).unwrap_or(0);
            let mut text = d.message.clone();
            if let Some(help) = &d.help {
                text.push_str(". Help: ");
                text.push_str(help);
            }
            results.push(json!({
                "ruleId": d.rule.code(),
                "ruleIndex": index,
                "level": "warning",
                "message": { "text": text },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri, "uriBaseId": "%SRCROOT%" },
                        "region": {
                            "startLine": s.line,
                            "startColumn": s.column,
                            "endLine": e.line,
                            "endColumn": e.column,
                        },
                    },
                }],
            }));
        }
    }
    let doc = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "tpuport",
                    "informationUri": "https://example.invalid/tpuport",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                },
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
