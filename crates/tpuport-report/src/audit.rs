//! `tpuport audit` as text: summary first, then findings, cost, memory, layout and padding, and
//! the roofline estimate per generation. The JSON form is the [`AuditReport`] itself
//! (`tpuport.audit/1`, `docs/audit.md`).

use std::fmt::Write as _;

use tpuport_analysis::audit::{AuditReport, Unbound};
use tpuport_analysis::compiler_check::CompilerCheck;
use tpuport_analysis::findings::Severity;

use crate::human::{bytes, duration, percent, si};
use crate::style::{Paint, Style};
use crate::table::{Column, Table, Truncate, truncate};

/// The severity word and its colour.
fn severity(l: Severity) -> (&'static str, Style) {
    match l {
        Severity::Info => ("info", Style::Cyan),
        Severity::Warning => ("warning", Style::Yellow),
        Severity::Error => ("error", Style::Red),
    }
}

fn rate(x: f64) -> String {
    if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

fn money(u: f64) -> String {
    if u >= 0.01 { format!("{u:.2}") } else { format!("{u:.1e}") }
}

fn shorten(s: &str, n: usize) -> String {
    truncate(s, n, Truncate::Start)
}

/// A table with a bold header when colour is on.
fn table(paint: Paint, columns: impl IntoIterator<Item = Column>) -> Table {
    Table::with_columns(columns).paint(paint).header_style(Style::Bold)
}

/// The text report: summary first, then the sections.
#[must_use]
pub fn render_text(r: &AuditReport, paint: Paint) -> String {
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
    if r.batch != r.module_batch {
        let _ = writeln!(
            o,
            "  the module is static at batch {}: per-sample figures scaled to batch {} (not re-lowered)",
            r.module_batch, r.batch
        );
    }
    for d in &r.dims_not_applied {
        let _ = writeln!(
            o,
            "  --dim {}={} not applied: the module's shapes are static{} (see the note)",
            d.name,
            d.value,
            d.module.map(|m| format!(" at {} {m}", d.name)).unwrap_or_default()
        );
    }
    if let Some(roles) = &r.roles {
        arguments(&mut o, roles);
    }
    let title = |o: &mut String, t: &str| {
        let _ = writeln!(o, "\n{}", paint.paint(t, Style::Bold));
    };
    title(&mut o, "Summary");
    summary(&mut o, r);
    if !r.findings.is_empty() {
        title(&mut o, "Findings");
        findings(&mut o, r, paint);
    }
    // The cost is the module's, at the batch its shapes hold.
    title(&mut o, &format!("Cost (forward pass, batch {})", r.module_batch));
    cost(&mut o, r, paint);
    title(&mut o, "Memory");
    memory(&mut o, r, paint);
    title(&mut o, "Layout and padding");
    layout(&mut o, r, paint);
    title(&mut o, &format!("Roofline (one chip, batch {}; estimate)", r.batch));
    roofline(&mut o, r, paint);
    let _ = writeln!(o);
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// The argument roles in three lines: counts, where the batch came from, tied tables.
pub(crate) fn arguments(o: &mut String, roles: &tpuport_analysis::roles::ArgRoles) {
    if roles.weights_in == tpuport_analysis::roles::WeightsIn::Initializers {
        let _ = writeln!(
            o,
            "inputs: {} data (the graph inputs); weights: {} initializers ({} parameters, {})",
            roles.data.args,
            roles.weights.args,
            si(roles.weights.elements),
            bytes(roles.weights.bytes)
        );
    } else {
        let _ = writeln!(
            o,
            "arguments: {} weight ({} parameters, {}), {} data, {} state ({} elements)",
            roles.weights.args,
            si(roles.weights.elements),
            bytes(roles.weights.bytes),
            roles.data.args,
            roles.state.args,
            si(roles.state.elements)
        );
    }
    if let Some(b) = roles.batch {
        let _ = writeln!(
            o,
            "  batch {b}{} from the {}",
            roles.sequence.map(|s| format!(", sequence {s},")).unwrap_or_default(),
            roles.batch_from.as_deref().unwrap_or("data arguments")
        );
    }
    let by: Vec<String> =
        roles.decided_by.iter().map(|(rule, n)| format!("{n} by {}", rule.describe())).collect();
    let _ = writeln!(o, "  decided: {}", by.join("; "));
    for t in roles.tied() {
        let _ = writeln!(
            o,
            "  tied: `{}` {:?} is read by gather and used as the output projection: one table, counted once",
            t.label(),
            t.shape.clone().unwrap_or_default()
        );
    }
}

fn summary(o: &mut String, r: &AuditReport) {
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
        if let Some(c) = &r.compiler {
            let _ = writeln!(o, "  {}", compiler_line(c));
        }
        let _ = writeln!(
            o,
            "  fits on {fits} ({chip}){}",
            if r.summary.unbound.is_some() {
                "; activations of unbound shapes are not counted"
            } else {
                ""
            }
        );
        if let (Some(s), Some(sps)) = (r.summary.step_s, r.summary.samples_per_s) {
            let _ = writeln!(
                o,
                "  estimated {} per step, {} samples/s per {chip} chip",
                duration(s),
                rate(sps)
            );
        }
        if let Some(why) = &r.summary.samples_per_s_refused
            && r.summary.unbound.is_none()
        {
            let _ = writeln!(o, "  samples/s not given: {why}");
        }
    }
    if let Some(u) = &r.summary.unbound {
        unbound(o, u);
    } else {
        flops(o, r);
    }
    let count = |l: Severity| r.findings.iter().filter(|f| f.severity == l).count();
    let (errors, warnings, infos) =
        (count(Severity::Error), count(Severity::Warning), count(Severity::Info));
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
}

/// The FLOP total of a full count.
fn flops(o: &mut String, r: &AuditReport) {
    let t = &r.cost.totals;
    let _ = writeln!(
        o,
        "  {} FLOPs per step ({} on the MXU), {} transcendentals, {} moved (fused estimate){}",
        si(t.flops),
        si(t.mxu_flops),
        si(t.transcendentals),
        bytes(t.fused_bytes),
        if r.batch == r.module_batch {
            String::new()
        } else {
            format!(" at the module's batch {}", r.module_batch)
        }
    );
}

/// A partial count: what is withheld, the dims to bind, the flags and the model's hint.
fn unbound(o: &mut String, u: &Unbound) {
    let _ = writeln!(
        o,
        "  no step time, samples/s, bound or FLOP total: {} of {} ops have unbound shapes and were not counted",
        u.ops_uncounted, u.ops
    );
    if u.dims.is_empty() {
        let _ = writeln!(
            o,
            "  their shapes depend on values computed in the graph, not on an input's dims: no flag binds them"
        );
        return;
    }
    let _ = writeln!(o, "  unbound dims: {}", u.dims_text());
    match (&u.flags, &u.hint) {
        (Some(f), Some(h)) => {
            let _ = writeln!(o, "  bind them: {f}  (sizes from the model's {h})");
        }
        (Some(f), None) => {
            let _ = writeln!(
                o,
                "  bind them: {f}  (no size hint found in the model's metadata or doc strings: N is the size you will run at)"
            );
        }
        (None, _) => {
            let _ = writeln!(
                o,
                "  a StableHLO module's shapes cannot be bound here: export it with static shapes"
            );
        }
    }
}

fn findings(o: &mut String, r: &AuditReport, paint: Paint) {
    for f in &r.findings {
        let (word, style) = severity(f.severity);
        let pad = " ".repeat(7usize.saturating_sub(word.len()));
        let _ = writeln!(o, "  {}{pad} {}  {}", paint.paint(word, style), f.code, f.title);
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

fn cost(o: &mut String, r: &AuditReport, paint: Paint) {
    if let Some(why) = &r.cost.partial {
        let _ = writeln!(o, "  partial count: {why}; the figures below are what was counted");
    }
    let t = &r.cost.totals;
    let mut tab = table(paint, [Column::left(""), Column::right("value")]);
    tab.row(["FLOPs (XLA convention)".to_owned(), si(t.flops)]);
    tab.row(["matmul+conv FLOPs (dense)".to_owned(), si(t.mxu_flops)]);
    tab.row(["transcendentals".to_owned(), si(t.transcendentals)]);
    tab.row(["bytes accessed (unfused)".to_owned(), bytes(t.bytes)]);
    tab.row(["bytes accessed (fused estimate)".to_owned(), bytes(t.fused_bytes)]);
    tab.row(["ops".to_owned(), format!("{} ({} uncounted)", t.ops, t.ops_uncounted)]);
    o.push_str(&tab.render());
    let mut tab = table(
        paint,
        [
            Column::left("op"),
            Column::left("node").max_width(48),
            Column::right("FLOPs"),
            Column::right("bytes"),
        ],
    );
    for op in r.cost.top_ops.iter().take(10).filter(|op| op.flops > 0) {
        tab.row([op.op.clone(), op.node.clone(), si(op.flops), bytes(op.bytes)]);
    }
    if !tab.is_empty() {
        let _ = writeln!(o, "  most expensive ops:");
        o.push_str(&tab.render());
    }
    for n in &r.cost.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

fn memory(o: &mut String, r: &AuditReport, paint: Paint) {
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
    let head = r.summary.chip.as_ref();
    if let Some((chip, f)) = r.memory.padded.iter().find(|(c, _)| Some(c) == head) {
        let _ = writeln!(
            o,
            "  HBM on one {chip} chip: {} = weights {} + inputs {} + activations {} (outputs, and what on-chip VMEM cannot hold; in the layouts the compiler picks)",
            bytes(f.inference),
            bytes(f.weights),
            bytes(f.inputs),
            bytes(f.hbm_activations)
        );
    }
    if let Some(c) = &r.compiler {
        let _ = writeln!(o, "  {}", compiler_line(c));
    }
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
        let numbers = ["weights", "grads", "optimizer", "activations", "total", "with remat"];
        let mut tab = table(
            paint,
            std::iter::once(Column::left("training")).chain(numbers.map(Column::right)),
        );
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
    let mut tab = table(
        paint,
        [
            Column::left("chip"),
            Column::right("padded need"),
            Column::right("HBM/chip"),
            Column::left("fits (replicated)"),
            Column::left("fits (sharded)"),
        ],
    );
    let slot = |s: &Option<String>, c: Option<u32>| match (s, c) {
        (Some(s), Some(c)) => format!("{s} ({c} chip{})", if c == 1 { "" } else { "s" }),
        _ => "no slice".to_owned(),
    };
    for f in &r.fits {
        tab.row([
            f.chip.clone(),
            bytes(f.state_bytes + f.batch_bytes),
            bytes(f.hbm_budget),
            slot(&f.replicated, f.replicated_chips),
            slot(&f.sharded, f.sharded_chips),
        ]);
    }
    o.push_str(&tab.render());
}

/// The compiler's verdict and figure next to the estimate, one line.
fn compiler_line(c: &CompilerCheck) -> String {
    let code = c.generated_code.map(|b| format!(" + {} code", bytes(b))).unwrap_or_default();
    let verdict = if c.compiler_fits {
        "fits".to_owned()
    } else {
        format!("DOES NOT FIT ({} available)", bytes(c.hbm_limit))
    };
    // Which verdict agrees: the fit, not the figure (the figure's gap is the percentage).
    let agree = if c.estimate_fits == c.compiler_fits {
        "the estimate's fit verdict agrees".to_owned()
    } else if c.estimate_fits {
        "the estimate's fit verdict differs (it said it fits)".to_owned()
    } else {
        "the estimate's fit verdict differs (it said it does not fit)".to_owned()
    };
    format!(
        "TPU compiler ({}, {} on {} device{}): {verdict}, {} per device in HBM{code}; estimate {} ({:+.1} %); {agree}",
        c.compiler,
        c.target,
        c.devices,
        if c.devices == 1 { "" } else { "s" },
        bytes(c.compiler_bytes),
        bytes(c.estimate_bytes),
        c.difference_pct
    )
}

fn layout(o: &mut String, r: &AuditReport, paint: Paint) {
    let numbers = ["MXU", "weights", "padded", "matmul operands", "padded", "MXU util"];
    let mut tab =
        table(paint, std::iter::once(Column::left("chip")).chain(numbers.map(Column::right)));
    for c in &r.layout.chips {
        tab.row([
            c.chip.clone(),
            c.mxu_size.to_string(),
            bytes(c.weights_logical),
            bytes(c.weights_padded),
            bytes(c.operands_logical),
            bytes(c.operands_padded),
            percent(c.mxu_utilization),
        ]);
    }
    o.push_str(&tab.render());
    if let Some(k) = &r.compiler {
        let _ = writeln!(
            o,
            "  layouts checked against the TPU compiler: {} of {} weights confirmed{}",
            k.layouts_confirmed,
            k.layouts_checked,
            if k.restated.is_empty() {
                String::new()
            } else {
                "; restated with the compiler's layout:".to_owned()
            }
        );
        for x in k.restated.iter().take(5) {
            let _ = writeln!(
                o,
                "    {} {:?}: estimate {} {}, compiler {} {}",
                shorten(&x.name, 40),
                x.shape,
                x.estimate_layout,
                bytes(x.estimate_bytes),
                x.compiler_layout,
                bytes(x.compiler_bytes)
            );
        }
    }
    let head = r.summary.chip.as_ref().and_then(|h| r.layout.chips.iter().find(|c| &c.chip == h));
    let Some(c) = head else { return };
    if !c.worst_matmuls.is_empty() {
        let _ = writeln!(o, "  worst matmuls on {} (MXU work lost to padding):", c.chip);
        for m in c.worst_matmuls.iter().take(5) {
            let _ = writeln!(
                o,
                "    {} [m={} k={} n={}] {} util{}",
                shorten(&m.node, 40),
                m.dims.m,
                m.dims.k,
                m.dims.n,
                percent(m.utilization),
                m.fix.as_ref().map(|f| format!(": {f}")).unwrap_or_default()
            );
        }
    }
    if !c.worst_tensors.is_empty() {
        let _ = writeln!(o, "  worst padded tensors on {}:", c.chip);
        for t in c.worst_tensors.iter().take(5) {
            let _ = writeln!(
                o,
                "    {} {}{:?} as {}{}: {} -> {}",
                shorten(&t.name, 40),
                t.dtype.name(),
                t.shape,
                t.layout,
                if t.layout_source == "compiler" { " (compiler)" } else { "" },
                bytes(t.logical_bytes),
                bytes(t.padded_bytes)
            );
        }
    }
}

fn roofline(o: &mut String, r: &AuditReport, paint: Paint) {
    if let Some(why) = &r.roofline.withheld {
        let _ = writeln!(o, "  not estimated: {why}");
        return;
    }
    let mut tab = table(
        paint,
        [
            Column::left("chip"),
            Column::right("step"),
            Column::right("samples/s"),
            Column::left("bound"),
            Column::right("compute-bound from"),
            Column::right("USD / 1M samples"),
        ],
    );
    for c in &r.roofline.chips {
        tab.row([
            c.chip.clone(),
            duration(c.step_s),
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_analysis::audit::{self, AuditOptions};
    use tpuport_analysis::compiler_check::{CompiledTensor, CompilerFacts, CompilerInput};
    use tpuport_analysis::{Optimizer, Workload};
    use tpuport_formats::ImportOptions;

    use super::*;
    use crate::style::strip_ansi;

    fn report(workload: Workload) -> AuditReport {
        report_with(workload, None, CompilerInput::NotAsked)
    }

    fn report_with(
        workload: Workload,
        slice: Option<&str>,
        compiler: CompilerInput,
    ) -> AuditReport {
        let path = tpuport_testkit::repo_root().join("crates/tpuport/tests/data/audit_small.mlir");
        let model = tpuport_formats::open(&path, &ImportOptions::default()).unwrap();
        let catalog = tpuport_hw::Catalog::builtin();
        let opts = AuditOptions {
            workload,
            optimizer: Optimizer::AdamW,
            batch: None,
            slice: slice.map(|s| catalog.slice(s).unwrap()),
            onnx_lowering: None,
            roles: None,
            dims: Vec::new(),
            compiler,
        };
        let found = audit::findings(&model, &opts);
        audit::audit("tests/data/audit_small.mlir", &model, &catalog, &opts, found)
    }

    /// A compiler answer for the small module: it refuses for lack of HBM, and lays the first
    /// weight out with twice the bytes the estimate predicts.
    #[test]
    fn compiler_check_is_rendered_and_restates_a_contradicted_layout() {
        let plain = report_with(Workload::Infer, Some("v5e-8"), CompilerInput::NotAsked);
        let first = plain.layout.chips[0].tensors[0].clone();
        let facts = CompilerFacts {
            compiler: "libtpu 0.0.52".into(),
            target: "v5e-8".into(),
            chip: "v5e".into(),
            devices: 1,
            compile_ms: 10.0,
            fits: false,
            hbm_bytes: 20 << 30,
            generated_code: None,
            hbm_limit: Some(16_911_433_728),
            message: Some("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom".into()),
            parameters: vec![CompiledTensor {
                name: first.name.trim_start_matches('%').to_owned(),
                shard: Some(first.shape.clone()),
                layout: Some(format!("{{{}:T(8,128)}}", {
                    let r: Vec<String> =
                        (0..first.shape.len()).rev().map(|d| d.to_string()).collect();
                    r.join(",")
                })),
                device_bytes: Some(first.padded_bytes * 2),
            }],
        };
        let r = report_with(Workload::Infer, Some("v5e-8"), CompilerInput::Answered(facts));
        let c = r.compiler.as_ref().unwrap();
        assert!(!c.compiler_fits && c.estimate_fits);
        assert_eq!((c.layouts_checked, c.layouts_confirmed, c.restated.len()), (1, 0, 1));
        let t = &r.layout.chips[0].tensors[0];
        assert_eq!((t.layout_source, t.padded_bytes), ("compiler", first.padded_bytes * 2));
        assert_eq!(r.summary.top_fixes[0].source, "compiler");
        let text = render_text(&r, Paint::PLAIN);
        assert!(
            text.contains("TPU compiler (libtpu 0.0.52, v5e-8 on 1 device): DOES NOT FIT"),
            "{text}"
        );
        assert!(text.contains("the estimate's fit verdict differs (it said it fits)"), "{text}");
        assert!(text.contains("0 of 1 weights confirmed; restated"), "{text}");
        // Without libtpu: one note, the estimate only.
        let r = report_with(
            Workload::Infer,
            Some("v5e-8"),
            CompilerInput::Unavailable("libtpu not found".into()),
        );
        assert!(r.compiler.is_none());
        let notes: Vec<&String> = r.notes.iter().filter(|n| n.starts_with("not checked")).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("libtpu not found"));
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render_text(&report(Workload::Infer), Paint::PLAIN));
    }

    #[test]
    fn text_report_training_snapshot() {
        insta::assert_snapshot!(render_text(&report(Workload::Train), Paint::PLAIN));
    }

    #[test]
    fn json_report_snapshot() {
        insta::assert_json_snapshot!(report(Workload::Infer));
    }

    #[test]
    fn colour_only_decorates() {
        let r = report(Workload::Train);
        let plain = render_text(&r, Paint::PLAIN);
        let coloured = render_text(&r, Paint::new(true));
        assert!(!plain.contains('\u{1b}'));
        assert!(coloured.contains("\u{1b}[1mSummary\u{1b}[0m"), "{coloured}");
        assert_eq!(strip_ansi(&coloured), plain);
    }
}
