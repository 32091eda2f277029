//! Depthwise convolutions unrolled into one multiply-add per kernel tap, for XLA:CPU.
//!
//! XLA:CPU runs a `stablehlo.convolution` whose `feature_group_count` equals the input channel
//! count (a depthwise convolution: MobileNet, EfficientNet, ConvNeXt) through a generic grouped
//! path that is an order of magnitude slower than the same arithmetic written as elementwise
//! ops: on this machine a 3×3 depthwise convolution over `f32[8,96,112,112]` took 2,669 ms as a
//! grouped convolution and 222 ms as nine shifted multiply-adds (JAX 0.10.2 on XLA:CPU, median
//! of 10, `.venv/bin/python scripts/bench/bench_depthwise_jax.py`). The TPU compiler has its own
//! depthwise emitter, so this rewrite is applied only to modules compiled for the CPU plugin.
//!
//! For output `y[b, c, p] = Σ_k x_pad[b, c, p·s + k·d] · w[c, 0, k]` the rewrite emits: one
//! `pad` of the input (the convolution's edge padding, negative allowed), one `transpose` to
//! the output's dimension order when it differs, and per kernel tap `k` a strided `slice` of the
//! padded input, the tap's weights sliced, reshaped to a vector and broadcast along the output
//! feature dimension, a `multiply` and an `add` into the running sum. Summation order differs
//! from the convolution's, so results agree to f32 rounding, not bit for bit.
//!
//! Only the plain case is rewritten: depth multiplier 1 (output features = input features =
//! `feature_group_count`), `batch_group_count = 1`, no input dilation or window reversal, one
//! element type throughout (float), static shapes, at most [`MAX_TAPS`] taps.

use tpuport_model::{Attr, DType, Graph, Model, Node, Shape, TensorType, ValueId};

use super::conv::Conv;
use super::{fresh_value, simple_op};

/// Kernels with more taps than this (7×7) stay convolutions: the unrolled form grows with taps.
pub const MAX_TAPS: u64 = 49;

/// Rewrites every depthwise `stablehlo.convolution` of `model` (functions and regions included)
/// as described in the module docs; returns how many were rewritten.
#[must_use]
pub fn unroll_depthwise(model: &mut Model) -> usize {
    super::conv::replace_convolutions(model, Conv::depthwise, Conv::emit_depthwise)
}

impl Conv {
    /// The convolution `n` when it is depthwise with depth multiplier 1 and at most
    /// [`MAX_TAPS`] taps.
    fn depthwise(g: &Graph, n: &Node) -> Option<Conv> {
        let c = Conv::plain(g, n)?;
        let groups = c.groups;
        // depth multiplier 1: C in = groups = C out, one input feature per group
        if groups < 2
            || c.x_shape[c.ifeat] != groups
            || c.w_shape[c.kin] != 1
            || c.w_shape[c.kout] != groups
            || c.out_shape[c.ofeat] != groups
        {
            return None;
        }
        let taps: u64 = c.ksp.iter().map(|&k| c.w_shape[k]).product();
        (taps > 0 && taps <= MAX_TAPS).then_some(c)
    }

    fn emit_depthwise(&self, g: &mut Graph, nodes: &mut Vec<Node>, loc: Option<String>) {
        let nsp = self.isp.len();
        let rank = nsp + 2;
        let tt = |dims: &[u64]| TensorType::new(self.dtype, Shape::fixed(dims));
        let arr = |v: &[i64]| Attr::Ints(v.to_vec());
        // 1. pad the input (in its own layout)
        let zero = fresh_value(g, "dw_zero", TensorType::new(self.dtype, Shape(Vec::new())));
        let mut c = simple_op("stablehlo.constant", &[], zero, loc.clone());
        let scalar = match self.dtype {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            _ => "f32",
        };
        c.attrs = vec![(
            "value".to_owned(),
            Attr::Text(format!("dense<0.000000e+00> : tensor<{scalar}>")),
        )];
        nodes.push(c);
        let mut lo = vec![0i64; rank];
        let mut hi = vec![0i64; rank];
        let mut padded = self.x_shape.clone();
        for j in 0..nsp {
            let d = self.isp[j];
            lo[d] = self.padding[j].0;
            hi[d] = self.padding[j].1;
            padded[d] = u64::try_from(
                i64::try_from(padded[d]).unwrap_or(0) + self.padding[j].0 + self.padding[j].1,
            )
            .unwrap_or(0);
        }
        let mut xp = self.x;
        if lo.iter().chain(&hi).any(|&p| p != 0) {
            xp = fresh_value(g, "dw_pad", tt(&padded));
            let mut p = simple_op("stablehlo.pad", &[self.x, zero], xp, loc.clone());
            p.attrs = vec![
                ("edge_padding_low".to_owned(), arr(&lo)),
                ("edge_padding_high".to_owned(), arr(&hi)),
                ("interior_padding".to_owned(), arr(&vec![0; rank])),
            ];
            nodes.push(p);
        }
        // 2. into the output's dimension order: output dim od takes input dim perm[od]
        let mut perm = vec![0usize; rank];
        perm[self.ob] = self.ib;
        perm[self.ofeat] = self.ifeat;
        for j in 0..nsp {
            perm[self.osp[j]] = self.isp[j];
        }
        let xt_shape: Vec<u64> = perm.iter().map(|&d| padded[d]).collect();
        if perm.iter().enumerate().any(|(i, &p)| i != p) {
            let t = fresh_value(g, "dw_t", tt(&xt_shape));
            let mut n = simple_op("stablehlo.transpose", &[xp], t, loc.clone());
            n.attrs = vec![(
                "permutation".to_owned(),
                arr(&perm.iter().map(|&p| p as i64).collect::<Vec<_>>()),
            )];
            nodes.push(n);
            xp = t;
        }
        // 3. per tap: strided input slice × broadcast weight column, summed
        let kdims: Vec<u64> = self.ksp.iter().map(|&k| self.w_shape[k]).collect();
        let taps: u64 = kdims.iter().product();
        let out_ty = tt(&self.out_shape);
        let channels = self.out_shape[self.ofeat];
        let mut acc: Option<ValueId> = None;
        for t in 0..taps {
            // the tap's spatial index, first spatial dim slowest
            let mut k = vec![0u64; nsp];
            let mut rest = t;
            for j in (0..nsp).rev() {
                k[j] = rest % kdims[j];
                rest /= kdims[j];
            }
            let mut start = vec![0i64; rank];
            let mut limit: Vec<i64> =
                xt_shape.iter().map(|&d| i64::try_from(d).unwrap_or(0)).collect();
            let mut step = vec![1i64; rank];
            for (j, &kj) in k.iter().enumerate() {
                let d = self.osp[j];
                let s0 = i64::try_from(kj).unwrap_or(0) * self.rhs_dilation[j];
                let o = i64::try_from(self.out_shape[d]).unwrap_or(0);
                start[d] = s0;
                limit[d] = s0 + (o - 1) * self.strides[j] + 1;
                step[d] = self.strides[j];
            }
            let xs = fresh_value(g, "dw_x", out_ty.clone());
            let mut sl = simple_op("stablehlo.slice", &[xp], xs, loc.clone());
            sl.attrs = vec![
                ("start_indices".to_owned(), arr(&start)),
                ("limit_indices".to_owned(), arr(&limit)),
                ("strides".to_owned(), arr(&step)),
            ];
            nodes.push(sl);
            // the kernel at this tap: all of the output-feature dim, one element elsewhere
            let mut ws = vec![0i64; rank];
            let mut wl: Vec<i64> = vec![1; rank];
            let mut wshape = vec![1u64; rank];
            for (d, (s, l)) in ws.iter_mut().zip(wl.iter_mut()).enumerate() {
                if let Some(j) = self.ksp.iter().position(|&kd| kd == d) {
                    *s = i64::try_from(k[j]).unwrap_or(0);
                    *l = *s + 1;
                } else if self.w_shape[d] != 1 {
                    *l = i64::try_from(self.w_shape[d]).unwrap_or(0);
                    wshape[d] = self.w_shape[d];
                }
            }
            let wt = fresh_value(g, "dw_w", tt(&wshape));
            let mut wsl = simple_op("stablehlo.slice", &[self.w], wt, loc.clone());
            wsl.attrs = vec![
                ("start_indices".to_owned(), arr(&ws)),
                ("limit_indices".to_owned(), arr(&wl)),
                ("strides".to_owned(), arr(&vec![1; rank])),
            ];
            nodes.push(wsl);
            let wv = fresh_value(g, "dw_wv", tt(&[channels]));
            nodes.push(simple_op("stablehlo.reshape", &[wt], wv, loc.clone()));
            let wb = fresh_value(g, "dw_wb", out_ty.clone());
            let mut bc = simple_op("stablehlo.broadcast_in_dim", &[wv], wb, loc.clone());
            bc.attrs = vec![("broadcast_dimensions".to_owned(), arr(&[self.ofeat as i64]))];
            nodes.push(bc);
            let last = t + 1 == taps;
            let prod = if last && acc.is_none() {
                self.out
            } else {
                fresh_value(g, "dw_m", out_ty.clone())
            };
            nodes.push(simple_op("stablehlo.multiply", &[xs, wb], prod, loc.clone()));
            acc = Some(match acc {
                None => prod,
                Some(prev) => {
                    let sum = if last { self.out } else { fresh_value(g, "dw_s", out_ty.clone()) };
                    nodes.push(simple_op("stablehlo.add", &[prev, prod], sum, loc.clone()));
                    sum
                }
            });
        }
    }
}
