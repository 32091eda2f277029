//! The rules, one file each, grouped by family.

pub(crate) mod checkpointing;
pub(crate) mod cuda;
pub(crate) mod distribution;
pub(crate) mod helpers;
pub(crate) mod host_sync;
pub(crate) mod input_pipeline;
pub(crate) mod jax;
pub(crate) mod precision;
pub(crate) mod recompilation;
