//! Gathers and scatters. A gather only moves data (see [`super::data`]); a scatter applies its
//! combiner once per update element: `updates · body FLOPs` (`select_and_scatter` likewise;
//! ONNX scatters have no body: one op per update).

use super::{Cx, OpClass, OpCost, Site, data, elems};

/// The StableHLO gathers and scatters.
pub(super) fn cost(cx: &mut Cx<'_>, s: &mut Site<'_>, c: &mut OpCost) {
    if s.op.starts_with("gather") {
        data::cost(s, c);
        return;
    }
    scatter(cx, s, c);
}

/// A scatter: its combiner once per update (the last operand's elements).
pub(super) fn scatter(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Reduction;
    let updates = s.n.inputs.iter().flatten().last().and_then(|v| elems(s.g, *v));
    c.flops = updates.unwrap_or(0).saturating_mul(cx.body_flops(s.n).max(1));
}
