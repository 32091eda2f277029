//! `tpuport explain`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport explain`.
#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {}

pub(crate) fn run(_a: &ExplainArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport explain` is not implemented yet")
}
