//! The `tpuport` binary: argument parsing, one module per verb under `commands/`, and the only
//! code in the workspace that writes to the terminal (through [`printer::Printer`]).

mod cli;
mod commands;
mod printer;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    quiet_plugin_logs(cli.global.verbose);
    let printer = printer::Printer::new(&cli.global);
    // The verb returns before the exit status is chosen, so everything it owns (temporary
    // folders, the PJRT client) is dropped first.
    let result = commands::dispatch(cli.command, &cli.global, &printer);
    match (printer.take_output_error(), result) {
        (Some(printer::OutputError::BrokenPipe), _) => ExitCode::SUCCESS,
        (Some(printer::OutputError::Write(e)), result) => {
            printer.error(&anyhow::Error::new(e).context("writing to stdout"));
            if let Err(err) = result {
                printer.error(&err);
            }
            commands::Status::Failure.into()
        }
        (None, Ok(status)) => status.into(),
        (None, Err(err)) => {
            printer.error(&err);
            commands::Status::Failure.into()
        }
    }
}

/// PJRT plugins log INFO lines (`cpu_device_count set via create_options`) to stderr through
/// XLA's logger; keep them out of the user's terminal unless asked for with `-v` or set by the
/// user.
fn quiet_plugin_logs(verbose: u8) {
    let var = tpuport_pjrt::EnvVars::TF_CPP_MIN_LOG_LEVEL;
    if verbose == 0 && std::env::var_os(var).is_none() {
        // SAFETY: called first thing in `main`, before any thread is spawned or any plugin is
        // loaded, so nothing can read or write the environment concurrently.
        #[allow(unsafe_code, reason = "set_var is unsafe in edition 2024; see SAFETY")]
        unsafe {
            std::env::set_var(var, "1");
        }
    }
}
