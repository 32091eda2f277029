//! Control flow. `If` whose condition is known at lowering time is inlined (the taken branch
//! is lowered in place). `Scan` (opset 9+) is unrolled: its trip count is the static length
//! of the scan axis. `Loop` is unrolled when its trip count and conditions are known at
//! lowering time. A data-dependent `If` or loop condition is reported as unsupported: the
//! lowering does not emit `stablehlo.if`/`stablehlo.while` yet.

use tpuport_model::{Attr, Node};

use super::{Rule, rule};
use crate::LowerError;
use crate::onnx::cx::{Cx, Src};

pub(crate) const RULES: &[Rule] =
    &[rule("If", 1, if_), rule("Scan", 9, scan), rule("Loop", 1, loop_)];

fn if_<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let c = cx.need_host(node, 0, "the condition of If (data-dependent If is not lowered)")?;
    let take = c.get_f(0) != 0.0;
    let branch = if take { "then_branch" } else { "else_branch" };
    let Some(Attr::Graph(i)) = node.attr(branch) else {
        return Err(cx.invalid(node, format!("{branch} missing")));
    };
    let g = &node.subgraphs.get(*i).ok_or_else(|| cx.invalid(node, format!("{branch} missing")))?.1;
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

/// Loop, unrolled when the trip count and every iteration's condition are known at lowering
/// time (the usual `for` loop export: a constant `M` and a condition passed through).
pub(crate) fn loop_<'m>(cx: &mut Cx<'m>, node: &'m Node) -> Result<(), LowerError> {
    let Some(Attr::Graph(gi)) = node.attr("body") else {
        return Err(cx.invalid(node, "body missing"));
    };
    let body = &node.subgraphs.get(*gi).ok_or_else(|| cx.invalid(node, "body missing"))?.1;
    let trip = if cx.has(node, 0) {
        Some(cx.need_host(node, 0, "the trip count M (Loop is unrolled)")?.as_i64()[0])
    } else {
        None
    };
    let mut cond = if cx.has(node, 1) {
        cx.need_host(node, 1, "the loop condition (Loop is unrolled)")?.get_f(0) != 0.0
    } else {
        true
    };
    let Some(trip) = trip else {
        return Err(cx.unsup(node, "Loop without a trip count (a while loop) is not lowered"));
    };
    if trip > 4096 {
        return Err(cx.unsup(node, format!("Loop with {trip} iterations (unrolled; limit 4096)")));
    }
    let n = node.inputs.len().saturating_sub(2);
    let names_in: Vec<String> = body.inputs.iter().map(|&v| body.value(v).name.clone()).collect();
    let names_out: Vec<String> = body.outputs.iter().map(|&v| body.value(v).name.clone()).collect();
    if names_in.len() != n + 2 || names_out.len() < n + 1 {
        return Err(cx.invalid(node, "body inputs/outputs do not match the loop-carried values"));
    }
    let k = names_out.len() - 1 - n;
    let mut carried: Vec<Src> = Vec::with_capacity(n);
    for i in 0..n {
        let id =
            node.inputs[i + 2].ok_or_else(|| cx.invalid(node, "missing loop-carried input"))?;
        let name = cx.g().value(id).name.clone();
        carried.push(
            cx.get_src(&name).ok_or_else(|| cx.invalid(node, format!("`{name}` undefined")))?,
        );
    }
    let mut scans: Vec<Vec<crate::onnx::emit::T>> = vec![Vec::new(); k];
    let mut i = 0;
    while i < trip && cond {
        cx.set_src(
            &names_in[0],
            Src::Host(crate::onnx::host::HostVal::ints(tpuport_model::DType::I64, vec![], vec![i])),
        );
        cx.set_src(
            &names_in[1],
            Src::Host(crate::onnx::host::HostVal::ints(
                tpuport_model::DType::Bool,
                vec![],
                vec![1],
            )),
        );
        for (j, c) in carried.iter().enumerate() {
            cx.set_src(&names_in[j + 2], c.clone());
        }
        cx.lower_graph(body)?;
        cond =
            match cx.get_src(&names_out[0]) {
                Some(Src::Host(h)) => h.get_f(0) != 0.0,
                _ => return Err(cx.unsup(
                    node,
                    "the loop condition is computed from data (a while loop) and is not lowered",
                )),
            };
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
        let parts: Vec<crate::onnx::emit::T> = els
            .iter()
            .map(|e| {
                let mut sh = e.shape().to_vec();
                sh.insert(0, 1);
                cx.e.reshape(e, &sh)
            })
            .collect();
        let refs: Vec<&crate::onnx::emit::T> = parts.iter().collect();
        let y = cx.e.concat(&refs, 0);
        cx.set(node, n + j, y);
    }
    Ok(())
}
