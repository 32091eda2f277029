//! Model control with a token: index, unload and load with the right bearer token; a wrong or
//! missing token is 403 and changes nothing; an unknown model is 404.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Running, binary_infer, le_f32, metric, mlp_repo, options, values};

const TOKEN: &str = "a-control-token-of-32-characters";

fn auth(token: &str) -> Vec<(&'static str, String)> {
    vec![("Authorization", format!("Bearer {token}"))]
}

#[test]
fn load_and_unload_with_the_token_and_refuse_a_wrong_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mlp = mlp_repo(tmp.path(), "mlp", "");
    let mut opts = options(tmp.path());
    opts.control_token = Some(TOKEN.to_owned());
    let srv = Running::start(opts);
    let infer = || {
        let x = values(784, 5);
        let (h, b) = binary_infer(&x, 1, "");
        let r = srv.post("/v2/models/mlp/infer", &h, &b);
        (r.status, if r.status == 200 { le_f32(r.tail()) } else { Vec::new() }, x)
    };

    // A wrong token, a missing one and another scheme: 403 on every control endpoint.
    for headers in [
        auth("a-control-token-of-32-characterX"),
        auth(""),
        vec![("Authorization", format!("Basic {TOKEN}"))],
        Vec::new(),
    ] {
        for path in [
            "/v2/repository/index",
            "/v2/repository/models/mlp/unload",
            "/v2/repository/models/mlp/load",
        ] {
            let r = srv.post(path, &headers, b"");
            assert_eq!(r.status, 403, "{path} {headers:?}: {}", String::from_utf8_lossy(&r.body));
            assert!(r.json()["error"].as_str().unwrap().contains("token"), "{path}");
        }
    }
    assert_eq!(srv.get("/v2/models/mlp/ready").status, 200, "a refused unload changed nothing");

    let index = srv.post("/v2/repository/index", &auth(TOKEN), b"");
    assert_eq!(index.status, 200);
    assert_eq!(index.json(), serde_json::json!([{"name": "mlp", "state": "READY", "reason": ""}]));

    let r = srv.post("/v2/repository/models/mlp/unload", &auth(TOKEN), b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_ne!(srv.get("/v2/models/mlp/ready").status, 200);
    assert_eq!(infer().0, 503);
    let index = srv.post("/v2/repository/index", &auth(TOKEN), b"").json();
    assert_eq!(index[0]["state"], "UNAVAILABLE");
    assert_eq!(index[0]["reason"], "unloaded");
    assert_eq!(metric(&srv.metrics(), "tpuport_model_ready{model=\"mlp\"}"), Some(0.0));

    let r = srv.post("/v2/repository/models/mlp/load", &auth(TOKEN), b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(srv.get("/v2/models/mlp/ready").status, 200);
    let (st, got, x) = infer();
    assert_eq!(st, 200);
    mlp.check(&x, &got, &[0]).unwrap();
    let m = srv.metrics();
    assert_eq!(metric(&m, "tpuport_model_ready{model=\"mlp\"}"), Some(1.0));
    // A load after readiness compiles (both buckets), and the metric says so.
    assert_eq!(metric(&m, "tpuport_compiles_after_ready_total"), Some(2.0), "{m}");

    let r = srv.post("/v2/repository/models/nope/load", &auth(TOKEN), b"");
    assert_eq!(r.status, 404);
    let r = srv.post("/v2/repository/models/nope/unload", &auth(TOKEN), b"");
    assert_eq!(r.status, 404);
    srv.stop().unwrap();
}
