//! PRF601: where the op time goes.

use super::ctx::duration_us;
use super::{Ctx, Draft, Rule, Sink};
use crate::trace::OpDomain;

tpuport_codes::documented! {
    /// ## What it finds
    /// The ops that took the most time in a trace: device ops when the trace has them (XLA
    /// ops named by `hlo_op`, the `XLA Ops` line of a TPU, GPU kernels and copies), else the
    /// self time of host `aten::` ops in a CPU-only torch.profiler trace. Informational.
    ///
    /// ## Why it matters on TPU
    /// The top of this list is where optimisation pays: a matmul-heavy list is the expected
    /// shape of a healthy step, while copies, transposes, gathers/scatters or small
    /// element-wise fusions at the top point to layout and fusion problems.
    ///
    /// ## What to do
    /// For TPU traces, open the same profile in XProf's op profile for FLOP utilisation per op;
    /// for a CPU trace, run `tpuport audit` on the model for predicted TPU op costs.
    ///
    /// ## References
    /// - openxla/xprof (op profile, trace viewer)
    pub(crate) struct TopOps;
}

impl Rule for TopOps {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        for (path, t) in &cx.ev.traces {
            let Some(domain) = t.op_domain else { continue };
            if t.top_ops.is_empty() || t.op_total_us <= 0.0 {
                continue;
            }
            let what = match domain {
                OpDomain::Device => "device op time",
                OpDomain::Host => "host op self time (CPU-only trace)",
            };
            let details: Vec<String> = t
                .top_ops
                .iter()
                .take(cx.opts.top_ops)
                .map(|o| {
                    format!(
                        "{:>5.1}%  {}  {} ×{}{}",
                        100.0 * o.total_us / t.op_total_us,
                        duration_us(o.total_us),
                        o.name,
                        o.count,
                        o.module.as_ref().map(|m| format!("  [{m}]")).unwrap_or_default()
                    )
                })
                .collect();
            let first = &t.top_ops[0];
            sink.emit(Draft {
                title: format!("top op: {} ({:.1}% of {what})", first.name, 100.0 * first.total_us / t.op_total_us),
                message: format!("{} of {what}; the largest ops:", duration_us(t.op_total_us)),
                details,
                evidence: vec![path.clone()],
                ..Draft::default()
            });
        }
    }
}
