//! `tpuport audit`: the cost, layout, memory and roofline passes plus the support / risk
//! findings, assembled into one report with a summary (where it fits, what it costs, the top
//! things to fix). JSON schema `tpuport.audit/1`, documented in `docs/audit.md`.

use serde::Serialize;
use tpuport_hw::{Catalog, Chip, Slice};
use tpuport_model::{DType, Dim, Model, ModelFormat, ValueId, ValueKind};

use std::collections::HashSet;

use crate::compiler_check::{self, CompilerCheck, CompilerInput};
use crate::cost::{self, CostReport, CostTotals, OpCost};
use crate::layout::{self, LayoutReport};
use crate::memory::{self, Footprint, MemoryReport};
use crate::roles::{self, ArgRoles, Role, RoleOptions};
use crate::roofline::{self, RooflineReport};
use crate::workload::{Optimizer, Workload};

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

/// Severity of a finding, ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Informational.
    Info,
    /// Likely to hurt.
    Warning,
    /// Will fail or be badly wrong.
    Error,
}

/// A support / risk finding as the report carries it.
#[derive(Clone, Debug, Serialize)]
pub struct AuditFinding {
    /// Stable code (`tpuport explain CODE`).
    pub code: String,
    /// Severity.
    pub severity: Level,
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
        use crate::findings::Severity;
        AuditFinding {
            code: f.code.to_owned(),
            severity: match f.severity {
                Severity::Info => Level::Info,
                Severity::Warning => Level::Warning,
                Severity::Error => Level::Error,
            },
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
    /// Estimated step latency on one chip of that generation, seconds.
    pub step_s: Option<f64>,
    /// Estimated samples/s on one chip (`None` when a sanity check refused the figure).
    pub samples_per_s: Option<f64>,
    /// Why samples/s is not given, when a sanity check refused it.
    pub samples_per_s_refused: Option<String>,
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

/// Names `--dim` may give the sequence length of token inputs.
const SEQUENCE_NAMES: &[&str] =
    &["sequence", "seq", "seq_len", "seqlen", "sequence_length", "seq_length", "tokens"];

/// The `--dim` bindings of a StableHLO module (whose shapes are static) with the note for each:
/// the sequence is known from the roles (dim 1 of the token ids) but cannot be re-lowered, and
/// is not scaled (attention grows faster than linearly with it); other names bind nothing.
fn static_dims(dims: &[(String, u64)], roles: &ArgRoles) -> (Vec<DimNotApplied>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (name, value) in dims {
        let is_seq = SEQUENCE_NAMES.contains(&name.to_ascii_lowercase().as_str());
        let module = if is_seq { roles.sequence } else { None };
        if module == Some(*value) {
            continue; // what the module already holds
        }
        notes.push(match module {
            Some(s) => format!(
                "--dim {name}={value} not applied: the module's shapes are static at sequence {s} (dim 1 of the token ids) and cannot be re-lowered here; every figure is at sequence {s}, none is scaled (attention cost grows faster than the sequence): re-export the module at sequence {value}"
            ),
            None if is_seq => format!(
                "--dim {name}={value} not applied: the module's shapes are static and no token-id argument gives its sequence; every figure is at the module's own shapes: re-export it at the shape you want"
            ),
            None => format!(
                "--dim {name}={value} not applied: a StableHLO module's shapes are static (no symbolic dimension to bind); every figure is at the module's own shapes: re-export it at the shape you want"
            ),
        });
        out.push(DimNotApplied { name: name.clone(), value: *value, module });
    }
    (out, notes)
}

/// The leading dimension of the first input with a static shape (the batch the model was bound
/// with), or 1.
fn detect_batch(model: &Model, params: &[String]) -> u64 {
    let g = &model.graph;
    g.inputs
        .iter()
        .filter(|i| !params.contains(&g.value(**i).name))
        .filter_map(|i| g.value(*i).ty.shape.as_ref()?.as_fixed())
        .find(|s| !s.is_empty())
        .map_or(1, |s| s[0].max(1))
}

/// Bytes in binary units for the fix lines (`1.5 MiB`).
pub(crate) fn gib(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss, reason = "display")]
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

fn fit(catalog: &Catalog, chip: &Chip, f: &Footprint, workload: Workload, scale: f64) -> SliceFit {
    let (state, batch) = if workload.is_training() {
        let t = f.training.iter().find(|t| t.precision == "mixed").or(f.training.first());
        t.map_or((f.weights, f.inputs.saturating_add(f.hbm_activations)), |t| {
            let state = t.weights.saturating_add(t.gradients).saturating_add(t.optimizer_state);
            (state, f.inputs.saturating_add(t.activations))
        })
    } else {
        (f.weights, f.inputs.saturating_add(f.hbm_activations))
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "bytes"
    )]
    let batch =
        if (scale - 1.0).abs() < f64::EPSILON { batch } else { (batch as f64 * scale) as u64 };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bytes")]
    let budget = chip.hbm_budget().unwrap_or(0.0) as u64;
    let slices = catalog.slices(chip);
    let chips = |s: &tpuport_hw::Slice| u64::from(s.chips).max(1);
    let rep = slices.iter().find(|s| state.saturating_add(batch.div_ceil(chips(s))) <= budget);
    let sh = slices.iter().find(|s| state.saturating_add(batch).div_ceil(chips(s)) <= budget);
    SliceFit {
        chip: chip.id.clone(),
        hbm_budget: budget,
        state_bytes: state,
        batch_bytes: batch,
        replicated: rep.map(|s| s.accelerator_type.clone()),
        replicated_chips: rep.map(|s| s.chips),
        sharded: sh.map(|s| s.accelerator_type.clone()),
        sharded_chips: sh.map(|s| s.chips),
    }
}

/// The peak FLOP/s of the headline chip.
fn head_peak(r: &RooflineReport, opts: &AuditOptions, chips: &[&Chip]) -> Option<(f64, f64)> {
    let id = opts
        .slice
        .as_ref()
        .map(|s| s.chip.clone())
        .or_else(|| chips.iter().find(|c| c.id == "v5e").map(|c| c.id.clone()))
        .or_else(|| chips.first().map(|c| c.id.clone()))?;
    r.chips.iter().find(|c| c.chip == id).map(|c| (c.samples_per_s, c.peak_flops))
}

/// Sanity checks before samples/s is printed: a reason to refuse it, or `None`.
///
/// - a per-sample cost of zero (nothing counted: samples/s would be infinite or meaningless);
/// - a batch that equals a weight argument's dimension while no data argument has it as its
///   leading dim (the batch was read from a weight: an embedding's vocabulary, a kernel);
/// - samples/s × FLOPs per sample above the chip's peak FLOP/s (physically impossible).
fn sanity(
    cost: &CostReport,
    roles: &ArgRoles,
    by_args: bool,
    module_batch: u64,
    head: Option<(f64, f64)>,
) -> Option<String> {
    if cost.totals.flops == 0 {
        return Some("the per-sample cost is 0 FLOPs (no op was counted)".to_owned());
    }
    if by_args && let Some(w) = roles.batch_is_weight_dim(module_batch) {
        return Some(format!(
            "the batch {module_batch} looks read from a weight (`{}` {:?} is used as a weight): name the data arguments with --data-args",
            w.label(),
            w.shape.clone().unwrap_or_default()
        ));
    }
    #[allow(clippy::cast_precision_loss, reason = "estimate")]
    let per_sample = cost.totals.flops as f64 / module_batch.max(1) as f64;
    if let Some((sps, peak)) = head
        && sps * per_sample > peak * (1.0 + 1e-9)
    {
        return Some(format!(
            "{sps:.0} samples/s x {per_sample:.3e} FLOPs per sample exceeds the chip's peak {peak:.3e} FLOP/s"
        ));
    }
    None
}

/// Runs every pass and assembles the report. `findings` come from the support / risk pass.
#[must_use]
#[allow(clippy::too_many_lines, reason = "assembly of the sections")]
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
    // Weights passed as arguments: StableHLO, or a graph without stored weights that is not
    // ONNX (an ONNX model without initializers keeps its coefficients in attributes:
    // LinearClassifier, TreeEnsemble; its inputs are data all the same).
    let stablehlo =
        matches!(model.format, ModelFormat::StablehloText | ModelFormat::StablehloBytecode);
    let onnx = model.format == ModelFormat::Onnx;
    let by_args = stablehlo
        || (!onnx && !model.graph.values.iter().any(|v| matches!(v.kind, ValueKind::Weight(_))));
    let resident: HashSet<ValueId> = if by_args {
        roles.args.iter().filter(|a| a.role != Role::Data).map(|a| a.id).collect()
    } else {
        HashSet::new()
    };
    let cost = cost::analyze_with_weights(model, &resident);
    let mxu_ops = cost.ops.iter().filter(|o| o.class.runs_on_mxu()).count() as u64;
    let memory =
        memory::analyze_with_roles(model, &chips, opts.workload, opts.optimizer, mxu_ops, &roles);
    // The batch the shapes hold: the data arguments' leading dim when weights are arguments.
    let module_batch = if by_args {
        roles.batch.unwrap_or(1).max(1)
    } else {
        // `--batch` binds a symbolic leading dim at import; an input static at another batch
        // keeps its own (the figures are then scaled, and the note says so). Other dims may
        // stay symbolic (a sequence not bound).
        let leading: Vec<Option<u64>> = model
            .graph
            .inputs
            .iter()
            .filter_map(|i| model.graph.value(*i).ty.shape.as_ref()?.0.first().map(Dim::known))
            .collect();
        match opts.batch {
            Some(b) if leading.contains(&Some(b)) || leading.iter().all(Option::is_none) => b,
            Some(_) => leading.iter().flatten().next().copied().unwrap_or(1).max(1),
            None => detect_batch(model, &memory.param_names),
        }
    };
    let batch = opts.batch.unwrap_or(module_batch);
    #[allow(clippy::cast_precision_loss, reason = "ratio")]
    let scale = batch as f64 / module_batch as f64;
    let mut layout = layout::analyze(model, &cost, &chips, &memory.param_names);
    let compiler = match &opts.compiler {
        CompilerInput::Answered(facts) => chips.iter().find(|c| c.id == facts.chip).map(|chip| {
            let rechecked = layout
                .chips
                .iter_mut()
                .find(|l| l.chip == chip.id)
                .map(|l| compiler_check::recheck_layouts(l, facts, chip))
                .unwrap_or_default();
            let estimate = memory
                .per_device_padded
                .iter()
                .find(|(id, _)| *id == chip.id)
                .map(|(_, d)| d.total)
                .or_else(|| {
                    memory.padded.iter().find(|(id, _)| *id == chip.id).map(|(_, f)| f.inference)
                })
                .unwrap_or(0);
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "bytes")]
            let budget = chip.hbm_budget().unwrap_or(0.0) as u64;
            compiler_check::check(facts, estimate, budget, rechecked)
        }),
        _ => None,
    };
    let roofline = roofline::analyze_scaled(&cost, &chips, module_batch, batch, opts.workload);
    let fits: Vec<SliceFit> = chips
        .iter()
        .filter_map(|c| {
            let f = memory.padded.iter().find(|(id, _)| *id == c.id)?;
            Some(fit(catalog, c, &f.1, opts.workload, scale))
        })
        .collect();
    let refused = sanity(&cost, &roles, by_args, module_batch, head_peak(&roofline, opts, &chips));
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(&b.code)));

    // Headline chip: the slice's, else v5e (the usual first TPU), else the first.
    let head = opts
        .slice
        .as_ref()
        .map(|s| s.chip.clone())
        .or_else(|| chips.iter().find(|c| c.id == "v5e").map(|c| c.id.clone()))
        .or_else(|| chips.first().map(|c| c.id.clone()));
    let head_fit = head.as_ref().and_then(|h| fits.iter().find(|f| &f.chip == h));
    let head_roof = head.as_ref().and_then(|h| roofline.chips.iter().find(|r| &r.chip == h));
    let head_layout = head.as_ref().and_then(|h| layout.chips.iter().find(|l| &l.chip == h));

    let slice_fit = opts.slice.as_ref().and_then(|sl| {
        let f = fits.iter().find(|f| f.chip == sl.chip)?;
        let n = u64::from(sl.chips.max(1));
        Some(if f.state_bytes + f.batch_bytes.div_ceil(n) <= f.hbm_budget {
            "replicated".to_owned()
        } else if (f.state_bytes + f.batch_bytes).div_ceil(n) <= f.hbm_budget {
            "sharded".to_owned()
        } else {
            "no".to_owned()
        })
    });
    let mut fixes: Vec<Fix> = Vec::new();
    if let Some(c) = &compiler
        && !c.compiler_fits
    {
        fixes.push(Fix {
            source: "compiler".into(),
            code: None,
            text: format!(
                "the TPU compiler ({}) refuses the program on {}: it needs {} per device, {} available; shard it over more chips or lower the batch",
                c.compiler,
                c.target,
                gib(c.compiler_bytes),
                gib(c.hbm_limit)
            ),
        });
    }
    for f in findings.iter().filter(|f| f.severity == Level::Error) {
        fixes.push(Fix {
            source: "finding".into(),
            code: Some(f.code.clone()),
            text: f.fix.clone().unwrap_or_else(|| f.title.clone()),
        });
    }
    if let Some(f) = head_fit
        && f.replicated_chips.is_none_or(|c| c > 1)
    {
        {
            fixes.push(Fix {
                source: "memory".into(),
                code: None,
                text: match (&f.replicated, &f.sharded) {
                    (_, Some(s)) => format!(
                        "does not fit one {} chip ({} of state + {} per batch vs {} HBM): shard weights{} (FSDP) over {s}",
                        f.chip,
                        gib(f.state_bytes),
                        gib(f.batch_bytes),
                        gib(f.hbm_budget),
                        if opts.workload.is_training() { ", gradients and optimizer state" } else { "" }
                    ),
                    _ => format!(
                        "does not fit any {} slice: {} of state; use a larger generation, remat, or a smaller batch",
                        f.chip,
                        gib(f.state_bytes)
                    ),
                },
            });
        }
    }
    if opts.workload.is_training()
        && let Some((_, fp)) = memory.padded.iter().find(|(id, _)| Some(id) == head.as_ref())
        && let Some(t) = fp.training.iter().find(|t| t.precision == "mixed")
        && t.activations > t.activations_remat.saturating_mul(2)
    {
        fixes.push(Fix {
            source: "memory".into(),
            code: None,
            text: format!(
                "activations take {} saved for backward; rematerialization (jax.checkpoint / activation checkpointing) cuts them to about {}",
                gib(t.activations),
                gib(t.activations_remat)
            ),
        });
    }
    if let Some(l) = head_layout {
        let total_mxu = cost.totals.mxu_flops.max(1);
        for m in l.worst_matmuls.iter().take(2) {
            // Worth a line when padding wastes >= 5 % of the model's MXU work.
            if m.wasted_flops.saturating_mul(20) >= total_mxu
                && let Some(fx) = &m.fix
            {
                fixes.push(Fix {
                    source: "layout".into(),
                    code: None,
                    text: format!(
                        "`{}` runs at {:.0}% MXU utilization on {}: {fx}",
                        m.node,
                        m.utilization * 100.0,
                        l.chip
                    ),
                });
            }
        }
        if l.weights_padded > l.weights_logical.saturating_add(l.weights_logical / 10)
            && let Some(t) = l.worst_tensors.first()
            && let Some(fx) = &t.fix
        {
            fixes.push(Fix {
                source: "layout".into(),
                code: None,
                text: format!(
                    "tiling pads weights from {} to {}; worst `{}` {:?}: {fx}",
                    gib(l.weights_logical),
                    gib(l.weights_padded),
                    t.name,
                    t.shape
                ),
            });
        }
    }
    if let Some(r) = head_roof
        && r.bound == "memory"
    {
        fixes.push(Fix {
            source: "roofline".into(),
            code: None,
            text: match r.compute_bound_batch {
                Some(b) => format!(
                    "memory-bound at batch {batch} on {}: a batch of {b} or more per chip keeps the MXUs busy",
                    r.chip
                ),
                None => match r.compute_bound_batch_bf16 {
                    Some(b) => format!(
                        "memory-bound on {} at any batch while tensors are f32; in bf16 a batch of {b} or more per chip is compute-bound",
                        r.chip
                    ),
                    None => format!(
                        "memory-bound on {} at every batch up to 65536: HBM traffic, not FLOPs, sets the speed",
                        r.chip
                    ),
                },
            },
        });
    }
    let f32_weights = model
        .graph
        .values
        .iter()
        .filter(|v| matches!(v.kind, tpuport_model::ValueKind::Weight(_)))
        .any(|v| v.ty.dtype == Some(DType::F32));
    // The findings pass's f32-compute finding (AUD401) says the same with figures.
    let f32_finding = findings.iter().any(|f| f.code == "AUD401");
    if f32_weights && !f32_finding {
        fixes.push(Fix {
            source: "dtype".into(),
            code: None,
            text: "weights are f32: serve / train in bf16 (halves HBM and bandwidth; the MXU computes in bf16 anyway)".into(),
        });
    }
    for f in findings.iter().filter(|f| f.severity <= Level::Warning) {
        fixes.push(Fix {
            source: "finding".into(),
            code: Some(f.code.clone()),
            text: f.fix.clone().unwrap_or_else(|| f.title.clone()),
        });
    }
    fixes.truncate(5);

    let mut top_ops = cost.ops.clone();
    top_ops.sort_by(|a, b| b.flops.cmp(&a.flops).then_with(|| a.node.cmp(&b.node)));
    top_ops.truncate(TOP_OPS);
    let mut notes = vec![
        "FLOPs follow XLA's HloCostAnalysis convention (conv padding taps excluded, elementwise 1/element); `mxu_flops` is the dense FlopCounterMode convention".to_owned(),
        "padded figures use the layouts the TPU compiler picks (least padded dimension order, measured on libtpu); roofline times are estimates (no overlap, no VPU model); prices are low confidence".to_owned(),
    ];
    if let CompilerInput::Unavailable(why) = &opts.compiler {
        notes.push(format!("not checked against the TPU compiler ({why}): figures are estimates"));
    }
    notes.extend(memory.notes.iter().cloned());
    if batch != module_batch {
        notes.push(if onnx {
            format!(
                "the model's inputs are static at batch {module_batch} (--batch binds only a symbolic leading dim): per-sample FLOPs, bytes and activation memory are scaled from batch {module_batch}; to analyse the graph itself at batch {batch}, give each input's shape with --input-shape NAME={batch}x..."
            )
        } else {
            format!(
                "the module's shapes are static at batch {module_batch}: it cannot be re-lowered at batch {batch} here (re-export it, or use `tpuport lower` on an ONNX model); per-sample FLOPs, bytes and activation memory are scaled from batch {module_batch}"
            )
        });
    }
    let (dims_not_applied, dim_notes) =
        if stablehlo { static_dims(&opts.dims, &roles) } else { (Vec::new(), Vec::new()) };
    notes.extend(dim_notes);
    if by_args {
        notes.extend(roles.notes.iter().cloned());
    }
    if let Some(r) = &refused {
        notes.push(format!("samples/s not given: {r}"));
    }
    let tied = roles.tied().map(|a| a.label().to_owned()).collect();
    AuditReport {
        schema: SCHEMA,
        path: path.to_owned(),
        model: ModelFacts {
            format: model.format.name().to_owned(),
            exporter: model.metadata.exporter.clone(),
            nodes: model.graph.total_nodes() as u64,
            params: memory.params,
            tied,
        },
        workload: opts.workload,
        optimizer: opts.optimizer,
        batch,
        module_batch,
        roles: (by_args || onnx).then_some(roles),
        dims_not_applied,
        slice: opts.slice.as_ref().map(|s| s.accelerator_type.clone()),
        summary: Summary {
            chip: head.clone(),
            fits_on: head_fit.and_then(|f| f.replicated.clone().or_else(|| f.sharded.clone())),
            step_s: head_roof.map(|r| r.step_s),
            samples_per_s: if refused.is_some() {
                None
            } else {
                head_roof.map(|r| r.samples_per_s)
            },
            samples_per_s_refused: refused.clone(),
            slice_fit,
            top_fixes: fixes,
        },
        findings,
        cost: CostSection {
            totals: cost.totals.clone(),
            by_class: cost.by_class.clone(),
            top_ops,
            notes: cost.notes.clone(),
        },
        layout,
        memory,
        fits,
        roofline,
        compiler,
        notes,
    }
}
