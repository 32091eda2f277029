//! Model metadata and the producing framework / exporter guess.
//!
//! Signals, checked against files written by torch 2.15 (both exporters) and documented in
//! the fixture tests:
//! - `producer_name` is `pytorch` for both torch exporters. The dynamo exporter (torch.export
//!   with onnxscript) imports an opset domain starting with `pkg.onnxscript` or `pkg.torch`, or
//!   writes `pkg.torch.*` keys into `metadata_props` (model or node level); its value names are
//!   onnxscript-style (`val_37`, `linear`, `conv2d_1`). The legacy TorchScript exporter names
//!   values `onnx::MatMul_123` and `/layer1/layer1.0/conv1/Conv_output_0`, nodes
//!   `/layer1/layer1.0/conv1/Conv`, and imports only the default domain.
//! - `tf2onnx` → TensorFlow (a Keras model converted by tf2onnx says `tf2onnx` too),
//!   `keras2onnx` → Keras, `skl2onnx` / `onnxmltools` / `OnnxMLTools` → other.

use tpuport_model::{Framework, Graph, Metadata};

use super::proto::ModelProto;

/// Metadata of a decoded model; `graph` is the converted main graph (value names are one of
/// the exporter signals).
pub(crate) fn metadata(m: &ModelProto, graph: &Graph) -> Metadata {
    let opsets: Vec<(String, i64)> =
        m.opset_import.iter().map(|o| (o.domain.clone(), o.version)).collect();
    let properties: Vec<(String, String)> =
        m.metadata_props.iter().map(|p| (p.key.clone(), p.value.clone())).collect();
    let (framework, exporter) = guess(m, graph);
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut doc = |at: String, text: &str| {
        if !text.trim().is_empty() {
            docs.push((at, text.to_owned()));
        }
    };
    doc("model".to_owned(), &m.doc_string);
    if let Some(g) = &m.graph {
        doc("graph".to_owned(), &g.doc_string);
        for i in &g.input {
            doc(format!("input {}", i.name), &i.doc_string);
        }
    }
    Metadata {
        producer: nonempty(&m.producer_name),
        producer_version: nonempty(&m.producer_version),
        ir_version: Some(m.ir_version),
        opsets,
        stablehlo_version: None,
        framework,
        exporter,
        properties,
        docs,
        llm: None,
    }
}

fn guess(m: &ModelProto, graph: &Graph) -> (Framework, Option<String>) {
    let producer = m.producer_name.to_ascii_lowercase();
    match producer.as_str() {
        "pytorch" => (Framework::PyTorch, Some(torch_exporter(m, graph).to_owned())),
        "tf2onnx" => (Framework::TensorFlow, Some("tf2onnx".to_owned())),
        "keras2onnx" => (Framework::Keras, Some("keras2onnx".to_owned())),
        "skl2onnx" | "onnxmltools" => (Framework::Other, Some(m.producer_name.clone())),
        "" => (Framework::Unknown, None),
        _ => (Framework::Unknown, Some(m.producer_name.clone())),
    }
}

fn torch_exporter(m: &ModelProto, graph: &Graph) -> &'static str {
    const DYNAMO: &str = "torch.onnx (dynamo)";
    const LEGACY: &str = "torch.onnx (TorchScript)";
    let pkg_domain = m
        .opset_import
        .iter()
        .any(|o| o.domain.starts_with("pkg.onnxscript") || o.domain.starts_with("pkg.torch"));
    let pkg_meta = m.metadata_props.iter().any(|p| p.key.starts_with("pkg.torch"))
        || m.graph.as_ref().is_some_and(|g| {
            g.node
                .iter()
                .take(64)
                .any(|n| n.metadata_props.iter().any(|p| p.key.starts_with("pkg.torch")))
        });
    if pkg_domain || pkg_meta {
        return DYNAMO;
    }
    let (mut legacy, mut total) = (0usize, 0usize);
    for v in graph.values.iter().filter(|v| !v.name.is_empty()) {
        total += 1;
        if v.name.starts_with("onnx::") || v.name.starts_with('/') {
            legacy += 1;
        }
    }
    let node_paths = graph.nodes.iter().filter(|n| n.name.starts_with('/')).count();
    if legacy * 4 >= total.max(1) || node_paths * 2 >= graph.nodes.len().max(1) {
        LEGACY
    } else {
        DYNAMO
    }
}
