//! The host evaluator: small tensors whose values are known before anything runs (shape
//! tensors, constants, values computed from them), and ONNX ops evaluated on them.
//!
//! Shape inference ([`super::shape_infer`]) folds these values so that shape subgraphs give
//! concrete shapes; the ONNX lowering in `tpuport-lower` evaluates the same ops at lowering time
//! so that `Reshape`, `Expand`, `Slice`, … get static operands. Both use this one evaluator, so
//! a value folds the same way in both.
//!
//! - [`HostValue`]: dtype, static shape, row-major elements held as `i64` (integers and bools)
//!   or `f64` (floats), always representable in the dtype: integer results wrap to the dtype's
//!   width, float results round to it (round to nearest even, through `half` for 16-bit types).
//! - [`eval`]: elementwise ops with numpy broadcasting (`Add` … `Pow`, `Mod`, comparisons,
//!   logic, `Where`, unary math), `Cast`, and data movement (`Concat`, `Transpose`, `Expand`,
//!   `Gather`, strided `Slice`). Every function returns `None` when it cannot evaluate (an op it
//!   does not know, integer division by zero, an overflowing integer power, a result larger
//!   than the caller's element limit): the caller then leaves the value unknown (shape
//!   inference) or computes it on the device (lowering).

pub mod eval;
mod index;
mod value;

pub use index::{broadcast_shapes, checked_elems, strides};
pub use value::{HostData, HostValue};
