//! MLIR bytecode (`ML\xEFR`): only the header is read. The producer string (`StableHLO_v1.15.0`)
//! names the StableHLO version of a portable artifact; the graph itself is not decoded (PJRT
//! plugins compile bytecode directly).

use std::io::Read;
use std::path::Path;

use tpuport_model::{Model, ModelFormat, NoteLevel};

use crate::FormatError;

/// The bytecode magic number.
pub(crate) const MAGIC: &[u8; 4] = b"ML\xEFR";

/// Most bytes read from the file (magic, version, producer).
const HEADER_MAX: u64 = 4096;

/// Reads a bytecode file's header into an empty model with a `bytecode-opaque` note.
pub(crate) fn import(path: &Path) -> Result<Model, FormatError> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(HEADER_MAX).read_to_end(&mut head))
        .map_err(|e| FormatError::io(path, e))?;
    let (version, producer) = header(&head).map_err(|what| FormatError::invalid(path, what))?;
    let mut m = Model::empty(ModelFormat::StablehloBytecode);
    if let Some(v) = producer.strip_prefix("StableHLO_v") {
        m.metadata.stablehlo_version = Some(v.to_owned());
    }
    m.metadata.producer = Some(producer.clone());
    m.metadata.properties.push(("mlir.bytecode_version".to_owned(), version.to_string()));
    m.note(
        NoteLevel::Info,
        "bytecode-opaque",
        format!("MLIR bytecode (version {version}, producer {producer}): the graph is not decoded; PJRT compiles the file directly"),
    );
    Ok(m)
}

/// Magic, bytecode version (MLIR prefix varint) and the NUL-terminated producer string.
pub(crate) fn header(b: &[u8]) -> Result<(u64, String), String> {
    if b.len() < 5 || &b[..4] != MAGIC {
        return Err("not MLIR bytecode (magic `ML\\xEFR` missing)".to_owned());
    }
    let (version, used) = varint(&b[4..]).ok_or("truncated bytecode version")?;
    let rest = &b[4 + used..];
    let end = rest.iter().position(|&c| c == 0).ok_or_else(|| {
        format!("bytecode producer string is not terminated within the first {HEADER_MAX} bytes")
    })?;
    let producer = String::from_utf8_lossy(&rest[..end]).into_owned();
    Ok((version, producer))
}

/// MLIR's prefix varint: the count of trailing zero bits of the first byte says how many more
/// bytes follow (0 → value in the high 7 bits; a zero byte → 8 full bytes follow).
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    if first & 1 == 1 {
        return Some((u64::from(first >> 1), 1));
    }
    if first == 0 {
        let bytes: [u8; 8] = b.get(1..9)?.try_into().ok()?;
        return Some((u64::from_le_bytes(bytes), 9));
    }
    let extra = first.trailing_zeros() as usize;
    let bytes = b.get(..=extra)?;
    let mut buf = [0u8; 8];
    buf[..=extra].copy_from_slice(bytes);
    Some((u64::from_le_bytes(buf) >> (extra + 1), extra + 1))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn reads_header() {
        let mut b = b"ML\xEFR\x0dStableHLO_v1.15.0\x00\x01\x02".to_vec();
        assert_eq!(header(&b), Ok((6, "StableHLO_v1.15.0".to_owned())));
        b.truncate(10);
        assert!(header(&b).unwrap_err().contains("not terminated"));
        assert!(header(b"MLIR").is_err());
        assert_eq!(varint(&[0b0000_0010, 0x01]), Some((64, 2)));
    }
}
