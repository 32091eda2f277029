//! gRPC (`inference.GRPCInferenceService`) from a hand-made HTTP/2 client: typed `contents`
//! (not `raw_input_contents`) for every contents field, and hostile messages answered with a
//! gRPC status while the server keeps serving.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod common;

use std::collections::HashMap;

use bytes::Bytes;
use common::{Running, grpc_frame, grpc_infer, grpc_raw, metric, mlp_repo, options, values};
use tpuport_serve::grpc::proto::{InferInputTensor, InferTensorContents, ModelInferRequest};

/// (input name, MLIR element type, wire datatype).
const DTYPES: [(&str, &str, &str); 9] = [
    ("b", "i1", "BOOL"),
    ("u8", "ui8", "UINT8"),
    ("i16", "i16", "INT16"),
    ("i32", "i32", "INT32"),
    ("i64", "i64", "INT64"),
    ("u32", "ui32", "UINT32"),
    ("u64", "ui64", "UINT64"),
    ("f32", "f32", "FP32"),
    ("f64", "f64", "FP64"),
];

/// `<root>/dt`: bucket 4, one [N, 3] input per entry of [`DTYPES`]; outputs not(b) for BOOL,
/// x + 1 (wrapping) for integers, x * 2 + 1 for floats.
fn dtypes_repo(root: &std::path::Path) {
    let dir = root.join("dt");
    std::fs::create_dir_all(&dir).unwrap();
    let ty = |t: &str| format!("tensor<4x3x{t}>");
    let args: Vec<String> = DTYPES.iter().map(|(n, t, _)| format!("%{n}: {}", ty(t))).collect();
    let rets: Vec<String> = DTYPES.iter().map(|(_, t, _)| ty(t)).collect();
    let mut body = String::new();
    let mut outs = Vec::new();
    for (n, t, _) in DTYPES {
        let tt = ty(t);
        match t {
            "i1" => {
                body.push_str(&format!(
                    "    %{n}_c = stablehlo.constant dense<true> : {tt}\n    %{n}_r = stablehlo.xor %{n}, %{n}_c : {tt}\n"
                ));
            }
            "f32" | "f64" => body.push_str(&format!(
                "    %{n}_two = stablehlo.constant dense<2.0> : {tt}\n    %{n}_one = stablehlo.constant dense<1.0> : {tt}\n    \
                 %{n}_m = stablehlo.multiply %{n}, %{n}_two : {tt}\n    %{n}_r = stablehlo.add %{n}_m, %{n}_one : {tt}\n"
            )),
            _ => body.push_str(&format!(
                "    %{n}_c = stablehlo.constant dense<1> : {tt}\n    %{n}_r = stablehlo.add %{n}, %{n}_c : {tt}\n"
            )),
        }
        outs.push(format!("%{n}_r"));
    }
    let module = format!(
        "module @dt {{\n  func.func public @main({}) -> ({}) {{\n{body}    return {} : {}\n  }}\n}}\n",
        args.join(", "),
        rets.join(", "),
        outs.join(", "),
        rets.join(", ")
    );
    std::fs::write(dir.join("dt_b4.mlir"), module).unwrap();
    let ins: Vec<String> = DTYPES
        .iter()
        .map(|(n, _, w)| format!("[[input]]\nname = \"{n}\"\ndatatype = \"{w}\"\n"))
        .collect();
    let arg_list: Vec<String> = DTYPES.iter().map(|(n, _, _)| format!("\"input:{n}\"")).collect();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[model]\nkind = \"stablehlo\"\nmodules = {{ \"4\" = \"dt_b4.mlir\" }}\nargs = [{}]\n{}\n\
             [batching]\nbuckets = [4]\n",
            arg_list.join(", "),
            ins.join("\n")
        ),
    )
    .unwrap();
}

fn input(name: &str, datatype: &str, shape: &[i64], c: InferTensorContents) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: shape.to_vec(),
        parameters: HashMap::new(),
        contents: Some(c),
    }
}

fn request(model: &str, inputs: Vec<InferInputTensor>) -> ModelInferRequest {
    ModelInferRequest {
        model_name: model.into(),
        model_version: String::new(),
        id: "t".into(),
        parameters: HashMap::new(),
        inputs,
        outputs: Vec::new(),
        raw_input_contents: Vec::new(),
    }
}

#[test]
fn typed_contents_for_every_contents_field() {
    let tmp = tempfile::tempdir().unwrap();
    dtypes_repo(tmp.path());
    let srv = Running::start(options(tmp.path()));
    // Two rows of 3 (padded into bucket 4), with each type's extremes.
    let c = InferTensorContents::default;
    let inputs = vec![
        input(
            "b",
            "BOOL",
            &[2, 3],
            InferTensorContents {
                bool_contents: vec![true, false, true, false, false, true],
                ..c()
            },
        ),
        input(
            "u8",
            "UINT8",
            &[2, 3],
            InferTensorContents { uint_contents: vec![0, 1, 254, 255, 7, 100], ..c() },
        ),
        input(
            "i16",
            "INT16",
            &[2, 3],
            InferTensorContents { int_contents: vec![-32768, -1, 0, 1, 32766, 32767], ..c() },
        ),
        input(
            "i32",
            "INT32",
            &[2, 3],
            InferTensorContents {
                int_contents: vec![i32::MIN, -1, 0, 1, 1 << 30, i32::MAX],
                ..c()
            },
        ),
        input(
            "i64",
            "INT64",
            &[2, 3],
            InferTensorContents {
                int64_contents: vec![i64::MIN, -1, 0, 1, 1 << 40, i64::MAX],
                ..c()
            },
        ),
        input(
            "u32",
            "UINT32",
            &[2, 3],
            InferTensorContents {
                uint_contents: vec![0, 1, 2, 1 << 31, u32::MAX - 1, u32::MAX],
                ..c()
            },
        ),
        input(
            "u64",
            "UINT64",
            &[2, 3],
            InferTensorContents {
                uint64_contents: vec![0, 1, 2, 1 << 63, u64::MAX - 1, u64::MAX],
                ..c()
            },
        ),
        input(
            "f32",
            "FP32",
            &[2, 3],
            InferTensorContents { fp32_contents: vec![0.0, -1.5, 0.25, 1e30, -3.0, 7.0], ..c() },
        ),
        input(
            "f64",
            "FP64",
            &[2, 3],
            InferTensorContents { fp64_contents: vec![0.0, -1.5, 0.25, 1e300, -3.0, 7.0], ..c() },
        ),
    ];
    let r = grpc_infer(srv.addr, &request("dt", inputs)).unwrap();
    assert_eq!(r.model_name, "dt");
    assert_eq!(r.id, "t");
    assert_eq!(r.outputs.len(), 9);
    let o = |i: usize| -> &[u8] {
        assert_eq!(r.outputs[i].shape, vec![2, 3], "{}", r.outputs[i].name);
        &r.raw_output_contents[i]
    };
    assert_eq!(o(0), &[0, 1, 0, 1, 1, 0]);
    assert_eq!(o(1), &[1, 2, 255, 0, 8, 101]);
    let le =
        |b: &[u8], n: usize| -> Vec<Vec<u8>> { b.chunks_exact(n).map(<[u8]>::to_vec).collect() };
    let i16s: Vec<i16> =
        le(o(2), 2).iter().map(|c| i16::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(i16s, vec![-32767, 0, 1, 2, 32767, -32768]);
    let i32s: Vec<i32> =
        le(o(3), 4).iter().map(|c| i32::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(i32s, vec![i32::MIN + 1, 0, 1, 2, (1 << 30) + 1, i32::MIN]);
    let i64s: Vec<i64> =
        le(o(4), 8).iter().map(|c| i64::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(i64s, vec![i64::MIN + 1, 0, 1, 2, (1 << 40) + 1, i64::MIN]);
    let u32s: Vec<u32> =
        le(o(5), 4).iter().map(|c| u32::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(u32s, vec![1, 2, 3, (1 << 31) + 1, u32::MAX, 0]);
    let u64s: Vec<u64> =
        le(o(6), 8).iter().map(|c| u64::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(u64s, vec![1, 2, 3, (1 << 63) + 1, u64::MAX, 0]);
    let f32s: Vec<f32> =
        le(o(7), 4).iter().map(|c| f32::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(f32s, vec![1.0, -2.0, 1.5, 2e30 + 1.0, -5.0, 15.0]);
    let f64s: Vec<f64> =
        le(o(8), 8).iter().map(|c| f64::from_le_bytes(c[..].try_into().unwrap())).collect();
    assert_eq!(f64s, vec![1.0, -2.0, 1.5, 2e300 + 1.0, -5.0, 15.0]);

    // A value outside the datatype's range in a wider contents field is refused, not wrapped.
    let bad = input(
        "u8",
        "UINT8",
        &[1, 3],
        InferTensorContents { uint_contents: vec![1, 256, 3], ..c() },
    );
    let all = vec![bad];
    let (code, msg) = grpc_infer(srv.addr, &request("dt", all)).unwrap_err();
    assert_eq!(code, 3, "{msg}");
    assert!(msg.contains("256 is out of range"), "{msg}");
    srv.stop().unwrap();
}

#[test]
fn hostile_grpc_messages_get_a_status_and_the_server_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = mlp_repo(tmp.path(), "mlp", "");
    let srv = Running::start(options(tmp.path()));
    let c = InferTensorContents::default;
    let raw = |shape: &[i64], bytes: usize| {
        let mut r = request(
            "mlp",
            vec![InferInputTensor { contents: None, ..input("x", "FP32", shape, c()) }],
        );
        r.raw_input_contents = vec![Bytes::from(vec![0u8; bytes])];
        r
    };
    // (case, request, expected gRPC code, a word of the message)
    let cases: Vec<(&str, ModelInferRequest, i32, &str)> = vec![
        ("a shape claiming 2^40 rows", raw(&[1 << 40, 784], 3136), 3, "limit"),
        ("a huge shape of the wrong rank", raw(&[i64::MAX, i64::MAX], 3136), 3, "the model takes"),
        ("a negative dimension", raw(&[-1, 784], 3136), 3, "negative"),
        ("raw bytes shorter than the shape", raw(&[2, 784], 3136), 3, "raw bytes"),
        (
            "typed contents shorter than the shape",
            request(
                "mlp",
                vec![input(
                    "x",
                    "FP32",
                    &[1, 784],
                    InferTensorContents { fp32_contents: vec![0.5; 10], ..c() },
                )],
            ),
            3,
            "holds 10 values",
        ),
        (
            "typed contents in the wrong field",
            request(
                "mlp",
                vec![input(
                    "x",
                    "FP32",
                    &[1, 784],
                    InferTensorContents { int_contents: vec![1; 784], ..c() },
                )],
            ),
            3,
            "fp32_contents holds 0",
        ),
        (
            "contents and raw_input_contents both",
            {
                let mut r = raw(&[1, 784], 3136);
                r.inputs[0].contents =
                    Some(InferTensorContents { fp32_contents: vec![0.0; 784], ..c() });
                r
            },
            3,
            "may not be set",
        ),
        (
            "the wrong datatype",
            {
                let mut r = raw(&[1, 784], 3136);
                r.inputs[0].datatype = "FP16".into();
                r
            },
            3,
            "datatype",
        ),
        (
            "an unknown input",
            {
                let mut r = raw(&[1, 784], 3136);
                r.inputs[0].name = "nope".into();
                r
            },
            3,
            "no input",
        ),
        ("no inputs", request("mlp", Vec::new()), 3, "missing"),
        (
            "an unknown model",
            {
                let mut r = raw(&[1, 784], 3136);
                r.model_name = "nope".into();
                r
            },
            5,
            "unknown model",
        ),
        (
            "an unknown version",
            {
                let mut r = raw(&[1, 784], 3136);
                r.model_version = "9".into();
                r
            },
            5,
            "version",
        ),
    ];
    for (what, req, code, word) in &cases {
        let (got, msg) =
            grpc_infer(srv.addr, req).map(|_| (0, String::new())).unwrap_or_else(|e| e);
        assert_eq!(got, *code, "{what}: {msg}");
        assert!(msg.contains(word), "{what}: {msg}");
    }
    // Transport-level garbage: not a protobuf message (INTERNAL, as grpc-go answers an
    // unparsable request), a frame declaring 3 GiB (OUT_OF_RANGE before anything is read),
    // an unknown method (UNIMPLEMENTED).
    let path = "/inference.GRPCInferenceService/ModelInfer";
    let mut garbage = vec![0u8, 0, 0, 0, 6];
    garbage.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(grpc_raw(srv.addr, path, garbage).1, 13);
    let mut huge = vec![0u8];
    huge.extend_from_slice(&(3u32 << 30).to_be_bytes());
    huge.extend_from_slice(&[0u8; 16]);
    assert_eq!(grpc_raw(srv.addr, path, huge).1, 11);
    let (_, code, _) = grpc_raw(
        srv.addr,
        "/inference.GRPCInferenceService/ModelStreamInfer",
        grpc_frame(&request("mlp", Vec::new())),
    );
    assert_eq!(code, 12);

    // Still serving: a valid request, the answer checked against the host reference.
    let x = values(784, 9);
    let mut ok = raw(&[1, 784], 0);
    ok.raw_input_contents =
        vec![Bytes::from(x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())];
    let r = grpc_infer(srv.addr, &ok).unwrap();
    mlp.check(&x, &common::le_f32(&r.raw_output_contents[0]), &[0]).unwrap();
    let m = srv.metrics();
    assert_eq!(metric(&m, "tpuport_compiles_after_ready_total"), Some(0.0));
    assert_eq!(
        metric(&m, "tpuport_requests_total{model=\"mlp\",protocol=\"grpc\",code=\"OK\"}"),
        Some(1.0),
        "{m}"
    );
    srv.stop().unwrap();
}
