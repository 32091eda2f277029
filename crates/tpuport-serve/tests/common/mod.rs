//! Shared helpers: a model repository built from the JAX MLP fixtures, an in-process server,
//! a raw HTTP/1.1 client (so hostile requests can be sent byte for byte), and the MLP's host
//! reference.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    unreachable_pub,
    clippy::missing_panics_doc
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use tpuport_exec::Model;
use tpuport_model::DType;
use tpuport_serve::{Reporter, ServeError, ServeOptions};

/// The MLP's weights (w1 784x512, b1 512, w2 512x10, b2 10), read from the fixture.
pub struct Mlp {
    pub w: Vec<Vec<f32>>,
}

/// Writes `<root>/<name>`, the JAX MLP entry of [`tpuport_testkit::mlp_repo::write`], with
/// `batching` appended to the config's `[batching]` table.
pub fn mlp_repo(root: &Path, name: &str, batching: &str) -> Mlp {
    let (_, w) = tpuport_testkit::mlp_repo::write(root, name, batching);
    Mlp { w }
}

impl Mlp {
    /// softmax(relu(x @ w1 + b1) @ w2 + b2) for one row of 784.
    pub fn row(&self, x: &[f32]) -> Vec<f64> {
        let (w1, b1, w2, b2) = (&self.w[0], &self.w[1], &self.w[2], &self.w[3]);
        let mut h = vec![0f64; 512];
        for (j, hj) in h.iter_mut().enumerate() {
            let mut acc = f64::from(b1[j]);
            for k in 0..784 {
                acc += f64::from(x[k]) * f64::from(w1[k * 512 + j]);
            }
            *hj = acc.max(0.0);
        }
        let mut o: Vec<f64> = (0..10)
            .map(|j| {
                f64::from(b2[j]) + (0..512).map(|k| h[k] * f64::from(w2[k * 10 + j])).sum::<f64>()
            })
            .collect();
        let m = o.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = o.iter().map(|v| (v - m).exp()).sum();
        for v in &mut o {
            *v = (*v - m).exp() / s;
        }
        o
    }

    /// Checks rows `rows` of `got` (n x 10) against the reference of `x` (n x 784).
    pub fn check(&self, x: &[f32], got: &[f32], rows: &[usize]) -> Result<(), String> {
        for &r in rows {
            let want = self.row(&x[r * 784..(r + 1) * 784]);
            for j in 0..10 {
                let g = f64::from(got[r * 10 + j]);
                if (g - want[j]).abs() > 1e-4 + 1e-3 * want[j].abs() {
                    return Err(format!("row {r} col {j}: got {g}, want {}", want[j]));
                }
            }
        }
        Ok(())
    }
}

/// Deterministic inputs in [-1, 1).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            #[allow(clippy::cast_precision_loss)]
            let v = (s % 20_000) as f32 / 10_000.0 - 1.0;
            v
        })
        .collect()
}

struct Capture(Mutex<mpsc::Sender<SocketAddr>>, Mutex<Vec<String>>);

impl Reporter for Capture {
    fn listening(&self, addr: SocketAddr) {
        let _ = self.0.lock().unwrap().send(addr);
    }
    fn model_loaded(&self, _: &Model, _: f64) {}
    fn model_failed(&self, name: &str, error: &ServeError) {
        self.1.lock().unwrap().push(format!("{name}: {error}"));
    }
    fn ready(&self, _: usize, _: usize) {}
    fn draining(&self) {}
    fn stopped(&self, _: bool) {}
}

/// A server running in a background thread; `stop()` triggers the drain and waits for the
/// server to return.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
    failures: Arc<Capture>,
    pub state: Arc<tpuport_serve::State>,
}

impl Running {
    pub fn start(mut opts: ServeOptions) -> Running {
        opts.bind = "127.0.0.1:0".parse().unwrap();
        opts.cache = None;
        let (tx, rx) = mpsc::channel();
        let cap = Arc::new(Capture(Mutex::new(tx), Mutex::new(Vec::new())));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let rep = cap.clone();
        let state = Arc::new(tpuport_serve::State::new(opts).unwrap());
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
            rt.block_on(tpuport_serve::serve_state(st, rep, async move {
                let _ = stop_rx.await;
            }))
        });
        let addr = rx.recv_timeout(Duration::from_secs(60)).expect("server did not bind");
        let r = Running { addr, stop: Some(stop_tx), thread: Some(thread), failures: cap, state };
        // Wait for readiness.
        for _ in 0..600 {
            if r.get("/v2/health/ready").status == 200 {
                return r;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("server not ready: {:?}", r.failures());
    }

    pub fn failures(&self) -> Vec<String> {
        self.failures.1.lock().unwrap().clone()
    }

    pub fn stop(mut self) -> Result<(), ServeError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.thread.take().unwrap().join().unwrap()
    }

    /// Sends the drain signal without waiting.
    pub fn signal_stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    pub fn join(mut self) -> Result<(), ServeError> {
        self.thread.take().unwrap().join().unwrap()
    }

    pub fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, &[], b"").unwrap()
    }

    pub fn post(&self, path: &str, headers: &[(&str, String)], body: &[u8]) -> Resp {
        request(self.addr, "POST", path, headers, body).unwrap()
    }

    pub fn metrics(&self) -> String {
        String::from_utf8(self.get("/metrics").body).unwrap()
    }
}

/// One metric sample's value (`name{labels}` exactly as rendered, or a bare name).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, k: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        let n = self
            .header("inference-header-content-length")
            .map_or(self.body.len(), |v| v.parse().unwrap());
        serde_json::from_slice(&self.body[..n])
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    /// The binary tail after the JSON header.
    pub fn tail(&self) -> &[u8] {
        let n: usize = self.header("inference-header-content-length").unwrap().parse().unwrap();
        &self.body[n..]
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<Resp> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    raw.extend_from_slice(body);
    raw_request(addr, &raw)
}

/// Sends raw bytes and parses the response.
pub fn raw_request(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Resp> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    s.write_all(raw)?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    parse_response(&buf).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad response: {:?}", String::from_utf8_lossy(&buf[..buf.len().min(200)])),
        )
    })
}

fn parse_response(buf: &[u8]) -> Option<Resp> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buf[end + 4..];
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest)? } else { rest.to_vec() };
    Some(Resp { status, headers, body })
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let e = b.windows(2).position(|w| w == b"\r\n")?;
        let n = usize::from_str_radix(std::str::from_utf8(&b[..e]).ok()?.trim(), 16).ok()?;
        b = &b[e + 2..];
        if n == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..n)?);
        b = b.get(n + 2..)?;
    }
}

/// A binary-extension infer request for the MLP: `x` rows of 784 f32, all outputs binary.
pub fn binary_infer(
    x: &[f32],
    rows: usize,
    extra_params: &str,
) -> (Vec<(&'static str, String)>, Vec<u8>) {
    let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let head = format!(
        "{{\"inputs\":[{{\"name\":\"x\",\"shape\":[{rows},784],\"datatype\":\"FP32\",\
         \"parameters\":{{\"binary_data_size\":{}}}}}],\
         \"parameters\":{{\"binary_data_output\":true{extra_params}}}}}",
        data.len()
    );
    let mut body = head.clone().into_bytes();
    body.extend_from_slice(&data);
    (
        vec![
            ("Inference-Header-Content-Length", head.len().to_string()),
            ("Content-Type", "application/octet-stream".to_owned()),
        ],
        body,
    )
}

/// f32 values of little-endian bytes.
pub fn le_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The repository options for `root`.
pub fn options(root: &Path) -> ServeOptions {
    ServeOptions::new(PathBuf::from(root))
}

pub fn dtype_size(d: DType) -> usize {
    tpuport_exec::wire::size(d)
}

/// A StableHLO module for bucket `b`: inputs `x` [b, 4] f32 and `n` [b, 1] i32, outputs
/// `y` = 2x and `s` [b, 1] (a value of the loop). Before answering it runs max(n) iterations
/// of `m = tanh(m @ m)` on a 64x64 matrix, so a request chooses how long its batch executes:
/// a blocked model without any test hook in the server.
pub fn slow_module(b: usize) -> String {
    format!(
        r"module @slow {{
  func.func public @main(%x: tensor<{b}x4xf32>, %n: tensor<{b}x1xi32>) -> (tensor<{b}x4xf32>, tensor<{b}x1xf32>) {{
    %two = stablehlo.constant dense<2.0> : tensor<{b}x4xf32>
    %y = stablehlo.multiply %x, %two : tensor<{b}x4xf32>
    %lo = stablehlo.constant dense<-2147483648> : tensor<i32>
    %nmax = stablehlo.reduce(%n init: %lo) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<{b}x1xi32>, tensor<i32>) -> tensor<i32>
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %m0 = stablehlo.constant dense<0.01> : tensor<64x64xf32>
    %r:2 = stablehlo.while(%i = %zero, %m = %m0) : tensor<i32>, tensor<64x64xf32>
    cond {{
      %c = stablehlo.compare LT, %i, %nmax : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }} do {{
      %d = stablehlo.dot_general %m, %m, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %t = stablehlo.tanh %d : tensor<64x64xf32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %i1, %t : tensor<i32>, tensor<64x64xf32>
    }}
    %corner = stablehlo.slice %r#1 [0:1, 0:1] : (tensor<64x64xf32>) -> tensor<1x1xf32>
    %s = stablehlo.broadcast_in_dim %corner, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<{b}x1xf32>
    return %y, %s : tensor<{b}x4xf32>, tensor<{b}x1xf32>
  }}
}}
"
    )
}

/// Writes `<root>/<name>`: the slow module at `buckets`, inputs `x`, `n`, outputs `y`, `s`,
/// with `batching` added to the `[batching]` table.
pub fn slow_repo(root: &Path, name: &str, buckets: &[usize], batching: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut mods = Vec::new();
    for &b in buckets {
        std::fs::write(dir.join(format!("slow_b{b}.mlir")), slow_module(b)).unwrap();
        mods.push(format!("\"{b}\" = \"slow_b{b}.mlir\""));
    }
    let list: Vec<String> = buckets.iter().map(ToString::to_string).collect();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[model]\nkind = \"stablehlo\"\nmodules = {{ {} }}\nargs = [\"input:x\", \"input:n\"]\n\
             [[output]]\nname = \"y\"\n[[output]]\nname = \"s\"\n\
             [batching]\nbuckets = [{}]\n{batching}\n",
            mods.join(", "),
            list.join(", ")
        ),
    )
    .unwrap();
}

/// One JSON infer of the slow model: `rows` rows of x = `tag`, loop count `n`, with `params`
/// (`,"priority":1`) in the request's parameters. Returns the status and the `y` values.
pub fn slow_infer(
    addr: SocketAddr,
    model: &str,
    rows: usize,
    tag: f32,
    n: i32,
    params: &str,
) -> (u16, Vec<f32>) {
    let body = format!(
        "{{\"inputs\":[{{\"name\":\"x\",\"shape\":[{rows},4],\"datatype\":\"FP32\",\"data\":{}}},\
         {{\"name\":\"n\",\"shape\":[{rows},1],\"datatype\":\"INT32\",\"data\":{}}}],\
         \"outputs\":[{{\"name\":\"y\"}}],\"parameters\":{{\"binary_data_output\":false{params}}}}}",
        serde_json::json!(vec![tag; rows * 4]),
        serde_json::json!(vec![n; rows]),
    );
    let r =
        request(addr, "POST", &format!("/v2/models/{model}/infer"), &[], body.as_bytes()).unwrap();
    if r.status != 200 {
        return (r.status, Vec::new());
    }
    #[allow(clippy::cast_possible_truncation)]
    let y = r.json()["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    (r.status, y)
}

/// Polls `/metrics` until `series` reads `want` (60 s at most); false when it never did.
pub fn wait_metric(srv: &Running, series: &str, want: f64) -> bool {
    for _ in 0..1200 {
        if metric(&srv.metrics(), series) == Some(want) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// One gRPC call over HTTP/2 (prior knowledge, no TLS): the 5-byte length-prefixed frame of
/// `body` posted to `path`. Returns the response message bytes (when there is one), the
/// `grpc-status` and the `grpc-message`.
pub fn grpc_raw(addr: SocketAddr, path: &str, framed: Vec<u8>) -> (Option<Vec<u8>>, i32, String) {
    use http_body_util::BodyExt;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tcp),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        let req = http::Request::post(format!("http://{addr}{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(http_body_util::Full::new(bytes::Bytes::from(framed)))
            .unwrap();
        let resp = send.send_request(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        let got = body.collect().await.unwrap();
        let trailers = got.trailers().cloned();
        let data = got.to_bytes();
        let field = |k: &str| {
            trailers
                .as_ref()
                .and_then(|t| t.get(k))
                .or_else(|| parts.headers.get(k))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let code = field("grpc-status").and_then(|s| s.parse().ok()).unwrap_or(-1);
        let message = percent_decode(&field("grpc-message").unwrap_or_default());
        let msg = (data.len() >= 5).then(|| data[5..].to_vec());
        (msg, code, message)
    })
}

/// The gRPC frame of a message.
pub fn grpc_frame(m: &impl prost::Message) -> Vec<u8> {
    let body = m.encode_to_vec();
    let mut out = vec![0u8];
    out.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// `inference.GRPCInferenceService/ModelInfer`: the response or the status code and message.
pub fn grpc_infer(
    addr: SocketAddr,
    req: &tpuport_serve::grpc::proto::ModelInferRequest,
) -> Result<tpuport_serve::grpc::proto::ModelInferResponse, (i32, String)> {
    use prost::Message;
    let (msg, code, message) =
        grpc_raw(addr, "/inference.GRPCInferenceService/ModelInfer", grpc_frame(req));
    if code != 0 {
        return Err((code, message));
    }
    Ok(tpuport_serve::grpc::proto::ModelInferResponse::decode(&msg.unwrap()[..]).unwrap())
}

/// `grpc-message` is percent-encoded (gRPC over HTTP/2).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
