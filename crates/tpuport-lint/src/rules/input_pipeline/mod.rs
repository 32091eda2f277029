//! TPU6xx: input pipelines that starve the TPU.

pub(crate) mod dataloader_num_workers_zero;
pub(crate) mod dataloader_without_device_loader;
pub(crate) mod keras_compile_without_steps_per_execution;
pub(crate) mod prefetch_before_batch;
pub(crate) mod tf_data_without_prefetch;
pub(crate) mod tf_py_function;
