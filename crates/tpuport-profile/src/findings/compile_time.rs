//! PRF203: how much of the run went to compiling.

use super::ctx::duration_us;
use super::{Ctx, Draft, Rule, Severity, Sink};
use crate::text::metrics::MetricValue;

/// A single compilation longer than this is "too slow" (torch_xla's auto-analysis, 300 s).
const SLOW_COMPILE_NS: f64 = 300e9;

tpuport_codes::documented! {
    /// ## What it finds
    /// The time spent compiling, next to the time spent executing: from the metrics report
    /// (`CompileTime` and `ExecuteTime` accumulators), from a JAX log (the `Finished tracing`,
    /// `jaxpr to MLIR` and `XLA compilation` times, and persistent-cache hits and misses), and
    /// from a trace (compile events against the trace's length). Informational, except when
    /// one compilation took more than 300 s (torch_xla's own "CompileTime too slow" rule).
    ///
    /// ## Why it hurts on TPU
    /// A short run is dominated by compilation and that is expected. In a long run, compile
    /// time that keeps growing is recompilation (see PRF201); a single very slow compilation
    /// is often a huge unrolled graph (a Python loop traced into the step).
    ///
    /// ## What to do
    /// Compare with the run length: recompilation is PRF201's finding. For slow compiles,
    /// roll Python loops into `lax.scan` / `fori_loop` (or `torch_xla` `scan`), and turn on
    /// the persistent compilation cache (`jax.config.update("jax_compilation_cache_dir", …)`,
    /// `torch_xla.runtime.initialize_cache(…)`) so restarts do not recompile.
    ///
    /// ## References
    /// - pytorch/xla `torch_xla/csrc/runtime/metrics_analysis.cpp` (300 s rule)
    /// - jax `docs/persistent_compilation_cache.md`
    pub(crate) struct CompileTime;
}

impl Rule for CompileTime {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, m) in &cx.ev.metrics {
            let Some(c) = m.metric("CompileTime") else { continue };
            let compile_ns = c.accumulator.map_or(0.0, MetricValue::raw);
            let exec_ns = m.metric("ExecuteTime").and_then(|e| e.accumulator).map_or(0.0, MetricValue::raw);
            let longest = c.top_percentile().map(|(_, v)| v.raw());
            let mut details = vec![format!(
                "CompileTime: {} sample(s), {}; ExecuteTime: {}",
                c.samples,
                duration_us(compile_ns / 1e3),
                duration_us(exec_ns / 1e3)
            )];
            if let Some(l) = longest {
                details.push(format!("longest compilation (top percentile): {}", duration_us(l / 1e3)));
            }
            let slow = longest.is_some_and(|l| l > SLOW_COMPILE_NS);
            let share = if compile_ns + exec_ns > 0.0 { 100.0 * compile_ns / (compile_ns + exec_ns) } else { 0.0 };
            sink.emit(Draft {
                title: format!("compiling took {share:.0}% of compile + execute time"),
                message: format!(
                    "{} compilation(s) took {}, execution {}",
                    c.samples,
                    duration_us(compile_ns / 1e3),
                    duration_us(exec_ns / 1e3)
                ),
                details,
                evidence: vec![path.clone()],
                severity: slow.then_some(Severity::Warning),
                ..Draft::default()
            });
        }
        for (path, log) in &cx.ev.xla_debug {
            if let Some(t) = &log.warnings.compile_too_slow {
                sink.emit(Draft {
                    title: "a compilation took more than 300 s".to_owned(),
                    message: format!("torch_xla's auto-analysis: CompileTime too slow, longest instance took {t}"),
                    evidence: vec![path.clone()],
                    severity: Some(Severity::Warning),
                    fix: Some("look for a Python loop unrolled into the graph; use scan or split the graph".to_owned()),
                    ..Draft::default()
                });
            }
        }
        for (path, log) in &cx.ev.jax {
            if log.compiles.is_empty() {
                continue;
            }
            let (hits, misses) = log.persistent_cache;
            let mut details = vec![format!(
                "tracing {:.3} s, lowering to MLIR {:.3} s, XLA compilation {:.3} s",
                log.tracing_s, log.lowering_s, log.compile_s
            )];
            if hits + misses > 0 {
                details.push(format!("persistent compilation cache: {hits} hit(s), {misses} miss(es)"));
            }
            sink.emit(Draft {
                title: format!("{} compilation(s), {:.2} s", log.compiles.len(), log.tracing_s + log.lowering_s + log.compile_s),
                message: format!(
                    "JAX compiled {} module(s): {:.3} s tracing + lowering + compiling",
                    log.compiles.len(),
                    log.tracing_s + log.lowering_s + log.compile_s
                ),
                details,
                evidence: vec![path.clone()],
                ..Draft::default()
            });
        }
        for (path, t) in &cx.ev.traces {
            if t.compiles.count == 0 || t.span_us <= 0.0 {
                continue;
            }
            let share = 100.0 * t.compiles.total_us / t.span_us;
            sink.emit(Draft {
                title: format!("compiling took {share:.0}% of the trace"),
                message: format!(
                    "{} compilation(s) took {} of the {} trace",
                    t.compiles.count,
                    duration_us(t.compiles.total_us),
                    duration_us(t.span_us)
                ),
                evidence: vec![path.clone()],
                ..Draft::default()
            });
        }
    }
}
