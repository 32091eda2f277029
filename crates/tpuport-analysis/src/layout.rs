//! Layout / padding pass: what TPU tiling does to every weight and every matmul / conv operand,
//! per chip generation (`tpuport_hw::tiling`), and how full the MXU is after padding.
//!
//! - Weights: every stored tensor of rank >= 1 the graph uses (for StableHLO modules, whose
//!   parameters are arguments, every float argument), padded in HBM layout.
//! - Matmul operands as the MXU sees them: LHS `[batch, m, k]`, RHS `[batch, k, n]` (a conv as
//!   its implicit GEMM: `m` = output positions × batch, `k` = kernel taps × input channels per
//!   group, `n` = output channels).
//! - MXU utilization of each matmul after padding `m` to the 8-row LHS group and `k`, `n` to the
//!   MXU edge (128, or 256 on v6e / TPU7x); the model's utilization is FLOP-weighted.
//! - Worst offenders: matmuls by MXU FLOPs wasted on padding, tensors by padded bytes wasted,
//!   each with the dimension to change.

use std::collections::HashMap;

use serde::Serialize;
use tpuport_hw::{Chip, matmul_utilization, tiling};
use tpuport_model::{Attr, DType, Model, ValueKind};

use crate::cost::{CostReport, MatmulDims};
use crate::taxonomy::{self, KernelLayout};

/// Entries kept in each worst-offender list.
const WORST: usize = 10;

/// One tensor after padding.
#[derive(Clone, Debug, Serialize)]
pub struct TensorPadding {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Logical shape.
    pub shape: Vec<u64>,
    /// Shape after tiling.
    pub padded_shape: Vec<u64>,
    /// Logical bytes.
    pub logical_bytes: u64,
    /// Bytes after padding.
    pub padded_bytes: u64,
    /// What to change, when padding wastes a noticeable share.
    pub fix: Option<String>,
    /// The layout padded: `stored`, or a conv kernel in `[spatial, in, out]` order.
    pub layout: &'static str,
}

/// One matmul / conv after MXU padding.
#[derive(Clone, Debug, Serialize)]
pub struct MatmulLayout {
    /// Node.
    pub node: String,
    /// Op.
    pub op: String,
    /// Logical dimensions.
    pub dims: MatmulDims,
    /// Padded `[m, k, n]`.
    pub padded: [u64; 3],
    /// Useful over padded multiply-adds.
    pub utilization: f64,
    /// Dense FLOPs of the op.
    pub flops: u64,
    /// FLOPs the MXU spends on padding.
    pub wasted_flops: u64,
    /// Operand bytes (LHS + RHS) logical and padded.
    pub operand_bytes: [u64; 2],
    /// The dimension to change.
    pub fix: Option<String>,
}

/// Layout figures for one chip.
#[derive(Clone, Debug, Serialize)]
pub struct ChipLayout {
    /// Chip id.
    pub chip: String,
    /// MXU edge used.
    pub mxu_size: u64,
    /// Weight bytes, logical.
    pub weights_logical: u64,
    /// Weight bytes after tiling.
    pub weights_padded: u64,
    /// Matmul / conv operand bytes, logical (summed over ops).
    pub operands_logical: u64,
    /// Matmul / conv operand bytes after tiling.
    pub operands_padded: u64,
    /// FLOP-weighted MXU utilization over all matmuls / convs after padding.
    pub mxu_utilization: f64,
    /// Every weight, in graph order.
    pub tensors: Vec<TensorPadding>,
    /// Every matmul / conv, in execution order.
    pub matmuls: Vec<MatmulLayout>,
    /// Matmuls wasting the most MXU work, worst first.
    pub worst_matmuls: Vec<MatmulLayout>,
    /// Tensors wasting the most bytes to padding, worst first.
    pub worst_tensors: Vec<TensorPadding>,
    /// Extra bytes conv kernels would take if kept in their stored layout (ONNX `[out, in, kh,
    /// kw]`: pointwise kernels pad 1x1 to 2x128) instead of `[spatial, in, out]`.
    pub stored_kernel_extra_bytes: u64,
    /// The kernel with the largest such cost.
    pub stored_kernel_worst: Option<String>,
}

/// The layout pass's result: one entry per TPU chip.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LayoutReport {
    /// Per chip generation.
    pub chips: Vec<ChipLayout>,
}

/// Convolution kernels in the layout XLA's convolution wants them, feature dimensions minor
/// (`[spatial..., in, out]`), by tensor name. An ONNX `Conv` stores `[out, in, kh, kw]`, whose two
/// minor dims are 1x1 for pointwise convs: kept that way on a TPU it would pad 256x; a port
/// must transpose it (the layout section reports the stored layout's cost as a fix).
#[must_use]
pub fn conv_kernel_layouts(model: &Model) -> HashMap<String, Vec<u64>> {
    let g = &model.graph;
    let mut out = HashMap::new();
    for n in g.walk_nodes() {
        let Some(Some(w)) = n.inputs.get(1) else { continue };
        let Some(v) = g.values.get(w.0 as usize) else { continue };
        let Some(shape) = v.ty.shape.as_ref().and_then(|s| s.as_fixed()) else { continue };
        let perm: Option<Vec<usize>> = match taxonomy::kernel_layout(&n.op) {
            Some(KernelLayout::OutInSpatial) if shape.len() >= 3 => {
                let mut p: Vec<usize> = (2..shape.len()).collect();
                p.extend([1, 0]);
                Some(p)
            }
            Some(KernelLayout::DimensionNumbers) => {
                let get = |k: &str| {
                    n.attr(k).and_then(Attr::as_int).and_then(|x| usize::try_from(x).ok())
                };
                let sp: Option<Vec<usize>> = match n.attr("tpuport.kernel_spatial_dimensions") {
                    Some(Attr::Ints(v)) => v.iter().map(|&x| usize::try_from(x).ok()).collect(),
                    _ => None,
                };
                match (
                    sp,
                    get("tpuport.kernel_input_feature_dimension"),
                    get("tpuport.kernel_output_feature_dimension"),
                ) {
                    (Some(mut p), Some(i), Some(o)) => {
                        p.extend([i, o]);
                        Some(p)
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(p) = perm
            && p.len() == shape.len()
            && p.iter().all(|&i| i < shape.len())
        {
            out.insert(v.name.clone(), p.iter().map(|&i| shape[i]).collect());
        }
    }
    out
}

/// Bytes of `shape` in the best layout XLA's layout assignment can give an intermediate value:
/// the least padded choice of the two minor dimensions.
#[must_use]
pub fn best_layout_bytes(shape: &[u64], dtype: DType, chip: &Chip) -> Option<u64> {
    let r = shape.len();
    if r < 2 {
        return tiling::padded_bytes(shape, dtype, chip).ok();
    }
    let mut best: Option<u64> = None;
    for i in 0..r {
        for j in 0..r {
            if i == j {
                continue;
            }
            let mut v: Vec<u64> = (0..r).filter(|&k| k != i && k != j).map(|k| shape[k]).collect();
            v.push(shape[i]);
            v.push(shape[j]);
            if let Ok(b) = tiling::padded_bytes(&v, dtype, chip) {
                best = Some(best.map_or(b, |x: u64| x.min(b)));
            }
        }
    }
    best
}

/// The weight-like tensors of a model: stored weights (rank >= 1), else the arguments the
/// memory pass classified as parameters (`params`).
fn weight_tensors(model: &Model, params: &[String]) -> Vec<(String, Vec<u64>, DType)> {
    let g = &model.graph;
    let mut out = Vec::new();
    for v in &g.values {
        if let ValueKind::Weight(_) = v.kind
            && let (Some(s), Some(d)) = (v.ty.shape.as_ref().and_then(|s| s.as_fixed()), v.ty.dtype)
            && !s.is_empty()
        {
            out.push((v.name.clone(), s, d));
        }
    }
    if out.is_empty() {
        for i in &g.inputs {
            let v = g.value(*i);
            if let (Some(s), Some(d)) = (v.ty.shape.as_ref().and_then(|s| s.as_fixed()), v.ty.dtype)
                && !s.is_empty()
                && params.contains(&v.name)
            {
                out.push((v.name.clone(), s, d));
            }
        }
    }
    out
}

/// Suggests the dimension change that removes most of a tensor's padding.
fn tensor_fix(shape: &[u64], padded: &[u64], tile: [u64; 2]) -> Option<String> {
    let r = padded.len();
    let view: Vec<u64> = if shape.len() < 2 {
        let mut v = vec![1; 2 - shape.len()];
        v.extend_from_slice(shape);
        v
    } else {
        shape.to_vec()
    };
    let mut parts = Vec::new();
    if view[r - 1] != padded[r - 1] {
        parts.push(format!(
            "last dim {} -> multiple of {} (pads to {})",
            view[r - 1],
            tile[1],
            padded[r - 1]
        ));
    }
    if view[r - 2] != padded[r - 2] {
        parts.push(format!(
            "second-to-last dim {} -> multiple of {} (pads to {})",
            view[r - 2],
            tile[0],
            padded[r - 2]
        ));
    }
    if view[r - 1] < tile[1] && r >= 2 && view[r - 2] >= tile[1] {
        parts.push("or transpose so the larger dim is last".to_owned());
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Suggests the matmul dimension to change.
fn matmul_fix(d: &MatmulDims, padded: [u64; 3], mxu: u64) -> Option<String> {
    #[allow(clippy::cast_precision_loss, reason = "ratios")]
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let cands = [
        (
            ratio(d.m, padded[0]),
            format!("m={} (rows: batch × positions) -> multiple of 8; raise the batch", d.m),
        ),
        (ratio(d.k, padded[1]), format!("k={} -> multiple of {mxu} (pads to {})", d.k, padded[1])),
        (ratio(d.n, padded[2]), format!("n={} -> multiple of {mxu} (pads to {})", d.n, padded[2])),
    ];
    let worst = cands.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    (worst.0 < 0.999).then(|| worst.1.clone())
}

/// Runs the layout pass for each chip.
#[must_use]
pub fn analyze(
    model: &Model,
    cost: &CostReport,
    chips: &[&Chip],
    params: &[String],
) -> LayoutReport {
    let weights = weight_tensors(model, params);
    let kernels = conv_kernel_layouts(model);
    let mut report = LayoutReport::default();
    for chip in chips {
        let mxu = u64::from(chip.mxu_size.unwrap_or(128));
        let mut cl = ChipLayout {
            chip: chip.id.clone(),
            mxu_size: mxu,
            weights_logical: 0,
            weights_padded: 0,
            operands_logical: 0,
            operands_padded: 0,
            mxu_utilization: 0.0,
            tensors: Vec::new(),
            matmuls: Vec::new(),
            worst_matmuls: Vec::new(),
            worst_tensors: Vec::new(),
            stored_kernel_extra_bytes: 0,
            stored_kernel_worst: None,
        };
        let mut tensors = Vec::new();
        let mut stored_extra = 0u64;
        let mut stored_worst: Option<(String, u64)> = None;
        for (name, stored, dtype) in &weights {
            let shape = kernels.get(name).unwrap_or(stored);
            let Ok(p) = tiling::pad(shape, *dtype, chip, tiling::Placement::Memory) else {
                continue;
            };
            if shape != stored
                && let Ok(q) = tiling::padded_bytes(stored, *dtype, chip)
                && q > p.padded_bytes
            {
                stored_extra = stored_extra.saturating_add(q - p.padded_bytes);
                if stored_worst.as_ref().is_none_or(|w| q - p.padded_bytes > w.1) {
                    stored_worst = Some((name.clone(), q - p.padded_bytes));
                }
            }
            cl.weights_logical = cl.weights_logical.saturating_add(p.logical_bytes);
            cl.weights_padded = cl.weights_padded.saturating_add(p.padded_bytes);
            tensors.push(TensorPadding {
                name: name.clone(),
                dtype: *dtype,
                shape: shape.clone(),
                fix: tensor_fix(shape, &p.padded, p.tile),
                layout: if shape == stored { "stored" } else { "conv-kernel [spatial, in, out]" },
                padded_shape: p.padded,
                logical_bytes: p.logical_bytes,
                padded_bytes: p.padded_bytes,
            });
        }
        cl.tensors.clone_from(&tensors);
        tensors.sort_by(|a, b| {
            (b.padded_bytes - b.logical_bytes).cmp(&(a.padded_bytes - a.logical_bytes))
        });
        tensors.retain(|t| t.padded_bytes > t.logical_bytes);
        tensors.truncate(WORST);
        cl.worst_tensors = tensors;
        cl.stored_kernel_extra_bytes = stored_extra;
        cl.stored_kernel_worst = stored_worst.map(|w| w.0);

        let mut useful = 0f64;
        let mut total = 0f64;
        let mut mms = Vec::new();
        for op in &cost.ops {
            if !op.class.runs_on_mxu() {
                continue;
            }
            let Some(d) = &op.matmul else { continue };
            let Ok(mp) = matmul_utilization(d.m, d.k, d.n, chip) else { continue };
            let dt = d.dtype.unwrap_or(DType::F32);
            let lhs = tiling::pad(&[d.batch, d.m, d.k], dt, chip, tiling::Placement::Memory);
            let rhs = tiling::pad(&[d.batch, d.k, d.n], dt, chip, tiling::Placement::Memory);
            let (mut lb, mut pb) = (0u64, 0u64);
            for p in [lhs, rhs].into_iter().flatten() {
                lb = lb.saturating_add(p.logical_bytes);
                pb = pb.saturating_add(p.padded_bytes);
            }
            cl.operands_logical = cl.operands_logical.saturating_add(lb);
            cl.operands_padded = cl.operands_padded.saturating_add(pb);
            #[allow(clippy::cast_precision_loss, reason = "ratios")]
            let f = op.mxu_flops as f64;
            useful += f * mp.utilization;
            total += f;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "estimate")]
            let wasted = if mp.utilization > 0.0 { (f / mp.utilization - f) as u64 } else { 0 };
            mms.push(MatmulLayout {
                node: op.node.clone(),
                op: op.op.clone(),
                fix: matmul_fix(d, mp.padded, mxu),
                dims: d.clone(),
                padded: mp.padded,
                utilization: mp.utilization,
                flops: op.mxu_flops,
                wasted_flops: wasted,
                operand_bytes: [lb, pb],
            });
        }
        cl.mxu_utilization = if total > 0.0 { useful / total } else { 1.0 };
        cl.matmuls.clone_from(&mms);
        mms.sort_by_key(|m| std::cmp::Reverse(m.wasted_flops));
        mms.retain(|m| m.wasted_flops > 0);
        mms.truncate(WORST);
        cl.worst_matmuls = mms;
        report.chips.push(cl);
    }
    report
}
