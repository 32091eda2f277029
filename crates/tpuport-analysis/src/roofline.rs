//! Roofline estimate per chip generation from the catalog's peak FLOP/s and HBM bandwidth.
//!
//! Model (documented in `docs/audit.md`; an estimate, not a measurement):
//! - Each op takes `max(compute, memory)`: compute = MXU FLOPs after padding (FLOPs / MXU
//!   utilization) over the chip's peak for the operand type (bf16 peak for f32/bf16/f16 — XLA's
//!   default precision runs f32 matmuls as bf16 passes — int8 / fp8 peaks where the chip has
//!   them); memory = the op's fused bytes over HBM bandwidth. Non-MXU ops (VPU work) are judged
//!   by their bytes only: the catalog has no VPU peak.
//! - Ops run one after another (no overlap); the step latency is the sum.
//! - Training multiplies FLOPs and bytes by 3 (forward + backward for inputs and weights).
//! - Batch scaling: activation FLOPs and bytes grow linearly with the batch, weight bytes do
//!   not; the `m` dimension of each matmul scales with it (so its padding changes).
//! - Cost per 1M samples uses the catalog's on-demand price per chip-hour, whose confidence the
//!   catalog states (low or medium): treat it as indicative.

use serde::Serialize;
use tpuport_hw::{Chip, matmul_utilization};
use tpuport_model::DType;

use crate::cost::CostReport;
use crate::workload::Workload;

/// Ops listed per chip.
const TOP: usize = 10;

/// One op on one chip.
#[derive(Clone, Debug, Serialize)]
pub struct OpBound {
    /// Node.
    pub node: String,
    /// Op.
    pub op: String,
    /// Compute time, seconds.
    pub compute_s: f64,
    /// Memory time, seconds.
    pub memory_s: f64,
    /// `compute` or `memory`.
    pub bound: &'static str,
}

/// The estimate for one chip.
#[derive(Clone, Debug, Serialize)]
pub struct ChipRoofline {
    /// Chip id.
    pub chip: String,
    /// Peak FLOP/s used for bf16-class matmuls.
    pub peak_flops: f64,
    /// HBM bandwidth, bytes/s.
    pub hbm_bandwidth: f64,
    /// Ridge point: FLOPs per byte where compute and memory time are equal.
    pub ridge_flops_per_byte: f64,
    /// Batch the estimate is for.
    pub batch: u64,
    /// Estimated step latency, seconds.
    pub step_s: f64,
    /// Samples per second at that batch on one chip.
    pub samples_per_s: f64,
    /// Sum of compute times, seconds.
    pub compute_s: f64,
    /// Sum of memory times, seconds.
    pub memory_s: f64,
    /// Ops that are compute-bound.
    pub compute_bound_ops: u64,
    /// Ops that are memory-bound.
    pub memory_bound_ops: u64,
    /// `compute` or `memory`: which side dominates the step.
    pub bound: &'static str,
    /// Smallest batch (multiple of 8 per TensorCore) at which the step turns compute-bound,
    /// if one up to 65536 does.
    pub compute_bound_batch: Option<u64>,
    /// The same with f32 tensors stored as bf16 (half the bytes).
    pub compute_bound_batch_bf16: Option<u64>,
    /// USD per 1M samples at the on-demand price, where the catalog has one.
    pub usd_per_1m_samples: Option<f64>,
    /// The price's confidence (`low`, `medium`, `user`).
    pub price_confidence: Option<String>,
    /// Slowest ops.
    pub top_ops: Vec<OpBound>,
}

/// The roofline pass's result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RooflineReport {
    /// One entry per chip with a peak and a bandwidth.
    pub chips: Vec<ChipRoofline>,
    /// Set when ops were not counted for unbound dims: the entries are estimates from what was
    /// counted, not a step time or a throughput, and the text report does not print them.
    pub withheld: Option<String>,
}

fn peak_for(chip: &Chip, dtype: Option<DType>) -> Option<f64> {
    match dtype {
        Some(DType::I8 | DType::U8 | DType::I4 | DType::U4) => chip.peak.int8.or(chip.peak.bf16),
        Some(DType::F8E4M3FN | DType::F8E5M2 | DType::F8E4M3FNUZ | DType::F8E5M2FNUZ) => {
            chip.peak.fp8.or(chip.peak.bf16)
        }
        _ => chip.peak.bf16,
    }
}

#[allow(clippy::cast_precision_loss, reason = "estimates in f64")]
fn step(
    cost: &CostReport,
    chip: &Chip,
    scale: f64,
    train: f64,
    keep: bool,
    as_bf16: bool,
) -> Option<(f64, f64, f64, u64, u64, Vec<OpBound>)> {
    let bw = chip.hbm_bandwidth?;
    let mut total = 0.0;
    let (mut cs, mut ms) = (0.0, 0.0);
    let (mut nc, mut nm) = (0u64, 0u64);
    let mut ops = Vec::new();
    for op in &cost.ops {
        let repeats = op.repeats.max(1) as f64;
        let act_bytes =
            op.fused_bytes.saturating_sub(op.weight_bytes.saturating_mul(op.repeats.max(1))) as f64;
        let mut bytes = (op.weight_bytes as f64 * repeats + act_bytes * scale) * train;
        if as_bf16 && op.dtype == Some(DType::F32) {
            bytes *= 0.5;
        }
        let memory = bytes / bw;
        let mut compute = 0.0;
        if op.class.runs_on_mxu() {
            let peak = peak_for(chip, op.dtype)?;
            let mut f = op.mxu_flops as f64 * scale;
            if let Some(d) = &op.matmul {
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "scaled dim"
                )]
                let m = ((d.m as f64 * scale).ceil() as u64).max(1);
                if let Ok(u) = matmul_utilization(m, d.k, d.n, chip)
                    && u.utilization > 0.0
                {
                    f /= u.utilization;
                }
            }
            compute = f * train / peak;
        }
        if compute == 0.0 && memory == 0.0 {
            continue;
        }
        let bound = if compute >= memory { "compute" } else { "memory" };
        if compute >= memory {
            nc += 1;
        } else {
            nm += 1;
        }
        cs += compute;
        ms += memory;
        total += compute.max(memory);
        if keep {
            ops.push(OpBound {
                node: op.node.clone(),
                op: op.op.clone(),
                compute_s: compute,
                memory_s: memory,
                bound,
            });
        }
    }
    Some((total, cs, ms, nc, nm, ops))
}

/// Runs the roofline estimate for each chip at `batch` (the batch the cost was computed at).
#[must_use]
pub fn analyze(
    cost: &CostReport,
    chips: &[&Chip],
    batch: u64,
    workload: Workload,
) -> RooflineReport {
    analyze_scaled(cost, chips, batch, batch, workload)
}

/// The roofline estimate at `batch` for a cost computed at `module_batch` (a static module
/// cannot be re-lowered at another batch: activation FLOPs and bytes are scaled instead).
///
/// No step is faster than its FLOPs at the chip's peak: the step time is at least the total
/// FLOPs (XLA convention, all ops) over the bf16 peak, so samples/s × FLOPs per sample never
/// exceeds the peak.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "estimates in f64")]
pub fn analyze_scaled(
    cost: &CostReport,
    chips: &[&Chip],
    module_batch: u64,
    batch: u64,
    workload: Workload,
) -> RooflineReport {
    let train = if workload.is_training() { 3.0 } else { 1.0 };
    let module_batch = module_batch.max(1);
    let batch = batch.max(1);
    let scale0 = batch as f64 / module_batch as f64;
    let mut report = RooflineReport::default();
    for chip in chips {
        let (Some(peak), Some(bw)) = (chip.peak.bf16, chip.hbm_bandwidth) else { continue };
        let Some((total, cs, ms, nc, nm, mut ops)) = step(cost, chip, scale0, train, true, false)
        else {
            continue;
        };
        let floor = cost.totals.flops as f64 * scale0 * train / peak;
        let total = total.max(floor);
        ops.sort_by(|a, b| b.compute_s.max(b.memory_s).total_cmp(&a.compute_s.max(a.memory_s)));
        ops.truncate(TOP);
        let per_core = 8 * u64::from(chip.tensorcores.unwrap_or(1).max(1));
        // Compute time grows with the batch faster than memory time (weights are read once
        // per step), so the predicate is monotone: binary search over multiples of `per_core`.
        let search = |as_bf16: bool| {
            let bound_at = |j: u64| {
                step(cost, chip, (j * per_core) as f64 / module_batch as f64, train, false, as_bf16)
                    .is_some_and(|(_, c, m, _, _, _)| c >= m && c > 0.0)
            };
            let max_j = 65536 / per_core;
            if bound_at(max_j) {
                let (mut lo, mut hi) = (1u64, max_j);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if bound_at(mid) {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                Some(lo * per_core)
            } else {
                None
            }
        };
        let cb = search(false);
        let f32_ops = cost.ops.iter().any(|o| o.dtype == Some(DType::F32) && o.mxu_flops > 0);
        let cb16 = if f32_ops { search(true) } else { cb };
        let sps = if total > 0.0 { batch as f64 / total } else { 0.0 };
        let usd = chip.price.on_demand.filter(|_| sps > 0.0).map(|p| p / 3600.0 * 1e6 / sps);
        report.chips.push(ChipRoofline {
            chip: chip.id.clone(),
            peak_flops: peak,
            hbm_bandwidth: bw,
            ridge_flops_per_byte: peak / bw,
            batch,
            step_s: total,
            samples_per_s: sps,
            compute_s: cs,
            memory_s: ms,
            compute_bound_ops: nc,
            memory_bound_ops: nm,
            bound: if cs >= ms { "compute" } else { "memory" },
            compute_bound_batch: cb,
            compute_bound_batch_bf16: cb16,
            usd_per_1m_samples: usd,
            price_confidence: chip.price.confidence.map(|c| c.name().to_owned()),
            top_ops: ops,
        });
    }
    report
}
