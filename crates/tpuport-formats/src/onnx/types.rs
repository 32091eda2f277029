//! `TypeProto` / `TensorShapeProto` to [`TensorType`].

use tpuport_model::{Dim, Shape, TensorType};

use super::dtype::from_onnx;
use super::proto::tensor_shape_proto::dimension::Value as DimValue;
use super::proto::type_proto::{Tensor, Value};
use super::proto::{TensorShapeProto, TypeProto};

/// The tensor type a `TypeProto` describes. Sequences, maps and opaque types have no tensor
/// type (both parts unknown); an optional tensor reads as the tensor; a sparse tensor as its
/// dense type.
#[must_use]
pub(crate) fn tensor_type(t: Option<&TypeProto>) -> TensorType {
    match t.and_then(|t| t.value.as_ref()) {
        Some(Value::TensorType(tt) | Value::SparseTensorType(tt)) => of_tensor(tt),
        Some(Value::OptionalType(o)) => tensor_type(o.elem_type.as_deref()),
        _ => TensorType::default(),
    }
}

fn of_tensor(t: &Tensor) -> TensorType {
    TensorType { dtype: from_onnx(t.elem_type), shape: t.shape.as_ref().map(shape) }
}

/// A shape: `dim_value >= 0` is a size, a negative `dim_value` (written by some exporters for
/// "dynamic"), an empty `dim_param` or a missing dimension is the anonymous `?`.
#[must_use]
pub(crate) fn shape(s: &TensorShapeProto) -> Shape {
    Shape(
        s.dim
            .iter()
            .map(|d| match &d.value {
                Some(DimValue::DimValue(v)) => {
                    u64::try_from(*v).map_or_else(|_| Dim::unknown(), Dim::Known)
                }
                Some(DimValue::DimParam(p)) if !p.is_empty() => Dim::Sym(p.clone()),
                _ => Dim::unknown(),
            })
            .collect(),
    )
}
