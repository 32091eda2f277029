//! One module per verb. Each exposes an `…Args` struct (clap) and a `run` function returning a
//! [`Status`].

pub(crate) mod audit;
pub(crate) mod bench;
pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod conformance;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod inspect;
pub(crate) mod lower;
pub(crate) mod pjrt_util;
pub(crate) mod port;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod validate;

use std::process::ExitCode;

use crate::cli::{Command, GlobalArgs};
use crate::printer::Printer;

/// How a verb ended: 0 success, 1 findings at or above the failure threshold, 2 could not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Ran, nothing to fail on.
    Success,
    /// Ran, and found problems at or above `--fail-on`.
    Findings,
    /// Could not run.
    Failure,
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> Self {
        match s {
            Status::Success => ExitCode::SUCCESS,
            Status::Findings => ExitCode::from(1),
            Status::Failure => ExitCode::from(2),
        }
    }
}

/// Runs the chosen verb.
pub(crate) fn dispatch(cmd: Command, global: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    match cmd {
        Command::Inspect(a) => inspect::run(&a, global, p),
        Command::Audit(a) => audit::run(&a, global, p),
        Command::Doctor(a) => doctor::run(&a, global, p),
        Command::Run(a) => run::run(&a, global, p),
        Command::Lower(a) => lower::run(&a, global, p),
        Command::Bench(a) => bench::run(&a, global, p),
        Command::Check(a) => check::run(&a, global, p),
        Command::Port(a) => port::run(&a, global, p),
        Command::Catalog(a) => catalog::run(&a, global, p),
        Command::Explain(a) => explain::run(&a, global, p),
        Command::Conformance(a) => conformance::run(&a, global, p),
        Command::Validate(a) => validate::run(&a, global, p),
        Command::Serve(a) => serve::run(&a, global, p),
    }
}

/// Writes a verb's report to stdout: pretty JSON (with a trailing newline) for `--format json`,
/// `text()` for `--format text`; SARIF is only `check`'s.
pub(crate) fn emit_report<T: serde::Serialize>(
    p: &Printer,
    format: crate::cli::Format,
    report: &T,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    match format {
        crate::cli::Format::Json => {
            let mut s = serde_json::to_string_pretty(report).context("serialising the report")?;
            s.push('\n');
            p.data(&s);
        }
        crate::cli::Format::Text => p.data(&text()),
        crate::cli::Format::Sarif => {
            anyhow::bail!("--format sarif is only supported by `tpuport check`")
        }
    }
    Ok(())
}

/// The `--timings` line: import time (`t0`..`t1`) and analysis time (`t1`..now), on stderr.
pub(crate) fn note_timings(p: &Printer, t0: std::time::Instant, t1: std::time::Instant) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    p.note(&format!("timings: import {:.3} ms, analysis {:.3} ms", ms(t1 - t0), ms(t1.elapsed())));
}
