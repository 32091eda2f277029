//! `tpuport serve`: a KServe v2 (Open Inference Protocol) server on PJRT.
//!
//! REST (axum) and gRPC (`inference.GRPCInferenceService`, tonic) share one port. Each model
//! of the repository is loaded through `tpuport-exec` ([`tpuport_exec::Repository`],
//! [`tpuport_exec::Model::load`]): compiled once per batch bucket and its weights uploaded
//! once before the server reports ready; requests are checked against the model's signature,
//! queued per model and batched into the smallest bucket that fits ([`batcher`]), so nothing
//! compiles on the request path. Metrics are served at `/metrics` in the Prometheus text
//! format ([`metrics`], which also hears each model's load). On SIGTERM readiness drops, new
//! requests get 503 and queued requests finish within the drain timeout. This crate holds the
//! server: its options ([`config`]), the protocol front ends, the batcher and the metrics.
//!
//! The library never prints: start-up and shutdown events go to a [`Reporter`].

mod batcher;
mod check;
mod codec;
pub mod config;
mod drift;
pub mod error;
pub mod grpc;
pub mod metrics;
mod rest;
mod server;
mod state;

pub use config::{Limits, ServeOptions};
pub use error::{ErrorKind, InferError, ServeError};
pub use rest::HEADER_LENGTH;
pub use server::{app, serve, serve_blocking, serve_state, shutdown_signal};
pub use state::{Reporter, State};

/// The server's OpenAPI 3 document (served at `/openapi.json`).
pub const OPENAPI: &str = include_str!("openapi.json");

/// A reporter that drops every event.
#[derive(Debug, Default)]
pub struct NoReport;

impl Reporter for NoReport {
    fn listening(&self, _: std::net::SocketAddr) {}
    fn model_loaded(&self, _: &tpuport_exec::Model, _: f64) {}
    fn model_failed(&self, _: &str, _: &ServeError) {}
    fn ready(&self, _: usize, _: usize) {}
    fn draining(&self) {}
    fn stopped(&self, _: bool) {}
}
