//! `tpuport bench MODEL…`: compile time (cold and cached), execute latency percentiles,
//! throughput and achieved FLOP/s from the executable's cost analysis, the compiler's memory
//! figures, the fraction of the chip's peak (when the catalog knows the device) and resident
//! memory before and after the timed loop (a leak check). The pipeline is
//! `tpuport_exec::bench`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use tpuport_exec::{Target, bench};

use crate::cli::GlobalArgs;
use crate::commands::pjrt_util::{RuntimeArgs, bind_inputs, input_entries};
use crate::commands::{StaticArgs, Status};
use crate::printer::Printer;

/// Arguments of `tpuport bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// StableHLO module(s) (text or bytecode), `tpuport lower` output folders (every
    /// bucket, with the folder's weights), or ONNX models (lowered first, at the shapes
    /// --batch, --dim and --input-shape bind).
    #[arg(required = true)]
    pub(crate) models: Vec<PathBuf>,
    /// Timed executions.
    #[arg(long, default_value_t = 100)]
    pub(crate) iters: u32,
    /// Untimed executions first.
    #[arg(long, default_value_t = 10)]
    pub(crate) warmup: u32,
    /// Also bench the other batch buckets of each model: every bucket of its `tpuport lower`
    /// manifest, else the paths that differ only in the number after a `b`
    /// (`mlp_b1/jit.mlir` → `mlp_b8/…`, `mlp_b128/…`).
    #[arg(long)]
    pub(crate) batch_sweep: bool,
    /// Inputs as for `tpuport run` (default: seeded random values of the signature's types).
    #[arg(long = "input", short = 'i', value_name = "[NAME=]FILE")]
    pub(crate) inputs: Vec<String>,
    #[command(flatten)]
    pub(crate) statics: StaticArgs,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

pub(crate) fn run(a: &BenchArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let statics = a.statics.statics()?;
    let mut targets: Vec<Target> = Vec::new();
    for m in &a.models {
        let found = Target::resolve_with(m, a.batch_sweep, &statics, p)
            .with_context(|| format!("benchmarking {}", m.display()))?;
        for t in found {
            if !targets.iter().any(|x| x.module.path == t.module.path) {
                targets.push(t);
            }
        }
    }
    let opts = bench::Options { iters: a.iters, warmup: a.warmup, no_cache: a.runtime.no_cache };
    let mut rows = Vec::with_capacity(targets.len());
    for t in &targets {
        let row = || -> anyhow::Result<bench::Row> {
            let entries = if a.inputs.is_empty() {
                bench::random_inputs(t)?
            } else {
                input_entries(&a.inputs, t)?
            };
            let args = bind_inputs(t, entries)?;
            let rt = t.module.open_runtime(&a.runtime.options(), p)?;
            Ok(bench::bench(t, &args, &rt, &opts, p)?)
        };
        rows.push(row().with_context(|| format!("benchmarking {}", t.module.path.display()))?);
    }
    let json = serde_json::json!({"schema": bench::SCHEMA, "results": rows});
    super::emit_report(p, g.format, &json, || tpuport_report::bench::render(&rows))?;
    Ok(Status::Success)
}
