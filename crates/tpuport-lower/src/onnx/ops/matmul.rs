//! MatMul (numpy semantics, batch broadcasting) and Gemm.

use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::T;
use crate::onnx::host::broadcast_shapes;

pub(crate) const RULES: &[Rule] = &[rule("MatMul", 1, matmul), rule("Gemm", 7, gemm)];

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
