//! Module paths for tensors an ONNX file names anonymously.
//!
//! torch.onnx's TorchScript exporter (`dynamo=False`) stores each `nn.Linear` weight
//! transposed, `[in, out]`, for a `MatMul`, under a generated name (`onnx::MatMul_1663` in
//! BERT-base). Only the reading node keeps the module path, in its name
//! (`/encoder/layer.0/attention/self/query/MatMul`). The planner classifies such a tensor by
//! that path and takes its layout from the op: `MatMul`'s second input is `[in, out]`;
//! `Gemm`'s is `[out, in]` with `transB = 1`, `[in, out]` without.
//!
//! The dynamo exporter names such tensors `val_N` and its nodes `node_MatMul_50`; the module
//! path is in the node's metadata (`pkg.torch.onnx.name_scopes`), which the importer keeps as
//! [`tpuport_model::Node::scope`].

use std::collections::HashMap;

use tpuport_model::{Attr, Model};

use super::names::Orientation;

/// Where the graph puts an anonymous tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphPath {
    /// Module path, dot-separated (`encoder.layer.0.attention.self.query`).
    pub module: String,
    /// The stored layout.
    pub orientation: Orientation,
}

/// Whether the file gave this tensor a generated name rather than a module path.
#[must_use]
pub fn is_anonymous(name: &str) -> bool {
    name.starts_with("onnx::")
        || name
            .strip_prefix("val_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The module path and layout of every anonymous tensor read as the weight operand of a
/// `MatMul` or `Gemm` whose node name is a `/`-separated module path.
#[must_use]
pub fn graph_paths(model: &Model) -> HashMap<String, GraphPath> {
    let g = &model.graph;
    let mut out = HashMap::new();
    for n in &g.nodes {
        if !n.domain.is_empty() || !matches!(n.op.as_str(), "MatMul" | "Gemm") {
            continue;
        }
        let Some(Some(w)) = n.inputs.get(1) else { continue };
        let name = &g.value(*w).name;
        if !is_anonymous(name) || out.contains_key(name) {
            continue;
        }
        let Some(module) = n.scope.clone().or_else(|| module_of(&n.name)) else { continue };
        let orientation = match (n.op.as_str(), n.attr("transB")) {
            ("Gemm", Some(Attr::Int(1))) => Orientation::OutIn,
            _ => Orientation::InOut,
        };
        out.insert(name.clone(), GraphPath { module, orientation });
    }
    out
}

/// Tensors whose every reader in the graph is a `Gather` that looks rows up in them (input
/// 0): embeddings no head multiplies by. BERT's `BertModel` export reads
/// `embeddings.word_embeddings.weight` only so; GPT-2's reads `transformer.wte.weight` so too,
/// but its head multiplies by a transposed copy (TorchScript) or by `lm_head.weight` (dynamo).
#[must_use]
pub fn lookup_only(model: &Model) -> std::collections::HashSet<String> {
    let g = &model.graph;
    // Per value: (read by a row lookup, read otherwise).
    let mut reads: HashMap<tpuport_model::ValueId, (bool, bool)> = HashMap::new();
    let mut captured = std::collections::HashSet::new();
    for n in &g.nodes {
        for (i, v) in n.inputs.iter().enumerate() {
            let Some(v) = v else { continue };
            let e = reads.entry(*v).or_default();
            if n.domain.is_empty() && n.op == "Gather" && i == 0 {
                e.0 = true;
            } else {
                e.1 = true;
            }
        }
        // A subgraph reading the tensor (If/Loop bodies capture outer values by name) counts
        // as another use.
        for (_, sg) in &n.subgraphs {
            for m in &sg.nodes {
                for v in m.inputs.iter().flatten() {
                    if let Some(x) = sg.values.get(v.0 as usize) {
                        captured.insert(x.name.clone());
                    }
                }
            }
        }
    }
    reads
        .into_iter()
        .filter(|(_, (lookup, other))| *lookup && !*other)
        .map(|(v, _)| g.value(v).name.clone())
        .filter(|name| !captured.contains(name))
        .collect()
}

/// `/encoder/layer.0/attention/self/query/MatMul` → `encoder.layer.0.attention.self.query`.
fn module_of(node: &str) -> Option<String> {
    let rest = node.strip_prefix('/')?;
    let (path, _op) = rest.rsplit_once('/')?;
    let module = path.replace('/', ".");
    (!module.is_empty() && !module.contains("::")).then_some(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_become_module_paths() {
        assert_eq!(
            module_of("/encoder/layer.0/attention/self/query/MatMul").as_deref(),
            Some("encoder.layer.0.attention.self.query")
        );
        assert_eq!(module_of("/lm_head/MatMul").as_deref(), Some("lm_head"));
        assert_eq!(module_of("MatMul_12"), None);
        assert_eq!(module_of("/MatMul"), None);
        assert_eq!(module_of("node_MatMul_50"), None);
    }
}
