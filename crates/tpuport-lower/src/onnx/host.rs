//! Values known at lowering time (shape tensors, small constants) are evaluated on the host so
//! Reshape/Expand/Slice/... get static operands. The values and the evaluator are shape
//! inference's (`tpuport_formats::onnx::host`): a value folds the same way in both.

pub(crate) use tpuport_formats::onnx::host::HostValue as HostVal;
pub(crate) use tpuport_formats::onnx::host::{broadcast_shapes, checked_elems, eval, strides};

/// Largest host-evaluated tensor (elements).
pub(crate) const HOST_MAX: u64 = 1 << 16;
