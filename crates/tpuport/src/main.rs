//! The `tpuport` binary: argument parsing, one module per verb under `commands/`, and the only
//! code in the workspace that writes to the terminal (through [`printer::Printer`]).

mod cli;
mod commands;
mod printer;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let printer = printer::Printer::new(&cli.global);
    match commands::dispatch(cli.command, &cli.global, &printer) {
        Ok(status) => status.into(),
        Err(err) => {
            printer.error(&err);
            commands::Status::Failure.into()
        }
    }
}
