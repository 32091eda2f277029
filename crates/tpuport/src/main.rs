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
    if cli.command.compiles_for_tpu_offline() {
        libtpu_offline_env();
    }
    let printer = printer::Printer::new(&cli.global);
    match commands::dispatch(cli.command, &cli.global, &printer) {
        Ok(status) => status.into(),
        Err(err) => {
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

/// libtpu on a machine without a TPU would retry the GCE metadata server for about ten minutes
/// and log errors about the missing slice; the variables `tpuport_pjrt::libtpu_offline_env`
/// names stop that (only those the user has not set, and only where no TPU is attached).
fn libtpu_offline_env() {
    if tpuport_pjrt::tpu_hardware_present() {
        return;
    }
    for (k, v) in tpuport_pjrt::libtpu_offline_env() {
        // SAFETY: called from `main` before any thread is spawned or any plugin is loaded,
        // so nothing can read or write the environment concurrently.
        #[allow(unsafe_code, reason = "set_var is unsafe in edition 2024; see SAFETY")]
        unsafe {
            std::env::set_var(k, v);
        }
    }
}
