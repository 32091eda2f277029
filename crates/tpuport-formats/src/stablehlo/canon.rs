//! A name-independent description of a model's graphs, for checking that two imports (the
//! pretty and generic text of one module, or a module and its printed round trip) hold the
//! same computation: ops, types, edges, attributes, regions.

use std::collections::HashMap;
use std::fmt::Write as _;

use tpuport_model::{Attr, Graph, Model, ValueKind};

/// What [`structure`] includes besides ops, types, edges and attributes.
#[derive(Clone, Copy, Debug, Default)]
pub struct StructureOptions {
    /// Include node locations.
    pub locations: bool,
}

/// One line per graph, argument, node and output; values are named by position
/// (`in0`, `n3.1`), never by their SSA names.
#[must_use]
pub fn structure(model: &Model, opts: StructureOptions) -> String {
    let mut out = String::new();
    let mut graphs: Vec<&Graph> = model.functions.iter().collect();
    graphs.sort_by(|a, b| a.name.cmp(&b.name));
    for g in std::iter::once(&model.graph).chain(graphs) {
        let _ = writeln!(out, "func @{}", g.name);
        graph(model, g, &[], 1, opts, &mut out);
    }
    out
}

type Labels = HashMap<String, String>;

fn graph(
    model: &Model,
    g: &Graph,
    outer: &[&Labels],
    depth: usize,
    opts: StructureOptions,
    out: &mut String,
) {
    let pad = "  ".repeat(depth);
    let mut labels = Labels::new();
    let mut by_id: HashMap<u32, String> = HashMap::new();
    let mut attrs: Vec<String> =
        g.attrs.iter().map(|(k, v)| format!("{k}={}", attr(model, v))).collect();
    attrs.sort();
    let _ = writeln!(out, "{pad}attrs {}", attrs.join(" "));
    for (i, id) in g.inputs.iter().enumerate() {
        let v = g.value(*id);
        let l = format!("in{i}");
        let _ = writeln!(out, "{pad}{l}: {}", v.ty);
        labels.insert(v.name.clone(), l.clone());
        by_id.insert(id.0, l);
    }
    let label = |id: u32, by_id: &HashMap<u32, String>, labels: &Labels| -> String {
        if let Some(l) = by_id.get(&id) {
            return l.clone();
        }
        let v = &g.values[id as usize];
        if v.kind == ValueKind::Outer {
            let found =
                labels.get(&v.name).or_else(|| outer.iter().rev().find_map(|s| s.get(&v.name)));
            return format!("outer:{}", found.map_or("?", String::as_str));
        }
        format!("?{}", v.name)
    };
    for (n, node) in g.nodes.iter().enumerate() {
        let ins: Vec<String> = node
            .inputs
            .iter()
            .map(|i| i.map_or_else(|| "-".to_owned(), |id| label(id.0, &by_id, &labels)))
            .collect();
        let mut outs = Vec::new();
        for (k, id) in node.outputs.iter().enumerate() {
            let l = format!("n{n}.{k}");
            let v = g.value(*id);
            outs.push(format!("{l}:{}", v.ty));
            labels.insert(v.name.clone(), l.clone());
            by_id.insert(id.0, l);
        }
        // `tpuport.unparsed` records source syntax, not the computation; the printer cannot
        // reproduce it, so it is left out.
        let mut attrs: Vec<String> = node
            .attrs
            .iter()
            .filter(|(k, _)| k != "tpuport.unparsed")
            .map(|(k, v)| format!("{k}={}", attr(model, v)))
            .collect();
        attrs.sort();
        let loc =
            if opts.locations { node.location.clone().unwrap_or_default() } else { String::new() };
        let _ = writeln!(
            out,
            "{pad}{} = {}({}) {{{}}} {loc}",
            outs.join(", "),
            node.op,
            ins.join(", "),
            attrs.join(", ")
        );
        for (name, sg) in &node.subgraphs {
            let _ = writeln!(out, "{pad} region {name}");
            let scopes: Vec<&Labels> =
                outer.iter().copied().chain(std::iter::once(&labels)).collect();
            graph(model, sg, &scopes, depth + 2, opts, out);
        }
    }
    let outs: Vec<String> = g.outputs.iter().map(|id| label(id.0, &by_id, &labels)).collect();
    let _ = writeln!(out, "{pad}return {}", outs.join(", "));
}

fn attr(model: &Model, a: &Attr) -> String {
    match a {
        Attr::Text(t) => t.split_whitespace().collect::<Vec<_>>().join(" "),
        Attr::Weight(id) => {
            let w = model.weights.get(*id);
            let sum = w.bytes().map_or(0u64, |b| {
                b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
                    (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
                })
            });
            format!("weight<{} {:?} {sum:016x}>", w.dtype, w.shape)
        }
        other => format!("{other:?}"),
    }
}
