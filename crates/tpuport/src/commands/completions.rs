//! `tpuport completions SHELL`: a shell completion script generated from the clap definitions,
//! written to stdout (`tpuport completions bash > ~/.local/share/bash-completion/completions/tpuport`).

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

use crate::cli::{Cli, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub(crate) shell: Shell,
}

pub(crate) fn run(a: &CompletionsArgs, _g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let mut cmd = Cli::command();
    let mut buf: Vec<u8> = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "tpuport", &mut buf);
    p.data(&String::from_utf8(buf)?);
    Ok(Status::Success)
}
