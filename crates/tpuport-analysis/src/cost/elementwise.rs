//! Elementwise ops: one FLOP per output element for arithmetic, compare, select and convert;
//! transcendental functions (exp, log, tanh, sqrt, pow, erf, sin, …) count one transcendental
//! per element and no FLOPs, as XLA's `HloCostAnalysis` does. ONNX ops name their counts in
//! the registry (`PerElement { flops, transcendentals }`, which also covers the composite
//! activations); ONNX's n-ary `Sum` / `Mean` / `Max` / `Min` count one FLOP per extra operand.

use crate::taxonomy;

use super::{OpClass, OpCost, Site};

/// A StableHLO / CHLO elementwise op, by the taxonomy's transcendental property.
pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    if taxonomy::lookup(&s.op).is_transcendental() {
        per_element(s, c, OpClass::Elementwise, 0, 1);
    } else {
        per_element(s, c, OpClass::Elementwise, 1, 0);
    }
}

/// `flops` FLOPs and `transcendentals` transcendentals per output element.
pub(super) fn per_element(
    s: &Site<'_>,
    c: &mut OpCost,
    class: OpClass,
    flops: u8,
    transcendentals: u8,
) {
    c.class = class;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    c.flops = e.saturating_mul(u64::from(flops));
    c.transcendentals = e.saturating_mul(u64::from(transcendentals));
}

/// ONNX `Sum` / `Mean` / `Max` / `Min`: one FLOP per output element per extra operand (at
/// least one).
pub(super) fn variadic(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Elementwise;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    let extra = s.n.inputs.iter().flatten().count().saturating_sub(1).max(1);
    c.flops = e.saturating_mul(u64::try_from(extra).unwrap_or(u64::MAX));
}
