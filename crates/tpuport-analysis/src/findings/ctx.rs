//! What every rule gets: the model's graphs flattened (entry graph, functions, subgraphs), value
//! helpers and the sink that turns a match into a [`Finding`].

use tpuport_model::{Attr, DType, Graph, Model, Node, ValueId, ValueKind};

use super::{Finding, FindingOptions, MAX_NODES, Severity};
use crate::taxonomy;

/// Deepest subgraph nesting followed (hostile files cannot recurse without bound).
const MAX_DEPTH: usize = 64;

/// One graph of the model with where it sits.
#[derive(Debug)]
pub(crate) struct GraphRef<'a> {
    /// The graph.
    pub(crate) graph: &'a Graph,
    /// Nesting depth: 0 for the entry graph and functions.
    pub(crate) depth: usize,
}

/// The model as the rules see it.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub(crate) model: &'a Model,
    pub(crate) opts: &'a FindingOptions,
    /// Entry graph first, then functions, each followed by its nested subgraphs.
    pub(crate) graphs: Vec<GraphRef<'a>>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(model: &'a Model, opts: &'a FindingOptions) -> Ctx<'a> {
        let mut graphs = Vec::new();
        for g in std::iter::once(&model.graph).chain(model.functions.iter()) {
            push_graph(g, 0, &mut graphs);
        }
        Ctx { model, opts, graphs }
    }

    /// Every node of every graph, with its graph.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = (&'a Graph, &'a Node)> + '_ {
        self.graphs.iter().flat_map(|r| r.graph.nodes.iter().map(move |n| (r.graph, n)))
    }
}

fn push_graph<'a>(g: &'a Graph, depth: usize, out: &mut Vec<GraphRef<'a>>) {
    out.push(GraphRef { graph: g, depth });
    if depth >= MAX_DEPTH {
        return;
    }
    for n in &g.nodes {
        for (_, sg) in &n.subgraphs {
            push_graph(sg, depth + 1, out);
        }
    }
}

/// The op without dialect and in lowercase: `stablehlo.sort` and `Sort` give `sort`.
pub(crate) fn short_op(n: &Node) -> String {
    taxonomy::short_name(&n.op)
}

/// True for a StableHLO / MLIR op (`stablehlo.add`, `chlo.top_k`).
pub(crate) fn is_mlir(n: &Node) -> bool {
    n.op.contains('.')
}

/// How a node is named in findings: ONNX node name (or first output name); for StableHLO the
/// source location (`jit(f)/dot_general`) when the file has one, else the result name.
pub(crate) fn label(g: &Graph, n: &Node) -> String {
    let base = if n.name.is_empty() {
        n.outputs.first().map_or_else(|| n.op.clone(), |o| g.value(*o).name.clone())
    } else {
        n.name.clone()
    };
    match n.location.as_deref().map(clean_loc) {
        Some(loc) if is_mlir(n) && !loc.is_empty() && loc != "unknown" => format!("{base} @ {loc}"),
        _ => base,
    }
}

/// `loc("jit(f)/dot_general"(#loc3))` -> `jit(f)/dot_general`.
fn clean_loc(loc: &str) -> String {
    let s = loc.trim();
    let s = s.strip_prefix("loc(").unwrap_or(s);
    if let Some(rest) = s.strip_prefix('"')
        && let Some(end) = rest.find('"')
    {
        return rest[..end].to_owned();
    }
    s.trim_end_matches(')').to_owned()
}

/// Input `i` of a node, when present.
pub(crate) fn input(n: &Node, i: usize) -> Option<ValueId> {
    n.inputs.get(i).copied().flatten()
}

/// Element type of a value.
pub(crate) fn dtype(g: &Graph, v: ValueId) -> Option<DType> {
    g.values.get(v.0 as usize)?.ty.dtype
}

/// Static shape of a value.
pub(crate) fn shape(g: &Graph, v: ValueId) -> Option<Vec<u64>> {
    g.values.get(v.0 as usize)?.ty.shape.as_ref()?.as_fixed()
}

/// Element count of a value with a static shape (`None` when it overflows: hostile shapes).
pub(crate) fn elems(g: &Graph, v: ValueId) -> Option<u64> {
    shape(g, v)?.iter().try_fold(1u64, |a, d| a.checked_mul(*d))
}

/// The op producing a value in its graph.
pub(crate) fn producer(g: &Graph, v: ValueId) -> Option<&Node> {
    g.values.get(v.0 as usize)?.producer.map(|p| g.node(p))
}

/// True when a value is a stored weight or the result of a constant op.
pub(crate) fn is_constant(g: &Graph, v: ValueId) -> bool {
    match g.values.get(v.0 as usize).map(|x| &x.kind) {
        Some(ValueKind::Weight(_)) => true,
        Some(ValueKind::Intermediate) => {
            producer(g, v).is_some_and(|p| taxonomy::info(&p.op).is_constant_source())
        }
        _ => false,
    }
}

/// Integer attribute.
pub(crate) fn int_attr(n: &Node, name: &str) -> Option<i64> {
    n.attr(name).and_then(Attr::as_int)
}

/// Integer list attribute (ONNX ints or an MLIR array / dense text).
pub(crate) fn ints_attr(n: &Node, name: &str) -> Option<Vec<i64>> {
    match n.attr(name)? {
        Attr::Ints(v) => Some(v.clone()),
        Attr::Int(v) => Some(vec![*v]),
        Attr::Text(t) | Attr::Str(t) => Some(parse_ints(t)),
        _ => None,
    }
}

/// Every integer in an MLIR attribute text; the type after ` : ` is ignored.
pub(crate) fn parse_ints(text: &str) -> Vec<i64> {
    let body = text.split(" : ").next().unwrap_or(text);
    body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .filter_map(|t| t.parse::<i64>().ok())
        .collect()
}

/// The combiner op of a StableHLO region (`stablehlo.reduce`'s body: `add`, `maximum` …), the
/// first non-return op of its first region.
pub(crate) fn region_combiner(n: &Node) -> Option<String> {
    let (_, body) = n.subgraphs.first()?;
    body.nodes.iter().map(short_op).find(|o| o != "return")
}

/// Collects matches for one code and turns them into [`Finding`]s.
#[derive(Debug)]
pub(crate) struct Sink<'o> {
    code: &'static str,
    severity: Severity,
    out: &'o mut Vec<Finding>,
}

impl<'o> Sink<'o> {
    pub(crate) fn new(code: &'static str, severity: Severity, out: &'o mut Vec<Finding>) -> Self {
        Sink { code, severity, out }
    }

    /// The code's default severity.
    pub(crate) fn default_severity(&self) -> Severity {
        self.severity
    }

    /// Reports a finding at the code's default severity.
    pub(crate) fn emit(&mut self, title: String, message: String, nodes: Vec<String>, fix: &str) {
        let sev = self.severity;
        self.emit_at(sev, title, message, nodes, fix);
    }

    /// Reports a finding at a given severity.
    pub(crate) fn emit_at(
        &mut self,
        severity: Severity,
        title: String,
        message: String,
        mut nodes: Vec<String>,
        fix: &str,
    ) {
        let mut seen = std::collections::HashSet::new();
        nodes.retain(|n| seen.insert(n.clone()));
        if nodes.len() > MAX_NODES {
            let more = nodes.len() - (MAX_NODES - 1);
            nodes.truncate(MAX_NODES - 1);
            nodes.push(format!("…and {more} more"));
        }
        self.out.push(Finding {
            code: self.code,
            severity,
            title,
            message,
            nodes,
            fix: (!fix.is_empty()).then(|| fix.to_owned()),
        });
    }
}

/// `3 NonZero, 1 Unique` from (op, count) pairs in first-seen order.
pub(crate) fn op_counts(ops: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for o in ops {
        match counts.iter_mut().find(|(k, _)| k == o) {
            Some((_, c)) => *c += 1,
            None => counts.push((o, 1)),
        }
    }
    counts.iter().map(|(k, c)| format!("{c} {k}")).collect::<Vec<_>>().join(", ")
}

/// Inputs / weights (by name) and ops (by node) whose element type is one of `types`. An op
/// counts when one of its outputs has the type.
pub(crate) fn typed_values<'a>(
    cx: &Ctx<'a>,
    types: &[DType],
) -> (Vec<String>, Vec<(&'a Graph, &'a Node)>) {
    let mut values = Vec::new();
    let g = &cx.model.graph;
    for v in &g.values {
        let top = matches!(v.kind, ValueKind::Input | ValueKind::Weight(_));
        if top && v.ty.dtype.is_some_and(|d| types.contains(&d)) {
            values.push(v.name.clone());
        }
    }
    let ops = cx
        .nodes()
        .filter(|(g, n)| n.outputs.iter().any(|o| dtype(g, *o).is_some_and(|d| types.contains(&d))))
        .collect();
    (values, ops)
}

/// The integers of a small constant value (a weight, an ONNX `Constant`, a `stablehlo.constant`),
/// at most 64 of them.
pub(crate) fn const_ints(cx: &Ctx<'_>, g: &Graph, v: ValueId) -> Option<Vec<i64>> {
    let from_weight = |id| {
        let w = cx.model.weights.get(id);
        if w.elements() > 64 {
            return None;
        }
        let b = w.bytes().ok()?;
        match w.dtype {
            DType::I64 => Some(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect(),
            ),
            DType::I32 => Some(
                b.chunks_exact(4)
                    .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                    .collect(),
            ),
            _ => None,
        }
    };
    match &g.values.get(v.0 as usize)?.kind {
        ValueKind::Weight(id) => from_weight(*id),
        ValueKind::Intermediate => {
            let p = producer(g, v)?;
            match p.attr("value")? {
                Attr::Weight(id) => from_weight(*id),
                Attr::Int(i) => Some(vec![*i]),
                Attr::Ints(i) => Some(i.clone()),
                Attr::Text(t) if p.op.ends_with("constant") => Some(parse_ints(t)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The producer of `v`, looking through data movement and casts (at most 8 hops).
pub(crate) fn source(g: &Graph, v: ValueId) -> Option<&Node> {
    let mut v = v;
    for _ in 0..8 {
        let p = producer(g, v)?;
        if !taxonomy::info(&p.op).passes_values_through() {
            return Some(p);
        }
        v = input(p, 0)?;
    }
    None
}

/// True for a sum reduction: ONNX `ReduceSum`, `stablehlo.reduce` with an `add` body.
pub(crate) fn is_sum_reduce(n: &Node) -> bool {
    if is_mlir(n) {
        short_op(n) == "reduce" && region_combiner(n).as_deref() == Some("add")
    } else {
        n.op == "ReduceSum"
    }
}

/// True for an exponential (`Exp`, `stablehlo.exponential`).
pub(crate) fn is_exp(n: &Node) -> bool {
    matches!(short_op(n).as_str(), "exp" | "exponential")
}

/// The exponentials whose results are summed: the decomposed softmax / log-sum-exp pattern.
pub(crate) fn softmax_exps(g: &Graph) -> Vec<&Node> {
    let mut out: Vec<&Node> = Vec::new();
    for n in g.nodes.iter().filter(|n| is_sum_reduce(n)) {
        if let Some(p) = input(n, 0).and_then(|v| source(g, v))
            && is_exp(p)
            && !out.iter().any(|q| std::ptr::eq(*q, p))
        {
            out.push(p);
        }
    }
    out
}

/// True when a node's first output is bf16 or f16.
pub(crate) fn is_low_precision(g: &Graph, n: &Node) -> bool {
    n.outputs
        .first()
        .and_then(|o| dtype(g, *o))
        .is_some_and(|d| matches!(d, DType::BF16 | DType::F16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_counts_and_ints() {
        assert_eq!(clean_loc(r#"loc("jit(f)/dot_general"(#loc3))"#), "jit(f)/dot_general");
        assert_eq!(clean_loc("loc(#loc7)"), "#loc7");
        assert_eq!(op_counts(&["A".into(), "B".into(), "A".into()]), "2 A, 1 B");
        assert_eq!(parse_ints("dense<[[1, 2], [-3, 4]]> : tensor<2x2xi64>"), vec![1, 2, -3, 4]);
        assert_eq!(parse_ints("array<i64: 1, 8192>"), vec![1, 8192]);
    }
}
