//! A standalone serialized `TensorProto` file (`input_0.pb`, `output_0.pb` of the ONNX backend
//! test layout) to a [`HostTensor`].
//!
//! The file is mapped and decoded with the same checks as an initializer: byte counts against
//! dtype × shape, typed fields converted to little-endian bytes, external data resolved next to
//! the file. Strings have no fixed-width host form and are rejected.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use prost::Message;
use prost::bytes::Bytes;
use tpuport_model::{DType, HostTensor};

use crate::{FormatError, Limits};

use super::MapOwner;
use super::external::map_file;
use super::proto::TensorProto;
use super::tensor::TensorReader;

/// Reads the serialized `TensorProto` at `path`.
///
/// # Errors
/// [`FormatError::Io`] when the file cannot be read, [`FormatError::Invalid`] when it is not a
/// `TensorProto` or its data does not match its dtype and shape, [`FormatError::Unsupported`]
/// for string and segmented tensors.
pub fn read_tensor_pb(path: &Path, limits: &Limits) -> Result<HostTensor, FormatError> {
    let file = File::open(path).map_err(|e| FormatError::io(path, e))?;
    let map = Arc::new(map_file(&file).map_err(|e| FormatError::io(path, e))?);
    let bytes = Bytes::from_owner(MapOwner(Arc::clone(&map)));
    let proto = TensorProto::decode(bytes).map_err(|e| {
        let msg = e.to_string().replace('\n', " ");
        FormatError::invalid(path, format!("not a serialized TensorProto: {msg}"))
    })?;
    if proto.data_type == 0 {
        return Err(FormatError::invalid(
            path,
            "TensorProto has no data_type (a Sequence, Optional or Map proto?)",
        ));
    }
    let mut reader = TensorReader::new(path, map, limits.clone());
    let w = reader.weight(&proto, proto.name.clone(), "tensor")?;
    if w.dtype == DType::String {
        return Err(FormatError::unsupported(path, "string tensors have no host form"));
    }
    w.to_host().map_err(|e| FormatError::invalid(path, e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write(dir: &Path, t: &TensorProto) -> std::path::PathBuf {
        let p = dir.join("t.pb");
        std::fs::write(&p, t.encode_to_vec()).unwrap();
        p
    }

    #[test]
    fn reads_float_data_and_raw_data() {
        let dir = tempfile::tempdir().unwrap();
        let t = TensorProto {
            dims: vec![2, 2],
            data_type: 1,
            float_data: vec![1.0, 2.0, 3.0, 4.0],
            ..Default::default()
        };
        let h = read_tensor_pb(&write(dir.path(), &t), &Limits::default()).unwrap();
        assert_eq!(h.dtype, DType::F32);
        assert_eq!(h.shape, vec![2, 2]);
        assert_eq!(&h.data()[4..8], &2.0f32.to_le_bytes());
        let raw: Vec<u8> = (0..6i64).flat_map(i64::to_le_bytes).collect();
        let t = TensorProto {
            dims: vec![3, 2],
            data_type: 7,
            raw_data: raw.into(),
            ..Default::default()
        };
        let h = read_tensor_pb(&write(dir.path(), &t), &Limits::default()).unwrap();
        assert_eq!(h.dtype, DType::I64);
        assert_eq!(&h.data()[40..48], &5i64.to_le_bytes());
    }

    #[test]
    fn rejects_wrong_byte_count_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let t = TensorProto {
            dims: vec![1_000_000_000, 1_000_000_000],
            data_type: 1,
            float_data: vec![1.0],
            ..Default::default()
        };
        let e = read_tensor_pb(&write(dir.path(), &t), &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("t.pb"), "{e}");
        let p = dir.path().join("g.pb");
        std::fs::write(&p, [0xff, 0xff, 0xff]).unwrap();
        let e = read_tensor_pb(&p, &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("TensorProto"), "{e}");
    }
}
