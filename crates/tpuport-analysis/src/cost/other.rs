//! Ops with no cost rule (custom calls, collectives, unknown ONNX ops): no FLOPs, and a report
//! note per op name. A model-local ONNX function is costed through its body instead, and
//! Shardy (`sdy.*`) annotations in StableHLO are not reported.

use tpuport_model::ModelFormat;

use super::{CostStatus, Cx, OpClass, OpCost, Site, Uncounted};

pub(super) fn cost(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Other;
    let n = s.n;
    let key = if n.domain.is_empty() { n.op.clone() } else { format!("{}::{}", n.domain, n.op) };
    if let Some(f) =
        cx.model.functions.iter().find(|f| f.name == key || f.name.starts_with(&format!("{key}:")))
    {
        c.class = OpClass::Control;
        cx.graph(f, &format!("{}/", s.name), s.repeats, s.depth + 1);
    } else if cx.model.format == ModelFormat::Onnx || !n.op.starts_with("sdy.") {
        *cx.unknown_ops.entry(n.op.clone()).or_default() += 1;
        c.status = CostStatus::Uncounted(Uncounted::NoRule);
    }
}
