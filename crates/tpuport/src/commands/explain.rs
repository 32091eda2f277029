//! `tpuport explain CODE`: print the documentation of a code.
//!
//! Codes are looked up in each registry in turn (lint rules first); other registries, such as
//! audit findings, are added to [`registries`].

use clap::Args;
use tpuport_analysis::findings;
use tpuport_lint::explain::{CodeRegistry, LintCodes};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport explain`.
#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    /// The code (e.g. `TPU201`); omit with `--all` to list every code.
    pub(crate) code: Option<String>,
    /// List every known code with its summary.
    #[arg(long, conflicts_with = "code")]
    pub(crate) all: bool,
}

/// The `tpuport audit` support and risk findings (`AUDnnn`).
struct AuditCodes;

impl CodeRegistry for AuditCodes {
    fn name(&self) -> &'static str {
        "audit"
    }
    fn explain(&self, code: &str) -> Option<String> {
        findings::lookup(code).map(findings::docs::code_page)
    }
    fn list(&self) -> Vec<(String, String)> {
        findings::registry()
            .iter()
            .map(|d| (d.code.to_owned(), format!("{} — {}", d.name, d.summary())))
            .collect()
    }
}

/// The `tpuport profile` findings (`PRFnnn`).
struct ProfileCodes;

impl CodeRegistry for ProfileCodes {
    fn name(&self) -> &'static str {
        "profile"
    }
    fn explain(&self, code: &str) -> Option<String> {
        tpuport_profile::findings::lookup(code).map(tpuport_profile::findings::docs::code_page)
    }
    fn list(&self) -> Vec<(String, String)> {
        tpuport_profile::findings::registry()
            .iter()
            .map(|d| (d.code.to_owned(), format!("{} — {}", d.name, d.summary())))
            .collect()
    }
}

/// Every source of code documentation, tried in order.
fn registries() -> Vec<Box<dyn CodeRegistry>> {
    vec![Box::new(LintCodes), Box::new(AuditCodes), Box::new(ProfileCodes)]
}

pub(crate) fn run(a: &ExplainArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let regs = registries();
    if a.all || a.code.is_none() {
        let mut rows = Vec::new();
        for r in &regs {
            for (code, summary) in r.list() {
                rows.push((r.name(), code, summary));
            }
        }
        if g.format == Format::Json {
            let v: Vec<_> = rows.iter().map(|(reg, code, s)| serde_json::json!({"registry": reg, "code": code, "summary": s})).collect();
            p.data(&format!("{}\n", serde_json::to_string_pretty(&v)?));
        } else {
            let text: String = rows.iter().map(|(_, code, s)| format!("{code}\t{s}\n")).collect();
            p.data(&text);
        }
        return Ok(Status::Success);
    }
    let code = a.code.as_deref().unwrap_or_default();
    for r in &regs {
        if let Some(doc) = r.explain(code) {
            if g.format == Format::Json {
                let v = serde_json::json!({"registry": r.name(), "code": code.to_ascii_uppercase(), "doc": doc});
                p.data(&format!("{}\n", serde_json::to_string_pretty(&v)?));
            } else {
                p.data(&doc);
            }
            return Ok(Status::Success);
        }
    }
    anyhow::bail!("unknown code `{code}` (run `tpuport explain --all` to list codes)")
}
