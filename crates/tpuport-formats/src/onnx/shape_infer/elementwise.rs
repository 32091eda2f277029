//! Elementwise ops: unary ops that keep the input type, broadcasting binary and variadic ops,
//! comparisons, `Where`, `Cast`, and their folding on known values.

use tpuport_model::{DType, Shape};

use super::cx::{FOLD_MAX, Fail, NodeCx, Out, Res, broadcast};
use crate::onnx::host::eval;

/// Unary ops whose single output has the input's dtype and shape.
pub(crate) const SAME: &[&str] = &[
    "Relu",
    "Sqrt",
    "Erf",
    "Tanh",
    "Sigmoid",
    "Gelu",
    "Neg",
    "Exp",
    "Log",
    "Abs",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Identity",
    "Softmax",
    "LogSoftmax",
    "LeakyRelu",
    "HardSigmoid",
    "HardSwish",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "Celu",
    "Cos",
    "Sin",
    "Tan",
    "Sign",
    "Mish",
    "Trilu",
    "CumSum",
    "Clip",
    "Hardmax",
    "LpNormalization",
    "Shrink",
    "ThresholdedRelu",
    "Acos",
    "Asin",
    "Atan",
    "Cosh",
    "Sinh",
    "Asinh",
    "Acosh",
    "Atanh",
    "BitwiseNot",
    "ScatterND",
    "ScatterElements",
    "Scatter",
    "InstanceNormalization",
    "MeanVarianceNormalization",
    "LRN",
    "ReverseSequence",
    "FastGelu",
    "QuickGelu",
    "BiasGelu",
];

/// Ops producing a bool tensor of the input's shape.
pub(crate) const TO_BOOL: &[&str] = &["Not", "IsNaN", "IsInf"];

/// Broadcasting binary/variadic ops keeping the first input's dtype.
pub(crate) const ARITH: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Max",
    "Min",
    "Mod",
    "Sum",
    "Mean",
    "PRelu",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
];

/// Broadcasting comparisons and logic ops producing bool.
pub(crate) const COMPARE: &[&str] =
    &["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"];

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

/// Broadcasting binary / variadic ops.
pub(crate) fn binary(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let shapes: Vec<&Shape> =
        (0..cx.n_inputs()).filter(|&i| cx.has(i)).map(|i| cx.shape(i)).collect::<Res<_>>()?;
    let s = broadcast(&shapes)?;
    let compare = COMPARE.contains(&cx.node.op.as_str());
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
