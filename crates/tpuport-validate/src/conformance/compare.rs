//! Output comparison with the ONNX backend runner's rule: same shape, same element type, then
//! `|actual - expected| <= atol + rtol * |expected|` elementwise (numpy `assert_allclose`, NaN
//! equal to NaN, infinities equal only to themselves); bf16 outputs use at least two bf16 ulps
//! (`rtol >= 2^-6`). Integer and bool outputs compare exactly; values are read with
//! [`HostTensor::to_f64`], and types without a numeric view there (complex) compare byte for
//! byte.

use tpuport_model::{DType, HostTensor};

/// Why an output does not match, or `None` when it does.
pub(crate) fn mismatch(
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
    let (Some(a), Some(e)) = (actual.to_f64(), expected.to_f64()) else {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
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
