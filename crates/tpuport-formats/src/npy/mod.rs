//! NumPy `.npy` and `.npz`: read and write [`HostTensor`]s, and import either as a weights-only
//! [`Model`].
//!
//! Reading accepts format versions 1–3, little- and big-endian data (big-endian is byte-swapped
//! to the little-endian layout [`HostTensor`] holds) and Fortran order (transposed to row-major).
//! The data must be exactly the bytes the header's dtype and shape imply, so a truncated file is
//! an error, never a short tensor. Writing produces version 1.0 headers (2.0 when a header is
//! too long) that `np.load` reads; every write goes to a temporary file in the target's folder
//! and is renamed over the target only when complete.
//!
//! As an importer, an `.npy` becomes one weight named after the file stem, an `.npz` one weight
//! per `.npy` member named after the member (without `.npy`). Little-endian row-major data in
//! stored (uncompressed) files is [`WeightData::Mapped`]; other data is decoded into memory,
//! within [`crate::Limits::max_inflated_bytes`].

mod header;
mod npz;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use tpuport_model::{DType, HostTensor, Model, ModelFormat, Weight, WeightData};

pub use npz::{read_npz, read_npz_with, write_npz};

use crate::torch::archive::map_file;
use crate::{FormatError, ImportOptions, Importer};
use header::NpyHeader;

/// Importer for `.npy` and `.npz` files.
#[derive(Debug)]
pub struct NpyImporter;

impl Importer for NpyImporter {
    fn name(&self) -> &'static str {
        "npy"
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if head.starts_with(header::MAGIC) {
            return true;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let zip = head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06");
        zip && (ext == "npz"
            || crate::torch::first_member_name(head).is_some_and(|n| n.ends_with(".npy")))
    }

    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
        let map = map_file(path)?;
        if map.starts_with(b"PK") {
            return npz::import(path, map, &opts.limits);
        }
        let h = header::parse(&map).map_err(|e| FormatError::invalid(path, e))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("array").to_owned();
        let mut model = Model::empty(ModelFormat::Npy);
        model.metadata.producer = Some("numpy".to_owned());
        let mut budget = opts.limits.max_inflated_bytes;
        let w = weight(path, &map, 0, &map, &h, name, &mut budget)?;
        model.weights.push(w);
        Ok(model)
    }
}

/// Bytes the header's dtype and shape imply.
fn expected_len(h: &NpyHeader) -> Option<u64> {
    let n = h.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    h.dtype.storage_bytes(n)
}

fn check_len(h: &NpyHeader, data_len: u64) -> Result<(), String> {
    let Some(need) = expected_len(h) else {
        return Err(format!("shape {:?} overflows", h.shape));
    };
    if need != data_len {
        return Err(format!(
            "data is {data_len} bytes but dtype {} and shape {:?} need {need}{}",
            h.dtype,
            h.shape,
            if data_len < need { " (truncated)" } else { "" }
        ));
    }
    Ok(())
}

/// A weight over one `.npy` image `npy` that starts at `base` in `map`.
fn weight(
    path: &Path,
    map: &Arc<memmap2::Mmap>,
    base: u64,
    npy: &[u8],
    h: &NpyHeader,
    name: String,
    budget: &mut u64,
) -> Result<Weight, FormatError> {
    let data = &npy[h.data_start..];
    check_len(h, data.len() as u64)
        .map_err(|e| FormatError::invalid(path, format!("{name}: {e}")))?;
    let wd = if !h.big_endian && !h.fortran {
        WeightData::Mapped {
            map: map.clone(),
            path: Arc::new(path.to_path_buf()),
            offset: base + h.data_start as u64,
            len: data.len() as u64,
        }
    } else {
        if data.len() as u64 > *budget {
            return Err(FormatError::invalid(
                path,
                format!("{name}: converting {} bytes exceeds the inflation limit", data.len()),
            ));
        }
        *budget -= data.len() as u64;
        WeightData::Inline(Arc::from(to_native(h, data)))
    };
    Ok(Weight { name, dtype: h.dtype, shape: h.shape.clone(), data: wd })
}

/// Little-endian, row-major bytes from the data of a file (checked length).
fn to_native(h: &NpyHeader, data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    if h.big_endian {
        let el = usize::try_from(h.dtype.storage_bytes(1).unwrap_or(1)).unwrap_or(1);
        let unit = if h.dtype.is_complex() { el / 2 } else { el };
        if unit > 1 {
            for c in v.chunks_exact_mut(unit) {
                c.reverse();
            }
        }
    }
    if h.fortran && h.shape.len() > 1 {
        v = fortran_to_c(&v, &h.shape, h.dtype);
    }
    v
}

/// Reorders column-major data of `shape` into row-major.
fn fortran_to_c(src: &[u8], shape: &[u64], dtype: DType) -> Vec<u8> {
    let el = usize::try_from(dtype.storage_bytes(1).unwrap_or(1)).unwrap_or(1);
    let dims: Vec<usize> = shape.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
    // Column-major strides (in elements).
    let mut fstride = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        fstride[k] = fstride[k - 1] * dims[k - 1];
    }
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(src.len());
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        let off: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum::<usize>() * el;
        out.extend_from_slice(&src[off..off + el]);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Decodes a whole `.npy` image.
pub(crate) fn decode(bytes: &[u8]) -> Result<HostTensor, String> {
    let h = header::parse(bytes)?;
    let data = &bytes[h.data_start..];
    check_len(&h, data.len() as u64)?;
    let v = to_native(&h, data);
    HostTensor::new(h.dtype, h.shape, v).map_err(|e| e.to_string())
}

/// Encodes a tensor as a `.npy` image.
pub(crate) fn encode(t: &HostTensor) -> Result<Vec<u8>, String> {
    let Some(descr) = header::dtype_to_descr(t.dtype) else {
        return Err(format!("dtype {} has no .npy encoding", t.dtype));
    };
    let mut out = header::format(descr, &t.shape);
    out.extend_from_slice(t.data());
    Ok(out)
}

/// Reads an `.npy` file.
///
/// # Errors
/// [`FormatError::Io`] when unreadable, [`FormatError::Invalid`] for a malformed or truncated
/// file, [`FormatError::Unsupported`]-class problems (structured or object dtypes) as invalid
/// with the reason.
pub fn read_npy(path: &Path) -> Result<HostTensor, FormatError> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    decode(&bytes).map_err(|e| FormatError::invalid(path, e))
}

/// Writes an `.npy` file atomically (temporary file in the same folder, then rename).
///
/// # Errors
/// [`FormatError::Unsupported`] for dtypes `.npy` cannot hold (`i4`, `u4`, `string`),
/// [`FormatError::Io`] when writing fails (the target is then left untouched).
pub fn write_npy(path: &Path, t: &HostTensor) -> Result<(), FormatError> {
    let bytes = encode(t).map_err(|e| FormatError::unsupported(path, e))?;
    write_atomic(path, |f| f.write_all(&bytes))
}

/// Writes through `fill` with [`tpuport_model::fs::write_atomic`].
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), FormatError> {
    tpuport_model::fs::write_atomic(path, fill).map_err(|e| FormatError::io(path, e))
}

/// Where an `.npy` file's data lies, read from its header only: what a reader of row ranges
/// (`tpuport batch`) needs to seek instead of loading the whole array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyLayout {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Offset of the first data byte.
    pub data_start: u64,
    /// Whether the data is stored in native C order, little-endian (rows are then contiguous
    /// byte ranges).
    pub c_order_le: bool,
}

/// Largest header read by [`read_npy_layout`] (NumPy writes a few hundred bytes).
const MAX_LAYOUT_HEADER: u64 = 1 << 20;

/// Reads the header of the `.npy` file at `path`.
///
/// # Errors
/// [`FormatError::Io`] when unreadable, [`FormatError::Invalid`] for a malformed header.
pub fn read_npy_layout(path: &Path) -> Result<NpyLayout, FormatError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
    let mut head = Vec::new();
    f.take(MAX_LAYOUT_HEADER).read_to_end(&mut head).map_err(|e| FormatError::io(path, e))?;
    let h = header::parse(&head).map_err(|e| FormatError::invalid(path, e))?;
    let wide = h.dtype.bits().is_none_or(|b| b > 8);
    Ok(NpyLayout {
        dtype: h.dtype,
        shape: h.shape.clone(),
        data_start: h.data_start as u64,
        c_order_le: !((h.fortran && h.shape.len() > 1) || (h.big_endian && wide)),
    })
}

/// The `.npy` header (magic, version, padded dict) for a C-order array of `dtype` and
/// `shape`; the data follows it directly.
///
/// # Errors
/// [`FormatError::Unsupported`]-class message when `.npy` cannot hold the dtype.
pub fn npy_header(dtype: DType, shape: &[u64]) -> Result<Vec<u8>, String> {
    let Some(descr) = header::dtype_to_descr(dtype) else {
        return Err(format!("dtype {dtype} has no .npy encoding"));
    };
    Ok(header::format(descr, shape))
}
