//! `tpuport doctor`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {}

pub(crate) fn run(_a: &DoctorArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport doctor` is not implemented yet")
}
