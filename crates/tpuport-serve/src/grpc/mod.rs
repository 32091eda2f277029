//! The gRPC front end: `inference.GRPCInferenceService` (the Open Inference Protocol's core
//! RPCs) and `grpc.health.v1.Health/Check`, handled with tonic's unary machinery on the same
//! port as REST (HTTP/2 without TLS).

pub mod proto;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use tonic::{Code, Status};

use crate::drift::Drift;
use crate::error::{ErrorKind, InferError};
use crate::state::{Decoded, Schedule, State};
use proto::{
    InferOutputTensor, InferParameter, InferTensorContents, ModelInferRequest, ModelInferResponse,
    ParameterChoice,
};
use tpuport_exec::wire;

/// The gRPC status for a request failure.
/// [`status`] of an infer request's failure, counted first among the model's input refusals
/// when it refuses the inputs.
fn drift_status(drift: &Drift, e: &InferError) -> Status {
    drift.refused(e);
    status(e)
}

pub(crate) fn status(e: &InferError) -> Status {
    let code = match e.kind {
        ErrorKind::InvalidArgument => Code::InvalidArgument,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::Timeout | ErrorKind::SlowBody => Code::DeadlineExceeded,
        ErrorKind::TooLarge => Code::ResourceExhausted,
        ErrorKind::Forbidden => Code::PermissionDenied,
        ErrorKind::Internal => Code::Internal,
    };
    Status::new(code, e.message.clone())
}

macro_rules! unary {
    ($state:expr, $req:expr, $Req:ty, $Resp:ty, $f:path) => {{
        let max = $state.opts.limits.max_body_bytes;
        let mut g = tonic::server::Grpc::new(tonic_prost::ProstCodec::<$Resp, $Req>::default())
            .max_decoding_message_size(max)
            .max_encoding_message_size(usize::MAX);
        let st = $state.clone();
        let svc = tower::service_fn(move |r: tonic::Request<$Req>| {
            let st = st.clone();
            async move { $f(&st, r.into_inner()).await.map(tonic::Response::new) }
        });
        g.unary(svc, $req).await.map(Body::new)
    }};
}

/// Dispatches one `inference.GRPCInferenceService` call.
pub(crate) async fn inference(
    state: Arc<State>,
    method: &str,
    req: http::Request<Body>,
) -> Response {
    use proto::*;
    match method {
        "ServerLive" => unary!(state, req, ServerLiveRequest, ServerLiveResponse, server_live),
        "ServerReady" => unary!(state, req, ServerReadyRequest, ServerReadyResponse, server_ready),
        "ModelReady" => unary!(state, req, ModelReadyRequest, ModelReadyResponse, model_ready),
        "ServerMetadata" => {
            unary!(state, req, ServerMetadataRequest, ServerMetadataResponse, server_metadata)
        }
        "ModelMetadata" => {
            unary!(state, req, ModelMetadataRequest, ModelMetadataResponse, model_metadata)
        }
        "ModelInfer" => unary!(state, req, ModelInferRequest, ModelInferResponse, model_infer),
        other => Status::unimplemented(format!("method {other} is not implemented")).into_http(),
    }
}

/// `grpc.health.v1.Health/Check`: SERVING when the server is ready.
pub(crate) async fn health(state: Arc<State>, req: http::Request<Body>) -> Response {
    use proto::{HealthCheckRequest, HealthCheckResponse};
    unary!(state, req, HealthCheckRequest, HealthCheckResponse, health_check)
}

async fn health_check(
    s: &State,
    _: proto::HealthCheckRequest,
) -> Result<proto::HealthCheckResponse, Status> {
    Ok(proto::HealthCheckResponse { status: if s.is_ready() { 1 } else { 2 } })
}

async fn server_live(
    _: &State,
    _: proto::ServerLiveRequest,
) -> Result<proto::ServerLiveResponse, Status> {
    Ok(proto::ServerLiveResponse { live: true })
}

async fn server_ready(
    s: &State,
    _: proto::ServerReadyRequest,
) -> Result<proto::ServerReadyResponse, Status> {
    Ok(proto::ServerReadyResponse { ready: s.is_ready() })
}

async fn model_ready(
    s: &State,
    r: proto::ModelReadyRequest,
) -> Result<proto::ModelReadyResponse, Status> {
    match s.model(&r.name, Some(&r.version)) {
        Ok(_) => Ok(proto::ModelReadyResponse { ready: !s.is_draining() }),
        Err(e) if e.kind == ErrorKind::NotFound => Err(status(&e)),
        Err(_) => Ok(proto::ModelReadyResponse { ready: false }),
    }
}

async fn server_metadata(
    s: &State,
    _: proto::ServerMetadataRequest,
) -> Result<proto::ServerMetadataResponse, Status> {
    Ok(proto::ServerMetadataResponse {
        name: "tpuport".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        extensions: crate::rest::extensions(s).into_iter().map(String::from).collect(),
    })
}

async fn model_metadata(
    s: &State,
    r: proto::ModelMetadataRequest,
) -> Result<proto::ModelMetadataResponse, Status> {
    let (m, _, _) = s.model(&r.name, Some(&r.version)).map_err(|e| status(&e))?;
    let t = |x: &tpuport_exec::TensorSig| proto::TensorMetadata {
        name: x.name.clone(),
        datatype: wire::name(x.dtype).unwrap_or("?").into(),
        shape: x.metadata_shape(m.batched),
    };
    Ok(proto::ModelMetadataResponse {
        name: m.name.clone(),
        versions: vec![m.version.clone()],
        platform: m.platform.into(),
        inputs: m.inputs.iter().map(t).collect(),
        outputs: m.outputs.iter().map(t).collect(),
    })
}

async fn model_infer(s: &State, r: ModelInferRequest) -> Result<ModelInferResponse, Status> {
    let started = Instant::now();
    let name = r.model_name.clone();
    let out = infer_inner(s, r, started).await;
    let code = match &out {
        Ok(_) => "OK".to_owned(),
        Err(e) => format!("{:?}", e.code()),
    };
    let label = if s.read_models().contains_key(&name) { name.as_str() } else { "" };
    s.count(label, "grpc", &code, started);
    out
}

fn param_u64(p: &HashMap<String, InferParameter>, k: &str) -> Result<Option<u64>, InferError> {
    match p.get(k).and_then(|v| v.parameter_choice.as_ref()) {
        None => Ok(None),
        Some(ParameterChoice::Int64Param(x)) if *x >= 0 => Ok(Some(x.unsigned_abs())),
        Some(ParameterChoice::Uint64Param(x)) => Ok(Some(*x)),
        Some(_) => {
            Err(InferError::invalid(format!("parameter `{k}` must be a non-negative integer")))
        }
    }
}

async fn infer_inner(
    s: &State,
    r: ModelInferRequest,
    started: Instant,
) -> Result<ModelInferResponse, Status> {
    let (model, batcher, drift) =
        s.model(&r.model_name, Some(&r.model_version)).map_err(|e| status(&e))?;
    s.answers_first(&batcher, started).await.map_err(|e| drift_status(&drift, &e))?;
    let max = s.opts.limits.max_body_bytes;
    let raw = !r.raw_input_contents.is_empty();
    if raw && r.raw_input_contents.len() != r.inputs.len() {
        return Err(drift_status(
            &drift,
            &InferError::invalid(format!(
                "{} raw_input_contents for {} inputs",
                r.raw_input_contents.len(),
                r.inputs.len()
            )),
        ));
    }
    let mut decoded = Vec::with_capacity(r.inputs.len());
    for (i, inp) in r.inputs.iter().enumerate() {
        let (index, rows, elements) = crate::check::check_input(
            &model,
            (&drift, &s.metrics),
            &inp.name,
            &inp.datatype,
            &inp.shape,
            max,
        )
        .map_err(|e| drift_status(&drift, &e))?;
        let dtype = model.inputs[index].dtype;
        let need = elements * wire::size(dtype);
        let data = if raw {
            if inp.contents.is_some() {
                return Err(drift_status(
                    &drift,
                    &InferError::invalid(format!(
                        "input `{}`: `contents` may not be set with raw_input_contents",
                        inp.name
                    )),
                ));
            }
            let d = r.raw_input_contents[i].clone();
            if d.len() != need {
                return Err(drift_status(
                    &drift,
                    &InferError::invalid(format!(
                        "input `{}`: {} raw bytes, the shape needs {need}",
                        inp.name,
                        d.len()
                    )),
                ));
            }
            d
        } else {
            let c = inp.contents.as_ref().ok_or_else(|| {
                drift_status(
                    &drift,
                    &InferError::invalid(format!("input `{}` has no contents", inp.name)),
                )
            })?;
            Bytes::from(
                from_contents(c, dtype, elements, &inp.name)
                    .map_err(|e| drift_status(&drift, &e))?,
            )
        };
        decoded.push(Decoded { index, rows, data });
    }
    let schedule = Schedule {
        priority: param_u64(&r.parameters, "priority").map_err(|e| drift_status(&drift, &e))?,
        timeout_us: param_u64(&r.parameters, "timeout").map_err(|e| drift_status(&drift, &e))?,
        arrived: Some(started),
    };
    let wanted: Vec<usize> = if r.outputs.is_empty() {
        (0..model.outputs.len()).collect()
    } else {
        r.outputs
            .iter()
            .map(|o| {
                model.outputs.iter().position(|x| x.name == o.name).ok_or_else(|| {
                    drift_status(
                        &drift,
                        &InferError::invalid(format!(
                            "model `{}` has no output `{}`",
                            model.name, o.name
                        )),
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    let rows = decoded.first().map_or(0, |d| d.rows);
    let outs = s
        .infer(&model, &batcher, &drift, decoded, &schedule)
        .await
        .map_err(|e| drift_status(&drift, &e))?;
    let mut outputs = Vec::with_capacity(wanted.len());
    let mut raw_out = Vec::with_capacity(wanted.len());
    for i in wanted {
        let sig = &model.outputs[i];
        let mut shape: Vec<i64> = if model.batched { vec![rows as i64] } else { Vec::new() };
        shape.extend(sig.row_shape.iter().map(|&d| d as i64));
        outputs.push(InferOutputTensor {
            name: sig.name.clone(),
            datatype: wire::name(sig.dtype).unwrap_or("?").into(),
            shape,
            parameters: HashMap::new(),
            contents: None,
        });
        raw_out.push(outs[i].clone());
    }
    Ok(ModelInferResponse {
        model_name: model.name.clone(),
        model_version: model.version.clone(),
        id: r.id,
        parameters: HashMap::new(),
        outputs,
        raw_output_contents: raw_out,
    })
}

/// Typed `contents` to dense bytes; the field must match the datatype and hold exactly
/// `elements` values.
fn from_contents(
    c: &InferTensorContents,
    dtype: tpuport_model::DType,
    elements: usize,
    name: &str,
) -> Result<Vec<u8>, InferError> {
    use tpuport_model::DType as D;
    let wrong = |field: &str, n: usize| {
        InferError::invalid(format!(
            "input `{name}`: {field} holds {n} values, the shape needs {elements}"
        ))
    };
    let range = |v: i128| InferError::invalid(format!("input `{name}`: {v} is out of range"));
    // The count is checked before anything is allocated for the shape's claim.
    let (field, given) = match dtype {
        D::Bool => ("bool_contents", c.bool_contents.len()),
        D::I8 | D::I16 | D::I32 => ("int_contents", c.int_contents.len()),
        D::I64 => ("int64_contents", c.int64_contents.len()),
        D::U8 | D::U16 | D::U32 => ("uint_contents", c.uint_contents.len()),
        D::U64 => ("uint64_contents", c.uint64_contents.len()),
        D::F32 => ("fp32_contents", c.fp32_contents.len()),
        D::F64 => ("fp64_contents", c.fp64_contents.len()),
        _ => ("", 0),
    };
    if !field.is_empty() && given != elements {
        return Err(wrong(field, given));
    }
    let mut out =
        Vec::with_capacity(if field.is_empty() { 0 } else { elements * wire::size(dtype) });
    macro_rules! ints {
        ($field:ident, $t:ty) => {{
            if c.$field.len() != elements {
                return Err(wrong(stringify!($field), c.$field.len()));
            }
            for &v in &c.$field {
                let x = <$t>::try_from(v).map_err(|_| range(i128::from(v)))?;
                out.extend_from_slice(&x.to_le_bytes());
            }
        }};
    }
    match dtype {
        D::Bool => {
            if c.bool_contents.len() != elements {
                return Err(wrong("bool_contents", c.bool_contents.len()));
            }
            out.extend(c.bool_contents.iter().map(|&b| u8::from(b)));
        }
        D::I8 => ints!(int_contents, i8),
        D::I16 => ints!(int_contents, i16),
        D::I32 => ints!(int_contents, i32),
        D::I64 => ints!(int64_contents, i64),
        D::U8 => ints!(uint_contents, u8),
        D::U16 => ints!(uint_contents, u16),
        D::U32 => ints!(uint_contents, u32),
        D::U64 => ints!(uint64_contents, u64),
        D::F32 => {
            if c.fp32_contents.len() != elements {
                return Err(wrong("fp32_contents", c.fp32_contents.len()));
            }
            for v in &c.fp32_contents {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        D::F64 => {
            if c.fp64_contents.len() != elements {
                return Err(wrong("fp64_contents", c.fp64_contents.len()));
            }
            for v in &c.fp64_contents {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            return Err(InferError::invalid(format!(
                "input `{name}`: {} must be sent as raw_input_contents",
                wire::name(dtype).unwrap_or("?")
            )));
        }
    }
    Ok(out)
}
