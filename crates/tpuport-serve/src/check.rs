//! A request input checked against a model's signature before any of its data is decoded.

use tpuport_exec::{Model, wire};

use crate::drift::{Drift, Refusal};
use crate::error::InferError;
use crate::metrics::Registry;

/// Checks one request input against `model`'s signature and counts its shape in `drift`;
/// returns the input's index, its row count and its element count.
///
/// # Errors
/// Unknown name, wrong datatype or shape, or a size past `max_bytes`, each with its
/// [`Refusal`].
pub(crate) fn check_input(
    model: &Model,
    (drift, reg): (&Drift, &Registry),
    name: &str,
    datatype: &str,
    shape: &[i64],
    max_bytes: usize,
) -> Result<(usize, usize, usize), InferError> {
    let idx = model.inputs.iter().position(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = model.inputs.iter().map(|s| s.name.as_str()).collect();
        InferError::refused(
            Refusal::UnknownInput,
            format!("model `{}` has no input `{name}`; inputs: {}", model.name, names.join(", ")),
        )
    })?;
    let s = &model.inputs[idx];
    let want = wire::name(s.dtype).unwrap_or("?");
    if datatype != want {
        return Err(InferError::refused(
            Refusal::WrongDtype,
            format!("input `{name}`: datatype {datatype}, the model takes {want}"),
        ));
    }
    let dims: Vec<u64> =
        shape.iter().map(|&d| u64::try_from(d)).collect::<Result<_, _>>().map_err(|_| {
            InferError::refused(
                Refusal::WrongShape,
                format!("input `{name}`: negative dimension in {shape:?}"),
            )
        })?;
    drift.shape_seen(reg, idx, name, &dims, model.batched);
    let (rows, row) = if model.batched {
        match dims.split_first() {
            Some((&n, rest)) => (n, rest),
            None => (0, &[][..]),
        }
    } else {
        (1, &dims[..])
    };
    if row != s.row_shape.as_slice() || (model.batched && dims.is_empty()) {
        let want_shape = s.metadata_shape(model.batched);
        drift.row_shape(idx);
        return Err(InferError::refused(
            Refusal::WrongShape,
            format!("input `{name}`: shape {shape:?}, the model takes {want_shape:?}"),
        ));
    }
    if rows == 0 {
        return Err(InferError::refused(
            Refusal::WrongShape,
            format!("input `{name}`: batch size 0"),
        ));
    }
    let rows = usize::try_from(rows).map_err(|_| too_large(name))?;
    let bytes = rows.checked_mul(s.row_bytes).ok_or_else(|| too_large(name))?;
    if bytes > max_bytes {
        return Err(InferError::refused(
            Refusal::TooLarge,
            format!(
                "input `{name}`: shape {shape:?} claims {bytes} bytes, over the {max_bytes}-byte limit"
            ),
        ));
    }
    Ok((idx, rows, bytes / wire::size(s.dtype)))
}

fn too_large(name: &str) -> InferError {
    InferError::refused(Refusal::TooLarge, format!("input `{name}`: the shape's size overflows"))
}
