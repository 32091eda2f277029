//! TPU8xx: saving and restoring state on TPU.

pub(crate) mod checkpoint_every_step;
pub(crate) mod flax_legacy_checkpoints;
pub(crate) mod keras_save_local_path;
pub(crate) mod torch_save_on_xla;
