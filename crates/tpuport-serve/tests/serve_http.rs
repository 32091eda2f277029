//! The REST front end end to end: a real server on 127.0.0.1, the real CPU PJRT plugin, the
//! JAX MLP fixture, answers checked against a host reference computed here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_precision_loss)]

mod common;

use std::time::Duration;

use common::{Running, binary_infer, le_f32, metric, mlp_repo, options, values};

#[test]
fn endpoints_json_and_binary_infer_match_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = mlp_repo(tmp.path(), "mlp", "max_queue_delay_us = 1000\ninstances = 2");
    let srv = Running::start(options(tmp.path()));

    assert_eq!(srv.get("/v2/health/live").status, 200);
    assert_eq!(srv.get("/v2/health/ready").status, 200);
    let meta = srv.get("/v2").json();
    assert_eq!(meta["name"], "tpuport");
    assert!(meta["extensions"].as_array().unwrap().iter().any(|e| e == "binary_tensor_data"));
    let m = srv.get("/v2/models/mlp").json();
    assert_eq!(m["inputs"][0]["name"], "x");
    assert_eq!(m["inputs"][0]["shape"], serde_json::json!([-1, 784]));
    assert_eq!(m["outputs"][0]["name"], "probs");
    assert_eq!(m["outputs"][0]["datatype"], "FP32");
    assert_eq!(m["versions"], serde_json::json!(["1"]));
    assert_eq!(srv.get("/v2/models/mlp/versions/1").json()["name"], "mlp");
    assert_eq!(srv.get("/v2/models/mlp/ready").status, 200);
    assert_eq!(srv.get("/v2/models/mlp/versions/1/ready").status, 200);
    assert_eq!(srv.get("/v2/models/mlp/versions/7/ready").status, 404);
    assert_eq!(srv.get("/v2/models/nope/ready").status, 404);

    // JSON in, JSON out, 3 rows (padded into bucket 128), nested data, id echoed.
    let x = values(3 * 784, 1);
    let nested: Vec<Vec<f32>> = x.chunks(784).map(<[f32]>::to_vec).collect();
    let body = serde_json::json!({
        "id": "req-1",
        "inputs": [{"name": "x", "shape": [3, 784], "datatype": "FP32", "data": nested}],
    });
    let r = srv.post("/v2/models/mlp/infer", &[], body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let j = r.json();
    assert_eq!(j["id"], "req-1");
    assert_eq!(j["model_name"], "mlp");
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([3, 10]));
    let got: Vec<f32> = j["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    mlp.check(&x, &got, &[0, 1, 2]).unwrap();

    // Binary in, binary out, 200 rows: split over buckets 128 + 128 (72 real rows).
    let x = values(200 * 784, 2);
    let (h, b) = binary_infer(&x, 200, "");
    let r = srv.post("/v2/models/mlp/infer", &h, &b);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["outputs"][0]["parameters"]["binary_data_size"], 200 * 40);
    let got = le_f32(r.tail());
    assert_eq!(got.len(), 2000);
    mlp.check(&x, &got, &[0, 1, 127, 128, 150, 199]).unwrap();

    // Versioned path, one requested output in JSON although the request says binary.
    let x = values(784, 3);
    let (h, _) = binary_infer(&x, 1, "");
    let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let head = format!(
        "{{\"inputs\":[{{\"name\":\"x\",\"shape\":[1,784],\"datatype\":\"FP32\",\
         \"parameters\":{{\"binary_data_size\":{}}}}}],\"outputs\":[{{\"name\":\"probs\",\
         \"parameters\":{{\"binary_data\":false}}}}],\"parameters\":{{\"binary_data_output\":true}}}}",
        data.len()
    );
    let mut body = head.clone().into_bytes();
    body.extend_from_slice(&data);
    let _ = h;
    let r = srv.post(
        "/v2/models/mlp/versions/1/infer",
        &[("Inference-Header-Content-Length", head.len().to_string())],
        &body,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("inference-header-content-length").is_none());
    let got: Vec<f32> = r.json()["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    mlp.check(&x, &got, &[0]).unwrap();

    let text = srv.metrics();
    assert_eq!(metric(&text, "tpuport_compiles_after_ready_total"), Some(0.0));
    assert_eq!(
        metric(&text, "tpuport_requests_total{model=\"mlp\",protocol=\"http\",code=\"200\"}"),
        Some(3.0)
    );
    assert_eq!(
        metric(
            &text,
            "tpuport_shape_drift_total{model=\"mlp\",input=\"x\",kind=\"batch_over_max\"}"
        ),
        Some(1.0)
    );
    // A batch between buckets is dynamic batching, not drift: no series counts it.
    assert!(!text.contains("batch_not_bucket"), "{text}");
    assert_eq!(
        metric(&text, "tpuport_input_shapes_total{model=\"mlp\",input=\"x\",shape=\"Nx784\"}"),
        Some(3.0)
    );
    assert_eq!(
        metric(&text, "tpuport_input_refusals_total{model=\"mlp\",reason=\"wrong_shape\"}"),
        Some(0.0)
    );
    assert_eq!(metric(&text, "tpuport_executions_total{model=\"mlp\",bucket=\"128\"}"), Some(3.0));
    assert_eq!(metric(&text, "tpuport_executions_total{model=\"mlp\",bucket=\"1\"}"), Some(1.0));
    assert_eq!(metric(&text, "tpuport_server_ready"), Some(1.0));
    srv.stop().unwrap();
}

/// Many clients, each with distinct inputs, hammer one model: input buffers are uploaded and
/// freed constantly (the stale-input report of stop 9). Every answer must be its own.
#[test]
fn hammering_with_distinct_inputs_gives_every_client_its_own_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp =
        std::sync::Arc::new(mlp_repo(tmp.path(), "mlp", "max_queue_delay_us = 500\ninstances = 3"));
    let srv = Running::start(options(tmp.path()));
    let addr = srv.addr;
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let mlp = mlp.clone();
            std::thread::spawn(move || {
                let mut bad = Vec::new();
                for i in 0..20u64 {
                    let rows = 1 + ((t * 7 + i * 3) % 9) as usize;
                    let x = values(rows * 784, 1000 + t * 100 + i);
                    let (h, b) = binary_infer(&x, rows, "");
                    let r = common::request(addr, "POST", "/v2/models/mlp/infer", &h, &b).unwrap();
                    if r.status != 200 {
                        bad.push(format!("status {}", r.status));
                        continue;
                    }
                    let got = le_f32(r.tail());
                    if let Err(e) = mlp.check(&x, &got, &[0, rows - 1]) {
                        bad.push(format!("thread {t} request {i}: {e}"));
                    }
                }
                bad
            })
        })
        .collect();
    let bad: Vec<String> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert!(bad.is_empty(), "{} wrong answers: {:?}", bad.len(), &bad[..bad.len().min(5)]);
    let text = srv.metrics();
    assert_eq!(metric(&text, "tpuport_compiles_after_ready_total"), Some(0.0));
    // Batching happened: fewer executions than requests.
    let execs = metric(&text, "tpuport_executions_total{model=\"mlp\",bucket=\"128\"}")
        .unwrap_or(0.0)
        + metric(&text, "tpuport_executions_total{model=\"mlp\",bucket=\"1\"}").unwrap_or(0.0);
    assert!(execs < 160.0, "{execs} executions for 160 requests");
    srv.stop().unwrap();
}

#[test]
fn a_full_queue_answers_503_with_retry_after_and_counts_each() {
    let tmp = tempfile::tempdir().unwrap();
    // `wait_when_idle`: the delay holds even the first request, so the queue fills.
    mlp_repo(
        tmp.path(),
        "mlp",
        "max_queue_delay_us = 200000\nwait_when_idle = true\nmax_queue_size = 2\ninstances = 1",
    );
    let srv = Running::start(options(tmp.path()));
    let addr = srv.addr;
    let threads: Vec<_> = (0..12u64)
        .map(|t| {
            std::thread::spawn(move || {
                let x = values(784, t);
                let (h, b) = binary_infer(&x, 1, "");
                common::request(addr, "POST", "/v2/models/mlp/infer", &h, &b).unwrap()
            })
        })
        .collect();
    let resps: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let rejected: Vec<_> = resps.iter().filter(|r| r.status == 503).collect();
    let ok = resps.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok + rejected.len(), 12, "{:?}", resps.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(!rejected.is_empty(), "a queue of 2 took 12 requests at once");
    for r in &rejected {
        assert_eq!(r.header("retry-after"), Some("1"));
        assert!(r.json()["error"].as_str().unwrap().contains("queue full"));
    }
    let text = srv.metrics();
    assert_eq!(
        metric(&text, "tpuport_rejections_total{model=\"mlp\",reason=\"queue_full\"}"),
        Some(rejected.len() as f64)
    );
    srv.stop().unwrap();
}

#[test]
fn a_request_timeout_in_the_queue_is_a_counted_503() {
    let tmp = tempfile::tempdir().unwrap();
    // A 300 ms batching delay that holds a lone request too (`wait_when_idle`) and a 20 ms
    // request timeout: the request expires while queued.
    mlp_repo(
        tmp.path(),
        "mlp",
        "max_queue_delay_us = 300000\nwait_when_idle = true\ninstances = 1",
    );
    let srv = Running::start(options(tmp.path()));
    let x = values(784, 9);
    let (h, b) = binary_infer(&x, 1, ",\"timeout\":20000");
    let r = srv.post("/v2/models/mlp/infer", &h, &b);
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["error"].as_str().unwrap().contains("timed out"));
    assert_eq!(
        metric(&srv.metrics(), "tpuport_rejections_total{model=\"mlp\",reason=\"timeout\"}"),
        Some(1.0)
    );
    srv.stop().unwrap();
}

/// SIGTERM's drain (the shutdown future here) during a load run: every request the server
/// answered reached its client (server and client counts agree), every 200 is correct, and
/// `serve` returns Ok. Connections the server never read (refused, or reset from the accept
/// backlog when the listener closes) are the only other outcome.
#[test]
fn shutdown_under_load_loses_no_accepted_request() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = std::sync::Arc::new(mlp_repo(
        tmp.path(),
        "mlp",
        "max_queue_delay_us = 2000\ninstances = 2",
    ));
    let mut srv = Running::start(options(tmp.path()));
    let addr = srv.addr;
    let state = srv.state.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let (mlp, stop) = (mlp.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut ok, mut unavailable, mut unread, mut bad) = (0u64, 0u64, 0u64, Vec::new());
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 400 {
                    i += 1;
                    let rows = 1 + (i % 4) as usize;
                    let x = values(rows * 784, t * 10_000 + i);
                    let (h, b) = binary_infer(&x, rows, "");
                    match common::request(addr, "POST", "/v2/models/mlp/infer", &h, &b) {
                        Ok(r) if r.status == 200 => {
                            match mlp.check(&x, &le_f32(r.tail()), &[rows - 1]) {
                                Ok(()) => ok += 1,
                                Err(e) => bad.push(e),
                            }
                        }
                        Ok(r) if r.status == 503 => unavailable += 1,
                        Ok(r) => bad.push(format!("status {}", r.status)),
                        Err(_) => {
                            unread += 1;
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                }
                (ok, unavailable, unread, bad)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // Stop only while requests are queued (each waits up to the 2 ms batching delay), so the
    // drain has work to finish: the run is really under load at the signal.
    let depth = |t: &str| metric(t, "tpuport_queue_depth{model=\"mlp\"}").unwrap_or(0.0);
    let ok_count = |t: &str| {
        metric(t, "tpuport_requests_total{model=\"mlp\",protocol=\"http\",code=\"200\"}")
            .unwrap_or(0.0)
    };
    let waited = std::time::Instant::now();
    let mut at_stop = state.metrics().render();
    while depth(&at_stop) < 1.0 && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_micros(200));
        at_stop = state.metrics().render();
    }
    srv.signal_stop();
    srv.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut ok, mut unavailable) = (0, 0);
    for t in threads {
        let (o, u, _unread, bad) = t.join().unwrap();
        assert!(bad.is_empty(), "{bad:?}");
        ok += o;
        unavailable += u;
    }
    let text = state.metrics().render();
    let served =
        metric(&text, "tpuport_requests_total{model=\"mlp\",protocol=\"http\",code=\"200\"}");
    let refused =
        metric(&text, "tpuport_requests_total{model=\"mlp\",protocol=\"http\",code=\"503\"}");
    assert!(ok > 0);
    assert!(depth(&at_stop) >= 1.0, "no request was queued when the server was stopped");
    assert!(
        served.unwrap_or(0.0) > ok_count(&at_stop),
        "no request was answered after the stop: the drain had nothing to finish"
    );
    assert_eq!(served, Some(ok as f64), "answered 200 by the server vs received");
    assert_eq!(refused.unwrap_or(0.0), unavailable as f64, "answered 503 vs received");
    assert_eq!(state.compiles_after_ready(), 0);
}
