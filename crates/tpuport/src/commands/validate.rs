//! `tpuport validate MODEL`: run a model on a PJRT device, compare every output with a
//! reference (files, the same model in f32, or onnxruntime), optionally under TPU matmul
//! precision emulation, and bisect to the first op whose error crosses the tolerance.
//!
//! The pipeline is `tpuport_validate::validate`, the text report `tpuport_report::validate`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tpuport_validate::validate::{self as pipeline, Inputs};

use crate::cli::GlobalArgs;
use crate::commands::pjrt_util::RuntimeArgs;
use crate::commands::{StaticArgs, Status};
use crate::printer::Printer;

/// Arguments of `tpuport validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The model: StableHLO text (`.mlir`, e.g. `jax.jit(f).lower(...).as_text()` or a
    /// `jax.export` module) or ONNX (`.onnx`, through the ONNX lowering).
    pub(crate) model: PathBuf,
    /// Inputs: a directory of `.npy` files (`<arg name>.npy`, `argN.npy`, or sorted order),
    /// an `.npz`, a `.safetensors` or one `.npy`.
    #[arg(long, value_name = "DIR|FILE", conflicts_with = "random")]
    pub(crate) inputs: Option<PathBuf>,
    /// Generate N input samples from the signature (floats ~ N(0,1), integers in [0, 16),
    /// booleans fair), seeded by --seed.
    #[arg(long, value_name = "N")]
    pub(crate) random: Option<u32>,
    /// Seed of --random.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Reference: `f32` (the same model run unmodified, bf16/f16 internals promoted to f32),
    /// `onnxruntime` (ONNX models; runs onnxruntime in a Python subprocess, an optional
    /// dependency), or a directory / `.npz` of expected outputs (`outN.npy` or `<name>.npy`).
    #[arg(long, value_name = "f32|onnxruntime|DIR|FILE", default_value = "f32")]
    pub(crate) reference: String,
    /// Numerics of the candidate run.
    #[arg(long, value_enum, default_value_t = Emulate::None)]
    pub(crate) emulate: Emulate,
    /// Compare every intermediate of `@main` with the f32 reference run and name the first op
    /// whose error crosses the tolerance.
    #[arg(long)]
    pub(crate) bisect: bool,
    /// With --bisect: compare only these values (SSA names such as `%12`; ONNX value names),
    /// repeatable. Default: every float op result of `@main`.
    #[arg(long = "probe", value_name = "NAME", requires = "bisect")]
    pub(crate) probes: Vec<String>,
    /// Relative tolerance (default: per precision, see docs/validate.md).
    #[arg(long, value_name = "X")]
    pub(crate) rtol: Option<f64>,
    /// Absolute tolerance (default: a fraction of each reference tensor's largest magnitude).
    #[arg(long, value_name = "X")]
    pub(crate) atol: Option<f64>,
    /// Largest fraction of elements allowed outside the tolerance.
    #[arg(long, value_name = "F")]
    pub(crate) max_outside: Option<f64>,
    /// Write the rewritten modules (`candidate.mlir`, `reference.mlir`) into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) save_modules: Option<PathBuf>,
    /// Rows of the bisection chart in the text report (the JSON has every step).
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub(crate) chart_rows: usize,
    #[command(flatten)]
    pub(crate) statics: StaticArgs,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

/// `--emulate` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Emulate {
    /// Run the model as it is.
    None,
    /// f32 matmuls/convolutions as 1 bf16 pass, f32 accumulation (TPU `DEFAULT`).
    TpuDefault,
    /// 3 bf16 passes (TPU `HIGH`).
    TpuHigh,
    /// 6 bf16 passes (TPU `HIGHEST`).
    TpuHighest,
    /// The whole model in bf16.
    Bf16,
}

impl From<Emulate> for pipeline::Emulate {
    fn from(e: Emulate) -> Self {
        match e {
            Emulate::None => pipeline::Emulate::None,
            Emulate::TpuDefault => pipeline::Emulate::TpuDefault,
            Emulate::TpuHigh => pipeline::Emulate::TpuHigh,
            Emulate::TpuHighest => pipeline::Emulate::TpuHighest,
            Emulate::Bf16 => pipeline::Emulate::Bf16,
        }
    }
}

pub(crate) fn run(a: &ValidateArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let inputs = match (&a.inputs, a.random) {
        (_, Some(samples)) => Inputs::Random { samples, seed: a.seed },
        (Some(path), None) => Inputs::Files(path.clone()),
        (None, None) => Inputs::None,
    };
    let opts = pipeline::Options {
        model: a.model.clone(),
        inputs,
        statics: a.statics.statics()?,
        reference: a.reference.clone(),
        emulate: a.emulate.into(),
        bisect: a.bisect,
        probes: a.probes.clone(),
        rtol: a.rtol,
        atol: a.atol,
        max_outside: a.max_outside,
        // `--reference onnxruntime` runs in the global `--python` interpreter, else the active,
        // installed-into or project venv's, else `python3` on PATH.
        python: tpuport_pjrt::python(),
        save_modules: a.save_modules.clone(),
        runtime: a.runtime.options(),
    };
    let report = pipeline::validate(&opts, p)?;
    super::emit_report(p, g.format, &report, || {
        tpuport_report::validate::render(&report, a.chart_rows)
    })?;
    Ok(if report.passed { Status::Success } else { Status::Findings })
}
