//! `tpuport inspect MODEL`: placeholder while the foundation is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// Model, checkpoint or tensor file.
    pub(crate) model: std::path::PathBuf,
}

pub(crate) fn run(a: &InspectArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    let _m = tpuport_formats::open(&a.model, &tpuport_formats::ImportOptions::default())?;
    Ok(Status::Success)
}
