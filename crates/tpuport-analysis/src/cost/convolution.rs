//! Convolutions.
//!
//! - `stablehlo.convolution`, ONNX `Conv` / `ConvInteger` / `QLinearConv`:
//!   `2 · batch · Cout · (Cin / groups) · Σ valid taps` FLOPs, a tap being an (output position,
//!   kernel position) pair that reads a real input element, not padding (XLA's count); MXU
//!   FLOPs are the dense `2 · out · K · Cin / groups` (padding taps included, FlopCounterMode's
//!   convention). An ONNX bias adds one FLOP per output. The op is also described as its
//!   implicit GEMM (`m` = output positions × batch, `k` = kernel taps × input channels per
//!   group, `n` = output channels) for the layout pass.
//! - ONNX `ConvTranspose`: every input element meets every kernel tap,
//!   `2 · in · (Cout / groups) · kernel`.

use tpuport_model::{Attr, Graph, Node};

use super::{CostStatus, Estimate, MatmulDims, OpClass, OpCost, Site, input, int_attr, ints_attr};
use super::{sat, shape};

/// Longest axis (output positions × kernel taps) whose valid taps are counted one by one;
/// longer axes count every tap.
const MAX_TAP_PAIRS: u64 = 50_000_000;

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Conv;
    if s.op == "convtranspose" {
        match (s.in_elems(0), s.in_shape(1)) {
            (Some(ie), Some(w)) if w.len() >= 2 => {
                let f = sat(&[2, ie, w[1], sat(&w[2..])]);
                c.flops = f;
                c.mxu_flops = f;
            }
            _ => c.not_static(),
        }
        return;
    }
    let Some((geom, w_in, k)) = geometry(s.g, s.n, &s.op) else {
        c.not_static();
        return;
    };
    let (xla, dense, all_taps) = geom.flops();
    c.flops = xla;
    c.mxu_flops = dense;
    if all_taps {
        c.status = CostStatus::Estimated(Estimate::LongAxisAllTaps);
    }
    if s.op == "conv" && input(s.n, 2).is_some() {
        c.flops = c.flops.saturating_add(geom.out_elems);
    }
    c.matmul = Some(MatmulDims {
        batch: 1,
        m: geom.out_elems / geom.cout.max(1),
        k,
        n: geom.cout,
        dtype: s.dt,
        operands: [w_in, "kernel".to_owned()],
    });
}

/// Valid (output position, kernel position) pairs along one spatial axis.
fn valid_taps(
    input: u64,
    kernel: u64,
    output: u64,
    stride: u64,
    dilation: u64,
    pad_lo: i64,
    lhs_dilation: u64,
) -> u64 {
    let dilated_in =
        if input == 0 { 0 } else { (input - 1).saturating_mul(lhs_dilation).saturating_add(1) };
    let (dilated_in, lhs) = (i128::from(dilated_in), i128::from(lhs_dilation));
    let mut n = 0u64;
    for o in 0..output {
        for k in 0..kernel {
            let pos = i128::from(o) * i128::from(stride) + i128::from(k) * i128::from(dilation)
                - i128::from(pad_lo);
            if pos >= 0 && pos < dilated_in && pos % lhs.max(1) == 0 {
                n += 1;
            }
        }
    }
    n
}

/// One spatial axis: input, kernel, output, stride, dilation, low padding, LHS dilation.
type Axis = (u64, u64, u64, u64, u64, i64, u64);

struct ConvGeom {
    batch: u64,
    cin_per_group: u64,
    cout: u64,
    axes: Vec<Axis>,
    /// Output elements.
    out_elems: u64,
}

impl ConvGeom {
    /// XLA FLOPs, dense FLOPs, and whether some axis was too long to count valid taps.
    fn flops(&self) -> (u64, u64, bool) {
        let mut all_taps = false;
        let taps: Vec<u64> = self
            .axes
            .iter()
            .map(|&(i, k, o, s, d, p, l)| {
                if o.saturating_mul(k) > MAX_TAP_PAIRS {
                    all_taps = true;
                    o.saturating_mul(k)
                } else {
                    valid_taps(i, k, o, s, d, p, l)
                }
            })
            .collect();
        let kernel: Vec<u64> = self.axes.iter().map(|a| a.1).collect();
        let xla = sat(&[2, self.batch, self.cout, self.cin_per_group, sat(&taps)]);
        let dense = sat(&[2, self.out_elems, self.cin_per_group, sat(&kernel)]);
        (xla, dense, all_taps)
    }
}

/// Convolution geometry; also the input's name and the implicit-GEMM K.
fn geometry(g: &Graph, n: &Node, op: &str) -> Option<(ConvGeom, String, u64)> {
    let x = input(n, 0)?;
    let w = if op == "qlinearconv" { input(n, 3)? } else { input(n, 1)? };
    let out = *n.outputs.first()?;
    let sx = shape(g, x)?;
    let sw = shape(g, w)?;
    let so = shape(g, out)?;
    let out_elems = sat(&so);
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    if op == "convolution" {
        let get = |k: &str| int_attr(n, k).and_then(|v| usize::try_from(v).ok());
        let gets = |k: &str| ints_attr(n, k).unwrap_or_default();
        // Dimension numbers the importer must have expanded (the input batch dim is not
        // used, but a convolution without it is malformed).
        get("tpuport.input_batch_dimension")?;
        let kin = get("tpuport.kernel_input_feature_dimension")?;
        let kout = get("tpuport.kernel_output_feature_dimension")?;
        let ob = get("tpuport.output_batch_dimension")?;
        let isp = gets("tpuport.input_spatial_dimensions");
        let ksp = gets("tpuport.kernel_spatial_dimensions");
        let osp = gets("tpuport.output_spatial_dimensions");
        let nsp = ksp.len();
        let strides = ints_attr(n, "window_strides").unwrap_or_else(|| vec![1; nsp]);
        let rdil = ints_attr(n, "rhs_dilation").unwrap_or_else(|| vec![1; nsp]);
        let ldil = ints_attr(n, "lhs_dilation").unwrap_or_else(|| vec![1; nsp]);
        let pad = ints_attr(n, "padding").unwrap_or_default();
        let at = |s: &[u64], i: i64| usize::try_from(i).ok().and_then(|i| s.get(i).copied());
        let mut axes = Vec::new();
        for j in 0..nsp {
            let pad_lo = if pad.len() == 1 { pad[0] } else { pad.get(2 * j).copied().unwrap_or(0) };
            axes.push((
                at(&sx, *isp.get(j)?)?,
                at(&sw, *ksp.get(j)?)?,
                at(&so, *osp.get(j)?)?,
                u(*strides.get(j).unwrap_or(&1)).max(1),
                u(*rdil.get(j).unwrap_or(&1)).max(1),
                pad_lo,
                u(*ldil.get(j).unwrap_or(&1)).max(1),
            ));
        }
        let cin_pg = *sw.get(kin)?;
        let cout = *sw.get(kout)?;
        let batch = so.get(ob).copied()?;
        let kspatial = sat(&axes.iter().map(|a| a.1).collect::<Vec<_>>());
        return Some((
            ConvGeom { batch, cin_per_group: cin_pg, cout, axes, out_elems },
            g.value(x).name.clone(),
            cin_pg.saturating_mul(kspatial),
        ));
    }
    // ONNX: X [N, C, D1..], W [M, C/group, k1..], Y [N, M, o1..].
    if sx.len() < 3 || sw.len() != sx.len() || so.len() != sx.len() {
        return None;
    }
    let nsp = sx.len() - 2;
    let strides = ints_attr(n, "strides").unwrap_or_else(|| vec![1; nsp]);
    let dil = ints_attr(n, "dilations").unwrap_or_else(|| vec![1; nsp]);
    let pads = ints_attr(n, "pads");
    let auto_pad = n.attr("auto_pad").and_then(Attr::as_str).unwrap_or("NOTSET");
    let mut axes = Vec::new();
    for j in 0..nsp {
        let (i, k, o) = (sx[2 + j], sw[2 + j], so[2 + j]);
        let s = u(*strides.get(j).unwrap_or(&1)).max(1);
        let d = u(*dil.get(j).unwrap_or(&1)).max(1);
        let pad_lo = match (&pads, auto_pad) {
            (Some(p), "NOTSET" | "") => p.get(j).copied().unwrap_or(0),
            (_, "SAME_UPPER" | "SAME_LOWER") => {
                let eff = k.saturating_sub(1).saturating_mul(d).saturating_add(1);
                let total =
                    o.saturating_sub(1).saturating_mul(s).saturating_add(eff).saturating_sub(i);
                let lo = if auto_pad == "SAME_UPPER" { total / 2 } else { total.div_ceil(2) };
                i64::try_from(lo).unwrap_or(0)
            }
            _ => 0,
        };
        axes.push((i, k, o, s, d, pad_lo, 1));
    }
    let kspatial = sat(&sw[2..]);
    Some((
        ConvGeom { batch: so[0], cin_per_group: sw[1], cout: sw[0], axes, out_elems },
        g.value(x).name.clone(),
        sw[1].saturating_mul(kspatial),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_same_padding() {
        // 3-tap SAME conv on 28: 3·28 − 2 valid pairs.
        assert_eq!(valid_taps(28, 3, 28, 1, 1, 1, 1), 82);
        // VALID: every pair is real.
        assert_eq!(valid_taps(10, 3, 8, 1, 1, 0, 1), 24);
        // Stride 2, pad 3, kernel 7 on 224 -> 112 (ResNet stem).
        let t = valid_taps(224, 7, 112, 2, 1, 3, 1);
        assert!(t < 112 * 7 && t > 112 * 7 - 12);
    }

    #[test]
    fn hostile_taps_do_not_overflow() {
        assert_eq!(valid_taps(u64::MAX, 1, 1, u64::MAX, 1, i64::MIN, u64::MAX), 0);
    }
}
