//! Hand-written hostile requests: each gets a 4xx in the protocol's error form (or, for
//! transport-level garbage, a 4xx or a closed connection), never a 5xx, and the server keeps
//! answering correctly afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Running, binary_infer, metric, mlp_repo, options, raw_request, values};

#[test]
fn hostile_requests_get_4xx_and_the_server_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = mlp_repo(tmp.path(), "mlp", "instances = 1");
    let mut o = options(tmp.path());
    o.limits.max_body_bytes = 1 << 20;
    o.limits.body_read_timeout = std::time::Duration::from_secs(2);
    let srv = Running::start(o);
    let x = values(784, 5);
    let (_, good) = binary_infer(&x, 1, "");
    let head_len = good.len() - 784 * 4;
    let hl = |n: usize| vec![("Inference-Header-Content-Length", n.to_string())];
    let json = |v: serde_json::Value| v.to_string().into_bytes();
    let f32_in = |shape: serde_json::Value, dt: &str, data: serde_json::Value| {
        json(
            serde_json::json!({"inputs": [{"name": "x", "shape": shape, "datatype": dt, "data": data}]}),
        )
    };
    let zeros: Vec<f32> = vec![0.0; 784];
    // (what, path, headers, body, expected status)
    type Case<'a> = (&'a str, &'a str, Vec<(&'a str, String)>, Vec<u8>, u16);
    let cases: Vec<Case<'_>> = vec![
        ("unknown model", "/v2/models/nope/infer", vec![], f32_in(serde_json::json!([1, 784]), "FP32", serde_json::json!(zeros)), 404),
        ("invalid JSON", "/v2/models/mlp/infer", vec![], b"{\"inputs\": [".to_vec(), 400),
        ("not an object", "/v2/models/mlp/infer", vec![], b"[1,2,3]".to_vec(), 400),
        ("empty body", "/v2/models/mlp/infer", vec![], Vec::new(), 400),
        ("wrong dtype", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 784]), "INT32", serde_json::json!(vec![0; 784])), 400),
        ("unknown dtype", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 784]), "FLOAT99", serde_json::json!(zeros)), 400),
        ("wrong row shape", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 783]), "FP32", serde_json::json!(vec![0.0; 783])), 400),
        ("rank 1", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([784]), "FP32", serde_json::json!(zeros)), 400),
        ("batch 0", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([0, 784]), "FP32", serde_json::json!([])), 400),
        ("negative dim", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([-1, 784]), "FP32", serde_json::json!(zeros)), 400),
        ("2^40 rows", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1u64 << 40, 784]), "FP32", serde_json::json!(zeros)), 400),
        ("2^62 rows", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1u64 << 62, 784]), "FP32", serde_json::json!(zeros)), 400),
        ("dim past i64", "/v2/models/mlp/infer", vec![], b"{\"inputs\":[{\"name\":\"x\",\"shape\":[99999999999999999999,784],\"datatype\":\"FP32\",\"data\":[]}]}".to_vec(), 400),
        ("too few values", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 784]), "FP32", serde_json::json!([1.0, 2.0])), 400),
        ("too many values", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 784]), "FP32", serde_json::json!(vec![0.0; 785])), 400),
        ("strings as data", "/v2/models/mlp/infer", vec![], f32_in(serde_json::json!([1, 784]), "FP32", serde_json::json!(vec!["a"; 784])), 400),
        ("no data", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32"}]})), 400),
        ("missing input", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": []})), 400),
        ("unknown input", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "y", "shape": [1, 784], "datatype": "FP32", "data": zeros}]})), 400),
        ("input twice", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [
            {"name": "x", "shape": [1, 784], "datatype": "FP32", "data": zeros},
            {"name": "x", "shape": [1, 784], "datatype": "FP32", "data": zeros}]})), 400),
        ("unknown output", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": zeros}], "outputs": [{"name": "nope"}]})), 400),
        ("priority out of range", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": zeros}], "parameters": {"priority": 9}})), 400),
        ("priority a string", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "data": zeros}], "parameters": {"priority": "high"}})), 400),
        ("truncated binary", "/v2/models/mlp/infer", hl(head_len), good[..good.len() - 10].to_vec(), 400),
        ("extra binary bytes", "/v2/models/mlp/infer", hl(head_len), [good.clone(), vec![0u8; 8]].concat(), 400),
        ("header length past body", "/v2/models/mlp/infer", hl(good.len() + 1), good.clone(), 400),
        ("header length not a number", "/v2/models/mlp/infer", vec![("Inference-Header-Content-Length", "12x".into())], good.clone(), 400),
        ("header length cuts JSON", "/v2/models/mlp/infer", hl(10), good.clone(), 400),
        ("binary size mismatch", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "parameters": {"binary_data_size": 12}}]})), 400),
        ("binary size huge", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32", "parameters": {"binary_data_size": u64::MAX}}]})), 400),
        ("unknown field", "/v2/models/mlp/infer", vec![], json(serde_json::json!({"inputs": [], "bogus": 1})), 400),
        ("body over limit", "/v2/models/mlp/infer", vec![], vec![b' '; (1 << 20) + 1], 413),
        ("unknown version", "/v2/models/mlp/versions/9/infer", vec![], f32_in(serde_json::json!([1, 784]), "FP32", serde_json::json!(zeros)), 404),
        ("control off", "/v2/repository/models/mlp/load", vec![], Vec::new(), 403),
        ("no such path", "/v2/models/mlp/explode", vec![], Vec::new(), 404),
    ];
    for (what, path, headers, body, want) in cases {
        let r = srv.post(path, &headers, &body);
        assert_eq!(r.status, want, "{what}: {}", String::from_utf8_lossy(&r.body));
        let e = r.json();
        let msg = e["error"].as_str().unwrap_or_else(|| panic!("{what}: no error field: {e}"));
        assert!(!msg.contains('\n') && !msg.is_empty(), "{what}: {msg:?}");
        assert!(!msg.contains(tmp.path().to_str().unwrap()), "{what}: leaks a path: {msg}");
    }
    // Transport-level garbage: a 4xx or a closed connection, never a 5xx.
    let addr = srv.addr;
    let huge_header =
        format!("GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(200_000));
    let chunked_over = {
        let mut v = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for _ in 0..40 {
            v.extend_from_slice(format!("{:x}\r\n", 64 << 10).as_bytes());
            v.extend(std::iter::repeat_n(b' ', 64 << 10));
            v.extend_from_slice(b"\r\n");
        }
        v.extend_from_slice(b"0\r\n\r\n");
        v
    };
    for (what, raw) in [
        ("garbage", b"\x00\x01\x02 not http\r\n\r\n".to_vec()),
        ("bad request line", b"GET\r\n\r\n".to_vec()),
        ("huge header", huge_header.into_bytes()),
        ("chunked body over the limit", chunked_over),
        ("content-length lies", b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{}".to_vec()),
    ] {
        if let Ok(r) = std::thread::spawn(move || raw_request(addr, &raw)).join().unwrap() {
            assert!((400..500).contains(&r.status), "{what}: {}", r.status);
        }
    }
    // Still serving, correctly.
    let (h, b) = binary_infer(&x, 1, "");
    let r = srv.post("/v2/models/mlp/infer", &h, &b);
    assert_eq!(r.status, 200);
    mlp.check(&x, &common::le_f32(r.tail()), &[0]).unwrap();
    let text = srv.metrics();
    assert_eq!(metric(&text, "tpuport_compiles_after_ready_total"), Some(0.0));
    // Each refusal counted once under its reason (unknown models and versions have no series);
    // the two requests whose row shape differs are shape drift, and their shape is counted.
    let refused = |reason: &str| {
        metric(&text, &format!("tpuport_input_refusals_total{{model=\"mlp\",reason=\"{reason}\"}}"))
    };
    for (reason, n) in [
        ("wrong_dtype", 2.0),
        ("wrong_shape", 4.0),
        // Two shapes past the limit, the body over it, the chunked body over it.
        ("too_large", 4.0),
        ("missing_input", 1.0),
        ("unknown_input", 1.0),
        ("duplicate_input", 1.0),
        ("batch_mismatch", 0.0),
    ] {
        assert_eq!(refused(reason), Some(n), "{reason}:\n{text}");
    }
    assert!(refused("malformed").unwrap_or(0.0) >= 10.0, "{text}");
    assert_eq!(
        metric(&text, "tpuport_shape_drift_total{model=\"mlp\",input=\"x\",kind=\"row_shape\"}"),
        Some(2.0)
    );
    assert_eq!(
        metric(&text, "tpuport_input_shapes_total{model=\"mlp\",input=\"x\",shape=\"Nx783\"}"),
        Some(1.0)
    );
    assert!(!text.contains("code=\"500\""), "{text}");
    srv.stop().unwrap();
}

#[test]
fn a_model_that_fails_to_load_is_reported_and_the_others_serve() {
    let tmp = tempfile::tempdir().unwrap();
    mlp_repo(tmp.path(), "mlp", "");
    // A broken model: its module path escapes the repository.
    let bad = tmp.path().join("broken");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("config.toml"),
        "[model]\nkind = \"stablehlo\"\nmodules = { \"1\" = \"../mlp/mlp_b1.mlir\" }\n",
    )
    .unwrap();
    let srv = Running::start(options(tmp.path()));
    let f = srv.failures();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].starts_with("broken:") && f[0].contains("without `..`"), "{f:?}");
    assert_eq!(srv.get("/v2/models/mlp/ready").status, 200);
    assert_eq!(srv.get("/v2/models/broken/ready").status, 503);
    let r = srv.get("/v2/models/broken");
    assert_eq!(r.status, 503);
    srv.stop().unwrap();
}
