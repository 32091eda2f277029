//! safetensors writer: an 8-byte little-endian header length, a JSON header (padded with
//! spaces to a multiple of 8), then the tensors' bytes back to back. Written atomically
//! ([`tpuport_model::fs::write_atomic`]).

use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::Path;

use tpuport_model::DType;

use super::header::dtype_name;
use crate::FormatError;

/// One tensor to write.
#[derive(Debug)]
pub struct TensorOut<'a> {
    /// Tensor name (the header key).
    pub name: String,
    /// Element type (must have a safetensors spelling).
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<u64>,
    /// Little-endian bytes, `dtype.storage_bytes(elements)` long.
    pub data: Cow<'a, [u8]>,
}

/// Writes `tensors` (and optional string metadata) to `path` atomically.
///
/// # Errors
/// [`FormatError::Invalid`] for a dtype safetensors cannot name, a duplicate name or a byte
/// length that does not match the shape; [`FormatError::Io`] when writing fails.
pub fn write_safetensors(
    path: &Path,
    tensors: &[TensorOut<'_>],
    metadata: &[(String, String)],
) -> Result<(), FormatError> {
    let mut header = serde_json::Map::new();
    if !metadata.is_empty() {
        let m: serde_json::Map<String, serde_json::Value> =
            metadata.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone()))).collect();
        header.insert("__metadata__".to_owned(), serde_json::Value::Object(m));
    }
    let mut offset: u64 = 0;
    for t in tensors {
        let dt = dtype_name(t.dtype).ok_or_else(|| {
            FormatError::invalid(
                path,
                format!("tensor `{}`: dtype {} has no safetensors name", t.name, t.dtype),
            )
        })?;
        let n = t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let want = n.and_then(|n| t.dtype.storage_bytes(n));
        if want != Some(t.data.len() as u64) {
            return Err(FormatError::invalid(
                path,
                format!(
                    "tensor `{}`: {} bytes do not match shape {:?} of {}",
                    t.name,
                    t.data.len(),
                    t.shape,
                    t.dtype
                ),
            ));
        }
        let end = offset + t.data.len() as u64;
        let entry =
            serde_json::json!({ "dtype": dt, "shape": t.shape, "data_offsets": [offset, end] });
        if header.insert(t.name.clone(), entry).is_some() || t.name == "__metadata__" {
            return Err(FormatError::invalid(
                path,
                format!("tensor name `{}` is used twice", t.name),
            ));
        }
        offset = end;
    }
    let mut json = serde_json::to_vec(&serde_json::Value::Object(header))
        .map_err(|e| FormatError::invalid(path, format!("header: {e}")))?;
    while json.len() % 8 != 0 {
        json.push(b' ');
    }
    tpuport_model::fs::write_atomic(path, |f| {
        let mut w = BufWriter::with_capacity(1 << 20, f);
        w.write_all(&(json.len() as u64).to_le_bytes())?;
        w.write_all(&json)?;
        for t in tensors {
            w.write_all(&t.data)?;
        }
        w.flush()
    })
    .map_err(|e| FormatError::io(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::Limits;

    #[test]
    fn round_trips_through_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.safetensors");
        let a: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = vec![
            TensorOut {
                name: "a".into(),
                dtype: DType::F32,
                shape: vec![3],
                data: Cow::Owned(a.clone()),
            },
            TensorOut {
                name: "b".into(),
                dtype: DType::I64,
                shape: vec![],
                data: Cow::Owned(7i64.to_le_bytes().to_vec()),
            },
        ];
        write_safetensors(&p, &t, &[("format".into(), "pt".into())]).unwrap();
        let m = super::super::import_file(&p, &Limits::default()).unwrap();
        let w = m.weights.by_name("a").unwrap();
        assert_eq!((w.dtype, w.shape.clone()), (DType::F32, vec![3]));
        assert_eq!(&*w.bytes().unwrap(), a.as_slice());
        assert_eq!(&*m.weights.by_name("b").unwrap().bytes().unwrap(), &7i64.to_le_bytes());
        let bad = [TensorOut {
            name: "x".into(),
            dtype: DType::F32,
            shape: vec![2],
            data: Cow::Owned(vec![0; 4]),
        }];
        assert!(write_safetensors(&p, &bad, &[]).is_err());
    }
}
