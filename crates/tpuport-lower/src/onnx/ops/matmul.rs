//! MatMul (numpy semantics, batch broadcasting) and Gemm.

use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::T;
use crate::onnx::host::broadcast_shapes;

pub(crate) const RULES: &[Rule] = &[
    rule("MatMul", matmul),
    rule("Gemm", gemm),
    rule("Einsum", einsum),
    rule("QLinearMatMul", qlinear_matmul),
    rule("MatMulInteger", matmul_integer),
];

/// dot_general accumulating in f32 for bf16/f16 operands, result back in the operand type.
pub(crate) fn dot(
    cx: &mut Cx<'_>,
    a: &T,
    b: &T,
    batch: (&[usize], &[usize]),
    contract: (&[usize], &[usize]),
) -> T {
    let low = matches!(a.dt(), DType::BF16 | DType::F16);
    let acc = if low { DType::F32 } else { a.dt() };
    let r = cx.e.dot_general(a, b, batch, contract, acc);
    if low { cx.e.convert(&r, a.dt()) } else { r }
}

pub(crate) fn matmul_t(cx: &mut Cx<'_>, node: &Node, a: &T, b: &T) -> Result<T, LowerError> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra == 0 || rb == 0 {
        return Err(cx.invalid(node, "MatMul operands must have rank >= 1"));
    }
    let a2 = if ra == 1 { cx.e.reshape(a, &[1, a.shape()[0]]) } else { a.clone() };
    let b2 = if rb == 1 { cx.e.reshape(b, &[b.shape()[0], 1]) } else { b.clone() };
    let (ra2, rb2) = (a2.rank(), b2.rank());
    let k = a2.shape()[ra2 - 1];
    if b2.shape()[rb2 - 2] != k {
        return Err(
            cx.invalid(node, format!("inner dimensions differ: {:?} x {:?}", a.shape(), b.shape()))
        );
    }
    let r = if rb2 == 2 {
        // [..., M, K] x [K, N] -> [..., M, N] with no batch dims.
        dot(cx, &a2, &b2, (&[], &[]), (&[ra2 - 1], &[0]))
    } else {
        let ba = &a2.shape()[..ra2 - 2];
        let bb = &b2.shape()[..rb2 - 2];
        let bs = broadcast_shapes(ba, bb).ok_or_else(|| {
            cx.invalid(node, format!("batch dims {ba:?} and {bb:?} do not broadcast"))
        })?;
        let nb = bs.len();
        let mut sa = bs.clone();
        sa.extend_from_slice(&a2.shape()[ra2 - 2..]);
        let mut sb = bs.clone();
        sb.extend_from_slice(&b2.shape()[rb2 - 2..]);
        let a3 = cx.e.bcast_to(&a2, &sa);
        let b3 = cx.e.bcast_to(&b2, &sb);
        let batch: Vec<usize> = (0..nb).collect();
        dot(cx, &a3, &b3, (&batch, &batch), (&[nb + 1], &[nb]))
    };
    // Drop the promoted dims.
    let mut shape = r.shape().to_vec();
    if rb == 1 {
        shape.pop();
    }
    if ra == 1 {
        let n = shape.len();
        shape.remove(n - if rb == 1 { 1 } else { 2 });
    }
    Ok(cx.e.reshape(&r, &shape))
}

fn matmul(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let a = cx.inp(node, 0)?;
    let b = cx.inp(node, 1)?;
    let r = matmul_t(cx, node, &a, &b)?;
    cx.set(node, 0, r);
    Ok(())
}

fn gemm(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let a = cx.inp(node, 0)?;
    let b = cx.inp(node, 1)?;
    if a.rank() != 2 || b.rank() != 2 {
        return Err(cx.invalid(node, "Gemm operands must be 2-D"));
    }
    let ta = Cx::ai(node, "transA", 0) == 1;
    let tb = Cx::ai(node, "transB", 0) == 1;
    let alpha = Cx::af(node, "alpha", 1.0);
    let beta = Cx::af(node, "beta", 1.0);
    let ca = if ta { 0 } else { 1 };
    let cb = if tb { 1 } else { 0 };
    let mut r = dot(cx, &a, &b, (&[], &[]), (&[ca], &[cb]));
    if alpha != 1.0 {
        let s = cx.e.like(&r, alpha);
        r = cx.e.bin("multiply", &r, &s);
    }
    if let Some(c) = cx.opt_inp(node, 2)? {
        let mut c = cx.e.bcast_to(&c, r.shape());
        if beta != 1.0 {
            let s = cx.e.like(&c, beta);
            c = cx.e.bin("multiply", &c, &s);
        }
        r = cx.e.bin("add", &r, &c);
    }
    cx.set(node, 0, r);
    Ok(())
}

/// Sums `x` (labelled `labels`) over the labels not in `keep`.
fn sum_out(cx: &mut Cx<'_>, x: &T, labels: &[char], keep: &dyn Fn(char) -> bool) -> (T, Vec<char>) {
    let dims: Vec<usize> =
        labels.iter().enumerate().filter(|(_, c)| !keep(**c)).map(|(i, _)| i).collect();
    if dims.is_empty() {
        return (x.clone(), labels.to_vec());
    }
    let r = super::reduction::reduce_t(cx, x, &dims, "sum");
    (r, labels.iter().copied().filter(|c| keep(*c)).collect())
}

fn einsum(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let eq: String = Cx::astr(node, "equation")
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if eq.contains("...") {
        return Err(cx.unsup(node, "ellipsis in the equation"));
    }
    let (lhs, out) = match eq.split_once("->") {
        Some((l, o)) => (l.to_owned(), Some(o.chars().collect::<Vec<char>>())),
        None => (eq.clone(), None),
    };
    let terms: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    let n = cx.n_in(node);
    if terms.len() != n || n == 0 || n > 2 {
        return Err(cx.unsup(node, format!("equation `{eq}` with {n} operands (1 or 2 supported)")));
    }
    for t in &terms {
        let mut s = t.clone();
        s.sort_unstable();
        s.dedup();
        if s.len() != t.len() {
            return Err(cx.unsup(node, format!("repeated label (diagonal) in `{eq}`")));
        }
    }
    let out: Vec<char> = out.unwrap_or_else(|| {
        let mut all: Vec<char> = terms.concat();
        all.sort_unstable();
        all.iter()
            .copied()
            .filter(|c| all.iter().filter(|d| *d == c).count() == 1)
            .collect::<Vec<_>>()
            .into_iter()
            .fold(Vec::new(), |mut v, c| {
                if !v.contains(&c) {
                    v.push(c);
                }
                v
            })
    });
    let a = cx.inp(node, 0)?;
    let (res, labels) = if n == 1 {
        sum_out(cx, &a, &terms[0], &|c| out.contains(&c))
    } else {
        let b = cx.inp(node, 1)?;
        let (ta, tb) = (&terms[0], &terms[1]);
        let (a, la) = sum_out(cx, &a, ta, &|c| out.contains(&c) || tb.contains(&c));
        let (b, lb) = sum_out(cx, &b, tb, &|c| out.contains(&c) || ta.contains(&c));
        let batch: Vec<char> =
            la.iter().copied().filter(|c| lb.contains(c) && out.contains(c)).collect();
        let contract: Vec<char> =
            la.iter().copied().filter(|c| lb.contains(c) && !out.contains(c)).collect();
        let pos = |l: &[char], c: char| l.iter().position(|&d| d == c).unwrap_or(0);
        let ba: Vec<usize> = batch.iter().map(|&c| pos(&la, c)).collect();
        let bb: Vec<usize> = batch.iter().map(|&c| pos(&lb, c)).collect();
        let ca: Vec<usize> = contract.iter().map(|&c| pos(&la, c)).collect();
        let cb: Vec<usize> = contract.iter().map(|&c| pos(&lb, c)).collect();
        let r = dot(cx, &a, &b, (&ba, &bb), (&ca, &cb));
        let mut labels = batch.clone();
        labels.extend(la.iter().copied().filter(|c| !batch.contains(c) && !contract.contains(c)));
        labels.extend(lb.iter().copied().filter(|c| !batch.contains(c) && !contract.contains(c)));
        (r, labels)
    };
    if labels.len() != out.len() || out.iter().any(|c| !labels.contains(c)) {
        return Err(cx.invalid(node, format!("output labels of `{eq}` do not match the operands")));
    }
    let perm: Vec<usize> =
        out.iter().map(|c| labels.iter().position(|d| d == c).unwrap_or(0)).collect();
    let y = cx.e.transpose(&res, &perm);
    cx.set(node, 0, y);
    Ok(())
}

/// `(x - zp)` in `dt`, with numpy broadcasting of the zero point.
fn minus_zp(
    cx: &mut Cx<'_>,
    node: &Node,
    x: &T,
    zp: Option<T>,
    dt: DType,
) -> Result<T, LowerError> {
    let xf = cx.e.convert(x, dt);
    Ok(match zp {
        Some(z) => {
            let z = cx.e.convert(&z, dt);
            let (a, b) = super::elementwise::bcast2(cx, node, &xf, &z)?;
            cx.e.bin("subtract", &a, &b)
        }
        None => xf,
    })
}

fn qlinear_matmul(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let a = cx.inp(node, 0)?;
    let (as_, azp) = (cx.inp(node, 1)?, cx.opt_inp(node, 2)?);
    let b = cx.inp(node, 3)?;
    let (bs, bzp) = (cx.inp(node, 4)?, cx.opt_inp(node, 5)?);
    let (ys, yzp) = (cx.inp(node, 6)?, cx.opt_inp(node, 7)?);
    let out_dt = yzp.as_ref().map_or(DType::U8, T::dt);
    let f = DType::F32;
    let ad = minus_zp(cx, node, &a, azp, f)?;
    let asf = cx.e.convert(&as_, f);
    let (ad, asf) = super::elementwise::bcast2(cx, node, &ad, &asf)?;
    let ad = cx.e.bin("multiply", &ad, &asf);
    let bd = minus_zp(cx, node, &b, bzp, f)?;
    let bsf = cx.e.convert(&bs, f);
    let (bd, bsf) = super::elementwise::bcast2(cx, node, &bd, &bsf)?;
    let bd = cx.e.bin("multiply", &bd, &bsf);
    let r = matmul_t(cx, node, &ad, &bd)?;
    let ysf = cx.e.convert(&ys, f);
    let (r, ysf) = super::elementwise::bcast2(cx, node, &r, &ysf)?;
    let q = cx.e.bin("divide", &r, &ysf);
    let mut q = cx.e.un("round_nearest_even", &q);
    if let Some(z) = yzp {
        let z = cx.e.convert(&z, f);
        let (q2, z2) = super::elementwise::bcast2(cx, node, &q, &z)?;
        q = cx.e.bin("add", &q2, &z2);
    }
    let lo = cx.e.like(&q, crate::onnx::emit::min_of(out_dt));
    let hi = cx.e.like(&q, crate::onnx::emit::max_of(out_dt));
    let q = cx.e.ew("clamp", &[&lo, &q, &hi], f);
    let y = cx.e.convert(&q, out_dt);
    cx.set(node, 0, y);
    Ok(())
}

fn matmul_integer(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let a = cx.inp(node, 0)?;
    let b = cx.inp(node, 1)?;
    let azp = cx.opt_inp(node, 2)?;
    let bzp = cx.opt_inp(node, 3)?;
    let ai = minus_zp(cx, node, &a, azp, DType::I32)?;
    let bi = minus_zp(cx, node, &b, bzp, DType::I32)?;
    let y = matmul_t(cx, node, &ai, &bi)?;
    cx.set(node, 0, y);
    Ok(())
}
