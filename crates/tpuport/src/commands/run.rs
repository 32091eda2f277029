//! `tpuport run`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {}

pub(crate) fn run(_a: &RunArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport run` is not implemented yet")
}
