//! Fused attention ops (`Attention`, `MultiHeadAttention`, `scaled_dot_product_attention`):
//! Q `[B, H, Sq, D]` (or `[B, Sq, H·D]`) against K `[B, H, Skv, D]`, as the two matmuls
//! `Q·Kᵀ` and `P·V` (`4 · |Q| · Skv` MXU FLOPs) plus a softmax over the scores (4 FLOPs and one
//! exp per score).

use super::{OpClass, OpCost, Site, sat};

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Attention;
    match (s.in_shape(0), s.in_shape(1)) {
        (Some(q), Some(k)) if q.len() >= 3 && k.len() >= 3 => {
            let skv = k[k.len() - 2];
            let f = sat(&[4, sat(&q), skv]);
            let scores = sat(&q[..q.len() - 1]).saturating_mul(skv);
            c.flops = f.saturating_add(scores.saturating_mul(4));
            c.mxu_flops = f;
            c.transcendentals = scores;
        }
        _ => c.not_static(),
    }
}
