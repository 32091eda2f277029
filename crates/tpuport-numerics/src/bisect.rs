//! First-divergent-op search over exposed intermediates.

use serde::Serialize;
use tpuport_model::HostTensor;

use crate::metrics::compare;
use crate::policy::{Policy, Verdict};

/// One exposed intermediate, in graph order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// Value name (StableHLO SSA name, ONNX value name).
    pub name: String,
    /// Producing op (`stablehlo.dot_general`, `MatMul`).
    pub op: String,
    /// Source location (JAX `loc(...)` name, ONNX node name), when known.
    pub location: Option<String>,
}

/// The comparison of one intermediate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// Position in graph order.
    pub index: usize,
    /// The probe.
    #[serde(flatten)]
    pub probe: Probe,
    /// Elements.
    pub elements: u64,
    /// RMSE relative to the reference's RMS.
    pub rel_rmse: f64,
    /// Largest absolute error.
    pub max_abs: f64,
    /// Largest relative error.
    pub max_rel: f64,
    /// Median error in bf16 ULPs.
    pub bf16_ulp_median: f64,
    /// Fraction of elements outside the tolerance.
    pub fraction_outside: f64,
    /// Elements non-finite on one side only.
    pub non_finite_mismatched: u64,
    /// Verdict under the policy.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Result of a bisection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bisection {
    /// One step per probe, in graph order.
    pub steps: Vec<Step>,
    /// Index into `steps` of the first intermediate that fails the tolerance.
    pub first_divergent: Option<usize>,
}

impl Bisection {
    /// The first failing step.
    #[must_use]
    pub fn first(&self) -> Option<&Step> {
        self.first_divergent.and_then(|i| self.steps.get(i))
    }
}

/// Compares `candidate[i]` against `reference[i]` for every probe (all three slices in graph
/// order) and finds the first intermediate whose verdict under `policy` is a failure. Probes
/// without a tensor on either side, or with mismatched shapes, get an
/// [`Verdict::Error`] step and never count as the divergence point.
#[must_use]
pub fn bisect(
    probes: &[Probe],
    reference: &[HostTensor],
    candidate: &[HostTensor],
    policy: &Policy,
) -> Bisection {
    let mut steps = Vec::with_capacity(probes.len());
    let mut first = None;
    for (index, probe) in probes.iter().enumerate() {
        let blank = |verdict: Verdict| Step {
            index,
            probe: probe.clone(),
            elements: 0,
            rel_rmse: 0.0,
            max_abs: 0.0,
            max_rel: 0.0,
            bf16_ulp_median: 0.0,
            fraction_outside: 0.0,
            non_finite_mismatched: 0,
            verdict,
        };
        let (Some(r), Some(c)) = (reference.get(index), candidate.get(index)) else {
            steps.push(blank(Verdict::Error { reason: "missing from a run".to_owned() }));
            continue;
        };
        let step = match compare(r, c, &policy.tolerance) {
            Ok(m) => Step {
                index,
                probe: probe.clone(),
                elements: m.elements,
                rel_rmse: m.rel_rmse,
                max_abs: m.max_abs,
                max_rel: m.max_rel,
                bf16_ulp_median: m.bf16_ulp_median,
                fraction_outside: m.fraction_outside,
                non_finite_mismatched: m.non_finite.mismatched,
                verdict: policy.verdict(&m),
            },
            Err(e) => blank(Verdict::Error { reason: e.to_string() }),
        };
        if first.is_none() && matches!(step.verdict, Verdict::Fail { .. }) {
            first = Some(index);
        }
        steps.push(step);
    }
    Bisection { steps, first_divergent: first }
}
