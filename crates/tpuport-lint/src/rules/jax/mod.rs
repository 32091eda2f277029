//! TPU7xx: JAX-specific patterns.

pub(crate) mod host_array_in_step_loop;
pub(crate) mod jit_in_loop;
pub(crate) mod missing_donate_argnums;
pub(crate) mod rng_split_outside_jit;
