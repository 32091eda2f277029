//! Depthwise convolutions unrolled into one multiply-add per kernel tap, for XLA:CPU.
//!
//! XLA:CPU runs a `stablehlo.convolution` whose `feature_group_count` equals the input channel
//! count (a depthwise convolution: MobileNet, EfficientNet, ConvNeXt) through a generic grouped
//! path that is an order of magnitude slower than the same arithmetic written as elementwise
//! ops: on this machine a 3×3 depthwise convolution over `f32[8,96,112,112]` took 2,669 ms as a
//! grouped convolution and 222 ms as nine shifted multiply-adds (JAX 0.10.2 on XLA:CPU, median
//! of 10, `.venv/bin/python scripts/bench_depthwise_jax.py`). The TPU compiler has its own
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

use super::{fresh_value, recompute_producers, simple_op};

/// Kernels with more taps than this (7×7) stay convolutions: the unrolled form grows with taps.
pub const MAX_TAPS: u64 = 49;

/// Rewrites every depthwise `stablehlo.convolution` of `model` (functions and regions included)
/// as described in the module docs; returns how many were rewritten.
#[must_use]
pub fn unroll_depthwise(model: &mut Model) -> usize {
    let mut n = graph(&mut model.graph);
    for f in &mut model.functions {
        n += graph(f);
    }
    n
}

/// Whether a module's text has a grouped convolution worth parsing it for: a cheap test that
/// spares the parse of the many modules that have none.
#[must_use]
pub fn may_have_depthwise(text: &str) -> bool {
    text.contains("feature_group_count") && text.contains("convolution")
}

fn graph(g: &mut Graph) -> usize {
    let old = std::mem::take(&mut g.nodes);
    let mut nodes = Vec::with_capacity(old.len());
    let mut count = 0;
    for mut node in old {
        for (_, sg) in &mut node.subgraphs {
            count += graph(sg);
        }
        match node.op.as_str() {
            "stablehlo.convolution" => match Conv::of(g, &node) {
                Some(c) => {
                    c.emit(g, &mut nodes, node.location.clone());
                    count += 1;
                }
                None => nodes.push(node),
            },
            _ => nodes.push(node),
        }
    }
    g.nodes = nodes;
    recompute_producers(g);
    count
}

/// A depthwise convolution's geometry, all dimension indices resolved.
struct Conv {
    x: ValueId,
    w: ValueId,
    out: ValueId,
    dtype: DType,
    x_shape: Vec<u64>,
    w_shape: Vec<u64>,
    out_shape: Vec<u64>,
    /// Input dims: batch, feature, spatial (in spatial order).
    ib: usize,
    ifeat: usize,
    isp: Vec<usize>,
    /// Kernel spatial dims.
    ksp: Vec<usize>,
    /// Output dims.
    ob: usize,
    ofeat: usize,
    osp: Vec<usize>,
    strides: Vec<i64>,
    rhs_dilation: Vec<i64>,
    /// Low and high padding per spatial dim.
    padding: Vec<(i64, i64)>,
}

fn int(n: &Node, name: &str) -> Option<i64> {
    match n.attr(name)? {
        Attr::Int(v) => Some(*v),
        Attr::Text(t) => t.split(':').next()?.trim().parse().ok(),
        _ => None,
    }
}

fn index(n: &Node, name: &str) -> Option<usize> {
    int(n, name).and_then(|v| usize::try_from(v).ok())
}

fn ints(n: &Node, name: &str) -> Option<Vec<i64>> {
    match n.attr(name)? {
        Attr::Ints(v) => Some(v.clone()),
        Attr::Int(v) => Some(vec![*v]),
        Attr::Text(t) => {
            let body = t.split(" : ").next().unwrap_or(t);
            let body = body.strip_prefix("array<i64").unwrap_or(body);
            Some(
                body.split(|c: char| !(c.is_ascii_digit() || c == '-'))
                    .filter_map(|s| s.parse().ok())
                    .collect(),
            )
        }
        _ => None,
    }
}

fn indices(n: &Node, name: &str) -> Option<Vec<usize>> {
    ints(n, name)?.into_iter().map(|v| usize::try_from(v).ok()).collect()
}

/// `attr` is absent or every entry equals `v` (`window_reversal` is a bool array).
fn all_or_absent(n: &Node, name: &str, v: i64) -> bool {
    match n.attr(name) {
        None => true,
        Some(Attr::Text(t)) if t.contains("true") => false,
        Some(Attr::Text(t)) if t.contains("false") => true,
        Some(_) => ints(n, name).is_some_and(|x| x.iter().all(|&e| e == v)),
    }
}

impl Conv {
    fn of(g: &Graph, n: &Node) -> Option<Conv> {
        let (Some(Some(x)), Some(Some(w)), Some(&out)) =
            (n.inputs.first().copied(), n.inputs.get(1).copied(), n.outputs.first())
        else {
            return None;
        };
        let ty = |v: ValueId| g.value(v).ty.clone();
        let (tx, tw, to) = (ty(x), ty(w), ty(out));
        let dtype = tx.dtype?;
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
            || tw.dtype != Some(dtype)
            || to.dtype != Some(dtype)
        {
            return None;
        }
        let (x_shape, w_shape, out_shape) =
            (tx.shape?.as_fixed()?, tw.shape?.as_fixed()?, to.shape?.as_fixed()?);
        let groups = u64::try_from(int(n, "feature_group_count")?).ok()?;
        if groups < 2
            || int(n, "batch_group_count").unwrap_or(1) != 1
            || !all_or_absent(n, "lhs_dilation", 1)
            || !all_or_absent(n, "window_reversal", 0)
        {
            return None;
        }
        let ib = index(n, "tpuport.input_batch_dimension")?;
        let ifeat = index(n, "tpuport.input_feature_dimension")?;
        let kin = index(n, "tpuport.kernel_input_feature_dimension")?;
        let kout = index(n, "tpuport.kernel_output_feature_dimension")?;
        let ob = index(n, "tpuport.output_batch_dimension")?;
        let ofeat = index(n, "tpuport.output_feature_dimension")?;
        let isp = indices(n, "tpuport.input_spatial_dimensions")?;
        let ksp = indices(n, "tpuport.kernel_spatial_dimensions")?;
        let osp = indices(n, "tpuport.output_spatial_dimensions")?;
        let nsp = isp.len();
        if ksp.len() != nsp || osp.len() != nsp || x_shape.len() != nsp + 2 {
            return None;
        }
        // depth multiplier 1: C in = groups = C out, one input feature per group
        if *x_shape.get(ifeat)? != groups
            || *w_shape.get(kin)? != 1
            || *w_shape.get(kout)? != groups
            || *out_shape.get(ofeat)? != groups
            || x_shape.get(ib)? != out_shape.get(ob)?
        {
            return None;
        }
        let taps: u64 = ksp.iter().map(|&k| w_shape.get(k).copied().unwrap_or(0)).product();
        if taps == 0 || taps > MAX_TAPS {
            return None;
        }
        let strides = ints(n, "window_strides").unwrap_or_else(|| vec![1; nsp]);
        let rhs_dilation = ints(n, "rhs_dilation").unwrap_or_else(|| vec![1; nsp]);
        let mut pad = ints(n, "padding").unwrap_or_else(|| vec![0; 2 * nsp]);
        if let [v] = pad[..] {
            // a splat (`dense<1> : tensor<2x2xi64>`): the same padding on every side
            pad = vec![v; 2 * nsp];
        }
        if strides.len() != nsp
            || rhs_dilation.len() != nsp
            || pad.len() != 2 * nsp
            || strides.iter().chain(&rhs_dilation).any(|&s| s < 1)
        {
            return None;
        }
        let padding: Vec<(i64, i64)> = pad.chunks(2).map(|p| (p[0], p[1])).collect();
        // the output extent must be what the window arithmetic gives, or the slices go wrong
        for j in 0..nsp {
            let i = i64::try_from(x_shape[isp[j]]).ok()? + padding[j].0 + padding[j].1;
            let k = i64::try_from(w_shape[ksp[j]]).ok()?;
            let eff = (k - 1) * rhs_dilation[j] + 1;
            let o = if i < eff { 0 } else { (i - eff) / strides[j] + 1 };
            if u64::try_from(o).ok()? != out_shape[osp[j]] || o == 0 {
                return None;
            }
        }
        Some(Conv {
            x,
            w,
            out,
            dtype,
            x_shape,
            w_shape,
            out_shape,
            ib,
            ifeat,
            isp,
            ksp,
            ob,
            ofeat,
            osp,
            strides,
            rhs_dilation,
            padding,
        })
    }

    fn emit(&self, g: &mut Graph, nodes: &mut Vec<Node>, loc: Option<String>) {
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

/// A StableHLO text module as the CPU plugin should compile it: `Some(text)` with its
/// depthwise convolutions unrolled when it has any, `None` when there is nothing to rewrite (no
/// grouped convolution, or none that qualifies) or the text does not parse here (the plugin
/// then compiles the original and reports its own errors).
#[must_use]
pub fn for_cpu(text: &str) -> Option<String> {
    if !may_have_depthwise(text) {
        return None;
    }
    let mut model = tpuport_formats::stablehlo::parse_text(
        std::path::Path::new("module.mlir"),
        text,
        &tpuport_formats::Limits::default(),
    )
    .ok()?;
    if unroll_depthwise(&mut model) == 0 {
        return None;
    }
    tpuport_formats::stablehlo::print_model(&model).ok()
}
