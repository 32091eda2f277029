//! ONNX `Resize` / `Upsample`, as the lowering computes it: separably, one axis after another
//! (in axis order, skipping axes whose size does not change), each output element a weighted
//! sum of `taps` gathered inputs (nearest 1, linear 2, cubic 4). An axis costs
//! `(2 · taps − 1)` FLOPs per element of its result — `taps` multiplies and `taps − 1` adds —
//! and nothing for nearest (a gather). Inputs other than f32 / f64 are converted to f32 and
//! back (one FLOP per input and output element), integer results of linear / cubic modes also
//! rounded (one per output element).

use tpuport_model::{Attr, DType};

use super::{OpClass, OpCost, Site, sat};

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Data;
    let (Some(x), Some(y)) = (s.in_shape(0), s.n.outputs.first().and_then(|o| super::shape(s.g, *o)))
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
    let mut flops = 0u64;
    if taps > 1 {
        for a in 0..x.len() {
            if x[a] == y[a] {
                continue;
            }
            let stage = sat(&y[..=a]).saturating_mul(sat(&x[a + 1..]));
            flops = flops.saturating_add(stage.saturating_mul(2 * taps - 1));
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
