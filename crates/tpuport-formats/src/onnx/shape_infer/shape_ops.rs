//! Ops that compute or change shapes: `Shape`, `Size`, `Reshape`, `Flatten`, `Unsqueeze`,
//! `Squeeze`, `Expand`, `Tile`, `ConstantOfShape`, `Range`, with folding of their values; the
//! window generators, `OneHot`, `DepthToSpace` / `SpaceToDepth` and `CenterCropPad`.

use tpuport_model::{DType, Dim, Shape};

use super::cx::{FOLD_MAX, Fail, NodeCx, Out, Res, axis, broadcast, known_product, to_u64};
use crate::onnx::host::{HostData, HostValue, eval};

fn dims_i64(s: &Shape) -> Option<Vec<i64>> {
    s.as_fixed().map(|v| v.into_iter().map(u64::cast_signed).collect())
}

/// `Shape` (with opset-15 `start` / `end`).
pub(crate) fn shape(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?;
    let r = i64::try_from(s.rank()).unwrap_or(0);
    let clamp = |v: i64| usize::try_from(if v < 0 { v + r } else { v }.clamp(0, r)).unwrap_or(0);
    let (a, b) = (clamp(cx.int("start", 0)), clamp(cx.int("end", r)));
    let part = Shape(s.0[a..b.max(a)].to_vec());
    let n = part.rank() as u64;
    let mut out = Out::new(Some(DType::I64), Shape::fixed(&[n]));
    if let Some(v) = dims_i64(&part) {
        out.value = Some(HostValue::i64_vec(v));
    }
    Ok(vec![out])
}

/// `Size`.
pub(crate) fn size(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?;
    let mut out = Out::new(Some(DType::I64), Shape::scalar());
    if let Some(n) = known_product(&s.0) {
        out.value = Some(HostValue::ints(DType::I64, vec![], vec![n.cast_signed()]));
    }
    Ok(vec![out])
}

/// Keeps `v`'s data under a new shape.
fn reshaped(v: Option<&HostValue>, shape: &Shape) -> Option<HostValue> {
    let dims = shape.as_fixed()?;
    let v = v?;
    (dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d)) == Some(v.len() as u64))
        .then(|| v.with_shape(dims))
}

/// `Reshape`: `0` copies the input dim (unless `allowzero`), `-1` takes what remains.
pub(crate) fn reshape(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let target = match cx.ints("shape") {
        Some(v) => v,
        None => match cx.value(1) {
            Some(v) => v.as_i64(),
            None => {
                // Rank is known from the shape input's length even when its values are not.
                let r = cx
                    .shape(1)?
                    .as_fixed()
                    .and_then(|v| v.first().copied())
                    .ok_or(Fail::NeedsValue(1))?;
                let dims = (0..r).map(|_| Dim::unknown()).collect();
                return Ok(vec![Out::new(cx.dtype(0), Shape(dims))]);
            }
        },
    };
    let allowzero = cx.int("allowzero", 0) != 0;
    let mut dims = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &t) in target.iter().enumerate() {
        dims.push(match t {
            0 if !allowzero => {
                x.0.get(i)
                    .cloned()
                    .ok_or_else(|| Fail::Invalid(format!("0 at position {i} past input rank")))?
            }
            -1 => {
                if infer_at.replace(i).is_some() {
                    return Err(Fail::Invalid("more than one -1 in shape".to_owned()));
                }
                Dim::unknown()
            }
            t => Dim::Known(to_u64(t)?),
        });
    }
    if let Some(i) = infer_at {
        let others: Vec<Dim> =
            dims.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, d)| d.clone()).collect();
        if let (Some(total), Some(rest)) = (known_product(&x.0), known_product(&others)) {
            if rest == 0 || total % rest != 0 {
                return Err(Fail::Invalid(format!("cannot reshape {x} to {target:?}")));
            }
            dims[i] = Dim::Known(total / rest);
        }
    }
    let s = Shape(dims);
    if let (Some(a), Some(b)) = (known_product(&x.0), known_product(&s.0))
        && a != b
    {
        return Err(Fail::Invalid(format!("cannot reshape {x} ({a} elements) to {s} ({b})")));
    }
    let value = reshaped(cx.value(0), &s);
    Ok(vec![Out { value, ..Out::new(cx.dtype(0), s) }])
}

/// `Flatten`.
pub(crate) fn flatten(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let r = x.rank();
    let a = if cx.int("axis", 1) == i64::try_from(r).unwrap_or(-1) {
        r
    } else {
        axis(cx.int("axis", 1), r)?
    };
    let prod = |d: &[Dim]| known_product(d).map_or_else(Dim::unknown, Dim::Known);
    let s = Shape(vec![prod(&x.0[..a]), prod(&x.0[a..])]);
    let value = reshaped(cx.value(0), &s);
    Ok(vec![Out { value, ..Out::new(cx.dtype(0), s) }])
}

/// `Unsqueeze` (axes attribute before opset 13, input after).
pub(crate) fn unsqueeze(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let axes =
        cx.ints_attr_or_input("axes", 1)?.ok_or_else(|| Fail::Invalid("no axes".to_owned()))?;
    let r = x.rank() + axes.len();
    let mut norm: Vec<usize> = axes.iter().map(|a| axis(*a, r)).collect::<Res<_>>()?;
    norm.sort_unstable();
    let mut src = x.0.iter();
    let dims = (0..r)
        .map(|i| {
            if norm.contains(&i) {
                Dim::Known(1)
            } else {
                src.next().cloned().unwrap_or(Dim::Known(1))
            }
        })
        .collect();
    let s = Shape(dims);
    let value = reshaped(cx.value(0), &s);
    Ok(vec![Out { value, ..Out::new(cx.dtype(0), s) }])
}

/// `Squeeze` (axes attribute before opset 13, input after; no axes: every size-1 dim).
pub(crate) fn squeeze(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let dims: Vec<Dim> = match cx.ints_attr_or_input("axes", 1)? {
        Some(axes) => {
            let norm: Vec<usize> = axes.iter().map(|a| axis(*a, x.rank())).collect::<Res<_>>()?;
            x.0.iter()
                .enumerate()
                .filter(|(i, _)| !norm.contains(i))
                .map(|(_, d)| d.clone())
                .collect()
        }
        None => {
            if !x.is_static() {
                return Err(Fail::NeedsValue(0));
            }
            x.0.iter().filter(|d| **d != Dim::Known(1)).cloned().collect()
        }
    };
    let s = Shape(dims);
    let value = reshaped(cx.value(0), &s);
    Ok(vec![Out { value, ..Out::new(cx.dtype(0), s) }])
}

/// `Expand`: broadcast of the input against the shape input.
pub(crate) fn expand(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let target = cx.need(1)?.as_i64();
    let t = Shape(target.iter().map(|&d| to_u64(d).map(Dim::Known)).collect::<Res<_>>()?);
    let s = broadcast(&[x, &t])?;
    let mut out = Out::new(cx.dtype(0), s.clone());
    if let (Some(v), Some(dims)) = (cx.value(0), s.as_fixed()) {
        out.value = eval::broadcast_to(v, &dims, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Tile`.
pub(crate) fn tile(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let reps = cx.need(1)?.as_i64();
    if reps.len() != x.rank() {
        return Err(Fail::Invalid(format!("{} repeats for rank {}", reps.len(), x.rank())));
    }
    let dims =
        x.0.iter()
            .zip(&reps)
            .map(|(d, r)| Ok(super::cx::map_dim(d, |n| n.checked_mul(to_u64(*r).ok()?))))
            .collect::<Res<_>>()?;
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}

/// `ConstantOfShape`: dtype and fill value from the `value` attribute (default f32 zero).
pub(crate) fn constant_of_shape(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let dims: Vec<u64> = cx.need(0)?.as_i64().into_iter().map(to_u64).collect::<Res<_>>()?;
    let fill = cx.tensor_attr("value");
    let dtype = match cx.node.attr("value") {
        Some(tpuport_model::Attr::Weight(id)) => cx.weights.get(*id).dtype,
        _ => DType::F32,
    };
    let mut out = Out::new(Some(dtype), Shape::fixed(&dims));
    let n = dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d));
    if let Some(n) = n.filter(|n| *n <= FOLD_MAX) {
        let n = usize::try_from(n).unwrap_or(0);
        let data = match fill.as_ref().map(|f| &f.data) {
            Some(HostData::Int(v)) => HostData::Int(vec![v.first().copied().unwrap_or(0); n]),
            Some(HostData::Float(v)) => HostData::Float(vec![v.first().copied().unwrap_or(0.0); n]),
            None if dtype.is_float() => HostData::Float(vec![0.0; n]),
            None => HostData::Int(vec![0; n]),
        };
        out.value = Some(HostValue { dtype, shape: dims, data });
    }
    Ok(vec![out])
}

/// `Range(start, limit, delta)`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "element count of a small range"
)]
pub(crate) fn range(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let dtype = cx.dtype(0);
    let (Some(s), Some(l), Some(d)) = (cx.value(0), cx.value(1), cx.value(2)) else {
        return Ok(vec![Out::new(dtype, Shape(vec![Dim::unknown()]))]);
    };
    let (Some(s), Some(l), Some(d)) = (s.first_f(), l.first_f(), d.first_f()) else {
        return Err(Fail::Invalid("Range with an empty start, limit or delta".to_owned()));
    };
    if d == 0.0 {
        return Err(Fail::Invalid("Range with delta 0".to_owned()));
    }
    let n = ((l - s) / d).ceil().max(0.0);
    if !n.is_finite() || n > 1e15 {
        return Err(Fail::Invalid("Range too long".to_owned()));
    }
    let n = n as u64;
    let mut out = Out::new(dtype, Shape::fixed(&[n]));
    if n <= FOLD_MAX {
        let vals: Vec<f64> = (0..n).map(|i| s + d * i as f64).collect();
        out.value = Some(HostValue::from_f64(dtype.unwrap_or(DType::I64), vec![n], vals));
    }
    Ok(vec![out])
}

/// `HannWindow` / `HammingWindow` / `BlackmanWindow`: `[size]` in `output_datatype` (default
/// float).
pub(crate) fn window(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let size = cx.need(0)?.first_i().ok_or_else(|| Fail::Invalid("empty size".to_owned()))?;
    let code = i32::try_from(cx.int("output_datatype", 1)).unwrap_or(0);
    let dtype = super::super::dtype::from_onnx(code)
        .ok_or_else(|| Fail::Invalid(format!("unknown output_datatype {code}")))?;
    Ok(vec![Out::new(Some(dtype), Shape::fixed(&[to_u64(size)?]))])
}

/// `OneHot(indices, depth, values)`: the indices' shape with `depth` inserted at `axis`, in
/// `values`' type.
pub(crate) fn one_hot(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let ind = cx.shape(0)?;
    let depth = cx.need(1)?.first_f().ok_or_else(|| Fail::Invalid("empty depth".to_owned()))?;
    if !(1.0..1e15).contains(&depth) {
        return Err(Fail::Invalid(format!("depth {depth} is not a positive size")));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "checked above")]
    let depth = depth as u64;
    let at = axis(cx.int("axis", -1), ind.rank() + 1)?;
    let mut dims = ind.0.clone();
    dims.insert(at, Dim::Known(depth));
    Ok(vec![Out::new(cx.dtype(2), Shape(dims))])
}

/// The `[N, C, H, W]` input of `DepthToSpace` / `SpaceToDepth` and its `blocksize`.
fn nchw<'a>(cx: &NodeCx<'a>) -> Res<(&'a Shape, u64)> {
    let x = cx.shape(0)?;
    if x.rank() != 4 {
        return Err(Fail::Invalid(format!("input {x} is not rank 4")));
    }
    let b = to_u64(cx.int("blocksize", 0))?;
    if b == 0 {
        return Err(Fail::Invalid("blocksize missing or 0".to_owned()));
    }
    Ok((x, b))
}

/// `DepthToSpace`: `[N, C / b², H · b, W · b]`.
pub(crate) fn depth_to_space(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, b) = nchw(cx)?;
    let c = super::cx::map_dim(&x.0[1], |c| (c % (b * b) == 0).then_some(c / (b * b)));
    let h = super::cx::map_dim(&x.0[2], |h| h.checked_mul(b));
    let w = super::cx::map_dim(&x.0[3], |w| w.checked_mul(b));
    Ok(vec![Out::new(cx.dtype(0), Shape(vec![x.0[0].clone(), c, h, w]))])
}

/// `SpaceToDepth`: `[N, C · b², H / b, W / b]`.
pub(crate) fn space_to_depth(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let (x, b) = nchw(cx)?;
    let c = super::cx::map_dim(&x.0[1], |c| c.checked_mul(b * b));
    let h = super::cx::map_dim(&x.0[2], |h| (h % b == 0).then_some(h / b));
    let w = super::cx::map_dim(&x.0[3], |w| (w % b == 0).then_some(w / b));
    Ok(vec![Out::new(cx.dtype(0), Shape(vec![x.0[0].clone(), c, h, w]))])
}

/// `CenterCropPad(input, shape)`: the input's shape with the `axes` (default all) replaced by
/// `shape`'s values.
pub(crate) fn center_crop_pad(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let x = cx.shape(0)?;
    let target = cx.need(1)?.as_i64();
    let axes: Vec<usize> = match cx.ints("axes") {
        Some(a) => a.iter().map(|&v| axis(v, x.rank())).collect::<Res<_>>()?,
        None => (0..x.rank()).collect(),
    };
    if axes.len() != target.len() {
        return Err(Fail::Invalid(format!("{} sizes for {} axes", target.len(), axes.len())));
    }
    let mut dims = x.0.clone();
    for (a, t) in axes.iter().zip(&target) {
        dims[*a] = Dim::Known(to_u64(*t)?);
    }
    Ok(vec![Out::new(cx.dtype(0), Shape(dims))])
}
