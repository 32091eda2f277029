//! The whole audit (cost, memory, layout, roofline, findings including AUD401, which runs the
//! cost pass) on graphs whose static shapes multiply past `u64::MAX`: every figure saturates,
//! nothing wraps or panics (tests run in debug, where an unchecked overflow panics).
#![allow(clippy::unwrap_used)]

use tpuport_analysis::audit::{self, AuditOptions};
use tpuport_analysis::{Workload, cost, memory};
use tpuport_hw::Catalog;
use tpuport_model::{
    Attr, DType, Graph, Model, ModelFormat, Node, Shape, TensorType, Value, ValueId, ValueKind,
};

/// 2^62 f32 elements: one value's byte size (2^64) already overflows; two of them multiply to
/// 2^124 elements.
const HUGE: [u64; 3] = [1 << 21, 1 << 21, 1 << 20];
/// 2^60 bytes of f32: fits alone, a few of them overflow a sum.
const BIG: [u64; 3] = [1 << 20, 1 << 20, 1 << 18];

struct Builder {
    g: Graph,
}

impl Builder {
    fn value(&mut self, name: &str, dims: &[u64], kind: ValueKind) -> ValueId {
        self.g.add_value(Value {
            name: name.into(),
            ty: TensorType::new(DType::F32, Shape::fixed(dims)),
            kind,
            producer: None,
        })
    }

    fn node(
        &mut self,
        op: &str,
        ins: &[ValueId],
        out: &[u64],
        attrs: Vec<(String, Attr)>,
    ) -> ValueId {
        let y = self.value(&format!("{op}_{}", self.g.nodes.len()), out, ValueKind::Intermediate);
        self.g.add_node(Node {
            name: format!("{op}_{}", self.g.nodes.len()),
            op: op.into(),
            domain: String::new(),
            inputs: ins.iter().copied().map(Some).collect(),
            outputs: vec![y],
            attrs,
            subgraphs: vec![],
            location: None,
            scope: None,
        });
        y
    }
}

fn ints(name: &str, v: &[i64]) -> (String, Attr) {
    (name.into(), Attr::Ints(v.to_vec()))
}

fn hostile_model() -> Model {
    let mut b = Builder { g: Graph::default() };
    let x = b.value("x", &HUGE, ValueKind::Input);
    let big = b.value("big", &BIG, ValueKind::Input);
    let scalar = b.value("scalar", &[], ValueKind::Input);
    b.g.inputs.extend([x, big, scalar]);
    let mut outs = Vec::new();
    for op in ["Sort", "TopK", "Exp", "Softmax", "LogSoftmax", "Gelu", "Selu", "CumSum"] {
        outs.push(b.node(op, &[x], &HUGE, vec![]));
    }
    outs.push(b.node("Sum", &[x, x, x, x], &HUGE, vec![]));
    outs.push(b.node("LayerNormalization", &[x], &HUGE, vec![("axis".into(), Attr::Int(-1))]));
    outs.push(b.node("ReduceMean", &[x], &[1, 1, 1], vec![]));
    outs.push(b.node("ReduceL2", &[x], &[1, 1, 1], vec![]));
    outs.push(b.node("MatMul", &[x, x], &HUGE, vec![]));
    // Rank-0 operands: invalid, must not index below zero.
    outs.push(b.node("MatMul", &[scalar, scalar], &[], vec![]));
    outs.push(b.node("Gemm", &[big, big, big], &BIG, vec![]));
    outs.push(b.node("Attention", &[x, x, x], &HUGE, vec![]));
    outs.push(b.node("ConvTranspose", &[x, x], &HUGE, vec![]));
    // Zero-sized kernel and output with SAME padding (the pad arithmetic subtracts 1 from both).
    let zero_k = b.value("zero_k", &[4, 4, 0], ValueKind::Input);
    b.g.inputs.push(zero_k);
    outs.push(b.node(
        "Conv",
        &[x, zero_k],
        &[1 << 21, 4, 0],
        vec![("auto_pad".into(), Attr::Str("SAME_UPPER".into()))],
    ));
    outs.push(b.node("Conv", &[x, x], &HUGE, vec![ints("strides", &[1])]));
    let window = ints("kernel_shape", &[i64::MAX, i64::MAX, i64::MAX]);
    outs.push(b.node("AveragePool", &[x], &HUGE, vec![window.clone()]));
    outs.push(b.node("MaxPool", &[x], &HUGE, vec![window]));
    outs.push(b.node("ScatterND", &[x, x, x], &HUGE, vec![]));
    // Values that fit alone but whose sum does not: the liveness peak and the training sums.
    let mut acc = big;
    for _ in 0..40 {
        acc = b.node("Add", &[acc, big], &BIG, vec![]);
        outs.push(acc);
    }
    b.g.outputs.extend(outs);
    let mut m = Model::empty(ModelFormat::Onnx);
    m.graph = b.g;
    m
}

#[test]
fn hostile_shapes_saturate_every_pass() {
    let m = hostile_model();
    let c = cost::analyze(&m);
    let op = |name: &str| c.ops.iter().find(|o| o.op == name).unwrap();
    // n · log2(n) over 2^62 elements, and matmul / attention / conv products, saturate.
    assert_eq!(op("Sort").flops, u64::MAX);
    assert_eq!(op("TopK").flops, u64::MAX);
    assert_eq!(op("MatMul").flops, u64::MAX);
    assert_eq!(op("Attention").mxu_flops, u64::MAX);
    assert_eq!(op("Softmax").flops, u64::MAX);
    // One FLOP per extra operand: 3 · 2^62 still fits.
    assert_eq!(op("Sum").flops, 3 << 62);
    assert_eq!(op("AveragePool").flops, u64::MAX);
    assert_eq!(c.totals.flops, u64::MAX);
    // The rank-0 MatMul has no dims: not counted, not a panic.
    assert!(c.ops.iter().any(|o| o.op == "MatMul" && o.status.is_uncounted()));

    let cat = Catalog::builtin();
    let chips: Vec<_> = cat.chips().iter().filter(|c| c.is_tpu() && c.tiling.is_some()).collect();
    let mem = memory::analyze(&m, &chips, Workload::Train, tpuport_analysis::Optimizer::AdamW, 3);
    assert_eq!(mem.logical.peak_activations, u64::MAX);
    assert_eq!(mem.logical.inference, u64::MAX);

    for workload in [Workload::Infer, Workload::Train] {
        let opts = AuditOptions { workload, batch: Some(1), ..AuditOptions::default() };
        let findings = audit::findings(&m, &opts);
        let report = audit::audit("hostile", &m, &cat, &opts, findings);
        assert!(report.findings.iter().any(|f| f.code == "AUD401"));
        assert!(!report.roofline.chips.is_empty());
    }
}
