//! Calls, loops and conditionals. Their bodies are costed as ops of their own under the call
//! site's name (`call/…`, `loop/body/…`); the control op itself counts no FLOPs or bytes.
//!
//! - `func.call`: the callee's body at every call site.
//! - `while` / ONNX `Loop` / `Scan`: the body times the trip count when it is a constant (a
//!   `Loop`'s `M` input, or the bound a `while` condition compares the counter with); else once,
//!   with a report note and the body's ops marked [`Estimate::LoopCountedOnce`].
//! - `if` / `case`: the costliest branch, its ops marked [`Estimate::CostliestBranch`].

use std::collections::HashMap;

use tpuport_model::{Attr, Graph, Node, ValueId, ValueKind};

use super::{CostStatus, Cx, Estimate, OpClass, OpCost, Site, Uncounted, input, other, parse_ints};

/// The StableHLO / `func` control ops (ONNX `Loop`, `Scan` and `If` come through the registry).
pub(super) fn cost(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    match s.op.as_str() {
        "call" if s.n.op == "func.call" || s.n.domain == "func" => call(cx, s, c),
        "while" => repeat(cx, s, c),
        "if" | "case" => branches(cx, s, c),
        _ => other::cost(cx, s, c),
    }
}

fn call(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Control;
    c.bytes = 0;
    let callee = s.n.attr("callee").and_then(Attr::as_str).unwrap_or("");
    let callee = callee.trim_start_matches('@');
    if let Some(f) = cx.model.function(callee) {
        cx.graph(f, &format!("{}/", s.name), s.repeats, s.depth + 1);
    } else {
        c.status = CostStatus::Uncounted(Uncounted::CalleeNotFound(callee.to_owned()));
    }
}

pub(super) fn repeat(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Control;
    c.bytes = 0;
    let trips = trip_count(cx, s.g, s.n);
    if trips.is_none() {
        cx.notes.push(format!(
            "loop `{}`: trip count not a constant; its body is counted once",
            s.name
        ));
    }
    let t = trips.unwrap_or(1).max(1);
    let first = cx.ops.len();
    for (label, sg) in &s.n.subgraphs {
        cx.graph(sg, &format!("{}/{label}/", s.name), s.repeats.saturating_mul(t), s.depth + 1);
    }
    if trips.is_none() {
        mark(&mut cx.ops[first..], Estimate::LoopCountedOnce);
    }
}

pub(super) fn branches(cx: &mut Cx<'_>, s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Control;
    c.bytes = 0;
    let mut best: Option<Vec<OpCost>> = None;
    let flops = |v: &[OpCost]| v.iter().fold(0u64, |a, o| a.saturating_add(o.flops));
    for (label, sg) in &s.n.subgraphs {
        let saved = std::mem::take(&mut cx.ops);
        cx.graph(sg, &format!("{}/{label}/", s.name), s.repeats, s.depth + 1);
        let branch = std::mem::replace(&mut cx.ops, saved);
        if best.as_ref().is_none_or(|b| flops(&branch) > flops(b)) {
            best = Some(branch);
        }
    }
    let mut best = best.unwrap_or_default();
    if s.n.subgraphs.len() > 1 {
        mark(&mut best, Estimate::CostliestBranch);
    }
    cx.ops.extend(best);
}

/// Marks counted ops as estimated (an inner, more specific status is kept).
fn mark(ops: &mut [OpCost], why: Estimate) {
    for o in ops.iter_mut().filter(|o| o.status == CostStatus::Counted) {
        o.status = CostStatus::Estimated(why);
    }
}

/// Trip count of a while / Loop when it is a constant.
fn trip_count(cx: &Cx<'_>, g: &Graph, n: &Node) -> Option<u64> {
    if n.op == "Loop" {
        let m = input(n, 0)?;
        if let ValueKind::Weight(id) = g.value(m).kind {
            let w = cx.model.weights.get(id);
            let b = w.bytes().ok()?;
            if b.len() == 8 {
                let mut a = [0u8; 8];
                a.copy_from_slice(&b);
                return u64::try_from(i64::from_le_bytes(a)).ok();
            }
        }
        return None;
    }
    // StableHLO: the cond region compares the counter with a constant (`LT`).
    let (_, cond) = n.subgraphs.iter().find(|(l, _)| l.contains("cond")).or(n.subgraphs.first())?;
    let consts: HashMap<ValueId, i64> = cond
        .nodes
        .iter()
        .filter(|m| m.op.ends_with("constant"))
        .filter_map(|m| {
            let v = parse_ints(m.attr("value")?.as_str()?);
            let out = *m.outputs.first()?;
            (v.len() == 1).then(|| (out, v[0]))
        })
        .collect();
    let cmp = cond.nodes.iter().find(|m| m.op.ends_with("compare"))?;
    let dir = cmp.attr("comparison_direction").and_then(Attr::as_str).unwrap_or("");
    let bound = input(cmp, 1).and_then(|v| consts.get(&v))?;
    let b = u64::try_from(*bound).ok()?;
    Some(if dir.contains("LE") { b.saturating_add(1) } else { b })
}
