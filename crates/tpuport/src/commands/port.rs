//! `tpuport port`: placeholder while the verb is written.

use clap::Args;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport port`.
#[derive(Debug, Args)]
pub(crate) struct PortArgs {}

pub(crate) fn run(_a: &PortArgs, _g: &GlobalArgs, _p: &Printer) -> anyhow::Result<Status> {
    anyhow::bail!("`tpuport port` is not implemented yet")
}
