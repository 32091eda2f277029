//! Composite ops, expanded to the elementwise work XLA does for them (per output element `n`).
//!
//! StableHLO: `batch_norm_inference` `2n`, `batch_norm_training` `7n`, SiLU `3n` and `n`
//! transcendentals. ONNX composites with a fixed count per element (Softmax `4n` and `n`,
//! LogSoftmax `4n` and `2n`, BatchNormalization `2n`, Gelu `4n` and `n`, HardSigmoid `3n`, Selu
//! `3n` and `n`, …) are `PerElement` rules in the ONNX registry; the ones here depend on
//! attributes or shapes:
//!
//! | op | FLOPs | transcendentals |
//! |---|---|---|
//! | LayerNormalization, RMS / group / instance / mean-variance norms | `8n` | one rsqrt per normalized row |
//! | LRN | `(size + 3) · n` (square, window sum, scale, bias, divide) | `n` (the power) |
//! | RotaryEmbedding | `3 · n · rotary_dim / head_dim` (4 multiplies, 2 adds per rotated pair) | 0 |
//! | SwiGLU | `2n` (`3n` when `alpha ≠ 1`: XLA drops a multiply by 1) | `n` (the sigmoid) |
//! | NegativeLogLikelihoodLoss | `4 ·` scores (pick, weight, sum) | 0 |
//! | SoftmaxCrossEntropyLoss | `8 ·` scores (log-softmax, then the pick) | `2 ·` scores |

use tpuport_model::Attr;

use super::{OpClass, OpCost, Site, int_attr, sat};

/// The StableHLO composites.
pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    let (f, t) = match s.op.as_str() {
        "batch_norm_inference" => (2, 0),
        "batch_norm_training" => (7, 0),
        // silu and any other composite name: an activation with one exp.
        _ => (3, 1),
    };
    super::elementwise::per_element(s, c, OpClass::Composite, f, t);
}

/// Layer-style normalizations: `8n` and one rsqrt per row (rows: the dims before `axis`).
pub(super) fn normalization(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let (Some(e), Some(shape)) = (s.out_elems, s.in_shape(0)) else {
        c.not_static();
        return;
    };
    let axis = int_attr(s.n, "axis").unwrap_or(-1);
    let rank = i64::try_from(shape.len()).unwrap_or(0);
    let a = if axis < 0 { axis.saturating_add(rank) } else { axis };
    let rows = sat(&shape[..usize::try_from(a.max(0)).unwrap_or(0).min(shape.len())]);
    c.flops = e.saturating_mul(8);
    c.transcendentals = rows;
}

/// `LRN`: square, a `size`-wide window sum over channels, scale, bias, power, divide.
pub(super) fn lrn(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    let size = u64::try_from(int_attr(s.n, "size").unwrap_or(1)).unwrap_or(1).max(1);
    c.flops = e.saturating_mul(size.saturating_add(3));
    c.transcendentals = e;
}

/// `RotaryEmbedding`: `real = cos·x₁ − sin·x₂`, `imag = sin·x₁ + cos·x₂` over the rotated
/// part of each head (`rotary_embedding_dim`, default the head size).
pub(super) fn rotary(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let (Some(x), Some(e)) = (s.in_shape(0), s.out_elems) else {
        c.not_static();
        return;
    };
    let head = match x.len() {
        4 => x[3],
        3 => {
            let heads = u64::try_from(int_attr(s.n, "num_heads").unwrap_or(0)).unwrap_or(0);
            x[2].checked_div(heads).unwrap_or(x[2])
        }
        _ => 0,
    };
    let rotated = match u64::try_from(int_attr(s.n, "rotary_embedding_dim").unwrap_or(0)) {
        Ok(d) if d > 0 && d <= head => d,
        _ => head,
    };
    // Per rotated element: 2 multiplies and one add or subtract = 3 FLOPs.
    c.flops = e.checked_div(head).map_or(0, |rows| rows.saturating_mul(rotated).saturating_mul(3));
}

/// `SwiGLU(A, B) = A · sigmoid(alpha · A) · B`.
pub(super) fn swiglu(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let Some(e) = s.out_elems else {
        c.not_static();
        return;
    };
    let alpha = s.n.attr("alpha").and_then(Attr::as_float).unwrap_or(1.0);
    let muls = if (alpha - 1.0).abs() < f64::EPSILON { 2 } else { 3 };
    c.flops = e.saturating_mul(muls);
    c.transcendentals = e;
}

/// `NegativeLogLikelihoodLoss` / `SoftmaxCrossEntropyLoss`, over the scores (input 0).
pub(super) fn loss(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Composite;
    let Some(n) = s.in_elems(0) else {
        c.not_static();
        return;
    };
    if s.op == "softmaxcrossentropyloss" {
        c.flops = n.saturating_mul(8);
        c.transcendentals = n.saturating_mul(2);
    } else {
        c.flops = n.saturating_mul(4);
    }
}
