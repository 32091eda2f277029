//! PRF501: step-time statistics.

use super::ctx::{duration_us, median};
use super::{Ctx, Draft, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Step-time statistics of a trace: the number of steps, their median, mean, 90th
    /// percentile, fastest and slowest, measured from one step marker's start to the next
    /// (`ProfilerStep#N`, a `StepTraceAnnotation`, or the device `Steps` line). Always
    /// reported when a trace has steps; informational.
    ///
    /// ## Why it matters on TPU
    /// The median step time is the figure to compare across runs, batch sizes and chips; a
    /// mean far above the median means some steps are much slower (PRF502).
    ///
    /// ## What to do
    /// Compare against `tpuport audit`'s predicted step time for the same model and slice; a
    /// step far slower than predicted is input-, host- or compile-bound (see the other
    /// findings), not compute-bound.
    ///
    /// ## References
    /// - torch `torch/profiler/profiler.py` (`ProfilerStep#N`)
    /// - jax `jax/_src/profiler.py` (`StepTraceAnnotation`)
    pub(crate) struct StepTime;
}

/// Step durations of a trace, µs, sorted.
pub(crate) fn sorted_durations(t: &crate::TraceSummary) -> Vec<f64> {
    let mut d: Vec<f64> = t.steps.iter().map(|s| s.dur_us).filter(|d| *d > 0.0).collect();
    d.sort_by(f64::total_cmp);
    d
}

impl Rule for StepTime {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, t) in &cx.ev.traces {
            let d = sorted_durations(t);
            if d.is_empty() {
                continue;
            }
            #[allow(clippy::cast_precision_loss, reason = "counts")]
            let mean = d.iter().sum::<f64>() / d.len() as f64;
            let p90 = d[((d.len() - 1) as f64 * 0.9).round() as usize];
            let med = median(&d);
            sink.emit(Draft {
                title: format!("{} steps, median {}", d.len(), duration_us(med)),
                message: format!(
                    "{} steps: median {}, mean {}, p90 {}, min {}, max {}",
                    d.len(),
                    duration_us(med),
                    duration_us(mean),
                    duration_us(p90),
                    duration_us(d[0]),
                    duration_us(d[d.len() - 1])
                ),
                details: vec![format!("steps marked by `{}`", t.step_marker.as_deref().unwrap_or("?"))],
                evidence: vec![path.clone()],
                ..Draft::default()
            });
        }
    }
}
