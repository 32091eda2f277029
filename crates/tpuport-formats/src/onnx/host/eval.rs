//! ONNX ops evaluated on [`HostValue`]s, by ONNX op name.
//!
//! Integers are computed exactly in `i64` and wrapped to the result's dtype; floats in `f64`
//! and rounded to the result's dtype once per op (for `f32` operands `+ − × ÷` in `f64` then
//! rounded equal the `f32` operation). `Max` / `Min`, `Relu` and `Sign` propagate NaN as XLA
//! does. Each function takes the caller's limit on result elements and returns `None` past it.

use tpuport_model::DType;

use super::index::{broadcast_index, broadcast_shapes, elems_within, source_index, strides};
use super::value::{HostData, HostValue};

/// A unary op: `Identity` / `Dropout` (inference), `Not`, `Neg`, `Abs`, `Relu`, `Sign`,
/// `Floor`, `Ceil` on any numbers; `Sqrt`, `Exp`, `Log`, `Reciprocal` on floats.
#[must_use]
pub fn unary(op: &str, v: &HostValue) -> Option<HostValue> {
    let shape = v.shape.clone();
    match op {
        "Identity" | "Dropout" => return Some(v.clone()),
        "Not" => {
            let x: Vec<i64> = v.as_f64().iter().map(|&x| i64::from(x == 0.0)).collect();
            return Some(HostValue::ints(DType::Bool, shape, x));
        }
        _ => {}
    }
    match &v.data {
        HostData::Int(x) => {
            let f: fn(i64) -> i64 = match op {
                "Neg" => i64::wrapping_neg,
                "Abs" => i64::wrapping_abs,
                "Relu" => |a| a.max(0),
                "Sign" => i64::signum,
                "Floor" | "Ceil" => |a| a,
                _ => return None,
            };
            Some(HostValue::ints(v.dtype, shape, x.iter().map(|&a| f(a)).collect()))
        }
        HostData::Float(x) => {
            let f: fn(f64) -> f64 = match op {
                "Neg" => |a| -a,
                "Abs" => f64::abs,
                "Relu" => |a| if a.is_nan() { a } else { a.max(0.0) },
                "Sign" => |a| {
                    if a.is_nan() {
                        a
                    } else if a > 0.0 {
                        1.0
                    } else if a < 0.0 {
                        -1.0
                    } else {
                        0.0
                    }
                },
                "Floor" => f64::floor,
                "Ceil" => f64::ceil,
                "Sqrt" => f64::sqrt,
                "Exp" => f64::exp,
                "Log" => f64::ln,
                "Reciprocal" => f64::recip,
                _ => return None,
            };
            Some(HostValue::from_f64(v.dtype, shape, x.iter().map(|&a| f(a)).collect()))
        }
    }
}

/// Comparison ops and ONNX's logical ops: their result is bool.
fn is_predicate(op: &str) -> bool {
    matches!(
        op,
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Xor"
    )
}

fn int_op(op: &str, l: i64, r: i64, fmod: bool) -> Option<i64> {
    Some(match op {
        "Add" | "Sum" => l.wrapping_add(r),
        "Sub" => l.wrapping_sub(r),
        "Mul" => l.wrapping_mul(r),
        "Div" => l.checked_div(r)?,
        "Mod" => {
            let m = l.checked_rem(r)?;
            // Without fmod the result takes the divisor's sign (Python's `%`).
            if !fmod && m != 0 && (m < 0) != (r < 0) { m + r } else { m }
        }
        "Pow" => l.checked_pow(u32::try_from(r).ok()?)?,
        "Max" => l.max(r),
        "Min" => l.min(r),
        "Equal" => i64::from(l == r),
        "Less" => i64::from(l < r),
        "Greater" => i64::from(l > r),
        "LessOrEqual" => i64::from(l <= r),
        "GreaterOrEqual" => i64::from(l >= r),
        "And" => i64::from(l != 0 && r != 0),
        "Or" => i64::from(l != 0 || r != 0),
        "Xor" => i64::from((l != 0) != (r != 0)),
        "BitwiseAnd" => l & r,
        "BitwiseOr" => l | r,
        "BitwiseXor" => l ^ r,
        _ => return None,
    })
}

#[allow(clippy::float_cmp, reason = "ONNX Equal on floats is exact")]
fn float_op(op: &str, l: f64, r: f64, fmod: bool) -> Option<f64> {
    let b = |c: bool| if c { 1.0 } else { 0.0 };
    let nan = l.is_nan() || r.is_nan();
    Some(match op {
        "Add" | "Sum" => l + r,
        "Sub" => l - r,
        "Mul" => l * r,
        "Div" => l / r,
        "Pow" => l.powf(r),
        // ONNX requires fmod=1 for floats: C's fmod, the dividend's sign.
        "Mod" if fmod => l % r,
        "Max" if nan => f64::NAN,
        "Min" if nan => f64::NAN,
        "Max" => l.max(r),
        "Min" => l.min(r),
        "Equal" => b(l == r),
        "Less" => b(l < r),
        "Greater" => b(l > r),
        "LessOrEqual" => b(l <= r),
        "GreaterOrEqual" => b(l >= r),
        _ => return None,
    })
}

/// A broadcasting binary op: arithmetic (`Add`, `Sub`, `Mul`, `Div`, `Pow`, `Mod` with its
/// `fmod` attribute, `Max`, `Min`, `Sum` of two), comparisons, logic (`And`, `Or`, `Xor`) and,
/// on integers, `BitwiseAnd` / `BitwiseOr` / `BitwiseXor`. The result has `a`'s dtype (bool
/// for comparisons and logic); two integer operands are computed as integers.
#[must_use]
pub fn binary(op: &str, a: &HostValue, b: &HostValue, fmod: bool, max: u64) -> Option<HostValue> {
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    elems_within(&shape, max)?;
    let (ia, ib) = (broadcast_index(&a.shape, &shape)?, broadcast_index(&b.shape, &shape)?);
    let dtype = if is_predicate(op) { DType::Bool } else { a.dtype };
    if let (HostData::Int(x), HostData::Int(y)) = (&a.data, &b.data) {
        let v: Option<Vec<i64>> =
            ia.iter().zip(&ib).map(|(&i, &j)| int_op(op, x[i], y[j], fmod)).collect();
        return Some(HostValue::ints(dtype, shape, v?));
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    let v: Option<Vec<f64>> =
        ia.iter().zip(&ib).map(|(&i, &j)| float_op(op, x[i], y[j], fmod)).collect();
    Some(HostValue::from_f64(dtype, shape, v?))
}

/// `Where(cond, x, y)` with broadcasting; the result has `x`'s dtype.
#[must_use]
pub fn select(cond: &HostValue, x: &HostValue, y: &HostValue, max: u64) -> Option<HostValue> {
    let shape = broadcast_shapes(&broadcast_shapes(&cond.shape, &x.shape)?, &y.shape)?;
    elems_within(&shape, max)?;
    let ic = broadcast_index(&cond.shape, &shape)?;
    let (ix, iy) = (broadcast_index(&x.shape, &shape)?, broadcast_index(&y.shape, &shape)?);
    let c = cond.as_i64();
    let take = |k: usize| c[ic[k]] != 0;
    if let (HostData::Int(a), HostData::Int(b)) = (&x.data, &y.data) {
        let v = (0..ic.len()).map(|k| if take(k) { a[ix[k]] } else { b[iy[k]] }).collect();
        return Some(HostValue::ints(x.dtype, shape, v));
    }
    let (a, b) = (x.as_f64(), y.as_f64());
    let v = (0..ic.len()).map(|k| if take(k) { a[ix[k]] } else { b[iy[k]] }).collect();
    Some(HostValue::from_f64(x.dtype, shape, v))
}

/// `Concat` along `axis`; the result has the first value's dtype. `None` when ranks or the
/// other dims differ.
#[must_use]
pub fn concat(vals: &[&HostValue], axis: usize, max: u64) -> Option<HostValue> {
    let first = vals.first()?;
    let mut shape = first.shape.clone();
    if axis >= shape.len() {
        return None;
    }
    shape[axis] = 0;
    for v in vals {
        let same = v.shape.len() == shape.len()
            && v.shape.iter().enumerate().all(|(k, d)| k == axis || *d == shape[k]);
        if !same {
            return None;
        }
        shape[axis] = shape[axis].checked_add(v.shape[axis])?;
    }
    let total = elems_within(&shape, max)?;
    if total == 0 {
        return first.pick(shape, &[]);
    }
    let outer = elems_within(&shape[..axis], u64::MAX)?;
    let chunks: Vec<usize> =
        vals.iter().map(|v| elems_within(&v.shape[axis..], u64::MAX)).collect::<Option<_>>()?;
    /// Interleaves the values' chunks: for each outer index, each value's next chunk.
    fn join<T: Copy>(
        parts: &[Vec<T>],
        chunks: &[usize],
        outer: usize,
        total: usize,
    ) -> Option<Vec<T>> {
        let mut out = Vec::with_capacity(total);
        for o in 0..outer {
            for (p, &n) in parts.iter().zip(chunks) {
                out.extend_from_slice(p.get(o * n..(o + 1) * n)?);
            }
        }
        Some(out)
    }
    if vals.iter().all(|v| !v.is_float()) {
        let parts: Vec<Vec<i64>> = vals.iter().map(|v| v.as_i64()).collect();
        return Some(HostValue::ints(first.dtype, shape, join(&parts, &chunks, outer, total)?));
    }
    let parts: Vec<Vec<f64>> = vals.iter().map(|v| v.as_f64()).collect();
    Some(HostValue::from_f64(first.dtype, shape, join(&parts, &chunks, outer, total)?))
}

/// `Transpose` by `perm` (a permutation of the axes).
#[must_use]
pub fn transpose(v: &HostValue, perm: &[usize], max: u64) -> Option<HostValue> {
    let r = v.shape.len();
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&p| p >= r || std::mem::replace(&mut seen[p], true)) {
        return None;
    }
    let shape: Vec<u64> = perm.iter().map(|&p| v.shape[p]).collect();
    elems_within(&shape, max)?;
    let st = strides(&v.shape);
    let src: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    v.pick(shape.clone(), &source_index(&shape, &src, |_, c| c.cast_signed())?)
}

/// `Expand`: `v` broadcast to `shape` (which `v` must broadcast to).
#[must_use]
pub fn broadcast_to(v: &HostValue, shape: &[u64], max: u64) -> Option<HostValue> {
    elems_within(shape, max)?;
    v.pick(shape.to_vec(), &broadcast_index(&v.shape, shape)?)
}

/// A strided slice: output coordinate `c` along axis `k` reads `start[k] + c · step[k]` (steps
/// may be negative). `None` when a coordinate falls outside `v`.
#[must_use]
pub fn strided(
    v: &HostValue,
    shape: &[u64],
    start: &[i64],
    step: &[i64],
    max: u64,
) -> Option<HostValue> {
    let r = v.shape.len();
    if shape.len() != r || start.len() != r || step.len() != r {
        return None;
    }
    elems_within(shape, max)?;
    let st = strides(&v.shape);
    let in_range = (0..r).all(|k| {
        let last =
            i128::from(start[k]) + i128::from(shape[k].saturating_sub(1)) * i128::from(step[k]);
        shape[k] == 0
            || [i128::from(start[k]), last].iter().all(|&c| c >= 0 && c < i128::from(v.shape[k]))
    });
    if !in_range {
        return None;
    }
    let idx = source_index(shape, &st, |k, c| start[k] + c.cast_signed() * step[k])?;
    v.pick(shape.to_vec(), &idx)
}

/// `Gather` along `axis` (negative indices count from the end). `None` when an index is out of
/// range.
#[must_use]
pub fn gather(data: &HostValue, indices: &HostValue, axis: usize, max: u64) -> Option<HostValue> {
    let dim = *data.shape.get(axis)?;
    let n = dim.cast_signed();
    let idx: Vec<usize> = indices
        .as_i64()
        .iter()
        .map(|&k| {
            let k = if k < 0 { k.checked_add(n)? } else { k };
            (0..n).contains(&k).then(|| usize::try_from(k).ok()).flatten()
        })
        .collect::<Option<_>>()?;
    let mut shape = data.shape[..axis].to_vec();
    shape.extend(&indices.shape);
    shape.extend(&data.shape[axis + 1..]);
    let total = elems_within(&shape, max)?;
    if total == 0 {
        return data.pick(shape, &[]);
    }
    let outer = elems_within(&data.shape[..axis], u64::MAX)?;
    let inner = elems_within(&data.shape[axis + 1..], u64::MAX)?;
    let dim = usize::try_from(dim).ok()?;
    let mut src = Vec::with_capacity(total);
    for o in 0..outer {
        for &k in &idx {
            src.extend((0..inner).map(|j| (o * dim + k) * inner + j));
        }
    }
    data.pick(shape, &src)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn i(shape: &[u64], v: &[i64]) -> HostValue {
        HostValue::ints(DType::I64, shape.to_vec(), v.to_vec())
    }

    fn f(dtype: DType, shape: &[u64], v: &[f64]) -> HostValue {
        HostValue::from_f64(dtype, shape.to_vec(), v.to_vec())
    }

    #[test]
    fn integer_arithmetic_is_exact_and_wraps_to_the_dtype() {
        let big = i(&[1], &[(1 << 53) + 1]);
        let r = binary("Less", &i(&[1], &[1 << 53]), &big, false, 16).unwrap();
        assert_eq!(r.data, HostData::Int(vec![1]), "compared as integers, not as f64");
        let a = HostValue::ints(DType::I32, vec![1], vec![i64::from(i32::MAX)]);
        let r = binary("Add", &a, &HostValue::ints(DType::I32, vec![1], vec![1]), false, 16);
        assert_eq!(r.unwrap().data, HostData::Int(vec![i64::from(i32::MIN)]));
        assert_eq!(binary("Div", &i(&[1], &[1]), &i(&[1], &[0]), false, 16), None);
        assert_eq!(binary("Pow", &i(&[1], &[3]), &i(&[1], &[40]), false, 16), None);
        assert_eq!(
            binary("Pow", &i(&[1], &[3]), &i(&[1], &[4]), false, 16).unwrap().as_i64(),
            [81]
        );
    }

    #[test]
    fn mod_follows_the_fmod_attribute() {
        let (a, b) = (i(&[4], &[-7, 7, -7, 7]), i(&[4], &[3, -3, -3, 3]));
        assert_eq!(binary("Mod", &a, &b, false, 16).unwrap().as_i64(), [2, -2, -1, 1]);
        assert_eq!(binary("Mod", &a, &b, true, 16).unwrap().as_i64(), [-1, 1, -1, 1]);
        let (x, y) = (f(DType::F32, &[1], &[-7.5]), f(DType::F32, &[1], &[2.0]));
        assert_eq!(binary("Mod", &x, &y, true, 16).unwrap().as_f64(), [-1.5]);
        assert_eq!(binary("Mod", &x, &y, false, 16), None);
    }

    #[test]
    fn floats_round_to_the_dtype_and_max_propagates_nan() {
        let third =
            binary("Div", &f(DType::F32, &[], &[1.0]), &f(DType::F32, &[], &[3.0]), false, 1);
        assert_eq!(third.unwrap().as_f64(), [f64::from(1.0f32 / 3.0)]);
        let h =
            binary("Add", &f(DType::F16, &[], &[2048.0]), &f(DType::F16, &[], &[1.0]), false, 1);
        assert_eq!(h.unwrap().as_f64(), [2048.0], "2049 is a tie between f16 2048 and 2050");
        let m = binary(
            "Max",
            &f(DType::F32, &[2], &[f64::NAN, 1.0]),
            &f(DType::F32, &[], &[0.0]),
            false,
            4,
        );
        let m = m.unwrap().as_f64();
        assert!(m[0].is_nan() && m[1] == 1.0);
    }

    #[test]
    fn broadcasting_limits_and_predicates() {
        let r = binary("Equal", &i(&[2, 1], &[1, 2]), &i(&[3], &[1, 2, 3]), false, 6).unwrap();
        assert_eq!((r.dtype, r.shape.clone()), (DType::Bool, vec![2, 3]));
        assert_eq!(r.as_i64(), [1, 0, 0, 0, 1, 0]);
        assert_eq!(binary("Add", &i(&[2, 1], &[1, 2]), &i(&[3], &[1, 2, 3]), false, 5), None);
        assert_eq!(binary("Add", &i(&[2], &[1, 2]), &i(&[3], &[1, 2, 3]), false, 9), None);
    }

    #[test]
    fn unary_ops() {
        assert_eq!(unary("Neg", &i(&[2], &[i64::MIN, 3])).unwrap().as_i64(), [i64::MIN, -3]);
        assert_eq!(unary("Sqrt", &i(&[1], &[4])), None, "Sqrt is a float op");
        let s = unary("Sign", &f(DType::F32, &[3], &[-2.0, 0.0, f64::NAN])).unwrap().as_f64();
        assert!(s[0] == -1.0 && s[1] == 0.0 && s[2].is_nan());
        assert_eq!(
            unary("Not", &HostValue::ints(DType::Bool, vec![2], vec![0, 1])).unwrap().as_i64(),
            [1, 0]
        );
    }

    #[test]
    fn data_movement() {
        let x = i(&[2, 3], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(transpose(&x, &[1, 0], 6).unwrap().as_i64(), [0, 3, 1, 4, 2, 5]);
        assert_eq!(transpose(&x, &[0, 0], 6), None);
        let c = concat(&[&x, &i(&[2, 1], &[9, 9])], 1, 8).unwrap();
        assert_eq!((c.shape.clone(), c.as_i64()), (vec![2, 4], vec![0, 1, 2, 9, 3, 4, 5, 9]));
        assert_eq!(concat(&[&x, &i(&[1, 1], &[9])], 1, 8), None);
        assert_eq!(
            broadcast_to(&i(&[1, 3], &[1, 2, 3]), &[2, 3], 6).unwrap().as_i64(),
            [1, 2, 3, 1, 2, 3]
        );
        let g = gather(&x, &i(&[2], &[-1, 0]), 1, 4).unwrap();
        assert_eq!((g.shape.clone(), g.as_i64()), (vec![2, 2], vec![2, 0, 5, 3]));
        assert_eq!(gather(&x, &i(&[1], &[3]), 1, 4), None);
        // Reversed rows, every other column.
        let s = strided(&x, &[2, 2], &[1, 0], &[-1, 2], 4).unwrap();
        assert_eq!(s.as_i64(), [3, 5, 0, 2]);
        assert_eq!(strided(&x, &[2, 2], &[1, 0], &[1, 2], 4), None);
        let w = select(
            &HostValue::ints(DType::Bool, vec![2], vec![1, 0]),
            &i(&[2], &[1, 2]),
            &i(&[], &[7]),
            2,
        );
        assert_eq!(w.unwrap().as_i64(), [1, 7]);
    }
}
