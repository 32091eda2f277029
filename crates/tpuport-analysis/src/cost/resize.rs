//! ONNX `Resize` / `Upsample`, as the lowering computes it: separably, one axis after another
//! (in axis order, skipping axes whose size does not change), each output element a weighted
//! sum of `taps` gathered inputs (nearest 1, linear 2, cubic 4) with weights fixed by the
//! static shapes. An axis costs, per element of its result, `taps − 1` adds and one multiply
//! per tap, except that a tap whose weights are all 1 needs none (the lowering skips it) and
//! taps sharing one weight for every position are multiplied once (XLA's simplifier rewrites
//! `a·c + b·c` as `(a + b)·c`: a linear 2× downscale costs 2, not 3). Nearest costs nothing (a
//! gather). Inputs other than f32 / f64 are converted to f32 and back (one FLOP per input and
//! output element), integer results of linear / cubic modes also rounded (one per output
//! element).
//!
//! The weights follow the node's `coordinate_transformation_mode` (`asymmetric` for
//! `Upsample` and opset-10 `Resize`) and the scale from its `scales` initializer, else the
//! output / input size ratio.

use tpuport_model::ops::onnx::resize;
use tpuport_model::{Attr, DType, ValueKind};

use super::{Cx, OpClass, OpCost, Site, input, sat};

/// Longest axis whose tap weights are computed one by one (longer axes count every multiply).
const MAX_POSITIONS: u64 = 1 << 20;

pub(super) fn cost(cx: &Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Data;
    let (Some(x), Some(y)) =
        (s.in_shape(0), s.n.outputs.first().and_then(|o| super::shape(s.g, *o)))
    else {
        c.not_static();
        return;
    };
    if x.len() != y.len() {
        c.not_static();
        return;
    }
    let mode = s.n.attr("mode").and_then(Attr::as_str).unwrap_or("nearest");
    let taps: u64 = match mode {
        "linear" | "bilinear" => 2,
        "cubic" | "bicubic" => 4,
        _ => 1,
    };
    let scales = scales(cx, s, x.len());
    let legacy = s.n.op == "Upsample" || s.n.inputs.len() == 2;
    let ctm = if legacy {
        "asymmetric"
    } else {
        s.n.attr("coordinate_transformation_mode").and_then(Attr::as_str).unwrap_or("half_pixel")
    };
    let a = s.n.attr("cubic_coeff_a").and_then(Attr::as_float).unwrap_or(-0.75);
    let mut flops = 0u64;
    if taps > 1 {
        for ax in 0..x.len() {
            if x[ax] == y[ax] {
                continue;
            }
            #[allow(clippy::cast_precision_loss, reason = "sizes")]
            let scale = scales.get(ax).copied().flatten().unwrap_or(y[ax] as f64 / x[ax] as f64);
            let per = per_element(taps, x[ax], y[ax], scale, ctm, a);
            let stage = sat(&y[..=ax]).saturating_mul(sat(&x[ax + 1..]));
            flops = flops.saturating_add(stage.saturating_mul(per));
        }
    }
    let dt = s.dt.unwrap_or(DType::F32);
    if !matches!(dt, DType::F32 | DType::F64) {
        let (xi, yo) = (sat(&x), sat(&y));
        flops = flops.saturating_add(xi).saturating_add(yo);
        if !dt.is_float() && taps > 1 {
            flops = flops.saturating_add(yo);
        }
    }
    c.flops = flops;
}

/// The scale of each axis from a `scales` initializer (`None` where there is none).
fn scales(cx: &Cx<'_>, s: &Site<'_>, rank: usize) -> Vec<Option<f64>> {
    let mut out = vec![None; rank];
    let from_attr = match s.n.attr("scales") {
        Some(Attr::Floats(v)) => Some(v.clone()),
        _ => None,
    };
    let idx = if s.n.op == "Upsample" || s.n.inputs.len() == 2 { 1 } else { 2 };
    let values = from_attr.or_else(|| {
        let v = input(s.n, idx)?;
        let ValueKind::Weight(id) = s.g.value(v).kind else { return None };
        let w = cx.model.weights.get(id);
        let b = w.bytes().ok()?;
        (w.dtype == DType::F32).then(|| {
            b.chunks_exact(4)
                .map(|q| f64::from(f32::from_le_bytes([q[0], q[1], q[2], q[3]])))
                .collect()
        })
    });
    let Some(values) = values.filter(|v: &Vec<f64>| !v.is_empty()) else { return out };
    let axes: Vec<usize> = match s.n.attr("axes").and_then(Attr::as_ints) {
        Some(a) => a
            .iter()
            .filter_map(|&v| {
                let r = i64::try_from(rank).ok()?;
                usize::try_from(if v < 0 { v + r } else { v }).ok()
            })
            .collect(),
        None => (0..rank).collect(),
    };
    for (&ax, &v) in axes.iter().zip(&values) {
        if let Some(o) = out.get_mut(ax) {
            *o = Some(v);
        }
    }
    out
}

/// FLOPs per element of one axis's result (see the module doc).
fn per_element(taps: u64, inn: u64, out: u64, scale: f64, ctm: &str, a: f64) -> u64 {
    let all = 2 * taps - 1;
    if out > MAX_POSITIONS || inn == 0 {
        return all;
    }
    let Some(first) = weights(taps, 0, inn, out, scale, ctm, a) else { return all };
    let mut uniform = vec![true; first.len()];
    let mut ones: Vec<bool> = first.iter().map(|&w| w == 1.0).collect();
    for o in 1..out {
        let Some(w) = weights(taps, o, inn, out, scale, ctm, a) else { return all };
        for k in 0..w.len() {
            uniform[k] &= w[k] == first[k];
            ones[k] &= w[k] == 1.0;
        }
    }
    let adds = taps - 1;
    let shared = uniform.iter().all(|&u| u) && first.windows(2).all(|p| p[0] == p[1]);
    let muls =
        if shared && first[0] != 1.0 { 1 } else { ones.iter().map(|&one| u64::from(!one)).sum() };
    adds + muls
}

/// The tap weights of output position `o` along an axis, as the lowering computes them
/// (cubic without `exclude_outside`).
fn weights(
    taps: u64,
    o: u64,
    inn: u64,
    out: u64,
    scale: f64,
    ctm: &str,
    a: f64,
) -> Option<Vec<f64>> {
    let x = resize::source_coordinate(ctm, o, inn, out, scale)?;
    if taps == 2 {
        #[allow(clippy::cast_precision_loss, reason = "sizes of one axis")]
        let x = x.clamp(0.0, inn as f64 - 1.0);
        let t = x - x.floor();
        return Some(vec![1.0 - t, t]);
    }
    Some(resize::cubic_weights(x - x.floor(), a).to_vec())
}
