//! Support and risk findings: graph patterns that XLA on TPU handles badly, each with a stable
//! code (`AUD1xx` shapes and control flow, `AUD2xx` element types, `AUD3xx` ops TPUs run badly,
//! `AUD4xx` precision, `AUD5xx` op granularity) and a user doc (`tpuport explain CODE`).
//!
//! One rule per file; the rule's doc comment is its user documentation, collected into the
//! [`Audit`] registry (`tpuport-codes` renders it into `docs/findings/` and `tpuport explain`).
//! Rules work on ONNX graphs and on StableHLO graphs (`stablehlo.*` ops), walking subgraphs
//! (Loop/If bodies, regions) and the model's other functions.

use serde::Serialize;
use tpuport_codes::{CodeInfo, Fact, Registry, Table};
use tpuport_model::Model;

use crate::workload::Workload;

mod ctx;

pub(crate) use ctx::{Ctx, Sink};
pub use tpuport_codes::Severity;

/// One finding about the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Stable code (`AUD101`); `tpuport explain CODE` prints its doc.
    pub code: &'static str,
    /// Severity (usually the code's default; some rules raise it, e.g. bf16 ops for AUD402).
    pub severity: Severity,
    /// One-line title.
    pub title: String,
    /// What was found, with figures.
    pub message: String,
    /// Nodes involved: ONNX node names (or first output names), StableHLO locations; at most
    /// [`MAX_NODES`], `…and N more` last when cut.
    pub nodes: Vec<String>,
    /// What to do about it.
    pub fix: Option<String>,
}

/// Most nodes a finding lists.
pub const MAX_NODES: usize = 10;

/// Signature of the hook that tells whether an ONNX node has a lowering to StableHLO (the
/// `tpuport_lower::onnx` table once it exists). `None` in [`FindingOptions::onnx_lowering`]
/// skips the check.
/// Arguments: op, domain, the model's opset for that domain.
pub type LoweringHook = fn(&str, &str, i64) -> bool;

/// Thresholds and context for [`check`].
#[derive(Clone, Debug)]
pub struct FindingOptions {
    /// What the model will run as (training makes precision findings more severe).
    pub workload: Workload,
    /// The batch bound by `--batch`; leading symbolic dims of inputs count as bound by it.
    pub batch: Option<u64>,
    /// A tensor with fewer elements than this is "tiny" (AUD501).
    pub tiny_elements: u64,
    /// Fraction of sized ops that must be tiny for AUD501.
    pub tiny_fraction: f64,
    /// Fewest tiny ops for AUD501 (small graphs are not "many tiny ops").
    pub tiny_min_ops: usize,
    /// A reduction over at least this many elements per output is "long" (AUD404).
    pub long_reduction: u64,
    /// A sort / top-k along an axis of at least this length is "large" (AUD301).
    pub large_sort: u64,
    /// A top-k with at least this `k` is "large" (AUD301).
    pub large_topk: u64,
    /// Scatter ops for a graph to be scatter-heavy (AUD302) …
    pub scatter_min_ops: usize,
    /// … or fraction of all ops that are scatters.
    pub scatter_fraction: f64,
    /// Share of matmul/conv FLOPs in f32 above which AUD401 fires.
    pub f32_share: f64,
    /// ONNX lowering hook for AUD305 (ops tpuport cannot lower to StableHLO).
    pub onnx_lowering: Option<LoweringHook>,
    /// Codes or code prefixes not to run (`AUD401`, `AUD4` for a family), case-insensitive.
    pub ignore: Vec<String>,
}

impl Default for FindingOptions {
    fn default() -> Self {
        FindingOptions {
            workload: Workload::Infer,
            batch: None,
            tiny_elements: 4096,
            tiny_fraction: 0.5,
            tiny_min_ops: 32,
            long_reduction: 4096,
            large_sort: 4096,
            large_topk: 256,
            scatter_min_ops: 4,
            scatter_fraction: 0.05,
            f32_share: 0.5,
            onnx_lowering: None,
            ignore: Vec::new(),
        }
    }
}

/// The documentation and facts of one code (see [`tpuport_codes::StableCode`] for its doc,
/// summary, page and lookup).
pub type CodeDoc = CodeInfo<Audit>;

/// The audit findings' registry: [`CodeDoc`] rows, documented under `docs/findings/`
/// (regenerate with `TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test
/// findings_docs`; the same test fails when the checked-in files differ).
#[derive(Debug)]
pub struct Audit;

static AUDIT: Registry = Registry {
    name: "audit",
    title: "tpuport audit findings",
    docs_dir: "docs/findings",
    regenerate: "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-analysis --test findings_docs",
    intro: "`tpuport audit MODEL` reports these; run `tpuport explain CODE` for the same text in a terminal.",
    noun: "codes",
    summary_heading: "## What it finds",
    families: &FAMILIES,
};

impl Table for Audit {
    type Extra = ();
    fn registry() -> &'static Registry {
        &AUDIT
    }
    fn rows() -> &'static [CodeDoc] {
        CODES
    }
    fn facts(row: &CodeDoc) -> Vec<Fact> {
        vec![Fact::severity(row.severity)]
    }
}

/// Families in code order: (prefix, title).
pub const FAMILIES: [(&str, &str); 5] = [
    ("AUD1", "Dynamic shapes and control flow"),
    ("AUD2", "Element types"),
    ("AUD3", "Ops TPUs run badly"),
    ("AUD4", "Precision"),
    ("AUD5", "Op granularity"),
];

/// A rule: its documentation (the struct's doc comment, see [`tpuport_codes::documented!`]) and
/// its check.
pub(crate) trait Rule {
    /// Finds the pattern and reports through `sink`.
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>);
}

tpuport_codes::code_table! {
    table: Audit,
    dir: "crates/tpuport-analysis/src/findings",
    check: Rule => fn(&Ctx<'_>, &mut Sink<'_>);
    "AUD101", Error, data_dependent_shape::DataDependentShape, "data-dependent-shape";
    "AUD102", Warning, dynamic_dims::DynamicDims, "dynamic-dims";
    "AUD103", Warning, data_dependent_loop::DataDependentLoop, "data-dependent-loop";
    "AUD201", Error, string_tensors::StringTensors, "string-tensors";
    "AUD202", Warning, float64::Float64, "float64";
    "AUD203", Warning, complex::Complex, "complex";
    "AUD301", Warning, large_sort::LargeSort, "large-sort";
    "AUD302", Warning, scatter_heavy::ScatterHeavy, "scatter-heavy";
    "AUD303", Info, random_ops::RandomOps, "random-ops";
    "AUD304", Warning, poorly_lowered::PoorlyLowered, "poorly-lowered";
    "AUD305", Error, no_tpu_lowering::NoTpuLowering, "no-tpu-lowering";
    "AUD401", Info, f32_compute::F32Compute, "f32-compute";
    "AUD402", Info, bf16_fragile_norm::Bf16FragileNorm, "bf16-fragile-normalization";
    "AUD403", Info, bf16_fragile_exp_log::Bf16FragileExpLog, "bf16-fragile-exp-log";
    "AUD404", Info, long_reduction::LongReduction, "long-reduction";
    "AUD501", Warning, tiny_ops::TinyOps, "tiny-ops";
}

/// Runs every rule over the model (entry graph, subgraphs, other functions). Findings come most
/// severe first, then by code.
#[must_use]
pub fn check(model: &Model, opts: &FindingOptions) -> Vec<Finding> {
    let cx = Ctx::new(model, opts);
    let mut out = Vec::new();
    for (row, check) in tpuport_codes::enabled::<Audit, _>(CHECKS, &opts.ignore) {
        check(&cx, &mut Sink::new(row.code, row.severity, &mut out));
    }
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(b.code)));
    out
}
