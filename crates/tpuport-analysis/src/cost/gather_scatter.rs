//! Gathers and scatters. A gather only moves data (see [`super::data`]); a scatter applies its
//! combiner once per update element: `updates · body FLOPs` (`select_and_scatter` likewise).

use super::{Cx, OpClass, OpCost, Site, data, elems};

pub(super) fn cost(cx: &mut Cx<'_>, s: &mut Site<'_>, c: &mut OpCost) {
    if s.op.starts_with("gather") {
        data::cost(s, c);
        return;
    }
    c.class = OpClass::Reduction;
    let updates = s.n.inputs.iter().flatten().last().and_then(|v| elems(s.g, *v));
    c.flops = updates.unwrap_or(0).saturating_mul(cx.body_flops(s.n).max(1));
}
