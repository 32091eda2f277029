use std::fmt;

use serde::{Deserialize, Serialize};

/// Element type of a tensor, covering what ONNX, StableHLO, safetensors, PyTorch and NumPy store.
///
/// The canonical spelling ([`DType::name`]) is the lower-case NumPy/JAX one (`f32`, `bf16`,
/// `f8e4m3fn`, `i4`, `c64`); converters to each file format's own code live with the importers
/// except for the few used everywhere (`mlir`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum DType {
    /// IEEE 754 binary64.
    F64,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BF16,
    /// OCP FP8 E4M3, finite-only with NaN (`float8_e4m3fn`).
    F8E4M3FN,
    /// OCP FP8 E5M2.
    F8E5M2,
    /// FP8 E4M3 with FNUZ encoding (ONNX `FLOAT8E4M3FNUZ`).
    F8E4M3FNUZ,
    /// FP8 E5M2 with FNUZ encoding (ONNX `FLOAT8E5M2FNUZ`).
    F8E5M2FNUZ,
    /// 64-bit signed integer.
    I64,
    /// 32-bit signed integer.
    I32,
    /// 16-bit signed integer.
    I16,
    /// 8-bit signed integer.
    I8,
    /// 4-bit signed integer (packed two per byte).
    I4,
    /// 64-bit unsigned integer.
    U64,
    /// 32-bit unsigned integer.
    U32,
    /// 16-bit unsigned integer.
    U16,
    /// 8-bit unsigned integer.
    U8,
    /// 4-bit unsigned integer (packed two per byte).
    U4,
    /// Boolean, one byte per element.
    Bool,
    /// Complex with two f32 parts.
    C64,
    /// Complex with two f64 parts.
    C128,
    /// Variable-length string (ONNX only); has no fixed byte size.
    String,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 22] = [
        DType::F64,
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F8E4M3FN,
        DType::F8E5M2,
        DType::F8E4M3FNUZ,
        DType::F8E5M2FNUZ,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::I4,
        DType::U64,
        DType::U32,
        DType::U16,
        DType::U8,
        DType::U4,
        DType::Bool,
        DType::C64,
        DType::C128,
        DType::String,
    ];

    /// Storage width of one element in bits (`None` for strings).
    #[must_use]
    pub const fn bits(self) -> Option<u32> {
        Some(match self {
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 64,
            DType::C128 => 128,
            DType::F32 | DType::I32 | DType::U32 => 32,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 16,
            DType::F8E4M3FN
            | DType::F8E5M2
            | DType::F8E4M3FNUZ
            | DType::F8E5M2FNUZ
            | DType::I8
            | DType::U8
            | DType::Bool => 8,
            DType::I4 | DType::U4 => 4,
            DType::String => return None,
        })
    }

    /// Bytes needed to store `elements` elements (4-bit types round up), or `None` for strings
    /// and on overflow.
    #[must_use]
    pub fn storage_bytes(self, elements: u64) -> Option<u64> {
        let bits = u64::from(self.bits()?);
        elements.checked_mul(bits).map(|b| b.div_ceil(8))
    }

    /// Canonical lower-case name (`f32`, `bf16`, `i64`, `bool`, `c64`, `string`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E4M3FNUZ => "f8e4m3fnuz",
            DType::F8E5M2FNUZ => "f8e5m2fnuz",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::I4 => "i4",
            DType::U64 => "u64",
            DType::U32 => "u32",
            DType::U16 => "u16",
            DType::U8 => "u8",
            DType::U4 => "u4",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
            DType::String => "string",
        }
    }

    /// Parses a canonical name or a common alias (`float32`, `int64`, `bfloat16`, `half`).
    #[must_use]
    pub fn from_name(s: &str) -> Option<DType> {
        let lower = s.to_ascii_lowercase();
        let t = match lower.as_str() {
            "float64" | "double" => DType::F64,
            "float32" | "float" => DType::F32,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float8_e4m3fn" => DType::F8E4M3FN,
            "float8_e5m2" => DType::F8E5M2,
            "float8_e4m3fnuz" => DType::F8E4M3FNUZ,
            "float8_e5m2fnuz" => DType::F8E5M2FNUZ,
            "int64" | "long" => DType::I64,
            "int32" | "int" => DType::I32,
            "int16" | "short" => DType::I16,
            "int8" => DType::I8,
            "int4" => DType::I4,
            "uint64" => DType::U64,
            "uint32" => DType::U32,
            "uint16" => DType::U16,
            "uint8" => DType::U8,
            "uint4" => DType::U4,
            "complex64" => DType::C64,
            "complex128" => DType::C128,
            other => return DType::ALL.into_iter().find(|d| d.name() == other),
        };
        Some(t)
    }

    /// The MLIR element type spelling used by StableHLO (`f32`, `bf16`, `i1`, `ui8`,
    /// `f8E4M3FN`, `complex<f32>`); `None` for strings.
    #[must_use]
    pub const fn mlir(self) -> Option<&'static str> {
        Some(match self {
            DType::F64 => "f64",
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F8E4M3FN => "f8E4M3FN",
            DType::F8E5M2 => "f8E5M2",
            DType::F8E4M3FNUZ => "f8E4M3FNUZ",
            DType::F8E5M2FNUZ => "f8E5M2FNUZ",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::I4 => "i4",
            DType::U64 => "ui64",
            DType::U32 => "ui32",
            DType::U16 => "ui16",
            DType::U8 => "ui8",
            DType::U4 => "ui4",
            DType::Bool => "i1",
            DType::C64 => "complex<f32>",
            DType::C128 => "complex<f64>",
            DType::String => return None,
        })
    }

    /// Parses an MLIR element type spelling (the inverse of [`DType::mlir`]); `si32`-style
    /// signed spellings are accepted too.
    #[must_use]
    pub fn from_mlir(s: &str) -> Option<DType> {
        let s = s.strip_prefix('s').filter(|r| r.starts_with('i')).unwrap_or(s);
        DType::ALL.into_iter().find(|d| d.mlir() == Some(s))
    }

    /// True for the floating-point types (not complex).
    #[must_use]
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            DType::F64
                | DType::F32
                | DType::F16
                | DType::BF16
                | DType::F8E4M3FN
                | DType::F8E5M2
                | DType::F8E4M3FNUZ
                | DType::F8E5M2FNUZ
        )
    }

    /// True for signed and unsigned integer types (not bool).
    #[must_use]
    pub const fn is_int(self) -> bool {
        matches!(
            self,
            DType::I64
                | DType::I32
                | DType::I16
                | DType::I8
                | DType::I4
                | DType::U64
                | DType::U32
                | DType::U16
                | DType::U8
                | DType::U4
        )
    }

    /// True for complex types.
    #[must_use]
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d), "{d}");
            if let Some(m) = d.mlir() {
                assert_eq!(DType::from_mlir(m), Some(d), "{m}");
            }
        }
        assert_eq!(DType::from_name("float32"), Some(DType::F32));
        assert_eq!(DType::from_mlir("si32"), Some(DType::I32));
        assert_eq!(DType::from_name("nope"), None);
    }

    #[test]
    fn storage_rounds_up_nibbles() {
        assert_eq!(DType::I4.storage_bytes(3), Some(2));
        assert_eq!(DType::BF16.storage_bytes(10), Some(20));
        assert_eq!(DType::String.storage_bytes(1), None);
        assert_eq!(DType::F64.storage_bytes(u64::MAX), None);
    }
}
