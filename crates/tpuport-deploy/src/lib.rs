//! tpuport's deploy library: Kubernetes manifests for a GKE TPU slice (`tpuport deploy`).
//!
//! - [`manifest`]: the manifests, from a [`manifest::DeploySpec`]; [`gke`] holds the node labels
//!   and chips-per-pod rules; [`fit`] asks the audit whether the model fits the slice first;
//!   [`yaml`] writes the text.
//!
//! The monitor (`tpuport top`: the metrics scraper, alarms, libtpu's runtime metrics) is
//! `tpuport-monitor`. Nothing here prints: the binary renders.

pub mod error;
pub mod fit;
pub mod gke;
pub mod manifest;
pub mod yaml;

pub use error::DeployError;
