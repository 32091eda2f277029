//! Padding tests on hand-made shapes whose padded sizes follow from the tiling rules
//! (`tpu-hardware.md` §9): lanes 128; rows 8 for 32-bit, 8 for 16-bit on v4–v6e and 16 on TPU7x,
//! 32 for 8-bit; compact 2x128 / 4x128 tiles for second-minor 1–2 / 3–4; MXU 128 (v4–v5p) or 256
//! (v6e, TPU7x); the LHS in 8-row groups. Checked directly, and through the layout and memory
//! passes on a hand-built graph, where arrays take the layouts libtpu picks
//! (`tpuport_hw::device_layout`, measured).
#![allow(clippy::unwrap_used)]

use tpuport_analysis::{Optimizer, Workload, cost, layout, memory};
use tpuport_hw::{Catalog, matmul_utilization, padded_bytes, padded_shape};
use tpuport_model::{DType, Graph, Model, ModelFormat, Shape, TensorType, ValueKind};
use tpuport_testkit::graph::{f32_weight, node, value};

#[test]
fn tiling_rules_on_known_shapes() {
    let cat = Catalog::builtin();
    let (v5e, v6e, tpu7x) =
        (cat.chip("v5e").unwrap(), cat.chip("v6e").unwrap(), cat.chip("tpu7x").unwrap());
    // 32-bit: (8, 128).
    assert_eq!(padded_shape(&[100, 10], DType::F32, v5e).unwrap(), vec![104, 128]);
    assert_eq!(padded_bytes(&[100, 10], DType::F32, v5e).unwrap(), 104 * 128 * 4);
    // Compact tiles: second-minor 1 -> 2 rows, 3 -> 4 rows.
    assert_eq!(padded_shape(&[1, 1], DType::F32, v5e).unwrap(), vec![2, 128]);
    assert_eq!(padded_shape(&[3, 200], DType::F32, v5e).unwrap(), vec![4, 256]);
    // bf16: 8 rows up to v6e, 16 on TPU7x.
    assert_eq!(padded_shape(&[17, 300], DType::BF16, v6e).unwrap(), vec![24, 384]);
    assert_eq!(padded_shape(&[17, 300], DType::BF16, tpu7x).unwrap(), vec![32, 384]);
    // int8: 32 rows.
    assert_eq!(padded_shape(&[33, 130], DType::I8, v5e).unwrap(), vec![64, 256]);
    // Major dims untouched.
    assert_eq!(padded_shape(&[3, 3, 4, 8], DType::F32, v5e).unwrap(), vec![3, 3, 4, 128]);
    // MXU: batch-1 MNIST layer, 128 vs 256.
    let u = matmul_utilization(1, 784, 512, v5e).unwrap();
    assert_eq!(u.padded, [8, 896, 512]);
    assert!((u.utilization - (1.0 / 8.0) * (784.0 / 896.0)).abs() < 1e-12);
    let u = matmul_utilization(1, 784, 512, v6e).unwrap();
    assert_eq!(u.padded, [8, 1024, 512]);
}

/// x f32[8,512] @ w f32[512,10] + a bias f32[10].
fn model() -> Model {
    let mut m = Model::empty(ModelFormat::Onnx);
    let mut g = Graph::default();
    let w = f32_weight(&mut m, &mut g, "fc.weight", &[512, 10], 1);
    let b = f32_weight(&mut m, &mut g, "fc.bias", &[10], 1);
    let ty = |s: &[u64]| TensorType::new(DType::F32, Shape::fixed(s));
    let x = value(&mut g, "x", ty(&[8, 512]), ValueKind::Input);
    let y = value(&mut g, "y", ty(&[8, 10]), ValueKind::Intermediate);
    let z = value(&mut g, "z", ty(&[8, 10]), ValueKind::Intermediate);
    g.inputs = vec![x];
    g.outputs = vec![z];
    g.add_node(node("fc", "MatMul", vec![Some(x), Some(w)], y));
    g.add_node(node("bias", "Add", vec![Some(y), Some(b)], z));
    m.graph = g;
    m
}

#[test]
fn layout_and_memory_passes_pad_by_the_rules() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    let v6e = cat.chip("v6e").unwrap();
    let m = model();
    let c = cost::analyze(&m);
    assert_eq!(c.totals.mxu_flops, 2 * 8 * 512 * 10);
    assert_eq!(c.totals.flops, 2 * 8 * 512 * 10 + 80);
    let l = layout::analyze(&m, &c, &[v5e, v6e], &[]);
    let l5 = &l.chips[0];
    // Weights in the layouts libtpu picks (measured, `tpuport-hw/tests/data`): [512,10] is
    // stored transposed, {0,1:T(8,128)} = [16,512]; the vector [10] takes one T(128) tile.
    assert_eq!(l5.weights_logical, (512 * 10 + 10) * 4);
    assert_eq!(l5.weights_padded, (16 * 512 + 128) * 4);
    let mm = &l5.worst_matmuls[0];
    assert_eq!(mm.padded, [8, 512, 128]);
    assert!((mm.utilization - 10.0 / 128.0).abs() < 1e-12);
    assert!(mm.fix.as_deref().unwrap().starts_with("n=10"), "{:?}", mm.fix);
    assert_eq!(l5.worst_tensors[0].name, "fc.weight");
    // Every weight and every matmul is listed, not only the worst.
    let names: Vec<&str> = l5.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["fc.weight", "fc.bias"]);
    assert_eq!(l5.tensors[1].padded_shape, vec![128]);
    assert_eq!(l5.tensors[0].layout, "{0,1:T(8,128)}");
    assert_eq!(l5.tensors[1].layout, "{0:T(128)}");
    assert_eq!(l5.matmuls.len(), 1);
    // Operands in the compiler's layouts too: x [8,512] unpadded, the weight [512,10] stored
    // transposed as above (in logical order it would be [512,128]: 262,144 bytes).
    assert_eq!(l5.matmuls[0].operand_bytes, [(8 * 512 + 512 * 10) * 4, (8 * 512 + 16 * 512) * 4]);
    assert_eq!(l5.worst_tensors[0].padded_shape, vec![16, 512]);
    // The fix names the dimension the compiler stores second-minor.
    let fix = l5.worst_tensors[0].fix.as_deref().unwrap_or_default();
    assert!(fix.contains("dim 1 (10, second-minor) -> multiple of 8"), "{fix}");
    // v6e's 256-wide MXU: n pads to 256, k=512 is already a multiple.
    assert_eq!(l.chips[1].worst_matmuls[0].padded, [8, 512, 256]);

    // Memory: logical weights 20.5 KB, padded per chip as above; y is written in place by z.
    let r = memory::analyze(&m, &[v5e], Workload::Train, Optimizer::Adam, 1);
    assert_eq!(r.logical.weights, (512 * 10 + 10) * 4);
    assert_eq!(r.logical.peak_activations, 8 * 10 * 4);
    let p5 = &r.padded[0].1;
    assert_eq!(p5.weights, (16 * 512 + 128) * 4);
    assert_eq!(p5.peak_activations, 8 * 128 * 4);
    // In HBM: weights, the input [8,512] and the output z; nothing beyond VMEM.
    assert_eq!(p5.outputs, 8 * 128 * 4);
    assert_eq!(p5.hbm_activations, 8 * 128 * 4);
    assert_eq!(p5.inference, p5.weights + 8 * 512 * 4 + 8 * 128 * 4);
    // Adam in fp32: weights + grads + 2 moments, logical.
    let fp32 = &r.logical.training[0];
    assert_eq!(fp32.precision, "fp32");
    assert_eq!(fp32.weights, (512 * 10 + 10) * 4);
    assert_eq!(fp32.optimizer_state, 2 * (512 * 10 + 10) * 4);
    // Adafactor: row + column factors for the matrix, a full vector for the bias.
    let r = memory::analyze(&m, &[], Workload::Train, Optimizer::Adafactor, 1);
    assert_eq!(r.logical.training[0].optimizer_state, (512 + 10 + 10) * 4);
}

/// x f32[8,2048,1024] (64 MiB) -> Exp -> y -> ReduceSum(axis 2) -> z f32[8,2048,1] and a second
/// output w = Relu(x) f32[8,2048,1024]; sizes chosen around the VMEM rules of the HBM estimate.
fn vmem_model() -> Model {
    let mut m = Model::empty(ModelFormat::Onnx);
    let mut g = Graph::default();
    let ty = |s: &[u64]| TensorType::new(DType::F32, Shape::fixed(s));
    let x = value(&mut g, "x", ty(&[8, 2048, 1024]), ValueKind::Input);
    let y = value(&mut g, "y", ty(&[8, 2048, 1024]), ValueKind::Intermediate);
    let z = value(&mut g, "z", ty(&[8, 2048, 1]), ValueKind::Intermediate);
    let w = value(&mut g, "w", ty(&[8, 2048, 1024]), ValueKind::Intermediate);
    g.inputs = vec![x];
    g.outputs = vec![z, w];
    g.add_node(node("e", "Exp", vec![Some(x)], y));
    g.add_node(node("s", "ReduceSum", vec![Some(y)], z));
    g.add_node(node("r", "Relu", vec![Some(x)], w));
    m.graph = g;
    m
}

/// The HBM estimate's VMEM rules: an intermediate beyond what the chip keeps on chip (v6e:
/// 32 MiB; v5e: its 128 MiB VMEM) is in HBM; outputs are in HBM; none here exceeds VMEM, so
/// none counts twice.
#[test]
fn hbm_activations_follow_the_vmem_rules() {
    let cat = Catalog::builtin();
    let (v5e, v6e) = (cat.chip("v5e").unwrap(), cat.chip("v6e").unwrap());
    assert_eq!(memory::on_chip_memory(v5e), 128 << 20);
    assert_eq!(memory::largest_on_chip_buffer(v6e), 32 << 20);
    let r = memory::analyze(&vmem_model(), &[v5e, v6e], Workload::Infer, Optimizer::Adam, 0);
    let big: u64 = 8 * 2048 * 1024 * 4;
    // z: [8,2048,1] stored transposed with a 1-row tile: [1, 8, 2048] -> 8 x 2048 x 4 bytes.
    let z: u64 = 8 * 2048 * 4;
    for (chip, f) in &r.padded {
        assert_eq!(f.outputs, big + z, "{chip}");
        let in_hbm = if chip == "v6e" { big } else { 0 };
        assert_eq!(f.hbm_activations, big + z + in_hbm, "{chip}: y in HBM only on v6e");
        assert_eq!(f.inference, f.inputs + f.weights + f.hbm_activations, "{chip}");
    }
}
