//! Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare) and
//! ArgMax/ArgMin. bf16/f16 inputs reduce in f32.

use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, max_of, min_of};
use crate::onnx::host::{HostVal, strides};

pub(crate) const RULES: &[Rule] = &[
    rule("ReduceSum", reduce),
    rule("ReduceMean", reduce),
    rule("ReduceMax", reduce),
    rule("ReduceMin", reduce),
    rule("ReduceProd", reduce),
    rule("ReduceL1", reduce),
    rule("ReduceL2", reduce),
    rule("ReduceLogSum", reduce),
    rule("ReduceLogSumExp", reduce),
    rule("ReduceSumSquare", reduce),
    rule("ArgMax", arg),
    rule("ArgMin", arg),
    rule("CumSum", cum),
    rule("CumProd", cum),
    rule("TopK", top_k),
];

/// Reduces `x` over `dims` with `kind` (`sum`, `max`, `min`, `prod`), accumulating low
/// precision floats in f32.
pub(crate) fn reduce_t(cx: &mut Cx<'_>, x: &T, dims: &[usize], kind: &str) -> T {
    let low = matches!(x.dt(), DType::BF16 | DType::F16);
    let xx = if low { cx.e.convert(x, DType::F32) } else { x.clone() };
    let dt = xx.dt();
    let r = match kind {
        "max" => cx.e.reduce(&xx, min_of(dt), dims, "maximum"),
        "min" => cx.e.reduce(&xx, max_of(dt), dims, "minimum"),
        "prod" => cx.e.reduce(&xx, 1.0, dims, "multiply"),
        _ => cx.e.reduce(&xx, 0.0, dims, "add"),
    };
    if low { cx.e.convert(&r, x.dt()) } else { r }
}

/// Mean over `dims` keeping them (f32 accumulation for low precision).
pub(crate) fn mean_keep(cx: &mut Cx<'_>, x: &T, dims: &[usize]) -> T {
    let n: u64 = dims.iter().map(|&d| x.shape()[d]).product();
    let s = reduce_t(cx, x, dims, "sum");
    let c = cx.e.like(&s, n as f64);
    let m = cx.e.bin("divide", &s, &c);
    keep(cx, &m, x.shape(), dims)
}

/// Reshapes a reduced value back to rank with 1s at `dims`.
pub(crate) fn keep(cx: &mut Cx<'_>, r: &T, shape: &[u64], dims: &[usize]) -> T {
    let ks: Vec<u64> =
        shape.iter().enumerate().map(|(i, &d)| if dims.contains(&i) { 1 } else { d }).collect();
    cx.e.reshape(r, &ks)
}

/// The reduced dims of a Reduce node on input of rank `r`; `None` for a no-op.
fn reduce_dims(cx: &Cx<'_>, node: &Node, r: usize) -> Result<Option<Vec<usize>>, LowerError> {
    let axes = if let Some(a) = Cx::ais(node, "axes") {
        Some(a)
    } else if cx.has(node, 1) {
        Some(cx.need_host(node, 1, "axes")?.as_i64())
    } else {
        None
    };
    let noop = Cx::ai(node, "noop_with_empty_axes", 0) == 1;
    Ok(match axes {
        Some(a) if !a.is_empty() => {
            let mut d = Vec::new();
            for v in a {
                d.push(cx.axis(node, v, r)?);
            }
            d.sort_unstable();
            d.dedup();
            Some(d)
        }
        _ if noop => None,
        _ => Some((0..r).collect()),
    })
}

/// Integer Sum/Prod/Max/Min of a host value (shape arithmetic such as tf2onnx's
/// `ReduceProd` of gathered dims), evaluated at lowering time.
fn host_reduce(cx: &mut Cx<'_>, node: &Node) -> Result<bool, LowerError> {
    let Some(h) = cx.host(node, 0) else { return Ok(false) };
    let op = node.op.as_str();
    if h.is_float() || !matches!(op, "ReduceSum" | "ReduceProd" | "ReduceMax" | "ReduceMin") {
        return Ok(false);
    }
    let Some(dims) = reduce_dims(cx, node, h.shape.len())? else {
        cx.set_host(node, 0, h);
        return Ok(true);
    };
    let kept: Vec<u64> =
        h.shape.iter().enumerate().map(|(i, &d)| if dims.contains(&i) { 1 } else { d }).collect();
    let (src, dst) = (strides(&h.shape), strides(&kept));
    let n = kept.iter().product::<u64>() as usize;
    let mut acc: Vec<Option<i64>> = vec![None; n];
    for (flat, v) in h.as_i64().into_iter().enumerate() {
        let mut o = 0;
        for (i, (&s, &k)) in src.iter().zip(&dst).enumerate() {
            if !dims.contains(&i) {
                o += (flat / s) % h.shape[i] as usize * k;
            }
        }
        acc[o] = Some(match (acc[o], op) {
            (None, _) => v,
            (Some(a), "ReduceSum") => a.wrapping_add(v),
            (Some(a), "ReduceProd") => a.wrapping_mul(v),
            (Some(a), "ReduceMax") => a.max(v),
            (Some(a), _) => a.min(v),
        });
    }
    let empty = if op == "ReduceProd" { 1 } else { 0 };
    let vals = acc.into_iter().map(|a| a.unwrap_or(empty)).collect();
    let shape = if Cx::ai(node, "keepdims", 1) == 1 {
        kept
    } else {
        h.shape.iter().enumerate().filter(|(i, _)| !dims.contains(i)).map(|(_, &d)| d).collect()
    };
    cx.set_host(node, 0, HostVal::ints(h.dtype, shape, vals));
    Ok(true)
}

fn reduce(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    if host_reduce(cx, node)? {
        return Ok(());
    }
    let x = cx.inp(node, 0)?;
    let Some(dims) = reduce_dims(cx, node, x.rank())? else {
        cx.set(node, 0, x);
        return Ok(());
    };
    let keepdims = Cx::ai(node, "keepdims", 1) == 1;
    let n: u64 = dims.iter().map(|&d| x.shape()[d]).product();
    let e = |cx: &mut Cx<'_>| -> T {
        match node.op.as_str() {
            "ReduceSum" => reduce_t(cx, &x, &dims, "sum"),
            "ReduceMean" => {
                let s = reduce_t(cx, &x, &dims, "sum");
                let c = cx.e.like(&s, n as f64);
                cx.e.bin("divide", &s, &c)
            }
            "ReduceMax" => reduce_t(cx, &x, &dims, "max"),
            "ReduceMin" => reduce_t(cx, &x, &dims, "min"),
            "ReduceProd" => reduce_t(cx, &x, &dims, "prod"),
            "ReduceL1" => {
                let a = cx.e.un("abs", &x);
                reduce_t(cx, &a, &dims, "sum")
            }
            "ReduceL2" => {
                let sq = cx.e.bin("multiply", &x, &x);
                let s = reduce_t(cx, &sq, &dims, "sum");
                cx.e.un("sqrt", &s)
            }
            "ReduceSumSquare" => {
                let sq = cx.e.bin("multiply", &x, &x);
                reduce_t(cx, &sq, &dims, "sum")
            }
            "ReduceLogSum" => {
                let s = reduce_t(cx, &x, &dims, "sum");
                cx.e.un("log", &s)
            }
            _ => {
                // LogSumExp, stabilised by the max.
                let m = reduce_t(cx, &x, &dims, "max");
                let mk = keep(cx, &m, x.shape(), &dims);
                let mb = cx.e.broadcast_in_dim(&mk, &(0..x.rank()).collect::<Vec<_>>(), x.shape());
                let fin = cx.e.compare("EQ", &mb, &mb);
                let z = cx.e.like(&mb, 0.0);
                let mb = cx.e.select(&fin, &mb, &z);
                let d = cx.e.bin("subtract", &x, &mb);
                let ex = cx.e.un("exponential", &d);
                let s = reduce_t(cx, &ex, &dims, "sum");
                let l = cx.e.un("log", &s);
                let mr = cx.e.reshape(&mk, l.shape());
                let fin2 = cx.e.compare("EQ", &mr, &mr);
                let z2 = cx.e.like(&mr, 0.0);
                let mr = cx.e.select(&fin2, &mr, &z2);
                cx.e.bin("add", &l, &mr)
            }
        }
    };
    let out = e(cx);
    let out = if keepdims { keep(cx, &out, x.shape(), &dims) } else { out };
    cx.set(node, 0, out);
    Ok(())
}

fn arg(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let axis = cx.axis(node, Cx::ai(node, "axis", 0), x.rank())?;
    let last = Cx::ai(node, "select_last_index", 0) == 1;
    let dir = if node.op == "ArgMax" { "GT" } else { "LT" };
    let r = cx.e.arg_reduce(&x, axis, dir, last);
    let out = if Cx::ai(node, "keepdims", 1) == 1 { keep(cx, &r, x.shape(), &[axis]) } else { r };
    cx.set(node, 0, out);
    Ok(())
}

fn cum(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let x = cx.inp(node, 0)?;
    let a = cx.need_host(node, 1, "axis")?.as_i64()[0];
    let axis = cx.axis(node, a, x.rank())?;
    let excl = Cx::ai(node, "exclusive", 0) == 1;
    let rev = Cx::ai(node, "reverse", 0) == 1;
    let r = x.rank();
    let n = x.shape()[axis] as i64;
    let (body, init) = if node.op == "CumProd" { ("multiply", 1.0) } else { ("add", 0.0) };
    let mut win = vec![1i64; r];
    win[axis] = n;
    let mut pads = vec![(0i64, 0i64); r];
    pads[axis] = if rev { (0, n - 1) } else { (n - 1, 0) };
    let mut y = cx.e.reduce_window(&x, init, body, &win, &vec![1; r], &vec![1; r], &pads);
    if excl {
        // Shift by one along the axis, filling with the identity.
        let v = cx.e.scalar(x.dt(), init);
        let mut lo = vec![0i64; r];
        let mut hi = vec![0i64; r];
        if rev {
            lo[axis] = -1;
            hi[axis] = 1;
        } else {
            lo[axis] = 1;
            hi[axis] = -1;
        }
        y = super::shape::pad_const(cx, &y, &v, &lo, &hi);
    }
    cx.set(node, 0, y);
    Ok(())
}

fn top_k(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    use std::fmt::Write as _;
    let x = cx.inp(node, 0)?;
    let k = cx.need_host(node, 1, "k")?.as_i64()[0];
    let axis = cx.axis(node, Cx::ai(node, "axis", -1), x.rank())?;
    let largest = Cx::ai(node, "largest", 1) == 1;
    let sh = x.shape().to_vec();
    let iota = cx.e.iota(DType::I64, &sh, axis);
    let r = cx.e.fresh();
    let (a, b, c, d, p) = (cx.e.fresh(), cx.e.fresh(), cx.e.fresh(), cx.e.fresh(), cx.e.fresh());
    let sv = crate::onnx::emit::Ty::new(x.dt(), vec![]).mlir();
    let si = crate::onnx::emit::Ty::new(DType::I64, vec![]).mlir();
    let sb = crate::onnx::emit::Ty::new(DType::Bool, vec![]).mlir();
    let dir = if largest { "GT" } else { "LT" };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{r}:2 = \"stablehlo.sort\"({}, {}) <{{dimension = {axis} : i64, is_stable = true}}> ({{",
        x.name, iota.name
    );
    let _ = writeln!(s, "^bb0({a}: {sv}, {b}: {sv}, {c}: {si}, {d}: {si}):");
    let _ = writeln!(
        s,
        "  {p} = \"stablehlo.compare\"({a}, {b}) <{{comparison_direction = #stablehlo<comparison_direction {dir}>}}> : ({sv}, {sv}) -> {sb}"
    );
    let _ = writeln!(s, "  \"stablehlo.return\"({p}) : ({sb}) -> ()");
    let _ = writeln!(
        s,
        "}}) : ({}, {}) -> ({}, {})",
        x.ty.mlir(),
        iota.ty.mlir(),
        x.ty.mlir(),
        iota.ty.mlir()
    );
    for line in s.lines() {
        cx.e.body.push_str("    ");
        cx.e.body.push_str(line);
        cx.e.body.push('\n');
    }
    let vals = T { name: format!("{r}#0"), ty: x.ty.clone() };
    let idx = T { name: format!("{r}#1"), ty: iota.ty.clone() };
    let st = vec![0i64; sh.len()];
    let mut lim: Vec<i64> = sh.iter().map(|&d| d as i64).collect();
    lim[axis] = k;
    let one = vec![1i64; sh.len()];
    let v = cx.e.slice(&vals, &st, &lim, &one);
    let i = cx.e.slice(&idx, &st, &lim, &one);
    cx.set(node, 0, v);
    cx.set(node, 1, i);
    Ok(())
}
