//! Reductions, pooling and scans.
//!
//! - `stablehlo.reduce`: `(input − output elements) · body FLOPs`.
//! - `stablehlo.reduce_window`: `output elements · (window − 1) · body FLOPs`.
//! - ONNX `Reduce*`, `ArgMax` / `ArgMin`, global pools: `input − output elements` (a mean adds
//!   one division per output, L2 / sum-of-squares one multiply per input); `CumSum`: one add per
//!   element.
//! - ONNX `MaxPool` / `AveragePool` / `LpPool`: `output elements · (kernel − 1)`, an average
//!   adding one division per output.

use super::{Cx, OpClass, OpCost, Site, sat, window_size};

pub(super) fn cost(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Reduction;
    let (i, o) = (s.in_elems(0), s.out_elems);
    match s.op.as_str() {
        "reduce" => {
            let body = cx.body_flops(s.n);
            match (i, o) {
                (Some(i), Some(o)) => c.flops = i.saturating_sub(o).saturating_mul(body),
                _ => c.not_static(),
            }
        }
        "reduce_window" => {
            let body = cx.body_flops(s.n);
            let window = window_size(s.n, "window_dimensions");
            match o {
                Some(o) => c.flops = sat(&[o, window.saturating_sub(1), body]),
                None => c.not_static(),
            }
        }
        "maxpool" | "averagepool" | "lppool" => {
            let k = window_size(s.n, "kernel_shape");
            match o {
                Some(o) => {
                    let avg = if s.op == "averagepool" { o } else { 0 };
                    c.flops = o.saturating_mul(k.saturating_sub(1)).saturating_add(avg);
                }
                None => c.not_static(),
            }
        }
        op => match (i, o) {
            (Some(i), Some(o)) => {
                c.flops = match op {
                    "cumsum" => i,
                    "reducemean" | "globalaveragepool" => i.saturating_sub(o).saturating_add(o),
                    "reducel2" | "reducesumsquare" => i.saturating_sub(o).saturating_add(i),
                    _ => i.saturating_sub(o),
                };
            }
            _ => c.not_static(),
        },
    }
}
