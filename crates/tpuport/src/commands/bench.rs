//! `tpuport bench`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {}

pub(crate) fn run(_a: &BenchArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport bench` is not implemented yet")
}
