use crate::{DType, ModelError, Shape};

/// A dense tensor in host memory: element type, static shape and little-endian bytes in
/// row-major (C) order. The exchange type between tensor files (npy, safetensors, ONNX `.pb`)
/// and the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTensor {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<u64>,
    data: Vec<u8>,
}

impl HostTensor {
    /// Builds a tensor, checking that `data` has exactly the bytes dtype and shape imply.
    ///
    /// # Errors
    /// [`ModelError::ByteLength`] when the length is wrong, [`ModelError::Overflow`] when the
    /// shape's element count overflows.
    pub fn new(dtype: DType, shape: Vec<u64>, data: Vec<u8>) -> Result<HostTensor, ModelError> {
        let s = Shape::fixed(&shape);
        let n = s.elements()?;
        let expected =
            dtype.storage_bytes(n).ok_or_else(|| ModelError::Overflow { shape: s.to_string() })?;
        if expected != data.len() as u64 {
            return Err(ModelError::ByteLength {
                name: String::new(),
                dtype,
                shape: s.to_string(),
                expected,
                got: data.len() as u64,
            });
        }
        Ok(HostTensor { dtype, shape, data })
    }

    /// A tensor from f32 values.
    ///
    /// # Errors
    /// When `values.len()` does not match `shape`.
    pub fn from_f32(shape: Vec<u64>, values: &[f32]) -> Result<HostTensor, ModelError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        HostTensor::new(DType::F32, shape, data)
    }

    /// The raw little-endian bytes.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Consumes the tensor, returning its bytes.
    #[must_use]
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Number of elements.
    #[must_use]
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Values widened to f64, for the dtypes that have a numeric reading (`None` for strings,
    /// complex and 4-bit types).
    #[must_use]
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        let d = &self.data;
        let v: Vec<f64> = match self.dtype {
            DType::F64 => d.chunks_exact(8).map(|c| f64::from_le_bytes(arr(c))).collect(),
            DType::F32 => {
                d.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(arr(c)))).collect()
            }
            DType::F16 => d
                .chunks_exact(2)
                .map(|c| f64::from(half::f16::from_le_bytes(arr(c)).to_f32()))
                .collect(),
            DType::BF16 => d
                .chunks_exact(2)
                .map(|c| f64::from(half::bf16::from_le_bytes(arr(c)).to_f32()))
                .collect(),
            #[allow(
                clippy::cast_precision_loss,
                reason = "f64 reading of large ints is lossy by design"
            )]
            DType::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(arr(c)) as f64).collect(),
            #[allow(
                clippy::cast_precision_loss,
                reason = "f64 reading of large ints is lossy by design"
            )]
            DType::U64 => d.chunks_exact(8).map(|c| u64::from_le_bytes(arr(c)) as f64).collect(),
            DType::I32 => {
                d.chunks_exact(4).map(|c| f64::from(i32::from_le_bytes(arr(c)))).collect()
            }
            DType::U32 => {
                d.chunks_exact(4).map(|c| f64::from(u32::from_le_bytes(arr(c)))).collect()
            }
            DType::I16 => {
                d.chunks_exact(2).map(|c| f64::from(i16::from_le_bytes(arr(c)))).collect()
            }
            DType::U16 => {
                d.chunks_exact(2).map(|c| f64::from(u16::from_le_bytes(arr(c)))).collect()
            }
            DType::I8 => d.iter().map(|&b| f64::from(b.cast_signed())).collect(),
            DType::U8 | DType::Bool => d.iter().map(|&b| f64::from(b)).collect(),
            _ => return None,
        };
        Some(v)
    }
}

fn arr<const N: usize>(c: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(c);
    a
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn length_is_checked() {
        assert!(HostTensor::new(DType::F32, vec![2, 3], vec![0; 24]).is_ok());
        let e = HostTensor::new(DType::F32, vec![2, 3], vec![0; 23]).unwrap_err();
        assert!(e.to_string().contains("need 24"), "{e}");
    }

    #[test]
    fn widen() {
        let t = HostTensor::from_f32(vec![2], &[1.5, -2.0]).unwrap();
        assert_eq!(t.to_f64().unwrap(), vec![1.5, -2.0]);
        let b =
            HostTensor::new(DType::BF16, vec![1], half::bf16::from_f32(3.0).to_le_bytes().to_vec())
                .unwrap();
        assert_eq!(b.to_f64().unwrap(), vec![3.0]);
    }
}
