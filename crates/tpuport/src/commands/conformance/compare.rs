//! Output comparison with the ONNX backend runner's rule: same shape, same element type, then
//! `|actual - expected| <= atol + rtol * |expected|` elementwise (numpy `assert_allclose`, NaN
//! equal to NaN, infinities equal only to themselves); bf16 outputs use at least two bf16 ulps
//! (`rtol >= 2^-6`). Integer and bool outputs compare exactly; types without a numeric view
//! here (f8, 4-bit, complex) compare byte for byte.

use tpuport_model::{DType, HostTensor};

/// Why an output does not match, or `None` when it does.
pub(super) fn mismatch(
    actual: &HostTensor,
    expected: &HostTensor,
    rtol: f64,
    atol: f64,
) -> Option<String> {
    if actual.shape != expected.shape {
        return Some(format!("shape {:?}, expected {:?}", actual.shape, expected.shape));
    }
    if actual.dtype != expected.dtype {
        return Some(format!("element type {}, expected {}", actual.dtype, expected.dtype));
    }
    let rtol = if actual.dtype == DType::BF16 { rtol.max(2f64.powi(-6)) } else { rtol };
    let (Some(a), Some(e)) = (values(actual), values(expected)) else {
        return (actual.data() != expected.data()).then(|| "bytes differ".to_owned());
    };
    let exact = !actual.dtype.is_float();
    let mut bad = 0usize;
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut worst_excess = 0.0f64;
    for (i, (&x, &y)) in a.iter().zip(&e).enumerate() {
        let ok = if exact {
            x == y
        } else if x.is_nan() || y.is_nan() {
            x.is_nan() && y.is_nan()
        } else if x.is_infinite() || y.is_infinite() {
            x == y
        } else {
            (x - y).abs() <= atol + rtol * y.abs()
        };
        if !ok {
            bad += 1;
            let excess = if x.is_finite() && y.is_finite() {
                (x - y).abs() - rtol * y.abs()
            } else {
                f64::INFINITY
            };
            if worst.is_none() || excess > worst_excess {
                worst_excess = excess;
                worst = Some((i, x, y));
            }
        }
    }
    worst.map(|(i, x, y)| {
        format!(
            "{bad} of {} elements differ; worst at flat index {i}: {x} vs expected {y}",
            a.len()
        )
    })
}

/// Elements as f64 (exact for every integer type up to 2^53, which covers the test data).
fn values(t: &HostTensor) -> Option<Vec<f64>> {
    let d = t.data();
    macro_rules! le {
        ($ty:ty, $n:expr) => {
            d.chunks_exact($n)
                .map(|c| <$ty>::from_le_bytes(c.try_into().unwrap_or([0; $n])) as f64)
                .collect()
        };
    }
    Some(match t.dtype {
        DType::F64 => le!(f64, 8),
        DType::F32 => le!(f32, 4),
        DType::F16 => {
            d.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        DType::BF16 => {
            d.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        DType::I64 => le!(i64, 8),
        DType::I32 => le!(i32, 4),
        DType::I16 => le!(i16, 2),
        DType::I8 => le!(i8, 1),
        DType::U64 => le!(u64, 8),
        DType::U32 => le!(u32, 4),
        DType::U16 => le!(u16, 2),
        DType::U8 => le!(u8, 1),
        DType::Bool => d.iter().map(|&b| f64::from(u8::from(b != 0))).collect(),
        DType::I4 | DType::U4 => {
            let n = usize::try_from(t.elements()).unwrap_or(0);
            (0..n)
                .map(|i| {
                    let v = d.get(i / 2).map_or(0, |b| (b >> (4 * (i % 2))) & 0x0f);
                    if t.dtype == DType::I4 && v & 0x08 != 0 {
                        f64::from(i16::from(v) - 16)
                    } else {
                        f64::from(v)
                    }
                })
                .collect()
        }
        DType::F8E4M3FN => d.iter().map(|&b| f8(b, 3, 7, F8::Fn)).collect(),
        DType::F8E4M3FNUZ => d.iter().map(|&b| f8(b, 3, 8, F8::Fnuz)).collect(),
        DType::F8E5M2 => d.iter().map(|&b| f8(b, 2, 15, F8::Ieee)).collect(),
        DType::F8E5M2FNUZ => d.iter().map(|&b| f8(b, 2, 16, F8::Fnuz)).collect(),
        _ => return None,
    })
}

/// How an 8-bit float encodes specials.
#[derive(Clone, Copy)]
enum F8 {
    /// Infinities and NaNs as in IEEE (all-ones exponent): E5M2.
    Ieee,
    /// No infinities; NaN is all ones in exponent and mantissa: E4M3FN.
    Fn,
    /// No infinities, no negative zero; NaN is 0x80: the FNUZ types.
    Fnuz,
}

/// Decodes an 8-bit float with `mbits` mantissa bits and exponent `bias` (ONNX's f8 types).
fn f8(b: u8, mbits: u32, bias: i32, kind: F8) -> f64 {
    let ebits = 7 - mbits;
    let emax = (1u32 << ebits) - 1;
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = (u32::from(b) >> mbits) & emax;
    let m = u32::from(b) & ((1 << mbits) - 1);
    match kind {
        F8::Fnuz if b == 0x80 => return f64::NAN,
        F8::Fn if e == emax && m == (1 << mbits) - 1 => return f64::NAN,
        F8::Ieee if e == emax => return if m == 0 { sign * f64::INFINITY } else { f64::NAN },
        _ => {}
    }
    let frac = f64::from(m) / f64::from(1u32 << mbits);
    let v =
        if e == 0 { frac * 2f64.powi(1 - bias) } else { (1.0 + frac) * 2f64.powi(e as i32 - bias) };
    sign * v
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn f(shape: &[u64], v: &[f32]) -> HostTensor {
        HostTensor::from_f32(shape.to_vec(), v).unwrap()
    }

    #[test]
    fn allclose_rule() {
        let e = f(&[3], &[1.0, f32::NAN, f32::INFINITY]);
        assert_eq!(mismatch(&f(&[3], &[1.0005, f32::NAN, f32::INFINITY]), &e, 1e-3, 1e-7), None);
        let m = mismatch(&f(&[3], &[1.01, f32::NAN, f32::INFINITY]), &e, 1e-3, 1e-7).unwrap();
        assert!(m.starts_with("1 of 3 elements differ; worst at flat index 0"), "{m}");
        assert!(mismatch(&f(&[3], &[1.0, 0.0, f32::INFINITY]), &e, 1e-3, 1e-7).is_some());
        assert!(mismatch(&f(&[3], &[1.0, f32::NAN, f32::NEG_INFINITY]), &e, 1e-3, 1e-7).is_some());
        let m = mismatch(&f(&[1, 3], &[1.0, f32::NAN, f32::INFINITY]), &e, 1e-3, 1e-7).unwrap();
        assert!(m.starts_with("shape [1, 3]"), "{m}");
    }

    #[test]
    fn f8_decoding() {
        assert_eq!(f8(0x7e, 3, 7, F8::Fn), 448.0);
        assert!(f8(0x7f, 3, 7, F8::Fn).is_nan());
        assert_eq!(f8(0x01, 3, 7, F8::Fn), 2f64.powi(-9));
        assert_eq!(f8(0x7b, 2, 15, F8::Ieee), 57344.0);
        assert_eq!(f8(0xfc, 2, 15, F8::Ieee), f64::NEG_INFINITY);
        assert!(f8(0x80, 3, 8, F8::Fnuz).is_nan());
        assert_eq!(f8(0x7f, 3, 8, F8::Fnuz), 240.0);
        assert_eq!(f8(0x7f, 2, 16, F8::Fnuz), 57344.0);
    }

    #[test]
    fn integers_exact_and_dtype_checked() {
        let a = HostTensor::new(
            DType::I64,
            vec![2],
            [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
        .unwrap();
        let b = HostTensor::new(
            DType::I64,
            vec![2],
            [1i64, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
        .unwrap();
        assert_eq!(mismatch(&a, &a, 1e-3, 1e-7), None);
        assert!(mismatch(&a, &b, 1.0, 1.0).is_some());
        let m = mismatch(&f(&[2], &[1.0, 2.0]), &b, 1e-3, 1e-7).unwrap();
        assert!(m.contains("element type"), "{m}");
    }
}
