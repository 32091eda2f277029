//! PRF502: steps much slower than the median.

use super::ctx::{duration_us, median};
use super::step_time::sorted_durations;
use super::{Ctx, Draft, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Steps of a trace that took more than twice the median step time (the factor is
    /// `--outlier-factor`). The first step is left out: it usually holds a compilation.
    /// Informational: on a shared machine a single slow step can be noise, a pattern (every
    /// Nth step) is not.
    ///
    /// ## Why it hurts on TPU
    /// Periodic slow steps are host work that stops the loop: a checkpoint written inside the
    /// step loop, evaluation, logging that reads device values, or a recompilation for an odd
    /// batch.
    ///
    /// ## What to do
    /// Look at what runs on those step numbers: make checkpoints asynchronous (Orbax async
    /// checkpointing, `torch_xla` distributed checkpointing), move evaluation off the training
    /// loop's critical path, pad the odd batch.
    ///
    /// ## References
    /// - [Cloud TPU performance guide](https://cloud.google.com/tpu/docs/performance-guide)
    pub(crate) struct SlowSteps;
}

impl Rule for SlowSteps {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let factor = cx.opts.outlier_factor.max(1.0);
        for (path, t) in &cx.ev.traces {
            if t.steps.len() < 3 {
                continue;
            }
            let med = median(&sorted_durations(t));
            if med <= 0.0 {
                continue;
            }
            let slow: Vec<String> = t
                .steps
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(_, s)| s.dur_us > factor * med)
                .map(|(i, s)| {
                    format!(
                        "step {}: {} ({:.1}× median)",
                        s.num.map_or_else(|| format!("#{i}"), |n| n.to_string()),
                        duration_us(s.dur_us),
                        s.dur_us / med
                    )
                })
                .collect();
            if slow.is_empty() {
                continue;
            }
            sink.emit(Draft {
                title: format!("{} step(s) slower than {factor}× the median", slow.len()),
                message: format!("{} of {} steps took more than {factor}× the median step time ({})", slow.len(), t.steps.len(), duration_us(med)),
                details: slow.into_iter().take(10).collect(),
                evidence: vec![path.clone()],
                ..Draft::default()
            });
        }
    }
}
