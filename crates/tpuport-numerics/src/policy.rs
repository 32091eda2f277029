//! Tolerance policy: default tolerances per compute precision, overrides, verdicts.

use serde::Serialize;

use crate::metrics::Metrics;

/// The arithmetic the candidate was computed with, which sets the default tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// f64 throughout.
    F64,
    /// f32 throughout (also: a different f32 runtime such as onnxruntime).
    F32,
    /// f32 matmuls as 6 bf16 passes (TPU `HIGHEST`).
    TpuHighest,
    /// f32 matmuls as 3 bf16 passes (TPU `HIGH`).
    TpuHigh,
    /// f32 matmuls as 1 bf16 pass with f32 accumulation (TPU `DEFAULT`).
    TpuDefault,
    /// Whole model in bf16.
    Bf16,
    /// Whole model in f16.
    F16,
}

impl Precision {
    /// Kebab-case name as the CLI spells it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
            Precision::TpuHighest => "tpu-highest",
            Precision::TpuHigh => "tpu-high",
            Precision::TpuDefault => "tpu-default",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// Machine epsilon of the arithmetic (the spacing of its values at 1.0): 2^-52 for f64,
    /// 2^-23 for f32 and `HIGHEST` (6 bf16 passes recover f32), 2^-16 for `HIGH` (3 passes
    /// keep about 16 significand bits), 2^-10 for f16, 2^-7 for bf16 and `DEFAULT`.
    #[must_use]
    pub const fn epsilon(self) -> f64 {
        match self {
            Precision::F64 => f64::EPSILON,
            Precision::F32 | Precision::TpuHighest => 1.0 / 8_388_608.0,
            Precision::TpuHigh => 1.0 / 65_536.0,
            Precision::F16 => 1.0 / 1024.0,
            Precision::TpuDefault | Precision::Bf16 => 1.0 / 128.0,
        }
    }
}

/// Absolute tolerance: a fixed value, or a factor of the reference's largest finite magnitude
/// (so one default fits tensors of any scale).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Atol {
    /// Fixed.
    Absolute(f64),
    /// `factor × max|reference|`.
    RelativeToMax(f64),
}

impl Atol {
    /// The absolute value for a reference whose largest finite magnitude is `ref_max`.
    #[must_use]
    pub fn applied(self, ref_max: f64) -> f64 {
        match self {
            Atol::Absolute(a) => a,
            Atol::RelativeToMax(f) => f * ref_max,
        }
    }
}

/// When an element, and a whole tensor, count as matching.
///
/// An element is inside when `|c − r| ≤ atol + rtol·|r|` (NumPy's `allclose` rule), or when
/// both sides are the same NaN/Inf. A tensor passes when no non-finite value mismatches and
/// at most `max_fraction_outside` of its elements are outside.
///
/// A default (`RelativeToMax`) atol never goes below `atol_floor`, two units of the compute
/// precision's resolution at unit scale: a tensor whose values are all tiny (a sigmoid map near
/// zero, a residual) was still computed through unit-scale intermediates, so errors of that
/// size are what the arithmetic resolves, not a divergence. A fixed atol the user gives is
/// taken as it is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: Atol,
    /// Smallest atol a `RelativeToMax` atol is raised to.
    pub atol_floor: f64,
    /// Largest fraction of elements allowed outside.
    pub max_fraction_outside: f64,
}

impl Tolerance {
    /// The default tolerance for `p` (the table in `docs/validate.md`).
    #[must_use]
    pub const fn default_for(p: Precision) -> Tolerance {
        let (rtol, atol, frac) = match p {
            Precision::F64 => (1e-10, 1e-12, 0.0),
            Precision::F32 | Precision::TpuHighest => (1e-4, 1e-5, 0.0),
            Precision::TpuHigh => (1e-3, 1e-4, 1e-3),
            Precision::F16 => (4e-3, 1e-3, 1e-3),
            // two bf16 ULPs (2·2^-7) relative, 1% of the tensor's scale absolute
            Precision::TpuDefault | Precision::Bf16 => (1.5625e-2, 1e-2, 1e-2),
        };
        Tolerance {
            rtol,
            atol: Atol::RelativeToMax(atol),
            atol_floor: 2.0 * p.epsilon(),
            max_fraction_outside: frac,
        }
    }

    /// The absolute tolerance for a reference whose largest finite magnitude is `ref_max`:
    /// the fixed value, or the scaled one raised to [`Tolerance::atol_floor`].
    #[must_use]
    pub fn atol_for(&self, ref_max: f64) -> f64 {
        match self.atol {
            Atol::Absolute(a) => a,
            Atol::RelativeToMax(_) => self.atol.applied(ref_max).max(self.atol_floor),
        }
    }
}

/// Default tolerances per precision, with optional overrides from the user.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Policy {
    /// The candidate's compute precision.
    pub precision: Precision,
    /// The tolerance in force (defaults for `precision` with overrides applied).
    pub tolerance: Tolerance,
}

impl Policy {
    /// The default policy for `precision`.
    #[must_use]
    pub const fn new(precision: Precision) -> Policy {
        Policy { precision, tolerance: Tolerance::default_for(precision) }
    }

    /// Replaces the relative tolerance.
    #[must_use]
    pub const fn with_rtol(mut self, rtol: f64) -> Policy {
        self.tolerance.rtol = rtol;
        self
    }

    /// Replaces the absolute tolerance with a fixed value.
    #[must_use]
    pub const fn with_atol(mut self, atol: f64) -> Policy {
        self.tolerance.atol = Atol::Absolute(atol);
        self
    }

    /// Replaces the allowed fraction of elements outside the tolerance.
    #[must_use]
    pub const fn with_max_fraction_outside(mut self, f: f64) -> Policy {
        self.tolerance.max_fraction_outside = f;
        self
    }

    /// The verdict for one compared tensor.
    #[must_use]
    pub fn verdict(&self, m: &Metrics) -> Verdict {
        let mut reasons = Vec::new();
        if m.non_finite.mismatched > 0 {
            reasons.push(format!(
                "{} element(s) non-finite on one side only (reference {} NaN / {} Inf, \
                 candidate {} NaN / {} Inf)",
                m.non_finite.mismatched,
                m.non_finite.reference_nan,
                m.non_finite.reference_inf,
                m.non_finite.candidate_nan,
                m.non_finite.candidate_inf
            ));
        }
        let finite_outside = m.outside - m.non_finite.mismatched;
        if m.fraction_outside > self.tolerance.max_fraction_outside && finite_outside > 0 {
            reasons.push(format!(
                "{:.3}% of elements outside atol {:.3e} + rtol {:.3e}·|ref| (allowed {:.3}%); \
                 max abs error {:.3e}",
                m.fraction_outside * 100.0,
                m.atol_applied,
                m.rtol_applied,
                self.tolerance.max_fraction_outside * 100.0,
                m.max_abs
            ));
        }
        if reasons.is_empty() { Verdict::Pass } else { Verdict::Fail { reasons } }
    }
}

/// Outcome for one output or intermediate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Within tolerance.
    Pass,
    /// Outside tolerance, with the reasons.
    Fail {
        /// One line per failed criterion.
        reasons: Vec<String>,
    },
    /// Could not be compared (missing output, shape or dtype mismatch).
    Error {
        /// What is wrong.
        reason: String,
    },
}

impl Verdict {
    /// True for [`Verdict::Pass`].
    #[must_use]
    pub const fn passed(&self) -> bool {
        matches!(self, Verdict::Pass)
    }

    /// `pass`, `fail` or `error`.
    #[must_use]
    pub const fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail { .. } => "fail",
            Verdict::Error { .. } => "error",
        }
    }
}
