//! ONNX `TensorProto.DataType` codes and tpuport's [`DType`].

use tpuport_model::DType;

/// The [`DType`] for an ONNX element type code; `None` for `UNDEFINED` and for codes tpuport
/// has no dtype for (`FLOAT4E2M1` = 23, `FLOAT8E8M0` = 24, later additions).
#[must_use]
pub fn from_onnx(code: i32) -> Option<DType> {
    Some(match code {
        1 => DType::F32,
        2 => DType::U8,
        3 => DType::I8,
        4 => DType::U16,
        5 => DType::I16,
        6 => DType::I32,
        7 => DType::I64,
        8 => DType::String,
        9 => DType::Bool,
        10 => DType::F16,
        11 => DType::F64,
        12 => DType::U32,
        13 => DType::U64,
        14 => DType::C64,
        15 => DType::C128,
        16 => DType::BF16,
        17 => DType::F8E4M3FN,
        18 => DType::F8E4M3FNUZ,
        19 => DType::F8E5M2,
        20 => DType::F8E5M2FNUZ,
        21 => DType::U4,
        22 => DType::I4,
        _ => return None,
    })
}

/// The ONNX element type code of a [`DType`] (the inverse of [`from_onnx`]).
#[must_use]
pub fn to_onnx(dtype: DType) -> i32 {
    match dtype {
        DType::F32 => 1,
        DType::U8 => 2,
        DType::I8 => 3,
        DType::U16 => 4,
        DType::I16 => 5,
        DType::I32 => 6,
        DType::I64 => 7,
        DType::String => 8,
        DType::Bool => 9,
        DType::F16 => 10,
        DType::F64 => 11,
        DType::U32 => 12,
        DType::U64 => 13,
        DType::C64 => 14,
        DType::C128 => 15,
        DType::BF16 => 16,
        DType::F8E4M3FN => 17,
        DType::F8E4M3FNUZ => 18,
        DType::F8E5M2 => 19,
        DType::F8E5M2FNUZ => 20,
        DType::U4 => 21,
        DType::I4 => 22,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for d in DType::ALL {
            assert_eq!(from_onnx(to_onnx(d)), Some(d), "{d}");
        }
        assert_eq!(from_onnx(0), None);
        assert_eq!(from_onnx(23), None);
    }
}
