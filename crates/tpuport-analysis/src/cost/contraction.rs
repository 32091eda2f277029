//! Matrix products: `2 · batch · M · N · K` FLOPs (dense, so MXU FLOPs are the same); a Gemm
//! with a bias adds `M · N`. The dimensions come from `dot_general`'s dimension numbers, Gemm's
//! transposes, or MatMul's numpy broadcasting (a weight RHS with a broadcast batch is one GEMM
//! with the batch folded into M). A product of two values computed in the step (attention
//! scores `Q·Kᵀ`, context `P·V`) is classed as attention. ONNX `Einsum`: `2 ·` the product of
//! every index's size for two operands (XLA's dot count: output elements times the contracted
//! size), `(operands − 1) ·` that for more; one operand is a reduction (`input − output`).
//! `stablehlo.einsum` has no rule.

use std::collections::BTreeMap;

use tpuport_model::{Attr, Graph, Node, ValueId, ValueKind};

use super::{Cx, MatmulDims, OpClass, OpCost, Site, dtype, input, int_attr, ints_attr, other};
use super::{sat, shape};

pub(super) fn cost(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    if s.op == "einsum" {
        other::cost(cx, s, c);
        return;
    }
    let computed = |v: Option<ValueId>| {
        v.is_some_and(|v| s.g.value(v).kind == ValueKind::Intermediate && !s.konst.contains(&v))
    };
    c.class = if computed(s.in0) && computed(input(s.n, 1)) {
        OpClass::Attention
    } else {
        OpClass::Matmul
    };
    match matmul_dims(s.g, s.n, &s.op) {
        Some(d) => {
            let f = sat(&[2, d.batch, d.m, d.n, d.k]);
            c.flops = f;
            c.mxu_flops = f;
            if s.op == "gemm" && input(s.n, 2).is_some() {
                c.flops = c.flops.saturating_add(d.m.saturating_mul(d.n));
            }
            c.matmul = Some(d);
        }
        None => c.not_static(),
    }
}

/// `[batch, m, k] x [batch, k, n]` view of a matmul-like op, when its operand shapes are static.
fn matmul_dims(g: &Graph, n: &Node, op: &str) -> Option<MatmulDims> {
    let a = input(n, 0)?;
    let b = if op == "qlinearmatmul" { input(n, 3)? } else { input(n, 1)? };
    let sa = shape(g, a)?;
    let sb = shape(g, b)?;
    let dims = |batch, m, k, n| MatmulDims {
        batch,
        m,
        k,
        n,
        dtype: dtype(g, a),
        operands: [g.value(a).name.clone(), g.value(b).name.clone()],
    };
    if op == "dot_general" || op == "dot" {
        let geti = |k: &str| ints_attr(n, k).unwrap_or_default();
        let (lb, mut lc, mut rc) = (
            geti("tpuport.lhs_batching_dimensions"),
            geti("tpuport.lhs_contracting_dimensions"),
            geti("tpuport.rhs_contracting_dimensions"),
        );
        if lc.is_empty() && rc.is_empty() && op == "dot" {
            lc = vec![i64::try_from(sa.len()).ok()? - 1];
            rc = vec![0];
        }
        let pick = |s: &[u64], idx: &[i64]| -> Option<u64> {
            let d: Option<Vec<u64>> = idx
                .iter()
                .map(|i| usize::try_from(*i).ok().and_then(|i| s.get(i).copied()))
                .collect();
            Some(sat(&d?))
        };
        let batch = pick(&sa, &lb)?;
        let k = pick(&sa, &lc)?;
        let rk = pick(&sb, &rc)?;
        if batch == 0 || k == 0 || rk == 0 {
            return Some(dims(0, 0, 0, 0));
        }
        let m = sat(&sa) / batch / k;
        let nn = sat(&sb) / batch / rk;
        return Some(dims(batch, m, k, nn));
    }
    if op == "gemm" {
        let ta = int_attr(n, "transA").unwrap_or(0) != 0;
        let tb = int_attr(n, "transB").unwrap_or(0) != 0;
        if sa.len() != 2 || sb.len() != 2 {
            return None;
        }
        let (m, k) = if ta { (sa[1], sa[0]) } else { (sa[0], sa[1]) };
        let nn = if tb { sb[0] } else { sb[1] };
        return Some(dims(1, m, k, nn));
    }
    // MatMul with numpy broadcasting (rank-0 operands are invalid: no dims).
    if sa.is_empty() || sb.is_empty() {
        return None;
    }
    let (sa, sb) = (
        if sa.len() == 1 { vec![1, sa[0]] } else { sa },
        if sb.len() == 1 { vec![sb[0], 1] } else { sb },
    );
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let nn = sb[sb.len() - 1];
    let ba = &sa[..sa.len() - 2];
    let bb = &sb[..sb.len() - 2];
    let r = ba.len().max(bb.len());
    let mut batch = 1u64;
    for i in 0..r {
        let da = if i + ba.len() >= r { ba[i + ba.len() - r] } else { 1 };
        let db = if i + bb.len() >= r { bb[i + bb.len() - r] } else { 1 };
        batch = batch.saturating_mul(da.max(db));
    }
    // A weight RHS with a broadcast batch is one big GEMM: fold the batch into M.
    let (batch, m) =
        if bb.iter().all(|&d| d == 1) { (1, batch.saturating_mul(m)) } else { (batch, m) };
    Some(dims(batch, m, k, nn))
}

/// ONNX `Einsum` by its equation (`"bij,bjk->bik"`; `...` spans the leading dims).
pub(super) fn einsum(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Matmul;
    let eq = s.n.attr("equation").and_then(Attr::as_str).unwrap_or("");
    let lhs = eq.split("->").next().unwrap_or("").replace(' ', "");
    let terms: Vec<&str> = lhs.split(',').collect();
    let mut sizes: BTreeMap<char, u64> = BTreeMap::new();
    let mut ins = 0u64;
    for (i, term) in terms.iter().enumerate() {
        let Some(sh) = s.in_shape(i) else {
            c.not_static();
            return;
        };
        ins += 1;
        let named = term.replace("...", "");
        let ellipsis = sh.len().saturating_sub(named.chars().count());
        let mut dims = sh.iter();
        for ch in term.replace("...", "\u{1}").chars() {
            if ch == '\u{1}' {
                // Ellipsis dims: distinct pseudo-indices, broadcast to the largest.
                for k in 0..ellipsis {
                    let d = dims.next().copied().unwrap_or(1);
                    let key = char::from_u32(0xE000 + u32::try_from(k).unwrap_or(0)).unwrap_or('?');
                    let e = sizes.entry(key).or_insert(d);
                    *e = (*e).max(d);
                }
            } else {
                let d = dims.next().copied().unwrap_or(1);
                let e = sizes.entry(ch).or_insert(d);
                *e = (*e).max(d);
            }
        }
    }
    let all = sat(&sizes.values().copied().collect::<Vec<_>>());
    c.flops = match ins {
        0 => 0,
        1 => all.saturating_sub(s.out_elems.unwrap_or(all)),
        k => sat(&[2, k - 1, all]),
    };
    if ins > 1 {
        c.mxu_flops = c.flops;
    } else {
        c.class = OpClass::Reduction;
    }
}
