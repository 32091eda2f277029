//! Control flow.
//!
//! - `If`: a condition known at lowering time inlines the taken branch; otherwise both
//!   branches become the regions of one `stablehlo.if` (their outputs must have the static
//!   shapes that shape inference gives the `If` outputs, i.e. the same in both branches).
//! - `Scan` (opset 9+) is unrolled: its trip count is the static length of the scan axis.
//! - `Loop`: unrolled when the trip count `M` (at most 4096) and every iteration's condition
//!   are known at lowering time (the usual `for` loop export, where the body may then use the
//!   iteration number as a static operand); otherwise one `stablehlo.while` carrying the
//!   iteration number, the condition and the loop-carried values. Scan outputs of a
//!   `stablehlo.while` need a known `M` and a condition that cannot end the loop early (none,
//!   or one the body passes through unchanged), so that their length `M` is static; a
//!   loop-carried value must keep its shape across iterations.

use tpuport_model::{Attr, DType, Graph, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::{Cx, Src};
use crate::onnx::emit::{T, Ty};
use crate::onnx::host::HostVal;

pub(crate) const RULES: &[Rule] = &[rule("If", if_), rule("Scan", scan), rule("Loop", loop_)];

/// Subgraph attribute `name` of `node`.
fn subgraph<'m>(cx: &Cx<'m>, node: &'m Node, name: &str) -> Result<&'m Graph, LowerError> {
    let Some(Attr::Graph(i)) = node.attr(name) else {
        return Err(cx.invalid(node, format!("{name} missing")));
    };
    Ok(&node.subgraphs.get(*i).ok_or_else(|| cx.invalid(node, format!("{name} missing")))?.1)
}

fn if_<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let Ok(c) = cx.need_host(node, 0, "the condition of If") else {
        return if_data(cx, node);
    };
    let take = c.get_f(0) != 0.0;
    let g = subgraph(cx, node, if take { "then_branch" } else { "else_branch" })?;
    let outs: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
    cx.lower_graph(g)?;
    for (k, name) in outs.iter().enumerate() {
        let s = cx
            .get_src(name)
            .ok_or_else(|| cx.invalid(node, format!("branch output `{name}` undefined")))?;
        if let Some(id) = cx.out_id(node, k) {
            let n = cx.g().value(id).name.clone();
            cx.set_src(&n, s);
        }
    }
    Ok(())
}

/// A one-element operand (`M`, a condition) as a scalar of element type `dt`.
fn scalar(cx: &mut Cx<'_>, node: &Node, v: &T, dt: DType, what: &str) -> Result<T, LowerError> {
    if v.ty.elements() != 1 {
        return Err(cx.invalid(node, format!("{what} has shape {:?}, not one element", v.shape())));
    }
    let v = cx.e.reshape(v, &[]);
    Ok(cx.e.convert(&v, dt))
}

/// `v` as type `want`: the same, or the same elements in another shape (`[1]` for `[]`).
fn fit(cx: &mut Cx<'_>, node: &Node, v: T, want: &Ty, what: &str) -> Result<T, LowerError> {
    if v.ty == *want {
        return Ok(v);
    }
    if v.dt() == want.dt && v.ty.elements() == want.elements() {
        return Ok(cx.e.reshape(&v, &want.shape));
    }
    Err(cx.unsup(
        node,
        format!("{what} is {} but must be {} (static shapes)", v.ty.mlir(), want.mlir()),
    ))
}

/// `If` on a condition computed from data: `stablehlo.if` with both branches as regions.
fn if_data<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    // Both branches must give each output one static type; when they do not (a branch that
    // only fits other input shapes, like an 8 kHz path fed 16 kHz frames), the condition must
    // be known so that only the taken branch is lowered.
    let mut tys = Vec::with_capacity(node.outputs.len());
    for k in 0..node.outputs.len() {
        match cx.out_ty(node, k) {
            Ok(t) => tys.push(t),
            Err(_) => {
                let what = format!(
                    "the condition of an If whose branches give output {k} different or unknown shapes"
                );
                return Err(cx
                    .need_host(node, 0, &what)
                    .err()
                    .unwrap_or_else(|| cx.unsup(node, what)));
            }
        }
    }
    let c = cx.inp(node, 0)?;
    let c = scalar(cx, node, &c, DType::Bool, "the condition")?;
    let r = cx.e.open_regions("if", &[&c], tys.len());
    for (bi, name) in ["then_branch", "else_branch"].into_iter().enumerate() {
        if bi == 1 {
            cx.e.next_region();
        }
        let g = subgraph(cx, node, name)?;
        if g.outputs.len() != tys.len() {
            return Err(cx.invalid(
                node,
                format!("{name} has {} outputs for {} If outputs", g.outputs.len(), tys.len()),
            ));
        }
        let scope = cx.enter_region();
        cx.lower_graph(g)?;
        let mut vals = Vec::with_capacity(tys.len());
        for (k, &o) in g.outputs.iter().enumerate() {
            let v = cx.ssa_of(&g.value(o).name)?;
            vals.push(fit(cx, node, v, &tys[k], &format!("output {k} of {name}"))?);
        }
        let refs: Vec<&T> = vals.iter().collect();
        cx.e.end_region(&refs);
        cx.leave_region(scope);
    }
    let res = cx.e.close_regions(&r, &[&c], &tys);
    for (k, t) in res.into_iter().enumerate() {
        cx.set(node, k, t);
    }
    Ok(())
}

/// Scan (opset 9+), unrolled: the trip count is the static length of the scan axis.
pub(crate) fn scan<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    if cx.opset < 9 {
        return Err(cx.unsup(node, "Scan before opset 9 (batched form with sequence_lens)"));
    }
    let Some(Attr::Graph(gi)) = node.attr("body") else {
        return Err(cx.invalid(node, "body missing"));
    };
    let body = &node.subgraphs.get(*gi).ok_or_else(|| cx.invalid(node, "body missing"))?.1;
    let m = Cx::ai(node, "num_scan_inputs", 0) as usize;
    let n_in = node.inputs.len();
    if m > n_in {
        return Err(cx.invalid(node, "num_scan_inputs exceeds the inputs"));
    }
    let n = n_in - m;
    let k = body.outputs.len().saturating_sub(n);
    let in_axes = Cx::ais(node, "scan_input_axes").unwrap_or_else(|| vec![0; m]);
    let in_dirs = Cx::ais(node, "scan_input_directions").unwrap_or_else(|| vec![0; m]);
    let out_axes = Cx::ais(node, "scan_output_axes").unwrap_or_else(|| vec![0; k]);
    let out_dirs = Cx::ais(node, "scan_output_directions").unwrap_or_else(|| vec![0; k]);
    let mut states: Vec<crate::onnx::emit::T> =
        (0..n).map(|i| cx.inp(node, i)).collect::<Result<_, _>>()?;
    let mut scans = Vec::with_capacity(m);
    let mut trip = None;
    for (j, &ax) in in_axes.iter().enumerate().take(m) {
        let x = cx.inp(node, n + j)?;
        let a = cx.axis(node, ax, x.rank())?;
        let len = x.shape()[a];
        if *trip.get_or_insert(len) != len {
            return Err(cx.invalid(node, "scan inputs have different lengths"));
        }
        scans.push((x, a));
    }
    let trip = trip.unwrap_or(0);
    if trip > 4096 {
        return Err(cx.unsup(node, format!("Scan with {trip} iterations (unrolled; limit 4096)")));
    }
    let mut outs: Vec<Vec<crate::onnx::emit::T>> = vec![Vec::new(); k];
    let names_in: Vec<String> = body.inputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let names_out: Vec<String> = body.outputs.iter().map(|&v| body.value(v).name.clone()).collect();
    for t in 0..trip {
        for (i, s) in states.iter().enumerate() {
            cx.set_src(&names_in[i], Src::Ssa(s.clone()));
        }
        for (j, (x, a)) in scans.iter().enumerate() {
            let idx = if in_dirs[j] == 1 { trip - 1 - t } else { t } as i64;
            let r = x.rank();
            let mut st = vec![0i64; r];
            let mut lim: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
            st[*a] = idx;
            lim[*a] = idx + 1;
            let sl = cx.e.slice(x, &st, &lim, &vec![1; r]);
            let mut sh = x.shape().to_vec();
            sh.remove(*a);
            let el = cx.e.reshape(&sl, &sh);
            cx.set_src(&names_in[n + j], Src::Ssa(el));
        }
        cx.lower_graph(body)?;
        for (i, s) in states.iter_mut().enumerate() {
            *s = cx.ssa_of(&names_out[i])?;
        }
        for (j, o) in outs.iter_mut().enumerate() {
            o.push(cx.ssa_of(&names_out[n + j])?);
        }
    }
    for (i, s) in states.into_iter().enumerate() {
        cx.set(node, i, s);
    }
    for (j, mut els) in outs.into_iter().enumerate() {
        if els.is_empty() {
            continue;
        }
        if out_dirs[j] == 1 {
            els.reverse();
        }
        let r = els[0].rank() + 1;
        let a = cx.axis(node, out_axes[j], r)?;
        let parts: Vec<crate::onnx::emit::T> = els
            .iter()
            .map(|e| {
                let mut sh = e.shape().to_vec();
                sh.insert(a, 1);
                cx.e.reshape(e, &sh)
            })
            .collect();
        let refs: Vec<&crate::onnx::emit::T> = parts.iter().collect();
        let y = cx.e.concat(&refs, a);
        cx.set(node, n + j, y);
    }
    Ok(())
}

/// Loop: unrolled when that is possible (see the module doc), else a `stablehlo.while`.
pub(crate) fn loop_<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let body = subgraph(cx, node, "body")?;
    let n = node.inputs.len().saturating_sub(2);
    if body.inputs.len() != n + 2 || body.outputs.len() < n + 1 {
        return Err(cx.invalid(node, "body inputs/outputs do not match the loop-carried values"));
    }
    let trip = if cx.has(node, 0) {
        cx.need_host(node, 0, "M").ok().map(|h| h.as_i64().first().copied().unwrap_or(0))
    } else {
        None
    };
    let cond = if cx.has(node, 1) {
        cx.need_host(node, 1, "cond").ok().map(|h| h.get_f(0) != 0.0)
    } else {
        Some(true)
    };
    if let (Some(m), Some(c)) = (trip, cond)
        && m <= UNROLL_MAX
    {
        let saved = cx.checkpoint();
        match unroll(cx, node, body, m, c)? {
            Unrolled::Done => return Ok(()),
            Unrolled::DataCondition => cx.rollback(saved),
        }
    }
    while_loop(cx, node, body, trip)
}

/// Most iterations a Loop is unrolled for.
const UNROLL_MAX: i64 = 4096;

enum Unrolled {
    Done,
    /// An iteration's condition is computed from data: lower as a `stablehlo.while`.
    DataCondition,
}

/// Unrolls a Loop whose trip count and initial condition are known.
fn unroll<'m>(
    cx: &mut Cx<'m>,
    node: &'m Node,
    body: &'m Graph,
    trip: i64,
    mut cond: bool,
) -> Result<Unrolled, LowerError> {
    let n = node.inputs.len().saturating_sub(2);
    let names_in: Vec<String> = body.inputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let names_out: Vec<String> = body.outputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let k = names_out.len() - 1 - n;
    let uses_cond = cx.has(node, 1);
    let mut carried: Vec<Src> = Vec::with_capacity(n);
    for i in 0..n {
        let id =
            node.inputs[i + 2].ok_or_else(|| cx.invalid(node, "missing loop-carried input"))?;
        let name = cx.g().value(id).name.clone();
        carried.push(
            cx.get_src(&name).ok_or_else(|| cx.invalid(node, format!("`{name}` undefined")))?,
        );
    }
    let mut scans: Vec<Vec<T>> = vec![Vec::new(); k];
    let mut i = 0;
    while i < trip && cond {
        cx.set_src(&names_in[0], Src::Host(HostVal::ints(DType::I64, vec![], vec![i])));
        cx.set_src(&names_in[1], Src::Host(HostVal::ints(DType::Bool, vec![], vec![1])));
        for (j, c) in carried.iter().enumerate() {
            cx.set_src(&names_in[j + 2], c.clone());
        }
        cx.lower_graph(body)?;
        if uses_cond {
            cond = match cx.get_src(&names_out[0]) {
                Some(Src::Host(h)) => h.get_f(0) != 0.0,
                _ => return Ok(Unrolled::DataCondition),
            };
        }
        for (j, c) in carried.iter_mut().enumerate() {
            *c = cx
                .get_src(&names_out[j + 1])
                .ok_or_else(|| cx.invalid(node, "body output undefined"))?;
        }
        for (j, s) in scans.iter_mut().enumerate() {
            s.push(cx.ssa_of(&names_out[1 + n + j])?);
        }
        i += 1;
    }
    for (j, c) in carried.into_iter().enumerate() {
        if let Some(id) = cx.out_id(node, j) {
            let name = cx.g().value(id).name.clone();
            cx.set_src(&name, c);
        }
    }
    for (j, els) in scans.into_iter().enumerate() {
        if els.is_empty() {
            return Err(cx.unsup(node, "a scan output of a loop that runs zero times"));
        }
        let parts: Vec<T> = els
            .iter()
            .map(|e| {
                let mut sh = e.shape().to_vec();
                sh.insert(0, 1);
                cx.e.reshape(e, &sh)
            })
            .collect();
        let refs: Vec<&T> = parts.iter().collect();
        let y = cx.e.concat(&refs, 0);
        cx.set(node, n + j, y);
    }
    Ok(Unrolled::Done)
}

/// A static type of a body value (from shape inference of the body).
fn body_ty(cx: &Cx<'_>, node: &Node, body: &Graph, name: &str) -> Result<Ty, LowerError> {
    let v = body.values.iter().rev().find(|v| v.name == name);
    let ty = v.and_then(|v| Some((v.ty.dtype?, v.ty.shape.as_ref()?.as_fixed()?)));
    match ty {
        Some((dt, shape)) => Ok(Ty::new(cx.cdt(dt), shape)),
        None => Err(cx.unsup(node, format!("loop body value `{name}` has no static type"))),
    }
}

/// Loop as one `stablehlo.while`; `trip` is `M` when known at lowering time.
fn while_loop<'m>(
    cx: &mut Cx<'m>,
    node: &'m Node,
    body: &'m Graph,
    trip: Option<i64>,
) -> Result<(), LowerError> {
    let n = node.inputs.len().saturating_sub(2);
    let names_in: Vec<String> = body.inputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let names_out: Vec<String> = body.outputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let k = names_out.len() - 1 - n;
    let uses_cond = cx.has(node, 1);
    let m = match cx.opt_inp(node, 0)? {
        Some(m) => Some(scalar(cx, node, &m, DType::I64, "M")?),
        None => None,
    };
    if m.is_none() && !uses_cond {
        return Err(cx.invalid(node, "Loop with neither a trip count nor a condition never ends"));
    }
    let cond0 = match cx.opt_inp(node, 1)? {
        Some(c) => scalar(cx, node, &c, DType::Bool, "cond")?,
        None => cx.e.splat(DType::Bool, &[], 1.0),
    };
    let i0 = cx.e.scalar(DType::I64, 0.0);
    let mut init = vec![i0, cond0];
    for j in 0..n {
        init.push(cx.inp(node, 2 + j)?);
    }
    // Scan outputs: [M, ...] accumulators, only when the loop runs exactly M times.
    let mut scan_tys = Vec::with_capacity(k);
    if k > 0 {
        // Their length must be static: M known, and the loop must not end before M.
        let m = match trip {
            Some(m) => m,
            None => cx
                .need_host(node, 0, "the trip count M of a Loop with scan outputs")?
                .as_i64()
                .first()
                .copied()
                .unwrap_or(0),
        };
        if uses_cond
            && cx.need_host(node, 1, "the condition of a Loop with scan outputs")?.get_f(0) == 0.0
        {
            return Err(cx.unsup(node, "a scan output of a loop that runs zero times"));
        }
        if m < 0 {
            return Err(cx.invalid(node, format!("trip count {m}")));
        }
        for j in 0..k {
            let el = body_ty(cx, node, body, &names_out[1 + n + j])?;
            let mut shape = vec![m as u64];
            shape.extend(&el.shape);
            if crate::onnx::host::checked_elems(&shape).is_none_or(|e| e > 1 << 32) {
                return Err(cx.unsup(node, format!("a scan output of shape {shape:?}")));
            }
            init.push(cx.e.splat(el.dt, &shape, 0.0));
            scan_tys.push(el);
        }
    }
    let tys: Vec<Ty> = init.iter().map(|t| t.ty.clone()).collect();
    let init_refs: Vec<&T> = init.iter().collect();
    let r = cx.e.open_regions("while", &init_refs, init.len());
    let a = cx.e.block(&tys);
    let go = match &m {
        Some(m) => {
            let lt = cx.e.compare("LT", &a[0], m);
            if uses_cond { cx.e.bin("and", &lt, &a[1]) } else { lt }
        }
        None => a[1].clone(),
    };
    cx.e.end_region(&[&go]);
    cx.e.next_region();
    let a = cx.e.block(&tys);
    let scope = cx.enter_region();
    for (j, name) in names_in.iter().enumerate() {
        cx.set_src(name, Src::Ssa(a[j].clone()));
    }
    cx.lower_graph(body)?;
    let cond_src = cx.get_src(&names_out[0]);
    let cond_out = cx.ssa_of(&names_out[0])?;
    let cond_out = scalar(cx, node, &cond_out, DType::Bool, "the body's condition output")?;
    if k > 0 && uses_cond {
        let passes = cond_out.name == a[1].name
            || matches!(&cond_src, Some(Src::Host(h)) if h.get_f(0) != 0.0);
        if !passes {
            return Err(cx.unsup(
                node,
                "scan outputs of a Loop whose condition is computed from data (their length would depend on the data)",
            ));
        }
    }
    let one = cx.e.scalar(DType::I64, 1.0);
    let mut outs = vec![cx.e.bin("add", &a[0], &one), cond_out];
    for j in 0..n {
        let v = cx.ssa_of(&names_out[1 + j])?;
        let what = format!("loop-carried value `{}` after an iteration", names_out[1 + j]);
        outs.push(fit(cx, node, v, &tys[2 + j], &what)?);
    }
    for (j, el) in scan_tys.iter().enumerate() {
        let v = cx.ssa_of(&names_out[1 + n + j])?;
        let v = fit(cx, node, v, el, &format!("scan output `{}`", names_out[1 + n + j]))?;
        let mut sh = el.shape.clone();
        sh.insert(0, 1);
        let v = cx.e.reshape(&v, &sh);
        let zero = cx.e.scalar(DType::I64, 0.0);
        let mut starts = vec![&a[0]];
        starts.extend(std::iter::repeat_n(&zero, el.shape.len()));
        outs.push(cx.e.dynamic_update_slice(&a[2 + n + j], &v, &starts));
    }
    let out_refs: Vec<&T> = outs.iter().collect();
    cx.e.end_region(&out_refs);
    cx.leave_region(scope);
    let res = cx.e.close_regions(&r, &init_refs, &tys);
    for (j, t) in res.into_iter().skip(2).enumerate() {
        cx.set(node, j, t);
    }
    Ok(())
}
