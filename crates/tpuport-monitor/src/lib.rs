//! tpuport's monitor library, behind `tpuport top`.
//!
//! - [`prom`]: the Prometheus text-format parser and a bounded `http://` scraper.
//! - [`top`]: what `top` shows and alarms on, computed from successive scrapes of `tpuport
//!   serve`'s `/metrics` (the same alarms as `deploy/prometheus/tpuport-alerts.yaml`).
//! - [`libtpu`]: a client for libtpu's runtime-metrics gRPC service (duty cycle, HBM) on a TPU
//!   VM. Its transport is the default feature `libtpu-grpc`; without it the types compile and
//!   [`libtpu::read`] says the build has no client, so that a crate which only renders a
//!   [`libtpu::Snapshot`] (tpuport-report) does not build an HTTP/2 stack.
//!
//! Nothing here prints: the binary renders.

pub mod error;
pub mod libtpu;
pub mod prom;
pub mod top;

pub use error::MonitorError;
