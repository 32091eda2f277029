//! `tpuport audit MODEL`: before touching a TPU — FLOPs and bytes, tiling padding, memory
//! footprint, where it fits, a roofline estimate per generation, and the support / risk
//! findings. Summary first. JSON schema `tpuport.audit/1`: `docs/audit.md`; the text form is
//! `tpuport_report::audit`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tpuport_analysis::audit::{self, AuditOptions};
use tpuport_analysis::compiler_check::CompilerInput;
use tpuport_analysis::findings::Severity;
use tpuport_analysis::{Optimizer, Workload};
use tpuport_compile::{CompilerMode, Request, for_audit};

use crate::cli::GlobalArgs;
use crate::commands::{ImportArgs, RoleArgs, Status};
use crate::printer::Printer;

/// Finding severity that makes the command exit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FailOn {
    /// Any finding, informational ones included.
    Info,
    /// Warnings and errors.
    Warning,
    /// Errors only.
    Error,
    /// Never (the default).
    Never,
}

/// Arguments of `tpuport audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Model (.onnx, StableHLO .mlir / .mlirbc).
    pub(crate) model: PathBuf,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
    #[command(flatten)]
    pub(crate) roles: RoleArgs,
    /// Workload: inference, training, or fine-tuning (all parameters trainable).
    #[arg(long, default_value = "infer", value_parser = parse_workload)]
    pub(crate) workload: Workload,
    /// Optimizer for training workloads: sgd, sgd-momentum, adam, adamw, adafactor.
    #[arg(long, default_value = "adamw", value_parser = parse_optimizer)]
    pub(crate) optimizer: Optimizer,
    /// Check one slice (e.g. `v5e-8`, `v5p-8`, `v6e-2x4`) instead of every generation.
    #[arg(long)]
    pub(crate) slice: Option<String>,
    /// Exit 1 when a finding reaches this severity.
    #[arg(long, value_enum, default_value_t = FailOn::Never)]
    pub(crate) fail_on: FailOn,
    /// A TOML file that overrides or extends the built-in chip catalog (prices, HBM).
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
    /// With --slice: check the estimate against the TPU compiler (libtpu) compiling the model
    /// for the slice. `auto` uses libtpu when it is found.
    #[arg(long, value_enum, default_value_t = CompilerArg::Auto)]
    pub(crate) compiler: CompilerArg,
    /// libtpu library for --compiler (default: as `tpuport compile` finds it).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
}

/// `--compiler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompilerArg {
    /// libtpu when found, else a note and the estimate only.
    Auto,
    /// libtpu; an error when it is missing or rejects the program.
    Libtpu,
    /// The estimate only.
    None,
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    s.parse()
}

fn parse_optimizer(s: &str) -> Result<Optimizer, String> {
    s.parse()
}

pub(crate) fn run(a: &AuditArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.import.shapes.batch == Some(0) {
        anyhow::bail!("--batch must be at least 1");
    }
    let catalog = crate::commands::catalog::load(a.catalog.as_ref())?;
    let slice = a.slice.as_deref().map(|s| catalog.slice(s)).transpose()?;
    let imported = a.import.open(&a.model)?;
    let model = &imported.model;
    if !model.format.has_graph() {
        anyhow::bail!(
            "{}: a {} file holds tensors, not a computation graph; audit needs an ONNX or StableHLO model",
            a.model.display(),
            model.format.name()
        );
    }
    if model.graph.nodes.is_empty() {
        anyhow::bail!(
            "{}: no operations to audit ({}){}",
            a.model.display(),
            model.format.name(),
            if model.format == tpuport_model::ModelFormat::StablehloBytecode {
                "; tpuport reads only the header of MLIR bytecode: audit the text form (`.mlir`, e.g. `jax.export(...).mlir_module()`)"
            } else {
                ""
            }
        );
    }
    // Hostile or absurd shapes: refuse values beyond 2^40 elements (4 TiB of f32) instead of
    // producing meaningless saturated figures.
    for g in std::iter::once(&model.graph).chain(model.functions.iter()) {
        for v in &g.values {
            if let Some(shape) = &v.ty.shape
                && shape.is_static()
                && shape.elements().map_or(true, |e| e > 1 << 40)
            {
                anyhow::bail!(
                    "{}: value `{}` has shape {shape}, more than 2^40 elements: too large to audit",
                    a.model.display(),
                    v.name
                );
            }
        }
    }
    let mut symbols: Vec<String> = Vec::new();
    for i in &model.graph.inputs {
        if let Some(shape) = &model.graph.value(*i).ty.shape {
            for s in shape.symbols() {
                if !symbols.iter().any(|x| x == s) {
                    symbols.push(s.to_owned());
                }
            }
        }
    }
    if !symbols.is_empty() {
        p.warn(&format!(
            "{}: inputs have unbound symbolic dims ({}): bind them with --batch N / --dim NAME=N; ops on unbound shapes are not counted",
            a.model.display(),
            symbols.join(", ")
        ));
    }
    let compiler = match (&a.slice, a.compiler) {
        (None, CompilerArg::Libtpu) => anyhow::bail!("--compiler libtpu needs --slice"),
        (None, _) | (_, CompilerArg::None) => CompilerInput::NotAsked,
        (Some(target), mode) => {
            let req = Request {
                model: a.model.clone(),
                target: target.clone(),
                import: a.import.options(),
                plugin: a.plugin.clone(),
                ..Request::default()
            };
            let mode =
                if mode == CompilerArg::Libtpu { CompilerMode::Libtpu } else { CompilerMode::Auto };
            for_audit(&req, mode, &catalog, p)?
        }
    };
    let aopts = AuditOptions {
        workload: a.workload,
        optimizer: a.optimizer,
        batch: a.import.shapes.batch,
        slice,
        onnx_lowering: Some(lowerable),
        roles: Some(a.roles.roles(&a.model, model)?),
        dims: a.import.shapes.dims.clone(),
        compiler,
    };
    let found = audit::findings(model, &aopts);
    let report = audit::audit(&a.model.display().to_string(), model, &catalog, &aopts, found);
    a.import.finish(p, g, &imported, &report, || {
        tpuport_report::audit::render_text(&report, p.paint())
    })?;
    let threshold = match a.fail_on {
        FailOn::Info => Some(Severity::Info),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Error => Some(Severity::Error),
        FailOn::Never => None,
    };
    let hit = threshold.is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    Ok(if hit { Status::Findings } else { Status::Success })
}

/// Whether `tpuport lower` has a lowering for an ONNX op at the model's opset.
fn lowerable(op: &str, domain: &str, opset: i64) -> bool {
    matches!(
        tpuport_lower::onnx::support(op, domain, opset),
        tpuport_lower::onnx::Support::Supported { .. }
    )
}
