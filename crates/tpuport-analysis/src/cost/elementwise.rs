//! Elementwise ops: one FLOP per output element for arithmetic, compare, select and convert
//! (ONNX's n-ary `Sum` / `Mean` / `Max` / `Min`: one per extra operand); transcendental
//! functions (exp, log, tanh, sqrt, pow, erf, sin, …) count one transcendental per element and
//! no FLOPs, as XLA's `HloCostAnalysis` does.

use crate::taxonomy;

use super::{OpClass, OpCost, Site};

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Elementwise;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    if taxonomy::lookup(&s.op).is_transcendental() {
        c.transcendentals = e;
        return;
    }
    c.flops = match s.op.as_str() {
        "sum" | "mean" | "max" | "min" => {
            let extra = s.n.inputs.iter().flatten().count().saturating_sub(1).max(1);
            e.saturating_mul(u64::try_from(extra).unwrap_or(u64::MAX))
        }
        _ => e,
    };
}
