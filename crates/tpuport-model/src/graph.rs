use serde::Serialize;

use crate::{TensorType, WeightId};

/// Index of a [`Value`] in its [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ValueId(pub u32);

/// Index of a [`Node`] in its [`Graph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct NodeId(pub u32);

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ValueKind {
    /// A graph input the caller provides.
    Input,
    /// A stored weight (ONNX initializer, a parameter bound to a checkpoint tensor).
    Weight(WeightId),
    /// Produced by a node of this graph.
    Intermediate,
    /// A value of an enclosing graph, captured by name inside a subgraph or region.
    Outer,
}

/// A tensor flowing through the graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Value {
    /// Name as the file spells it (ONNX value name, MLIR `%arg0`/`%12`).
    pub name: String,
    /// Type as stated by the file or found by inference.
    pub ty: TensorType,
    /// Origin.
    pub kind: ValueKind,
    /// The node producing it, for intermediates.
    pub producer: Option<NodeId>,
}

/// An attribute value. Formats with richer attribute languages (MLIR) keep the original text in
/// [`Attr::Text`] so a printer can write it back unchanged.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Attr {
    /// Integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// String (ONNX strings may hold bytes; invalid UTF-8 is replaced).
    Str(String),
    /// Integer list.
    Ints(Vec<i64>),
    /// Float list.
    Floats(Vec<f64>),
    /// String list.
    Strs(Vec<String>),
    /// A tensor stored in the model's weight store (ONNX `Constant` values, `TENSOR` attributes).
    Weight(WeightId),
    /// A subgraph attribute: index into [`Node::subgraphs`].
    Graph(usize),
    /// A list of subgraphs: indices into [`Node::subgraphs`].
    Graphs(Vec<usize>),
    /// A type.
    Type(TensorType),
    /// Attribute source text, verbatim (MLIR attributes such as `#stablehlo.dot<...>`).
    Text(String),
}

impl Attr {
    /// The integer, if this is an [`Attr::Int`].
    #[must_use]
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The integer list, if this is an [`Attr::Ints`].
    #[must_use]
    pub fn as_ints(&self) -> Option<&[i64]> {
        match self {
            Attr::Ints(v) => Some(v),
            _ => None,
        }
    }

    /// The float, if this is an [`Attr::Float`].
    #[must_use]
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attr::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// The string, if this is an [`Attr::Str`] or [`Attr::Text`].
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(v) | Attr::Text(v) => Some(v),
            _ => None,
        }
    }
}

/// One operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    /// Node name (ONNX `name`; for MLIR the first result's name), possibly empty.
    pub name: String,
    /// Op name as the file spells it (`Conv`, `stablehlo.dot_general`).
    pub op: String,
    /// Op domain (`""` for the default ONNX domain, `com.microsoft`, `stablehlo`, `func`).
    pub domain: String,
    /// Inputs in order; `None` marks an omitted optional input.
    pub inputs: Vec<Option<ValueId>>,
    /// Outputs in order.
    pub outputs: Vec<ValueId>,
    /// Attributes in file order.
    pub attrs: Vec<(String, Attr)>,
    /// Subgraphs (ONNX `If`/`Loop`/`Scan` bodies, StableHLO regions), with the attribute or
    /// region name they came from.
    pub subgraphs: Vec<(String, Graph)>,
    /// Source location (MLIR `loc(...)` text, ONNX doc string), if any.
    pub location: Option<String>,
    /// The module path of the source model the node came from, where the exporter recorded
    /// one (torch.onnx dynamo's `pkg.torch.onnx.name_scopes` metadata, innermost module:
    /// `encoder.layer.0.attention.self.query`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Node {
    /// Looks up an attribute by name.
    #[must_use]
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Domain-qualified op name: `Conv`, `com.microsoft::FusedMatMul`, `stablehlo.add`.
    #[must_use]
    pub fn qualified_op(&self) -> String {
        if self.domain.is_empty() || self.domain == "ai.onnx" || self.op.contains('.') {
            self.op.clone()
        } else {
            format!("{}::{}", self.domain, self.op)
        }
    }
}

/// A dataflow graph: ONNX graph or function body, StableHLO function or region.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Graph {
    /// Graph or function name.
    pub name: String,
    /// Arena of values; [`ValueId`] indexes it.
    pub values: Vec<Value>,
    /// Arena of nodes in file order (topological for well-formed files); [`NodeId`] indexes it.
    pub nodes: Vec<Node>,
    /// Caller-provided inputs (excluding weights), in signature order.
    pub inputs: Vec<ValueId>,
    /// Outputs, in signature order.
    pub outputs: Vec<ValueId>,
    /// Graph-level attributes (MLIR function attributes such as `jax.result_info`).
    pub attrs: Vec<(String, Attr)>,
}

impl Graph {
    /// Adds a value and returns its id.
    ///
    /// # Panics
    /// If the graph already holds `u32::MAX` values (importers bound sizes long before that).
    pub fn add_value(&mut self, value: Value) -> ValueId {
        let id = ValueId(u32::try_from(self.values.len()).expect("value arena overflow"));
        self.values.push(value);
        id
    }

    /// Adds a node, sets the producer of its outputs, and returns its id.
    ///
    /// # Panics
    /// If the graph already holds `u32::MAX` nodes.
    pub fn add_node(&mut self, node: Node) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).expect("node arena overflow"));
        for o in &node.outputs {
            if let Some(v) = self.values.get_mut(o.0 as usize) {
                v.producer = Some(id);
            }
        }
        self.nodes.push(node);
        id
    }

    /// The value behind an id.
    ///
    /// # Panics
    /// If `id` does not belong to this graph.
    #[must_use]
    pub fn value(&self, id: ValueId) -> &Value {
        &self.values[id.0 as usize]
    }

    /// Mutable access to a value.
    ///
    /// # Panics
    /// If `id` does not belong to this graph.
    pub fn value_mut(&mut self, id: ValueId) -> &mut Value {
        &mut self.values[id.0 as usize]
    }

    /// The node behind an id.
    ///
    /// # Panics
    /// If `id` does not belong to this graph.
    #[must_use]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// Iterates over every node of this graph and of all nested subgraphs (each graph's nodes in
    /// order; subgraph nodes after their enclosing graph's).
    pub fn walk_nodes(&self) -> impl Iterator<Item = &Node> {
        let mut stack: Vec<&Graph> = vec![self];
        let mut out: Vec<&Node> = Vec::new();
        while let Some(g) = stack.pop() {
            for n in &g.nodes {
                out.push(n);
                for (_, sg) in n.subgraphs.iter().rev() {
                    stack.push(sg);
                }
            }
        }
        out.into_iter()
    }

    /// Calls `f` on every node of this graph and of all nested subgraphs, each node before the
    /// subgraphs it holds: the mutable counterpart of [`Graph::walk_nodes`], for rewrites that
    /// change nodes in place.
    pub fn for_each_node_mut(&mut self, f: &mut dyn FnMut(&mut Node)) {
        for n in &mut self.nodes {
            f(n);
            for (_, sg) in &mut n.subgraphs {
                sg.for_each_node_mut(f);
            }
        }
    }

    /// Count of nodes including those in subgraphs.
    #[must_use]
    pub fn total_nodes(&self) -> usize {
        self.walk_nodes().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Shape};

    #[test]
    fn add_node_sets_producer_and_walk_visits_subgraphs() {
        let mut g = Graph::default();
        let x = g.add_value(Value {
            name: "x".into(),
            ty: TensorType::new(DType::F32, Shape::fixed(&[2])),
            kind: ValueKind::Input,
            producer: None,
        });
        let y = g.add_value(Value {
            name: "y".into(),
            ty: TensorType::default(),
            kind: ValueKind::Intermediate,
            producer: None,
        });
        let mut body = Graph::default();
        body.nodes.push(Node {
            name: "inner".into(),
            op: "Relu".into(),
            domain: String::new(),
            inputs: vec![],
            outputs: vec![],
            attrs: vec![],
            subgraphs: vec![],
            location: None,
            scope: None,
        });
        let n = g.add_node(Node {
            name: "if".into(),
            op: "If".into(),
            domain: String::new(),
            inputs: vec![Some(x)],
            outputs: vec![y],
            attrs: vec![("then_branch".into(), Attr::Graph(0))],
            subgraphs: vec![("then_branch".into(), body)],
            location: None,
            scope: None,
        });
        assert_eq!(g.value(y).producer, Some(n));
        let names: Vec<_> = g.walk_nodes().map(|n| n.name.as_str()).collect();
        assert_eq!(names, vec!["if", "inner"]);
        let mut seen = Vec::new();
        g.for_each_node_mut(&mut |n| {
            seen.push(n.name.clone());
            n.name.push('!');
        });
        assert_eq!(seen, vec!["if", "inner"]);
        let names: Vec<_> = g.walk_nodes().map(|n| n.name.as_str()).collect();
        assert_eq!(names, vec!["if!", "inner!"]);
        assert_eq!(g.node(n).attr("then_branch"), Some(&Attr::Graph(0)));
    }
}
