//! `tpuport conformance DIR`: the ONNX backend test cases through `tpuport lower` on a PJRT
//! device, compared with their expected outputs. The pipeline (case layout, stages, outcomes)
//! is `tpuport_validate::conformance`, the text report `tpuport_report::conformance`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tpuport_validate::conformance;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport conformance`.
#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of test cases (`<suite>/<case>/model.onnx` + `test_data_set_0/`), as written
    /// by `scripts/testdata/onnx_conformance.py`; a single case directory also works.
    pub(crate) dir: PathBuf,
    /// Run only cases whose `<suite>/<case>` name contains this text (repeatable: any).
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Vec<String>,
    /// Parallel cases (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Seconds one case may take (import, lower, compile, run) before it counts as an error.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub(crate) timeout: u64,
    /// Write the JSON summary (totals, per suite, per op, every case) to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Reference models (ONNX): the "reference ops" pass rate counts node cases whose main op
    /// occurs in one of them.
    #[arg(long = "reference", value_name = "MODEL.onnx")]
    pub(crate) reference: Vec<PathBuf>,
    /// JSON file of minimum pass percentages (`{"node": 70.0, "node_reference_ops": 90.0,
    /// "all": 65.0}`); exit 1 when a measured rate is below its floor.
    #[arg(long, value_name = "FILE")]
    pub(crate) floor: Option<PathBuf>,
    /// Show every failing case in the text report, not only the per-op table.
    #[arg(long)]
    pub(crate) cases: bool,
    /// PJRT plugin library (default: as for `run`).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
}

pub(crate) fn run(a: &ConformanceArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let floor = a.floor.as_deref().map(conformance::read_floor).transpose()?;
    let opts = conformance::Options {
        dir: a.dir.clone(),
        filter: a.filter.clone(),
        jobs: a.jobs,
        timeout: Duration::from_secs(a.timeout),
        reference: a.reference.clone(),
        plugin: a.plugin.clone(),
    };
    let summary = conformance::run(&opts, p)?;
    if let Some(path) = &a.json {
        tpuport_model::fs::write_atomic_bytes(path, &serde_json::to_vec_pretty(&summary)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    super::emit_report(p, g.format, &summary, || {
        tpuport_report::conformance::render(&summary, a.cases)
    })?;
    if let Some(floor) = floor {
        let below = conformance::below_floor(&summary, &floor);
        if !below.is_empty() {
            p.warn(&format!("pass rate below the committed floor: {}", below.join(", ")));
            return Ok(Status::Findings);
        }
    }
    Ok(Status::Success)
}
