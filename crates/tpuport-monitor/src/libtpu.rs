//! A client for libtpu's runtime-metrics gRPC service, the one `tpu-info` reads: service
//! `tpu.monitoring.runtime.RuntimeMetricService` on `localhost:8431` (plaintext over a local
//! channel), RPCs `GetRuntimeMetric(MetricRequest) → MetricResponse` and
//! `ListSupportedMetrics(ListSupportedMetricsRequest) → ListSupportedMetricsResponse`.
//!
//! Messages are written here as prost structs from
//! `AI-Hypercomputer/cloud-accelerator-diagnostics:tpu_info/tpu_info/proto/tpu_metric_service.proto`
//! (commit `6eccaf47364904d1c55209dd8795e3bf9cac21e1`), keeping the fields tpuport reads; prost
//! skips the others. Metric names and semantics (`tpu-hardware.md` §13, `tpu_info/metrics.py`):
//! `tpu.runtime.hbm.memory.usage.bytes` and `tpu.runtime.hbm.memory.total.bytes` per device
//! (TensorCore), `tpu.runtime.tensorcore.dutycycle.percent` per chip; each `Metric` is keyed by
//! its attribute's `int_attr` (the device id).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::error::MonitorError;

/// The address libtpu serves on when a framework holds the TPU.
pub const DEFAULT_ADDR: &str = "localhost:8431";
/// HBM in use per device, bytes.
pub const HBM_USAGE: &str = "tpu.runtime.hbm.memory.usage.bytes";
/// HBM per device, bytes.
pub const HBM_TOTAL: &str = "tpu.runtime.hbm.memory.total.bytes";
/// Duty cycle per chip, percent.
pub const DUTY_CYCLE: &str = "tpu.runtime.tensorcore.dutycycle.percent";
/// gRPC path of `GetRuntimeMetric`.
pub const GET_RUNTIME_METRIC: &str =
    "/tpu.monitoring.runtime.RuntimeMetricService/GetRuntimeMetric";
/// gRPC path of `ListSupportedMetrics`.
pub const LIST_SUPPORTED_METRICS: &str =
    "/tpu.monitoring.runtime.RuntimeMetricService/ListSupportedMetrics";

/// The proto messages (package `tpu.monitoring.runtime`).
#[allow(missing_docs, reason = "field names follow the .proto")]
pub mod proto {
    /// `MetricRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricRequest {
        #[prost(string, tag = "1")]
        pub metric_name: String,
        #[prost(bool, tag = "2")]
        pub skip_node_aggregation: bool,
    }
    /// `MetricResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricResponse {
        #[prost(message, optional, tag = "1")]
        pub metric: Option<TpuMetric>,
    }
    /// `TPUMetric`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TpuMetric {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub description: String,
        #[prost(message, repeated, tag = "3")]
        pub metrics: Vec<Metric>,
    }
    /// `Metric` (the `measure` oneof: gauge 3, counter 4; distribution and summary are not
    /// read).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        #[prost(message, optional, tag = "1")]
        pub attribute: Option<Attribute>,
        #[prost(message, optional, tag = "3")]
        pub gauge: Option<Gauge>,
        #[prost(message, optional, tag = "4")]
        pub counter: Option<Counter>,
    }
    /// `Attribute`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Attribute {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AttrValue>,
    }
    /// `AttrValue` (the `attr` oneof, scalar members).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttrValue {
        #[prost(oneof = "Attr", tags = "1, 2, 3, 4")]
        pub attr: Option<Attr>,
    }
    /// `AttrValue.attr`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Attr {
        #[prost(string, tag = "1")]
        StringAttr(String),
        #[prost(bool, tag = "2")]
        BoolAttr(bool),
        #[prost(int64, tag = "3")]
        IntAttr(i64),
        #[prost(double, tag = "4")]
        DoubleAttr(f64),
    }
    /// `Gauge` (the `value` oneof).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        #[prost(oneof = "GaugeValue", tags = "1, 2, 3, 4")]
        pub value: Option<GaugeValue>,
    }
    /// `Gauge.value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum GaugeValue {
        #[prost(double, tag = "1")]
        AsDouble(f64),
        #[prost(int64, tag = "2")]
        AsInt(i64),
        #[prost(string, tag = "3")]
        AsString(String),
        #[prost(bool, tag = "4")]
        AsBool(bool),
    }
    /// `Counter` (the `value` oneof).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Counter {
        #[prost(oneof = "CounterValue", tags = "1, 2")]
        pub value: Option<CounterValue>,
    }
    /// `Counter.value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum CounterValue {
        #[prost(double, tag = "1")]
        AsDouble(f64),
        #[prost(uint64, tag = "2")]
        AsInt(u64),
    }
    /// `ListSupportedMetricsRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListSupportedMetricsRequest {
        #[prost(string, tag = "1")]
        pub filter: String,
    }
    /// `SupportedMetric`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SupportedMetric {
        #[prost(string, tag = "1")]
        pub metric_name: String,
    }
    /// `ListSupportedMetricsResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListSupportedMetricsResponse {
        #[prost(message, repeated, tag = "1")]
        pub supported_metric: Vec<SupportedMetric>,
    }
}

/// One device's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Device {
    /// HBM in use, bytes.
    pub hbm_used: Option<f64>,
    /// HBM total, bytes.
    pub hbm_total: Option<f64>,
    /// Duty cycle of the chip, percent.
    pub duty_cycle_percent: Option<f64>,
}

/// What libtpu reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// The address asked.
    pub addr: String,
    /// Metric names the runtime offers.
    pub supported: Vec<String>,
    /// By device id (the metric attribute's integer value).
    pub devices: BTreeMap<i64, Device>,
}

/// Reads HBM use and duty cycle from the service at `addr` (`host:port`), waiting at most
/// `timeout` for each step.
///
/// # Errors
/// [`MonitorError::Libtpu`]: nothing listens there, or the service answered an error for
/// every metric.
pub fn read(addr: &str, timeout: Duration) -> Result<Snapshot, MonitorError> {
    #[cfg(feature = "libtpu-grpc")]
    return transport::read(addr, timeout);
    #[cfg(not(feature = "libtpu-grpc"))]
    {
        let _ = timeout;
        Err(MonitorError::Libtpu {
            addr: addr.to_owned(),
            reason: "this build has no libtpu gRPC client (feature `libtpu-grpc` is off)".into(),
        })
    }
}

/// The gRPC transport: tokio, a tonic channel and two unary calls.
#[cfg(feature = "libtpu-grpc")]
mod transport {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::{DUTY_CYCLE, GET_RUNTIME_METRIC, HBM_TOTAL, HBM_USAGE, LIST_SUPPORTED_METRICS};
    use super::{MonitorError, Snapshot, proto};

    fn value(m: &proto::Metric) -> Option<f64> {
        #[allow(clippy::cast_precision_loss, reason = "bytes and percentages as f64")]
        match (&m.gauge, &m.counter) {
            (Some(g), _) => match g.value.as_ref()? {
                proto::GaugeValue::AsDouble(v) => Some(*v),
                proto::GaugeValue::AsInt(v) => Some(*v as f64),
                proto::GaugeValue::AsString(s) => s.parse().ok(),
                proto::GaugeValue::AsBool(b) => Some(f64::from(u8::from(*b))),
            },
            (None, Some(c)) => match c.value.as_ref()? {
                proto::CounterValue::AsDouble(v) => Some(*v),
                proto::CounterValue::AsInt(v) => Some(*v as f64),
            },
            (None, None) => None,
        }
    }

    fn device_id(m: &proto::Metric) -> Option<i64> {
        match m.attribute.as_ref()?.value.as_ref()?.attr.as_ref()? {
            proto::Attr::IntAttr(i) => Some(*i),
            proto::Attr::StringAttr(s) => s.parse().ok(),
            _ => None,
        }
    }

    async fn unary<Req, Resp>(
        grpc: &mut tonic::client::Grpc<tonic::transport::Channel>,
        path: &'static str,
        req: Req,
    ) -> Result<Resp, tonic::Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        grpc.ready().await.map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        let path = http::uri::PathAndQuery::from_static(path);
        Ok(grpc.unary(tonic::Request::new(req), path, codec).await?.into_inner())
    }

    pub(super) fn read(addr: &str, timeout: Duration) -> Result<Snapshot, MonitorError> {
        let fail = |reason: String| MonitorError::Libtpu { addr: addr.to_owned(), reason };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        rt.block_on(async {
            let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                .map_err(|e| fail(e.to_string()))?
                .connect_timeout(timeout)
                .timeout(timeout);
            let channel =
                endpoint.connect().await.map_err(|e| fail(tpuport_model::error_chain(&e)))?;
            let mut grpc = tonic::client::Grpc::new(channel);
            let supported: proto::ListSupportedMetricsResponse = unary(
                &mut grpc,
                LIST_SUPPORTED_METRICS,
                proto::ListSupportedMetricsRequest { filter: String::new() },
            )
            .await
            .map_err(|s| fail(format!("ListSupportedMetrics: {}", s.message())))?;
            let mut snap = Snapshot {
                addr: addr.to_owned(),
                supported: supported.supported_metric.into_iter().map(|m| m.metric_name).collect(),
                devices: BTreeMap::new(),
            };
            let mut errors = Vec::new();
            for name in [HBM_USAGE, HBM_TOTAL, DUTY_CYCLE] {
                let req = proto::MetricRequest {
                    metric_name: name.to_owned(),
                    skip_node_aggregation: false,
                };
                let resp: proto::MetricResponse =
                    match unary(&mut grpc, GET_RUNTIME_METRIC, req).await {
                        Ok(r) => r,
                        Err(s) => {
                            errors.push(format!("{name}: {}", s.message()));
                            continue;
                        }
                    };
                for m in resp.metric.map(|m| m.metrics).unwrap_or_default() {
                    let (Some(id), Some(v)) = (device_id(&m), value(&m)) else { continue };
                    let d = snap.devices.entry(id).or_default();
                    match name {
                        HBM_USAGE => d.hbm_used = Some(v),
                        HBM_TOTAL => d.hbm_total = Some(v),
                        _ => d.duty_cycle_percent = Some(v),
                    }
                }
            }
            if errors.len() == 3 {
                return Err(fail(errors.join("; ")));
            }
            Ok(snap)
        })
    }
}
