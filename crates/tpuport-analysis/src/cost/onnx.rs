//! ONNX ops: the cost rule their registry entry names ([`CostRule`]), mapped to the formula
//! that implements it. The `match` has no wildcard arm: a rule added to the registry does not
//! compile until it is counted here.

use tpuport_model::ops::OpFamily;
use tpuport_model::ops::onnx::{CostRule, OnnxOp};

use super::{
    Cx, OpClass, OpCost, Site, attention, composite, contraction, control, convolution, data,
    elementwise, gather_scatter, other, recurrent, reduction, resize, sort,
};

pub(super) fn cost(cx: &mut Cx<'_>, op: &OnnxOp, s: &mut Site<'_>, c: &mut OpCost) {
    match op.cost {
        CostRule::None => other::cost(cx, s, c),
        CostRule::Data => data::cost(s, c),
        CostRule::PerElement { flops, transcendentals } => {
            let class = if op.family == OpFamily::Elementwise {
                OpClass::Elementwise
            } else {
                OpClass::Composite
            };
            elementwise::per_element(s, c, class, flops, transcendentals);
        }
        CostRule::Variadic => elementwise::variadic(s, c),
        CostRule::Normalization => composite::normalization(s, c),
        CostRule::Lrn => composite::lrn(s, c),
        CostRule::Rotary => composite::rotary(s, c),
        CostRule::SwiGlu => composite::swiglu(s, c),
        CostRule::Loss => composite::loss(s, c),
        CostRule::MatMul => contraction::cost(cx, s, c),
        CostRule::Einsum => contraction::einsum(s, c),
        CostRule::Conv | CostRule::ConvTranspose => convolution::cost(s, c),
        CostRule::Attention => attention::onnx(s, c),
        CostRule::FusedAttention => attention::fused(s, c),
        CostRule::Recurrent => recurrent::cost(s, c),
        CostRule::Resize => resize::cost(cx, s, c),
        CostRule::Pool => reduction::pool(s, c, false),
        CostRule::AveragePool => reduction::pool(s, c, true),
        CostRule::Reduce => reduction::onnx(s, c, 0, 0),
        CostRule::ReduceMean => reduction::onnx(s, c, 1, 0),
        CostRule::ReduceSquares => reduction::onnx(s, c, 0, 1),
        CostRule::Cumulative => reduction::cumulative(s, c),
        CostRule::Scatter => gather_scatter::scatter(cx, s, c),
        CostRule::Sort => sort::cost(s, c),
        CostRule::Loop => control::repeat(cx, s, c),
        CostRule::If => control::branches(cx, s, c),
    }
}
