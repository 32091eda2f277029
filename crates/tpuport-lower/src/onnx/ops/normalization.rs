//! BatchNormalization (inference), LayerNormalization, InstanceNormalization,
//! GroupNormalization, Softmax, LogSoftmax. Statistics accumulate in f32 for bf16/f16.

use tpuport_model::{DType, Node};

use super::reduction::{keep, mean_keep, reduce_t};
use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::T;

pub(crate) const RULES: &[Rule] = &[
    rule("BatchNormalization", batch_norm),
    rule("LayerNormalization", layer_norm),
    rule("InstanceNormalization", instance_norm),
    rule("GroupNormalization", group_norm),
    rule("Softmax", softmax),
    rule("LogSoftmax", softmax),
    rule("Hardmax", softmax),
    rule("RMSNormalization", rms_norm),
    rule("LpNormalization", lp_norm),
    rule("MeanVarianceNormalization", mvn),
    rule("LRN", lrn),
];

fn up(cx: &mut Cx<'_>, x: &T) -> T {
    if matches!(x.dt(), DType::BF16 | DType::F16) { cx.e.convert(x, DType::F32) } else { x.clone() }
}

/// Broadcast a per-channel vector [C] to `shape` at dim 1.
fn chan(cx: &mut Cx<'_>, v: &T, shape: &[u64]) -> T {
    cx.e.broadcast_in_dim(v, &[1], shape)
}

fn batch_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    if Cx::ai(node, "training_mode", 0) == 1 {
        return Err(cx.unsup(node, "training_mode=1"));
    }
    let x = cx.inp(node, 0)?;
    let s = cx.inp(node, 1)?;
    let b = cx.inp(node, 2)?;
    let m = cx.inp(node, 3)?;
    let v = cx.inp(node, 4)?;
    let eps = Cx::af(node, "epsilon", 1e-5);
    let sh = x.shape().to_vec();
    let dt = x.dt();
    let [s, b, m, v] = [s, b, m, v].map(|t| cx.e.convert(&t, dt));
    let ev = cx.e.like(&v, eps);
    let ve = cx.e.bin("add", &v, &ev);
    let inv = cx.e.un("rsqrt", &ve);
    let scale = cx.e.bin("multiply", &s, &inv);
    let sm = cx.e.bin("multiply", &m, &scale);
    let shift = cx.e.bin("subtract", &b, &sm);
    let sc = chan(cx, &scale, &sh);
    let shb = chan(cx, &shift, &sh);
    let y = cx.e.bin("multiply", &x, &sc);
    let y = cx.e.bin("add", &y, &shb);
    cx.set(node, 0, y);
    Ok(())
}

/// Normalises `x` over `dims`, returning (y, mean, inv_std) with stats in f32.
fn normalize(cx: &mut Cx<'_>, x: &T, dims: &[usize], eps: f64) -> (T, T, T) {
    let xf = up(cx, x);
    let all: Vec<usize> = (0..x.rank()).collect();
    let mean = mean_keep(cx, &xf, dims);
    let mb = cx.e.broadcast_in_dim(&mean, &all, xf.shape());
    let d = cx.e.bin("subtract", &xf, &mb);
    let sq = cx.e.bin("multiply", &d, &d);
    let var = mean_keep(cx, &sq, dims);
    let ev = cx.e.like(&var, eps);
    let ve = cx.e.bin("add", &var, &ev);
    let inv = cx.e.un("rsqrt", &ve);
    let ib = cx.e.broadcast_in_dim(&inv, &all, xf.shape());
    let y = cx.e.bin("multiply", &d, &ib);
    (y, mean, inv)
}

fn layer_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let axis = cx.axis(node, Cx::ai(node, "axis", -1), x.rank())?;
    let eps = Cx::af(node, "epsilon", 1e-5);
    let dims: Vec<usize> = (axis..x.rank()).collect();
    let (y, mean, inv) = normalize(cx, &x, &dims, eps);
    let mut y = cx.e.convert(&y, x.dt());
    let sh = x.shape().to_vec();
    let scale = cx.inp(node, 1)?;
    let scale = cx.e.bcast_to(&scale, &sh);
    y = cx.e.bin("multiply", &y, &scale);
    if let Some(b) = cx.opt_inp(node, 2)? {
        let b = cx.e.bcast_to(&b, &sh);
        y = cx.e.bin("add", &y, &b);
    }
    cx.set(node, 0, y);
    if cx.out_id(node, 1).is_some() {
        cx.set(node, 1, mean);
    }
    if cx.out_id(node, 2).is_some() {
        cx.set(node, 2, inv);
    }
    Ok(())
}

fn instance_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let eps = Cx::af(node, "epsilon", 1e-5);
    let dims: Vec<usize> = (2..x.rank()).collect();
    let (y, _, _) = normalize(cx, &x, &dims, eps);
    let y = cx.e.convert(&y, x.dt());
    let sh = x.shape().to_vec();
    let s = cx.inp(node, 1)?;
    let b = cx.inp(node, 2)?;
    let s = chan(cx, &s, &sh);
    let b = chan(cx, &b, &sh);
    let y = cx.e.bin("multiply", &y, &s);
    let y = cx.e.bin("add", &y, &b);
    cx.set(node, 0, y);
    Ok(())
}

fn group_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let g = Cx::ai(node, "num_groups", 1) as u64;
    let eps = Cx::af(node, "epsilon", 1e-5);
    let sh = x.shape().to_vec();
    if x.rank() < 2 || g == 0 || sh[1] % g != 0 {
        return Err(cx.invalid(node, "channels must divide into num_groups"));
    }
    let mut gs = vec![sh[0], g, sh[1] / g];
    gs.extend_from_slice(&sh[2..]);
    let xg = cx.e.reshape(&x, &gs);
    let dims: Vec<usize> = (2..gs.len()).collect();
    let (y, _, _) = normalize(cx, &xg, &dims, eps);
    let y = cx.e.convert(&y, x.dt());
    let y = cx.e.reshape(&y, &sh);
    let s = cx.inp(node, 1)?;
    let b = cx.inp(node, 2)?;
    let s = chan(cx, &s, &sh);
    let b = chan(cx, &b, &sh);
    let y = cx.e.bin("multiply", &y, &s);
    let y = cx.e.bin("add", &y, &b);
    cx.set(node, 0, y);
    Ok(())
}

fn softmax(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let r = x.rank();
    let default_axis = if cx.opset >= 13 { -1 } else { 1 };
    let axis = cx.axis(node, Cx::ai(node, "axis", default_axis), r)?;
    // Before opset 13 the input is coerced to 2-D at `axis`.
    let (xx, dims) = if cx.opset < 13 {
        let outer: u64 = x.shape()[..axis].iter().product();
        let inner: u64 = x.shape()[axis..].iter().product();
        (cx.e.reshape(&x, &[outer, inner]), vec![1usize])
    } else {
        (x.clone(), vec![axis])
    };
    let all: Vec<usize> = (0..xx.rank()).collect();
    let xs = xx.shape().to_vec();
    let m = reduce_t(cx, &xx, &dims, "max");
    let mk = keep(cx, &m, &xs, &dims);
    let mb = cx.e.broadcast_in_dim(&mk, &all, &xs);
    let out = if node.op == "Hardmax" {
        // First index of the max along the axis.
        let eq = cx.e.compare("EQ", &xx, &mb);
        let io = cx.e.iota(DType::I64, &xs, dims[0]);
        let big = cx.e.like(&io, xs[dims[0]] as f64);
        let cand = cx.e.select(&eq, &io, &big);
        let first = reduce_t(cx, &cand, &dims, "min");
        let fk = keep(cx, &first, &xs, &dims);
        let fb = cx.e.broadcast_in_dim(&fk, &all, &xs);
        let hit = cx.e.compare("EQ", &io, &fb);
        cx.e.convert(&hit, xx.dt())
    } else {
        let d = cx.e.bin("subtract", &xx, &mb);
        let ex = cx.e.un("exponential", &d);
        let s = reduce_t(cx, &ex, &dims, "sum");
        let sk = keep(cx, &s, &xs, &dims);
        let sb = cx.e.broadcast_in_dim(&sk, &all, &xs);
        if node.op == "LogSoftmax" {
            let l = cx.e.un("log", &sb);
            cx.e.bin("subtract", &d, &l)
        } else {
            cx.e.bin("divide", &ex, &sb)
        }
    };
    let out = cx.e.reshape(&out, x.shape());
    cx.set(node, 0, out);
    Ok(())
}

fn rms_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let axis = cx.axis(node, Cx::ai(node, "axis", -1), x.rank())?;
    let eps = Cx::af(node, "epsilon", 1e-5);
    let dims: Vec<usize> = (axis..x.rank()).collect();
    let xf = up(cx, &x);
    let all: Vec<usize> = (0..x.rank()).collect();
    let sq = cx.e.bin("multiply", &xf, &xf);
    let ms = mean_keep(cx, &sq, &dims);
    let ev = cx.e.like(&ms, eps);
    let ve = cx.e.bin("add", &ms, &ev);
    let inv = cx.e.un("rsqrt", &ve);
    let ib = cx.e.broadcast_in_dim(&inv, &all, xf.shape());
    let y = cx.e.bin("multiply", &xf, &ib);
    let y = cx.e.convert(&y, x.dt());
    let s = cx.inp(node, 1)?;
    let s = cx.e.bcast_to(&s, x.shape());
    let y = cx.e.bin("multiply", &y, &s);
    cx.set(node, 0, y);
    Ok(())
}

fn lp_norm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let axis = cx.axis(node, Cx::ai(node, "axis", -1), x.rank())?;
    let p = Cx::ai(node, "p", 2);
    let all: Vec<usize> = (0..x.rank()).collect();
    let n = if p == 1 {
        let a = cx.e.un("abs", &x);
        reduce_t(cx, &a, &[axis], "sum")
    } else if p == 2 {
        let sq = cx.e.bin("multiply", &x, &x);
        let s = reduce_t(cx, &sq, &[axis], "sum");
        cx.e.un("sqrt", &s)
    } else {
        return Err(cx.unsup(node, format!("p={p}")));
    };
    let nk = keep(cx, &n, x.shape(), &[axis]);
    let nb = cx.e.broadcast_in_dim(&nk, &all, x.shape());
    let z = cx.e.like(&nb, 0.0);
    let is0 = cx.e.compare("EQ", &nb, &z);
    let q = cx.e.bin("divide", &x, &nb);
    let y = cx.e.select(&is0, &z, &q);
    cx.set(node, 0, y);
    Ok(())
}

fn mvn(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let axes = Cx::ais(node, "axes").unwrap_or_else(|| vec![0, 2, 3]);
    let mut dims = Vec::new();
    for a in axes {
        dims.push(cx.axis(node, a, x.rank())?);
    }
    let (y, _, _) = normalize(cx, &x, &dims, 1e-9);
    let y = cx.e.convert(&y, x.dt());
    cx.set(node, 0, y);
    Ok(())
}

fn lrn(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let size = Cx::ai(node, "size", 1);
    let alpha = Cx::af(node, "alpha", 1e-4);
    let beta = Cx::af(node, "beta", 0.75);
    let bias = Cx::af(node, "bias", 1.0);
    let r = x.rank();
    let sq = cx.e.bin("multiply", &x, &x);
    let mut win = vec![1i64; r];
    win[1] = size;
    let lo = (size - 1) / 2;
    let hi = size - 1 - lo;
    let mut pads = vec![(0i64, 0i64); r];
    pads[1] = (lo, hi);
    let s = cx.e.reduce_window(&sq, 0.0, "add", &win, &vec![1; r], &vec![1; r], &pads);
    let a = cx.e.like(&s, alpha / size as f64);
    let b = cx.e.like(&s, bias);
    let p = cx.e.like(&s, beta);
    let t = cx.e.bin("multiply", &s, &a);
    let t = cx.e.bin("add", &t, &b);
    let t = cx.e.bin("power", &t, &p);
    let y = cx.e.bin("divide", &x, &t);
    cx.set(node, 0, y);
    Ok(())
}
