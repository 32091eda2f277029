//! Elementwise ops: unary ops that keep the input type, broadcasting binary and variadic ops,
//! comparisons, `Where`, `Cast`, and their folding on known values.

use tpuport_model::{DType, Shape};

use super::cx::{Fail, NodeCx, Out, Res, broadcast};
use super::konst::{Const, Data, fits};

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
    if let Some(v) = cx.value(0).and_then(|v| fold_unary(&cx.node.op, v)) {
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
    if cx.node.op == "Not"
        && let Some(v) = cx.value(0)
    {
        out.value = Some(Const::ints(
            DType::Bool,
            v.shape.clone(),
            v.as_i64().iter().map(|x| i64::from(*x == 0)).collect(),
        ));
    }
    Ok(vec![out])
}

fn fold_unary(op: &str, v: &Const) -> Option<Const> {
    let f: fn(f64) -> f64 = match op {
        "Identity" => return Some(v.clone()),
        "Neg" => |x| -x,
        "Abs" => f64::abs,
        "Floor" => f64::floor,
        "Ceil" => f64::ceil,
        "Sqrt" => f64::sqrt,
        "Relu" => |x| x.max(0.0),
        "Sign" => |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        },
        "Reciprocal" => |x| 1.0 / x,
        "Exp" => f64::exp,
        _ => return None,
    };
    if let (Data::I(x), "Neg" | "Abs" | "Relu" | "Sign" | "Floor" | "Ceil") = (&v.data, op) {
        let g = |a: i64| match op {
            "Neg" => a.wrapping_neg(),
            "Abs" => a.wrapping_abs(),
            "Relu" => a.max(0),
            "Sign" => a.signum(),
            _ => a,
        };
        return Some(Const::ints(v.dtype, v.shape.clone(), x.iter().map(|a| g(*a)).collect()));
    }
    Some(Const::from_f64(v.dtype, v.shape.clone(), v.as_f64().into_iter().map(f).collect()))
}

/// Flat input index for every flat output index under broadcasting.
pub(crate) fn bcast_index(out: &[u64], inp: &[u64]) -> Vec<usize> {
    let n = out.iter().product::<u64>() as usize;
    let off = out.len() - inp.len();
    let mut strides = vec![0usize; out.len()];
    let mut acc = 1usize;
    for k in (0..inp.len()).rev() {
        strides[k + off] = if inp[k] == 1 { 0 } else { acc };
        acc *= inp[k] as usize;
    }
    let mut idx = vec![0usize; n];
    let mut pos = vec![0u64; out.len()];
    for slot in &mut idx {
        *slot = pos.iter().zip(&strides).map(|(p, s)| *p as usize * s).sum();
        for k in (0..out.len()).rev() {
            pos[k] += 1;
            if pos[k] < out[k] {
                break;
            }
            pos[k] = 0;
        }
    }
    idx
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
        && let (Some(a), Some(b), Some(dims)) = (cx.value(0), cx.value(1), s.as_fixed())
    {
        out.value =
            fold_binary(&cx.node.op, a, b, &dims, dtype.unwrap_or(a.dtype), cx.int("fmod", 0));
    }
    Ok(vec![out])
}

#[allow(clippy::float_cmp, reason = "ONNX Equal on folded values is exact")]
fn fold_binary(
    op: &str,
    a: &Const,
    b: &Const,
    dims: &[u64],
    dtype: DType,
    fmod: i64,
) -> Option<Const> {
    if !fits(dims) {
        return None;
    }
    let (ia, ib) = (bcast_index(dims, &a.shape), bcast_index(dims, &b.shape));
    let ints = matches!((&a.data, &b.data), (Data::I(_), Data::I(_)));
    if ints {
        let (x, y) = (a.as_i64(), b.as_i64());
        let mut v = Vec::with_capacity(ia.len());
        for (p, q) in ia.iter().zip(&ib) {
            let (l, r) = (x[*p], y[*q]);
            v.push(match op {
                "Add" | "Sum" => l.wrapping_add(r),
                "Sub" => l.wrapping_sub(r),
                "Mul" => l.wrapping_mul(r),
                "Div" => l.checked_div(r)?,
                "Mod" if fmod == 0 => {
                    l.checked_rem_euclid(r).map(|m| if r < 0 && m != 0 { m + r } else { m })?
                }
                "Mod" => l.checked_rem(r)?,
                "Max" => l.max(r),
                "Min" => l.min(r),
                "Pow" => l.checked_pow(u32::try_from(r).ok()?)?,
                "Equal" => i64::from(l == r),
                "Less" => i64::from(l < r),
                "Greater" => i64::from(l > r),
                "LessOrEqual" => i64::from(l <= r),
                "GreaterOrEqual" => i64::from(l >= r),
                "And" => i64::from(l != 0 && r != 0),
                "Or" => i64::from(l != 0 || r != 0),
                "Xor" => i64::from((l != 0) != (r != 0)),
                _ => return None,
            });
        }
        return Some(Const::ints(dtype, dims.to_vec(), v));
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    let mut v = Vec::with_capacity(ia.len());
    for (p, q) in ia.iter().zip(&ib) {
        let (l, r) = (x[*p], y[*q]);
        let b2f = |c: bool| if c { 1.0 } else { 0.0 };
        v.push(match op {
            "Add" | "Sum" => l + r,
            "Sub" => l - r,
            "Mul" => l * r,
            "Div" => l / r,
            "Pow" => l.powf(r),
            "Max" => l.max(r),
            "Min" => l.min(r),
            "Equal" => b2f(l == r),
            "Less" => b2f(l < r),
            "Greater" => b2f(l > r),
            "LessOrEqual" => b2f(l <= r),
            "GreaterOrEqual" => b2f(l >= r),
            _ => return None,
        });
    }
    Some(Const::from_f64(dtype, dims.to_vec(), v))
}

/// `Where(cond, x, y)`.
pub(crate) fn where_(cx: &NodeCx<'_>) -> Res<Vec<Out>> {
    let s = broadcast(&[cx.shape(0)?, cx.shape(1)?, cx.shape(2)?])?;
    let dtype = cx.dtype(1).or(cx.dtype(2));
    let mut out = Out::new(dtype, s.clone());
    if let (Some(c), Some(x), Some(y), Some(dims)) =
        (cx.value(0), cx.value(1), cx.value(2), s.as_fixed())
        && fits(&dims)
    {
        let (ic, ix, iy) = (
            bcast_index(&dims, &c.shape),
            bcast_index(&dims, &x.shape),
            bcast_index(&dims, &y.shape),
        );
        let cv = c.as_i64();
        let data = match (&x.data, &y.data) {
            (Data::I(a), Data::I(b)) => Data::I(
                ic.iter()
                    .zip(ix.iter().zip(&iy))
                    .map(|(k, (p, q))| if cv[*k] != 0 { a[*p] } else { b[*q] })
                    .collect(),
            ),
            _ => {
                let (a, b) = (x.as_f64(), y.as_f64());
                Data::F(
                    ic.iter()
                        .zip(ix.iter().zip(&iy))
                        .map(|(k, (p, q))| if cv[*k] != 0 { a[*p] } else { b[*q] })
                        .collect(),
                )
            }
        };
        out.value = Some(Const { dtype: x.dtype, shape: dims, data });
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
