//! `tpuport compile MODEL --target v5e-8`: the real TPU compiler (libtpu) on a machine without a
//! TPU. The pipeline is `tpuport_compile`, the text form
//! `tpuport_report::compile`; JSON schema `tpuport.compile/1`: `docs/compile.md`.
//!
//! Exit status: 0 compiled, 1 the compiler refused for lack of HBM (a finding: the report says
//! how much was needed), 2 anything else (no libtpu, an op the TPU compiler rejects, bad input).

use std::path::PathBuf;

use clap::Args;
use tpuport_compile::{Request, compile};
use tpuport_lower::onnx::ComputeType;
use tpuport_report::compile::{Outcome, render_text};

use crate::cli::GlobalArgs;
use crate::commands::lower::LowerDtype;
use crate::commands::{ShapeArgs, Status};
use crate::printer::Printer;

/// Arguments of `tpuport compile`.
#[derive(Debug, Args)]
pub(crate) struct CompileArgs {
    /// Model: StableHLO (.mlir text, .mlirbc bytecode) or ONNX (lowered by tpuport first).
    pub(crate) model: PathBuf,
    /// TPU slice to compile for: `v5e-8`, `v6e-4`, `v5p-8`, `v4-8`, `v6e-2x4`, `tpu7x-8`; or
    /// `cpu`: the PJRT CPU plugin, for this host (an executable `tpuport serve` can load).
    #[arg(long, value_name = "SLICE")]
    pub(crate) target: String,
    /// ONNX: symbolic dimensions bound as for `lower`.
    #[command(flatten)]
    pub(crate) shapes: ShapeArgs,
    /// ONNX: compute dtype of the lowered program.
    #[arg(long, value_enum, default_value_t = LowerDtype::F32)]
    pub(crate) dtype: LowerDtype,
    /// Devices the program is partitioned over (default: the module's `mhlo.num_partitions`;
    /// needed for sharded bytecode modules, whose attributes are not read).
    #[arg(long, value_name = "N")]
    pub(crate) partitions: Option<u32>,
    /// libtpu library (default: $TPUPORT_PJRT_PLUGIN or $TPU_LIBRARY_PATH when they name
    /// libtpu, else `libtpu/libtpu.so` in the project's or active virtual environment, else
    /// the one `make libtpu` unpacked: `.cache/libtpu` here or in a parent directory, or
    /// ~/.cache/tpuport/libtpu; `tpuport doctor` lists the places); with `--target cpu`, the
    /// CPU plugin (default: the first one discovery finds).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Write the serialized executable to FILE and its manifest to FILE.json.
    #[arg(long, value_name = "FILE")]
    pub(crate) save: Option<PathBuf>,
    /// A TOML file that overrides or extends the built-in chip catalog.
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
}

pub(crate) fn run(a: &CompileArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let catalog = crate::commands::catalog::load(a.catalog.as_ref())?;
    let req = Request {
        model: a.model.clone(),
        target: a.target.clone(),
        import: a.shapes.import_options(),
        compute: if a.dtype == LowerDtype::Bf16 { ComputeType::Bf16 } else { ComputeType::Native },
        partitions: a.partitions,
        plugin: a.plugin.clone(),
        save: a.save.clone(),
        placement: None,
    };
    let report = compile(&req, &catalog, p)?;
    super::emit_report(p, g.format, &report, || render_text(&report))?;
    Ok(if report.outcome == Outcome::OutOfMemory { Status::Findings } else { Status::Success })
}
