//! `tpuport profile`'s report as text (findings with the user's line, ruff-like) and as SARIF
//! 2.1.0 (findings that have a source location).

use std::fmt::Write as _;

use serde_json::{Value, json};
use tpuport_codes::StableCode;
use tpuport_profile::Report;
use tpuport_profile::findings::{CodeDoc, Finding, Severity};

use crate::human::{bytes, thousands};

/// The text report: what was read, then each finding, then a count line.
#[must_use]
pub fn text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Read {} input(s):", r.inputs.len());
    for i in &r.inputs {
        let events = i.events.map(|e| format!(", {} events", thousands(e))).unwrap_or_default();
        let _ = writeln!(
            s,
            "  {} [{}] {}{events}",
            i.path.display(),
            i.found.join(", "),
            bytes(i.bytes)
        );
    }
    for f in &r.findings {
        s.push('\n');
        finding(&mut s, f);
    }
    let count = |sev: Severity| r.findings.iter().filter(|f| f.severity == sev).count();
    let _ = writeln!(
        s,
        "\n{} error(s), {} warning(s), {} info; `tpuport explain CODE` for details",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    );
    s
}

fn finding(s: &mut String, f: &Finding) {
    let _ = writeln!(s, "{}[{}] {}", f.severity, f.code, f.title);
    if let Some(loc) = &f.location {
        let _ = writeln!(s, "  --> {loc}");
        if let Some(code) = &f.snippet {
            let no = loc.line.to_string();
            let pad = " ".repeat(no.len());
            let _ = writeln!(s, "  {pad} |\n  {no} | {code}\n  {pad} |");
        }
    }
    let _ = writeln!(s, "  = {}", f.message);
    for d in &f.details {
        let _ = writeln!(s, "  = {}", clip(d));
    }
    for r in &f.related {
        let _ = writeln!(s, "  = see also {r}");
    }
    if !f.check_rules.is_empty() {
        let _ =
            writeln!(s, "  = found before a run by: tpuport check ({})", f.check_rules.join(", "));
    }
    if let Some(fix) = &f.fix {
        let _ = writeln!(s, "  = fix: {fix}");
    }
    for e in &f.evidence {
        let _ = writeln!(s, "  = from {}", e.display());
    }
}

/// Most characters of one detail line (C++ kernel names run to thousands).
const MAX_DETAIL: usize = 160;

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_DETAIL {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX_DETAIL - 1).collect();
    out.push('…');
    out
}

fn level(sev: Severity) -> &'static str {
    match sev {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn location(file: &str, line: u32) -> Value {
    json!({ "physicalLocation": { "artifactLocation": { "uri": file }, "region": { "startLine": line } } })
}

/// SARIF 2.1.0: every PRF code as a rule; one result per finding that names a source line.
#[must_use]
pub fn sarif(r: &Report) -> String {
    let rules: Vec<Value> = CodeDoc::all()
        .iter()
        .map(|d| {
            json!({
                "id": d.code,
                "name": d.name,
                "shortDescription": { "text": d.summary() },
                "help": { "text": d.summary(), "markdown": d.doc() },
                "defaultConfiguration": { "level": level(d.severity) },
                "properties": { "family": d.family_title(), "checkRules": d.extra.check_rules },
            })
        })
        .collect();
    let results: Vec<Value> = r
        .findings
        .iter()
        .filter_map(|f| {
            let loc = f.location.as_ref()?;
            let index = CodeDoc::all().iter().position(|d| d.code == f.code).unwrap_or(0);
            let related: Vec<Value> = f.related.iter().map(|x| location(&x.file, x.line)).collect();
            Some(json!({
                "ruleId": f.code,
                "ruleIndex": index,
                "level": level(f.severity),
                "message": { "text": format!("{}: {}", f.title, f.message) },
                "locations": [location(&loc.file, loc.line)],
                "relatedLocations": related,
                "properties": { "checkRules": f.check_rules, "evidence": f.evidence },
            }))
        })
        .collect();
    let notifications: Vec<Value> =
        r.errors.iter().map(|e| json!({ "level": "error", "message": { "text": e } })).collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "tpuport", "version": env!("CARGO_PKG_VERSION"), "rules": rules } },
            "results": results,
            "invocations": [{ "executionSuccessful": r.errors.is_empty(), "toolExecutionNotifications": notifications }],
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tpuport_profile::{Frame, InputReport};

    use super::*;

    fn report() -> Report {
        let at = |file: &str, line, function: Option<&str>| Frame {
            file: file.to_owned(),
            line,
            function: function.map(str::to_owned),
        };
        Report {
            schema: tpuport_profile::SCHEMA,
            inputs: vec![InputReport {
                path: PathBuf::from("run/trace.json"),
                found: vec!["trace"],
                bytes: 3_041_177,
                events: Some(10_454),
            }],
            findings: vec![
                Finding {
                    code: "PRF101",
                    name: "input-bound-steps",
                    severity: Severity::Error,
                    title: "highly input-bound: 89.4% of step time waits for input".to_owned(),
                    message: "the median step spends 89.4% of its time waiting for input"
                        .to_owned(),
                    location: Some(at("train.py", 67, None)),
                    snippet: Some("for x, y in loader:".to_owned()),
                    related: vec![at("train.py", 25, Some("__getitem__"))],
                    details: vec![format!("kernel {}", "x".repeat(200))],
                    evidence: vec![PathBuf::from("run/trace.json")],
                    check_rules: vec!["TPU601", "TPU604"],
                    fix: Some("load ahead of the step".to_owned()),
                },
                Finding {
                    code: "PRF501",
                    name: "step-time",
                    severity: Severity::Info,
                    title: "10 steps, median 24.29 ms".to_owned(),
                    message: "10 steps: median 24.29 ms".to_owned(),
                    location: None,
                    snippet: None,
                    related: Vec::new(),
                    details: Vec::new(),
                    evidence: vec![PathBuf::from("run/trace.json")],
                    check_rules: Vec::new(),
                    fix: None,
                },
            ],
            errors: vec!["`run/x.xplane.pb`: an XSpace protobuf".to_owned()],
        }
    }

    #[test]
    fn text_report() {
        insta::assert_snapshot!(text(&report()));
    }

    #[test]
    fn sarif_has_only_located_findings() {
        let v: Value = serde_json::from_str(&sarif(&report())).unwrap_or_default();
        let results = v["runs"][0]["results"].as_array().cloned().unwrap_or_default();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["ruleId"], "PRF101");
        assert_eq!(results[0]["level"], "error");
        assert_eq!(results[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 67);
        assert_eq!(
            results[0]["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "train.py"
        );
        assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], false);
        let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().cloned().unwrap_or_default();
        assert_eq!(rules.len(), CodeDoc::all().len());
    }
}
