//! `tpuport explain CODE`: print the documentation of a code.
//!
//! Codes are looked up in each registry in turn (lint rules, then audit findings, then profile
//! findings); a new registry is one more [`StableCode`] type in [`registries`].

use clap::Args;
use tpuport_codes::{CodeDocs, StableCode};

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

/// Every source of code documentation, tried in order.
fn registries() -> Vec<CodeDocs> {
    vec![
        tpuport_lint::Rule::docs(),
        tpuport_analysis::findings::CodeDoc::docs(),
        tpuport_profile::findings::CodeDoc::docs(),
    ]
}

pub(crate) fn run(a: &ExplainArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let regs = registries();
    let Some(code) = a.code.as_deref().filter(|_| !a.all) else {
        let rows = regs
            .iter()
            .flat_map(|r| r.list().into_iter().map(move |(c, s)| (r.registry.name, c, s)));
        if g.format == Format::Json {
            let v: Vec<_> = rows
                .map(|(reg, code, s)| serde_json::json!({"registry": reg, "code": code, "summary": s}))
                .collect();
            p.json(&v)?;
        } else {
            p.data(&rows.map(|(_, code, s)| format!("{code}\t{s}\n")).collect::<String>());
        }
        return Ok(Status::Success);
    };
    for r in &regs {
        if let Some(page) = r.lookup(code) {
            let doc = page.render();
            if g.format == Format::Json {
                let code = code.to_ascii_uppercase();
                p.json(
                    &serde_json::json!({"registry": r.registry.name, "code": code, "doc": doc}),
                )?;
            } else {
                p.data(&doc);
            }
            return Ok(Status::Success);
        }
    }
    anyhow::bail!("unknown code `{code}` (run `tpuport explain --all` to list codes)")
}
