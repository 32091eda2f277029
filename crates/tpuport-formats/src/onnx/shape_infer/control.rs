//! Ops with bodies: `If` (both branches inferred with the enclosing scope's types), `Loop` and
//! `Scan` (the body inferred with one iteration's types) and calls to model-local functions
//! (the body inferred on a copy, with the call's attributes).

use std::collections::HashMap;

use tpuport_model::{Attr, Dim, Graph, Shape, TensorType, ValueId, ValueKind};

use super::cx::{Fail, NodeCx, Out, Res};
use super::{Engine, find_value};
use crate::onnx::host::HostValue;

/// Deepest chain of function calls followed.
const MAX_CALL_DEPTH: usize = 16;

/// Gives a subgraph's captured values the enclosing graph's types; returns their known values.
fn seed_outer(
    sub: &mut Graph,
    outer: &Graph,
    consts: &HashMap<ValueId, HostValue>,
) -> HashMap<String, HostValue> {
    let mut seeds = HashMap::new();
    for v in sub.values.iter_mut().filter(|v| v.kind == ValueKind::Outer) {
        if let Some((id, ov)) = find_value(outer, &v.name) {
            v.ty = ov.ty.clone();
            if let Some(c) = consts.get(&id) {
                seeds.insert(v.name.clone(), c.clone());
            }
        }
    }
    seeds
}

fn outputs(g: &Graph, consts_of: &HashMap<String, HostValue>) -> Vec<Out> {
    g.outputs
        .iter()
        .map(|id| {
            let v = g.value(*id);
            Out { ty: v.ty.clone(), value: consts_of.get(&v.name).cloned() }
        })
        .collect()
}

/// The common type of two branch outputs: equal parts kept, differing dims unknown.
fn join(a: &TensorType, b: &TensorType) -> TensorType {
    let shape = match (&a.shape, &b.shape) {
        (Some(x), Some(y)) if x.rank() == y.rank() => Some(Shape(
            x.0.iter()
                .zip(&y.0)
                .map(|(p, q)| if p == q { p.clone() } else { Dim::unknown() })
                .collect(),
        )),
        _ => None,
    };
    TensorType { dtype: a.dtype.or(b.dtype), shape }
}

/// The `body` subgraph of a `Loop` or `Scan`.
fn body_of<'s>(subs: &'s mut [(String, Graph)], op: &str) -> Res<&'s mut Graph> {
    subs.iter_mut()
        .find(|(n, _)| n == "body")
        .map(|(_, g)| g)
        .ok_or_else(|| Fail::Invalid(format!("{op} without a body")))
}

impl Engine<'_> {
    /// `If`: infer both branches; a known condition picks one.
    pub(crate) fn if_(
        &mut self,
        g: &Graph,
        cx: &NodeCx<'_>,
        consts: &HashMap<ValueId, HostValue>,
        subs: &mut [(String, Graph)],
    ) -> Res<Vec<Out>> {
        let mut branch_outs: HashMap<String, Vec<Out>> = HashMap::new();
        for (name, sub) in subs.iter_mut() {
            let seeds = seed_outer(sub, g, consts);
            self.graph(sub, &seeds, true);
            branch_outs.insert(name.clone(), outputs(sub, &HashMap::new()));
        }
        let (Some(then), Some(els)) =
            (branch_outs.get("then_branch"), branch_outs.get("else_branch"))
        else {
            return Err(Fail::Invalid("If without both branches".to_owned()));
        };
        if let Some(c) = cx.value(0) {
            return Ok(if c.first_i().is_some_and(|v| v != 0) {
                then.clone()
            } else {
                els.clone()
            });
        }
        Ok(then.iter().zip(els).map(|(a, b)| Out { ty: join(&a.ty, &b.ty), value: None }).collect())
    }

    /// `Loop`: the body is inferred with the initial loop-carried types; scan outputs get the
    /// trip count as leading dim when the loop provably runs exactly `M` times (known `M`,
    /// condition known true and passed through unchanged by the body), else `?`.
    pub(crate) fn loop_(
        &mut self,
        g: &Graph,
        cx: &NodeCx<'_>,
        consts: &HashMap<ValueId, HostValue>,
        subs: &mut [(String, Graph)],
    ) -> Res<Vec<Out>> {
        let body = body_of(subs, "Loop")?;
        let carried = cx.n_inputs().saturating_sub(2);
        if body.inputs.len() != carried + 2 || body.outputs.len() < carried + 1 {
            return Err(Fail::Invalid("Loop body signature does not match its inputs".to_owned()));
        }
        let mut seeds = seed_outer(body, g, consts);
        body.value_mut(body.inputs[0]).ty =
            TensorType::new(tpuport_model::DType::I64, Shape::scalar());
        body.value_mut(body.inputs[1]).ty =
            TensorType::new(tpuport_model::DType::Bool, Shape::scalar());
        for k in 0..carried {
            if let Some(t) = cx.types[k + 2] {
                body.value_mut(body.inputs[k + 2]).ty = t.clone();
            }
        }
        seeds.retain(|name, _| !body.inputs.iter().any(|id| &body.value(*id).name == name));
        self.graph(body, &seeds, true);
        let cond_passthrough = body.value(body.outputs[0]).producer.is_some_and(|p| {
            let n = body.node(p);
            n.op == "Identity" && n.inputs.first().copied().flatten() == Some(body.inputs[1])
        });
        let cond_true =
            !cx.has(1) || cx.value(1).is_some_and(|c| c.first_i().is_some_and(|v| v != 0));
        let trips = match cx.value(0) {
            Some(m) if cond_passthrough && cond_true => m
                .first_i()
                .and_then(|v| u64::try_from(v).ok())
                .map_or_else(Dim::unknown, Dim::Known),
            _ => Dim::unknown(),
        };
        let mut outs = Vec::new();
        for (k, id) in body.outputs.iter().enumerate().skip(1) {
            let t = body.value(*id).ty.clone();
            if k <= carried {
                let init = cx.types[k + 1].cloned().unwrap_or_default();
                outs.push(Out { ty: join(&init, &t), value: None });
            } else {
                let shape =
                    t.shape.map(|s| Shape(std::iter::once(trips.clone()).chain(s.0).collect()));
                outs.push(Out { ty: TensorType { dtype: t.dtype, shape }, value: None });
            }
        }
        Ok(outs)
    }

    /// `Scan` (opset 9+): `N` states then `M = num_scan_inputs` scan inputs. The body sees the
    /// states and one slice of each scan input (its `scan_input_axes` dim removed); the outputs
    /// are the `N` final states and the body's scan outputs stacked along `scan_output_axes`
    /// (default 0) over the sequence length, the first scan input's dim on its axis.
    pub(crate) fn scan(
        &mut self,
        g: &Graph,
        cx: &NodeCx<'_>,
        consts: &HashMap<ValueId, HostValue>,
        subs: &mut [(String, Graph)],
    ) -> Res<Vec<Out>> {
        let body = body_of(subs, "Scan")?;
        let m = usize::try_from(cx.int("num_scan_inputs", 0)).unwrap_or(0);
        let n_in = cx.n_inputs();
        if m == 0 || m > n_in || body.inputs.len() != n_in {
            return Err(Fail::Invalid("Scan body signature does not match its inputs".to_owned()));
        }
        let states = n_in - m;
        if body.outputs.len() < states {
            return Err(Fail::Invalid("Scan body has fewer outputs than states".to_owned()));
        }
        let in_axes = cx.ints("scan_input_axes").unwrap_or_else(|| vec![0; m]);
        let mut seq = Dim::unknown();
        let mut seeds = seed_outer(body, g, consts);
        for k in 0..n_in {
            let Some(t) = cx.types[k] else { continue };
            let mut t = t.clone();
            if k >= states
                && let Some(s) = t.shape.take()
            {
                let a = super::cx::axis(in_axes.get(k - states).copied().unwrap_or(0), s.rank())?;
                if k == states {
                    seq = s.0[a].clone();
                }
                let mut d = s.0;
                d.remove(a);
                t.shape = Some(Shape(d));
            }
            body.value_mut(body.inputs[k]).ty = t;
        }
        seeds.retain(|name, _| !body.inputs.iter().any(|id| &body.value(*id).name == name));
        self.graph(body, &seeds, true);
        let out_axes = cx.ints("scan_output_axes").unwrap_or_default();
        let mut outs = Vec::new();
        for (k, id) in body.outputs.iter().enumerate() {
            let t = body.value(*id).ty.clone();
            if k < states {
                let init = cx.types[k].cloned().unwrap_or_default();
                outs.push(Out { ty: join(&init, &t), value: None });
                continue;
            }
            let shape = match t.shape {
                Some(s) => {
                    let a = out_axes.get(k - states).copied().unwrap_or(0);
                    let a = super::cx::axis(a, s.rank() + 1)?;
                    let mut d = s.0;
                    d.insert(a, seq.clone());
                    Some(Shape(d))
                }
                None => None,
            };
            outs.push(Out { ty: TensorType { dtype: t.dtype, shape }, value: None });
        }
        Ok(outs)
    }

    /// A call to a model-local function: infer a copy of the body with the call's input types.
    pub(crate) fn call(&mut self, f: &Graph, cx: &NodeCx<'_>) -> Res<Vec<Out>> {
        if self.depth >= MAX_CALL_DEPTH {
            return Err(Fail::Invalid(format!("function calls nest deeper than {MAX_CALL_DEPTH}")));
        }
        let mut body = f.clone();
        let mut seeds = HashMap::new();
        for (k, id) in f.inputs.iter().enumerate() {
            if let Some(t) = cx.types.get(k).copied().flatten() {
                body.value_mut(*id).ty = t.clone();
            }
            if let Some(c) = cx.value(k) {
                seeds.insert(f.value(*id).name.clone(), c.clone());
            }
        }
        substitute_attrs(&mut body, &cx.node.attrs, &f.attrs);
        self.depth += 1;
        self.graph(&mut body, &seeds, false);
        self.depth -= 1;
        Ok(outputs(&body, &HashMap::new()))
    }
}

/// Replaces `@name` attribute references in a function body by the caller's attribute, or the
/// function's default; references to neither are dropped.
fn substitute_attrs(g: &mut Graph, call: &[(String, Attr)], defaults: &[(String, Attr)]) {
    for n in &mut g.nodes {
        let attrs = std::mem::take(&mut n.attrs);
        for (k, v) in attrs {
            match &v {
                Attr::Text(t) if t.starts_with('@') => {
                    let r = &t[1..];
                    let found = call
                        .iter()
                        .chain(defaults)
                        .find(|(name, _)| name == r)
                        .map(|(_, a)| a.clone());
                    if let Some(a) = found {
                        n.attrs.push((k, a));
                    }
                }
                _ => n.attrs.push((k, v)),
            }
        }
        for (_, sg) in &mut n.subgraphs {
            substitute_attrs(sg, call, defaults);
        }
    }
}
