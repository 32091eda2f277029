//! Open Inference Protocol datatype names and the tensor element types behind them.
//!
//! Every type the PJRT plugins take for a model argument has a wire name: the protocol's
//! `BOOL, UINT8…UINT64, INT8…INT64, FP16, FP32, FP64` plus `BF16` (Triton's extension, sent as
//! raw/binary data). `BYTES` exists in the protocol but no compiled program takes strings, so
//! it is refused with a message naming the model's type.

use tpuport_model::DType;

/// The wire name of a tensor type, when the protocol has one.
#[must_use]
pub fn name(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::Bool => "BOOL",
        DType::U8 => "UINT8",
        DType::U16 => "UINT16",
        DType::U32 => "UINT32",
        DType::U64 => "UINT64",
        DType::I8 => "INT8",
        DType::I16 => "INT16",
        DType::I32 => "INT32",
        DType::I64 => "INT64",
        DType::F16 => "FP16",
        DType::BF16 => "BF16",
        DType::F32 => "FP32",
        DType::F64 => "FP64",
        _ => return None,
    })
}

/// The tensor type of a wire name (case-sensitive, as the protocol says).
#[must_use]
pub fn parse(s: &str) -> Option<DType> {
    Some(match s {
        "BOOL" => DType::Bool,
        "UINT8" => DType::U8,
        "UINT16" => DType::U16,
        "UINT32" => DType::U32,
        "UINT64" => DType::U64,
        "INT8" => DType::I8,
        "INT16" => DType::I16,
        "INT32" => DType::I32,
        "INT64" => DType::I64,
        "FP16" => DType::F16,
        "BF16" => DType::BF16,
        "FP32" => DType::F32,
        "FP64" => DType::F64,
        _ => return None,
    })
}

/// Bytes per element of a type that has a wire name.
#[must_use]
pub fn size(d: DType) -> usize {
    match d {
        DType::Bool | DType::U8 | DType::I8 => 1,
        DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
        DType::U32 | DType::I32 | DType::F32 => 4,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in [
            DType::Bool,
            DType::U8,
            DType::U16,
            DType::U32,
            DType::U64,
            DType::I8,
            DType::I16,
            DType::I32,
            DType::I64,
            DType::F16,
            DType::BF16,
            DType::F32,
            DType::F64,
        ] {
            let n = name(d).unwrap();
            assert_eq!(parse(n), Some(d));
            assert_eq!(Some(size(d) as u64), d.storage_bytes(1));
        }
        assert_eq!(parse("fp32"), None);
        assert_eq!(parse("BYTES"), None);
    }
}
