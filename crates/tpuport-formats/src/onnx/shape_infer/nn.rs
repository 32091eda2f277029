//! Convolution, pooling, normalization and matrix-multiply ops.

use tpuport_model::{DType, Dim, Shape};

use super::cx::{Fail, NodeCx, Out, Res, broadcast, map_dim};

/// Spatial output size of a convolution or pooling window.
#[allow(clippy::too_many_arguments, reason = "one formula with its parameters")]
fn window_out(
    input: &Dim,
    k: u64,
    s: u64,
    d: u64,
    pb: u64,
    pe: u64,
    auto_pad: &str,
    ceil: bool,
) -> Dim {
    let s = s.max(1);
    map_dim(input, |n| {
        let eff = k.checked_sub(1)?.checked_mul(d)?.checked_add(1)?;
        match auto_pad {
            "SAME_UPPER" | "SAME_LOWER" => Some(n.div_ceil(s)),
            "VALID" => Some(n.checked_sub(eff)? / s + 1),
            _ => {
                let span = n.checked_add(pb)?.checked_add(pe)?.checked_sub(eff)?;
                let mut out = if ceil { span.div_ceil(s) + 1 } else { span / s + 1 };
                // A last window starting inside the end padding is dropped (ceil mode).
                if ceil && (out - 1).saturating_mul(s) >= n.saturating_add(pb) {
                    out -= 1;
                }
                Some(out)
            }
        }
    })
}

struct Window {
    kernel: Vec<u64>,
    strides: Vec<u64>,
    dilations: Vec<u64>,
    pads: Vec<u64>,
}

fn window(cx: &NodeCx<'_>, spatial: usize, kernel: Option<Vec<i64>>) -> Res<Window> {
    let pos = |v: Vec<i64>, what: &str| -> Res<Vec<u64>> {
        v.into_iter()
            .map(|x| u64::try_from(x).map_err(|_| Fail::Invalid(format!("negative {what} {x}"))))
            .collect()
    };
    let kernel =
        pos(kernel.ok_or_else(|| Fail::Invalid("no kernel_shape".to_owned()))?, "kernel size")?;
    if kernel.len() != spatial {
        return Err(Fail::Invalid(format!(
            "kernel rank {} for {spatial} spatial dims",
            kernel.len()
        )));
    }
    let ones = vec![1; spatial];
    let strides = cx.ints("strides").map_or(Ok(ones.clone()), |v| pos(v, "stride"))?;
    let dilations = cx.ints("dilations").map_or(Ok(ones), |v| pos(v, "dilation"))?;
    let pads = cx.ints("pads").map_or(Ok(vec![0; 2 * spatial]), |v| pos(v, "pad"))?;
    if strides.len() != spatial || dilations.len() != spatial || pads.len() != 2 * spatial {
        return Err(Fail::Invalid(
            "strides, dilations or pads do not match the spatial rank".to_owned(),
        ));
    }
    Ok(Window { kernel, strides, dilations, pads })
}

fn spatial_out(cx: &NodeCx<'_>, x: &Shape, w: &Window, ceil: bool) -> Vec<Dim> {
    let auto_pad = cx.str("auto_pad").unwrap_or("NOTSET");
    let n = w.kernel.len();
    (0..n)
        .map(|i| {
            window_out(
                &x.0[2 + i],
                w.kernel[i],
                w.strides[i],
                w.dilations[i],
                w.pads[i],
                w.pads[n + i],
                auto_pad,
                ceil,
            )
        })
        .collect()
}

/// `Conv`.
pub(crate) fn conv(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, wt) = (cx.shape(0)?, cx.shape(1)?);
    if x.rank() < 3 || wt.rank() != x.rank() {
        return Err(Fail::Invalid(format!(
            "input {x} and weight {wt} ranks do not fit a convolution"
        )));
    }
    let kernel = cx
        .ints("kernel_shape")
        .or_else(|| wt.as_fixed().map(|v| v[2..].iter().map(|d| d.cast_signed()).collect()));
    let w = window(cx, x.rank() - 2, kernel)?;
    let mut dims = vec![x.0[0].clone(), wt.0[0].clone()];
    dims.extend(spatial_out(cx, x, &w, false));
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `ConvTranspose`.
pub(crate) fn conv_transpose(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, wt) = (cx.shape(0)?, cx.shape(1)?);
    if x.rank() < 3 || wt.rank() != x.rank() {
        return Err(Fail::Invalid(format!(
            "input {x} and weight {wt} ranks do not fit a convolution"
        )));
    }
    let n = x.rank() - 2;
    let group = u64::try_from(cx.int("group", 1)).unwrap_or(1);
    let channels = map_dim(&wt.0[1], |c| c.checked_mul(group));
    let mut dims = vec![x.0[0].clone(), channels];
    if let Some(os) = cx.ints("output_shape") {
        let os = &os[os.len().saturating_sub(n)..];
        dims.extend(
            os.iter().map(|d| u64::try_from(*d).map_or_else(|_| Dim::unknown(), Dim::Known)),
        );
        return Ok(vec![Out::new(cx.dtype(0), Shape(dims))]);
    }
    let kernel = cx
        .ints("kernel_shape")
        .or_else(|| wt.as_fixed().map(|v| v[2..].iter().map(|d| d.cast_signed()).collect()));
    let w = window(cx, n, kernel)?;
    let opad = cx.ints("output_padding").unwrap_or_else(|| vec![0; n]);
    let auto_pad = cx.str("auto_pad").unwrap_or("NOTSET");
    for i in 0..n {
        let op = u64::try_from(opad.get(i).copied().unwrap_or(0)).unwrap_or(0);
        dims.push(map_dim(&x.0[2 + i], |len| {
            let full = w.strides[i]
                .checked_mul(len.checked_sub(1)?)?
                .checked_add(op)?
                .checked_add((w.kernel[i].checked_sub(1)?).checked_mul(w.dilations[i])? + 1)?;
            if matches!(auto_pad, "SAME_UPPER" | "SAME_LOWER") {
                len.checked_mul(w.strides[i])
            } else {
                full.checked_sub(w.pads[i])?.checked_sub(w.pads[n + i])
            }
        }));
    }
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `MaxPool`, `AveragePool`, `LpPool` (and `MaxPool`'s indices output).
pub(crate) fn pool(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    if x.rank() < 3 {
        return Err(Fail::Invalid(format!("pooling input {x} has rank below 3")));
    }
    let w = window(cx, x.rank() - 2, cx.ints("kernel_shape"))?;
    let mut dims = vec![x.0[0].clone(), x.0[1].clone()];
    dims.extend(spatial_out(cx, x, &w, cx.int("ceil_mode", 0) != 0));
    let s = Shape(dims);
    let mut outs = vec![Out::new(cx.dtype(0), s.clone())];
    if cx.node.outputs.len() > 1 {
        outs.push(Out::new(Some(DType::I64), s));
    }
    Ok(outs)
}

/// `GlobalAveragePool`, `GlobalMaxPool`, `GlobalLpPool`.
pub(crate) fn global_pool(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let dims =
        x.0.iter()
            .enumerate()
            .map(|(i, d)| if i < 2 { d.clone() } else { Dim::Known(1) })
            .collect();
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `BatchNormalization` (training-mode running statistics outputs too).
pub(crate) fn batch_norm(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let mut outs = vec![Out::new(cx.dtype(0), x.clone())];
    let c = Shape(x.0.get(1).cloned().into_iter().collect());
    for _ in 1..cx.node.outputs.len() {
        outs.push(Out::new(cx.dtype(0), c.clone()));
    }
    Ok(outs)
}

/// `LayerNormalization`, `GroupNormalization`, `SimplifiedLayerNormalization`,
/// `SkipLayerNormalization` (output 0 like input 0; statistics with reduced axes kept as 1).
pub(crate) fn layer_norm(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let mut outs = vec![Out::new(cx.dtype(0), x.clone())];
    if cx.node.op == "LayerNormalization" && cx.node.outputs.len() > 1 {
        let a = super::cx::axis(cx.int("axis", -1), x.rank())?;
        let stats = Shape(
            x.0.iter()
                .enumerate()
                .map(|(i, d)| if i < a { d.clone() } else { Dim::Known(1) })
                .collect(),
        );
        let stash =
            super::super::dtype::from_onnx(i32::try_from(cx.int("stash_type", 1)).unwrap_or(1));
        for _ in 1..cx.node.outputs.len() {
            outs.push(Out::new(stash, stats.clone()));
        }
    } else {
        for _ in 1..cx.node.outputs.len() {
            outs.push(Out {
                ty: tpuport_model::TensorType { dtype: cx.dtype(0), shape: None },
                value: None,
            });
        }
    }
    Ok(outs)
}

/// `MatMul` (numpy semantics: batched, 1-D operands promoted then squeezed) and
/// `MatMulInteger` (int32 result).
pub(crate) fn matmul(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let dtype = if cx.node.op == "MatMulInteger" { Some(DType::I32) } else { cx.dtype(0) };
    Ok(vec![Out::new(dtype, matmul_shape(cx.shape(0)?, cx.shape(1)?)?)])
}

/// `QLinearMatMul`: the product of inputs 0 and 3 (`a`, `b`) in `y_zero_point`'s type.
pub(crate) fn qlinear_matmul(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let dtype = cx.dtype(7).or(cx.dtype(0));
    Ok(vec![Out::new(dtype, matmul_shape(cx.shape(0)?, cx.shape(3)?)?)])
}

/// Numpy matmul of two shapes.
fn matmul_shape(a: &Shape, b: &Shape) -> Res<Shape> {
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Fail::Invalid("MatMul of a scalar".to_owned()));
    }
    let a2 = if a.rank() == 1 { Shape(vec![Dim::Known(1), a.0[0].clone()]) } else { a.clone() };
    let b2 = if b.rank() == 1 { Shape(vec![b.0[0].clone(), Dim::Known(1)]) } else { b.clone() };
    let (ra, rb) = (a2.rank(), b2.rank());
    check_same(&a2.0[ra - 1], &b2.0[rb - 2], a, b)?;
    let batch = broadcast(&[&Shape(a2.0[..ra - 2].to_vec()), &Shape(b2.0[..rb - 2].to_vec())])?;
    let mut dims = batch.0;
    if a.rank() > 1 {
        dims.push(a2.0[ra - 2].clone());
    }
    if b.rank() > 1 {
        dims.push(b2.0[rb - 1].clone());
    }
    Ok(Shape(dims))
}

fn check_same(k1: &Dim, k2: &Dim, a: &Shape, b: &Shape) -> Res<()> {
    match (k1, k2) {
        (Dim::Known(x), Dim::Known(y)) if x != y => {
            Err(Fail::Invalid(format!("contraction dims differ: {a} x {b}")))
        }
        _ => Ok(()),
    }
}

/// `Gemm`: `[M, K] x [K, N] (+ C)`, with `transA` / `transB`.
pub(crate) fn gemm(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (a, b) = (cx.shape(0)?, cx.shape(1)?);
    if a.rank() != 2 || b.rank() != 2 {
        return Err(Fail::Invalid(format!("Gemm operands {a} and {b} are not matrices")));
    }
    let (m, ka) = if cx.int("transA", 0) != 0 { (&a.0[1], &a.0[0]) } else { (&a.0[0], &a.0[1]) };
    let (kb, n) = if cx.int("transB", 0) != 0 { (&b.0[1], &b.0[0]) } else { (&b.0[0], &b.0[1]) };
    check_same(ka, kb, a, b)?;
    Ok(vec![Out::new(cx.dtype(0), Shape(vec![m.clone(), n.clone()]))])
}

/// `Einsum`: explicit (`ij,jk->ik`) and implicit (`ij,jk`) forms, with `...`.
pub(crate) fn einsum(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let eq: String =
        cx.str("equation").ok_or_else(|| Fail::Invalid("no equation".to_owned()))?.replace(' ', "");
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_owned(), Some(r.to_owned())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != cx.n_inputs() {
        return Err(Fail::Invalid(format!(
            "equation has {} operands for {} inputs",
            terms.len(),
            cx.n_inputs()
        )));
    }
    let mut letters: Vec<(char, Dim, usize)> = Vec::new();
    let mut ellipsis: Vec<&Shape> = Vec::new();
    let mut owned: Vec<Shape> = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        let s = cx.shape(i)?;
        let named = t.replace("...", "").chars().count();
        let ell_rank = s
            .rank()
            .checked_sub(named)
            .ok_or_else(|| Fail::Invalid(format!("operand {i} rank too small")))?;
        let mut k = 0;
        let mut rest = *t;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("...") {
                let part =
                    s.0.get(k..k + ell_rank)
                        .ok_or_else(|| Fail::Invalid(format!("operand {i} rank too small")))?;
                owned.push(Shape(part.to_vec()));
                k += ell_rank;
                rest = r;
                continue;
            }
            let c = rest.chars().next().unwrap_or(' ');
            rest = &rest[c.len_utf8()..];
            let d =
                s.0.get(k)
                    .cloned()
                    .ok_or_else(|| Fail::Invalid(format!("operand {i} rank too small")))?;
            k += 1;
            match letters.iter_mut().find(|(l, _, _)| *l == c) {
                Some(e) => {
                    e.2 += 1;
                    if e.1 == Dim::Known(1) || e.1.known().is_none() {
                        e.1 = d;
                    }
                }
                None => letters.push((c, d, 1)),
            }
        }
    }
    ellipsis.extend(owned.iter());
    let ell = broadcast(&ellipsis)?;
    let rhs = rhs.unwrap_or_else(|| {
        let mut once: Vec<char> = letters.iter().filter(|e| e.2 == 1).map(|e| e.0).collect();
        once.sort_unstable();
        let mut s = if ellipsis.is_empty() { String::new() } else { "...".to_owned() };
        s.extend(once);
        s
    });
    let mut dims = Vec::new();
    let mut rest = rhs.as_str();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("...") {
            dims.extend(ell.0.iter().cloned());
            rest = r;
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        rest = &rest[c.len_utf8()..];
        let d = letters.iter().find(|e| e.0 == c).map(|e| e.1.clone());
        dims.push(
            d.ok_or_else(|| Fail::Invalid(format!("output letter '{c}' is not in any operand")))?,
        );
    }
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}
