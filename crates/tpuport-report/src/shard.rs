//! Text form of `tpuport shard`: the chosen mesh, memory per chip, collectives, the runners-up,
//! the specs by parameter role, what was not recognised, and notes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tpuport_analysis::shard::{Axis, Candidate, ShardPlan};

use crate::human::{bytes, duration, si, thousands};
use crate::{Align, Paint, Style, Table};

fn spec_text(spec: &[Option<Axis>]) -> String {
    let parts: Vec<&str> = spec.iter().map(|a| a.map_or("-", Axis::as_str)).collect();
    format!("[{}]", parts.join(", "))
}

fn mesh_text(c: &Candidate) -> String {
    let m = &c.mesh;
    format!("data={} fsdp={} tensor={}", m.data, m.fsdp, m.tensor)
}

/// Renders a plan for the terminal.
#[must_use]
pub fn render_text(model: &str, plan: &ShardPlan, paint: Paint) -> String {
    let mut out = String::new();
    let title = |out: &mut String, t: &str| {
        out.push('\n');
        out.push_str(&paint.paint(t, Style::Bold));
        out.push('\n');
    };
    let opt = plan.optimizer.map(|o| format!(", {o}")).unwrap_or_default();
    let _ = writeln!(
        out,
        "{model} on {} ({}, {}, {} chips): {}{opt}",
        plan.slice, plan.accelerator_type, plan.topology, plan.chips, plan.workload
    );
    let d = &plan.model;
    let mut facts = vec![format!("{} parameters ({} stored)", si(d.params), bytes(d.bytes))];
    if let Some(l) = d.layers {
        facts.push(format!("{l} layers"));
    }
    if let Some(h) = d.hidden {
        facts.push(format!("hidden {h}"));
    }
    if let Some(v) = d.vocab {
        let head = if d.tied_head {
            " (tied head)"
        } else if d.head {
            ""
        } else {
            " (no head: the graph only looks it up)"
        };
        facts.push(format!("vocab {v}{head}"));
    }
    if let Some(h) = d.heads {
        let kv = d.kv_heads.filter(|k| *k != h).map(|k| format!(" ({k} KV)")).unwrap_or_default();
        facts.push(format!("{h} heads{kv}"));
    }
    let _ = writeln!(out, "model: {}", facts.join(", "));
    let _ = writeln!(
        out,
        "batch {} x seq {}, parameters {}, activations {}",
        plan.batch, plan.seq, plan.param_dtype, plan.compute_dtype
    );

    let c = &plan.chosen;
    let m = &c.memory;
    let verdict = if plan.fits() {
        paint.paint("fits", Style::Green)
    } else {
        paint.paint("does not fit", Style::Red)
    };
    title(&mut out, "Plan");
    // With `--verify`, the compiler's figure is the plan's memory; the count is shown beside.
    let per_chip = match &plan.verified {
        Some(v) => format!(
            "{} per chip by {} (counted {})",
            bytes(v.compiler_bytes),
            v.compiler,
            bytes(m.total)
        ),
        None => format!("{} per chip", bytes(m.total)),
    };
    let _ = writeln!(
        out,
        "  {} on mesh {}: {per_chip} of {}, {verdict}",
        c.strategy,
        mesh_text(c),
        bytes(m.budget)
    );
    match plan.batch_spec.first() {
        Some(Some(axes)) => {
            let over = axes.iter().map(|a| a.as_str()).collect::<Vec<_>>().join("+");
            let _ = writeln!(out, "  activations: batch split over {over}");
        }
        _ => {
            let _ =
                writeln!(out, "  activations: batch not split (every chip sees the whole batch)");
        }
    }

    title(&mut out, "Memory per chip");
    let mut t = Table::new(&[], &[Align::Left, Align::Right, Align::Left]);
    t.row(["weights".to_owned(), bytes(m.weights), String::new()]);
    if plan.optimizer.is_some() {
        t.row(["gradients".to_owned(), bytes(m.gradients), String::new()]);
        t.row(["optimizer state".to_owned(), bytes(m.optimizer), "f32".to_owned()]);
        let (chosen, other) = if m.remat {
            (m.activations_remat, format!("full remat; {} without", bytes(m.activations)))
        } else {
            (m.activations, format!("no remat; {} with full remat", bytes(m.activations_remat)))
        };
        t.row(["activations".to_owned(), bytes(chosen), other]);
    } else {
        t.row(["activations".to_owned(), bytes(m.activations), "one layer + logits".to_owned()]);
    }
    if m.fsdp_gathered > 0 {
        t.row([
            "fsdp gathered".to_owned(),
            bytes(m.fsdp_gathered),
            "largest layer whole (+ its gradient)".to_owned(),
        ]);
    }
    t.row(["tiling padding".to_owned(), bytes(m.padding), String::new()]);
    t.row(["total".to_owned(), bytes(m.total), format!("budget {}", bytes(m.budget))]);
    out.push_str(&t.render());

    if let Some(v) = &plan.verified {
        title(&mut out, "Verified by the TPU compiler");
        if v.fits {
            let _ = writeln!(
                out,
                "  {} compiled the plan over {} devices in {:.1} s: {} per chip (arguments + \
                 outputs + temporaries), {:.2}x the plan's {}",
                v.compiler,
                v.devices,
                v.compile_ms / 1e3,
                bytes(v.compiler_bytes),
                v.ratio,
                bytes(v.plan_bytes)
            );
        } else {
            let _ = writeln!(
                out,
                "  {} refused the plan for lack of HBM: it needs {} per chip ({:.2}x the plan's {}): {}",
                v.compiler,
                bytes(v.compiler_bytes),
                v.ratio,
                bytes(v.plan_bytes),
                paint.paint("does not fit", Style::Red)
            );
            if let Some(msg) = &v.message {
                let _ = writeln!(out, "  compiler: {msg}");
            }
        }
        if !v.unplanned.is_empty() {
            let shown: Vec<&str> = v.unplanned.iter().take(5).map(String::as_str).collect();
            let _ = writeln!(
                out,
                "  {} program parameter{} the plan does not count, compiled replicated: {}{} \
                 ({} per chip); without {}: {:.2}x the plan",
                v.unplanned.len(),
                if v.unplanned.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if v.unplanned.len() > 5 { ", …" } else { "" },
                bytes(v.unplanned_bytes),
                if v.unplanned.len() == 1 { "it" } else { "them" },
                v.compiler_bytes.saturating_sub(v.unplanned_bytes) as f64
                    / v.plan_bytes.max(1) as f64
            );
        }
    }

    title(&mut out, "Per step, per chip");
    let k = &c.comms;
    let mut t = Table::new(&[], &[Align::Left, Align::Right, Align::Left]);
    t.row(["all-gather".to_owned(), bytes(k.all_gather_bytes), String::new()]);
    t.row(["reduce-scatter".to_owned(), bytes(k.reduce_scatter_bytes), String::new()]);
    t.row(["all-reduce".to_owned(), bytes(k.all_reduce_bytes), String::new()]);
    t.row([
        "ICI time".to_owned(),
        duration(k.overlappable_s + k.exposed_s),
        format!("{} exposed (tensor axis)", duration(k.exposed_s)),
    ]);
    t.row([
        "compute".to_owned(),
        duration(c.compute.time_s),
        format!("{:.3e} FLOP at bf16 peak", c.compute.flops),
    ]);
    t.row(["step (predicted)".to_owned(), duration(c.step_time_s), String::new()]);
    out.push_str(&t.render());

    if !plan.runners_up.is_empty() {
        title(&mut out, "Runners-up");
        let mut t = Table::new(
            &["strategy", "mesh", "per chip", "fits", "step"],
            &[Align::Left, Align::Left, Align::Right, Align::Left, Align::Right],
        );
        for r in &plan.runners_up {
            t.row([
                r.strategy.clone(),
                mesh_text(r),
                bytes(r.memory.total),
                if r.fits { "yes" } else { "no" }.to_owned(),
                duration(r.step_time_s),
            ]);
        }
        out.push_str(&t.render());
    }

    if let Some(s) = &plan.serving {
        serving(&mut out, s, paint);
    }

    title(&mut out, "Specs by role");
    let mut groups: BTreeMap<(String, String), (u64, u64, &str)> = BTreeMap::new();
    for p in &plan.params {
        let e = groups.entry((p.kind.as_str().to_owned(), spec_text(&p.spec))).or_insert((
            0,
            0,
            p.name.as_str(),
        ));
        e.0 += 1;
        e.1 += p.local_bytes;
    }
    let mut t = Table::new(
        &["role", "spec", "tensors", "per chip", "first"],
        &[Align::Left, Align::Left, Align::Right, Align::Right, Align::Left],
    );
    for ((kind, spec), (n, b, first)) in &groups {
        t.row([kind.clone(), spec.clone(), thousands(*n), bytes(*b), (*first).to_owned()]);
    }
    out.push_str(&t.render());

    if !plan.unrecognised.is_empty() {
        title(
            &mut out,
            &format!("Not recognised by name ({}), placed by shape", plan.unrecognised.len()),
        );
        for n in plan.unrecognised.iter().take(10) {
            let _ = writeln!(out, "  {n}");
        }
        if plan.unrecognised.len() > 10 {
            let _ = writeln!(
                out,
                "  … and {} more (--format json lists them)",
                plan.unrecognised.len() - 10
            );
        }
    }
    if !plan.notes.is_empty() {
        title(&mut out, "Notes");
        for n in &plan.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    out
}

/// The KV-cache serving plan, one row per tensor-parallel degree.
fn serving(out: &mut String, s: &tpuport_analysis::shard::serving::Serving, paint: Paint) {
    out.push('\n');
    out.push_str(&paint.paint(
        &format!(
            "Serving (vLLM-style: context {}, memory utilization {}, KV {} B per value)",
            s.context, s.utilization, s.kv_dtype_bytes
        ),
        Style::Bold,
    ));
    out.push('\n');
    let mut t = Table::new(
        &[
            "TP",
            "replicas",
            "weights/chip",
            "KV/token/chip",
            "cache tokens",
            "sequences",
            "decode tok/s (1 seq)",
            "decode tok/s (slice, full)",
            "prefill",
            "fits",
        ],
        &[
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for r in &s.rows {
        let mark = if s.best == Some(r.tp) { " (best)" } else { "" };
        t.row([
            r.tp.to_string(),
            r.replicas.to_string(),
            bytes(r.weights_per_chip),
            bytes(r.kv_per_token_per_chip),
            thousands(r.cache_tokens),
            thousands(r.sequences),
            format!("{:.0}", r.decode_tokens_per_s_batch1),
            format!("{:.0}", r.decode_tokens_per_s_full),
            duration(r.prefill_ms / 1e3),
            format!("{}{mark}", if r.fits { "yes" } else { "no" }),
        ]);
    }
    out.push_str(&t.render());
    if s.best.is_none() {
        out.push_str(
            "  no tensor-parallel degree fits the weights and one sequence of this context here",
        );
        match &s.nearest {
            Some(n) => {
                let _ = writeln!(out, "; {} ({} chips) does, at TP {}", n.slice, n.chips, n.tp);
            }
            None => out.push_str("; no larger slice of this chip does either\n"),
        }
    }
}
