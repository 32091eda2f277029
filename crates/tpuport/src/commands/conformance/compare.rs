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
        _ => return None,
    })
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
