//! Ops that select or rearrange elements: `Transpose`, `Concat`, `Split`, `Slice`, `Gather`,
//! `GatherElements`, `GatherND`, `Pad`, `TopK`, `NonZero`, with folding where values are known.

use tpuport_model::{DType, Dim, Shape};

use super::cx::{FOLD_MAX, Fail, NodeCx, Out, Res, axis, map_dim, to_u64};
use crate::onnx::host::{HostValue, eval, strides};

/// `Transpose` (default: reversed axes).
pub(crate) fn transpose(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let perm: Vec<usize> = match cx.ints("perm") {
        Some(p) => p.iter().map(|a| axis(*a, x.rank())).collect::<Res<_>>()?,
        None => (0..x.rank()).rev().collect(),
    };
    if perm.len() != x.rank() {
        return Err(Fail::Invalid(format!("perm of length {} for rank {}", perm.len(), x.rank())));
    }
    let s = Shape(perm.iter().map(|&p| x.0[p].clone()).collect());
    let mut out = Out::new(cx.dtype(0), s.clone());
    if let Some(v) = cx.value(0) {
        out.value = eval::transpose(v, &perm, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Concat`.
pub(crate) fn concat(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let shapes: Vec<&Shape> = (0..cx.n_inputs()).map(|i| cx.shape(i)).collect::<Res<_>>()?;
    let first = shapes.first().ok_or_else(|| Fail::Invalid("no inputs".to_owned()))?;
    let a = axis(cx.int("axis", 0), first.rank())?;
    let mut dims = first.0.clone();
    let mut total = Some(0u64);
    for s in &shapes {
        if s.rank() != first.rank() {
            return Err(Fail::Invalid(format!(
                "inputs of ranks {} and {}",
                first.rank(),
                s.rank()
            )));
        }
        total = total.and_then(|t| t.checked_add(s.0[a].known()?));
        for (k, d) in s.0.iter().enumerate() {
            if k != a && dims[k].known().is_none() && d.known().is_some() {
                dims[k] = d.clone();
            }
        }
    }
    dims[a] = total.map_or_else(Dim::unknown, Dim::Known);
    let s = Shape(dims);
    let mut out = Out::new(cx.dtype(0), s.clone());
    let vals: Option<Vec<&HostValue>> = (0..cx.n_inputs()).map(|i| cx.value(i)).collect();
    if let Some(vals) = vals {
        out.value = eval::concat(&vals, a, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Split`: sizes from the `split` input (opset 13+) or attribute, else `num_outputs` /
/// the output count, equal parts (the last one smaller).
pub(crate) fn split(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let a = axis(cx.int("axis", 0), x.rank())?;
    let n = cx.node.outputs.len();
    let sizes: Option<Vec<u64>> = match cx.ints_attr_or_input("split", 1)? {
        Some(v) => Some(v.into_iter().map(to_u64).collect::<Res<_>>()?),
        None => x.0[a].known().map(|d| {
            let part = d.div_ceil(n.max(1) as u64);
            (0..n as u64).map(|i| part.min(d.saturating_sub(i.saturating_mul(part)))).collect()
        }),
    };
    if let Some(s) = &sizes
        && s.len() != n
    {
        return Err(Fail::Invalid(format!("{} split sizes for {n} outputs", s.len())));
    }
    Ok((0..n)
        .map(|i| {
            let mut d = x.0.clone();
            d[a] = sizes.as_ref().map_or_else(Dim::unknown, |s| Dim::Known(s[i]));
            Out::new(cx.dtype(0), Shape(d))
        })
        .collect())
}

/// One axis of a slice: (start, length, step) after ONNX clamping, for a known dim.
fn slice_axis(n: u64, start: i64, end: i64, step: i64) -> (i64, u64) {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    if n == 0 {
        return (0, 0);
    }
    let norm = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
    let (s, e) = (norm(start), norm(end));
    if step > 0 {
        let (s, e) = (s.clamp(0, n), e.clamp(0, n));
        (s, (e - s).max(0).cast_unsigned().div_ceil(step.unsigned_abs()))
    } else {
        let (s, e) = (s.clamp(0, n - 1), e.clamp(-1, n - 1));
        (s, (s - e).max(0).cast_unsigned().div_ceil(step.unsigned_abs()))
    }
}

/// `Slice` (inputs since opset 10, attributes before).
pub(crate) fn slice(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let (starts, ends) = match (cx.ints("starts"), cx.ints("ends")) {
        (Some(s), Some(e)) => (s, e),
        _ => (cx.need(1)?.as_i64(), cx.need(2)?.as_i64()),
    };
    let axes = match cx.ints_attr_or_input("axes", 3)? {
        Some(a) => a.iter().map(|v| axis(*v, x.rank())).collect::<Res<Vec<_>>>()?,
        None => (0..starts.len()).collect(),
    };
    let steps = if cx.has(4) { cx.need(4)?.as_i64() } else { vec![1; starts.len()] };
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(Fail::Invalid("starts, ends, axes and steps differ in length".to_owned()));
    }
    let mut dims = x.0.clone();
    let mut plan: Vec<(i64, i64)> = vec![(0, 1); x.rank()];
    for k in 0..starts.len() {
        let (a, st) = (axes[k], steps[k]);
        if st == 0 {
            return Err(Fail::Invalid("slice step 0".to_owned()));
        }
        dims[a] = match x.0[a].known() {
            Some(n) => {
                let (s, len) = slice_axis(n, starts[k], ends[k], st);
                plan[a] = (s, st);
                Dim::Known(len)
            }
            None if starts[k] == 0 && st == 1 && ends[k] >= i64::MAX / 2 => x.0[a].clone(),
            None => Dim::unknown(),
        };
    }
    let s = Shape(dims);
    let mut out = Out::new(cx.dtype(0), s.clone());
    if let (Some(v), Some(od)) = (cx.value(0), s.as_fixed()) {
        let (start, step): (Vec<i64>, Vec<i64>) = plan.into_iter().unzip();
        out.value = eval::strided(v, &od, &start, &step, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Gather`: `data[:axis] + indices.shape + data[axis+1:]`.
pub(crate) fn gather(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, ind) = (cx.shape(0)?, cx.shape(1)?);
    let a = axis(cx.int("axis", 0), x.rank())?;
    let mut dims = x.0[..a].to_vec();
    dims.extend(ind.0.iter().cloned());
    dims.extend(x.0[a + 1..].iter().cloned());
    let s = Shape(dims);
    let mut out = Out::new(cx.dtype(0), s.clone());
    if let (Some(v), Some(i)) = (cx.value(0), cx.value(1)) {
        out.value = eval::gather(v, i, a, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `GatherElements`: the indices' shape.
pub(crate) fn gather_elements(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    Ok(vec![Out::new(cx.dtype(0), cx.shape(1)?.clone())])
}

/// `GatherND` with `batch_dims`.
pub(crate) fn gather_nd(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, ind) = (cx.shape(0)?, cx.shape(1)?);
    let b = usize::try_from(cx.int("batch_dims", 0)).unwrap_or(0);
    let last = ind.0.last().and_then(Dim::known).ok_or(Fail::NeedsValue(1))? as usize;
    if ind.rank() == 0 || b + last > x.rank() {
        return Err(Fail::Invalid(format!("indices {ind} do not fit data {x}")));
    }
    let mut dims = ind.0[..ind.rank() - 1].to_vec();
    dims.extend(x.0[b + last..].iter().cloned());
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `Pad` (pads input since opset 11, attribute before; optional `axes` input since 18).
pub(crate) fn pad(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let pads =
        cx.ints_attr_or_input("pads", 1)?.ok_or_else(|| Fail::Invalid("no pads".to_owned()))?;
    let axes: Vec<usize> = if cx.has(3) {
        cx.need(3)?.as_i64().iter().map(|a| axis(*a, x.rank())).collect::<Res<_>>()?
    } else {
        (0..x.rank()).collect()
    };
    if pads.len() != 2 * axes.len() {
        return Err(Fail::Invalid(format!("{} pads for {} axes", pads.len(), axes.len())));
    }
    let mut dims = x.0.clone();
    let n = axes.len();
    for (k, &a) in axes.iter().enumerate() {
        let add = pads[k].saturating_add(pads[n + k]);
        dims[a] = map_dim(&x.0[a], |d| u64::try_from(d.cast_signed().checked_add(add)?).ok());
    }
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `TopK`: values and int64 indices with `K` along `axis`.
pub(crate) fn topk(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let a = axis(cx.int("axis", -1), x.rank())?;
    let k = cx.need(1)?.first_i().ok_or_else(|| Fail::Invalid("empty K".to_owned()))?;
    let k = to_u64(k)?;
    let mut dims = x.0.clone();
    dims[a] = Dim::Known(k);
    let s = Shape(dims);
    Ok(vec![Out::new(cx.dtype(0), s.clone()), Out::new(Some(DType::I64), s)])
}

/// `NonZero`: `[rank, ?]` (the count depends on the data unless the value is known).
pub(crate) fn nonzero(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let r = x.rank() as u64;
    if let Some(v) = cx.value(0) {
        let nz: Vec<usize> =
            v.as_f64().iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, _)| i).collect();
        let st = strides(&v.shape);
        let mut data = vec![0i64; nz.len() * v.shape.len()];
        for (j, &flat) in nz.iter().enumerate() {
            let mut rem = flat;
            for (k, s) in st.iter().enumerate() {
                data[k * nz.len() + j] = (rem / s) as i64;
                rem %= s;
            }
        }
        return Ok(vec![Out::konst(HostValue::ints(DType::I64, vec![r, nz.len() as u64], data))]);
    }
    Ok(vec![Out::new(Some(DType::I64), Shape(vec![Dim::Known(r), Dim::unknown()]))])
}
