//! PRF101: steps that wait for input.

use super::ctx::{duration_us, median};
use super::{Ctx, Draft, Rule, Severity, Sink};

/// Input share (percent of step time) from which a run is "highly" input-bound (xprof).
const HIGH: f64 = 20.0;
/// Input share from which a run is "moderately" input-bound (xprof).
const MODERATE: f64 = 5.0;

tpuport_codes::documented! {
    /// ## What it finds
    /// Steps that spend a large share of their time waiting for the next batch: from a trace's
    /// step markers (`ProfilerStep#N` from `torch.profiler`, `jax.profiler.StepTraceAnnotation`
    /// or the device `Steps` line) and the data-loading time inside each step.
    ///
    /// Data loading is the union of the `enumerate(DataLoader)#…__next__` spans (PyTorch),
    /// `Iterator::…` (tf.data), infeed enqueues and host-to-device copies of GPU traces. In a
    /// JAX loop over a Python generator there is no loader event: there the Python functions
    /// that run between two step annotations and whose names read like data loading
    /// (`batch`, `data`, `load`, `next`, `iter`, `fetch`, `read`, `sample`, …) count.
    ///
    /// The thresholds are xprof's input-pipeline analyzer's: at least 20% of the step time is
    /// "highly input-bound" (reported as an error), at least 5% "moderately" (a warning). The
    /// share is the median step's, so that one step in which the process was descheduled
    /// inside the loader does not decide; steps slow for other reasons are PRF502's.
    ///
    /// ## Why it hurts on TPU
    /// A TPU step is milliseconds. A loader that keeps up with a GPU often cannot keep up with
    /// a TPU, and every millisecond the host spends decoding, augmenting or collating is a
    /// millisecond the chips idle; adding chips makes the share worse.
    ///
    /// ## What to do
    /// Load in parallel and ahead of the step: `DataLoader(num_workers=N, persistent_workers=True)`
    /// and `MpDeviceLoader` on torch_xla, `.prefetch(tf.data.AUTOTUNE)` and parallel `map` in
    /// tf.data, a background-thread prefetcher (or Grain) in JAX. Move per-sample Python work
    /// (the function named in the finding) out of the step path: precompute, cache, or do it
    /// on the device.
    ///
    /// ## References
    /// - xprof `op_stats_to_input_pipeline_analysis.cc` (thresholds and classes)
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    pub(crate) struct InputBound;
}

impl Rule for InputBound {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, t) in &cx.ev.traces {
            if t.steps.is_empty() {
                continue;
            }
            let total: f64 = t.steps.iter().map(|s| s.dur_us).sum();
            let input: f64 = t.steps.iter().map(|s| s.input_us).sum();
            if total <= 0.0 {
                continue;
            }
            // The median step decides: one step where the process was descheduled inside the
            // loader must not make a fast pipeline look input-bound.
            let mut shares: Vec<f64> =
                t.steps.iter().filter(|s| s.dur_us > 0.0).map(|s| 100.0 * s.input_us / s.dur_us).collect();
            shares.sort_by(f64::total_cmp);
            let pct = median(&shares);
            let overall = 100.0 * input / total;
            let (class, severity) = if pct >= HIGH {
                ("highly", Severity::Error)
            } else if pct >= MODERATE {
                ("moderately", Severity::Warning)
            } else {
                continue;
            };
            let kinds = if t.input.kinds.is_empty() { "data loading".to_owned() } else { t.input.kinds.join(", ") };
            let n = t.steps.len();
            let mut details = vec![format!(
                "{} of {} ({overall:.1}%) over {n} step(s) marked by `{}` was data loading ({kinds})",
                duration_us(input),
                duration_us(total),
                t.step_marker.as_deref().unwrap_or("steps"),
            )];
            let worst = t.steps.iter().filter(|s| s.dur_us > 0.0).max_by(|a, b| (a.input_us / a.dur_us).total_cmp(&(b.input_us / b.dur_us)));
            if let Some(w) = worst {
                details.push(format!(
                    "worst step{}: {:.1}% ({} of {})",
                    w.num.map(|n| format!(" {n}")).unwrap_or_default(),
                    100.0 * w.input_us / w.dur_us,
                    duration_us(w.input_us),
                    duration_us(w.dur_us)
                ));
            }
            for (f, us) in &t.input.functions {
                details.push(format!("user code inside data loading: {} for {}", f, duration_us(*us)));
            }
            // Where: the loop that pulls the batch, else the heaviest user function inside.
            let functions: Vec<_> = t.input.functions.iter().map(|(f, _)| f.clone()).collect();
            let (location, related) = match &t.input.loop_site {
                Some(site) => (Some(site.clone()), functions),
                None => {
                    let mut it = functions.into_iter();
                    (it.next(), it.collect())
                }
            };
            sink.emit(Draft {
                title: format!("{class} input-bound: {pct:.1}% of step time waits for input"),
                message: format!(
                    "the program is {} input-bound: the median step spends {pct:.1}% of its time waiting for input (xprof's classes: >= {HIGH}% highly, >= {MODERATE}% moderately)",
                    class.to_ascii_uppercase()
                ),
                location,
                related,
                details,
                evidence: vec![path.clone()],
                fix: Some("load ahead of the step: more DataLoader workers / MpDeviceLoader, tf.data prefetch, a prefetching iterator; move per-sample Python work out of the step path".to_owned()),
                severity: Some(severity),
                ..Draft::default()
            });
        }
    }
}
