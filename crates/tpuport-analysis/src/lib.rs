//! Analysis passes over a [`tpuport_model::Model`]. Passes return data; they never print.
//!
//! - [`inventory`]: what a file holds — signature, op histogram, parameters by dtype, largest
//!   tensors, duplicate tensors, and how the file's count differs from the framework's.
//! - [`findings`]: support and risk findings with stable codes (`AUDnnn`) and their docs.
//! - [`workload`]: the workload kind (infer/train/finetune) and optimizer shared by the passes.
//! - [`roles`]: which entry arguments are weights, data and state; the batch and sequence.
//! - [`taxonomy`]: op families and the op properties the passes share.
//! - [`compiler_check`]: the audit's estimate next to the TPU compiler's answer.

pub mod inventory;
pub mod workload;

pub use workload::{Optimizer, Workload};
pub mod audit;
pub mod compiler_check;
pub mod cost;
pub mod findings;
pub mod layout;
pub mod memory;
pub mod roles;
pub mod roofline;
pub mod shard;
pub mod taxonomy;
