//! tpuport's deploy and monitor libraries.
//!
//! - [`manifest`]: Kubernetes manifests for a GKE TPU slice (`tpuport deploy`), from a
//!   [`manifest::DeploySpec`]; [`gke`] holds the node labels and chips-per-pod rules; [`fit`]
//!   asks the audit whether the model fits the slice first; [`yaml`] writes the text.
//! - [`prom`], [`top`]: the Prometheus text-format parser, snapshots of `tpuport serve`'s
//!   `/metrics` and the alarm rules with their state over time (`tpuport top`).
//! - [`libtpu`]: a client for libtpu's runtime-metrics gRPC service (duty cycle, HBM).
//!
//! Nothing here prints: the binary renders.

pub mod error;
pub mod fit;
pub mod gke;
pub mod libtpu;
pub mod manifest;
pub mod prom;
pub mod top;
pub mod yaml;

pub use error::DeployError;
