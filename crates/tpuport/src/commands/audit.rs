//! `tpuport audit MODEL`: before touching a TPU — FLOPs and bytes, tiling padding, memory
//! footprint, where it fits, a roofline estimate per generation, and the support / risk
//! findings. Summary first. JSON schema `tpuport.audit/1`: `docs/audit.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use tpuport_analysis::audit::{self, AuditOptions, AuditReport, Level};
use tpuport_analysis::{Optimizer, Workload};
use tpuport_formats::ImportOptions;
use tpuport_model::Shape;
use tpuport_report::human::{bytes, si};
use tpuport_report::{Align, Table};

use crate::cli::GlobalArgs;
use crate::commands::Status;
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
    /// Batch size: binds the leading symbolic dimension of every input.
    #[arg(long)]
    pub(crate) batch: Option<u64>,
    /// Size of a named symbolic dimension, e.g. `sequence=128` (repeatable).
    #[arg(long = "dim", value_name = "NAME=N", value_parser = super::inspect::parse_dim)]
    pub(crate) dims: Vec<(String, u64)>,
    /// Full shape of a named input, e.g. `input_ids=1x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = super::inspect::parse_input_shape)]
    pub(crate) input_shape: Vec<(String, Shape)>,
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
    /// Print the time spent importing and analysing to stderr.
    #[arg(long)]
    pub(crate) timings: bool,
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    s.parse()
}

fn parse_optimizer(s: &str) -> Result<Optimizer, String> {
    s.parse()
}

pub(crate) fn run(a: &AuditArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.batch == Some(0) {
        anyhow::bail!("--batch must be at least 1");
    }
    let catalog = crate::commands::catalog::load(a.catalog.as_ref())?;
    let slice = a.slice.as_deref().map(|s| catalog.slice(s)).transpose()?;
    let opts = ImportOptions {
        dims: a.dims.iter().cloned().collect::<BTreeMap<_, _>>(),
        input_shapes: a.input_shape.iter().cloned().collect(),
        batch: a.batch,
        ..ImportOptions::default()
    };
    let t0 = Instant::now();
    let model = tpuport_formats::open(&a.model, &opts)?;
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
    let t1 = Instant::now();
    let aopts = AuditOptions {
        workload: a.workload,
        optimizer: a.optimizer,
        batch: a.batch,
        slice,
        onnx_lowering: Some(lowerable),
    };
    let found = audit::findings(&model, &aopts);
    let report = audit::audit(&a.model.display().to_string(), &model, &catalog, &aopts, found);
    if a.timings {
        super::note_timings(p, t0, t1);
    }
    super::emit_report(p, g.format, &report, || render_text(&report))?;
    let threshold = match a.fail_on {
        FailOn::Info => Some(Level::Info),
        FailOn::Warning => Some(Level::Warning),
        FailOn::Error => Some(Level::Error),
        FailOn::Never => None,
    };
    let hit = threshold.is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    Ok(if hit { Status::Findings } else { Status::Success })
}

#[allow(clippy::cast_precision_loss, reason = "display")]
fn flops(n: u64) -> String {
    si(n)
}

fn secs(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} us", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

fn rate(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// The text report: summary first, then the sections.
#[allow(clippy::too_many_lines, reason = "one report, section by section")]
pub(crate) fn render_text(r: &AuditReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}  ({}, {} nodes, {} parameters)",
        r.path,
        r.model.format,
        r.model.nodes,
        si(r.model.params)
    );
    let _ = writeln!(
        o,
        "workload {}{}, batch {}{}",
        r.workload,
        if r.workload.is_training() { format!(" ({})", r.optimizer) } else { String::new() },
        r.batch,
        r.slice.as_ref().map(|s| format!(", slice {s}")).unwrap_or_default()
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "Summary");
    if let Some(chip) = &r.summary.chip {
        let fits = r.summary.fits_on.clone().unwrap_or_else(|| "no slice".to_owned());
        if let (Some(sl), Some(v)) = (&r.slice, &r.summary.slice_fit) {
            let verdict = match v.as_str() {
                "replicated" => "fits (every chip holds the whole model)",
                "sharded" => "fits only with weights/state sharded across the chips",
                _ => "does not fit",
            };
            let _ = writeln!(o, "  {sl}: {verdict}");
        }
        let _ = writeln!(o, "  fits on {fits} ({chip})");
        if let (Some(s), Some(sps)) = (r.summary.step_s, r.summary.samples_per_s) {
            let _ = writeln!(
                o,
                "  estimated {} per step, {} samples/s per {chip} chip",
                secs(s),
                rate(sps)
            );
        }
    }
    let _ = writeln!(
        o,
        "  {} FLOPs per step ({} on the MXU), {} transcendentals, {} moved (fused estimate)",
        flops(r.cost.totals.flops),
        flops(r.cost.totals.mxu_flops),
        si(r.cost.totals.transcendentals),
        bytes(r.cost.totals.fused_bytes)
    );
    let errors = r.findings.iter().filter(|f| f.severity == Level::Error).count();
    let warnings = r.findings.iter().filter(|f| f.severity == Level::Warning).count();
    let infos = r.findings.len() - errors - warnings;
    let _ = writeln!(o, "  findings: {errors} errors, {warnings} warnings, {infos} info");
    if r.summary.top_fixes.is_empty() {
        let _ = writeln!(o, "  nothing to fix");
    } else {
        let _ = writeln!(o, "  top things to fix:");
        for (i, f) in r.summary.top_fixes.iter().enumerate() {
            let code = f.code.as_ref().map(|c| format!("[{c}] ")).unwrap_or_default();
            let _ = writeln!(o, "    {}. {code}{}", i + 1, f.text);
        }
    }

    if !r.findings.is_empty() {
        let _ = writeln!(o, "\nFindings");
        for f in &r.findings {
            let sev = serde_json::to_value(f.severity)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(o, "  {sev:<7} {}  {}", f.code, f.title);
            let _ = writeln!(o, "          {}", f.message);
            if !f.nodes.is_empty() {
                let shown: Vec<&str> = f.nodes.iter().take(3).map(String::as_str).collect();
                let more = if f.nodes.len() > 3 { ", …" } else { "" };
                let _ = writeln!(o, "          nodes: {}{more}", shown.join(", "));
            }
            if let Some(fx) = &f.fix {
                let _ = writeln!(o, "          fix: {fx}");
            }
        }
    }

    let _ = writeln!(o, "\nCost (forward pass, batch {})", r.batch);
    let t = &r.cost.totals;
    let mut tab = Table::new(&["", "value"], &[Align::Left, Align::Right]).indent(2);
    tab.row(["FLOPs (XLA convention)".to_owned(), flops(t.flops)]);
    tab.row(["matmul+conv FLOPs (dense)".to_owned(), flops(t.mxu_flops)]);
    tab.row(["transcendentals".to_owned(), si(t.transcendentals)]);
    tab.row(["bytes accessed (unfused)".to_owned(), bytes(t.bytes)]);
    tab.row(["bytes accessed (fused estimate)".to_owned(), bytes(t.fused_bytes)]);
    tab.row(["ops".to_owned(), format!("{} ({} uncounted)", t.ops, t.ops_uncounted)]);
    o.push_str(&tab.render());
    let mut tab = Table::new(
        &["op", "node", "FLOPs", "bytes"],
        &[Align::Left, Align::Left, Align::Right, Align::Right],
    )
    .indent(2);
    for op in r.cost.top_ops.iter().take(10).filter(|op| op.flops > 0) {
        tab.row([op.op.clone(), shorten(&op.node, 48), flops(op.flops), bytes(op.bytes)]);
    }
    if !tab.is_empty() {
        let _ = writeln!(o, "  most expensive ops:");
        o.push_str(&tab.render());
    }
    for n in &r.cost.notes {
        let _ = writeln!(o, "  note: {n}");
    }

    let _ = writeln!(o, "\nMemory");
    let l = &r.memory.logical;
    let _ = writeln!(
        o,
        "  inference: {} = weights {} + inputs {} + peak activations {} (at {})",
        bytes(l.inference),
        bytes(l.weights),
        bytes(l.inputs),
        bytes(l.peak_activations),
        shorten(&r.memory.peak_at, 40)
    );
    if let Some(d) = &r.memory.per_device {
        let _ = writeln!(
            o,
            "  per device ({} partitions, from the sharding annotations): {} = arguments {} + outputs {} + temporaries {}",
            d.partitions,
            bytes(d.total),
            bytes(d.arguments),
            bytes(d.outputs),
            bytes(d.temps)
        );
    }
    if !l.training.is_empty() {
        let mut tab = Table::new(
            &["training", "weights", "grads", "optimizer", "activations", "total", "with remat"],
            &[
                Align::Left,
                Align::Right,
                Align::Right,
                Align::Right,
                Align::Right,
                Align::Right,
                Align::Right,
            ],
        )
        .indent(2);
        for t in &l.training {
            tab.row([
                t.precision.clone(),
                bytes(t.weights),
                bytes(t.gradients),
                bytes(t.optimizer_state),
                bytes(t.activations),
                bytes(t.total),
                bytes(t.total_remat),
            ]);
        }
        o.push_str(&tab.render());
    }
    let mut tab = Table::new(
        &["chip", "padded need", "HBM/chip", "fits (replicated)", "fits (sharded)"],
        &[Align::Left, Align::Right, Align::Right, Align::Left, Align::Left],
    )
    .indent(2);
    for f in &r.fits {
        let slot = |s: &Option<String>, c: Option<u32>| match (s, c) {
            (Some(s), Some(c)) => format!("{s} ({c} chip{})", if c == 1 { "" } else { "s" }),
            _ => "no slice".to_owned(),
        };
        tab.row([
            f.chip.clone(),
            bytes(f.state_bytes + f.batch_bytes),
            bytes(f.hbm_budget),
            slot(&f.replicated, f.replicated_chips),
            slot(&f.sharded, f.sharded_chips),
        ]);
    }
    o.push_str(&tab.render());

    let _ = writeln!(o, "\nLayout and padding");
    let mut tab = Table::new(
        &["chip", "MXU", "weights", "padded", "matmul operands", "padded", "MXU util"],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    )
    .indent(2);
    for c in &r.layout.chips {
        tab.row([
            c.chip.clone(),
            c.mxu_size.to_string(),
            bytes(c.weights_logical),
            bytes(c.weights_padded),
            bytes(c.operands_logical),
            bytes(c.operands_padded),
            format!("{:.1}%", c.mxu_utilization * 100.0),
        ]);
    }
    o.push_str(&tab.render());
    let head = r.summary.chip.as_ref().and_then(|h| r.layout.chips.iter().find(|c| &c.chip == h));
    if let Some(c) = head {
        if !c.worst_matmuls.is_empty() {
            let _ = writeln!(o, "  worst matmuls on {} (MXU work lost to padding):", c.chip);
            for m in c.worst_matmuls.iter().take(5) {
                let _ = writeln!(
                    o,
                    "    {} [m={} k={} n={}] {:.1}% util{}",
                    shorten(&m.node, 40),
                    m.dims.m,
                    m.dims.k,
                    m.dims.n,
                    m.utilization * 100.0,
                    m.fix.as_ref().map(|f| format!(": {f}")).unwrap_or_default()
                );
            }
        }
        if !c.worst_tensors.is_empty() {
            let _ = writeln!(o, "  worst padded tensors on {}:", c.chip);
            for t in c.worst_tensors.iter().take(5) {
                let _ = writeln!(
                    o,
                    "    {} {}{:?} -> {:?}: {} -> {}",
                    shorten(&t.name, 40),
                    t.dtype.name(),
                    t.shape,
                    t.padded_shape,
                    bytes(t.logical_bytes),
                    bytes(t.padded_bytes)
                );
            }
        }
    }

    let _ = writeln!(o, "\nRoofline (one chip, batch {}; estimate)", r.batch);
    let mut tab = Table::new(
        &["chip", "step", "samples/s", "bound", "compute-bound from", "USD / 1M samples"],
        &[Align::Left, Align::Right, Align::Right, Align::Left, Align::Right, Align::Right],
    )
    .indent(2);
    for c in &r.roofline.chips {
        tab.row([
            c.chip.clone(),
            secs(c.step_s),
            rate(c.samples_per_s),
            format!(
                "{} ({}/{} ops)",
                c.bound,
                c.compute_bound_ops,
                c.compute_bound_ops + c.memory_bound_ops
            ),
            match (c.compute_bound_batch, c.compute_bound_batch_bf16) {
                (Some(b), _) => format!("batch {b}"),
                (None, Some(b)) => format!("batch {b} (bf16)"),
                (None, None) => "-".to_owned(),
            },
            c.usd_per_1m_samples.map_or_else(
                || "-".to_owned(),
                |u| format!("{} ({})", money(u), c.price_confidence.as_deref().unwrap_or("?")),
            ),
        ]);
    }
    o.push_str(&tab.render());
    let _ = writeln!(o);
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

fn money(u: f64) -> String {
    if u >= 0.01 { format!("{u:.2}") } else { format!("{u:.1e}") }
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let tail: String = s.chars().rev().take(n - 1).collect::<Vec<_>>().into_iter().rev().collect();
    format!("…{tail}")
}

/// Whether `tpuport lower` has a lowering for an ONNX op at the model's opset.
fn lowerable(op: &str, domain: &str, opset: i64) -> bool {
    matches!(
        tpuport_lower::onnx::support(op, domain, opset),
        tpuport_lower::onnx::Support::Supported { .. }
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn report(workload: Workload) -> AuditReport {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit_small.mlir");
        let model = tpuport_formats::open(&path, &ImportOptions::default()).unwrap();
        let catalog = tpuport_hw::Catalog::builtin();
        let opts = AuditOptions {
            workload,
            optimizer: Optimizer::AdamW,
            batch: None,
            slice: None,
            onnx_lowering: None,
        };
        let found = audit::findings(&model, &opts);
        audit::audit("tests/data/audit_small.mlir", &model, &catalog, &opts, found)
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render_text(&report(Workload::Infer)));
    }

    #[test]
    fn text_report_training_snapshot() {
        insta::assert_snapshot!(render_text(&report(Workload::Train)));
    }

    #[test]
    fn json_report_snapshot() {
        insta::assert_json_snapshot!(report(Workload::Infer));
    }
}
