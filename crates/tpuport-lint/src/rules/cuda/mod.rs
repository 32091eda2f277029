//! TPU3xx: code that only runs on CUDA.

pub(crate) mod cuda_device_string;
pub(crate) mod cuda_method_call;
pub(crate) mod cuda_visible_devices;
pub(crate) mod cudnn_flag;
pub(crate) mod nccl_backend;
pub(crate) mod pin_memory;
pub(crate) mod torch_cuda_api;
