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
    }
}
