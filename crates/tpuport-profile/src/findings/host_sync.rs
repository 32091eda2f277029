//! PRF301: reading device values on the host inside the step loop.

use std::collections::BTreeMap;

use super::{Ctx, Draft, Rule, Sink};
use crate::frames::Frame;
use crate::text::xla_debug::{AnalysisKind, Cause};

tpuport_codes::documented! {
    /// ## What it finds
    /// A device value read on the host again and again: `PT_XLA_DEBUG` execution analyses
    /// whose cause is "user code trying to access tensor value" (with the user's line), the
    /// metrics report's `aten::_local_scalar_dense` counter (`.item()`) and
    /// `TransferFromDeviceTime` samples per `MarkStep` (torch_xla flags more than 0.5 per
    /// step), and in traces `aten::_local_scalar_dense` (torch.profiler) or buffer-to-literal
    /// copies (TSL) with the Python line that called them.
    ///
    /// In a CPU-only torch.profiler trace the read is cheap, but the same line blocks on a TPU:
    /// it is reported so it is fixed before the move.
    ///
    /// ## Why it hurts on TPU
    /// torch_xla and JAX queue device work asynchronously. Reading a value (`.item()`,
    /// `float(loss)`, `print(loss)`, `.cpu()`, `np.asarray(x)`) stops the host until the device
    /// has finished everything queued, then copies the value back; on torch_xla it also cuts
    /// the graph there, compiling and running an extra graph. Once per step, the host and the
    /// device take turns instead of overlapping.
    ///
    /// ## What to do
    /// Keep metrics on the device and read them every N steps (`if step % 100 == 0`), or use
    /// `xm.add_step_closure` / `jax.debug.callback` / async checkpoint-style logging.
    ///
    /// ## References
    /// - pytorch/xla `docs/source/learn/troubleshoot.md` (`_local_scalar_dense`, execution analysis)
    /// - pytorch/xla `torch_xla/csrc/runtime/metrics_analysis.cpp` (TransferFromDeviceTime rule)
    pub(crate) struct HostSync;
}

/// The `check` rule that matches the code on a line, when it is recognisable.
pub(crate) fn rules_for_line(text: &str) -> Option<Vec<&'static str>> {
    let table: [(&str, &'static str); 9] = [
        (".item(", "TPU201"),
        (".cpu(", "TPU202"),
        (".numpy(", "TPU203"),
        (".tolist(", "TPU204"),
        ("print(", "TPU205"),
        ("float(", "TPU206"),
        ("int(", "TPU206"),
        ("np.asarray(", "TPU703"),
        ("device_get(", "TPU703"),
    ];
    let mut out: Vec<&'static str> = Vec::new();
    for (pat, rule) in table {
        if text.contains(pat) && !out.contains(&rule) {
            out.push(rule);
        }
    }
    (!out.is_empty()).then_some(out)
}

fn per_step(count: u64, steps: Option<u64>) -> String {
    match steps {
        #[allow(clippy::cast_precision_loss, reason = "counts")]
        Some(s) if s > 0 => format!(" ({:.1} per step over {s} steps)", count as f64 / s as f64),
        _ => String::new(),
    }
}

impl Rule for HostSync {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let mut located = false;
        for (path, log) in &cx.ev.xla_debug {
            let level_one = !log.analyses.iter().any(|a| a.kind == AnalysisKind::Execution);
            let wanted = if level_one { AnalysisKind::Compilation } else { AnalysisKind::Execution };
            let mut sites: BTreeMap<Option<Frame>, u64> = BTreeMap::new();
            for a in log.analyses.iter().filter(|a| a.kind == wanted && a.cause == Cause::TensorValueAccess) {
                *sites.entry(a.user_frame().cloned()).or_default() += 1;
            }
            let steps = cx.mark_steps(path).or_else(|| {
                let n = log
                    .analyses
                    .iter()
                    .filter(|a| a.kind == wanted && matches!(a.cause, Cause::UserSync | Cause::ParallelLoaderStepEnd | Cause::StepTraceExit))
                    .count() as u64;
                (n > 0).then_some(n)
            });
            for (frame, count) in sites {
                if count < 2 {
                    continue;
                }
                located |= frame.is_some();
                let at = frame.as_ref().map_or_else(|| "user code".to_owned(), ToString::to_string);
                let rules = frame.as_ref().and_then(|f| cx.line_text(f)).and_then(|t| rules_for_line(&t));
                let what = if level_one { "compilations" } else { "executions" };
                sink.emit(Draft {
                    title: format!("tensor value read on the host {count} times at {at}"),
                    message: format!(
                        "{count} graph {what} were forced by reading a tensor value on the host{}: each one waits for the device and cuts the graph",
                        per_step(count, steps)
                    ),
                    location: frame,
                    details: vec![format!("cause: {}", Cause::TensorValueAccess.text())],
                    evidence: vec![path.clone()],
                    check_rules: rules,
                    fix: Some("keep the value on the device and read it every N steps (or in xm.add_step_closure)".to_owned()),
                    ..Draft::default()
                });
            }
        }
        if !located {
            metrics(cx, sink);
        }
        traces(cx, sink, located);
    }
}

/// torch_xla without a located debug-log finding: the metrics report's counters.
fn metrics(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
    for (path, m) in &cx.ev.metrics {
        let steps = m.counter("MarkStep");
        let scalar = m.counter("aten::_local_scalar_dense").unwrap_or(0);
        let transfers = m.metric("TransferFromDeviceTime").map_or(0, |t| t.samples);
        #[allow(clippy::cast_precision_loss, reason = "counts")]
        let frequent = steps.is_some_and(|s| s > 0 && transfers as f64 / s as f64 > 0.5);
        if scalar < 2 && !frequent {
            continue;
        }
        // The unlowered-op summary of a debug log names the lines of `_local_scalar_dense`.
        let site = cx
            .ev
            .xla_debug
            .iter()
            .flat_map(|(_, l)| l.unlowered.iter())
            .filter_map(|s| s.frames.iter().find(|f| f.is_user()))
            .find(|f| cx.line_text(f).and_then(|t| rules_for_line(&t)).is_some())
            .cloned();
        let rules = site.as_ref().and_then(|f| cx.line_text(f)).and_then(|t| rules_for_line(&t));
        let mut details = Vec::new();
        if scalar > 0 {
            details.push(format!("aten::_local_scalar_dense (.item() and scalar reads): {scalar}{}", per_step(scalar, steps)));
        }
        details.push(format!("TransferFromDeviceTime samples: {transfers}{}", per_step(transfers, steps)));
        sink.emit(Draft {
            title: format!("{} device-to-host reads", scalar.max(transfers)),
            message: format!(
                "the metrics report counts {transfers} device-to-host transfers{} and {scalar} scalar reads: the host waits for the device inside the step",
                per_step(transfers, steps)
            ),
            location: site,
            details,
            evidence: vec![path.clone()],
            check_rules: rules,
            fix: Some("run with PT_XLA_DEBUG_LEVEL=2 to see the line of each read; keep values on the device".to_owned()),
            ..Draft::default()
        });
    }
}

/// Trace syncs; those without a Python line are left out when a debug log already located the
/// reads (the same run's trace and log in one folder).
fn traces(cx: &Ctx<'_>, sink: &mut Sink<'_>, located: bool) {
    for (path, t) in &cx.ev.traces {
        let steps = (!t.steps.is_empty()).then_some(t.steps.len() as u64);
        for s in &t.syncs {
            let enough = s.count >= 2 && steps.is_none_or(|n| s.count * 2 >= n);
            if !enough || (located && s.frame.is_none()) {
                continue;
            }
            let at = s.frame.as_ref().map_or_else(|| "an unknown line (no Python frames in the trace)".to_owned(), ToString::to_string);
            let rules = s.frame.as_ref().and_then(|f| cx.line_text(f)).and_then(|t| rules_for_line(&t));
            sink.emit(Draft {
                title: format!("{} host reads of device values at {at}", s.count),
                message: format!(
                    "`{}` ran {} times{}, called from {at}: on an accelerator each one blocks the host until the device catches up",
                    s.op,
                    s.count,
                    per_step(s.count, steps)
                ),
                location: s.frame.clone(),
                evidence: vec![path.clone()],
                check_rules: rules,
                fix: Some("keep the value on the device and read it every N steps".to_owned()),
                ..Draft::default()
            });
        }
    }
}
