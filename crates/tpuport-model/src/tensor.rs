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

    /// Values widened to f64, for the dtypes that have a numeric reading (`None` for strings
    /// and complex types). Exact for every float type and for integers up to 2^53; 4-bit
    /// integers are unpacked low nibble first, the 8-bit floats decoded with their own special
    /// values (E5M2 has infinities; E4M3FN has one NaN pattern per sign and no infinities; the
    /// FNUZ types have NaN at `0x80` and no negative zero).
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
            DType::U8 => d.iter().map(|&b| f64::from(b)).collect(),
            DType::Bool => d.iter().map(|&b| f64::from(u8::from(b != 0))).collect(),
            DType::I4 | DType::U4 => {
                let n = usize::try_from(self.elements()).ok()?;
                (0..n)
                    .map(|i| {
                        let v = d.get(i / 2).map_or(0, |b| (b >> (4 * (i % 2))) & 0x0f);
                        if self.dtype == DType::I4 && v & 0x08 != 0 {
                            f64::from(i16::from(v) - 16)
                        } else {
                            f64::from(v)
                        }
                    })
                    .collect()
            }
            DType::F8E4M3FN => d.iter().map(|&b| f8(b, 3, 7, F8::Fn)).collect(),
            DType::F8E4M3FNUZ => d.iter().map(|&b| f8(b, 3, 8, F8::Fnuz)).collect(),
            DType::F8E5M2 => d.iter().map(|&b| f8(b, 2, 15, F8::Ieee)).collect(),
            DType::F8E5M2FNUZ => d.iter().map(|&b| f8(b, 2, 16, F8::Fnuz)).collect(),
            _ => return None,
        };
        Some(v)
    }
}

/// How an 8-bit float encodes its special values.
#[derive(Clone, Copy)]
enum F8 {
    /// IEEE-style: the all-ones exponent holds infinities and NaNs (E5M2).
    Ieee,
    /// No infinities; NaN is all ones in exponent and mantissa (E4M3FN).
    Fn,
    /// No infinities, no negative zero; NaN is `0x80` (the FNUZ types).
    Fnuz,
}

/// Decodes an 8-bit float with `mbits` mantissa bits and exponent `bias`.
fn f8(b: u8, mbits: u32, bias: i32, kind: F8) -> f64 {
    let emax = (1u32 << (7 - mbits)) - 1;
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = (u32::from(b) >> mbits) & emax;
    let m = u32::from(b) & ((1 << mbits) - 1);
    match kind {
        F8::Fnuz if b == 0x80 => return f64::NAN,
        F8::Fn if e == emax && m == (1 << mbits) - 1 => return f64::NAN,
        F8::Ieee if e == emax => return if m == 0 { sign * f64::INFINITY } else { f64::NAN },
        _ => {}
    }
    let frac = f64::from(m) / f64::from(1u32 << mbits);
    #[allow(clippy::cast_possible_wrap, reason = "e < 32")]
    let v =
        if e == 0 { frac * 2f64.powi(1 - bias) } else { (1.0 + frac) * 2f64.powi(e as i32 - bias) };
    sign * v
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
        let i4 = HostTensor::new(DType::I4, vec![3], vec![0x9f, 0x07]).unwrap();
        assert_eq!(i4.to_f64().unwrap(), vec![-1.0, -7.0, 7.0]);
        let u4 = HostTensor::new(DType::U4, vec![2], vec![0x9f]).unwrap();
        assert_eq!(u4.to_f64().unwrap(), vec![15.0, 9.0]);
        let flag = HostTensor::new(DType::Bool, vec![2], vec![0, 2]).unwrap();
        assert_eq!(flag.to_f64().unwrap(), vec![0.0, 1.0]);
    }

    /// Reference values: `ml_dtypes` (`np.array([...], dtype=ml_dtypes.float8_*)`), the
    /// largest finite value of each type, its smallest subnormal, and the special patterns.
    #[test]
    fn f8_decoding() {
        let one = |dtype: DType, b: u8| {
            HostTensor::new(dtype, vec![], vec![b]).unwrap().to_f64().unwrap()[0]
        };
        assert_eq!(one(DType::F8E4M3FN, 0x7e), 448.0);
        assert!(one(DType::F8E4M3FN, 0x7f).is_nan());
        assert_eq!(one(DType::F8E4M3FN, 0x01), 2f64.powi(-9));
        assert_eq!(one(DType::F8E5M2, 0x7b), 57344.0);
        assert_eq!(one(DType::F8E5M2, 0xfc), f64::NEG_INFINITY);
        assert!(one(DType::F8E4M3FNUZ, 0x80).is_nan());
        assert_eq!(one(DType::F8E4M3FNUZ, 0x7f), 240.0);
        assert_eq!(one(DType::F8E5M2FNUZ, 0x7f), 57344.0);
        assert_eq!(one(DType::F8E5M2FNUZ, 0x00), 0.0);
    }
}
