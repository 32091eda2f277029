//! Analysis passes over a [`tpuport_model::Model`]. Passes return data; they never print.
//!
//! - [`inventory`]: what a file holds — signature, op histogram, parameters by dtype, largest
//!   tensors, duplicate tensors, and how the file's count differs from the framework's.

pub mod inventory;
