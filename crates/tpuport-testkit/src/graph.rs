//! Small hand-built graphs for unit tests of the passes and renderers: a value, an f32 weight, a
//! one-output node, without repeating every field of the IR structs in each test.

use tpuport_model::{
    DType, Graph, Model, Node, Shape, TensorType, Value, ValueId, ValueKind, Weight, WeightData,
};

/// Adds a value named `name` of type `ty` to `g`.
pub fn value(g: &mut Graph, name: &str, ty: TensorType, kind: ValueKind) -> ValueId {
    g.add_value(Value { name: name.into(), ty, kind, producer: None })
}

/// Adds an f32 weight of `shape` whose every byte is `fill` to `m`, and its value to `g`.
pub fn f32_weight(m: &mut Model, g: &mut Graph, name: &str, shape: &[u64], fill: u8) -> ValueId {
    let bytes = usize::try_from(shape.iter().product::<u64>()).expect("weight fits in memory") * 4;
    let id = m.weights.push(Weight {
        name: name.into(),
        dtype: DType::F32,
        shape: shape.to_vec(),
        data: WeightData::Inline(vec![fill; bytes].into()),
    });
    value(g, name, TensorType::new(DType::F32, Shape::fixed(shape)), ValueKind::Weight(id))
}

/// A node of the default domain with one output, no attributes and no subgraphs.
#[must_use]
pub fn node(name: &str, op: &str, inputs: Vec<Option<ValueId>>, output: ValueId) -> Node {
    Node {
        name: name.into(),
        op: op.into(),
        domain: String::new(),
        inputs,
        outputs: vec![output],
        attrs: vec![],
        subgraphs: vec![],
        location: None,
        scope: None,
    }
}
