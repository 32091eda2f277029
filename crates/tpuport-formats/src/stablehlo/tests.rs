//! Unit tests on hand-written snippets of each construct, bad input, and print round trips.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;

use tpuport_model::{Attr, DType, Dim, Graph, Model, Node, NoteLevel, Shape, ValueKind};

use super::{StructureOptions, parse_text, print_model, structure};
use crate::{Importer, Limits};

fn parse(s: &str) -> Model {
    parse_text(Path::new("t.mlir"), s, &Limits::default()).unwrap_or_else(|e| panic!("{e}\n{s}"))
}

fn err(s: &str) -> String {
    match parse_text(Path::new("t.mlir"), s, &Limits::default()) {
        Ok(_) => panic!("expected an error for:\n{s}"),
        Err(e) => e.to_string(),
    }
}

/// Parses, prints, re-parses; asserts the structure is unchanged; returns model and text.
fn rt(s: &str) -> (Model, String) {
    let m = parse(s);
    let text = print_model(&m).unwrap();
    let m2 = parse_text(Path::new("printed.mlir"), &text, &Limits::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let o = StructureOptions { locations: true };
    assert_eq!(structure(&m, o), structure(&m2, o), "round trip of\n{s}\nprinted as\n{text}");
    (m, text)
}

fn func(body: &str, args: &str, res: &str) -> String {
    format!("module @jit_f {{\n  func.func public @main({args}) -> ({res}) {{\n{body}\n  }}\n}}\n")
}

fn node<'g>(g: &'g Graph, op: &str) -> &'g Node {
    g.walk_nodes().find(|n| n.op == op).unwrap_or_else(|| panic!("no {op}"))
}

fn text<'n>(n: &'n Node, k: &str) -> &'n str {
    n.attr(k)
        .and_then(Attr::as_str)
        .unwrap_or_else(|| panic!("{} has no text attr {k}: {:?}", n.op, n.attrs))
}

#[test]
fn module_function_signature_and_jax_metadata() {
    let s = r#"module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{replicated}", jax.buffer_donor = true}, %arg1: tensor<2x8xbf16>) -> (tensor<2x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg1 : (tensor<2x8xbf16>) -> tensor<2x8xf32>
    %1 = stablehlo.dot_general %0, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
    return %1 : tensor<2x16xf32>
  }
}"#;
    let (m, printed) = rt(s);
    assert_eq!(m.metadata.framework, tpuport_model::Framework::Jax);
    assert_eq!(m.metadata.exporter.as_deref(), Some("jax.jit lower"));
    assert!(
        m.metadata.properties.contains(&("mhlo.num_partitions".to_owned(), "1 : i32".to_owned()))
    );
    let g = &m.graph;
    assert_eq!(g.name, "main");
    assert_eq!(g.inputs.len(), 2);
    assert_eq!(g.value(g.inputs[1]).ty.dtype, Some(DType::BF16));
    assert_eq!(g.value(g.inputs[0]).kind, ValueKind::Input);
    assert_eq!(super::arg_attr(g, 0, "mhlo.sharding"), Some(&Attr::Str("{replicated}".into())));
    assert_eq!(super::result_attr(g, 0, "jax.result_info"), Some(&Attr::Str("result".into())));
    let dot = node(g, "stablehlo.dot_general");
    assert_eq!(
        text(dot, "dot_dimension_numbers"),
        "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"
    );
    assert_eq!(
        text(dot, "precision_config"),
        "[#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]"
    );
    assert_eq!(dot.attr("tpuport.lhs_contracting_dimensions"), Some(&Attr::Ints(vec![1])));
    assert_eq!(dot.domain, "stablehlo");
    assert_eq!(g.outputs, vec![dot.outputs[0]]);
    assert!(
        printed.contains(
            r#""stablehlo.dot_general"(%v0, %arg0) <{dot_dimension_numbers = #stablehlo.dot<"#
        ),
        "{printed}"
    );
    assert!(
        printed.contains(
            r#"arg_attrs = [{mhlo.sharding = "{replicated}", jax.buffer_donor = true}, {}]"#
        ),
        "{printed}"
    );
    assert!(printed.contains(r#"res_attrs = [{jax.result_info = "result"}]"#), "{printed}");
    assert!(printed.contains(r#""func.return"(%v1) : (tensor<2x16xf32>) -> ()"#), "{printed}");
}

#[test]
fn export_text_is_jax_export_and_private_funcs_are_functions() {
    let s = r#"module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<?x3xf32>) -> (tensor<3xf32> {jax.result_info = ""}) {
    %0 = call @inner(%arg0) : (tensor<?x3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
  func.func private @inner(%arg0: tensor<?x3xf32>) -> tensor<3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}"#;
    let (m, _) = rt(s);
    assert_eq!(m.metadata.exporter.as_deref(), Some("jax.export"));
    assert_eq!(m.functions.len(), 1);
    let f = m.function("inner").unwrap();
    assert_eq!(
        m.graph.value(m.graph.inputs[0]).ty.shape,
        Some(Shape(vec![Dim::unknown(), Dim::Known(3)]))
    );
    let call = node(&m.graph, "func.call");
    assert_eq!(text(call, "callee"), "@inner");
    let red = node(f, "stablehlo.reduce");
    assert_eq!(red.attr("dimensions"), Some(&Attr::Ints(vec![0])));
    assert_eq!(red.inputs.len(), 2);
    let (name, body) = &red.subgraphs[0];
    assert_eq!(name, "reducer");
    assert_eq!(body.inputs.len(), 2);
    assert_eq!(body.nodes[0].op, "stablehlo.add");
    assert_eq!(body.outputs, body.nodes[0].outputs);
}

#[test]
fn reduce_region_form_orders_block_arguments_like_mlir() {
    let body = r#"    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [0] : (tensor<4x4xf32>, tensor<4x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%c2: tensor<i32>, %d: tensor<i32>)  {
      %2 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.select %2, %a, %b : tensor<i1>, tensor<f32>
      %4 = stablehlo.select %2, %c2, %d : tensor<i1>, tensor<i32>
      stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<4xi32>"#;
    let (m, _) = rt(&func(body, "%arg0: tensor<4x4xf32>", "tensor<4xi32>"));
    let red = node(&m.graph, "stablehlo.reduce");
    assert_eq!(red.outputs.len(), 2);
    assert_eq!(m.graph.outputs, vec![red.outputs[1]]);
    let r = &red.subgraphs[0].1;
    let names: Vec<&str> = r.inputs.iter().map(|&i| r.value(i).name.as_str()).collect();
    assert_eq!(names, ["%a", "%c2", "%b", "%d"]);
    let cmp = node(r, "stablehlo.compare");
    assert_eq!(text(cmp, "comparison_direction"), "#stablehlo<comparison_direction GT>");
    assert_eq!(text(cmp, "compare_type"), "#stablehlo<comparison_type FLOAT>");
    let sel = node(r, "stablehlo.select");
    assert_eq!(r.value(sel.outputs[0]).ty.dtype, Some(DType::F32));
    assert_eq!(node(&m.graph, "stablehlo.iota").attr("iota_dimension"), Some(&Attr::Int(0)));
}

#[test]
fn convolution_pretty_form_becomes_generic_attributes() {
    let body = r#"    %0 = stablehlo.convolution(%arg1, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 2], pad = [[1, 1], [0, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x8x4x4xf32>
    return %0 : tensor<2x8x4x4xf32>"#;
    let (m, printed) = rt(&func(
        body,
        "%arg0: tensor<3x3x3x4xf32>, %arg1: tensor<2x8x8x3xf32>",
        "tensor<2x8x4x4xf32>",
    ));
    let c = node(&m.graph, "stablehlo.convolution");
    assert_eq!(
        text(c, "dimension_numbers"),
        "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>"
    );
    assert_eq!(c.attr("window_strides"), Some(&Attr::Ints(vec![1, 2])));
    assert_eq!(text(c, "padding"), "dense<[[1, 1], [0, 2]]> : tensor<2x2xi64>");
    assert_eq!(text(c, "window_reversal"), "array<i1: false, true>");
    assert_eq!(c.attr("rhs_dilation"), Some(&Attr::Ints(vec![1, 2])));
    assert_eq!(c.attr("feature_group_count"), Some(&Attr::Int(1)));
    assert_eq!(c.attr("tpuport.kernel_spatial_dimensions"), Some(&Attr::Ints(vec![0, 1])));
    assert_eq!(c.attr("tpuport.input_feature_dimension"), Some(&Attr::Int(3)));
    assert!(printed.contains("feature_group_count = 1 : i64"), "{printed}");
    assert!(!printed.contains("tpuport."), "{printed}");
    assert_eq!(
        super::pretty::padding_attr(&[vec![1, 1], vec![1, 1]]),
        "dense<1> : tensor<2x2xi64>"
    );
}

#[test]
fn common_pretty_ops() {
    let body = r#"    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %2 = stablehlo.reshape %1 : (tensor<4x2xf32>) -> tensor<8xf32>
    %3 = stablehlo.slice %2 [1:7:2] : (tensor<8xf32>) -> tensor<3xf32>
    %4 = stablehlo.slice %0 [0:2, 1:3] : (tensor<2x4xf32>) -> tensor<2x2xf32>
    %5 = stablehlo.dynamic_slice %2, %arg1, sizes = [2] : (tensor<8xf32>, tensor<i32>) -> tensor<2xf32>
    %6 = stablehlo.concatenate %3, %5, dim = 0 : (tensor<3xf32>, tensor<2xf32>) -> tensor<5xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.pad %6, %cst, low = [1], high = [2], interior = [0] : (tensor<5xf32>, tensor<f32>) -> tensor<8xf32>
    %8 = stablehlo.compare LT, %7, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    %9 = stablehlo.select %8, %7, %2 : tensor<8xi1>, tensor<8xf32>
    %10 = stablehlo.convert %9 : (tensor<8xf32>) -> tensor<8xf8E4M3FN>
    %11:2 = stablehlo.optimization_barrier %9, %arg1 : tensor<8xf32>, tensor<i32>
    %output_state, %output = stablehlo.rng_bit_generator %arg2, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui32>)
    %12 = stablehlo.get_dimension_size %arg3, dim = 0 : (tensor<?xf32>) -> tensor<i32>
    %13 = stablehlo.reverse %4, dims = [0] : tensor<2x2xf32>
    %14 = stablehlo.fft %arg4, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
    %15 = stablehlo.reduce_precision %9, format = e5m10 : tensor<8xf32>
    %16 = stablehlo.get_tuple_element %arg5[1] : (tuple<tensor<f32>, tensor<i32>>) -> tensor<i32>
    %17 = stablehlo.exponential %9 : tensor<8xf32>
    return %11#0, %output, %12, %10 : tensor<8xf32>, tensor<3xui32>, tensor<i32>, tensor<8xf8E4M3FN>"#;
    let args = "%arg0: tensor<4xf32>, %arg1: tensor<i32>, %arg2: tensor<2xui64>, %arg3: tensor<?xf32>, %arg4: tensor<4xcomplex<f32>>, %arg5: tuple<tensor<f32>, tensor<i32>>";
    let (m, printed) =
        rt(&func(body, args, "tensor<8xf32>, tensor<3xui32>, tensor<i32>, tensor<8xf8E4M3FN>"));
    let g = &m.graph;
    let ints = |op: &str, k: &str| node(g, op).attr(k).and_then(Attr::as_ints).map(<[i64]>::to_vec);
    assert_eq!(ints("stablehlo.broadcast_in_dim", "broadcast_dimensions"), Some(vec![1]));
    assert_eq!(ints("stablehlo.transpose", "permutation"), Some(vec![1, 0]));
    let s = g.nodes.iter().filter(|n| n.op == "stablehlo.slice").collect::<Vec<_>>();
    assert_eq!(s[0].attr("strides"), Some(&Attr::Ints(vec![2])));
    assert_eq!(s[1].attr("start_indices"), Some(&Attr::Ints(vec![0, 1])));
    assert_eq!(s[1].attr("limit_indices"), Some(&Attr::Ints(vec![2, 3])));
    assert_eq!(ints("stablehlo.dynamic_slice", "slice_sizes"), Some(vec![2]));
    assert_eq!(node(g, "stablehlo.concatenate").attr("dimension"), Some(&Attr::Int(0)));
    assert_eq!(ints("stablehlo.pad", "edge_padding_high"), Some(vec![2]));
    assert!(node(g, "stablehlo.compare").attr("compare_type").is_none());
    assert_eq!(g.value(node(g, "stablehlo.select").outputs[0]).ty.dtype, Some(DType::F32));
    assert_eq!(g.value(node(g, "stablehlo.convert").outputs[0]).ty.dtype, Some(DType::F8E4M3FN));
    let ob = node(g, "stablehlo.optimization_barrier");
    assert_eq!(g.value(ob.outputs[1]).ty.dtype, Some(DType::I32));
    let rng = node(g, "stablehlo.rng_bit_generator");
    assert_eq!(text(rng, "rng_algorithm"), "#stablehlo<rng_algorithm DEFAULT>");
    assert_eq!(rng.outputs.len(), 2);
    assert_eq!(g.outputs[1], rng.outputs[1]);
    assert_eq!(ints("stablehlo.reverse", "dimensions"), Some(vec![0]));
    assert_eq!(text(node(g, "stablehlo.fft"), "fft_type"), "#stablehlo<fft_type FFT>");
    assert_eq!(text(node(g, "stablehlo.reduce_precision"), "mantissa_bits"), "10 : i32");
    assert_eq!(text(node(g, "stablehlo.get_tuple_element"), "index"), "1 : i32");
    assert_eq!(
        super::arg_attr(g, 5, "tpuport.type"),
        Some(&Attr::Str("tuple<tensor<f32>, tensor<i32>>".into()))
    );
    assert!(printed.contains("%arg5: tuple<tensor<f32>, tensor<i32>>"), "{printed}");
    assert!(printed.contains(r#""stablehlo.slice"(%v2) <{limit_indices = array<i64: 7>, start_indices = array<i64: 1>, strides = array<i64: 2>}>"#), "{printed}");
}

#[test]
fn control_flow_custom_call_composite_and_generic_ops() {
    let body = r#"    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %c) : tensor<4xf32>, tensor<i32>
    cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i32>
      %9 = stablehlo.compare LT, %iterArg_1, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %9 = stablehlo.add %iterArg, %arg0 : tensor<4xf32>
      stablehlo.return %9, %iterArg_1 : tensor<4xf32>, tensor<i32>
    }
    %1 = "stablehlo.case"(%arg1) ({
      %9 = stablehlo.negate %0#0 : tensor<4xf32>
      stablehlo.return %9 : tensor<4xf32>
    }, {
      stablehlo.return %0#0 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %2:2 = stablehlo.custom_call @lapack_sgetrf_ffi(%1) {backend_config = "cfg", api_version = 4 : i32, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>)
    stablehlo.custom_call @shape_assertion(%arg1) {has_side_effect = true, error_message = "bad"} : (tensor<i32>) -> ()
    %3 = stablehlo.composite "my.op" %2#0 {composite_attributes = {k = 1 : i64}, decomposition = @my.op.impl} : (tensor<4xf32>) -> tensor<4xf32>
    %4 = "stablehlo.sort"(%3) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %9 = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %5 = "stablehlo.gather"(%4, %arg2) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<2x1xi32>) -> tensor<2xf32>
    %6 = "stablehlo.scatter"(%4, %arg2, %5) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %9 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %9 : tensor<f32>
    }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
    %7 = "foo.bar"(%6) {x = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %8 = func.call @my.op.impl(%7) : (tensor<4xf32>) -> tensor<4xf32>
    return %8 : tensor<4xf32>
  }
  func.func private @my.op.impl(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    return %arg0 : tensor<4xf32>"#;
    let (m, printed) = rt(&func(
        body,
        "%arg0: tensor<4xf32>, %arg1: tensor<i32>, %arg2: tensor<2x1xi32>",
        "tensor<4xf32>",
    ));
    let g = &m.graph;
    let w = node(g, "stablehlo.while");
    let names: Vec<&str> = w.subgraphs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["cond", "body"]);
    assert_eq!(w.inputs.len(), 2);
    let body_g = &w.subgraphs[1].1;
    // `%arg0` is captured from the function: an Outer value in the body.
    assert!(body_g.values.iter().any(|v| v.name == "%arg0" && v.kind == ValueKind::Outer));
    assert_eq!(body_g.outputs.len(), 2);
    let case = node(g, "stablehlo.case");
    assert_eq!(
        case.subgraphs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["branch0", "branch1"]
    );
    assert!(case.subgraphs[1].1.nodes.is_empty());
    let cc = g.nodes.iter().filter(|n| n.op == "stablehlo.custom_call").collect::<Vec<_>>();
    assert_eq!(cc[0].attr("call_target_name"), Some(&Attr::Str("lapack_sgetrf_ffi".into())));
    assert_eq!(cc[0].attr("backend_config"), Some(&Attr::Str("cfg".into())));
    assert_eq!(text(cc[0], "mhlo.frontend_attributes"), "{num_batch_dims = \"0\"}");
    assert!(cc[1].outputs.is_empty());
    let comp = node(g, "stablehlo.composite");
    assert_eq!(comp.attr("name"), Some(&Attr::Str("my.op".into())));
    assert_eq!(text(comp, "decomposition"), "@my.op.impl");
    assert_eq!(node(g, "stablehlo.sort").subgraphs[0].0, "comparator");
    assert_eq!(node(g, "stablehlo.scatter").subgraphs[0].0, "update_computation");
    assert!(
        text(node(g, "stablehlo.gather"), "dimension_numbers").starts_with("#stablehlo.gather<")
    );
    let foo = node(g, "foo.bar");
    assert_eq!((foo.domain.as_str(), foo.attr("x")), ("foo", Some(&Attr::Int(1))));
    assert!(printed.contains(r#""stablehlo.custom_call"(%v"#), "{printed}");
    assert!(
        printed.contains(r#"{mhlo.frontend_attributes = {num_batch_dims = "0"}}"#),
        "{printed}"
    );
    assert!(printed.contains(r#""foo.bar"(%v"#) && printed.contains("{x = 1 : i64}"), "{printed}");
}

#[test]
fn shardy_ops_and_module_level_mesh() {
    let s = r#"module @jit_g attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=8]> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}}
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<1x4xf32> {jax.result_info = "result"}) {
    %1 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
    %0 = sdy.manual_computation(%1) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"x"} (%arg1: tensor<1x4xf32>) {
      %2 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %3 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %3 : tensor<f32>
      }) : (tensor<1x4xf32>) -> tensor<1x4xf32>
      sdy.return %2 : tensor<1x4xf32>
    } : (tensor<8x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
}"#;
    let (m, printed) = rt(s);
    let g = &m.graph;
    assert_eq!(
        super::arg_attr(g, 0, "sdy.sharding").and_then(Attr::as_str),
        Some(r#"#sdy.sharding<@mesh, [{"x"}, {}]>"#)
    );
    assert_eq!(
        text(node(g, "sdy.sharding_constraint"), "sharding"),
        r#"#sdy.sharding<@mesh, [{"x"}, {}]>"#
    );
    let mc = node(g, "sdy.manual_computation");
    assert_eq!(text(mc, "manual_axes"), r#"#sdy<manual_axes{"x"}>"#);
    assert_eq!(text(mc, "in_shardings"), r#"#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>"#);
    let body = &mc.subgraphs[0].1;
    assert_eq!(
        body.attrs,
        vec![("tpuport.terminator".to_owned(), Attr::Str("sdy.return".to_owned()))]
    );
    assert_eq!(text(node(body, "stablehlo.all_reduce"), "use_global_device_ids"), "unit");
    let mesh = m.metadata.properties.iter().find(|(k, _)| k == "mlir.module_op").unwrap();
    assert_eq!(
        mesh.1,
        r#""sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 8 : i64}]}} : () -> ()"#
    );
    assert!(printed.contains(r#""sdy.return"(%v"#), "{printed}");
    assert!(printed.contains("use_global_device_ids}>"), "{printed}");
}

#[test]
fn types_of_every_kind() {
    let args = "%a: tensor<2x?x3xf32>, %b: tensor<*xf32>, %c: tensor<f32>, %d: tensor<4xi1>, %e: tensor<4xui8>, %f: tensor<4xcomplex<f64>>, %g: !stablehlo.token, %h: tensor<4xf32, #sparse>, %i: tensor<4xf8E5M2>, %j: tensor<4x!quant.uniform<i8:f32, 1.000000e-01>>, %k: tensor<3xi4>, %l: tensor<2xf8E4M3B11FNUZ>";
    let s = format!(
        "#sparse = #sparse_tensor.encoding<{{ map = (d0) -> (d0 : compressed) }}>\n{}",
        func("    return %a : tensor<2x?x3xf32>", args, "tensor<2x?x3xf32>")
    );
    let (m, printed) = rt(&s);
    let g = &m.graph;
    let ty = |i: usize| g.value(g.inputs[i]).ty.clone();
    assert_eq!(ty(0).shape, Some(Shape(vec![Dim::Known(2), Dim::unknown(), Dim::Known(3)])));
    assert_eq!((ty(1).dtype, ty(1).shape), (Some(DType::F32), None));
    assert_eq!(ty(2).shape, Some(Shape::scalar()));
    assert_eq!(ty(3).dtype, Some(DType::Bool));
    assert_eq!(ty(4).dtype, Some(DType::U8));
    assert_eq!(ty(5).dtype, Some(DType::C128));
    assert_eq!(ty(6).dtype, None);
    assert_eq!(ty(7).dtype, None, "encoded tensors are not plain tensors");
    assert_eq!(ty(8).dtype, Some(DType::F8E5M2));
    assert_eq!(ty(10).dtype, Some(DType::I4));
    assert_eq!(ty(11).dtype, None);
    for (i, t) in [
        (6, "!stablehlo.token"),
        (7, "tensor<4xf32, #sparse>"),
        (9, "tensor<4x!quant.uniform<i8:f32, 1.000000e-01>>"),
        (11, "tensor<2xf8E4M3B11FNUZ>"),
    ] {
        assert_eq!(
            super::arg_attr(g, i, "tpuport.type"),
            Some(&Attr::Str(t.to_owned())),
            "arg {i}"
        );
        assert!(printed.contains(t), "{t} in {printed}");
    }
    assert!(printed.starts_with("#sparse = #sparse_tensor.encoding<"), "{printed}");
}

#[test]
fn constants_hex_splat_list_weights_and_resources() {
    let hex: String =
        (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).map(|b| format!("{b:02X}")).collect();
    let body = format!(
        r#"    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<128x128xf32>
    %cst_1 = stablehlo.constant dense<[1.000000e+00, 2.500000e+00]> : tensor<2xbf16>
    %cst_2 = stablehlo.constant dense<"0x{hex}"> : tensor<8x8xf32>
    %cst_3 = stablehlo.constant dense_resource<blob1> : tensor<64xi32>
    %cst_4 = stablehlo.constant dense_resource<__elided__> : tensor<100xf32>
    %c = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
    %cst_5 = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>
    %cst_6 = stablehlo.constant dense<true> : tensor<i1>
    return %cst_2 : tensor<8x8xf32>"#
    );
    let blob: String = std::iter::once("04000000".to_owned())
        .chain((0..64i32).map(|i| i.to_le_bytes().iter().map(|b| format!("{b:02X}")).collect()))
        .collect();
    let s = format!(
        "{}{{-#\n  dialect_resources: {{\n    builtin: {{\n      blob1: \"0x{blob}\"\n    }}\n  }}\n#-}}\n",
        func(&body, "", "tensor<8x8xf32>")
    );
    let (m, printed) = rt(&s);
    let g = &m.graph;
    let consts: Vec<&Node> = g.nodes.iter().filter(|n| n.op == "stablehlo.constant").collect();
    assert_eq!(text(consts[0], "value"), "dense<0xFF800000> : tensor<f32>");
    assert_eq!(
        text(consts[1], "value"),
        "dense<1.000000e+00> : tensor<128x128xf32>",
        "splats stay text"
    );
    assert!(matches!(consts[2].attr("value"), Some(Attr::Text(_))), "small constants stay text");
    let Some(Attr::Weight(w)) = consts[3].attr("value") else { panic!("{:?}", consts[3].attrs) };
    let w = m.weights.get(*w);
    assert_eq!(
        (w.name.as_str(), w.dtype, w.shape.clone()),
        ("main/%cst_2", DType::F32, vec![8, 8])
    );
    assert_eq!(&w.bytes().unwrap()[4..8], &1f32.to_le_bytes());
    let Some(Attr::Weight(r)) = consts[4].attr("value") else { panic!("{:?}", consts[4].attrs) };
    let r = m.weights.get(*r);
    assert_eq!(&r.bytes().unwrap()[8..12], &2i32.to_le_bytes());
    assert_eq!(text(consts[5], "value"), "dense_resource<__elided__> : tensor<100xf32>");
    assert!(m.notes.iter().any(|n| n.code == "elided-constant" && n.level == NoteLevel::Warning));
    assert_eq!(g.value(consts[7].outputs[0]).ty.dtype, Some(DType::C64));
    assert!(printed.contains(&format!("dense<\"0x{hex}\"> : tensor<8x8xf32>")), "{printed}");
    assert!(!printed.contains("dialect_resources"), "resources are inlined: {printed}");
    assert_eq!(m.weights.len(), 2);
}

#[test]
fn locations_resolve_aliases_and_argument_locations() {
    let s = r##"#loc1 = loc("x")
module @jit_f attributes {jax.uses_shape_polymorphism = false} {
  func.func public @main(%arg0: tensor<4xf32> loc("x")) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<4xf32> loc(#loc3)
    %1 = stablehlo.cosine %0 : tensor<4xf32> loc(#loc)
    return %1 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/tmp/f.py":5:11 to :19)
#loc3 = loc("jit(f)/sin"(#loc2))
"##;
    let (m, printed) = rt(s);
    let g = &m.graph;
    assert_eq!(
        node(g, "stablehlo.sine").location.as_deref(),
        Some(r#""jit(f)/sin"("/tmp/f.py":5:11 to :19)"#)
    );
    assert_eq!(node(g, "stablehlo.cosine").location, None);
    assert_eq!(super::arg_attr(g, 0, "tpuport.loc"), Some(&Attr::Str("\"x\"".into())));
    assert_eq!(
        super::short_location(node(g, "stablehlo.sine").location.as_deref().unwrap()),
        "jit(f)/sin"
    );
    assert!(printed.contains(r#"loc("jit(f)/sin"("/tmp/f.py":5:11 to :19))"#), "{printed}");
    assert!(printed.contains(r#"%arg0: tensor<4xf32> loc("x")"#), "{printed}");
}

#[test]
fn unknown_pretty_syntax_is_a_node_not_a_failure() {
    let body = r#"    %0 = chlo.erf_inv %arg0 : tensor<4xf32> -> tensor<4xf32>
    %1 = mydialect.frob %0 with <<weird>> stuff : (tensor<4xf32>) -> tensor<4xf32>
    %2 = shape.shape_of %1 : tensor<4xf32> -> tensor<1xindex>
    %3 = stablehlo.dynamic_broadcast_in_dim %1, %2, dims = [0] : (tensor<4xf32>, tensor<1xindex>) -> tensor<4xf32>
    return %3 : tensor<4xf32>"#;
    let (m, printed) = rt(&func(body, "%arg0: tensor<4xf32>", "tensor<4xf32>"));
    let g = &m.graph;
    let erf = node(g, "chlo.erf_inv");
    assert_eq!(g.value(erf.outputs[0]).ty.dtype, Some(DType::F32));
    let frob = node(g, "mydialect.frob");
    assert_eq!(frob.inputs.len(), 1);
    assert_eq!(g.value(frob.outputs[0]).ty.shape, Some(Shape::fixed(&[4])));
    assert!(frob.attr("tpuport.unparsed").is_some());
    assert!(m.notes.iter().any(|n| n.code == "unparsed-op-syntax"));
    let so = node(g, "shape.shape_of");
    assert_eq!(node(g, "stablehlo.dynamic_broadcast_in_dim").inputs[1], Some(so.outputs[0]));
    assert_eq!(
        node(g, "stablehlo.dynamic_broadcast_in_dim").attr("broadcast_dimensions"),
        Some(&Attr::Ints(vec![0]))
    );
    assert!(
        printed.contains(r#"%v0 = "chlo.erf_inv"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>"#),
        "{printed}"
    );
}

#[test]
fn generic_module_as_printed_parses() {
    let s = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main", res_attrs = [{jax.result_info = "r"}]}> ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
"#;
    let (m, _) = rt(s);
    assert_eq!(m.metadata.properties[0], ("sym_name".to_owned(), "m".to_owned()));
    assert_eq!(node(&m.graph, "stablehlo.add").inputs.len(), 2);
    assert_eq!(super::result_attr(&m.graph, 0, "jax.result_info"), Some(&Attr::Str("r".into())));
}

#[test]
fn malformed_text_is_a_clear_error() {
    let e = err(
        "module @m {\n  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n",
    );
    assert!(e.starts_with("t.mlir: 4:1: expected `}` to close the region opened at 2:"), "{e}");
    let e = err(
        "module @m { func.func @f() { %0 = stablehlo.add %1, %1 : tensor<f32>\n return %0 : tensor<f32> } }",
    );
    assert!(e.contains("1:30: use of undefined value %1"), "{e}");
    let e = err("module @m {\n  ??? \n}");
    assert!(e.contains("2:3: expected an operation name, found `?`"), "{e}");
    assert!(err("\u{0}\u{1}garbage").contains("1:1: unexpected character"));
    let e = err("func.func @f(%a: tensor<99999999999999999999xf32>) { return }");
    assert!(
        e.contains("1:25: dimension 99999999999999999999 in `tensor<...>` is too large"),
        "{e}"
    );
    let e = err(r#"func.func @f() { %0:2 = "x.y"() : () -> tensor<f32> }"#);
    assert!(e.contains("names 2 results but its type lists 1"), "{e}");
    let e = err(r#"func.func @f() { %0 = "x.y"() {a = "unterminated} : () -> tensor<f32> }"#);
    assert!(e.contains("unterminated string"), "{e}");
    let e = err("func.func @f(%a: tensor<4xf32) { return }");
    assert!(e.contains("expected `>` to close `tensor<...>`"), "{e}");
}

#[test]
fn deep_nesting_is_bounded_not_a_stack_overflow() {
    let n = 100_000;
    let parens = format!(
        "func.func @f() {{ %0 = \"x.y\"() {{a = {}1{}}} : () -> tensor<f32> }}",
        "(".repeat(n),
        ")".repeat(n)
    );
    let regions = format!("func.func @f() {{ {} }}", "\"x.y\"() ({ ".repeat(n));
    let braces = format!(
        "func.func @f() {{ %0 = \"x.y\"() {{a = {}}} : () -> tensor<f32> }}",
        "{".repeat(n)
    );
    let types = format!("func.func @f(%a: {}f32) {{ return }}", "tensor<".repeat(n));
    let tuples = format!("func.func @f(%a: {}f32) {{ return }}", "tuple<".repeat(n));
    let angles = format!("func.func @f(%a: !x.y{}) {{ return }}", "<".repeat(n));
    for s in [parens, regions, braces, types, tuples, angles] {
        let e = err(&s);
        assert!(e.contains("nesting deeper than 256 levels (Limits::max_nesting)"), "{e}");
    }
    // Within the limit, nesting is fine.
    let ok = format!(
        "func.func @f() {{ %0 = \"x.y\"() {{a = {}1{}}} : () -> tensor<f32>\n return %0 : tensor<f32> }}",
        "[".repeat(200),
        "]".repeat(200)
    );
    parse(&ok);
}

#[test]
fn item_limit_is_enforced() {
    let limits = Limits { max_items: 3, ..Limits::default() };
    let body = "%0 = stablehlo.constant dense<0> : tensor<i32>\n".repeat(5);
    let e =
        parse_text(Path::new("t.mlir"), &format!("func.func @f() {{ {body} return }}"), &limits)
            .unwrap_err();
    assert!(e.to_string().contains("more than 3 operations (Limits::max_items)"), "{e}");
}

#[test]
fn sniff_and_bytecode() {
    let imp = super::StablehloImporter;
    assert!(imp.sniff(Path::new("a.mlir"), b""));
    assert!(imp.sniff(Path::new("a.stablehlo"), b""));
    assert!(imp.sniff(Path::new("x"), b"  // comment\n module @jit_f"));
    assert!(imp.sniff(Path::new("x"), b"#loc1 = loc(\"x\")"));
    assert!(imp.sniff(Path::new("x"), b"func.func @f"));
    assert!(imp.sniff(Path::new("x"), b"ML\xEFR\x0dStableHLO"));
    assert!(!imp.sniff(Path::new("x.onnx"), b"\x08\x07\x12"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.mlirbc");
    std::fs::write(&p, b"ML\xEFR\x0dStableHLO_v1.15.0\x00\x01\x02\x03").unwrap();
    let m = crate::open(&p, &crate::ImportOptions::default()).unwrap();
    assert_eq!(m.format, tpuport_model::ModelFormat::StablehloBytecode);
    assert_eq!(m.metadata.stablehlo_version.as_deref(), Some("1.15.0"));
    assert_eq!(m.notes[0].code, "bytecode-opaque");
    std::fs::write(&p, b"ML\xEFR\x0dStableHLO_v1.15.0").unwrap();
    let e = crate::open(&p, &crate::ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("m.mlirbc") && e.contains("not terminated"), "{e}");
    let t = dir.path().join("m.mlir");
    std::fs::write(&t, [0xffu8, 0xfe, b'm']).unwrap();
    let e = crate::open(&t, &crate::ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("not UTF-8"), "{e}");
}
