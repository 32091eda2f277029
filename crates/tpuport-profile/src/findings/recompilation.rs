//! PRF201: the same graph or function compiled again and again.

use std::collections::BTreeMap;

use super::eager_ops::is_primitive;
use super::{Ctx, Draft, Rule, Sink};
use crate::frames::Frame;
use crate::text::jax_log::MissReason;
use crate::text::xla_debug::{AnalysisKind, Cause};

/// Dynamic-shape rules of `check`, for torch_xla and JAX shape changes.
const SHAPE_RULES: &[&str] = &["TPU101", "TPU102", "TPU104", "TPU105", "TPU106", "TPU107", "TPU109"];

tpuport_codes::documented! {
    /// ## What it finds
    /// A graph compiled many times during the run: in a `PT_XLA_DEBUG` log, the compilations
    /// triggered from the same user line with the same cause (each with a new `Graph Hash`); in
    /// a JAX log (`jax_log_compiles`), a jitted function compiled again and again, with
    /// `jax_explain_cache_misses`' reason (`different input types: * at x, now f32[12,16] and
    /// before f32[8,16]`, or a function re-created on every call). Without a debug log, the
    /// metrics report's `CompileTime` samples against `MarkStep` (torch_xla's own rule: more
    /// than one compilation per two steps after ten steps) and the distinct graph hashes of
    /// a torch_xla trace count.
    ///
    /// A site is reported from its third compilation: the first is expected and a second one
    /// during warm-up (optimizer state appearing) is common.
    ///
    /// ## Why it hurts on TPU
    /// XLA compiles one program per distinct set of input shapes (and per graph structure).
    /// Compiling takes seconds to minutes on TPU and the step waits for it; a shape that
    /// changes every few steps (a last partial batch, per-batch padding, `nonzero`, boolean
    /// masks) means the run spends its time in the compiler.
    ///
    /// ## What to do
    /// Make shapes static: `drop_last=True`, pad to fixed buckets, `nonzero(size=…)` /
    /// `jnp.where(mask, x, 0)` instead of boolean indexing; in JAX, create the jitted function
    /// once outside the loop and mark true configuration arguments `static_argnums`. The
    /// location is where the graph was cut (torch_xla) or the call of the jitted function
    /// (JAX); the shape itself usually comes from the data pipeline.
    ///
    /// ## References
    /// - pytorch/xla `docs/source/learn/troubleshoot.md` (compilation analysis, graph hashes)
    /// - jax `docs/debugging/slow_tracing_compilation.md` (`explain_cache_misses`)
    pub(crate) struct Recompilation;
}

impl Rule for Recompilation {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let min = cx.opts.recompile_min.max(2);
        let mut from_debug = false;
        for (path, log) in &cx.ev.xla_debug {
            // Group compilations by (user frame, cause).
            let mut groups: BTreeMap<(Option<Frame>, String), Vec<usize>> = BTreeMap::new();
            for (i, a) in log.analyses.iter().enumerate() {
                if a.kind == AnalysisKind::Compilation {
                    groups.entry((a.user_frame().cloned(), a.cause.text().to_owned())).or_default().push(i);
                }
            }
            let total = groups.values().map(Vec::len).sum::<usize>();
            for ((frame, cause), idx) in groups {
                if idx.len() < min {
                    continue;
                }
                from_debug = true;
                let mut hashes: Vec<&str> = idx.iter().map(|&i| log.analyses[i].graph_hash.as_str()).collect();
                hashes.sort_unstable();
                hashes.dedup();
                let io: Vec<String> = idx
                    .iter()
                    .map(|&i| {
                        let a = &log.analyses[i];
                        format!("{}→{}", a.inputs.map_or("?".to_owned(), |n| n.to_string()), a.outputs.map_or("?".to_owned(), |n| n.to_string()))
                    })
                    .collect();
                let mut details = vec![
                    format!("cause: {cause}"),
                    format!("{} distinct graph hashes: {}", hashes.len(), hashes.iter().take(6).copied().collect::<Vec<_>>().join(", ")),
                    format!("graph inputs→outputs per compilation: {}", io.join(", ")),
                ];
                if let Some(steps) = cx.mark_steps(path) {
                    details.push(format!("{total} compilations in the log over {steps} steps (MarkStep)"));
                }
                let at = frame.as_ref().map_or_else(|| "one graph site".to_owned(), |f| f.to_string());
                let mut rules = SHAPE_RULES.to_vec();
                if cause == Cause::TensorValueAccess.text() {
                    rules.extend(["TPU201", "TPU206"]);
                }
                sink.emit(Draft {
                    title: format!("graph compiled {} times from {at}", idx.len()),
                    message: format!(
                        "torch_xla compiled {} different graphs ({} times) at {at}: the graph changes between steps, most often because an input shape does",
                        hashes.len(),
                        idx.len()
                    ),
                    location: frame,
                    details,
                    evidence: vec![path.clone()],
                    check_rules: Some(rules),
                    fix: Some("keep shapes static (drop_last, fixed padding buckets, no nonzero/boolean masks) so one graph is compiled once".to_owned()),
                    ..Draft::default()
                });
            }
        }
        if !from_debug {
            xla_counters(cx, sink, min);
        }
        jax(cx, sink, min);
    }
}

/// torch_xla without a debug log: metrics report, `pt-xla-profiler` lines, trace graph hashes.
fn xla_counters(cx: &Ctx<'_>, sink: &mut Sink<'_>, min: usize) {
    for (path, m) in &cx.ev.metrics {
        let (Some(steps), Some(compiles)) = (m.counter("MarkStep"), m.metric("CompileTime").map(|c| c.samples)) else {
            continue;
        };
        // torch_xla's rule (metrics_analysis.cpp): after 10 steps, > 0.5 compilations per step.
        #[allow(clippy::cast_precision_loss, reason = "counts")]
        let frequent = steps >= 10 && compiles as f64 / steps as f64 > 0.5;
        if frequent && compiles as usize >= min {
            sink.emit(Draft {
                title: format!("{compiles} compilations in {steps} steps"),
                message: format!("the metrics report counts {compiles} CompileTime samples over {steps} MarkStep steps (torch_xla flags more than 0.5 per step after 10 steps): graphs are being recompiled"),
                details: m.counter("UncachedCompile").map(|u| vec![format!("UncachedCompile: {u}, CachedCompile: {}", m.counter("CachedCompile").unwrap_or(0))]).unwrap_or_default(),
                evidence: vec![path.clone()],
                check_rules: Some(SHAPE_RULES.to_vec()),
                fix: Some("run with PT_XLA_DEBUG_LEVEL=1 to see the line and cause of each compilation".to_owned()),
                ..Draft::default()
            });
            return;
        }
    }
    for (path, log) in &cx.ev.xla_debug {
        if let Some((n, steps)) = log.warnings.compile_too_frequent
            && n as usize >= min
        {
            sink.emit(Draft {
                title: format!("{n} compilations in {steps} steps"),
                message: format!("torch_xla's auto-analysis: CompileTime too frequent ({n} counts during {steps} steps)"),
                evidence: vec![path.clone()],
                check_rules: Some(SHAPE_RULES.to_vec()),
                fix: Some("run with PT_XLA_DEBUG_LEVEL=1 to see the line and cause of each compilation".to_owned()),
                ..Draft::default()
            });
            return;
        }
    }
    for (path, t) in &cx.ev.traces {
        let distinct = t.compiles.graph_hashes.len();
        if distinct >= min {
            sink.emit(Draft {
                title: format!("{distinct} different graphs compiled"),
                message: format!(
                    "the trace holds {} compilations of {distinct} different torch_xla graphs (XLAGraphExecutor::Compile graph hashes)",
                    t.compiles.count
                ),
                details: t.compiles.graph_hashes.iter().take(6).map(|(h, n)| format!("{h}: {n}×")).collect(),
                evidence: vec![path.clone()],
                check_rules: Some(SHAPE_RULES.to_vec()),
                fix: Some("run with PT_XLA_DEBUG_LEVEL=1 to see the line and cause of each compilation".to_owned()),
                ..Draft::default()
            });
        }
    }
}

fn jax(cx: &Ctx<'_>, sink: &mut Sink<'_>, min: usize) {
    for (path, log) in &cx.ev.jax {
        let mut by_fn: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, c) in log.compiles.iter().enumerate() {
            if !is_primitive(&c.function) {
                by_fn.entry(c.function.as_str()).or_default().push(i);
            }
        }
        for (fun, idx) in by_fn {
            if idx.len() < min {
                continue;
            }
            let misses: Vec<_> = log.misses.iter().filter(|m| m.function == fun).collect();
            // The call site most misses came from.
            let mut sites: BTreeMap<&Frame, usize> = BTreeMap::new();
            for m in &misses {
                if let Some(s) = &m.callsite {
                    *sites.entry(s).or_default() += 1;
                }
            }
            let site = sites.iter().max_by_key(|(f, n)| (**n, std::cmp::Reverse(**f))).map(|(f, _)| (*f).clone());
            let defined = misses.iter().find_map(|m| m.defined_at.clone());
            let redefined = misses.iter().any(|m| m.reason == MissReason::NeverSeen { redefined: true });
            let types = misses.iter().filter(|m| m.reason == MissReason::InputTypes).count();
            let mut details: Vec<String> = misses
                .iter()
                .flat_map(|m| m.details.iter().map(|d| format!("changed: {d}")))
                .take(6)
                .collect();
            let compile_s: f64 = idx.iter().filter_map(|&i| log.compiles[i].compile_s).sum();
            details.push(format!("{} compilation(s), {compile_s:.3} s in XLA", idx.len()));
            for &i in idx.iter().take(6) {
                details.push(format!("compiled for {}", log.compiles[i].shapes));
            }
            let (why, rules) = if redefined {
                ("the jitted function is re-created on every call (jax.jit or a lambda inside the loop)", vec!["TPU701"])
            } else if types > 0 {
                ("its input shapes or dtypes change between calls", SHAPE_RULES.to_vec())
            } else {
                ("its cache key changes between calls (run with JAX_EXPLAIN_CACHE_MISSES=1 for the reason)", SHAPE_RULES.to_vec())
            };
            sink.emit(Draft {
                title: format!("`{fun}` compiled {} times", idx.len()),
                message: format!("JAX compiled `{fun}` {} times: {why}", idx.len()),
                location: site,
                related: defined.into_iter().collect(),
                details,
                evidence: vec![path.clone()],
                check_rules: Some(rules),
                fix: Some("pad inputs to a few fixed shapes (or bucket them), keep jax.jit outside loops, and pass configuration through static_argnums".to_owned()),
                ..Draft::default()
            });
        }
    }
}
