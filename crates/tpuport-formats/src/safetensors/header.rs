//! The safetensors header: an 8-byte little-endian length, then that many bytes of JSON
//! mapping tensor names to `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative
//! to the byte buffer that follows the header) plus an optional `"__metadata__"` string map.
//!
//! Validation is complete before any weight is handed out: the header length against the file
//! size and [`Limits::max_header_bytes`] (before allocating), JSON syntax and types, duplicate
//! names, dtype names, shape overflow, shape × dtype against each byte range, ranges out of
//! order, overlapping or past the end of the buffer.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use tpuport_model::DType;

use crate::{FormatError, Limits};

/// One tensor entry of a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// The dtype as the file spells it (`F32`, `BF16`).
    pub dtype_name: String,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Byte range relative to the start of the data buffer.
    pub begin: u64,
    /// End of the byte range (exclusive).
    pub end: u64,
}

/// A parsed and validated header.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// Tensors in file order.
    pub tensors: Vec<TensorEntry>,
    /// `__metadata__` entries in file order.
    pub metadata: Vec<(String, String)>,
    /// Absolute file offset where the data buffer starts (8 + header length).
    pub data_start: u64,
    /// Byte length of the data buffer.
    pub data_len: u64,
    /// Buffer bytes no tensor covers: (begin, end) relative to the buffer.
    pub gaps: Vec<(u64, u64)>,
}

/// Maps a safetensors dtype name. `Err(true)` for names safetensors defines that have no
/// tpuport equivalent, `Err(false)` for names it does not define.
pub(crate) fn dtype_of(name: &str) -> Result<DType, bool> {
    Ok(match name {
        "BOOL" => DType::Bool,
        "U8" => DType::U8,
        "I8" => DType::I8,
        "U16" => DType::U16,
        "I16" => DType::I16,
        "U32" => DType::U32,
        "I32" => DType::I32,
        "U64" => DType::U64,
        "I64" => DType::I64,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "C64" => DType::C64,
        "F8_E4M3" => DType::F8E4M3FN,
        "F8_E5M2" => DType::F8E5M2,
        "F8_E8M0" | "F4" | "F6_E2M3" | "F6_E3M2" => return Err(true),
        _ => return Err(false),
    })
}

/// The safetensors spelling of a dtype, when it has one.
#[must_use]
pub fn dtype_name(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::Bool => "BOOL",
        DType::U8 => "U8",
        DType::I8 => "I8",
        DType::U16 => "U16",
        DType::I16 => "I16",
        DType::U32 => "U32",
        DType::I32 => "I32",
        DType::U64 => "U64",
        DType::I64 => "I64",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::C64 => "C64",
        DType::F8E4M3FN => "F8_E4M3",
        DType::F8E5M2 => "F8_E5M2",
        _ => return None,
    })
}

#[derive(Deserialize)]
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// One value of the top-level object: the `__metadata__` table or a tensor entry, decoded
/// straight from the JSON stream (no intermediate `serde_json::Value` per tensor).
enum Item {
    Metadata(serde_json::Value),
    Tensor(RawEntry),
}

/// The top-level JSON object with duplicate keys detected and file order kept. A malformed
/// tensor entry fails the parse with a message naming the tensor.
struct Entries(Vec<(String, Item)>, Option<String>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of tensor entries")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                use serde::de::Error as _;
                let mut out = Vec::new();
                let mut seen = HashSet::new();
                let mut dup = None;
                while let Some(k) = m.next_key::<String>()? {
                    let item = if k == "__metadata__" {
                        Item::Metadata(m.next_value()?)
                    } else {
                        Item::Tensor(
                            m.next_value::<RawEntry>()
                                .map_err(|e| A::Error::custom(format!("tensor `{k}`: {e}")))?,
                        )
                    };
                    if !seen.insert(k.clone()) && dup.is_none() {
                        dup = Some(k.clone());
                    }
                    out.push((k, item));
                }
                Ok(Entries(out, dup))
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads and validates the header of a safetensors file held in `bytes` (the whole file,
/// normally a memory map).
///
/// # Errors
/// [`FormatError::Invalid`] naming the field, [`FormatError::Unsupported`] for dtypes with no
/// tpuport equivalent.
pub fn parse(path: &Path, bytes: &[u8], limits: &Limits) -> Result<Header, FormatError> {
    let bad = |what: String| FormatError::invalid(path, what);
    let file_len = bytes.len() as u64;
    let Some(len_bytes) = bytes.get(..8) else {
        return Err(bad(format!(
            "file is {file_len} bytes, shorter than the 8-byte header length"
        )));
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(len_bytes);
    let n = u64::from_le_bytes(a);
    if n > file_len - 8 {
        return Err(bad(format!("header length {n} exceeds file size {file_len}")));
    }
    if n > limits.max_header_bytes {
        return Err(bad(format!(
            "header length {n} exceeds the limit of {} bytes",
            limits.max_header_bytes
        )));
    }
    let json = &bytes[8..8 + usize::try_from(n).unwrap_or(0)];
    let entries: Entries =
        serde_json::from_slice(json).map_err(|e| bad(format!("header is not valid JSON: {e}")))?;
    if let Some(d) = entries.1 {
        return Err(bad(format!("tensor `{d}` appears twice in the header")));
    }
    if entries.0.len() as u64 > limits.max_items {
        return Err(bad(format!(
            "header lists {} tensors, over the limit of {}",
            entries.0.len(),
            limits.max_items
        )));
    }
    let data_start = 8 + n;
    let data_len = file_len - data_start;
    let mut h = Header { data_start, data_len, ..Header::default() };
    for (name, item) in entries.0 {
        match item {
            Item::Metadata(v) => {
                h.metadata = metadata(&v).map_err(|e| bad(format!("__metadata__: {e}")))?;
            }
            Item::Tensor(raw) => h.tensors.push(entry(path, name, raw, data_len)?),
        }
    }
    h.gaps = check_overlaps(path, &h.tensors, data_len)?;
    Ok(h)
}

fn metadata(v: &serde_json::Value) -> Result<Vec<(String, String)>, String> {
    let serde_json::Value::Object(m) = v else {
        return Err("is not an object of strings".to_owned());
    };
    m.iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(format!("value of `{k}` is not a string")),
        })
        .collect()
}

fn entry(
    path: &Path,
    name: String,
    raw: RawEntry,
    data_len: u64,
) -> Result<TensorEntry, FormatError> {
    let bad = |what: String| FormatError::invalid(path, format!("tensor `{name}`: {what}"));
    let dtype = match dtype_of(&raw.dtype) {
        Ok(d) => d,
        Err(true) => {
            return Err(FormatError::unsupported(
                path,
                format!("tensor `{name}`: dtype {} has no tpuport equivalent", raw.dtype),
            ));
        }
        Err(false) => return Err(bad(format!("unknown dtype `{}`", raw.dtype))),
    };
    let [begin, end] = raw.data_offsets;
    if begin > end {
        return Err(bad(format!("data_offsets [{begin}, {end}] are out of order")));
    }
    if end > data_len {
        return Err(bad(format!(
            "data_offsets [{begin}, {end}] run past the end of the {data_len}-byte data buffer"
        )));
    }
    let elements = raw.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(|| {
        bad(format!("shape {:?} has more elements than fit in 64 bits", raw.shape))
    })?;
    let need = dtype
        .storage_bytes(elements)
        .ok_or_else(|| bad(format!("shape {:?} overflows its byte size", raw.shape)))?;
    if need != end - begin {
        return Err(bad(format!(
            "dtype {} and shape {:?} need {need} bytes but data_offsets [{begin}, {end}] span {}",
            raw.dtype,
            raw.shape,
            end - begin
        )));
    }
    Ok(TensorEntry { name, dtype, dtype_name: raw.dtype, shape: raw.shape, begin, end })
}

fn check_overlaps(
    path: &Path,
    t: &[TensorEntry],
    data_len: u64,
) -> Result<Vec<(u64, u64)>, FormatError> {
    let mut order: Vec<&TensorEntry> = t.iter().filter(|e| e.end > e.begin).collect();
    order.sort_by_key(|e| (e.begin, e.end));
    let mut gaps = Vec::new();
    let mut at = 0u64;
    let mut prev: Option<&TensorEntry> = None;
    for e in order {
        if let Some(p) = prev.filter(|p| e.begin < p.end) {
            return Err(FormatError::invalid(
                path,
                format!(
                    "tensors `{}` [{}, {}] and `{}` [{}, {}] overlap",
                    p.name, p.begin, p.end, e.name, e.begin, e.end
                ),
            ));
        }
        if e.begin > at {
            gaps.push((at, e.begin));
        }
        at = e.end;
        prev = Some(e);
    }
    if data_len > at {
        gaps.push((at, data_len));
    }
    Ok(gaps)
}
