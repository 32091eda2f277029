//! Gather, GatherElements, GatherND, ScatterND, ScatterElements.

use std::fmt::Write as _;

use tpuport_model::{DType, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::Cx;
use crate::onnx::emit::{T, Ty, arr, list};
use crate::onnx::host::{HOST_MAX, HostVal, checked_elems, eval, strides};

pub(crate) const RULES: &[Rule] = &[
    rule("Gather", gather),
    rule("GatherElements", gather_elements),
    rule("GatherND", gather_nd),
    rule("ScatterND", scatter_nd),
    rule("ScatterElements", scatter_elements),
    rule("Scatter", scatter_elements),
];

/// Indices as i64 with negative values wrapped by `dim`.
fn norm_idx(cx: &mut Cx<'_>, idx: &T, dim: u64) -> T {
    let i = cx.e.convert(idx, DType::I64);
    let z = cx.e.like(&i, 0.0);
    let d = cx.e.like(&i, dim as f64);
    let neg = cx.e.compare("LT", &i, &z);
    let w = cx.e.bin("add", &i, &d);
    cx.e.select(&neg, &w, &i)
}

pub(crate) fn gather_attr(
    offset: &[i64],
    collapsed: &[i64],
    start_map: &[i64],
    ivd: usize,
    sizes: &[i64],
) -> String {
    let mut parts = Vec::new();
    if !offset.is_empty() {
        parts.push(format!("offset_dims = {}", list(offset)));
    }
    if !collapsed.is_empty() {
        parts.push(format!("collapsed_slice_dims = {}", list(collapsed)));
    }
    parts.push(format!("start_index_map = {}", list(start_map)));
    parts.push(format!("index_vector_dim = {ivd}"));
    format!(
        "dimension_numbers = #stablehlo.gather<{}>, indices_are_sorted = false, slice_sizes = {}",
        parts.join(", "),
        arr(sizes)
    )
}

fn gather(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let dty = cx.in_ty(node, 0)?;
    let ity = cx.in_ty(node, 1)?;
    let r = dty.rank();
    let a = cx.axis(node, Cx::ai(node, "axis", 0), r)?;
    let mut out: Vec<u64> = dty.shape[..a].to_vec();
    out.extend(&ity.shape);
    out.extend(&dty.shape[a + 1..]);
    if let (Some(d), Some(i)) = (cx.host(node, 0), cx.host(node, 1))
        && checked_elems(&out).is_some_and(|n| n <= HOST_MAX)
    {
        let h = eval::gather(&d, &i, a, HOST_MAX)
            .ok_or_else(|| cx.invalid(node, "index out of range"))?;
        cx.set_host(node, 0, h);
        return Ok(());
    }
    let data = cx.inp(node, 0)?;
    let idx = cx.inp(node, 1)?;
    let idx = norm_idx(cx, &idx, dty.shape[a]);
    let q = ity.rank();
    let mut ishape = ity.shape.clone();
    ishape.push(1);
    let idx = cx.e.reshape(&idx, &ishape);
    let offset: Vec<i64> = (0..a as i64).chain((a + q) as i64..(r - 1 + q) as i64).collect();
    let mut sizes: Vec<i64> = dty.shape.iter().map(|&d| d as i64).collect();
    sizes[a] = 1;
    let attr = gather_attr(&offset, &[a as i64], &[a as i64], q, &sizes);
    let y = cx.e.op_full("gather", &[&data, &idx], &attr, &Ty::new(data.dt(), out));
    cx.set(node, 0, y);
    Ok(())
}

/// Full coordinate indices [..shape, rank] where dim `axis` comes from `idx`.
fn full_indices(cx: &mut Cx<'_>, idx: &T, axis: usize) -> T {
    let r = idx.rank();
    let mut s1 = idx.shape().to_vec();
    s1.push(1);
    let parts: Vec<T> = (0..r)
        .map(|d| {
            let t = if d == axis { idx.clone() } else { cx.e.iota(DType::I64, idx.shape(), d) };
            cx.e.reshape(&t, &s1)
        })
        .collect();
    let refs: Vec<&T> = parts.iter().collect();
    cx.e.concat(&refs, r)
}

fn gather_elements(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let data = cx.inp(node, 0)?;
    let idx = cx.inp(node, 1)?;
    let r = data.rank();
    let a = cx.axis(node, Cx::ai(node, "axis", 0), r)?;
    let idx = norm_idx(cx, &idx, data.shape()[a]);
    let full = full_indices(cx, &idx, a);
    let all: Vec<i64> = (0..r as i64).collect();
    let attr = gather_attr(&[], &all, &all, r, &vec![1; r]);
    let y =
        cx.e.op_full("gather", &[&data, &full], &attr, &Ty::new(data.dt(), idx.shape().to_vec()));
    cx.set(node, 0, y);
    Ok(())
}

fn gather_nd(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let data = cx.inp(node, 0)?;
    let idx = cx.inp(node, 1)?;
    let b = Cx::ai(node, "batch_dims", 0) as usize;
    let q = idx.rank();
    let k = *idx.shape().last().unwrap_or(&0) as usize;
    let r = data.rank();
    if b + k > r || q == 0 {
        return Err(cx.invalid(node, "indices last dim too large"));
    }
    // Prepend batch coordinates as extra index columns: iota over the batch dims.
    let mut idx = cx.e.convert(&idx, DType::I64);
    // Wrap negatives per column.
    let dims: Vec<u64> = data.shape()[b..b + k].to_vec();
    let dimv = {
        let h = HostVal::ints(DType::I64, vec![k as u64], dims.iter().map(|&d| d as i64).collect());
        let c = cx.e.const_host(&h);
        cx.e.broadcast_in_dim(&c, &[q - 1], idx.shape())
    };
    let z = cx.e.like(&idx, 0.0);
    let neg = cx.e.compare("LT", &idx, &z);
    let w = cx.e.bin("add", &idx, &dimv);
    idx = cx.e.select(&neg, &w, &idx);
    if b > 0 {
        let mut s1 = idx.shape().to_vec();
        s1[q - 1] = 1;
        let mut parts: Vec<T> = (0..b).map(|d| cx.e.iota(DType::I64, &s1, d)).collect();
        parts.push(idx);
        let refs: Vec<&T> = parts.iter().collect();
        idx = cx.e.concat(&refs, q - 1);
    }
    let kk = b + k;
    let collapsed: Vec<i64> = (0..kk as i64).collect();
    let mut sizes: Vec<i64> = vec![1; kk];
    sizes.extend(data.shape()[kk..].iter().map(|&d| d as i64));
    let offset: Vec<i64> = ((q - 1) as i64..(q - 1 + r - kk) as i64).collect();
    let mut out: Vec<u64> = idx.shape()[..q - 1].to_vec();
    out.extend(&data.shape()[kk..]);
    let attr = gather_attr(&offset, &collapsed, &collapsed, q - 1, &sizes);
    let y = cx.e.op_full("gather", &[&data, &idx], &attr, &Ty::new(data.dt(), out));
    cx.set(node, 0, y);
    Ok(())
}

fn scatter_body(cx: &mut Cx<'_>, node: &Node, dt: DType) -> Result<String, LowerError> {
    let red = Cx::astr(node, "reduction").unwrap_or_else(|| "none".to_owned());
    let op = match red.as_str() {
        "none" => None,
        "add" => Some("add"),
        "mul" => Some("multiply"),
        "max" => Some("maximum"),
        "min" => Some("minimum"),
        r => return Err(cx.unsup(node, format!("reduction `{r}`"))),
    };
    let s = Ty::new(dt, vec![]).mlir();
    let (a, b, c) = (cx.e.fresh(), cx.e.fresh(), cx.e.fresh());
    let mut body = format!("^bb0({a}: {s}, {b}: {s}):\n");
    match op {
        None => {
            let _ = writeln!(body, "  \"stablehlo.return\"({b}) : ({s}) -> ()");
        }
        Some(o) => {
            let _ = writeln!(body, "  {c} = \"stablehlo.{o}\"({a}, {b}) : ({s}, {s}) -> {s}");
            let _ = writeln!(body, "  \"stablehlo.return\"({c}) : ({s}) -> ()");
        }
    }
    Ok(body)
}

fn emit_scatter(
    cx: &mut Cx<'_>,
    node: &Node,
    data: &T,
    idx: &T,
    upd: &T,
    dn: &str,
) -> Result<T, LowerError> {
    let body = scatter_body(cx, node, data.dt())?;
    let r = cx.e.fresh();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{r} = \"stablehlo.scatter\"({}, {}, {}) <{{indices_are_sorted = false, scatter_dimension_numbers = {dn}, unique_indices = false}}> ({{",
        data.name, idx.name, upd.name
    );
    s.push_str(&body);
    let _ = writeln!(
        s,
        "}}) : ({}, {}, {}) -> {}",
        data.ty.mlir(),
        idx.ty.mlir(),
        upd.ty.mlir(),
        data.ty.mlir()
    );
    for line in s.lines() {
        cx.e.body.push_str("    ");
        cx.e.body.push_str(line);
        cx.e.body.push('\n');
    }
    Ok(T { name: r, ty: data.ty.clone() })
}

fn scatter_nd(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let data = cx.inp(node, 0)?;
    let idx = cx.inp(node, 1)?;
    let upd = cx.inp(node, 2)?;
    let q = idx.rank();
    let k = *idx.shape().last().unwrap_or(&0) as usize;
    let r = data.rank();
    let idx = cx.e.convert(&idx, DType::I64);
    let uwd: Vec<i64> = ((q - 1) as i64..(q - 1 + r - k) as i64).collect();
    let iwd: Vec<i64> = (0..k as i64).collect();
    let mut parts = Vec::new();
    if !uwd.is_empty() {
        parts.push(format!("update_window_dims = {}", list(&uwd)));
    }
    parts.push(format!("inserted_window_dims = {}", list(&iwd)));
    parts.push(format!("scatter_dims_to_operand_dims = {}", list(&iwd)));
    parts.push(format!("index_vector_dim = {}", q - 1));
    let dn = format!("#stablehlo.scatter<{}>", parts.join(", "));
    let y = emit_scatter(cx, node, &data, &idx, &upd, &dn)?;
    cx.set(node, 0, y);
    Ok(())
}

fn scatter_elements(cx: &mut Cx<'_>, node: &Node) -> Result<(), LowerError> {
    let data = cx.inp(node, 0)?;
    let idx = cx.inp(node, 1)?;
    let upd = cx.inp(node, 2)?;
    let r = data.rank();
    let a = cx.axis(node, Cx::ai(node, "axis", 0), r)?;
    let idx = norm_idx(cx, &idx, data.shape()[a]);
    let full = full_indices(cx, &idx, a);
    let all: Vec<i64> = (0..r as i64).collect();
    let dn = format!(
        "#stablehlo.scatter<inserted_window_dims = {}, scatter_dims_to_operand_dims = {}, index_vector_dim = {r}>",
        list(&all),
        list(&all)
    );
    let y = emit_scatter(cx, node, &data, &full, &upd, &dn)?;
    cx.set(node, 0, y);
    Ok(())
}

#[allow(dead_code)]
fn _s(v: &[u64]) -> Vec<usize> {
    strides(v)
}
