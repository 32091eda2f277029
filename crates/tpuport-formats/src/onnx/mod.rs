//! ONNX importer: `ModelProto` files from torch.onnx (both exporters), tf2onnx, keras2onnx and
//! hand-built graphs.
//!
//! The file is memory-mapped and decoded with hand-declared prost messages ([`proto`]);
//! `raw_data` decodes as zero-copy slices of the mapping, so large initializers become
//! [`tpuport_model::WeightData::Mapped`] ranges of the file and nothing is copied. External
//! data is mapped the same way (one mapping per data file). The graph is validated (every
//! name resolves, no value produced twice, no cycle, bounded nesting), sorted topologically,
//! and shapes are inferred ([`infer_shapes`]) after binding the [`ImportOptions`] dimensions.
//! Unknown ops are kept as nodes; nodes whose shapes cannot be inferred become warnings.

pub mod dtype;
pub mod host;
pub mod proto;
pub mod shape_infer;

mod attrs;
mod external;
mod graph;
mod meta;
mod pb_tensor;
mod prescan;
mod tensor;
mod types;

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use prost::Message;
use prost::bytes::Bytes;
use tpuport_model::{Attr, Graph, Model, ModelFormat, NoteLevel};

pub use pb_tensor::read_tensor_pb;
pub use shape_infer::{InferReport, infer_shapes};

use crate::{FormatError, ImportOptions, Importer};

use self::graph::Converter;
use self::proto::{FunctionProto, GraphProto, ModelProto, ValueInfoProto};
use self::tensor::TensorReader;

/// Importer for ONNX `ModelProto` files.
#[derive(Debug)]
pub struct OnnxImporter;

impl Importer for OnnxImporter {
    fn name(&self) -> &'static str {
        "onnx"
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx")) {
            return true;
        }
        // `ir_version` (field 1, varint, 1..=15) followed by producer_name (2), producer
        // version (3), domain (4), graph (7) or opset_import (8).
        matches!(head, [0x08, 1..=15, 0x12 | 0x1a | 0x22 | 0x3a | 0x42, ..])
    }

    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
        let file = File::open(path).map_err(|e| FormatError::io(path, e))?;
        let map = Arc::new(external::map_file(&file).map_err(|e| FormatError::io(path, e))?);
        prescan::check(&map, opts.limits.max_items).map_err(|n| {
            FormatError::invalid(
                path,
                format!("more than {n} nodes, attributes, tensors and values"),
            )
        })?;
        let proto = decode(path, &map)?;
        let mut model = convert(path, map, &proto, opts)?;
        let report = infer_shapes(&mut model, opts);
        model.notes.extend(report.notes);
        Ok(model)
    }
}

/// A mapping as a `Bytes` owner.
struct MapOwner(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for MapOwner {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn decode(path: &Path, map: &Arc<memmap2::Mmap>) -> Result<ModelProto, FormatError> {
    if map.is_empty() {
        return Err(FormatError::invalid(path, "file is empty"));
    }
    let bytes = Bytes::from_owner(MapOwner(Arc::clone(map)));
    let m = ModelProto::decode(bytes).map_err(|e| {
        let msg = e.to_string().replace('\n', " ");
        FormatError::invalid(
            path,
            format!("not a valid ONNX protobuf (truncated or corrupt): {msg}"),
        )
    })?;
    if m.graph.is_none() {
        return Err(FormatError::invalid(path, "ModelProto has no graph (not an ONNX model?)"));
    }
    Ok(m)
}

/// Converts a decoded model (no shape inference).
fn convert(
    path: &Path,
    map: Arc<memmap2::Mmap>,
    proto: &ModelProto,
    opts: &ImportOptions,
) -> Result<Model, FormatError> {
    let reader = TensorReader::new(path, map, opts.limits.clone());
    let mut cx = Converter::new(reader);
    let gp = proto
        .graph
        .as_ref()
        .ok_or_else(|| FormatError::invalid(path, "ModelProto has no graph"))?;
    let graph = cx.graph(gp, &[], 0)?;
    let mut functions = Vec::with_capacity(proto.functions.len());
    let mut seen: HashMap<String, ()> = HashMap::new();
    for f in &proto.functions {
        let g = function(&mut cx, f)?;
        if seen.insert(g.name.clone(), ()).is_some() {
            return Err(FormatError::invalid(
                path,
                format!("function '{}' is defined twice", g.name),
            ));
        }
        functions.push(g);
    }
    let mut model = Model::empty(ModelFormat::Onnx);
    model.metadata = meta::metadata(proto, &graph);
    model.graph = graph;
    model.functions = functions;
    if proto.ir_version < 4 {
        model.note(
            NoteLevel::Info,
            "onnx-ir3",
            "IR version < 4: initializers listed as graph inputs were not counted as inputs",
        );
    }
    model.notes.append(&mut cx.notes);
    model.weights = cx.weights;
    Ok(model)
}

/// The name under which a model-local function is stored: `domain::name`, with `:overload`
/// appended when the function has one.
#[must_use]
pub fn function_key(domain: &str, name: &str, overload: &str) -> String {
    if overload.is_empty() {
        format!("{domain}::{name}")
    } else {
        format!("{domain}::{name}:{overload}")
    }
}

fn function(cx: &mut Converter, f: &FunctionProto) -> Result<Graph, FormatError> {
    let key = function_key(&f.domain, &f.name, &f.overload);
    let typed = |n: &String| ValueInfoProto {
        name: n.clone(),
        r#type: f.value_info.iter().find(|v| &v.name == n).and_then(|v| v.r#type.clone()),
        doc_string: String::new(),
    };
    let gp = GraphProto {
        node: f.node.clone(),
        name: key.clone(),
        input: f.input.iter().map(typed).collect(),
        output: f.output.iter().map(typed).collect(),
        value_info: f.value_info.clone(),
        ..GraphProto::default()
    };
    let mut g = cx.graph(&gp, &[], 0).map_err(|e| match e {
        FormatError::Invalid { path, what } => {
            FormatError::Invalid { path, what: format!("function '{key}': {what}") }
        }
        other => other,
    })?;
    g.attrs.push(("domain".to_owned(), Attr::Str(f.domain.clone())));
    if !f.attribute.is_empty() {
        g.attrs.push(("attributes".to_owned(), Attr::Strs(f.attribute.clone())));
    }
    for a in &f.attribute_proto {
        let v = cx.attr(a, &key, &key)?;
        g.attrs.push((a.name.clone(), v));
    }
    Ok(g)
}
