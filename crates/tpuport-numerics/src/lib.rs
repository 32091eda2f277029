//! Numerics parity: comparison metrics between two tensors, the tolerance policy that turns
//! them into a verdict, and the bisection driver that finds the first divergent op. Pure
//! computation over [`tpuport_model::HostTensor`]s: no PJRT, no printing.
//!
//! - [`compare`] reads both tensors as f64 and computes [`Metrics`]: max abs / rel error,
//!   RMSE, cosine similarity, error in bf16 ULPs, the fraction of elements outside the
//!   tolerance, NaN/Inf counts on either side, and for the last axis (logits or probabilities)
//!   top-1 / top-5 agreement and KL divergence.
//! - [`Policy`] holds the default [`Tolerance`] per [`Precision`] (documented in
//!   `docs/validate.md`) and turns metrics into a [`Verdict`].
//! - [`bisect`] compares the intermediates of a candidate run against a reference run in graph
//!   order and names the first one whose error crosses the tolerance.

mod bisect;
mod metrics;
mod policy;

pub use bisect::{Bisection, Probe, Step, bisect};
pub use metrics::{
    ClassMetrics, CompareError, Metrics, NonFinite, bf16_ordinal, bf16_ulp, compare,
};
pub use policy::{Atol, Policy, Precision, Tolerance, Verdict};
