//! `tpuport check`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {}

pub(crate) fn run(_a: &CheckArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport check` is not implemented yet")
}
