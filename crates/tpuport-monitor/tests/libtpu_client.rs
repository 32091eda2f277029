//! The libtpu runtime-metrics client against a local gRPC server speaking the same service
//! (`tpu.monitoring.runtime.RuntimeMetricService`, same paths, same message field numbers):
//! the real one needs a TPU VM. The server answers like libtpu on a 4-chip host: HBM per
//! device, duty cycle per chip, and NOT_FOUND for a metric it lacks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use std::convert::Infallible;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tonic::body::Body;
use tpuport_monitor::libtpu::{self, proto};

fn metric(id: i64, v: proto::GaugeValue) -> proto::Metric {
    proto::Metric {
        attribute: Some(proto::Attribute {
            key: "device-id".into(),
            value: Some(proto::AttrValue { attr: Some(proto::Attr::IntAttr(id)) }),
        }),
        gauge: Some(proto::Gauge { value: Some(v) }),
        counter: None,
    }
}

async fn get_metric(
    req: proto::MetricRequest,
    missing: &str,
) -> Result<proto::MetricResponse, tonic::Status> {
    let metrics: Vec<proto::Metric> = match req.metric_name.as_str() {
        n if n == missing => return Err(tonic::Status::not_found(format!("metric {n} not found"))),
        libtpu::HBM_USAGE => {
            (0..4).map(|i| metric(i, proto::GaugeValue::AsInt((i + 1) << 30))).collect()
        }
        libtpu::HBM_TOTAL => {
            (0..4).map(|i| metric(i, proto::GaugeValue::AsInt(16 << 30))).collect()
        }
        libtpu::DUTY_CYCLE => {
            (0..4).map(|i| metric(i, proto::GaugeValue::AsDouble(12.5 * (i as f64)))).collect()
        }
        other => return Err(tonic::Status::not_found(format!("metric {other} not found"))),
    };
    Ok(proto::MetricResponse {
        metric: Some(proto::TpuMetric {
            name: req.metric_name,
            description: String::new(),
            metrics,
        }),
    })
}

/// Starts the fake service on 127.0.0.1:0; `missing` names a metric it answers NOT_FOUND for.
async fn start(missing: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            let svc = hyper::service::service_fn(
                move |req: http::Request<hyper::body::Incoming>| async move {
                    let path = req.uri().path().to_owned();
                    let req = req.map(Body::new);
                    let resp = match path.as_str() {
                        libtpu::GET_RUNTIME_METRIC => {
                            let mut g = tonic::server::Grpc::new(tonic_prost::ProstCodec::<
                                proto::MetricResponse,
                                proto::MetricRequest,
                            >::default(
                            ));
                            let svc = tower::service_fn(
                                move |r: tonic::Request<proto::MetricRequest>| async move {
                                    get_metric(r.into_inner(), missing)
                                        .await
                                        .map(tonic::Response::new)
                                },
                            );
                            g.unary(svc, req).await
                        }
                        libtpu::LIST_SUPPORTED_METRICS => {
                            let mut g = tonic::server::Grpc::new(tonic_prost::ProstCodec::<
                                proto::ListSupportedMetricsResponse,
                                proto::ListSupportedMetricsRequest,
                            >::default(
                            ));
                            let svc = tower::service_fn(
                                |_r: tonic::Request<proto::ListSupportedMetricsRequest>| async {
                                    Ok(tonic::Response::new(proto::ListSupportedMetricsResponse {
                                        supported_metric: [
                                            libtpu::HBM_USAGE,
                                            libtpu::HBM_TOTAL,
                                            libtpu::DUTY_CYCLE,
                                        ]
                                        .iter()
                                        .map(|n| proto::SupportedMetric {
                                            metric_name: (*n).to_owned(),
                                        })
                                        .collect(),
                                    }))
                                },
                            );
                            g.unary(svc, req).await
                        }
                        other => tonic::Status::unimplemented(other.to_owned()).into_http(),
                    };
                    Ok::<_, Infallible>(resp)
                },
            );
            tokio::spawn(async move {
                let _ = Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(sock), svc)
                    .await;
            });
        }
    });
    addr
}

fn server(missing: &'static str) -> (tokio::runtime::Runtime, String) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let addr = rt.block_on(start(missing));
    (rt, addr)
}

#[test]
fn reads_hbm_and_duty_cycle_per_device() {
    let (_rt, addr) = server("none");
    let snap = libtpu::read(&addr, Duration::from_secs(10)).unwrap();
    assert_eq!(snap.supported.len(), 3);
    assert_eq!(snap.devices.len(), 4);
    let d2 = &snap.devices[&2];
    assert_eq!(d2.hbm_used, Some(f64::from(3u32 << 30)));
    assert_eq!(d2.hbm_total, Some(f64::from(16u32) * f64::from(1u32 << 30)));
    assert_eq!(d2.duty_cycle_percent, Some(25.0));
}

#[test]
fn a_missing_metric_leaves_that_figure_empty() {
    let (_rt, addr) = server(libtpu::DUTY_CYCLE);
    let snap = libtpu::read(&addr, Duration::from_secs(10)).unwrap();
    assert!(snap.devices.values().all(|d| d.duty_cycle_percent.is_none() && d.hbm_used.is_some()));
}

#[test]
fn nothing_listening_is_one_error_naming_the_address() {
    // A port just released: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let err = libtpu::read(&addr, Duration::from_secs(5)).unwrap_err().to_string();
    assert!(err.starts_with(&format!("libtpu runtime metrics at {addr}: ")), "{err}");
}
