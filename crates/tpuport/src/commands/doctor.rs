//! `tpuport doctor`: which PJRT plugins are here and what they offer, plus the Python-side
//! framework versions and the pairs that do not go together. The checks are `tpuport_env`;
//! the text form is `tpuport_report::doctor`.

use std::path::PathBuf;

use clap::Args;
use tpuport_env::{DoctorOptions, python::PACKAGES};
use tpuport_report::doctor;

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Also check this plugin library (listed first).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Do not ask Python for framework versions.
    #[arg(long)]
    pub(crate) no_python: bool,
    /// Also judge this StableHLO module's version against each plugin's accepted range.
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
}

pub(crate) fn run(a: &DoctorArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let opts =
        DoctorOptions { plugin: a.plugin.clone(), no_python: a.no_python, model: a.model.clone() };
    let report = tpuport_env::doctor(&opts, p)?;
    match g.format {
        Format::Json => p.json(&report)?,
        _ => p.data(&doctor::render_text(&report, &PACKAGES, p.paint())),
    }
    Ok(if report.usable() && !report.mismatch() { Status::Success } else { Status::Findings })
}

impl tpuport_env::Observer for Printer {
    fn info(&self, msg: &str) {
        Printer::info(self, msg);
    }

    fn warn(&self, msg: &str) {
        Printer::warn(self, msg);
    }
}
