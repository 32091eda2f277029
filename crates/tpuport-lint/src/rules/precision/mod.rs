//! TPU4xx: precision: fp16 and fp64 where TPUs want bf16 and fp32.

pub(crate) mod float64_dtype;
pub(crate) mod fp16_autocast;
pub(crate) mod grad_scaler;
pub(crate) mod half_cast;
pub(crate) mod jax_enable_x64;
pub(crate) mod keras_loss_scale_optimizer;
pub(crate) mod keras_mixed_float16;
pub(crate) mod xla_use_bf16_env;
