use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use serde::Serialize;

use crate::{DType, ModelError, Shape};

/// Index of a [`Weight`] in a [`WeightStore`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct WeightId(pub u32);

/// Where a weight's bytes are. Nothing is read until [`Weight::bytes`] is called.
#[derive(Clone)]
pub enum WeightData {
    /// A byte range of a memory-mapped file (safetensors, ONNX external data, an uncompressed
    /// zip member).
    Mapped {
        /// The mapping, shared by every weight of the file.
        map: Arc<Mmap>,
        /// File the mapping is of (for messages).
        path: Arc<PathBuf>,
        /// Start offset in the mapping.
        offset: u64,
        /// Byte length.
        len: u64,
    },
    /// A byte range of a file, read on demand.
    File {
        /// File path.
        path: Arc<PathBuf>,
        /// Start offset.
        offset: u64,
        /// Byte length.
        len: u64,
    },
    /// Bytes held in memory (small ONNX `raw_data`, decoded typed fields, MLIR dense literals).
    Inline(Arc<[u8]>),
    /// A tensor whose every element is the same (ONNX `ConstantOfShape`, splat MLIR constants):
    /// one element's bytes.
    Splat(Arc<[u8]>),
    /// No bytes in this import: header-only formats (a pickle's storage metadata) or
    /// weight-stripped files. `len` is the declared byte size when known.
    Absent {
        /// Declared size in bytes, if the file states one.
        len: Option<u64>,
    },
}

impl std::fmt::Debug for WeightData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WeightData::Mapped { path, offset, len, .. } => {
                write!(f, "Mapped({}@{offset}+{len})", path.display())
            }
            WeightData::File { path, offset, len } => {
                write!(f, "File({}@{offset}+{len})", path.display())
            }
            WeightData::Inline(b) => write!(f, "Inline({} bytes)", b.len()),
            WeightData::Splat(b) => write!(f, "Splat({} bytes)", b.len()),
            WeightData::Absent { len } => write!(f, "Absent({len:?})"),
        }
    }
}

/// A stored tensor: name, element type, static shape and lazily read bytes.
#[derive(Clone, Debug)]
pub struct Weight {
    /// Name as the file spells it (state-dict key, initializer name).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
    /// The bytes, wherever they are.
    pub data: WeightData,
}

impl Weight {
    /// Number of elements (saturating: hostile shapes were rejected by the importer).
    #[must_use]
    pub fn elements(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }

    /// Storage size implied by dtype and shape (0 for strings).
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.dtype.storage_bytes(self.elements()).unwrap_or(0)
    }

    /// The shape as a [`Shape`].
    #[must_use]
    pub fn shape(&self) -> Shape {
        Shape::fixed(&self.shape)
    }

    /// Reads the bytes: borrowed from the mapping when mapped, read from disk when file-backed,
    /// expanded when splat.
    ///
    /// # Errors
    /// [`ModelError::NoData`] for header-only weights, [`ModelError::Io`] and
    /// [`ModelError::OutOfRange`] for file-backed data that cannot be read.
    pub fn bytes(&self) -> Result<Cow<'_, [u8]>, ModelError> {
        match &self.data {
            WeightData::Mapped { map, path, offset, len } => {
                let end = offset.saturating_add(*len);
                let (Ok(s), Ok(e)) = (usize::try_from(*offset), usize::try_from(end)) else {
                    return Err(self.out_of_range(path, *offset, end, map.len() as u64));
                };
                map.get(s..e)
                    .map(Cow::Borrowed)
                    .ok_or_else(|| self.out_of_range(path, *offset, end, map.len() as u64))
            }
            WeightData::File { path, offset, len } => self.read_file(path, *offset, *len),
            WeightData::Inline(b) => Ok(Cow::Borrowed(b)),
            WeightData::Splat(one) => {
                let n = usize::try_from(self.elements()).unwrap_or(usize::MAX);
                let mut v = Vec::with_capacity(one.len().saturating_mul(n).min(1 << 30));
                for _ in 0..n {
                    v.extend_from_slice(one);
                }
                Ok(Cow::Owned(v))
            }
            WeightData::Absent { .. } => Err(ModelError::NoData { name: self.name.clone() }),
        }
    }

    /// The weight as a dense host tensor (its bytes read or copied out of the mapping).
    ///
    /// # Errors
    /// As [`Weight::bytes`]; [`ModelError::ByteLength`] when the stored bytes do not match the
    /// dtype and shape.
    pub fn to_host(&self) -> Result<crate::HostTensor, ModelError> {
        let bytes = self.bytes()?.into_owned();
        crate::HostTensor::new(self.dtype, self.shape.clone(), bytes).map_err(|e| match e {
            ModelError::ByteLength { dtype, shape, expected, got, .. } => {
                ModelError::ByteLength { name: self.name.clone(), dtype, shape, expected, got }
            }
            e => e,
        })
    }

    fn read_file(&self, path: &Path, offset: u64, len: u64) -> Result<Cow<'_, [u8]>, ModelError> {
        let io = |source| ModelError::Io {
            name: self.name.clone(),
            path: path.display().to_string(),
            source,
        };
        let mut f = File::open(path).map_err(io)?;
        let flen = f.metadata().map_err(io)?.len();
        let end = offset.saturating_add(len);
        if end > flen {
            return Err(self.out_of_range(path, offset, end, flen));
        }
        f.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        f.take(len).read_to_end(&mut buf).map_err(io)?;
        Ok(Cow::Owned(buf))
    }

    fn out_of_range(&self, path: &Path, offset: u64, end: u64, len: u64) -> ModelError {
        ModelError::OutOfRange {
            name: self.name.clone(),
            path: path.display().to_string(),
            offset,
            end,
            len,
        }
    }
}

/// All stored tensors of a model, by id and by name.
#[derive(Clone, Debug, Default)]
pub struct WeightStore {
    weights: Vec<Weight>,
    by_name: HashMap<String, WeightId>,
}

impl WeightStore {
    /// Adds a weight. A later weight with an existing name replaces the name lookup but keeps
    /// both entries (files with duplicate names are reported by importers, not hidden).
    ///
    /// # Panics
    /// If the store already holds `u32::MAX` weights.
    pub fn push(&mut self, w: Weight) -> WeightId {
        let id = WeightId(u32::try_from(self.weights.len()).expect("weight store overflow"));
        self.by_name.insert(w.name.clone(), id);
        self.weights.push(w);
        id
    }

    /// The weight behind an id.
    ///
    /// # Panics
    /// If `id` does not belong to this store.
    #[must_use]
    pub fn get(&self, id: WeightId) -> &Weight {
        &self.weights[id.0 as usize]
    }

    /// Looks a weight up by name.
    #[must_use]
    pub fn by_name(&self, name: &str) -> Option<&Weight> {
        self.by_name.get(name).map(|id| self.get(*id))
    }

    /// The id of a named weight.
    #[must_use]
    pub fn id_of(&self, name: &str) -> Option<WeightId> {
        self.by_name.get(name).copied()
    }

    /// All weights in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Weight> {
        self.weights.iter()
    }

    /// Number of weights.
    #[must_use]
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Total elements over all weights.
    #[must_use]
    pub fn total_elements(&self) -> u64 {
        self.weights.iter().map(Weight::elements).fold(0, u64::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn splat_and_inline_bytes() {
        let w = Weight {
            name: "z".into(),
            dtype: DType::F32,
            shape: vec![2, 2],
            data: WeightData::Splat(Arc::from(&1f32.to_le_bytes()[..])),
        };
        assert_eq!(w.bytes().unwrap().len(), 16);
        assert_eq!(w.nbytes(), 16);
        let a = Weight { data: WeightData::Absent { len: None }, ..w };
        assert!(matches!(a.bytes(), Err(ModelError::NoData { .. })));
    }

    #[test]
    fn to_host_names_the_weight() {
        let w = Weight {
            name: "w".into(),
            dtype: DType::F32,
            shape: vec![2],
            data: WeightData::Splat(Arc::from(&1.5f32.to_le_bytes()[..])),
        };
        assert_eq!(w.to_host().unwrap().to_f64().unwrap(), vec![1.5, 1.5]);
        let short = Weight { data: WeightData::Inline(Arc::from(&[0u8; 4][..])), ..w };
        let e = short.to_host().unwrap_err().to_string();
        assert!(e.starts_with("tensor `w`: 4 bytes"), "{e}");
    }

    #[test]
    fn file_range_past_end_is_an_error() {
        let dir = std::env::temp_dir().join(format!("tpuport-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("w.bin");
        std::fs::write(&p, [0u8; 8]).unwrap();
        let w = Weight {
            name: "x".into(),
            dtype: DType::F32,
            shape: vec![4],
            data: WeightData::File { path: Arc::new(p.clone()), offset: 4, len: 16 },
        };
        assert!(matches!(w.bytes(), Err(ModelError::OutOfRange { .. })));
        let ok = Weight { data: WeightData::File { path: Arc::new(p), offset: 0, len: 8 }, ..w };
        assert_eq!(ok.bytes().unwrap().len(), 8);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
