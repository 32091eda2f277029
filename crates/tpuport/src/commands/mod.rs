//! One module per verb. Each exposes an `…Args` struct (clap) and a `run` function returning a
//! [`Status`].

pub(crate) mod audit;
pub(crate) mod batch;
pub(crate) mod bench;
pub(crate) mod catalog;
pub(crate) mod check;
pub(crate) mod compile;
pub(crate) mod completions;
pub(crate) mod conformance;
pub(crate) mod deploy;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod inspect;
pub(crate) mod lower;
pub(crate) mod man;
pub(crate) mod pjrt_util;
pub(crate) mod port;
pub(crate) mod profile;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod shard;
pub(crate) mod top;
pub(crate) mod top_view;
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
        Command::Compile(a) => compile::run(&a, global, p),
        Command::Doctor(a) => doctor::run(&a, global, p),
        Command::Run(a) => run::run(&a, global, p),
        Command::Lower(a) => lower::run(&a, global, p),
        Command::Bench(a) => bench::run(&a, global, p),
        Command::Check(a) => check::run(&a, global, p),
        Command::Port(a) => port::run(&a, global, p),
        Command::Catalog(a) => catalog::run(&a, global, p),
        Command::Shard(a) => shard::run(&a, global, p),
        Command::Explain(a) => explain::run(&a, global, p),
        Command::Conformance(a) => conformance::run(&a, global, p),
        Command::Validate(a) => validate::run(&a, global, p),
        Command::Profile(a) => profile::run(&a, global, p),
        Command::Completions(a) => completions::run(&a, global, p),
        Command::Man(a) => man::run(&a, global, p),
        Command::Serve(a) => serve::run(&a, global, p),
        Command::Batch(a) => batch::run(&a, global, p),
        Command::Deploy(a) => deploy::run(&a, global, p),
        Command::Top(a) => top::run(&a, global, p),
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
    match format {
        crate::cli::Format::Json => p.json(report),
        crate::cli::Format::Text => {
            p.data(&text());
            Ok(())
        }
        crate::cli::Format::Sarif => {
            anyhow::bail!("--format sarif is only supported by `tpuport check`")
        }
    }
}

/// `--data-args`: which arguments of a module that takes its weights as arguments are data,
/// shared by `inspect` and `audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct RoleArgs {
    /// The data arguments of a StableHLO module that takes its weights as arguments, by
    /// position or name, comma-separated (`320,321`, `tokens`, `%arg0`); every other argument
    /// is then a weight or state. Without it, rules decide (see `docs/audit.md`).
    #[arg(long = "data-args", value_name = "ARG,...", value_delimiter = ',')]
    pub(crate) data_args: Vec<tpuport_analysis::roles::ArgSelector>,
}

impl RoleArgs {
    /// The argument roles of `model` read from `path`; an unknown `--data-args` entry is an
    /// error naming the file.
    pub(crate) fn roles(
        &self,
        path: &std::path::Path,
        model: &tpuport_model::Model,
    ) -> anyhow::Result<tpuport_analysis::roles::ArgRoles> {
        let opts = tpuport_analysis::roles::RoleOptions { data_args: self.data_args.clone() };
        tpuport_analysis::roles::assign(model, &opts)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

/// How a verb binds a model's symbolic dimensions (as `lower` does).
#[derive(Debug, Default, clap::Args)]
pub(crate) struct ShapeArgs {
    /// Batch size: binds the leading symbolic dimension of every input.
    #[arg(long)]
    pub(crate) batch: Option<u64>,
    /// Size of a named symbolic dimension, e.g. `sequence=128` (repeatable).
    #[arg(long = "dim", value_name = "NAME=N", value_parser = inspect::parse_dim)]
    pub(crate) dims: Vec<(String, u64)>,
    /// Full shape of a named input, e.g. `input_ids=1x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = inspect::parse_input_shape)]
    pub(crate) input_shape: Vec<(String, tpuport_model::Shape)>,
}

impl ShapeArgs {
    /// The bound dimensions as import options.
    pub(crate) fn import_options(&self) -> tpuport_formats::ImportOptions {
        tpuport_formats::ImportOptions {
            dims: self.dims.iter().cloned().collect(),
            input_shapes: self.input_shape.iter().cloned().collect(),
            batch: self.batch,
            ..tpuport_formats::ImportOptions::default()
        }
    }
}

/// How the verbs that read one model (`inspect`, `audit`) bind its symbolic dimensions, and
/// whether they time the import and the analysis.
#[derive(Debug, clap::Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    pub(crate) shapes: ShapeArgs,
    /// Print the time spent importing and analysing to stderr.
    #[arg(long)]
    pub(crate) timings: bool,
}

/// How the verbs that execute a model (`run`, `bench`, `validate`) make an ONNX model static:
/// its dimensions bound, and inputs given a value at lowering time.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct StaticArgs {
    #[command(flatten)]
    pub(crate) shapes: ShapeArgs,
    /// ONNX: give an input its value at lowering time, e.g. `sr=16000` (one number fills the
    /// input; or as many comma-separated numbers as it has elements). A branch on that input
    /// is lowered as this value takes it, and runs feed it unless the input is given.
    #[arg(long = "input-value", value_name = "NAME=VALUE", value_parser = parse_input_value)]
    pub(crate) input_values: Vec<(String, String)>,
}

impl StaticArgs {
    /// The bindings for `tpuport_exec`.
    pub(crate) fn statics(&self) -> anyhow::Result<tpuport_exec::Statics> {
        if self.shapes.batch == Some(0) {
            anyhow::bail!("--batch must be at least 1");
        }
        Ok(tpuport_exec::Statics {
            batch: self.shapes.batch,
            dims: self.shapes.dims.clone(),
            input_shapes: self.shapes.input_shape.clone(),
            values: self.input_values.clone(),
            given: Vec::new(),
        })
    }
}

/// `NAME=VALUE` of `--input-value`.
fn parse_input_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => {
            Ok((n.trim().to_owned(), v.trim().to_owned()))
        }
        _ => Err(format!("`{s}`: expected NAME=VALUE, e.g. sr=16000")),
    }
}

/// A model read with [`ImportArgs::open`], and when its import started and ended.
#[derive(Debug)]
pub(crate) struct Imported {
    pub(crate) model: tpuport_model::Model,
    started: std::time::Instant,
    imported: std::time::Instant,
}

impl ImportArgs {
    /// The bound dimensions as import options.
    pub(crate) fn options(&self) -> tpuport_formats::ImportOptions {
        self.shapes.import_options()
    }

    /// Reads `path` with the bound dimensions.
    pub(crate) fn open(&self, path: &std::path::Path) -> anyhow::Result<Imported> {
        let opts = self.options();
        let started = std::time::Instant::now();
        let model = tpuport_formats::open(path, &opts)?;
        Ok(Imported { model, started, imported: std::time::Instant::now() })
    }

    /// The tail every model report shares: the `--timings` line on stderr (import time, and
    /// analysis time from the end of the import until now), then the report on stdout
    /// ([`emit_report`]).
    pub(crate) fn finish<T: serde::Serialize>(
        &self,
        p: &Printer,
        g: &GlobalArgs,
        imported: &Imported,
        report: &T,
        text: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        if self.timings {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            p.note(&format!(
                "timings: import {:.3} ms, analysis {:.3} ms",
                ms(imported.imported - imported.started),
                ms(imported.imported.elapsed())
            ));
        }
        emit_report(p, g.format, report, text)
    }
}
