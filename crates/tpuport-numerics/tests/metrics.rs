//! Metrics, tolerance policy and bisection on hand-built tensors with known answers.
#![allow(clippy::unwrap_used, clippy::float_cmp, reason = "tests")]

use tpuport_model::{DType, HostTensor};
use tpuport_numerics::{
    Atol, CompareError, Policy, Precision, Probe, Tolerance, Verdict, bf16_ulp, bisect, compare,
};

fn t(shape: &[u64], v: &[f32]) -> HostTensor {
    HostTensor::from_f32(shape.to_vec(), v).unwrap()
}

fn f32_tol() -> Tolerance {
    Tolerance::default_for(Precision::F32)
}

#[test]
fn identical_tensors_have_zero_error_and_pass() {
    let a = t(&[2, 3], &[1.0, -2.0, 3.0, 0.5, 0.0, 7.0]);
    let m = compare(&a, &a, &f32_tol()).unwrap();
    assert_eq!((m.max_abs, m.rmse, m.outside), (0.0, 0.0, 0));
    assert!((m.cosine.unwrap() - 1.0).abs() < 1e-12);
    assert!(Policy::new(Precision::F32).verdict(&m).passed());
    let c = m.classes.unwrap();
    assert_eq!((c.rows, c.classes, c.top1_agreement, c.kl_mean), (2, 3, 1.0, 0.0));
    assert_eq!(c.interpreted_as, "logits");
}

#[test]
fn known_errors() {
    let r = t(&[4], &[1.0, 2.0, 4.0, -8.0]);
    let c = t(&[4], &[1.0, 2.5, 4.0, -8.0]);
    let m = compare(&r, &c, &f32_tol()).unwrap();
    assert_eq!(m.max_abs, 0.5);
    assert_eq!(m.max_rel, 0.25);
    assert!((m.rmse - 0.25).abs() < 1e-12); // sqrt(0.25/4)
    assert_eq!(m.worst_index, Some(1));
    assert_eq!((m.worst_reference, m.worst_candidate), (Some(2.0), Some(2.5)));
    // spacing of bf16 at 2.0 is 2^-6: 0.5 is 32 ULPs
    assert_eq!(m.bf16_ulp_max, 32.0);
    assert_eq!(m.outside, 1);
    assert_eq!(m.fraction_outside, 0.25);
    let v = Policy::new(Precision::F32).verdict(&m);
    assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
    // loosened enough, it passes
    let loose = Policy::new(Precision::F32).with_atol(0.6);
    assert!(loose.verdict(&compare(&r, &c, &loose.tolerance).unwrap()).passed());
    let frac = Policy::new(Precision::F32).with_max_fraction_outside(0.3);
    assert!(frac.verdict(&compare(&r, &c, &frac.tolerance).unwrap()).passed());
}

#[test]
fn ulp_spacing() {
    assert_eq!(bf16_ulp(1.0), 2f64.powi(-7));
    assert_eq!(bf16_ulp(1.99), 2f64.powi(-7));
    assert_eq!(bf16_ulp(-3.0), 2f64.powi(-6));
    assert_eq!(bf16_ulp(0.0), 2f64.powi(-133));
}

#[test]
fn default_atol_scales_with_the_reference() {
    let tol = Tolerance::default_for(Precision::TpuDefault);
    assert_eq!(tol.atol, Atol::RelativeToMax(1e-2));
    let r = t(&[2], &[1000.0, 0.0]);
    let c = t(&[2], &[1000.0, 5.0]); // 5 <= 1e-2 * 1000
    let m = compare(&r, &c, &tol).unwrap();
    assert_eq!(m.atol_applied, 10.0);
    assert_eq!(m.outside, 0);
}

#[test]
fn nan_and_inf_are_counted_never_fatal() {
    let r = t(&[5], &[f32::NAN, f32::INFINITY, 1.0, 2.0, f32::NEG_INFINITY]);
    let c = t(&[5], &[f32::NAN, f32::INFINITY, f32::NAN, 2.0, f32::INFINITY]);
    let m = compare(&r, &c, &f32_tol()).unwrap();
    let nf = &m.non_finite;
    assert_eq!(
        (nf.reference_nan, nf.reference_inf, nf.candidate_nan, nf.candidate_inf),
        (1, 2, 2, 2)
    );
    assert_eq!(nf.mismatched, 2); // 1.0 vs NaN, -Inf vs +Inf
    assert_eq!(m.outside, 2);
    assert_eq!(m.max_abs, 0.0);
    let Verdict::Fail { reasons } = Policy::new(Precision::F32).verdict(&m) else {
        panic!("must fail")
    };
    assert!(reasons[0].contains("non-finite on one side"), "{reasons:?}");
    // all-NaN on both sides: comparable, passes
    let n = t(&[2], &[f32::NAN, f32::NAN]);
    let m = compare(&n, &n, &f32_tol()).unwrap();
    assert!(Policy::new(Precision::F32).verdict(&m).passed());
    assert_eq!(m.cosine, None);
}

#[test]
fn shape_and_dtype_mismatches_are_errors() {
    let a = t(&[2, 2], &[1.0; 4]);
    let b = t(&[4], &[1.0; 4]);
    assert_eq!(
        compare(&a, &b, &f32_tol()).unwrap_err(),
        CompareError::Shape { reference: vec![2, 2], candidate: vec![4] }
    );
    let c = HostTensor::new(DType::C64, vec![2, 2], vec![0; 32]).unwrap();
    assert!(matches!(compare(&a, &c, &f32_tol()), Err(CompareError::NotNumeric { .. })));
    // bf16 against f32 is fine: both have a numeric reading
    let h: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
        .collect();
    let bf = HostTensor::new(DType::BF16, vec![2, 2], h).unwrap();
    let m = compare(&t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]), &bf, &f32_tol()).unwrap();
    assert_eq!(m.max_abs, 0.0);
}

#[test]
fn integers_compare_exactly() {
    let a = HostTensor::new(
        DType::I32,
        vec![3],
        [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .unwrap();
    let b = HostTensor::new(
        DType::I32,
        vec![3],
        [1i32, 2, 4].iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
    .unwrap();
    let m = compare(&a, &b, &f32_tol()).unwrap();
    assert_eq!((m.outside, m.atol_applied, m.rtol_applied), (1, 0.0, 0.0));
    assert!(m.classes.is_none());
}

#[test]
fn top_k_and_kl() {
    // 2 rows of 6 logits; row 0 keeps its order, row 1 swaps the top two
    let r = t(&[2, 6], &[5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 5.0, 4.9, 3.0, 2.0, 1.0, 0.0]);
    let c = t(&[2, 6], &[5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 4.9, 5.0, 3.0, 2.0, 1.0, 0.0]);
    let m = compare(&r, &c, &f32_tol()).unwrap();
    let k = m.classes.unwrap();
    assert_eq!(k.top1_agreement, 0.5);
    assert_eq!(k.top5_agreement, Some(1.0));
    assert!(k.kl_mean > 0.0 && k.kl_max > k.kl_mean);
    // probabilities are detected and used as they are
    let p = t(&[1, 2], &[0.75, 0.25]);
    let q = t(&[1, 2], &[0.5, 0.5]);
    let k = compare(&p, &q, &f32_tol()).unwrap().classes.unwrap();
    assert_eq!(k.interpreted_as, "probabilities");
    let want = 0.75 * (0.75f64 / 0.5).ln() + 0.25 * (0.25f64 / 0.5).ln();
    assert!((k.kl_mean - want).abs() < 1e-9, "{} vs {want}", k.kl_mean);
}

#[test]
fn bisect_finds_the_first_failing_probe() {
    let probe = |n: &str| Probe { name: n.into(), op: "stablehlo.add".into(), location: None };
    let probes = vec![probe("a"), probe("b"), probe("c"), probe("d")];
    let r = vec![t(&[2], &[1.0, 2.0]), t(&[2], &[1.0, 2.0]), t(&[2], &[1.0, 2.0]), t(&[1], &[0.0])];
    let c = vec![
        t(&[2], &[1.0, 2.0]),
        t(&[2], &[1.0, 2.00001]),
        t(&[2], &[1.5, 2.0]),
        t(&[2], &[0.0, 0.0]),
    ];
    let b = bisect(&probes, &r, &c, &Policy::new(Precision::F32));
    assert_eq!(b.first_divergent, Some(2));
    assert_eq!(b.first().unwrap().probe.name, "c");
    assert!(b.steps[1].verdict.passed());
    assert!(b.steps[1].rel_rmse > 0.0);
    assert!(matches!(b.steps[3].verdict, Verdict::Error { .. }));
    let none = bisect(&probes[..2], &r, &r, &Policy::new(Precision::F32));
    assert_eq!(none.first_divergent, None);
}

/// A detector's sigmoid map close to zero for random inputs (the OCR case of issue 13): its
/// scale is ~1e-3, so the scaled atol (1e-5 · 1e-3) is below f32's resolution of the unit-scale
/// intermediates it went through. Errors at f32 resolution pass; a real divergence of 1e-3 of
/// the tensor's scale on one element still fails.
#[test]
fn near_zero_outputs_get_the_precision_floor() {
    let n = 64;
    let r: Vec<f32> = (0..n).map(|i| 1e-3 * (1.0 + (i as f32 * 0.37).sin()) / 2.0).collect();
    let mut c = r.clone();
    for (i, v) in c.iter_mut().enumerate() {
        *v += if i % 2 == 0 { 1.19e-7 } else { -1.19e-7 };
    }
    let tol = f32_tol();
    let m = compare(&t(&[1, 1, 8, 8], &r), &t(&[1, 1, 8, 8], &c), &tol).unwrap();
    assert!(m.atol_floored, "{m:?}");
    assert_eq!(m.atol_applied, 2.0 * 2f64.powi(-23));
    assert!(Policy::new(Precision::F32).verdict(&m).passed(), "{m:?}");
    // rank 4: a spatial map, no top-1 agreement over its last axis
    assert!(m.classes.is_none());
    assert!(m.classes_skipped.is_some());
    // the bf16 distance stays on the bf16 number line: a fraction of an ULP for most elements,
    // a few where the reference is ~1e-6 (1.2e-7 is 5 % there), never 2^133-scaled
    assert!(m.bf16_ulp_median < 1.0 && m.bf16_ulp_max < 16.0, "{m:?}");

    let mut bad = c.clone();
    bad[10] += 1e-3 * 1e-3 * 1000.0; // 1e-3 absolute: the whole scale of the tensor
    let m = compare(&t(&[1, 1, 8, 8], &r), &t(&[1, 1, 8, 8], &bad), &tol).unwrap();
    assert!(!Policy::new(Precision::F32).verdict(&m).passed());
    let small = {
        let mut v = c.clone();
        v[10] += 1e-6; // 1e-3 of the scale: above f32 resolution, a divergence
        v
    };
    let m = compare(&t(&[1, 1, 8, 8], &r), &t(&[1, 1, 8, 8], &small), &tol).unwrap();
    assert!(!Policy::new(Precision::F32).verdict(&m).passed(), "{m:?}");
}

/// A fixed atol from the user is never raised to the floor.
#[test]
fn user_atol_is_not_floored() {
    let p = Policy::new(Precision::F32).with_atol(1e-9);
    let r = t(&[2], &[1e-4, 2e-4]);
    let c = t(&[2], &[1e-4 + 1e-7, 2e-4]);
    let m = compare(&r, &c, &p.tolerance).unwrap();
    assert!(!m.atol_floored);
    assert_eq!(m.atol_applied, 1e-9);
    assert!(!p.verdict(&m).passed());
}

#[test]
fn bf16_ordinal_distance() {
    use tpuport_numerics::bf16_ordinal;
    // consecutive bf16 values are one apart, across a binade and through zero
    assert_eq!(bf16_ordinal(1.0 + 2f64.powi(-7)) - bf16_ordinal(1.0), 1.0);
    assert_eq!(bf16_ordinal(2.0) - bf16_ordinal(2.0 - 2f64.powi(-7)), 1.0);
    assert_eq!(bf16_ordinal(2f64.powi(-133)) - bf16_ordinal(-(2f64.powi(-133))), 2.0);
    assert_eq!(bf16_ordinal(0.0), 0.0);
    // every finite f32 is within the 16-bit ordinal range
    assert!(bf16_ordinal(f64::from(f32::MAX)) < 32_768.0);
    assert!(bf16_ordinal(f64::NAN).is_infinite());
    // rank 1 to 3 keep the class metrics
    let a = t(&[1, 2, 3], &[1.0, 2.0, 3.0, 3.0, 2.0, 1.0]);
    let m = compare(&a, &a, &f32_tol()).unwrap();
    assert!(m.classes.is_some() && m.classes_skipped.is_none());
}
