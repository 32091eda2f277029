//! 1×1 convolutions as `dot_general`, for XLA:CPU.
//!
//! XLA:CPU runs a convolution whose kernel is 1×1 (a pointwise convolution: the expand and
//! project layers of MobileNet and EfficientNet, the bottleneck ends and projections of
//! ResNet) through its convolution emitter, which on this machine was 1.15–2.66× slower than
//! the same contraction written as a matrix product over the channel dimension (JAX 0.10.2 on
//! XLA:CPU, `XLA_FLAGS=--xla_cpu_use_xnnpack=false`, medians of 7 interleaved runs:
//! `f32[8,256,56,56]` → 64 channels 45.7 ms as a convolution and 17.2 ms as
//! `einsum('nihw,oi->nohw')`; `f32[8,960,7,7]` → 160 channels 2.86 ms and 2.48 ms;
//! 2026-12-05, `.venv/bin/python scripts/bench/bench_pointwise_jax.py`). The TPU
//! compiler maps both forms to the MXU alike, so this rewrite is only for modules compiled
//! for the CPU plugin. There it is opt-in (`TPUPORT_CPU_REWRITES=depthwise,pointwise`): on
//! whole models (torchvision ResNet-50 and MobileNetV2, batch 8) it changed p50 by less than
//! the spread between runs (docs/runtime.md).
//!
//! For `y[b, o, p] = Σ_i x[b, i, p·s] · w[o, i]` the rewrite emits: a strided `slice` of the
//! input when a stride is not 1, the kernel `reshape`d to its two feature dims, one
//! `dot_general` contracting the input feature dim with the kernel's input feature dim (the
//! result's dims: the input's other dims in order, then the output feature), and a `transpose`
//! into the output's dimension order when it differs. Summation order differs from the
//! convolution's, so results agree to f32 rounding, not bit for bit.
//!
//! Only plain convolutions ([`super::conv::Conv`]) with `feature_group_count = 1`, every kernel
//! spatial size 1 and no padding are rewritten.

use tpuport_model::{Attr, Graph, Model, Node, Shape, TensorType};

use super::conv::Conv;
use super::{fresh_value, simple_op};

/// Rewrites every pointwise `stablehlo.convolution` of `model` (functions and regions
/// included) as described in the module docs; returns how many were rewritten.
#[must_use]
pub fn pointwise_as_dot(model: &mut Model) -> usize {
    super::conv::replace_convolutions(model, Conv::pointwise, Conv::emit_pointwise)
}

impl Conv {
    /// The convolution `n` when it is a plain 1×1 convolution without groups or padding.
    fn pointwise(g: &Graph, n: &Node) -> Option<Conv> {
        if n.op != "stablehlo.convolution" {
            return None;
        }
        let c = Conv::plain(g, n)?;
        let one_by_one = c.ksp.iter().all(|&k| c.w_shape[k] == 1);
        let unpadded = c.padding.iter().all(|&(lo, hi)| lo == 0 && hi == 0);
        (c.groups == 1 && one_by_one && unpadded).then_some(c)
    }

    fn emit_pointwise(&self, g: &mut Graph, nodes: &mut Vec<Node>, loc: Option<String>) {
        let rank = self.x_shape.len();
        let tt = |dims: &[u64]| TensorType::new(self.dtype, Shape::fixed(dims));
        let arr = |v: &[i64]| Attr::Ints(v.to_vec());
        let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        // 1. a strided input slice when a stride is not 1 (a 1×1 kernel reads every s-th point)
        let mut x = self.x;
        let mut xs_shape = self.x_shape.clone();
        if self.strides.iter().any(|&s| s != 1) {
            let mut limit: Vec<i64> = self.x_shape.iter().map(|&d| to_i64(d)).collect();
            let mut step = vec![1i64; rank];
            for (j, &d) in self.isp.iter().enumerate() {
                let o = self.out_shape[self.osp[j]];
                xs_shape[d] = o;
                limit[d] = (to_i64(o) - 1) * self.strides[j] + 1;
                step[d] = self.strides[j];
            }
            let xs = fresh_value(g, "pw_x", tt(&xs_shape));
            let mut sl = simple_op("stablehlo.slice", &[x], xs, loc.clone());
            sl.attrs = vec![
                ("start_indices".to_owned(), arr(&vec![0; rank])),
                ("limit_indices".to_owned(), arr(&limit)),
                ("strides".to_owned(), arr(&step)),
            ];
            nodes.push(sl);
            x = xs;
        }
        // 2. the kernel as a matrix, its two feature dims in their own order
        let (o_feat, i_feat) = (self.w_shape[self.kout], self.w_shape[self.kin]);
        let (w2_shape, w_contract) =
            if self.kout < self.kin { ([o_feat, i_feat], 1) } else { ([i_feat, o_feat], 0) };
        let w2 = fresh_value(g, "pw_w", tt(&w2_shape));
        nodes.push(simple_op("stablehlo.reshape", &[self.w], w2, loc.clone()));
        // 3. the contraction: the input's other dims in order, then the output feature
        let rest: Vec<usize> = (0..rank).filter(|&d| d != self.ifeat).collect();
        let mut r_shape: Vec<u64> = rest.iter().map(|&d| xs_shape[d]).collect();
        r_shape.push(o_feat);
        // output dim od takes result dim perm[od]
        let pos = |d: usize| rest.iter().position(|&r| r == d).unwrap_or(0);
        let mut perm = vec![0usize; rank];
        perm[self.ob] = pos(self.ib);
        perm[self.ofeat] = rank - 1;
        for j in 0..self.isp.len() {
            perm[self.osp[j]] = pos(self.isp[j]);
        }
        let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
        let r = if identity { self.out } else { fresh_value(g, "pw_dot", tt(&r_shape)) };
        let mut dot = simple_op("stablehlo.dot_general", &[x, w2], r, loc.clone());
        dot.attrs = vec![(
            "dot_dimension_numbers".to_owned(),
            Attr::Text(format!(
                "#stablehlo.dot<lhs_contracting_dimensions = [{}], rhs_contracting_dimensions = \
                 [{w_contract}]>",
                self.ifeat
            )),
        )];
        nodes.push(dot);
        // 4. into the output's dimension order
        if !identity {
            let mut t = simple_op("stablehlo.transpose", &[r], self.out, loc);
            t.attrs = vec![(
                "permutation".to_owned(),
                arr(&perm.iter().map(|&p| p as i64).collect::<Vec<_>>()),
            )];
            nodes.push(t);
        }
    }
}
