//! [`HostValue`]: a small tensor known on the host, its conversions to and from little-endian
//! bytes, and ONNX `Cast` semantics.

use half::{bf16, f16};
use tpuport_model::{DType, Weight};

use super::index::{checked_elems, elems_within};

/// Elements of a [`HostValue`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// Integer and bool elements (bools as 0 / 1, `u64` as its bit pattern).
    Int(Vec<i64>),
    /// Floating-point elements.
    Float(Vec<f64>),
}

/// A tensor whose value is known on the host: dtype, static shape, row-major elements.
///
/// Integer and bool dtypes hold [`HostData::Int`], float dtypes [`HostData::Float`]; the
/// constructors keep every element representable in the dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct HostValue {
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
    /// Elements, row-major.
    pub data: HostData,
}

/// `x` wrapped to the width of an integer `dtype` (bools to 0 / 1).
#[allow(clippy::cast_possible_truncation, reason = "wrapping to the dtype is the point")]
fn wrap(dtype: DType, x: i64) -> i64 {
    match dtype {
        DType::I32 => i64::from(x as i32),
        DType::I16 => i64::from(x as i16),
        DType::I8 => i64::from(x as i8),
        DType::U32 => i64::from(x as u32),
        DType::U16 => i64::from(x as u16),
        DType::U8 => i64::from(x as u8),
        DType::Bool => i64::from(x != 0),
        _ => x,
    }
}

/// `x` rounded to a float `dtype` (round to nearest even; 16-bit types through `f32`, as a
/// device conversion from `f32` does). Other dtypes are returned unchanged.
#[allow(clippy::cast_possible_truncation, reason = "rounding to the dtype is the point")]
fn round(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => f64::from(x as f32),
        DType::F16 => f16::from_f32(x as f32).to_f64(),
        DType::BF16 => bf16::from_f32(x as f32).to_f64(),
        _ => x,
    }
}

/// A float as an integer of `dtype`: truncated toward zero (saturating, NaN as 0), then wrapped;
/// for bool, nonzero.
#[allow(clippy::cast_possible_truncation, reason = "ONNX Cast truncates floats")]
fn float_to_int(dtype: DType, x: f64) -> i64 {
    if dtype == DType::Bool { i64::from(x != 0.0) } else { wrap(dtype, x as i64) }
}

fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

impl HostValue {
    /// A value from integers (wrapped to an integer dtype, converted for a float dtype).
    #[must_use]
    #[allow(clippy::cast_precision_loss, reason = "an integer stored in a float dtype")]
    pub fn ints(dtype: DType, shape: Vec<u64>, v: Vec<i64>) -> HostValue {
        let data = if dtype.is_float() {
            HostData::Float(v.into_iter().map(|x| round(dtype, x as f64)).collect())
        } else {
            HostData::Int(v.into_iter().map(|x| wrap(dtype, x)).collect())
        };
        HostValue { dtype, shape, data }
    }

    /// A value from floats: rounded to a float dtype, truncated and wrapped for an integer one.
    #[must_use]
    pub fn from_f64(dtype: DType, shape: Vec<u64>, v: Vec<f64>) -> HostValue {
        let data = if dtype.is_float() {
            HostData::Float(v.into_iter().map(|x| round(dtype, x)).collect())
        } else {
            HostData::Int(v.into_iter().map(|x| float_to_int(dtype, x)).collect())
        };
        HostValue { dtype, shape, data }
    }

    /// A 1-D `int64` value.
    #[must_use]
    pub fn i64_vec(v: Vec<i64>) -> HostValue {
        HostValue { dtype: DType::I64, shape: vec![v.len() as u64], data: HostData::Int(v) }
    }

    /// A scalar of `dtype` from a float.
    #[must_use]
    pub fn scalar_f(dtype: DType, v: f64) -> HostValue {
        HostValue::from_f64(dtype, vec![], vec![v])
    }

    /// Number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.data {
            HostData::Int(v) => v.len(),
            HostData::Float(v) => v.len(),
        }
    }

    /// True when there are no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the elements are floats.
    #[must_use]
    pub fn is_float(&self) -> bool {
        matches!(self.data, HostData::Float(_))
    }

    /// Elements as integers (floats truncated toward zero).
    #[must_use]
    #[allow(clippy::cast_possible_truncation, reason = "shape values are integers")]
    pub fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            HostData::Int(v) => v.clone(),
            HostData::Float(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }

    /// Elements as floats.
    #[must_use]
    #[allow(clippy::cast_precision_loss, reason = "small values")]
    pub fn as_f64(&self) -> Vec<f64> {
        match &self.data {
            HostData::Int(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::Float(v) => v.clone(),
        }
    }

    /// Element `i` as a float (panics past the end, like indexing).
    #[must_use]
    #[allow(clippy::cast_precision_loss, reason = "small values")]
    pub fn get_f(&self, i: usize) -> f64 {
        match &self.data {
            HostData::Int(v) => v[i] as f64,
            HostData::Float(v) => v[i],
        }
    }

    /// Element `i` as an integer, floats truncated (panics past the end, like indexing).
    #[must_use]
    #[allow(clippy::cast_possible_truncation, reason = "shape values are integers")]
    pub fn get_i(&self, i: usize) -> i64 {
        match &self.data {
            HostData::Int(v) => v[i],
            HostData::Float(v) => v[i] as i64,
        }
    }

    /// The first element as an integer (floats truncated), `None` for an empty value.
    #[must_use]
    pub fn first_i(&self) -> Option<i64> {
        (!self.is_empty()).then(|| self.get_i(0))
    }

    /// The first element as a float, `None` for an empty value.
    #[must_use]
    pub fn first_f(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.get_f(0))
    }

    /// True when every element equals the first (floats compared bit for bit).
    #[must_use]
    pub fn is_splat(&self) -> bool {
        match &self.data {
            HostData::Int(v) => v.windows(2).all(|w| w[0] == w[1]),
            HostData::Float(v) => v.windows(2).all(|w| w[0].to_bits() == w[1].to_bits()),
        }
    }

    /// The same elements under another shape.
    #[must_use]
    pub fn with_shape(&self, shape: Vec<u64>) -> HostValue {
        HostValue { dtype: self.dtype, shape, data: self.data.clone() }
    }

    /// Picks elements by flat index into a value of `shape`; `None` if an index is past the end.
    #[must_use]
    pub fn pick(&self, shape: Vec<u64>, idx: &[usize]) -> Option<HostValue> {
        let data = match &self.data {
            HostData::Int(v) => {
                HostData::Int(idx.iter().map(|&i| v.get(i).copied()).collect::<Option<_>>()?)
            }
            HostData::Float(v) => {
                HostData::Float(idx.iter().map(|&i| v.get(i).copied()).collect::<Option<_>>()?)
            }
        };
        Some(HostValue { dtype: self.dtype, shape, data })
    }

    /// The value converted to `to` with ONNX `Cast` semantics: floats round to nearest even,
    /// floats to integers truncate toward zero, integers wrap, nonzero is `true`. `None` for
    /// targets the evaluator does not hold (8-bit floats, 4-bit integers, complex, strings).
    #[must_use]
    pub fn cast(&self, to: DType) -> Option<HostValue> {
        let plain_float = matches!(to, DType::F64 | DType::F32 | DType::F16 | DType::BF16);
        let whole_int = to.is_int() && to.bits().is_some_and(|b| b >= 8);
        if !(plain_float || whole_int || to == DType::Bool) {
            return None;
        }
        Some(match &self.data {
            HostData::Int(v) => HostValue::ints(to, self.shape.clone(), v.clone()),
            HostData::Float(v) => HostValue::from_f64(to, self.shape.clone(), v.clone()),
        })
    }

    /// Reads little-endian elements of `dtype` (at least `shape`'s element count of them);
    /// `None` for dtypes the evaluator does not hold or too few bytes.
    #[must_use]
    pub fn from_bytes(dtype: DType, shape: Vec<u64>, b: &[u8]) -> Option<HostValue> {
        let n = usize::try_from(checked_elems(&shape)?).ok()?;
        let w = usize::try_from(dtype.bits()? / 8).ok()?;
        if w == 0 || b.len() < n.checked_mul(w)? {
            return None;
        }
        let b = &b[..n * w];
        let ints = |f: fn(&[u8]) -> i64| HostData::Int(b.chunks_exact(w).map(f).collect());
        let floats = |f: fn(&[u8]) -> f64| HostData::Float(b.chunks_exact(w).map(f).collect());
        let data = match dtype {
            DType::F64 => floats(|c| f64::from_le_bytes(le(c))),
            DType::F32 => floats(|c| f64::from(f32::from_le_bytes(le(c)))),
            DType::F16 => floats(|c| f16::from_le_bytes(le(c)).to_f64()),
            DType::BF16 => floats(|c| bf16::from_le_bytes(le(c)).to_f64()),
            DType::I64 => ints(|c| i64::from_le_bytes(le(c))),
            DType::U64 => ints(|c| u64::from_le_bytes(le(c)).cast_signed()),
            DType::I32 => ints(|c| i64::from(i32::from_le_bytes(le(c)))),
            DType::U32 => ints(|c| i64::from(u32::from_le_bytes(le(c)))),
            DType::I16 => ints(|c| i64::from(i16::from_le_bytes(le(c)))),
            DType::U16 => ints(|c| i64::from(u16::from_le_bytes(le(c)))),
            DType::I8 => ints(|c| i64::from(c[0].cast_signed())),
            DType::U8 => ints(|c| i64::from(c[0])),
            DType::Bool => ints(|c| i64::from(c[0] != 0)),
            _ => return None,
        };
        Some(HostValue { dtype, shape, data })
    }

    /// Reads a stored weight of at most `max_elems` elements.
    #[must_use]
    pub fn from_weight(w: &Weight, max_elems: u64) -> Option<HostValue> {
        elems_within(&w.shape, max_elems)?;
        let b = w.bytes().ok()?;
        HostValue::from_bytes(w.dtype, w.shape.clone(), &b)
    }

    /// Little-endian bytes of every element in the value's dtype (types the evaluator does not
    /// hold are written as `f32`).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * 8);
        for i in 0..self.len() {
            self.push_elem(&mut out, i);
        }
        out
    }

    /// Little-endian bytes of the first element (empty for an empty value).
    #[must_use]
    pub fn to_bytes_one(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.is_empty() {
            self.push_elem(&mut out, 0);
        }
        out
    }

    #[allow(clippy::cast_possible_truncation, reason = "elements are in the dtype's range")]
    fn push_elem(&self, out: &mut Vec<u8>, i: usize) {
        let (f, n) = (self.get_f(i), self.get_i(i));
        match self.dtype {
            DType::F64 => out.extend_from_slice(&f.to_le_bytes()),
            DType::F16 => out.extend_from_slice(&f16::from_f32(f as f32).to_le_bytes()),
            DType::BF16 => out.extend_from_slice(&bf16::from_f32(f as f32).to_le_bytes()),
            DType::I64 | DType::U64 => out.extend_from_slice(&n.to_le_bytes()),
            DType::I32 | DType::U32 => out.extend_from_slice(&(n as i32).to_le_bytes()),
            DType::I16 | DType::U16 => out.extend_from_slice(&(n as i16).to_le_bytes()),
            DType::I8 | DType::U8 => out.push(n as u8),
            DType::Bool => out.push(u8::from(n != 0)),
            _ => out.extend_from_slice(&(f as f32).to_le_bytes()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation, reason = "tests")]
mod tests {
    use super::*;

    /// Decodes a positive binary16 pattern (the format's definition, independent of `half`).
    fn f16_value(bits: u16) -> f64 {
        let (e, m) = (i32::from(bits >> 10), f64::from(bits & 0x3ff));
        if e == 0 { m * 2f64.powi(-24) } else { (1.0 + m / 1024.0) * 2f64.powi(e - 15) }
    }

    /// Decodes a positive bfloat16 pattern: the top half of an `f32`.
    fn bf16_value(bits: u16) -> f64 {
        f64::from(f32::from_bits(u32::from(bits) << 16))
    }

    /// Every finite positive pattern with its value, then the pattern of infinity paired with
    /// the value the next binade would start at (where rounding to infinity begins).
    fn ladder(decode: fn(u16) -> f64, inf: u16, past_max: f64) -> Vec<(u16, f64)> {
        let mut v: Vec<(u16, f64)> = (0..inf).map(|b| (b, decode(b))).collect();
        v.push((inf, past_max));
        v
    }

    /// For each pair of neighbours: both ends, their midpoint (a tie: the even pattern wins)
    /// and the `f32`s just either side of it, with the pattern round-to-nearest-even gives.
    fn cases(ladder: &[(u16, f64)]) -> Vec<(f32, u16)> {
        let mut out = Vec::new();
        for w in ladder.windows(2) {
            let ((lo_bits, lo), (hi_bits, hi)) = (w[0], w[1]);
            let mid = ((lo + hi) / 2.0) as f32;
            assert_eq!(f64::from(mid), (lo + hi) / 2.0, "midpoints are f32-exact");
            let even = if lo_bits % 2 == 0 { lo_bits } else { hi_bits };
            out.push((lo as f32, lo_bits));
            out.push((mid, even));
            out.push((f32::from_bits(mid.to_bits() - 1), lo_bits));
            out.push((f32::from_bits(mid.to_bits() + 1), hi_bits));
        }
        out
    }

    fn check(dtype: DType, cases: &[(f32, u16)]) {
        for sign in [1.0f64, -1.0] {
            let xs: Vec<f64> = cases.iter().map(|(x, _)| sign * f64::from(*x)).collect();
            let got = HostValue::from_f64(dtype, vec![xs.len() as u64], xs.clone()).to_bytes();
            for (k, ((x, want), b)) in cases.iter().zip(got.chunks_exact(2)).enumerate() {
                let want = if sign < 0.0 { want | 0x8000 } else { *want };
                let got = u16::from_le_bytes([b[0], b[1]]);
                assert_eq!(
                    got,
                    want,
                    "{dtype} case {k}: {} -> {got:#06x}, want {want:#06x}",
                    sign * f64::from(*x)
                );
            }
        }
    }

    #[test]
    fn f16_rounds_to_nearest_even_with_subnormals_and_overflow() {
        let cases = cases(&ladder(f16_value, 0x7c00, 65536.0));
        assert!(cases.len() > 120_000);
        check(DType::F16, &cases);
        // Below half the smallest subnormal: zero; NaN stays NaN; the value held is the rounded one.
        check(DType::F16, &[(2f32.powi(-26), 0), (f32::INFINITY, 0x7c00)]);
        let v = HostValue::from_f64(DType::F16, vec![3], vec![f64::NAN, 65519.0, 1e-8]);
        let f = v.as_f64();
        assert!(f[0].is_nan() && f[1] == 65504.0 && f[2] == 0.0, "{f:?}");
    }

    #[test]
    fn bf16_rounds_to_nearest_even_with_subnormals_and_overflow() {
        let cases = cases(&ladder(bf16_value, 0x7f80, 2f64.powi(128)));
        assert!(cases.len() > 120_000);
        check(DType::BF16, &cases);
        let v = HostValue::from_f64(DType::BF16, vec![2], vec![f64::NAN, 1.0 + 2f64.powi(-8)]);
        let f = v.as_f64();
        assert!(f[0].is_nan() && f[1] == 1.0, "{f:?}");
        let b = HostValue::from_f64(DType::BF16, vec![1], vec![f64::NAN]).to_bytes();
        assert_eq!(u16::from_le_bytes([b[0], b[1]]) & 0x7fc0, 0x7fc0, "a quiet NaN");
    }

    #[test]
    fn casts_wrap_truncate_and_round() {
        let v = HostValue::from_f64(DType::F32, vec![4], vec![-1.5, 2.7, 3e9, f64::NAN]);
        assert_eq!(
            v.cast(DType::I32).unwrap().as_i64(),
            [-1, 2, i64::from(3_000_000_000u32 as i32), 0]
        );
        assert_eq!(v.cast(DType::Bool).unwrap().as_i64(), [1, 1, 1, 1]);
        // 3e9 = 11_718_750 · 256: wraps to 0 in u8.
        assert_eq!(v.cast(DType::U8).unwrap().as_i64(), [255, 2, 0, 0]);
        let i = HostValue::ints(DType::I64, vec![2], vec![300, -1]);
        assert_eq!(i.cast(DType::U8).unwrap().as_i64(), [44, 255]);
        assert_eq!(i.cast(DType::F16).unwrap().as_f64(), [300.0, -1.0]);
        assert_eq!(i.cast(DType::F8E4M3FN), None);
        let b = HostValue::from_bytes(DType::Bool, vec![2], &[0, 7]).unwrap();
        assert_eq!(b.as_i64(), [0, 1]);
        assert_eq!(HostValue::from_bytes(DType::F32, vec![2], &[0; 7]), None);
        let h = HostValue::from_bytes(DType::F16, vec![1], &0x3c01u16.to_le_bytes()).unwrap();
        assert_eq!(h.to_bytes(), 0x3c01u16.to_le_bytes());
    }
}
