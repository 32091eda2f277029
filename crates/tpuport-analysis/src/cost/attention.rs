//! Attention.
//!
//! - ONNX `Attention` (opset 23; Q `[B, Hq, Sq, D]` or `[B, Sq, Hq·D]`, K / V with `Hk` heads,
//!   an optional past key / value cache of `P` steps, `Skv` = `P` + new keys), counted as its
//!   lowering computes it, with `n = B · Hq · Sq · Skv` scores over `r = B · Hq · Sq` rows:
//!   - the products `Q·Kᵀ` and `P·V`: `2n · D + 2n · Dv` (MXU FLOPs);
//!   - `√scale` applied to Q and to K before its heads are repeated: `|Q| + B · Hk · Skv · D`;
//!   - the softmax: max and sum reductions, subtract and divide (`4n`), the fully-masked-row
//!     guards (`2r`), one exp per score; a `softcap` adds `2n` and `n` tanh; a
//!     `softmax_precision` other than the inputs' type adds the two converts (`2n`);
//!   - masks: an additive bias costs its add and the masked-row guard (`3n`), a boolean mask
//!     one select per mask element, a causal or windowed mask `(3 + 2 · conditions)` ops per
//!     `Sq · Skv` position (and one add when it joins a given mask).
//!
//!   Against XLA's count of the lowered module (CPU plugin, fusion off): equal without
//!   masks, within 0.2 % with a causal mask (`onnx_cost_xla.rs` in `tpuport-lower`).
//! - Fused attention ops without a finer rule (`MultiHeadAttention`,
//!   `scaled_dot_product_attention`): Q `[B, H, Sq, D]` (or `[B, Sq, H·D]`) against K
//!   `[B, H, Skv, D]`, as the two matmuls `Q·Kᵀ` and `P·V` (`4 · |Q| · Skv` MXU FLOPs) plus a
//!   softmax over the scores (4 FLOPs and one exp per score).

use tpuport_model::{Attr, DType};

use super::{OpClass, OpCost, Site, input, int_attr, sat, shape};

/// The fused-attention estimate (`MultiHeadAttention`, `scaled_dot_product_attention`).
pub(super) fn fused(s: &Site<'_>, c: &mut OpCost) {
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

/// `[B, H, S, D]` of a 3-D (`[B, S, H·D]`, `heads` from the attribute) or 4-D input.
fn heads(x: &[u64], attr: Option<i64>) -> Option<[u64; 4]> {
    match *x {
        [b, h, sq, d] => Some([b, h, sq, d]),
        [b, sq, hid] => {
            let h = u64::try_from(attr?).ok().filter(|&h| h > 0)?;
            Some([b, h, sq, hid / h])
        }
        _ => None,
    }
}

/// Element type of an ONNX `TensorProto.DataType` code, for the float types a softmax can run in.
fn float_code(code: i64) -> Option<DType> {
    Some(match code {
        1 => DType::F32,
        10 => DType::F16,
        11 => DType::F64,
        16 => DType::BF16,
        _ => return None,
    })
}

/// ONNX `Attention` (opset 23).
pub(super) fn onnx(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Attention;
    let attr = |k: &str| int_attr(s.n, k);
    let (Some(q), Some(k), Some(v)) = (s.in_shape(0), s.in_shape(1), s.in_shape(2)) else {
        c.not_static();
        return;
    };
    let (Some([b, hq, sq, d]), Some([_, hk, new_kv, _]), Some([_, _, _, dv])) = (
        heads(&q, attr("q_num_heads")),
        heads(&k, attr("kv_num_heads")),
        heads(&v, attr("kv_num_heads")),
    ) else {
        // 3-D inputs without their head counts (the lowering rejects them): the estimate.
        fused(s, c);
        return;
    };
    let past = match input(s.n, 4).map(|p| shape(s.g, p)) {
        Some(Some(p)) if p.len() == 4 => p[2],
        Some(_) => {
            c.not_static();
            return;
        }
        None => 0,
    };
    let skv = past.saturating_add(new_kv);
    let n = sat(&[b, hq, sq, skv]);
    let rows = sat(&[b, hq, sq]);
    let mxu = sat(&[2, n, d]).saturating_add(sat(&[2, n, dv]));
    // K is scaled before its heads are repeated (XLA moves the multiply ahead of the
    // broadcast).
    let scale = sat(&[b, hq, sq, d]).saturating_add(sat(&[b, hk, skv, d]));
    let mut flops = mxu.saturating_add(scale);
    let mut trans = n;
    // Softmax: max and sum reductions, subtract, divide; the two fully-masked-row guards.
    flops = flops.saturating_add(n.saturating_mul(4)).saturating_add(rows.saturating_mul(2));
    if s.n.attr("softcap").and_then(Attr::as_float).is_some_and(|v| v > 0.0) {
        flops = flops.saturating_add(n.saturating_mul(2));
        trans = trans.saturating_add(n);
    }
    if let Some(p) = attr("softmax_precision").and_then(float_code)
        && s.dt.is_some_and(|dt| dt != p)
    {
        flops = flops.saturating_add(n.saturating_mul(2));
    }
    let mask = input(s.n, 3);
    let conditions = u64::from(attr("is_causal") == Some(1))
        + u64::from(attr("left_window_size").is_some_and(|w| w >= 0))
        + u64::from(attr("right_window_size").is_some_and(|w| w >= 0));
    if let Some(m) = mask {
        let bool_mask = s.g.value(m).ty.dtype == Some(DType::Bool);
        if bool_mask {
            flops = flops.saturating_add(shape(s.g, m).map_or(0, |m| sat(&m)));
        }
    }
    if conditions > 0 {
        let right = u64::from(attr("right_window_size").is_some_and(|w| w >= 0));
        let per = 3 + 2 * conditions + right;
        flops = flops.saturating_add(sat(&[per, sq, skv]));
        if mask.is_some() {
            flops = flops.saturating_add(n);
        }
    }
    if mask.is_some() || conditions > 0 {
        // The bias add, and the guard that zeroes rows the bias masks entirely.
        flops = flops.saturating_add(n.saturating_mul(3));
    }
    c.flops = flops;
    c.mxu_flops = mxu;
    c.transcendentals = trans;
}
