//! The geometry of a plain `stablehlo.convolution`, read once for the CPU rewrites
//! ([`super::depthwise`], [`super::pointwise`]).

use tpuport_model::{DType, Graph, Model, Node, ValueId};

use super::{all_or_absent, index, indices, int, ints, recompute_producers};

/// A convolution's operands, static shapes and every dimension index resolved.
///
/// "Plain": one float element type throughout, static shapes, `batch_group_count = 1`, no
/// input (lhs) dilation, no window reversal, and output spatial extents equal to what the
/// window arithmetic gives (so slices computed from it are right).
pub(crate) struct Conv {
    pub(crate) x: ValueId,
    pub(crate) w: ValueId,
    pub(crate) out: ValueId,
    pub(crate) dtype: DType,
    pub(crate) x_shape: Vec<u64>,
    pub(crate) w_shape: Vec<u64>,
    pub(crate) out_shape: Vec<u64>,
    /// `feature_group_count`.
    pub(crate) groups: u64,
    /// Input dims: batch, feature, spatial (in spatial order).
    pub(crate) ib: usize,
    pub(crate) ifeat: usize,
    pub(crate) isp: Vec<usize>,
    /// Kernel dims: input feature, output feature, spatial.
    pub(crate) kin: usize,
    pub(crate) kout: usize,
    pub(crate) ksp: Vec<usize>,
    /// Output dims.
    pub(crate) ob: usize,
    pub(crate) ofeat: usize,
    pub(crate) osp: Vec<usize>,
    pub(crate) strides: Vec<i64>,
    pub(crate) rhs_dilation: Vec<i64>,
    /// Low and high padding per spatial dim.
    pub(crate) padding: Vec<(i64, i64)>,
}

impl Conv {
    /// The geometry of `n` when it is a plain convolution (see the type's docs).
    pub(crate) fn plain(g: &Graph, n: &Node) -> Option<Conv> {
        let (Some(Some(x)), Some(Some(w)), Some(&out)) =
            (n.inputs.first().copied(), n.inputs.get(1).copied(), n.outputs.first())
        else {
            return None;
        };
        let ty = |v: ValueId| g.value(v).ty.clone();
        let (tx, tw, to) = (ty(x), ty(w), ty(out));
        let dtype = tx.dtype?;
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
            || tw.dtype != Some(dtype)
            || to.dtype != Some(dtype)
        {
            return None;
        }
        let (x_shape, w_shape, out_shape) =
            (tx.shape?.as_fixed()?, tw.shape?.as_fixed()?, to.shape?.as_fixed()?);
        let groups = u64::try_from(int(n, "feature_group_count").unwrap_or(1)).ok()?;
        if groups < 1
            || int(n, "batch_group_count").unwrap_or(1) != 1
            || !all_or_absent(n, "lhs_dilation", 1)
            || !all_or_absent(n, "window_reversal", 0)
        {
            return None;
        }
        let ib = index(n, "tpuport.input_batch_dimension")?;
        let ifeat = index(n, "tpuport.input_feature_dimension")?;
        let kin = index(n, "tpuport.kernel_input_feature_dimension")?;
        let kout = index(n, "tpuport.kernel_output_feature_dimension")?;
        let ob = index(n, "tpuport.output_batch_dimension")?;
        let ofeat = index(n, "tpuport.output_feature_dimension")?;
        let isp = indices(n, "tpuport.input_spatial_dimensions")?;
        let ksp = indices(n, "tpuport.kernel_spatial_dimensions")?;
        let osp = indices(n, "tpuport.output_spatial_dimensions")?;
        let nsp = isp.len();
        let rank = nsp + 2;
        if ksp.len() != nsp
            || osp.len() != nsp
            || x_shape.len() != rank
            || w_shape.len() != rank
            || out_shape.len() != rank
            || [ib, ifeat, kin, kout, ob, ofeat]
                .iter()
                .chain(&isp)
                .chain(&ksp)
                .chain(&osp)
                .any(|&d| d >= rank)
            || x_shape[ib] != out_shape[ob]
        {
            return None;
        }
        let strides = ints(n, "window_strides").unwrap_or_else(|| vec![1; nsp]);
        let rhs_dilation = ints(n, "rhs_dilation").unwrap_or_else(|| vec![1; nsp]);
        let mut pad = ints(n, "padding").unwrap_or_else(|| vec![0; 2 * nsp]);
        if let [v] = pad[..] {
            // a splat (`dense<1> : tensor<2x2xi64>`): the same padding on every side
            pad = vec![v; 2 * nsp];
        }
        if strides.len() != nsp
            || rhs_dilation.len() != nsp
            || pad.len() != 2 * nsp
            || strides.iter().chain(&rhs_dilation).any(|&s| s < 1)
        {
            return None;
        }
        let padding: Vec<(i64, i64)> = pad.chunks(2).map(|p| (p[0], p[1])).collect();
        // the output extent must be what the window arithmetic gives, or the slices go wrong
        for j in 0..nsp {
            let i = i64::try_from(x_shape[isp[j]]).ok()? + padding[j].0 + padding[j].1;
            let k = i64::try_from(w_shape[ksp[j]]).ok()?;
            let eff = (k - 1) * rhs_dilation[j] + 1;
            let o = if i < eff { 0 } else { (i - eff) / strides[j] + 1 };
            if u64::try_from(o).ok()? != out_shape[osp[j]] || o == 0 {
                return None;
            }
        }
        Some(Conv {
            x,
            w,
            out,
            dtype,
            x_shape,
            w_shape,
            out_shape,
            groups,
            ib,
            ifeat,
            isp,
            kin,
            kout,
            ksp,
            ob,
            ofeat,
            osp,
            strides,
            rhs_dilation,
            padding,
        })
    }
}

/// Replaces every convolution of `model` (functions and nested regions included) that `pick`
/// accepts with the nodes `emit` writes in its place; returns how many were replaced.
pub(super) fn replace_convolutions(
    model: &mut Model,
    pick: fn(&Graph, &Node) -> Option<Conv>,
    emit: fn(&Conv, &mut Graph, &mut Vec<Node>, Option<String>),
) -> usize {
    fn graph(
        g: &mut Graph,
        pick: fn(&Graph, &Node) -> Option<Conv>,
        emit: fn(&Conv, &mut Graph, &mut Vec<Node>, Option<String>),
    ) -> usize {
        let old = std::mem::take(&mut g.nodes);
        let mut nodes = Vec::with_capacity(old.len());
        let mut count = 0;
        for mut node in old {
            for (_, sg) in &mut node.subgraphs {
                count += graph(sg, pick, emit);
            }
            let conv = if node.op == "stablehlo.convolution" { pick(g, &node) } else { None };
            match conv {
                Some(c) => {
                    emit(&c, g, &mut nodes, node.location.clone());
                    count += 1;
                }
                None => nodes.push(node),
            }
        }
        g.nodes = nodes;
        recompute_producers(g);
        count
    }
    let mut n = graph(&mut model.graph, pick, emit);
    for f in &mut model.functions {
        n += graph(f, pick, emit);
    }
    n
}
