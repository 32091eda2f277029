//! Reductions, pooling and scans.
//!
//! - `stablehlo.reduce`: `(input − output elements) · body FLOPs`.
//! - `stablehlo.reduce_window`: `output elements · (window − 1) · body FLOPs`.
//! - ONNX `Reduce*`, `ArgMax` / `ArgMin`, global pools: `input − output elements` (a mean adds
//!   one division per output, L2 / sum-of-squares one multiply per input); `CumSum` /
//!   `CumProd`: one op per element.
//! - ONNX `MaxPool` / `AveragePool` / `LpPool`: `output elements · (kernel − 1)`, an average
//!   adding one division per output.

use super::{Cx, OpClass, OpCost, Site, sat, window_size};

/// The StableHLO reductions.
pub(super) fn cost(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Reduction;
    let body = cx.body_flops(s.n);
    if s.op == "reduce_window" {
        let window = window_size(s.n, "window_dimensions");
        match s.out_elems {
            Some(o) => c.flops = sat(&[o, window.saturating_sub(1), body]),
            None => c.not_static(),
        }
        return;
    }
    match (s.in_elems(0), s.out_elems) {
        (Some(i), Some(o)) => c.flops = i.saturating_sub(o).saturating_mul(body),
        _ => c.not_static(),
    }
}

/// ONNX pools over `kernel_shape`; `average` adds one division per output.
pub(super) fn pool(s: &Site<'_>, c: &mut OpCost, average: bool) {
    c.class = OpClass::Reduction;
    let k = window_size(s.n, "kernel_shape");
    match s.out_elems {
        Some(o) => {
            let avg = if average { o } else { 0 };
            c.flops = o.saturating_mul(k.saturating_sub(1)).saturating_add(avg);
        }
        None => c.not_static(),
    }
}

/// An ONNX reduction: `input − output` combines, plus `per_output` ops per output element and
/// `per_input` per input element.
pub(super) fn onnx(s: &Site<'_>, c: &mut OpCost, per_output: u64, per_input: u64) {
    c.class = OpClass::Reduction;
    match (s.in_elems(0), s.out_elems) {
        (Some(i), Some(o)) => {
            c.flops = i
                .saturating_sub(o)
                .saturating_add(o.saturating_mul(per_output))
                .saturating_add(i.saturating_mul(per_input));
        }
        _ => c.not_static(),
    }
}

/// `CumSum` / `CumProd`: one op per element.
pub(super) fn cumulative(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Reduction;
    match (s.in_elems(0), s.out_elems) {
        (Some(i), Some(_)) => c.flops = i,
        _ => c.not_static(),
    }
}
