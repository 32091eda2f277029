//! The `tpuport` binary: argument parsing, one module per verb under `commands/`, and the only
//! code in the workspace that writes to the terminal (through [`printer::Printer`]).

mod cli;
mod commands;
mod printer;

use std::process::ExitCode;

// mimalloc replaces malloc/free for the whole process (its `override` feature exports them from
// this executable, so the PJRT plugins loaded later use them too). XLA:CPU allocates each
// execution's temporaries as one block (83 MiB for MobileNetV2 at batch 8) and frees it after;
// glibc maps a block that large fresh every time, and the kernel zeroes every page again:
// 2.38 M page faults in 100 executions, 19 % of the CPU in the kernel. mimalloc keeps the
// block for reuse: 24 K page faults and 62 -> 83 items/s (`perf stat -e page-faults tpuport
// bench mobilenet_v2/legacy.onnx --batch 8 --iters 100`, 2026-12-06, docs/runtime.md).
use libmimalloc_sys as _;

use clap::{CommandFactory as _, FromArgMatches as _};

fn main() -> ExitCode {
    let cli = parse_args();
    set_process_env(&cli.global);
    if cli.command.compiles_for_tpu_offline() {
        libtpu_offline_env();
    }
    // XLA:CPU runs depthwise convolutions an order of magnitude slower than the same taps as
    // elementwise ops: every CPU-plugin compile unrolls them (`tpuport_lower::rewrite::depthwise`).
    tpuport_pjrt::set_cpu_program_rewrite(tpuport_lower::rewrite::for_cpu);
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

/// Parses the command line, with `--version` carrying the commit and the PJRT API version
/// (known only at run time, so set on the command before parsing).
fn parse_args() -> cli::Cli {
    let version: &'static str = Box::leak(cli::long_version().into_boxed_str());
    let matches = cli::Cli::command().version(version).get_matches();
    cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Environment the libraries read, set from the options before anything else runs:
/// - PJRT plugins log INFO lines (`cpu_device_count set via create_options`) to stderr through
///   XLA's logger; keep them out of the user's terminal unless asked for with `-v` or set by
///   the user;
/// - `--python` is handed to plugin discovery as `TPUPORT_PYTHON`.
fn set_process_env(g: &cli::GlobalArgs) {
    let log_var = tpuport_pjrt::EnvVars::TF_CPP_MIN_LOG_LEVEL;
    let quiet_logs = g.verbose == 0 && std::env::var_os(log_var).is_none();
    // SAFETY: called first thing in `main`, before any thread is spawned or any plugin is
    // loaded, so nothing can read or write the environment concurrently.
    #[allow(unsafe_code, reason = "set_var is unsafe in edition 2024; see SAFETY")]
    unsafe {
        if quiet_logs {
            std::env::set_var(log_var, "1");
        }
        if let Some(py) = &g.python {
            std::env::set_var(tpuport_pjrt::EnvVars::TPUPORT_PYTHON, py);
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
