//! `GraphProto` to [`Graph`]: name resolution across nested scopes, validation (dangling
//! inputs, duplicate producers, cycles, nesting depth) and a stable topological sort.
//!
//! Values are created in this order: graph inputs, initializers, captured outer-scope values
//! ([`ValueKind::Outer`]), then node outputs as the nodes are added. Nodes are stored in a
//! topological order that keeps the file's order wherever the file's order is valid. A node
//! whose subgraph captures a value of this graph depends on that value's producer.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use tpuport_model::{
    Attr, Graph, Node, Note, Shape, TensorType, Value, ValueId, ValueKind, WeightId, WeightStore,
};

use crate::FormatError;

use super::attrs::is_graph;
use super::proto::{GraphProto, NodeProto};
use super::tensor::TensorReader;
use super::types::tensor_type;

/// State shared by the conversion of one model: the tensor reader, the weights found so far,
/// notes, and the running count of nodes and values.
#[derive(Debug)]
pub(crate) struct Converter {
    pub(crate) reader: TensorReader,
    pub(crate) weights: WeightStore,
    pub(crate) notes: Vec<Note>,
    items: u64,
}

/// A printable label for node `i`: its name, or `#i (Op)` when it has none.
pub(crate) fn label(n: &NodeProto, i: usize) -> String {
    if n.name.is_empty() { format!("#{i} ({})", n.op_type) } else { n.name.clone() }
}

/// Names visible from enclosing graphs, innermost last.
type Outer<'s> = [&'s HashSet<String>];

impl Converter {
    pub(crate) fn new(reader: TensorReader) -> Converter {
        Converter { reader, weights: WeightStore::default(), notes: Vec::new(), items: 0 }
    }

    pub(crate) fn invalid(&self, what: String) -> FormatError {
        FormatError::invalid(&self.reader.path, what)
    }

    fn count(&mut self, n: usize) -> Result<(), FormatError> {
        self.items = self.items.saturating_add(n as u64);
        if self.items > self.reader.limits.max_items {
            return Err(self
                .invalid(format!("more than {} nodes and values", self.reader.limits.max_items)));
        }
        Ok(())
    }

    /// Converts a graph. `outer` holds the names of enclosing scopes; `depth` is 0 for the main
    /// graph and function bodies.
    pub(crate) fn graph(
        &mut self,
        gp: &GraphProto,
        outer: &Outer<'_>,
        depth: usize,
    ) -> Result<Graph, FormatError> {
        if depth > self.reader.limits.max_nesting {
            return Err(self.invalid(format!(
                "subgraph '{}' nests deeper than {} levels",
                gp.name, self.reader.limits.max_nesting
            )));
        }
        self.count(gp.node.len() + gp.initializer.len() + gp.input.len())?;
        let mut g = Graph { name: gp.name.clone(), ..Graph::default() };
        let mut ids: HashMap<String, ValueId> = HashMap::new();

        // Initializers first (their ids), so that inputs repeating them (IR < 4) are skipped.
        let mut inits: Vec<(String, WeightId)> = Vec::new();
        let mut init_names: HashSet<&str> = HashSet::new();
        for t in &gp.initializer {
            if !init_names.insert(&t.name) {
                return Err(self.invalid(format!("initializer '{}' is defined twice", t.name)));
            }
            let w = self.reader.weight(t, t.name.clone(), &format!("initializer '{}'", t.name))?;
            inits.push((t.name.clone(), self.weights.push(w)));
        }
        for s in &gp.sparse_initializer {
            let name = s.values.as_ref().map(|v| v.name.clone()).unwrap_or_default();
            if !init_names.insert(s.values.as_ref().map_or("", |v| v.name.as_str())) {
                return Err(self.invalid(format!("initializer '{name}' is defined twice")));
            }
            let w = self.reader.sparse(s, &format!("sparse initializer '{name}'"))?;
            inits.push((name, self.weights.push(w)));
        }
        for vi in &gp.input {
            if init_names.contains(vi.name.as_str()) {
                continue;
            }
            if ids.contains_key(&vi.name) {
                return Err(self.invalid(format!("graph input '{}' is listed twice", vi.name)));
            }
            let id = g.add_value(Value {
                name: vi.name.clone(),
                ty: tensor_type(vi.r#type.as_ref()),
                kind: ValueKind::Input,
                producer: None,
            });
            g.inputs.push(id);
            ids.insert(vi.name.clone(), id);
        }
        for (name, wid) in inits {
            let w = self.weights.get(wid);
            let ty = TensorType::new(w.dtype, Shape::fixed(&w.shape));
            let id = g.add_value(Value {
                name: name.clone(),
                ty,
                kind: ValueKind::Weight(wid),
                producer: None,
            });
            ids.insert(name, id);
        }

        // Who produces each name.
        let mut producer: HashMap<&str, usize> = HashMap::new();
        for (i, n) in gp.node.iter().enumerate() {
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                if ids.contains_key(o) {
                    return Err(self.invalid(format!(
                        "node '{}' output '{o}' has the name of a graph input or initializer",
                        label(n, i)
                    )));
                }
                if let Some(j) = producer.insert(o, i) {
                    return Err(self.invalid(format!(
                        "value '{o}' is produced twice: by node '{}' and node '{}'",
                        label(&gp.node[j], j),
                        label(n, i)
                    )));
                }
            }
        }
        let local: HashSet<String> =
            ids.keys().cloned().chain(producer.keys().map(|s| (*s).to_owned())).collect();

        // Subgraphs, converted with this graph's names in scope; their captures are implicit inputs.
        let mut scopes: Vec<&HashSet<String>> = outer.to_vec();
        scopes.push(&local);
        let mut subs: Vec<Vec<Option<Vec<Graph>>>> = Vec::with_capacity(gp.node.len());
        let mut captures: Vec<Vec<String>> = Vec::with_capacity(gp.node.len());
        for n in &gp.node {
            let mut per_attr = Vec::with_capacity(n.attribute.len());
            let mut caps: Vec<String> = Vec::new();
            for a in &n.attribute {
                if !is_graph(a) {
                    per_attr.push(None);
                    continue;
                }
                let mut graphs = Vec::new();
                for sg in a.g.iter().chain(a.graphs.iter()) {
                    let sub = self.graph(sg, &scopes, depth + 1)?;
                    caps.extend(
                        sub.values
                            .iter()
                            .filter(|v| v.kind == ValueKind::Outer)
                            .map(|v| v.name.clone()),
                    );
                    graphs.push(sub);
                }
                per_attr.push(Some(graphs));
            }
            caps.sort();
            caps.dedup();
            subs.push(per_attr);
            captures.push(caps);
        }

        // Resolve every name a node reads; record dependencies between nodes.
        let mut deps: Vec<Vec<usize>> = vec![Vec::new(); gp.node.len()];
        for (i, n) in gp.node.iter().enumerate() {
            let explicit = n.input.iter().filter(|s| !s.is_empty()).map(|s| (s, None));
            let implicit = captures[i].iter().map(|s| (s, Some(())));
            for (name, is_capture) in explicit.chain(implicit) {
                if let Some(&j) = producer.get(name.as_str()) {
                    deps[i].push(j);
                } else if ids.contains_key(name) {
                } else if outer.iter().any(|s| s.contains(name)) {
                    let id = g.add_value(Value {
                        name: name.clone(),
                        ty: TensorType::default(),
                        kind: ValueKind::Outer,
                        producer: None,
                    });
                    ids.insert(name.clone(), id);
                } else if is_capture.is_some() {
                    return Err(self.invalid(format!(
                        "a subgraph of node '{}' uses '{name}', which is produced by no node, initializer or graph input",
                        label(n, i)
                    )));
                } else {
                    return Err(self.invalid(format!(
                        "node '{}' input '{name}' is produced by no node, initializer or graph input",
                        label(n, i)
                    )));
                }
            }
            deps[i].sort_unstable();
            deps[i].dedup();
        }
        let order = self.topo_order(gp, &deps)?;

        let value_info: HashMap<&str, TensorType> = gp
            .value_info
            .iter()
            .map(|v| (v.name.as_str(), tensor_type(v.r#type.as_ref())))
            .collect();
        for i in order {
            let n = &gp.node[i];
            let lbl = label(n, i);
            self.count(n.output.len())?;
            let mut outputs = Vec::with_capacity(n.output.len());
            for o in &n.output {
                let ty = value_info.get(o.as_str()).cloned().unwrap_or_default();
                let id = g.add_value(Value {
                    name: o.clone(),
                    ty,
                    kind: ValueKind::Intermediate,
                    producer: None,
                });
                if !o.is_empty() {
                    ids.insert(o.clone(), id);
                }
                outputs.push(id);
            }
            let inputs = n
                .input
                .iter()
                .map(|s| if s.is_empty() { None } else { ids.get(s).copied() })
                .collect();
            let first_out = n.output.first().map_or(lbl.as_str(), String::as_str).to_owned();
            let mut attrs = Vec::with_capacity(n.attribute.len());
            let mut subgraphs = Vec::new();
            let is_constant =
                n.op_type == "Constant" && (n.domain.is_empty() || n.domain == "ai.onnx");
            if is_constant {
                attrs.push((
                    "value".to_owned(),
                    self.constant_value(&n.attribute, &lbl, &first_out)?,
                ));
            }
            for (a, sg) in n.attribute.iter().zip(std::mem::take(&mut subs[i])) {
                if let Some(graphs) = sg {
                    let start = subgraphs.len();
                    let single = a.r#type == super::proto::attribute_type::GRAPH
                        || (a.r#type == 0 && a.g.is_some());
                    for sub in graphs {
                        subgraphs.push((a.name.clone(), sub));
                    }
                    let attr = if single {
                        Attr::Graph(start)
                    } else {
                        Attr::Graphs((start..subgraphs.len()).collect())
                    };
                    attrs.push((a.name.clone(), attr));
                } else if !is_constant {
                    attrs.push((a.name.clone(), self.attr(a, &lbl, &first_out)?));
                }
            }
            g.add_node(Node {
                name: n.name.clone(),
                op: n.op_type.clone(),
                domain: n.domain.clone(),
                inputs,
                outputs,
                attrs,
                subgraphs,
                location: (!n.doc_string.is_empty()).then(|| n.doc_string.clone()),
                scope: torch_scope(&n.metadata_props),
            });
        }

        for o in &gp.output {
            let id = match ids.get(&o.name) {
                Some(id) => *id,
                None if outer.iter().any(|s| s.contains(&o.name)) => {
                    let id = g.add_value(Value {
                        name: o.name.clone(),
                        ty: TensorType::default(),
                        kind: ValueKind::Outer,
                        producer: None,
                    });
                    ids.insert(o.name.clone(), id);
                    id
                }
                None => {
                    return Err(self.invalid(format!(
                        "graph output '{}' is produced by no node, initializer or graph input",
                        o.name
                    )));
                }
            };
            let declared = tensor_type(o.r#type.as_ref());
            let v = g.value_mut(id);
            if v.ty.dtype.is_none() {
                v.ty.dtype = declared.dtype;
            }
            if v.ty.shape.is_none() {
                v.ty.shape = declared.shape;
            }
            g.outputs.push(id);
        }
        Ok(g)
    }

    /// Kahn's algorithm, smallest file index first, so valid file orders are kept.
    fn topo_order(&self, gp: &GraphProto, deps: &[Vec<usize>]) -> Result<Vec<usize>, FormatError> {
        let n = deps.len();
        let mut indeg = vec![0usize; n];
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, d) in deps.iter().enumerate() {
            for &j in d {
                if j == i {
                    return Err(self.invalid(format!(
                        "graph has a cycle through node '{}'",
                        label(&gp.node[i], i)
                    )));
                }
                indeg[i] += 1;
                succ[j].push(i);
            }
        }
        let mut ready: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| indeg[i] == 0).map(Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(j)) = ready.pop() {
            order.push(j);
            for &i in &succ[j] {
                indeg[i] -= 1;
                if indeg[i] == 0 {
                    ready.push(Reverse(i));
                }
            }
        }
        if order.len() == n {
            return Ok(order);
        }
        // Walk back through unfinished producers until a node repeats: it lies on a cycle.
        let mut cur = (0..n).find(|&i| indeg[i] > 0).unwrap_or(0);
        let mut seen = vec![false; n];
        while !seen[cur] {
            seen[cur] = true;
            match deps[cur].iter().find(|&&j| indeg[j] > 0) {
                Some(&j) => cur = j,
                None => break,
            }
        }
        Err(self.invalid(format!("graph has a cycle through node '{}'", label(&gp.node[cur], cur))))
    }
}

/// The innermost module path torch.onnx's dynamo exporter records for a node
/// (`pkg.torch.onnx.name_scopes = ['', 'encoder', …, 'encoder.layer.0.attention.self.query',
/// 'linear']`). Each module entry extends the one before it; the exporter may append the op's
/// own name (`linear`) last, which does not.
fn torch_scope(props: &[super::proto::StringStringEntryProto]) -> Option<String> {
    let v = &props.iter().find(|p| p.key == "pkg.torch.onnx.name_scopes")?.value;
    let inner = v.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut module: Option<&str> = None;
    for e in inner.split(',').map(|e| e.trim().trim_matches(|c| c == '\'' || c == '"')) {
        if e.is_empty() {
            continue;
        }
        match module {
            Some(m) if !e.starts_with(m) || e.as_bytes().get(m.len()) != Some(&b'.') => break,
            _ => module = Some(e),
        }
    }
    module.map(str::to_owned)
}

#[cfg(test)]
mod scope_tests {
    use super::super::proto::StringStringEntryProto;
    use super::torch_scope;

    fn scope(v: &str) -> Option<String> {
        torch_scope(&[StringStringEntryProto {
            key: "pkg.torch.onnx.name_scopes".into(),
            value: v.into(),
        }])
    }

    #[test]
    fn the_innermost_module_before_the_op_name() {
        let v =
            "['', 'encoder', 'encoder.layer.0', 'encoder.layer.0.attention.self.query', 'linear']";
        assert_eq!(scope(v).as_deref(), Some("encoder.layer.0.attention.self.query"));
        assert_eq!(scope("['', 'lm_head', 'linear']").as_deref(), Some("lm_head"));
        assert_eq!(scope("['', 'encoder', 'encoder.layer.1']").as_deref(), Some("encoder.layer.1"));
        assert_eq!(scope("['']"), None);
        assert_eq!(scope("not a list"), None);
    }
}
