//! Elementwise ops: unary ops that keep the input type, broadcasting binary and variadic ops,
//! comparisons, `Where`, `Cast`, and their folding on known values; `BitCast`, `EyeLike` and
//! the quantize / dequantize pair, which keep the input's shape in another type. Which op uses
//! which rule is the registry's [`tpuport_model::ops::onnx::ShapeRule`].

use tpuport_model::{DType, Shape};

use super::cx::{FOLD_MAX, Fail, NodeCx, Out, Res, broadcast};
use crate::onnx::host::eval;

/// A unary op keeping dtype and shape (first output), plus `Dropout`'s optional mask.
pub(crate) fn same(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let mut outs = vec![Out::new(cx.dtype(0), s.clone())];
    if let Some(v) = cx.value(0).and_then(|v| eval::unary(&cx.node.op, v)) {
        outs[0].value = Some(v);
    }
    for _ in 1..cx.node.outputs.len() {
        outs.push(Out::new(Some(DType::Bool), s.clone()));
    }
    Ok(outs)
}

/// `Dropout` (inference: identity) with its optional bool mask.
pub(crate) fn dropout(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let mut outs = vec![Out { value: cx.value(0).cloned(), ..Out::new(cx.dtype(0), s.clone()) }];
    if cx.node.outputs.len() > 1 {
        outs.push(Out::new(Some(DType::Bool), s));
    }
    Ok(outs)
}

/// `Not`, `IsNaN`, `IsInf`.
pub(crate) fn to_bool(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let mut out = Out::new(Some(DType::Bool), s);
    if cx.node.op == "Not" {
        out.value = cx.value(0).and_then(|v| eval::unary("Not", v));
    }
    Ok(vec![out])
}

/// Broadcasting binary / variadic ops: input 0's dtype, or bool for comparisons and logic.
pub(crate) fn binary(cx: &NodeCx<'_>, compare: bool) -> Res<Vec<Out>> {
    let shapes: Vec<&Shape> =
        (0..cx.n_inputs()).filter(|&i| cx.has(i)).map(|i| cx.shape(i)).collect::<Res<_>>()?;
    let s = broadcast(&shapes)?;
    let dtype = if compare { Some(DType::Bool) } else { cx.dtype(0) };
    let mut out = Out::new(dtype, s.clone());
    if shapes.len() == 2
        && let (Some(a), Some(b)) = (cx.value(0), cx.value(1))
    {
        out.value = eval::binary(&cx.node.op, a, b, cx.int("fmod", 0) != 0, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Where(cond, x, y)`.
pub(crate) fn where_(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = broadcast(&[cx.shape(0)?, cx.shape(1)?, cx.shape(2)?])?;
    let dtype = cx.dtype(1).or(cx.dtype(2));
    let mut out = Out::new(dtype, s.clone());
    if let (Some(c), Some(x), Some(y)) = (cx.value(0), cx.value(1), cx.value(2)) {
        out.value = eval::select(c, x, y, FOLD_MAX);
    }
    Ok(vec![out])
}

/// `Cast` and `CastLike`.
pub(crate) fn cast(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let to = if cx.node.op == "CastLike" {
        cx.dtype(1)
    } else {
        let code = i32::try_from(cx.int("to", 0)).unwrap_or(0);
        Some(
            super::super::dtype::from_onnx(code)
                .ok_or_else(|| Fail::Invalid(format!("unknown Cast target type {code}")))?,
        )
    };
    let mut out = Out::new(to, s);
    if let (Some(v), Some(t)) = (cx.value(0), to) {
        out.value = v.cast(t);
    }
    Ok(vec![out])
}

/// The element type an ONNX type-code attribute names.
fn type_attr(cx: &NodeCx<'_>, name: &str) -> Res<Option<DType>> {
    let code = cx.int(name, 0);
    if code == 0 {
        return Ok(None);
    }
    let c = i32::try_from(code).unwrap_or(0);
    super::super::dtype::from_onnx(c)
        .map(Some)
        .ok_or_else(|| Fail::Invalid(format!("unknown element type {code} in `{name}`")))
}

/// `BitCast` (opset 26): the same shape in the `to` type (of the same bit width).
pub(crate) fn bit_cast(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let to = type_attr(cx, "to")?.ok_or_else(|| Fail::Invalid("BitCast without `to`".into()))?;
    if let Some(from) = cx.dtype(0)
        && from.bits() != to.bits()
    {
        return Err(Fail::Invalid(format!("BitCast from {from} to {to}: bit widths differ")));
    }
    Ok(vec![Out::new(Some(to), s)])
}

/// `EyeLike`: a rank-2 input's shape in the `dtype` type (default: the input's).
pub(crate) fn eye_like(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    if s.rank() != 2 {
        return Err(Fail::Invalid(format!("EyeLike input {s} is not rank 2")));
    }
    Ok(vec![Out::new(type_attr(cx, "dtype")?.or(cx.dtype(0)), s)])
}

/// `QuantizeLinear`: `x`'s shape in the zero point's type, else `output_dtype` (opset 21+),
/// else uint8.
pub(crate) fn quantize(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    let dt = if cx.has(2) {
        cx.dtype(2)
    } else {
        Some(type_attr(cx, "output_dtype")?.unwrap_or(DType::U8))
    };
    Ok(vec![Out::new(dt, s)])
}

/// `DequantizeLinear`: `x`'s shape in `output_dtype` (opset 23+), else the scale's type.
pub(crate) fn dequantize(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = cx.shape(0)?.clone();
    Ok(vec![Out::new(type_attr(cx, "output_dtype")?.or(cx.dtype(1)), s)])
}
