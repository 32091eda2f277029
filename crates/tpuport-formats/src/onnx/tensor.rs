//! `TensorProto` / `SparseTensorProto` to [`Weight`]: raw data as slices of the file's mapping,
//! typed fields decoded to little-endian bytes, external data mapped, sparse data densified.
//! Every byte count is checked against dtype × shape before anything is kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use prost::bytes::Bytes;
use tpuport_model::{DType, Shape, Weight, WeightData};

use crate::{FormatError, Limits};

use super::dtype::from_onnx;
use super::external::ExternalFiles;
use super::proto::{DATA_LOCATION_EXTERNAL, SparseTensorProto, TensorProto};

/// Raw data at most this long is copied into the weight instead of referencing the mapping.
const INLINE_MAX: usize = 256;

/// Reads tensors of one model file.
#[derive(Debug)]
pub(crate) struct TensorReader {
    /// The model file (for messages).
    pub(crate) path: PathBuf,
    dir: PathBuf,
    map: Arc<Mmap>,
    map_path: Arc<PathBuf>,
    external: ExternalFiles,
    pub(crate) limits: Limits,
}

impl TensorReader {
    /// A reader for tensors decoded from `map`, the mapping of the model at `path`.
    pub(crate) fn new(path: &Path, map: Arc<Mmap>, limits: Limits) -> TensorReader {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        TensorReader {
            path: path.to_path_buf(),
            dir,
            map,
            map_path: Arc::new(path.to_path_buf()),
            external: ExternalFiles::default(),
            limits,
        }
    }

    fn invalid(&self, what: String) -> FormatError {
        FormatError::invalid(&self.path, what)
    }

    /// Converts a tensor; `what` names it in messages (`initializer 'w'`).
    pub(crate) fn weight(
        &mut self,
        t: &TensorProto,
        name: String,
        what: &str,
    ) -> Result<Weight, FormatError> {
        let (dtype, shape, n) = self.header(t, what)?;
        let need = dtype.storage_bytes(n);
        if t.segment.is_some() {
            return Err(FormatError::unsupported(&self.path, format!("{what}: segmented tensors")));
        }
        let data = if t.data_location == DATA_LOCATION_EXTERNAL {
            let need = need.ok_or_else(|| {
                self.invalid(format!("{what}: string tensors cannot be external"))
            })?;
            self.external.resolve(&self.path, &self.dir, &t.external_data, what, need)?
        } else if !t.raw_data.is_empty() {
            let need = need.ok_or_else(|| {
                self.invalid(format!("{what}: string tensors cannot use raw_data"))
            })?;
            if t.raw_data.len() as u64 != need {
                return Err(self.invalid(format!(
                    "{what}: raw_data holds {} bytes, but {dtype}{} needs {need}",
                    t.raw_data.len(),
                    Shape::fixed(&shape)
                )));
            }
            self.raw(&t.raw_data)
        } else {
            WeightData::Inline(Arc::from(typed_bytes(t, dtype, n).map_err(|m| {
                self.invalid(format!(
                    "{what}: {m}, but {dtype}{} needs {n} elements",
                    Shape::fixed(&shape)
                ))
            })?))
        };
        Ok(Weight { name, dtype, shape, data })
    }

    /// Element type, validated shape and element count.
    fn header(&self, t: &TensorProto, what: &str) -> Result<(DType, Vec<u64>, u64), FormatError> {
        let dtype = from_onnx(t.data_type).ok_or_else(|| {
            FormatError::unsupported(
                &self.path,
                format!("{what}: element type code {}", t.data_type),
            )
        })?;
        let shape = dims(&t.dims).map_err(|m| self.invalid(format!("{what}: {m}")))?;
        let n =
            Shape::fixed(&shape).elements().map_err(|e| self.invalid(format!("{what}: {e}")))?;
        if dtype.storage_bytes(n).is_none() && dtype != DType::String {
            return Err(self.invalid(format!("{what}: byte size of {n} elements overflows")));
        }
        Ok((dtype, shape, n))
    }

    fn raw(&self, raw: &Bytes) -> WeightData {
        let base = self.map.as_ptr().addr();
        let p = raw.as_ptr().addr();
        let inside = p >= base && p - base + raw.len() <= self.map.len();
        if raw.len() > INLINE_MAX && inside {
            WeightData::Mapped {
                map: Arc::clone(&self.map),
                path: Arc::clone(&self.map_path),
                offset: (p - base) as u64,
                len: raw.len() as u64,
            }
        } else {
            WeightData::Inline(Arc::from(&raw[..]))
        }
    }

    /// Converts a sparse tensor to a dense weight named after its values tensor.
    pub(crate) fn sparse(
        &mut self,
        s: &SparseTensorProto,
        what: &str,
    ) -> Result<Weight, FormatError> {
        let values = s
            .values
            .as_ref()
            .ok_or_else(|| self.invalid(format!("{what}: sparse tensor has no values")))?;
        let indices = s
            .indices
            .as_ref()
            .ok_or_else(|| self.invalid(format!("{what}: sparse tensor has no indices")))?;
        let name = values.name.clone();
        let vw = self.weight(values, name.clone(), &format!("{what} values"))?;
        let iw = self.weight(indices, String::new(), &format!("{what} indices"))?;
        let shape = dims(&s.dims).map_err(|m| self.invalid(format!("{what}: {m}")))?;
        let n =
            Shape::fixed(&shape).elements().map_err(|e| self.invalid(format!("{what}: {e}")))?;
        let width =
            vw.dtype.bits().filter(|b| b % 8 == 0).map(|b| (b / 8) as usize).ok_or_else(|| {
                FormatError::unsupported(&self.path, format!("{what}: sparse {} values", vw.dtype))
            })?;
        let total = n
            .checked_mul(width as u64)
            .filter(|b| *b <= self.limits.max_inflated_bytes)
            .ok_or_else(|| {
                self.invalid(format!(
                    "{what}: dense size of {n} elements exceeds the {} byte limit",
                    self.limits.max_inflated_bytes
                ))
            })?;
        let nnz = vw.elements();
        if vw.shape.len() != 1 {
            return Err(self.invalid(format!("{what}: sparse values must be 1-D")));
        }
        let rank = shape.len() as u64;
        let linear = match iw.shape.as_slice() {
            [k] if *k == nnz => true,
            [k, r] if *k == nnz && *r == rank => false,
            _ => {
                return Err(self.invalid(format!(
                    "{what}: indices shape {:?} fits neither [NNZ] nor [NNZ, rank]",
                    iw.shape
                )));
            }
        };
        let idx = int_values(&iw)
            .ok_or_else(|| self.invalid(format!("{what}: indices must be int64 or int32")))?;
        let vbytes = vw.bytes().map_err(|e| self.invalid(format!("{what}: {e}")))?;
        let mut out = vec![
            0u8;
            usize::try_from(total)
                .map_err(|_| self.invalid(format!("{what}: too large")))?
        ];
        for k in 0..usize::try_from(nnz).unwrap_or(0) {
            let flat = if linear {
                u64::try_from(idx[k]).ok()
            } else {
                let r = shape.len();
                let mut f: u64 = 0;
                let mut ok = true;
                for (j, &d) in shape.iter().enumerate() {
                    let i = u64::try_from(idx[k * r + j]).ok().filter(|i| *i < d);
                    match i {
                        Some(i) => f = f * d + i,
                        None => ok = false,
                    }
                }
                ok.then_some(f)
            };
            let flat = flat.filter(|f| *f < n).ok_or_else(|| {
                self.invalid(format!("{what}: sparse index {k} lies outside the dense shape"))
            })?;
            let (dst, src) = (flat as usize * width, k * width);
            out[dst..dst + width].copy_from_slice(&vbytes[src..src + width]);
        }
        Ok(Weight { name, dtype: vw.dtype, shape, data: WeightData::Inline(Arc::from(out)) })
    }
}

/// Validates tensor dims: non-negative.
pub(crate) fn dims(d: &[i64]) -> Result<Vec<u64>, String> {
    d.iter()
        .enumerate()
        .map(|(i, &v)| u64::try_from(v).map_err(|_| format!("dimension {i} is negative ({v})")))
        .collect()
}

fn int_values(w: &Weight) -> Option<Vec<i64>> {
    let b = w.bytes().ok()?;
    match w.dtype {
        DType::I64 => Some(
            b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect(),
        ),
        DType::I32 => Some(
            b.chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes(c.try_into().unwrap_or([0; 4]))))
                .collect(),
        ),
        _ => None,
    }
}

/// Encodes a tensor's typed data fields as little-endian bytes. Strings are stored as a u64
/// length followed by the bytes, for each element.
fn typed_bytes(t: &TensorProto, dtype: DType, n: u64) -> Result<Vec<u8>, String> {
    fn check(field: &str, got: usize, want: u64) -> Result<(), String> {
        if got as u64 == want { Ok(()) } else { Err(format!("{field} holds {got} values")) }
    }
    let pairs = if dtype.is_complex() { n.saturating_mul(2) } else { n };
    let out: Vec<u8> = match dtype {
        DType::F32 | DType::C64 => {
            check("float_data", t.float_data.len(), pairs)?;
            t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        DType::F64 | DType::C128 => {
            check("double_data", t.double_data.len(), pairs)?;
            t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        DType::I64 => {
            check("int64_data", t.int64_data.len(), n)?;
            t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        DType::U64 => {
            check("uint64_data", t.uint64_data.len(), n)?;
            t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        #[allow(clippy::cast_possible_truncation, reason = "ONNX stores u32 in uint64_data")]
        DType::U32 => {
            check("uint64_data", t.uint64_data.len(), n)?;
            t.uint64_data.iter().flat_map(|v| (*v as u32).to_le_bytes()).collect()
        }
        DType::String => {
            check("string_data", t.string_data.len(), n)?;
            let mut v = Vec::new();
            for s in &t.string_data {
                v.extend_from_slice(&(s.len() as u64).to_le_bytes());
                v.extend_from_slice(s);
            }
            v
        }
        DType::I4 | DType::U4 => {
            // Two 4-bit values per int32_data entry (one byte each).
            check("int32_data", t.int32_data.len(), n.div_ceil(2))?;
            t.int32_data.iter().map(|v| v.to_le_bytes()[0]).collect()
        }
        _ => {
            // i32, i16, i8, u16, u8, bool, f16, bf16, f8*: one int32_data entry per element,
            // the element's bytes in its low bits.
            check("int32_data", t.int32_data.len(), n)?;
            let w = dtype.bits().map_or(4, |b| (b / 8) as usize).clamp(1, 4);
            t.int32_data.iter().flat_map(|v| v.to_le_bytes().into_iter().take(w)).collect()
        }
    };
    Ok(out)
}
