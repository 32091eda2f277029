//! ONNX importer tests on models built in Rust with the crate's prost messages (no Python).
#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use prost::Message;
use tpuport_analysis::inventory::duplicate_tensors;
use tpuport_formats::onnx::proto::tensor_shape_proto::{Dimension, dimension};
use tpuport_formats::onnx::proto::type_proto::{self, Tensor};
use tpuport_formats::onnx::proto::{
    AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    SparseTensorProto, StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto, attribute_type as at,
};
use tpuport_formats::onnx::{OnnxImporter, infer_shapes};
use tpuport_formats::{FormatError, ImportOptions, Importer, Limits};
use tpuport_model::{Attr, DType, Dim, Model, Shape, ValueKind, WeightData};

const F32: i32 = 1;
const I64: i32 = 7;

enum D {
    K(i64),
    S(&'static str),
}

fn vi(name: &str, elem: i32, dims: &[D]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                D::K(v) => dimension::Value::DimValue(*v),
                D::S(s) => dimension::Value::DimParam((*s).to_owned()),
            }),
            denotation: String::new(),
        })
        .collect();
    ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(Tensor {
                elem_type: elem,
                shape: Some(TensorShapeProto { dim }),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| (*s).to_owned()).collect(),
        output: outputs.iter().map(|s| (*s).to_owned()).collect(),
        name: name.to_owned(),
        op_type: op.to_owned(),
        ..NodeProto::default()
    }
}

fn with(mut n: NodeProto, a: AttributeProto) -> NodeProto {
    n.attribute.push(a);
    n
}

fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.to_owned(),
        r#type: at::INTS,
        ints: v.to_vec(),
        ..AttributeProto::default()
    }
}

fn attr_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto { name: name.to_owned(), r#type: at::INT, i: v, ..AttributeProto::default() }
}

fn attr_graph(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.to_owned(),
        r#type: at::GRAPH,
        g: Some(g),
        ..AttributeProto::default()
    }
}

fn raw_f32(name: &str, dims: &[i64], vals: &[f32]) -> TensorProto {
    TensorProto {
        name: name.to_owned(),
        dims: dims.to_vec(),
        data_type: F32,
        raw_data: vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>().into(),
        ..TensorProto::default()
    }
}

fn ints(name: &str, vals: &[i64]) -> TensorProto {
    TensorProto {
        name: name.to_owned(),
        dims: vec![vals.len() as i64],
        data_type: I64,
        int64_data: vals.to_vec(),
        ..TensorProto::default()
    }
}

fn model(graph: GraphProto) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        producer_name: "tpuport-tests".to_owned(),
        graph: Some(graph),
        ..ModelProto::default()
    }
}

fn graph(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
) -> GraphProto {
    GraphProto {
        node: nodes,
        name: "main".to_owned(),
        input: inputs,
        output: outputs,
        ..GraphProto::default()
    }
}

fn out(name: &str) -> ValueInfoProto {
    ValueInfoProto { name: name.to_owned(), ..ValueInfoProto::default() }
}

fn write(dir: &Path, name: &str, m: &ModelProto) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, m.encode_to_vec()).unwrap();
    p
}

fn import(p: &Path) -> Result<Model, FormatError> {
    OnnxImporter.import(p, &ImportOptions::default())
}

fn import_batch(p: &Path, batch: u64) -> Model {
    OnnxImporter
        .import(p, &ImportOptions { batch: Some(batch), ..ImportOptions::default() })
        .unwrap()
}

fn err(p: &Path) -> String {
    let e = import(p).unwrap_err().to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(e.contains(&p.display().to_string()), "names the file: {e}");
    e
}

fn shape_of(m: &Model, name: &str) -> Shape {
    m.graph.values.iter().find(|v| v.name == name).and_then(|v| v.ty.shape.clone()).unwrap()
}

#[test]
fn initializers_raw_typed_and_ir3_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let w: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let mut g = graph(
        vec![node("MatMul", "mm", &["x", "w"], &["y"]), node("Add", "add", &["y", "b"], &["z"])],
        // IR 3: initializers repeated as inputs.
        vec![
            vi("x", F32, &[D::K(2), D::K(8)]),
            vi("w", F32, &[D::K(8), D::K(16)]),
            vi("b", F32, &[D::K(16)]),
        ],
        vec![out("z")],
    );
    let b = TensorProto {
        name: "b".into(),
        dims: vec![16],
        data_type: F32,
        float_data: vec![0.5; 16],
        ..TensorProto::default()
    };
    g.initializer = vec![raw_f32("w", &[8, 16], &w), b];
    let mut m = model(g);
    m.ir_version = 3;
    let p = write(dir.path(), "m.onnx", &m);
    let model = import(&p).unwrap();
    assert_eq!(model.graph.inputs.len(), 1, "initializers listed as inputs are not inputs");
    let wt = model.weights.by_name("w").unwrap();
    assert!(matches!(wt.data, WeightData::Mapped { .. }), "{:?}", wt.data);
    assert_eq!(&wt.bytes().unwrap()[..8], &[0, 0, 0, 0, 0, 0, 0x80, 0x3f]);
    let bt = model.weights.by_name("b").unwrap();
    assert_eq!(bt.bytes().unwrap().len(), 64);
    assert_eq!(&bt.bytes().unwrap()[..4], &0.5f32.to_le_bytes());
    assert_eq!(shape_of(&model, "z"), Shape::fixed(&[2, 16]));
    assert_eq!(model.metadata.ir_version, Some(3));
    assert_eq!(model.metadata.producer.as_deref(), Some("tpuport-tests"));
    assert!(model.notes.iter().any(|n| n.code == "onnx-ir3"));
}

#[test]
fn data_shorter_than_shape_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = graph(vec![node("Relu", "r", &["w"], &["y"])], vec![], vec![out("y")]);
    g.initializer = vec![raw_f32("w", &[4, 4], &[1.0; 15])];
    let e = err(&write(dir.path(), "short.onnx", &model(g.clone())));
    assert!(
        e.contains("initializer 'w'") && e.contains("60 bytes") && e.contains("needs 64"),
        "{e}"
    );
    g.initializer = vec![TensorProto {
        name: "w".into(),
        dims: vec![3],
        data_type: F32,
        float_data: vec![1.0; 2],
        ..TensorProto::default()
    }];
    let e = err(&write(dir.path(), "typed.onnx", &model(g)));
    assert!(e.contains("float_data holds 2 values"), "{e}");
}

#[test]
fn hostile_dims_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = graph(vec![node("Relu", "r", &["w"], &["y"])], vec![], vec![out("y")]);
    g.initializer = vec![raw_f32("w", &[1 << 40, 1 << 40], &[1.0; 4])];
    let e = err(&write(dir.path(), "huge.onnx", &model(g.clone())));
    assert!(e.contains("initializer 'w'") && e.contains("64 bits"), "{e}");
    g.initializer = vec![raw_f32("w", &[1 << 20, 1 << 20], &[1.0; 4])];
    let e = err(&write(dir.path(), "big.onnx", &model(g.clone())));
    assert!(e.contains("raw_data holds 16 bytes"), "{e}");
    g.initializer = vec![raw_f32("w", &[-4], &[1.0; 4])];
    let e = err(&write(dir.path(), "neg.onnx", &model(g)));
    assert!(e.contains("negative"), "{e}");
}

#[test]
fn external_data_mapped_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let vals: Vec<u8> = (0..100u8).collect();
    std::fs::write(dir.path().join("w.bin"), &vals).unwrap();
    let ext = |loc: &str, offset: &str, length: &str| TensorProto {
        name: "w".into(),
        dims: vec![4, 4],
        data_type: F32,
        data_location: 1,
        external_data: vec![
            StringStringEntryProto { key: "location".into(), value: loc.into() },
            StringStringEntryProto { key: "offset".into(), value: offset.into() },
            StringStringEntryProto { key: "length".into(), value: length.into() },
        ],
        ..TensorProto::default()
    };
    let mk = |t: TensorProto| {
        let mut g = graph(vec![node("Relu", "r", &["w"], &["y"])], vec![], vec![out("y")]);
        g.initializer = vec![t];
        model(g)
    };
    let p = write(dir.path(), "ok.onnx", &mk(ext("w.bin", "16", "64")));
    let m = import(&p).unwrap();
    let w = m.weights.by_name("w").unwrap();
    assert!(matches!(w.data, WeightData::Mapped { offset: 16, len: 64, .. }), "{:?}", w.data);
    assert_eq!(w.bytes().unwrap()[0], 16);
    assert_eq!(shape_of(&m, "y"), Shape::fixed(&[4, 4]));

    let e = err(&write(dir.path(), "trav.onnx", &mk(ext("../w.bin", "0", "64"))));
    assert!(e.contains("leaves the model's directory"), "{e}");
    let e = err(&write(dir.path(), "abs.onnx", &mk(ext("/etc/passwd", "0", "64"))));
    assert!(e.contains("leaves the model's directory"), "{e}");
    let e = err(&write(dir.path(), "eof.onnx", &mk(ext("w.bin", "64", "64"))));
    assert!(e.contains("past the end") && e.contains("100 bytes"), "{e}");
    let e = err(&write(dir.path(), "len.onnx", &mk(ext("w.bin", "0", "32"))));
    assert!(e.contains("holds 32 bytes") && e.contains("need 64"), "{e}");
    let e = err(&write(dir.path(), "missing.onnx", &mk(ext("nope.bin", "0", "64"))));
    assert!(e.contains("nope.bin"), "{e}");
}

#[test]
fn if_subgraph_captures_outer_values() {
    let dir = tempfile::tempdir().unwrap();
    let then_b =
        graph(vec![node("Relu", "t_relu", &["x"], &["t_out"])], vec![], vec![out("t_out")]);
    let else_b = graph(vec![node("Neg", "e_neg", &["x"], &["e_out"])], vec![], vec![out("e_out")]);
    let iff = with(
        with(node("If", "if", &["c"], &["y"]), attr_graph("then_branch", then_b)),
        attr_graph("else_branch", else_b),
    );
    let g = graph(
        vec![iff, node("Sigmoid", "s", &["x0"], &["x"])],
        vec![vi("c", 9, &[]), vi("x0", F32, &[D::S("batch"), D::K(3)])],
        vec![out("y")],
    );
    let p = write(dir.path(), "if.onnx", &model(g));
    let m = import_batch(&p, 2);
    // The If reads `x` through its branches, so it is sorted after the Sigmoid producing it.
    assert_eq!(m.graph.nodes[0].op, "Sigmoid");
    let iff = &m.graph.nodes[1];
    assert_eq!(iff.subgraphs.len(), 2);
    assert_eq!(iff.attr("then_branch"), Some(&Attr::Graph(0)));
    let then_g = &iff.subgraphs[0].1;
    let x = then_g.values.iter().find(|v| v.name == "x").unwrap();
    assert_eq!(x.kind, ValueKind::Outer);
    assert_eq!(shape_of(&m, "y"), Shape::fixed(&[2, 3]));
    assert_eq!(then_g.value(then_g.outputs[0]).ty.shape, Some(Shape::fixed(&[2, 3])));
}

#[test]
fn nesting_limit_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let mut inner = graph(vec![node("Relu", "r", &["x"], &["o0"])], vec![], vec![out("o0")]);
    for d in 1..4 {
        let name = format!("o{d}");
        let n = with(
            with(
                node("If", &format!("if{d}"), &["c"], &[&name]),
                attr_graph("then_branch", inner.clone()),
            ),
            attr_graph("else_branch", inner),
        );
        inner = graph(vec![n], vec![], vec![out(&name)]);
    }
    let mut g = inner;
    g.input = vec![vi("c", 9, &[]), vi("x", F32, &[D::K(2)])];
    let p = write(dir.path(), "deep.onnx", &model(g));
    assert!(import(&p).is_ok());
    let opts = ImportOptions {
        limits: Limits { max_nesting: 2, ..Limits::default() },
        ..ImportOptions::default()
    };
    let e = OnnxImporter.import(&p, &opts).unwrap_err().to_string();
    assert!(e.contains("nests deeper than 2"), "{e}");
}

#[test]
fn model_local_function_is_stored_and_inferred() {
    let dir = tempfile::tempdir().unwrap();
    let f = FunctionProto {
        name: "Double".into(),
        domain: "custom".into(),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![node("Add", "add", &["a", "a"], &["b"])],
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
        ..FunctionProto::default()
    };
    let mut call = node("Double", "call", &["x"], &["y"]);
    call.domain = "custom".into();
    let mut m = model(graph(vec![call], vec![vi("x", F32, &[D::K(5), D::K(7)])], vec![out("y")]));
    m.functions = vec![f];
    m.opset_import.push(OperatorSetIdProto { domain: "custom".into(), version: 1 });
    let p = write(dir.path(), "f.onnx", &m);
    let model = import(&p).unwrap();
    let f = model.function("custom::Double").unwrap();
    assert_eq!(f.nodes[0].op, "Add");
    assert_eq!(f.inputs.len(), 1);
    assert_eq!(model.graph.nodes[0].qualified_op(), "custom::Double");
    assert_eq!(shape_of(&model, "y"), Shape::fixed(&[5, 7]));
}

#[test]
fn symbolic_dims_bound_by_batch_or_left_symbolic() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        vec![node("Relu", "r", &["x"], &["y"]), node("Transpose", "t", &["y"], &["z"])],
        vec![vi("x", F32, &[D::S("batch"), D::K(4)])],
        vec![out("z")],
    );
    let p = write(dir.path(), "sym.onnx", &model(g));
    let m = import(&p).unwrap();
    assert_eq!(shape_of(&m, "z"), Shape(vec![Dim::Known(4), Dim::Sym("batch".into())]));
    assert!(
        m.notes.iter().any(|n| n.code == "unbound-dims" && n.message.contains("batch")),
        "{:?}",
        m.notes
    );
    let bound = import_batch(&p, 8);
    assert_eq!(shape_of(&bound, "z"), Shape::fixed(&[4, 8]));
    // Re-binding a clone of the symbolic import.
    let mut again = m.clone();
    let r = infer_shapes(
        &mut again,
        &ImportOptions {
            dims: BTreeMap::from([("batch".to_owned(), 3)]),
            ..ImportOptions::default()
        },
    );
    assert_eq!(shape_of(&again, "z"), Shape::fixed(&[4, 3]));
    assert_eq!((r.node_outputs, r.static_outputs), (2, 2));
}

#[test]
fn reshape_through_folded_shape_chain() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = graph(
        vec![
            node("Shape", "shape", &["x"], &["s"]),
            with(node("Gather", "g", &["s", "zero"], &["b"]), attr_int("axis", 0)),
            node("Unsqueeze", "u", &["b", "axes0"], &["b1"]),
            with(node("Concat", "cat", &["b1", "minus1"], &["target"]), attr_int("axis", 0)),
            node("Reshape", "reshape", &["x", "target"], &["y"]),
            node("MatMul", "mm", &["y", "w"], &["z"]),
        ],
        vec![vi("x", F32, &[D::S("N"), D::K(3), D::K(4)])],
        vec![out("z")],
    );
    let zero = TensorProto {
        name: "zero".into(),
        data_type: I64,
        int64_data: vec![0],
        ..TensorProto::default()
    };
    g.initializer =
        vec![zero, ints("axes0", &[0]), ints("minus1", &[-1]), raw_f32("w", &[12, 2], &[0.0; 24])];
    let p = write(dir.path(), "reshape.onnx", &model(g));
    let m = import_batch(&p, 8);
    assert_eq!(shape_of(&m, "target"), Shape::fixed(&[2]));
    assert_eq!(shape_of(&m, "y"), Shape::fixed(&[8, 12]));
    assert_eq!(shape_of(&m, "z"), Shape::fixed(&[8, 2]));
    assert!(!m.notes.iter().any(|n| n.code == "shape-inference"), "{:?}", m.notes);
    // Unbound: the Reshape's rank is still known.
    let m = import(&p).unwrap();
    assert_eq!(shape_of(&m, "y").rank(), 2);
    assert!(
        !m.notes.iter().any(|n| n.code == "shape-inference"),
        "consequences of unbound dims are not warnings: {:?}",
        m.notes
    );
}

#[test]
fn constants_become_weights() {
    let dir = tempfile::tempdir().unwrap();
    let c1 = with(
        node("Constant", "c1", &[], &["shape"]),
        AttributeProto {
            name: "value_ints".into(),
            r#type: at::INTS,
            ints: vec![2, 6],
            ..AttributeProto::default()
        },
    );
    let tensor = raw_f32("", &[2, 6], &[1.0; 12]);
    let c2 = with(
        node("Constant", "c2", &[], &["bias"]),
        AttributeProto {
            name: "value".into(),
            r#type: at::TENSOR,
            t: Some(tensor),
            ..AttributeProto::default()
        },
    );
    let fill = TensorProto {
        dims: vec![1],
        data_type: I64,
        int64_data: vec![7],
        ..TensorProto::default()
    };
    let cos = with(
        node("ConstantOfShape", "cos", &["shape"], &["sevens"]),
        AttributeProto {
            name: "value".into(),
            r#type: at::TENSOR,
            t: Some(fill),
            ..AttributeProto::default()
        },
    );
    let g = graph(
        vec![
            c1,
            c2,
            cos,
            node("Reshape", "r", &["x", "shape"], &["y"]),
            node("Add", "a", &["y", "bias"], &["z"]),
        ],
        vec![vi("x", F32, &[D::K(3), D::K(4)])],
        vec![out("z"), out("sevens")],
    );
    let p = write(dir.path(), "const.onnx", &model(g));
    let m = import(&p).unwrap();
    let c1 = &m.graph.nodes[0];
    let Some(Attr::Weight(id)) = c1.attr("value") else { panic!("{:?}", c1.attrs) };
    let w = m.weights.get(*id);
    assert_eq!((w.name.as_str(), w.dtype, w.shape.clone()), ("shape", DType::I64, vec![2]));
    assert_eq!(m.graph.nodes[2].op, "ConstantOfShape");
    assert_eq!(
        m.graph.values.iter().find(|v| v.name == "sevens").unwrap().ty.dtype,
        Some(DType::I64)
    );
    assert_eq!(shape_of(&m, "sevens"), Shape::fixed(&[2, 6]));
    assert_eq!(shape_of(&m, "z"), Shape::fixed(&[2, 6]));
}

#[test]
fn cycle_is_rejected_and_unsorted_order_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        vec![node("Add", "A", &["x", "c"], &["b"]), node("Relu", "B", &["b"], &["c"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("c")],
    );
    let e = err(&write(dir.path(), "cycle.onnx", &model(g)));
    assert!(
        e.contains("graph has a cycle through node 'A'") || e.contains("through node 'B'"),
        "{e}"
    );
    let g = graph(
        vec![node("Relu", "second", &["b"], &["c"]), node("Neg", "first", &["x"], &["b"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("c")],
    );
    let m = import(&write(dir.path(), "unsorted.onnx", &model(g))).unwrap();
    let names: Vec<_> = m.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    assert_eq!(shape_of(&m, "c"), Shape::fixed(&[2]));
}

#[test]
fn dangling_input_and_duplicate_outputs_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        vec![node("Add", "Add_3", &["x", "foo"], &["y"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("y")],
    );
    let e = err(&write(dir.path(), "dangling.onnx", &model(g)));
    assert!(
        e.contains("node 'Add_3' input 'foo' is produced by no node, initializer or graph input"),
        "{e}"
    );
    let g = graph(
        vec![node("Relu", "r1", &["x"], &["y"]), node("Neg", "r2", &["x"], &["y"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("y")],
    );
    let e = err(&write(dir.path(), "dup.onnx", &model(g)));
    assert!(
        e.contains("value 'y' is produced twice") && e.contains("'r1'") && e.contains("'r2'"),
        "{e}"
    );
    let g = graph(
        vec![node("Relu", "r", &["x"], &["y"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("nothing")],
    );
    let e = err(&write(dir.path(), "out.onnx", &model(g)));
    assert!(e.contains("graph output 'nothing'"), "{e}");
}

#[test]
fn truncated_and_garbage_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = graph(vec![node("Relu", "r", &["w"], &["y"])], vec![], vec![out("y")]);
    g.initializer = vec![raw_f32("w", &[64], &[1.0; 64])];
    let bytes = model(g).encode_to_vec();
    let p = dir.path().join("trunc.onnx");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let e = err(&p);
    assert!(e.contains("truncated or corrupt"), "{e}");
    let p = dir.path().join("garbage.onnx");
    std::fs::write(&p, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage").unwrap();
    assert!(err(&p).contains("not a valid ONNX protobuf"));
    let p = dir.path().join("empty.onnx");
    std::fs::write(&p, b"").unwrap();
    assert!(err(&p).contains("empty"));
    let p = dir.path().join("text.onnx");
    std::fs::write(&p, b"hello").unwrap();
    let _ = err(&p);
}

#[test]
fn unknown_op_is_kept_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = node("FancyOp", "fancy", &["x"], &["y"]);
    n.domain = "com.example".into();
    let g = graph(
        vec![n, node("Relu", "r", &["y"], &["z"])],
        vec![vi("x", F32, &[D::K(2)])],
        vec![out("z")],
    );
    let m = import(&write(dir.path(), "unknown.onnx", &model(g))).unwrap();
    assert_eq!(m.graph.nodes[0].qualified_op(), "com.example::FancyOp");
    let warns: Vec<_> = m.notes.iter().filter(|n| n.code == "shape-inference").collect();
    assert_eq!(warns.len(), 1, "only the root cause: {warns:?}");
    assert!(
        warns[0].message.contains("fancy") && warns[0].message.contains("FancyOp"),
        "{warns:?}"
    );
}

#[test]
fn sparse_initializer_is_densified() {
    let dir = tempfile::tempdir().unwrap();
    let values = raw_f32("sp", &[2], &[3.0, 4.0]);
    let indices = ints("", &[1, 5]);
    let mut g = graph(vec![node("Relu", "r", &["sp"], &["y"])], vec![], vec![out("y")]);
    g.sparse_initializer =
        vec![SparseTensorProto { values: Some(values), indices: Some(indices), dims: vec![2, 3] }];
    let m = import(&write(dir.path(), "sparse.onnx", &model(g))).unwrap();
    let w = m.weights.by_name("sp").unwrap();
    let b = w.bytes().unwrap();
    let f: Vec<f32> = b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(f, [0.0, 3.0, 0.0, 0.0, 0.0, 4.0]);
    assert_eq!(shape_of(&m, "y"), Shape::fixed(&[2, 3]));
}

#[test]
fn duplicate_and_transposed_initializers_are_grouped() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<f32> = (0..6).map(|i| i as f32).collect();
    // a is 2x3; at is its transpose (3x2).
    let at: Vec<f32> = vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0];
    let mut g = graph(
        vec![
            node("Add", "s", &["a", "a2"], &["y"]),
            node("MatMul", "m", &["y", "at"], &["z"]),
            node("Add", "o", &["z", "other"], &["q"]),
        ],
        vec![],
        vec![out("q")],
    );
    g.initializer = vec![
        raw_f32("a", &[2, 3], &a),
        raw_f32("a2", &[2, 3], &a),
        raw_f32("at", &[3, 2], &at),
        raw_f32("other", &[2, 2], &[1.0; 4]),
    ];
    let m = import(&write(dir.path(), "dup.onnx", &model(g))).unwrap();
    let groups = duplicate_tensors(&m, 1);
    assert_eq!(groups.len(), 1, "{groups:?}");
    let mut names: Vec<&str> = groups[0].names.iter().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["a", "a2", "at"]);
}

#[test]
fn sniff_by_extension_and_content() {
    let m = model(graph(vec![], vec![], vec![])).encode_to_vec();
    assert!(OnnxImporter.sniff(Path::new("x.bin"), &m[..m.len().min(64)]));
    assert!(OnnxImporter.sniff(Path::new("x.ONNX"), b""));
    assert!(!OnnxImporter.sniff(Path::new("x.bin"), b"PK\x03\x04"));
}

#[test]
fn conv_pool_gemm_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let conv = with(
        with(
            with(node("Conv", "conv", &["x", "w"], &["c"]), attr_ints("strides", &[2, 2])),
            attr_ints("pads", &[3, 3, 3, 3]),
        ),
        attr_ints("kernel_shape", &[7, 7]),
    );
    let pool = with(
        with(
            with(node("MaxPool", "pool", &["c"], &["p"]), attr_ints("kernel_shape", &[3, 3])),
            attr_ints("strides", &[2, 2]),
        ),
        attr_ints("pads", &[1, 1, 1, 1]),
    );
    let mut g = graph(
        vec![
            conv,
            pool,
            node("GlobalAveragePool", "gap", &["p"], &["g"]),
            with(node("Flatten", "f", &["g"], &["fl"]), attr_int("axis", 1)),
            with(node("Gemm", "fc", &["fl", "fcw", "fcb"], &["logits"]), attr_int("transB", 1)),
            with(node("Softmax", "sm", &["logits"], &["prob"]), attr_int("axis", -1)),
        ],
        vec![vi("x", F32, &[D::S("batch"), D::K(3), D::K(224), D::K(224)])],
        vec![out("prob")],
    );
    g.initializer = vec![
        TensorProto {
            name: "w".into(),
            dims: vec![64, 3, 7, 7],
            data_type: F32,
            float_data: vec![0.0; 64 * 3 * 49],
            ..TensorProto::default()
        },
        raw_f32("fcw", &[10, 64], &[0.0; 640]),
        raw_f32("fcb", &[10], &[0.0; 10]),
    ];
    let m = import_batch(&write(dir.path(), "cnn.onnx", &model(g)), 4);
    assert_eq!(shape_of(&m, "c"), Shape::fixed(&[4, 64, 112, 112]));
    assert_eq!(shape_of(&m, "p"), Shape::fixed(&[4, 64, 56, 56]));
    assert_eq!(shape_of(&m, "fl"), Shape::fixed(&[4, 64]));
    assert_eq!(shape_of(&m, "prob"), Shape::fixed(&[4, 10]));
}

#[test]
fn loop_with_fixed_trip_count() {
    let dir = tempfile::tempdir().unwrap();
    let body = graph(
        vec![
            node("Identity", "c", &["cond_in"], &["cond_out"]),
            node("Add", "add", &["s_in", "w"], &["s_out"]),
            node("Identity", "scan", &["s_in"], &["scan_out"]),
        ],
        vec![vi("i", I64, &[]), vi("cond_in", 9, &[]), vi("s_in", F32, &[D::K(4)])],
        vec![out("cond_out"), out("s_out"), out("scan_out")],
    );
    let mut g = graph(
        vec![with(
            node("Loop", "loop", &["M", "cond", "s0"], &["s_final", "s_all"]),
            attr_graph("body", body),
        )],
        vec![vi("s0", F32, &[D::K(4)])],
        vec![out("s_final"), out("s_all")],
    );
    let t = TensorProto {
        name: "cond".into(),
        data_type: 9,
        int32_data: vec![1],
        ..TensorProto::default()
    };
    let m = TensorProto {
        name: "M".into(),
        data_type: I64,
        int64_data: vec![5],
        ..TensorProto::default()
    };
    g.initializer = vec![m, t, raw_f32("w", &[4], &[1.0; 4])];
    let model = import(&write(dir.path(), "loop.onnx", &model(g))).unwrap();
    assert_eq!(shape_of(&model, "s_final"), Shape::fixed(&[4]));
    assert_eq!(shape_of(&model, "s_all"), Shape::fixed(&[5, 4]));
    let body = &model.graph.nodes[0].subgraphs[0].1;
    assert_eq!(body.values.iter().find(|v| v.name == "w").unwrap().kind, ValueKind::Outer);
}

#[test]
fn matmul_einsum_slice_split_squeeze_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let split = with(
        with(node("Split", "split", &["x"], &["s0", "s1", "s2"]), attr_int("axis", 1)),
        attr_ints("dummy", &[]),
    );
    let eq = AttributeProto {
        name: "equation".into(),
        r#type: at::STRING,
        s: b"bij,bjk->bik".to_vec(),
        ..AttributeProto::default()
    };
    let mut g = graph(
        vec![
            node("MatMul", "mv", &["x", "v"], &["xv"]),
            node("MatMul", "vm", &["v6", "x"], &["vx"]),
            with(node("Einsum", "ein", &["x", "y"], &["e"]), eq),
            node("Slice", "sl", &["x", "starts", "ends", "axes", "steps"], &["sl"]),
            split,
            node("Squeeze", "sq", &["one"], &["sq"]),
            with(
                with(
                    node("ConvTranspose", "ct", &["img", "ctw"], &["ct"]),
                    attr_ints("strides", &[2, 2]),
                ),
                attr_ints("pads", &[1, 1, 1, 1]),
            ),
            with(node("ReduceMean", "rm", &["x"], &["rm"]), attr_ints("axes", &[-1])),
        ],
        vec![
            vi("x", F32, &[D::K(2), D::K(6), D::K(4)]),
            vi("y", F32, &[D::K(2), D::K(4), D::K(3)]),
            vi("v", F32, &[D::K(4)]),
            vi("v6", F32, &[D::K(6)]),
            vi("one", F32, &[D::K(1), D::K(3), D::K(1)]),
            vi("img", F32, &[D::K(1), D::K(8), D::K(10), D::K(10)]),
        ],
        vec![out("xv"), out("vx"), out("e"), out("sl"), out("s2"), out("sq"), out("ct"), out("rm")],
    );
    g.initializer = vec![
        ints("starts", &[-1, 5]),
        ints("ends", &[-10, 0]),
        ints("axes", &[2, 1]),
        ints("steps", &[-1, -2]),
        raw_f32("ctw", &[8, 4, 4, 4], &[0.0; 512]),
    ];
    let m = import(&write(dir.path(), "ops.onnx", &model(g))).unwrap();
    assert!(!m.notes.iter().any(|n| n.level >= tpuport_model::NoteLevel::Warning), "{:?}", m.notes);
    assert_eq!(shape_of(&m, "xv"), Shape::fixed(&[2, 6]));
    assert_eq!(shape_of(&m, "vx"), Shape::fixed(&[2, 4]));
    assert_eq!(shape_of(&m, "e"), Shape::fixed(&[2, 6, 3]));
    // axis 2: from 3 down to 0 (4 elements), axis 1: 5, 3, 1 (3 elements).
    assert_eq!(shape_of(&m, "sl"), Shape::fixed(&[2, 3, 4]));
    assert_eq!(shape_of(&m, "s2"), Shape::fixed(&[2, 2, 4]));
    assert_eq!(shape_of(&m, "sq"), Shape::fixed(&[3]));
    assert_eq!(shape_of(&m, "ct"), Shape::fixed(&[1, 4, 20, 20]));
    assert_eq!(shape_of(&m, "rm"), Shape::fixed(&[2, 6, 1]));
}

/// Every truncation and a few thousand byte mutations of a small model: errors or models,
/// never a panic.
#[test]
fn mutated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let then_b = graph(vec![node("Relu", "t", &["y"], &["t_out"])], vec![], vec![out("t_out")]);
    let else_b = graph(vec![node("Neg", "e", &["y"], &["e_out"])], vec![], vec![out("e_out")]);
    let mut g = graph(
        vec![
            node("Shape", "shape", &["x"], &["s"]),
            with(node("Gather", "g", &["s", "zero"], &["b"]), attr_int("axis", 0)),
            node("Unsqueeze", "u", &["b", "axes0"], &["b1"]),
            with(node("Concat", "cat", &["b1", "minus1"], &["target"]), attr_int("axis", 0)),
            node("Reshape", "reshape", &["x", "target"], &["y"]),
            with(
                with(node("If", "if", &["c"], &["z"]), attr_graph("then_branch", then_b)),
                attr_graph("else_branch", else_b),
            ),
            with(node("Slice", "sl", &["z", "axes0", "minus1", "axes0"], &["w"]), attr_int("x", 1)),
        ],
        vec![vi("x", F32, &[D::S("N"), D::K(3), D::K(4)]), vi("c", 9, &[])],
        vec![out("w")],
    );
    let zero = TensorProto {
        name: "zero".into(),
        data_type: I64,
        int64_data: vec![0],
        ..TensorProto::default()
    };
    g.initializer = vec![zero, ints("axes0", &[0]), ints("minus1", &[-1])];
    let bytes = model(g).encode_to_vec();
    let p = dir.path().join("m.onnx");
    let opts = ImportOptions { batch: Some(2), ..ImportOptions::default() };
    std::fs::write(&p, &bytes).unwrap();
    assert!(OnnxImporter.import(&p, &opts).is_ok());
    for n in 0..bytes.len() {
        std::fs::write(&p, &bytes[..n]).unwrap();
        let _ = OnnxImporter.import(&p, &opts);
    }
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..1500 {
        let mut b = bytes.clone();
        for _ in 0..1 + next() % 3 {
            let i = (next() % b.len() as u64) as usize;
            b[i] = (next() & 0xff) as u8;
        }
        std::fs::write(&p, &b).unwrap();
        match OnnxImporter.import(&p, &opts) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(!e.to_string().contains('\n'));
                failed += 1;
            }
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} ok, {failed} failed");
}

#[test]
fn item_limit_is_checked_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    // A million empty nodes: two bytes each in the file.
    let mut bytes = model(graph(vec![], vec![], vec![])).encode_to_vec();
    let mut g = Vec::new();
    for _ in 0..1_000_000 {
        g.extend_from_slice(&[0x0a, 0x00]);
    }
    bytes.push(0x3a);
    let mut len = g.len();
    while len >= 0x80 {
        bytes.push((len as u8) | 0x80);
        len >>= 7;
    }
    bytes.push(len as u8);
    bytes.extend_from_slice(&g);
    let p = dir.path().join("many.onnx");
    std::fs::write(&p, &bytes).unwrap();
    let opts = ImportOptions {
        limits: Limits { max_items: 10_000, ..Limits::default() },
        ..ImportOptions::default()
    };
    let e = OnnxImporter.import(&p, &opts).unwrap_err().to_string();
    assert!(e.contains("more than 10000 nodes, attributes"), "{e}");
}

/// paddle2onnx declares `[-1,3,?,?]` (rapidocr's text-direction classifier): the spatial
/// dimensions can only be bound by `--input-shape`, and `--batch` must still bind the batch.
#[test]
fn batch_binds_the_leading_dimension_of_a_given_input_shape() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(
        vec![node("Relu", "r", &["x"], &["y"])],
        vec![vi("x", F32, &[D::K(-1), D::K(3), D::S("?"), D::S("?")])],
        vec![out("y")],
    );
    let p = write(dir.path(), "m.onnx", &model(g));
    for given in ["Bx3x48x192", "?x3x48x192"] {
        let mut opts = ImportOptions { batch: Some(8), ..ImportOptions::default() };
        opts.input_shapes.insert("x".into(), Shape::parse_dims(given));
        let m = OnnxImporter.import(&p, &opts).unwrap();
        assert_eq!(shape_of(&m, "y"), Shape::fixed(&[8, 3, 48, 192]), "{given}");
    }
    // A fixed leading dimension in the given shape is kept.
    let mut opts = ImportOptions { batch: Some(8), ..ImportOptions::default() };
    opts.input_shapes.insert("x".into(), Shape::fixed(&[1, 3, 48, 192]));
    let m = OnnxImporter.import(&p, &opts).unwrap();
    assert_eq!(shape_of(&m, "y"), Shape::fixed(&[1, 3, 48, 192]));
}
