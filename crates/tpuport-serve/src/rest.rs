//! The REST front end (Open Inference Protocol over HTTP, with the binary tensor data
//! extension), as axum routes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::codec::{JsonData, decode_json};
use crate::error::{ErrorKind, InferError};
use crate::state::{Decoded, Entry, Schedule, State};
use tpuport_exec::wire;

/// The header that gives the JSON part's length in a binary-extension body.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

type St = AxState<Arc<State>>;

/// The REST routes (gRPC and `/metrics` are added by [`crate::app`]).
pub(crate) fn routes() -> Router<Arc<State>> {
    Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models/{name}", get(model_metadata))
        .route("/v2/models/{name}/versions/{version}", get(model_metadata_v))
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_v))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_v))
        .route("/v2/repository/index", post(repository_index))
        .route("/v2/repository/models/{name}/load", post(repository_load))
        .route("/v2/repository/models/{name}/unload", post(repository_unload))
        .route("/openapi.json", get(openapi))
}

/// An error in the protocol's form: `{"error": "..."}` with the status; 503 carries
/// `Retry-After`.
pub(crate) fn error_response(e: &InferError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut r = (status, axum::Json(json!({ "error": e.message }))).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn empty(status: StatusCode) -> Response {
    let mut r = status.into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// Server metadata: name, version, extensions.
pub(crate) fn extensions(state: &State) -> Vec<&'static str> {
    let mut v = vec!["binary_tensor_data", "schedule_policy"];
    if state.opts.control_token.is_some() {
        v.push("model_repository");
    }
    v
}

async fn server_metadata(AxState(s): St) -> Response {
    axum::Json(json!({
        "name": "tpuport",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": extensions(&s),
    }))
    .into_response()
}

async fn live() -> Response {
    empty(StatusCode::OK)
}

async fn ready(AxState(s): St) -> Response {
    empty(if s.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE })
}

async fn model_metadata(AxState(s): St, Path(name): Path<String>) -> Response {
    metadata(&s, &name, None)
}

async fn model_metadata_v(AxState(s): St, Path((name, v)): Path<(String, String)>) -> Response {
    metadata(&s, &name, Some(&v))
}

/// Model metadata as JSON (shared with gRPC through [`crate::state`]).
fn metadata(s: &State, name: &str, version: Option<&str>) -> Response {
    match s.model(name, version) {
        Ok((m, _, _)) => {
            let t = |x: &tpuport_exec::TensorSig| {
                json!({
                    "name": x.name,
                    "datatype": wire::name(x.dtype).unwrap_or("?"),
                    "shape": x.metadata_shape(m.batched),
                })
            };
            axum::Json(json!({
                "name": m.name,
                "versions": [m.version],
                "platform": m.platform,
                "inputs": m.inputs.iter().map(t).collect::<Vec<_>>(),
                "outputs": m.outputs.iter().map(t).collect::<Vec<_>>(),
            }))
            .into_response()
        }
        Err(e) => error_response(&e),
    }
}

async fn model_ready(AxState(s): St, Path(name): Path<String>) -> Response {
    ready_answer(&s, &name, None)
}

async fn model_ready_v(AxState(s): St, Path((name, v)): Path<(String, String)>) -> Response {
    ready_answer(&s, &name, Some(&v))
}

fn ready_answer(s: &State, name: &str, version: Option<&str>) -> Response {
    match s.model(name, version) {
        Ok(_) if !s.is_draining() => empty(StatusCode::OK),
        Ok(_) => empty(StatusCode::SERVICE_UNAVAILABLE),
        Err(e) if e.kind == ErrorKind::NotFound => error_response(&e),
        Err(_) => empty(StatusCode::SERVICE_UNAVAILABLE),
    }
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], crate::OPENAPI)
        .into_response()
}

// ------------------------------------------------------------------ infer

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestRequest<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    parameters: Option<BTreeMap<String, Value>>,
    #[serde(borrow)]
    inputs: Vec<RestInput<'a>>,
    #[serde(default)]
    outputs: Option<Vec<RestOutput>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestInput<'a> {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    #[serde(default)]
    parameters: Option<BTreeMap<String, Value>>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestOutput {
    name: String,
    #[serde(default)]
    parameters: Option<BTreeMap<String, Value>>,
}

async fn infer(
    AxState(s): St,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    infer_any(s, name, None, headers, body).await
}

async fn infer_v(
    AxState(s): St,
    Path((name, v)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    infer_any(s, name, Some(v), headers, body).await
}

async fn infer_any(
    s: Arc<State>,
    name: String,
    version: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let r = infer_inner(&s, &name, version.as_deref(), &headers, body, started).await;
    let resp = match r {
        Ok(resp) => resp,
        Err(e) => error_response(&e),
    };
    // Only known models get a series (unknown names are client-chosen strings).
    let label = if s.read_models().contains_key(&name) { name.as_str() } else { "" };
    s.count(label, "http", resp.status().as_str(), started);
    resp
}

/// Reads the body with the size limit (chunked bodies included).
async fn read_body(s: &State, body: Body) -> Result<Bytes, InferError> {
    let limit = s.opts.limits.max_body_bytes;
    let read = http_body_util::Limited::new(body, limit).collect();
    let Ok(r) = tokio::time::timeout(s.opts.limits.body_read_timeout, read).await else {
        return Err(InferError::new(
            ErrorKind::SlowBody,
            "the request body did not arrive in time",
        ));
    };
    match r {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(InferError::new(
                ErrorKind::TooLarge,
                format!("request body over the {limit}-byte limit"),
            ))
        }
        Err(e) => Err(InferError::invalid(format!("reading the request body: {e}"))),
    }
}

fn param_bool(p: Option<&BTreeMap<String, Value>>, k: &str) -> Result<Option<bool>, InferError> {
    match p.and_then(|p| p.get(k)) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(InferError::invalid(format!("parameter `{k}` must be a boolean"))),
    }
}

fn param_u64(p: Option<&BTreeMap<String, Value>>, k: &str) -> Result<Option<u64>, InferError> {
    match p.and_then(|p| p.get(k)) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            InferError::invalid(format!("parameter `{k}` must be a non-negative integer"))
        }),
    }
}

async fn infer_inner(
    s: &State,
    name: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: Body,
    started: Instant,
) -> Result<Response, InferError> {
    let (model, batcher, drift) = s.model(name, version)?;
    let out: Result<Response, InferError> = async {
        let admitted = s.answers_first(&batcher, started).await;
        // Read even when refused, so the connection stays usable.
        let body = read_body(s, body).await?;
        admitted?;
        let json_len = match headers.get(HEADER_LENGTH) {
            None => body.len(),
            Some(v) => {
                let n: usize =
                    v.to_str().ok().and_then(|t| t.trim().parse().ok()).ok_or_else(|| {
                        InferError::invalid("Inference-Header-Content-Length is not a number")
                    })?;
                if n > body.len() {
                    return Err(InferError::invalid(format!(
                        "Inference-Header-Content-Length {n} is past the body's {} bytes",
                        body.len()
                    )));
                }
                n
            }
        };
        let head = std::str::from_utf8(&body[..json_len])
            .map_err(|_| InferError::invalid("the JSON header is not UTF-8"))?;
        let req: RestRequest<'_> = serde_json::from_str(head)
            .map_err(|e| InferError::invalid(format!("invalid inference request: {e}")))?;
        let max = s.opts.limits.max_body_bytes;
        let mut offset = json_len;
        let mut decoded = Vec::with_capacity(req.inputs.len());
        for inp in &req.inputs {
            let (index, rows, elements) = crate::check::check_input(
                &model,
                (&drift, &s.metrics),
                &inp.name,
                &inp.datatype,
                &inp.shape,
                max,
            )?;
            let sig = &model.inputs[index];
            let size = elements * wire::size(sig.dtype);
            let data = match param_u64(inp.parameters.as_ref(), "binary_data_size")? {
                Some(n) => {
                    if inp.data.is_some() {
                        return Err(InferError::invalid(format!(
                            "input `{}` has both `data` and `binary_data_size`",
                            inp.name
                        )));
                    }
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    if n != size {
                        return Err(InferError::invalid(format!(
                            "input `{}`: binary_data_size {n}, the shape needs {size} bytes",
                            inp.name
                        )));
                    }
                    let end =
                        offset.checked_add(n).filter(|e| *e <= body.len()).ok_or_else(|| {
                            InferError::invalid(format!(
                                "input `{}`: binary data truncated ({} bytes left, {n} needed)",
                                inp.name,
                                body.len() - offset
                            ))
                        })?;
                    let d = body.slice(offset..end);
                    offset = end;
                    d
                }
                None => {
                    let raw = inp.data.ok_or_else(|| {
                        InferError::invalid(format!("input `{}` has no `data`", inp.name))
                    })?;
                    Bytes::from(decode_json(raw.get(), sig.dtype, elements, &inp.name)?)
                }
            };
            decoded.push(Decoded { index, rows, data });
        }
        if offset != body.len() {
            return Err(InferError::invalid(format!(
                "{} bytes of binary data follow the inputs' binary_data_size total",
                body.len() - offset
            )));
        }
        let params = req.parameters.as_ref();
        let schedule = Schedule {
            priority: param_u64(params, "priority")?,
            timeout_us: param_u64(params, "timeout")?,
            arrived: Some(started),
        };
        let all_binary = param_bool(params, "binary_data_output")?.unwrap_or(false);
        // Requested outputs (all when absent), each with its binary flag.
        let wanted: Vec<(usize, bool)> = match &req.outputs {
            None => (0..model.outputs.len()).map(|i| (i, all_binary)).collect(),
            Some(list) => list
                .iter()
                .map(|o| {
                    let i =
                        model.outputs.iter().position(|x| x.name == o.name).ok_or_else(|| {
                            InferError::invalid(format!(
                                "model `{name}` has no output `{}`",
                                o.name
                            ))
                        })?;
                    Ok((i, param_bool(o.parameters.as_ref(), "binary_data")?.unwrap_or(all_binary)))
                })
                .collect::<Result<_, InferError>>()?,
        };
        let rows = decoded.first().map_or(0, |d| d.rows);
        let outs = s.infer(&model, &batcher, &drift, decoded, &schedule).await?;
        let mut json_outs = Vec::with_capacity(wanted.len());
        let mut tail: Vec<Bytes> = Vec::new();
        for &(i, binary) in &wanted {
            let sig = &model.outputs[i];
            let mut shape = if model.batched { vec![rows as u64] } else { Vec::new() };
            shape.extend_from_slice(&sig.row_shape);
            let dt = wire::name(sig.dtype).unwrap_or("?");
            if binary {
                json_outs.push(json!({
                    "name": sig.name, "datatype": dt, "shape": shape,
                    "parameters": { "binary_data_size": outs[i].len() },
                }));
                tail.push(outs[i].clone());
            } else {
                json_outs.push(json!({
                    "name": sig.name, "datatype": dt, "shape": shape,
                    "data": serde_json::to_value(JsonData { dtype: sig.dtype, bytes: &outs[i] })
                        .unwrap_or(Value::Null),
                }));
            }
        }
        let mut head = json!({
            "model_name": model.name,
            "model_version": model.version,
            "outputs": json_outs,
        });
        if let Some(id) = &req.id {
            head["id"] = Value::String(id.clone());
        }
        let head = serde_json::to_vec(&head).unwrap_or_default();
        if tail.is_empty() {
            return Ok((
                [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                head,
            )
                .into_response());
        }
        let mut buf = Vec::with_capacity(head.len() + tail.iter().map(Bytes::len).sum::<usize>());
        buf.extend_from_slice(&head);
        for t in &tail {
            buf.extend_from_slice(t);
        }
        let mut r = Response::new(Body::from(buf));
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
        h.insert(HEADER_LENGTH, HeaderValue::from(head.len()));
        Ok(r)
    }
    .await;
    if let Err(e) = &out {
        drift.refused(e);
    }
    out
}

// ------------------------------------------------------------------ model control

fn authorized(s: &State, headers: &HeaderMap) -> Result<(), InferError> {
    let Some(token) = &s.opts.control_token else {
        return Err(InferError::new(ErrorKind::Forbidden, "model control is disabled"));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
        return Err(InferError::new(
            ErrorKind::Forbidden,
            "model control needs a valid bearer token",
        ));
    }
    Ok(())
}

/// Compares without an early exit on the first differing byte.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0);
    }
    diff == 0
}

async fn repository_index(AxState(s): St, headers: HeaderMap) -> Response {
    if let Err(e) = authorized(&s, &headers) {
        return error_response(&e);
    }
    let names = s.repo.model_names().unwrap_or_default();
    let models = s.read_models();
    let list: Vec<Value> = names
        .iter()
        .map(|n| {
            let (state, reason) = match models.get(n) {
                Some(Entry::Ready { .. }) => ("READY", String::new()),
                Some(Entry::Loading) => ("LOADING", String::new()),
                Some(Entry::Failed(why)) => ("UNAVAILABLE", why.clone()),
                Some(Entry::Unloaded) | None => ("UNAVAILABLE", "unloaded".to_owned()),
            };
            json!({ "name": n, "state": state, "reason": reason })
        })
        .collect();
    axum::Json(list).into_response()
}

async fn repository_load(AxState(s): St, Path(name): Path<String>, headers: HeaderMap) -> Response {
    if let Err(e) = authorized(&s, &headers) {
        return error_response(&e);
    }
    if s.is_draining() {
        return error_response(&InferError::new(
            ErrorKind::Unavailable,
            "the server is shutting down",
        ));
    }
    if !s.repo.model_names().unwrap_or_default().contains(&name) {
        return error_response(&crate::state::not_found(&name));
    }
    if matches!(s.read_models().get(&name), Some(Entry::Ready { .. } | Entry::Loading)) {
        return empty(StatusCode::OK);
    }
    let st = s.clone();
    let n = name.clone();
    let r = tokio::task::spawn_blocking(move || st.load_model(&n, &crate::NoReport)).await;
    match r {
        Ok(Ok(())) => empty(StatusCode::OK),
        Ok(Err(e)) => error_response(&InferError::invalid(format!(
            "loading `{name}` failed: {}",
            e.to_string().replace(&*s.repo.root().to_string_lossy(), "<repository>")
        ))),
        Err(_) => error_response(&InferError::new(ErrorKind::Internal, "the load task failed")),
    }
}

async fn repository_unload(
    AxState(s): St,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = authorized(&s, &headers) {
        return error_response(&e);
    }
    let st = s.clone();
    match tokio::task::spawn_blocking(move || st.unload_model(&name)).await {
        Ok(Ok(())) => empty(StatusCode::OK),
        Ok(Err(e)) => error_response(&e),
        Err(_) => error_response(&InferError::new(ErrorKind::Internal, "the unload task failed")),
    }
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"ab", b"abc"));
        assert!(!constant_time_eq(b"", b"abc"));
        assert!(!constant_time_eq(b"abc", b""));
    }
}
