//! `tpuport audit`: the cost, layout, memory and roofline passes plus the support / risk
//! findings, assembled into one report with a summary (where it fits, what it costs, the top
//! things to fix). JSON schema `tpuport.audit/1`, documented in `docs/audit.md`.

use serde::Serialize;
use tpuport_hw::{Catalog, Chip, Slice};
use tpuport_model::Model;

use crate::compiler_check::{CompilerCheck, CompilerInput};
use crate::cost::{self, CostReport, CostTotals, OpCost};
use crate::findings::Severity;
use crate::layout::{self, ChipLayout, LayoutReport};
use crate::memory::{self, MemoryReport};
use crate::roles::{self, ArgRoles, RoleOptions};
use crate::roofline::{self, ChipRoofline, RooflineReport};
use crate::workload::{Optimizer, Workload};

mod batch;
mod compiler;
mod fit;
mod fixes;
mod hints;
mod notes;
mod unbound;

pub(crate) use fixes::gib;
pub use unbound::{DimAt, Unbound, UnboundDim};

/// Version of the JSON schema of [`AuditReport`]; bump on any incompatible change.
pub const SCHEMA: &str = "tpuport.audit/1";

/// Ops listed in the cost section.
const TOP_OPS: usize = 15;

/// What to audit for.
#[derive(Clone, Debug, Default)]
pub struct AuditOptions {
    /// Workload kind.
    pub workload: Workload,
    /// Optimizer (training workloads).
    pub optimizer: Optimizer,
    /// The batch the graph's shapes were bound with (detected from the inputs when `None`).
    pub batch: Option<u64>,
    /// Restrict the per-chip sections to this slice's generation and check it.
    pub slice: Option<Slice>,
    /// Tells whether `tpuport lower` handles an ONNX op (see [`crate::findings::LoweringHook`]).
    pub onnx_lowering: Option<crate::findings::LoweringHook>,
    /// Argument roles decided by the caller (`--data-args`); decided by the rules when `None`.
    pub roles: Option<ArgRoles>,
    /// `--dim NAME=N` as given. ONNX binds them at import; a StableHLO module's shapes are
    /// static, so the report says which were not applied ([`AuditReport::dims_not_applied`]).
    pub dims: Vec<(String, u64)>,
    /// The TPU compiler's answer for the slice, when the caller asked libtpu.
    pub compiler: CompilerInput,
}

/// A support / risk finding as the report carries it.
#[derive(Clone, Debug, Serialize)]
pub struct AuditFinding {
    /// Stable code (`tpuport explain CODE`).
    pub code: String,
    /// Severity.
    pub severity: Severity,
    /// One-line title.
    pub title: String,
    /// Details.
    pub message: String,
    /// Nodes involved (first few).
    pub nodes: Vec<String>,
    /// Suggested fix.
    pub fix: Option<String>,
}

impl From<crate::findings::Finding> for AuditFinding {
    fn from(f: crate::findings::Finding) -> Self {
        AuditFinding {
            code: f.code.to_owned(),
            severity: f.severity,
            title: f.title,
            message: f.message,
            nodes: f.nodes,
            fix: f.fix,
        }
    }
}

/// Runs the support / risk findings pass for an audit.
#[must_use]
pub fn findings(model: &Model, opts: &AuditOptions) -> Vec<AuditFinding> {
    let fo = crate::findings::FindingOptions {
        workload: opts.workload,
        batch: opts.batch,
        onnx_lowering: opts.onnx_lowering,
        ..crate::findings::FindingOptions::default()
    };
    crate::findings::check(model, &fo).into_iter().map(AuditFinding::from).collect()
}

/// Model facts.
#[derive(Clone, Debug, Serialize)]
pub struct ModelFacts {
    /// File format.
    pub format: String,
    /// Exporter guess.
    pub exporter: Option<String>,
    /// Graph nodes (subgraphs included).
    pub nodes: u64,
    /// Trainable parameters found.
    pub params: u64,
    /// Tables read through gather and also used as the output projection (counted once).
    pub tied: Vec<String>,
}

/// Where the model fits on one generation.
#[derive(Clone, Debug, Serialize)]
pub struct SliceFit {
    /// Chip id.
    pub chip: String,
    /// HBM per chip a plan may use, bytes.
    pub hbm_budget: u64,
    /// Bytes that stay whole on every chip without sharding (weights, gradients, optimizer).
    pub state_bytes: u64,
    /// Bytes that split with the batch (inputs, activations).
    pub batch_bytes: u64,
    /// Smallest slice where every chip holds the full state and a share of the batch.
    pub replicated: Option<String>,
    /// Chips of that slice.
    pub replicated_chips: Option<u32>,
    /// Smallest slice with state and batch both sharded over the chips (FSDP / ZeRO-3).
    pub sharded: Option<String>,
    /// Chips of that slice.
    pub sharded_chips: Option<u32>,
}

/// One of the top things to fix.
#[derive(Clone, Debug, Serialize)]
pub struct Fix {
    /// Which section raised it: `compiler`, `finding`, `memory`, `layout`, `roofline`, `dtype`.
    pub source: String,
    /// Finding code, when it is a finding.
    pub code: Option<String>,
    /// What to do, one line.
    pub text: String,
}

/// The report's first screen.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The chip the headline figures are for.
    pub chip: Option<String>,
    /// Smallest slice of that generation that fits (replicated, else sharded).
    pub fits_on: Option<String>,
    /// Estimated step latency on one chip of that generation, seconds (`None` when the count
    /// is partial: see `withheld`).
    pub step_s: Option<f64>,
    /// Estimated samples/s on one chip (`None` when a sanity check refused the figure, or the
    /// count is partial).
    pub samples_per_s: Option<f64>,
    /// Why samples/s is not given, when a sanity check refused it.
    pub samples_per_s_refused: Option<String>,
    /// Why the step time, samples/s, bound and FLOP total are not given: ops were not counted
    /// for unbound dims (`unbound` says which and how to bind them). `None` on a full count.
    pub withheld: Option<String>,
    /// The unbound dims behind a partial count and the flags that bind them.
    pub unbound: Option<Unbound>,
    /// For `--slice`: `replicated`, `sharded` (fits only with state sharded), or `no`.
    pub slice_fit: Option<String>,
    /// Up to five things to fix, most important first.
    pub top_fixes: Vec<Fix>,
}

/// The cost section.
#[derive(Clone, Debug, Serialize)]
pub struct CostSection {
    /// Totals.
    pub totals: CostTotals,
    /// FLOPs by op class.
    pub by_class: std::collections::BTreeMap<String, u64>,
    /// The most expensive ops by FLOPs.
    pub top_ops: Vec<OpCost>,
    /// Notes (uncounted ops, loop trip counts).
    pub notes: Vec<String>,
    /// Set when ops were not counted for unbound dims: the totals are what was counted, a
    /// lower bound (`summary.withheld` says why).
    pub partial: Option<String>,
}

/// The full report.
#[derive(Clone, Debug, Serialize)]
pub struct AuditReport {
    /// Schema id, [`SCHEMA`].
    pub schema: &'static str,
    /// The file audited (set by the caller).
    pub path: String,
    /// Model facts.
    pub model: ModelFacts,
    /// Workload.
    pub workload: Workload,
    /// Optimizer (meaningful for training).
    pub optimizer: Optimizer,
    /// Batch the figures are for.
    pub batch: u64,
    /// The batch the module's shapes hold (differs from `batch` when `--batch` scaled the
    /// per-sample figures of a static module).
    pub module_batch: u64,
    /// Which arguments are weights, data and state (modules taking weights as arguments; for
    /// ONNX, the graph inputs as data under the rule `onnx-graph`).
    pub roles: Option<ArgRoles>,
    /// `--dim` bindings a static module could not take (StableHLO shapes are fixed): nothing
    /// is re-lowered or scaled for them; the notes say why.
    pub dims_not_applied: Vec<DimNotApplied>,
    /// The slice asked for, if any.
    pub slice: Option<String>,
    /// Summary first.
    pub summary: Summary,
    /// Findings (support and risk), most severe first.
    pub findings: Vec<AuditFinding>,
    /// FLOPs and bytes.
    pub cost: CostSection,
    /// Tiling / padding per chip.
    pub layout: LayoutReport,
    /// Footprints.
    pub memory: MemoryReport,
    /// Smallest slices per generation.
    pub fits: Vec<SliceFit>,
    /// Roofline estimates per chip.
    pub roofline: RooflineReport,
    /// The estimate next to the TPU compiler's answer (`--compiler`), when it was asked.
    pub compiler: Option<CompilerCheck>,
    /// Things the reader should know about the figures.
    pub notes: Vec<String>,
}

/// A `--dim NAME=N` the module's static shapes could not take.
#[derive(Clone, Debug, Serialize)]
pub struct DimNotApplied {
    /// The name given.
    pub name: String,
    /// The value given.
    pub value: u64,
    /// The module's own size of that dimension, when tpuport knows it (the sequence of token
    /// inputs, from the argument roles).
    pub module: Option<u64>,
}

/// The passes' results for one audit, which the summary, the fixes and the notes read.
struct Passes<'a> {
    model: &'a Model,
    opts: &'a AuditOptions,
    holding: batch::Holding,
    roles: ArgRoles,
    cost: CostReport,
    memory: MemoryReport,
    layout: LayoutReport,
    roofline: RooflineReport,
    fits: Vec<SliceFit>,
    compiler: Option<CompilerCheck>,
    /// Most severe first.
    findings: Vec<AuditFinding>,
    /// The batch the figures are for, and the one the module's shapes hold.
    batch: u64,
    module_batch: u64,
    /// The chip the headline figures are for.
    head: Option<String>,
    /// Why samples/s is not given.
    refused: Option<String>,
    /// Ops not counted for unbound dims.
    unbound: Option<Unbound>,
}

impl Passes<'_> {
    fn head_fit(&self) -> Option<&SliceFit> {
        self.fits.iter().find(|f| Some(&f.chip) == self.head.as_ref())
    }

    fn head_roofline(&self) -> Option<&ChipRoofline> {
        self.roofline.chips.iter().find(|r| Some(&r.chip) == self.head.as_ref())
    }

    fn head_layout(&self) -> Option<&ChipLayout> {
        self.layout.chips.iter().find(|l| Some(&l.chip) == self.head.as_ref())
    }
}

/// Runs every pass and assembles the report. `findings` come from the support / risk pass.
#[must_use]
pub fn audit(
    path: &str,
    model: &Model,
    catalog: &Catalog,
    opts: &AuditOptions,
    mut findings: Vec<AuditFinding>,
) -> AuditReport {
    let chips: Vec<&Chip> = catalog
        .chips()
        .iter()
        .filter(|c| c.is_tpu() && c.tiling.is_some())
        .filter(|c| opts.slice.as_ref().is_none_or(|s| s.chip == c.id))
        .collect();
    let roles = opts
        .roles
        .clone()
        .unwrap_or_else(|| roles::assign(model, &RoleOptions::default()).unwrap_or_default());
    let holding = batch::Holding::of(model);
    let cost = cost::analyze_with_weights(model, &holding.resident(&roles));
    let unbound = unbound::check(model, &cost, holding.stablehlo);
    let mxu_ops = cost.ops.iter().filter(|o| o.class.runs_on_mxu()).count() as u64;
    let memory =
        memory::analyze_with_roles(model, &chips, opts.workload, opts.optimizer, mxu_ops, &roles);
    let module_batch = batch::module_batch(model, opts, &roles, holding, &memory.param_names);
    let batch = opts.batch.unwrap_or(module_batch);
    #[allow(clippy::cast_precision_loss, reason = "ratio")]
    let scale = batch as f64 / module_batch as f64;
    let mut layout = layout::analyze(model, &cost, &chips, &memory.param_names);
    let compiler = compiler::check(opts, &chips, &mut layout, &memory);
    let mut roofline = roofline::analyze_scaled(&cost, &chips, module_batch, batch, opts.workload);
    roofline.withheld = unbound.as_ref().map(Unbound::reason);
    let fits: Vec<SliceFit> = chips
        .iter()
        .filter_map(|c| {
            let f = memory.padded.iter().find(|(id, _)| *id == c.id)?;
            Some(fit::fit(catalog, c, &f.1, opts.workload, scale))
        })
        .collect();
    let head = fit::head_chip(opts, &chips);
    let head_peak = roofline
        .chips
        .iter()
        .find(|c| Some(&c.chip) == head.as_ref())
        .map(|c| (c.samples_per_s, c.peak_flops));
    let refused = match &unbound {
        Some(u) => Some(u.reason()),
        None => notes::sanity(&cost, &roles, holding.by_args, module_batch, head_peak),
    };
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(&b.code)));
    let p = Passes {
        model,
        opts,
        holding,
        roles,
        cost,
        memory,
        layout,
        roofline,
        fits,
        compiler,
        findings,
        batch,
        module_batch,
        head,
        refused,
        unbound,
    };
    let summary = Summary {
        chip: p.head.clone(),
        fits_on: p.head_fit().and_then(|f| f.replicated.clone().or_else(|| f.sharded.clone())),
        step_s: if p.unbound.is_some() { None } else { p.head_roofline().map(|r| r.step_s) },
        samples_per_s: if p.refused.is_some() {
            None
        } else {
            p.head_roofline().map(|r| r.samples_per_s)
        },
        samples_per_s_refused: p.refused.clone(),
        withheld: p.unbound.as_ref().map(Unbound::reason),
        unbound: p.unbound.clone(),
        slice_fit: fit::slice_fit(opts, &p.fits),
        top_fixes: fixes::top_fixes(&p),
    };
    let (dims_not_applied, dim_notes) = if holding.stablehlo {
        batch::static_dims(&opts.dims, &p.roles)
    } else {
        (Vec::new(), Vec::new())
    };
    let notes = notes::notes(&p, dim_notes);
    let mut top_ops = p.cost.ops.clone();
    top_ops.sort_by(|a, b| b.flops.cmp(&a.flops).then_with(|| a.node.cmp(&b.node)));
    top_ops.truncate(TOP_OPS);
    let model_facts = ModelFacts {
        format: model.format.name().to_owned(),
        exporter: model.metadata.exporter.clone(),
        nodes: model.graph.total_nodes() as u64,
        params: p.memory.params,
        tied: p.roles.tied().map(|a| a.label().to_owned()).collect(),
    };
    AuditReport {
        schema: SCHEMA,
        path: path.to_owned(),
        model: model_facts,
        workload: opts.workload,
        optimizer: opts.optimizer,
        batch,
        module_batch,
        roles: (holding.by_args || holding.onnx).then_some(p.roles),
        dims_not_applied,
        slice: opts.slice.as_ref().map(|s| s.accelerator_type.clone()),
        summary,
        findings: p.findings,
        cost: CostSection {
            totals: p.cost.totals,
            by_class: p.cost.by_class,
            top_ops,
            notes: p.cost.notes,
            partial: p.unbound.as_ref().map(Unbound::reason),
        },
        layout: p.layout,
        memory: p.memory,
        fits: p.fits,
        roofline: p.roofline,
        compiler: p.compiler,
        notes,
    }
}
