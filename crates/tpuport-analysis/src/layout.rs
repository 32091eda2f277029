//! Layout / padding pass: what TPU tiling does to every weight and every matmul / conv operand,
//! per chip generation (`tpuport_hw::tiling`), and how full the MXU is after padding.
//!
//! - Weights: every stored tensor of rank >= 1 the graph uses (for StableHLO modules, whose
//!   parameters are arguments, every float argument), padded in HBM layout.
//! - Matmul operands as the MXU sees them: LHS `[batch, m, k]`, RHS `[batch, k, n]` (a conv as
//!   its implicit GEMM: `m` = output positions × batch, `k` = kernel taps × input channels per
//!   group, `n` = output channels), each sized in the layout `tpuport_hw::device_layout` gives
//!   it, as the weights are (rules measured on libtpu's arguments; values the compiler
//!   computes got the same layouts where checked, `compile_cli` in the binary's tests).
//! - MXU utilization of each matmul after padding `m` to the 8-row LHS group and `k`, `n` to the
//!   MXU edge (128, or 256 on v6e / TPU7x); the model's utilization is FLOP-weighted.
//! - Worst offenders: matmuls by MXU FLOPs wasted on padding, tensors by padded bytes wasted,
//!   each with the dimension to change.

use std::collections::HashMap;

use serde::Serialize;
use tpuport_hw::{Chip, matmul_utilization};
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
    /// The array after tiling, in the layout's physical (major-to-minor) order.
    pub padded_shape: Vec<u64>,
    /// Logical bytes.
    pub logical_bytes: u64,
    /// Bytes after padding.
    pub padded_bytes: u64,
    /// What to change, when padding wastes a noticeable share.
    pub fix: Option<String>,
    /// The layout, in XLA's notation (`{1,0,3,2:T(8,128)}`): the one the TPU compiler picks
    /// by tpuport's layout model (`tpuport_hw::device_layout`), or the compiler's own when
    /// `layout_source` is `compiler`.
    pub layout: String,
    /// `estimate`, or `compiler` when libtpu's layout replaced the estimate (`audit
    /// --compiler`).
    pub layout_source: &'static str,
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
    /// Matmul / conv operand bytes after tiling, in the compiler's layout
    /// (`tpuport_hw::device_layout`).
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
    /// Extra bytes conv kernels take in their stored dimension order (ONNX `[out, in, kh,
    /// kw]`) over `[spatial, in, out]`. Always 0: the TPU compiler picks the dimension order of
    /// every parameter itself (measured on libtpu: OIHW and HWIO kernels take the same bytes);
    /// kept for the schema.
    pub stored_kernel_extra_bytes: u64,
    /// The kernel with the largest such cost (none).
    pub stored_kernel_worst: Option<String>,
}

/// The layout pass's result: one entry per TPU chip.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LayoutReport {
    /// Per chip generation.
    pub chips: Vec<ChipLayout>,
}

/// Convolution kernels with their dimensions in the order XLA's convolution uses them, feature
/// dimensions minor (`[spatial..., in, out]`), by tensor name. Sizes do not depend on it (the TPU
/// compiler picks each parameter's dimension order itself); the training pass uses it to name
/// parameter shapes the way an optimizer sees them.
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

/// Bytes of `shape` in the layout the TPU compiler gives it (`tpuport_hw::device_layout`: the
/// least padded dimension order, small row tiles, vector tiles).
#[must_use]
pub fn best_layout_bytes(shape: &[u64], dtype: DType, chip: &Chip) -> Option<u64> {
    tpuport_hw::device_bytes(shape, dtype, chip).ok()
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

/// Suggests the dimension change that removes most of a tensor's padding, from its layout
/// (`{minor, second-minor, ...: T(rows, lanes)}`).
pub(crate) fn tensor_fix(shape: &[u64], minor_to_major: &[usize], tile: &[u64]) -> Option<String> {
    let (Some(&j), Some(&i), [rows, lanes]) = (minor_to_major.first(), minor_to_major.get(1), tile)
    else {
        // Vectors and scalars: one tile is the smallest unit.
        return None;
    };
    let (minor, second) = (shape.get(j)?, shape.get(i)?);
    let mut parts = Vec::new();
    if minor % lanes != 0 {
        parts.push(format!(
            "dim {j} ({minor}, stored minor) -> multiple of {lanes} (pads to {})",
            minor.next_multiple_of(*lanes)
        ));
    }
    if second % rows != 0 {
        parts.push(format!(
            "dim {i} ({second}, second-minor) -> multiple of {rows} (pads to {})",
            second.next_multiple_of(*rows)
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The tensors wasting the most bytes to padding, worst first.
pub(crate) fn worst_tensors(mut tensors: Vec<TensorPadding>) -> Vec<TensorPadding> {
    let waste = |t: &TensorPadding| t.padded_bytes.saturating_sub(t.logical_bytes);
    tensors.sort_by_key(|t| std::cmp::Reverse(waste(t)));
    tensors.retain(|t| t.padded_bytes > t.logical_bytes);
    tensors.truncate(WORST);
    tensors
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
        for (name, shape, dtype) in &weights {
            let Ok(l) = tpuport_hw::device_layout(shape, *dtype, chip) else { continue };
            cl.weights_logical = cl.weights_logical.saturating_add(l.logical_bytes);
            cl.weights_padded = cl.weights_padded.saturating_add(l.bytes);
            tensors.push(TensorPadding {
                name: name.clone(),
                dtype: *dtype,
                shape: shape.clone(),
                fix: tensor_fix(shape, &l.minor_to_major, &l.tile),
                layout: l.notation(),
                layout_source: "estimate",
                padded_shape: l.padded_physical,
                logical_bytes: l.logical_bytes,
                padded_bytes: l.bytes,
            });
        }
        cl.tensors.clone_from(&tensors);
        cl.worst_tensors = worst_tensors(tensors);

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
            // sized like the weights, by the layout rules measured on libtpu's arguments (its
            // least padded choice of tiled dims), not in logical order; a batch of 1 is no
            // dimension (as one it would be a free row tile of 1 and hide every padding)
            let operand = |a: u64, b: u64| {
                if d.batch == 1 {
                    tpuport_hw::device_layout(&[a, b], dt, chip)
                } else {
                    tpuport_hw::device_layout(&[d.batch, a, b], dt, chip)
                }
            };
            let (lhs, rhs) = (operand(d.m, d.k), operand(d.k, d.n));
            let (mut lb, mut pb) = (0u64, 0u64);
            for p in [lhs, rhs].into_iter().flatten() {
                lb = lb.saturating_add(p.logical_bytes);
                pb = pb.saturating_add(p.bytes);
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
