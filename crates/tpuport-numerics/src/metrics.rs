//! Element-wise comparison of a candidate tensor against a reference.

use serde::Serialize;
use thiserror::Error;
use tpuport_model::{DType, HostTensor};

use crate::policy::Tolerance;

/// Why two tensors cannot be compared element by element.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CompareError {
    /// The shapes differ.
    #[error("shape mismatch: reference {reference:?}, candidate {candidate:?}")]
    Shape {
        /// Reference shape.
        reference: Vec<u64>,
        /// Candidate shape.
        candidate: Vec<u64>,
    },
    /// One side has a dtype without a numeric reading (strings, complex, 4-bit).
    #[error("{side} has dtype {dtype}, which has no numeric comparison")]
    NotNumeric {
        /// `reference` or `candidate`.
        side: &'static str,
        /// The dtype.
        dtype: DType,
    },
}

/// NaN and Inf accounting on both sides.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NonFinite {
    /// NaNs in the reference.
    pub reference_nan: u64,
    /// Infinities in the reference.
    pub reference_inf: u64,
    /// NaNs in the candidate.
    pub candidate_nan: u64,
    /// Infinities in the candidate.
    pub candidate_inf: u64,
    /// Elements where exactly one side is non-finite, or both are but differ (NaN vs Inf,
    /// +Inf vs -Inf). These always count as outside the tolerance.
    pub mismatched: u64,
}

/// Metrics over the last axis, reading each row as a distribution over classes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassMetrics {
    /// `probabilities` when every reference row is non-negative and sums to 1 (within 1e-3),
    /// else `logits` (rows go through a softmax before the KL divergence).
    pub interpreted_as: &'static str,
    /// Rows (elements / classes).
    pub rows: u64,
    /// Rows left out because they hold a NaN or Inf on either side (top-k is undefined there).
    pub rows_non_finite: u64,
    /// Size of the last axis.
    pub classes: u64,
    /// Fraction of rows whose arg-max agrees.
    pub top1_agreement: f64,
    /// Mean overlap of the two top-5 sets, divided by 5 (`None` with fewer than 5 classes).
    pub top5_agreement: Option<f64>,
    /// Mean over rows of KL(reference ‖ candidate), in nats.
    pub kl_mean: f64,
    /// Largest per-row KL divergence.
    pub kl_max: f64,
}

/// Comparison metrics of one candidate tensor against its reference.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metrics {
    /// Elements compared.
    pub elements: u64,
    /// Reference dtype.
    pub reference_dtype: DType,
    /// Candidate dtype.
    pub candidate_dtype: DType,
    /// Largest |candidate − reference| over elements finite on both sides.
    pub max_abs: f64,
    /// Largest |candidate − reference| / |reference| over finite elements with a non-zero
    /// reference.
    pub max_rel: f64,
    /// Root mean square error over finite elements.
    pub rmse: f64,
    /// RMSE divided by the reference's root mean square (0 when both are 0).
    pub rel_rmse: f64,
    /// Largest |reference| over finite elements (the scale the default `atol` refers to).
    pub reference_max_abs: f64,
    /// Cosine similarity of the finite parts (`None` when either is all zeros).
    pub cosine: Option<f64>,
    /// Largest distance between reference and candidate on the bf16 number line: how many
    /// bf16 values lie between them ([`bf16_ordinal`]), fractional between representable
    /// values.
    pub bf16_ulp_max: f64,
    /// Median of that distance.
    pub bf16_ulp_median: f64,
    /// Elements outside `atol + rtol·|reference|`, non-finite mismatches included.
    pub outside: u64,
    /// `outside / elements` (0 for empty tensors).
    pub fraction_outside: f64,
    /// Absolute tolerance that was applied (after scaling by `reference_max_abs`, and raised
    /// to the floor when that was larger).
    pub atol_applied: f64,
    /// Whether `atol_applied` is the precision's floor (the scaled atol was smaller).
    pub atol_floored: bool,
    /// Relative tolerance that was applied.
    pub rtol_applied: f64,
    /// Flat index of the element with the largest absolute error.
    pub worst_index: Option<u64>,
    /// Reference value at `worst_index`.
    pub worst_reference: Option<f64>,
    /// Candidate value at `worst_index`.
    pub worst_candidate: Option<f64>,
    /// NaN/Inf accounting.
    pub non_finite: NonFinite,
    /// Last-axis metrics for float tensors of rank 1 to 3 whose last axis has at least 2
    /// entries (logits or probabilities over classes or a vocabulary).
    pub classes: Option<ClassMetrics>,
    /// Why there are no class metrics for a float tensor, when that was a decision (rank 4
    /// and above: a spatial map such as `[N, C, H, W]`, whose last axis is not classes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes_skipped: Option<&'static str>,
}

/// Spacing of bf16 values at magnitude `x` (2^(e−7) for `x` in [2^e, 2^(e+1))); at zero and
/// in the subnormal range the smallest normal spacing, 2^−133.
#[must_use]
pub fn bf16_ulp(x: f64) -> f64 {
    let a = x.abs();
    let min_normal = f64::from(f32::MIN_POSITIVE);
    if a.is_nan() || a.is_infinite() {
        return f64::INFINITY;
    }
    let e = if a < min_normal { -126 } else { a.log2().floor() as i32 };
    2f64.powi(e - 7)
}

/// Position of `x` on the bf16 number line, continuous between representable values: bf16
/// values have consecutive integer ordinals (sign-symmetric, `0` at zero), and a value between
/// two of them lies between their ordinals in proportion. The distance between two ordinals is
/// the number of bf16 ULPs between the values, also across binades and through zero, where an
/// error divided by one spacing would explode (2^133 ULPs for 1e-7 against 0). Infinite for
/// NaN and Inf.
#[must_use]
pub fn bf16_ordinal(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::INFINITY;
    }
    let a = x.abs();
    let min_normal = f64::from(f32::MIN_POSITIVE); // 2^-126
    let mag = if a < min_normal {
        a / bf16_ulp(0.0) // subnormals: 2^7 steps of 2^-133 up to the first normal
    } else {
        let e = a.log2().floor();
        let m = a / 2f64.powf(e); // [1, 2)
        (e + 127.0) * 128.0 + (m - 1.0) * 128.0
    };
    if x < 0.0 { -mag } else { mag }
}

/// Compares `candidate` against `reference` under `tol`.
///
/// # Errors
/// [`CompareError`] when shapes differ or a dtype has no numeric reading. NaN and Inf are
/// counted, never an error.
pub fn compare(
    reference: &HostTensor,
    candidate: &HostTensor,
    tol: &Tolerance,
) -> Result<Metrics, CompareError> {
    if reference.shape != candidate.shape {
        return Err(CompareError::Shape {
            reference: reference.shape.clone(),
            candidate: candidate.shape.clone(),
        });
    }
    let r = reference
        .to_f64()
        .ok_or(CompareError::NotNumeric { side: "reference", dtype: reference.dtype })?;
    let c = candidate
        .to_f64()
        .ok_or(CompareError::NotNumeric { side: "candidate", dtype: candidate.dtype })?;
    let mut nf = NonFinite::default();
    let mut ref_max = 0f64;
    for (&a, &b) in r.iter().zip(&c) {
        nf.reference_nan += u64::from(a.is_nan());
        nf.reference_inf += u64::from(a.is_infinite());
        nf.candidate_nan += u64::from(b.is_nan());
        nf.candidate_inf += u64::from(b.is_infinite());
        if a.is_finite() {
            ref_max = ref_max.max(a.abs());
        }
    }
    let rtol = tol.rtol;
    let atol = tol.atol_for(ref_max);
    let exact = !(reference.dtype.is_float() || candidate.dtype.is_float());
    let (rtol, atol) = if exact { (0.0, 0.0) } else { (rtol, atol) };
    let atol_floored = !exact && atol > tol.atol.applied(ref_max);

    let mut sq = 0f64;
    let mut ref_sq = 0f64;
    let mut cand_sq = 0f64;
    let mut dot = 0f64;
    let mut finite = 0u64;
    let mut max_abs = 0f64;
    let mut max_rel = 0f64;
    let mut worst: Option<usize> = None;
    let mut outside = 0u64;
    let mut ulps = Vec::with_capacity(r.len());
    for (i, (&a, &b)) in r.iter().zip(&c).enumerate() {
        if !(a.is_finite() && b.is_finite()) {
            let same = (a.is_nan() && b.is_nan()) || (a.is_infinite() && a == b);
            if !same {
                nf.mismatched += 1;
                outside += 1;
            }
            continue;
        }
        finite += 1;
        let d = (b - a).abs();
        sq += d * d;
        ref_sq += a * a;
        cand_sq += b * b;
        dot += a * b;
        if worst.is_none() || d > max_abs {
            max_abs = d;
            worst = Some(i);
        }
        if a != 0.0 {
            max_rel = max_rel.max(d / a.abs());
        }
        if d > atol + rtol * a.abs() {
            outside += 1;
        }
        ulps.push((bf16_ordinal(b) - bf16_ordinal(a)).abs());
    }
    let n = r.len() as u64;
    let rmse = if finite > 0 { (sq / finite as f64).sqrt() } else { 0.0 };
    let ref_rms = if finite > 0 { (ref_sq / finite as f64).sqrt() } else { 0.0 };
    let rel_rmse = if ref_rms > 0.0 {
        rmse / ref_rms
    } else if rmse > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let cosine = (ref_sq > 0.0 && cand_sq > 0.0).then(|| dot / (ref_sq.sqrt() * cand_sq.sqrt()));
    let (ulp_max, ulp_median) = if ulps.is_empty() {
        (0.0, 0.0)
    } else {
        let mid = ulps.len() / 2;
        let (_, m, _) = ulps.select_nth_unstable_by(mid, f64::total_cmp);
        let m = *m;
        (ulps.iter().copied().fold(0.0, f64::max), m)
    };
    let float = reference.dtype.is_float() || candidate.dtype.is_float();
    let rank = reference.shape.len();
    let (classes, classes_skipped) = if !float {
        (None, None)
    } else if rank >= 4 {
        (None, Some("rank 4 or more: a spatial map, its last axis is not classes"))
    } else {
        (class_metrics(&r, &c, reference.shape.last().copied().unwrap_or(0)), None)
    };
    Ok(Metrics {
        elements: n,
        reference_dtype: reference.dtype,
        candidate_dtype: candidate.dtype,
        max_abs,
        max_rel,
        rmse,
        rel_rmse,
        reference_max_abs: ref_max,
        cosine,
        bf16_ulp_max: ulp_max,
        bf16_ulp_median: ulp_median,
        outside,
        fraction_outside: if n > 0 { outside as f64 / n as f64 } else { 0.0 },
        atol_applied: atol,
        atol_floored,
        rtol_applied: rtol,
        worst_index: worst.map(|w| w as u64),
        worst_reference: worst.map(|w| r[w]),
        worst_candidate: worst.map(|w| c[w]),
        non_finite: nf,
        classes,
        classes_skipped,
    })
}

fn class_metrics(r: &[f64], c: &[f64], classes: u64) -> Option<ClassMetrics> {
    let k = usize::try_from(classes).ok().filter(|&k| k >= 2)?;
    if r.is_empty() || !r.len().is_multiple_of(k) {
        return None;
    }
    let rows = r.len() / k;
    let probs = r.chunks_exact(k).all(|row| {
        row.iter().all(|v| (0.0..=1.0).contains(v)) && (row.iter().sum::<f64>() - 1.0).abs() < 1e-3
    });
    let mut top1 = 0u64;
    let mut top5 = 0u64;
    let mut kl_sum = 0f64;
    let mut kl_max = 0f64;
    let mut counted = 0u64;
    for (a, b) in r.chunks_exact(k).zip(c.chunks_exact(k)) {
        if a.iter().chain(b).any(|v| !v.is_finite()) {
            continue; // non-finite rows are accounted in NonFinite; top-k is undefined there
        }
        counted += 1;
        let ta = top_k(a, 5.min(k));
        let tb = top_k(b, 5.min(k));
        top1 += u64::from(ta[0] == tb[0]);
        if k >= 5 {
            top5 += ta.iter().filter(|i| tb.contains(i)).count() as u64;
        }
        let kl = if probs { kl_probs(a, b) } else { kl_logits(a, b) };
        kl_sum += kl;
        kl_max = kl_max.max(kl);
    }
    if counted == 0 {
        return None;
    }
    let denom = counted as f64;
    Some(ClassMetrics {
        interpreted_as: if probs { "probabilities" } else { "logits" },
        rows: rows as u64,
        rows_non_finite: rows as u64 - counted,
        classes,
        top1_agreement: top1 as f64 / denom,
        top5_agreement: (k >= 5).then(|| top5 as f64 / (5.0 * denom)),
        kl_mean: kl_sum / denom,
        kl_max,
    })
}

/// Indices of the `n` largest entries, largest first (ties: lower index first).
fn top_k(v: &[f64], n: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let cmp = |a: &usize, b: &usize| v[*b].total_cmp(&v[*a]).then(a.cmp(b));
    if n < idx.len() {
        idx.select_nth_unstable_by(n - 1, cmp);
        idx.truncate(n);
    }
    idx.sort_by(cmp);
    idx
}

fn kl_probs(p: &[f64], q: &[f64]) -> f64 {
    const EPS: f64 = 1e-30;
    let qs: f64 = q.iter().map(|x| x.max(0.0)).sum::<f64>().max(EPS);
    p.iter()
        .zip(q)
        .filter(|(a, _)| **a > 0.0)
        .map(|(a, b)| a * (a.ln() - (b.max(0.0) / qs).max(EPS).ln()))
        .sum::<f64>()
        .max(0.0)
}

fn log_softmax(v: &[f64]) -> Vec<f64> {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = v.iter().map(|x| (x - m).exp()).sum::<f64>().ln() + m;
    v.iter().map(|x| x - lse).collect()
}

fn kl_logits(a: &[f64], b: &[f64]) -> f64 {
    let la = log_softmax(a);
    let lb = log_softmax(b);
    la.iter().zip(&lb).map(|(x, y)| x.exp() * (x - y)).sum::<f64>().max(0.0)
}
