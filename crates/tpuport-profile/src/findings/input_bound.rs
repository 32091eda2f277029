//! PRF101: steps in which the device waits on the host.

use super::ctx::{duration_us, median};
use super::{Ctx, Draft, Rule, Severity, Sink};
use crate::frames::Frame;
use crate::trace::TraceSummary;

/// Share of the step (percent) from which a run is "highly" input-bound: xprof's
/// `kHighlyInfeedBoundThresholdInPercent`.
const HIGH: f64 = 20.0;
/// Share from which a run is "moderately" input-bound: xprof's
/// `kModeratelyInfeedBoundThresholdInPercent`.
const MODERATE: f64 = 5.0;

tpuport_codes::documented! {
    /// ## What it finds
    /// Steps in which the device sits idle while the host loads the next batch or runs other
    /// code outside the step's device work: the loader's wait, whatever its function is
    /// called, measured from the trace's own device and host timelines.
    ///
    /// The steps are the trace's step markers (`ProfilerStep#N` from `torch.profiler`,
    /// `jax.profiler.StepTraceAnnotation`), each from its start to the next one's, the way a
    /// TPU's device `Steps` line runs. The device timeline is the XLA ops (the `XLA Ops` and
    /// `XLA Modules` lines of a `/device:TPU:N` process, `hlo_op` events), XLA:CPU's program
    /// executions (`ThunkExecutor::Execute`), GPU kernels, and in a CPU-only PyTorch trace the
    /// aten ops (there the CPU is the device). Each instant of a step goes to one cause, in
    /// xprof's order of priority: the device computing; the host in named data loading
    /// (`enumerate(DataLoader)…__next__`, tf.data `Iterator::…`, infeed, host-to-device
    /// copies); the host outside the step's device work, on the thread with the step
    /// markers: before the step's first dispatch (`PjitFunction(…)`, an aten op…) or after
    /// its last, inside a Python call that launches nothing (a generator, a `pull()`, a
    /// `queue.get` waiting on a prefetch thread, a `time.sleep`), or, in a trace without
    /// Python frames, any such time. Python between two dispatches of one step (an eager
    /// model's glue) and dispatch itself are overhead of the step, not input.
    ///
    /// The two input causes together, as a share of the median step, are classed with
    /// xprof's input-pipeline thresholds: at least 20% is "highly input-bound" (an error), at
    /// least 5% "moderately" (a warning). xprof counts as input only its named input events
    /// and sums over the steps sampled; a Chrome trace's loader is often plain Python, so its
    /// time counts too when the device idles through it, and the median step decides so that
    /// one step in which the process was descheduled does not (slow steps are PRF502's).
    ///
    /// ## Why it hurts on TPU
    /// A TPU step is milliseconds. A loader that keeps up with a GPU often cannot keep up with
    /// a TPU, and every millisecond the host spends decoding, augmenting or collating is a
    /// millisecond the chips idle; adding chips makes the share worse.
    ///
    /// ## What to do
    /// Load in parallel and ahead of the step: `DataLoader(num_workers=N, persistent_workers=True)`
    /// and `MpDeviceLoader` on torch_xla, `.prefetch(tf.data.AUTOTUNE)` and parallel `map` in
    /// tf.data, a background-thread prefetcher (or Grain) in JAX that stays ahead of the step.
    /// Move per-sample Python work (the function named in the finding) out of the step path:
    /// precompute, cache, or do it on the device. In JAX, do not block on every step's result
    /// (`block_until_ready`, `float(loss)`) so the next batch loads while the device computes.
    ///
    /// ## References
    /// - xprof [`op_stats_to_input_pipeline_analysis.cc`](https://github.com/openxla/xprof/blob/a27d00aa95eb5cc4f4e1a0fd56b4c89261685ec5/xprof/convert/op_stats_to_input_pipeline_analysis.cc)
    ///   at `a27d00a`: `kHighlyInfeedBoundThresholdInPercent = 20` and
    ///   `kModeratelyInfeedBoundThresholdInPercent = 5` (lines 100-101, `InputAnalysis`);
    ///   TPU idle time given to input in proportion to the host's input time
    ///   (`MayFixTpuStepAnalysis`); idle not given to input is "host overhead" from
    ///   `kTcIdleThresholdInPercent = 3` (not reported here)
    /// - xprof [`event_span.h`](https://github.com/openxla/xprof/blob/a27d00aa95eb5cc4f4e1a0fd56b4c89261685ec5/xprof/utils/event_span.h):
    ///   the priority of event types in a step (device compute over host-wait-input over host
    ///   compute and unknown time)
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    pub(crate) struct InputBound;
}

impl Rule for InputBound {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, t) in &cx.ev.traces {
            if let Some(d) = draft(t) {
                sink.emit(Draft { evidence: vec![path.clone()], ..d });
            }
        }
    }
}

/// The finding for one trace, when its median step waits on the host for 5% or more.
fn draft(t: &TraceSummary) -> Option<Draft> {
    let steps: Vec<_> = t.steps.iter().filter(|s| s.dur_us > 0.0).collect();
    let total: f64 = steps.iter().map(|s| s.dur_us).sum();
    if total <= 0.0 {
        return None;
    }
    let share = |s: &crate::trace::Step| 100.0 * (s.input_us + s.host_us) / s.dur_us;
    // The median step decides: one step where the process was descheduled inside the loader
    // must not make a fast pipeline look input-bound.
    let mut shares: Vec<f64> = steps.iter().map(|s| share(s)).collect();
    shares.sort_by(f64::total_cmp);
    let pct = median(&shares);
    let (class, severity) = if pct >= HIGH {
        ("highly", Severity::Error)
    } else if pct >= MODERATE {
        ("moderately", Severity::Warning)
    } else {
        return None;
    };
    let named: f64 = steps.iter().map(|s| s.input_us).sum();
    let host: f64 = steps.iter().map(|s| s.host_us).sum();
    let mut causes = Vec::new();
    if named > 0.0 {
        let kinds =
            if t.input.kinds.is_empty() { "data loading".to_owned() } else { t.input.kinds.join(", ") };
        causes.push(format!("in {kinds} for {}", duration_us(named)));
    }
    if host > 0.0 {
        causes.push(format!("outside the step's device work for {}", duration_us(host)));
    }
    let n = steps.len();
    let mut details = vec![format!(
        "the device idled while the host was {}: {:.1}% of {} over {n} step(s) marked by `{}`",
        causes.join(" and "),
        100.0 * (named + host) / total,
        duration_us(total),
        t.step_marker.as_deref().unwrap_or("steps"),
    )];
    let mut busy: Vec<f64> =
        steps.iter().filter_map(|s| s.device_us.map(|d| 100.0 * d / s.dur_us)).collect();
    if let Some(timeline) = &t.device_timeline
        && !busy.is_empty()
    {
        busy.sort_by(f64::total_cmp);
        details.push(format!(
            "the device is busy {:.1}% of the median step (device timeline: {timeline})",
            median(&busy)
        ));
    }
    if let Some(w) = steps.iter().max_by(|a, b| share(a).total_cmp(&share(b))) {
        details.push(format!(
            "worst step{}: {:.1}% ({} of {})",
            w.num.map(|n| format!(" {n}")).unwrap_or_default(),
            share(w),
            duration_us(w.input_us + w.host_us),
            duration_us(w.dur_us)
        ));
    }
    for h in &t.input.host_functions {
        let from = h.caller.as_ref().map(|c| format!(", called from {c}")).unwrap_or_default();
        details.push(format!(
            "host work while the device idled: {} for {}{from}",
            h.frame,
            duration_us(h.us)
        ));
    }
    for (f, us) in &t.input.functions {
        details.push(format!("user code inside data loading: {} for {}", f, duration_us(*us)));
    }
    let (location, related) = place(t, host > named);
    Some(Draft {
        title: format!("{class} input-bound: the device waits on the host {pct:.1}% of the step"),
        message: format!(
            "the program is {} input-bound: in the median step the device idles {pct:.1}% of the time while the host loads input or runs code outside the step (xprof's classes: >= {HIGH}% highly, >= {MODERATE}% moderately)",
            class.to_ascii_uppercase()
        ),
        location,
        related,
        details,
        fix: Some("load ahead of the step: more DataLoader workers / MpDeviceLoader, tf.data prefetch, a prefetching iterator that stays ahead; move per-sample Python work out of the step path".to_owned()),
        severity: Some(severity),
        ..Draft::default()
    })
}

/// Where: for named data loading, the loop line that pulls the batch (else the heaviest user
/// function inside it); for host work, the heaviest user function of it (else the user line
/// that called it).
fn place(t: &TraceSummary, host_first: bool) -> (Option<Frame>, Vec<Frame>) {
    let inside: Vec<Frame> = t.input.functions.iter().map(|(f, _)| f.clone()).collect();
    let mut host: Vec<Frame> = Vec::new();
    for h in &t.input.host_functions {
        let f = if h.frame.is_user() { Some(&h.frame) } else { h.caller.as_ref() };
        if let Some(f) = f
            && !host.contains(f)
        {
            host.push(f.clone());
        }
    }
    if let Some(top) = t.input.host_functions.first()
        && top.frame.is_user()
        && let Some(c) = &top.caller
    {
        host.insert(1.min(host.len()), c.clone());
    }
    let named_place = |rest: Vec<Frame>| match &t.input.loop_site {
        Some(site) => (Some(site.clone()), [inside.clone(), rest].concat()),
        None => {
            let mut it = inside.iter().cloned().chain(rest);
            (it.next(), it.collect())
        }
    };
    if host_first && !host.is_empty() {
        let mut it = host.into_iter();
        let first = it.next();
        (first, it.chain(inside.iter().cloned()).collect())
    } else {
        named_place(host)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::trace::read_str;

    /// A TSL trace of `steps` JAX steps: each step's annotation holds a dispatch and a wait,
    /// the device computes `device` µs on another thread, and `load` µs of a Python call named
    /// `refill` run between the annotations.
    fn jax_like(steps: u32, device: f64, load: f64) -> String {
        let mut ev = String::from(
            r#"{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[
            {"ph":"M","pid":1,"name":"process_name","args":{"name":"/host:CPU"}},
            {"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"python"}},
            {"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"tf_XLAPjRtCpuClient"}},"#,
        );
        let mut t = 0.0;
        for i in 0..steps {
            if load > 0.0 {
                ev.push_str(&format!(
                    r#"{{"ph":"X","pid":1,"tid":1,"ts":{t},"dur":{load},"name":"$train.py:10 refill"}},"#
                ));
            }
            t += load;
            let step = device + 60.0;
            ev.push_str(&format!(
                r#"{{"ph":"X","pid":1,"tid":1,"ts":{t},"dur":{step},"name":"train","args":{{"step_num":"{i}"}}}},
                {{"ph":"X","pid":1,"tid":1,"ts":{},"dur":20,"name":"PjitFunction(step)"}},
                {{"ph":"X","pid":1,"tid":2,"ts":{},"dur":{device},"name":"ThunkExecutor::Execute"}},
                {{"ph":"X","pid":1,"tid":2,"ts":{},"dur":{},"name":"fusion","args":{{"hlo_op":"fusion","hlo_module":"jit_step"}}}},
                {{"ph":"X","pid":1,"tid":1,"ts":{},"dur":{},"name":"CommonPjRtBuffer::Await"}},"#,
                t + 5.0,
                t + 30.0,
                t + 30.0,
                device / 2.0,
                t + 30.0,
                device + 5.0,
            ));
            t += step + 5.0;
        }
        ev.push_str("{}]}");
        ev
    }

    #[test]
    fn a_loader_of_any_name_between_steps_is_input() {
        // 40 steps of ~48 ms, 5 ms of device work each: the issue's loop.
        let t = read_str(&jax_like(40, 5_000.0, 42_900.0));
        let d = draft(&t).unwrap();
        assert_eq!(d.severity, Some(Severity::Error), "{}", d.title);
        assert!(d.title.starts_with("highly input-bound"), "{}", d.title);
        let loc = d.location.unwrap();
        assert_eq!((loc.file.as_str(), loc.line), ("train.py", 10));
        assert!(d.details.iter().any(|l| l.contains("XLA:CPU program executions")), "{:?}", d.details);
        // A loader taking ~10% of the step is moderately input-bound.
        let t = read_str(&jax_like(40, 30_000.0, 3_400.0));
        assert_eq!(draft(&t).unwrap().severity, Some(Severity::Warning));
    }

    #[test]
    fn a_device_bound_loop_and_dispatch_overhead_are_silent() {
        // No loader at all, and the device busy through most of each step.
        assert!(draft(&read_str(&jax_like(40, 30_000.0, 0.0))).is_none());
        // A tiny step (60 µs of dispatch and waiting around 30 µs of device work) idles the
        // device half the time, but inside the step's own dispatch: not input.
        assert!(draft(&read_str(&jax_like(40, 30.0, 2.0))).is_none());
    }
}
