//! Tensor data in and out of the wire forms: JSON numbers (nested or flat arrays) decoded
//! straight into dense little-endian bytes with a hard element count, and dense bytes written
//! back as JSON numbers.

use std::fmt;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeSeq, Serializer};
use tpuport_model::DType;

use crate::error::InferError;
use crate::wire;

/// Decodes JSON tensor data (`[1,2,3]` or `[[1,2],[3]]`) of `dtype` holding exactly
/// `elements` values. Allocation is bounded by `elements`, which the caller checked against
/// the size limits.
///
/// # Errors
/// Malformed JSON, a value of the wrong kind or out of range, or the wrong count.
pub(crate) fn decode_json(
    raw: &str,
    dtype: DType,
    elements: usize,
    name: &str,
) -> Result<Vec<u8>, InferError> {
    let mut out = Vec::with_capacity(elements.saturating_mul(wire::size(dtype)));
    let mut de = serde_json::Deserializer::from_str(raw);
    let seed = Flat { dtype, out: &mut out, left: elements, depth: 0 };
    seed.deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| InferError::invalid(format!("input `{name}`: data: {e}")))?;
    let got = out.len() / wire::size(dtype);
    if got != elements {
        return Err(InferError::invalid(format!(
            "input `{name}`: data has {got} values, the shape needs {elements}"
        )));
    }
    Ok(out)
}

struct Flat<'a> {
    dtype: DType,
    out: &'a mut Vec<u8>,
    left: usize,
    depth: usize,
}

const MAX_DEPTH: usize = 64;

impl<'de> DeserializeSeed<'de> for Flat<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Flat<'_> {
    fn push<E: de::Error>(&mut self, v: Num) -> Result<(), E> {
        if self.left == 0 {
            return Err(E::custom("more values than the shape holds"));
        }
        self.left -= 1;
        put(self.out, self.dtype, v).map_err(E::custom)
    }
}

impl<'de> Visitor<'de> for Flat<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an array of {} values", wire::name(self.dtype).unwrap_or("?"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("arrays nested too deeply"));
        }
        let (dtype, out, depth) = (self.dtype, self.out, self.depth);
        let mut left = self.left;
        // Elements are either values or nested arrays; each consumes from `left`.
        loop {
            let before = out.len();
            let seed = Flat { dtype, out: &mut *out, left, depth: depth + 1 };
            match seq.next_element_seed(Elem(seed))? {
                Some(()) => {
                    let n = (out.len() - before) / wire::size(dtype);
                    left -= n;
                }
                None => break,
            }
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(mut self, v: bool) -> Result<(), E> {
        self.push(Num::Bool(v))
    }
    fn visit_i64<E: de::Error>(mut self, v: i64) -> Result<(), E> {
        self.push(Num::I(v))
    }
    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<(), E> {
        self.push(Num::U(v))
    }
    fn visit_f64<E: de::Error>(mut self, v: f64) -> Result<(), E> {
        self.push(Num::F(v))
    }
}

/// A sequence element: a value or a nested array.
struct Elem<'a>(Flat<'a>);

impl<'de> DeserializeSeed<'de> for Elem<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self.0)
    }
}

#[derive(Clone, Copy)]
enum Num {
    Bool(bool),
    I(i64),
    U(u64),
    F(f64),
}

fn put(out: &mut Vec<u8>, dtype: DType, v: Num) -> Result<(), String> {
    let as_i128 = |v: Num| -> Result<i128, String> {
        match v {
            Num::I(x) => Ok(i128::from(x)),
            Num::U(x) => Ok(i128::from(x)),
            Num::Bool(b) => Ok(i128::from(b)),
            Num::F(x) => Err(format!("{x} is not an integer")),
        }
    };
    let as_f64 = |v: Num| -> f64 {
        match v {
            Num::I(x) => x as f64,
            Num::U(x) => x as f64,
            Num::F(x) => x,
            Num::Bool(b) => f64::from(u8::from(b)),
        }
    };
    macro_rules! int {
        ($t:ty) => {{
            let x = as_i128(v)?;
            let y = <$t>::try_from(x).map_err(|_| {
                format!("{x} is out of range for {}", wire::name(dtype).unwrap_or("?"))
            })?;
            out.extend_from_slice(&y.to_le_bytes());
        }};
    }
    match dtype {
        DType::Bool => match v {
            Num::Bool(b) => out.push(u8::from(b)),
            Num::I(0) | Num::U(0) => out.push(0),
            Num::I(1) | Num::U(1) => out.push(1),
            _ => return Err("BOOL values must be true or false".into()),
        },
        DType::U8 => int!(u8),
        DType::U16 => int!(u16),
        DType::U32 => int!(u32),
        DType::U64 => int!(u64),
        DType::I8 => int!(i8),
        DType::I16 => int!(i16),
        DType::I32 => int!(i32),
        DType::I64 => int!(i64),
        #[allow(clippy::cast_possible_truncation, reason = "FP32 tensors hold f32 values")]
        DType::F32 => out.extend_from_slice(&(as_f64(v) as f32).to_le_bytes()),
        DType::F64 => out.extend_from_slice(&as_f64(v).to_le_bytes()),
        DType::F16 => out.extend_from_slice(&half::f16::from_f64(as_f64(v)).to_le_bytes()),
        DType::BF16 => out.extend_from_slice(&half::bf16::from_f64(as_f64(v)).to_le_bytes()),
        other => return Err(format!("{other} has no JSON form")),
    }
    Ok(())
}

/// Dense bytes of `dtype`, serialized as a flat JSON array of numbers (booleans for BOOL;
/// 16-bit floats widened).
pub(crate) struct JsonData<'a> {
    pub(crate) dtype: DType,
    pub(crate) bytes: &'a [u8],
}

impl Serialize for JsonData<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let size = wire::size(self.dtype);
        let n = self.bytes.len() / size;
        let mut seq = s.serialize_seq(Some(n))?;
        for c in self.bytes.chunks_exact(size) {
            macro_rules! le {
                ($t:ty) => {
                    <$t>::from_le_bytes(c.try_into().unwrap_or_default())
                };
            }
            match self.dtype {
                DType::Bool => seq.serialize_element(&(c[0] != 0))?,
                DType::U8 => seq.serialize_element(&c[0])?,
                DType::I8 => seq.serialize_element(&le!(i8))?,
                DType::U16 => seq.serialize_element(&le!(u16))?,
                DType::I16 => seq.serialize_element(&le!(i16))?,
                DType::U32 => seq.serialize_element(&le!(u32))?,
                DType::I32 => seq.serialize_element(&le!(i32))?,
                DType::U64 => seq.serialize_element(&le!(u64))?,
                DType::I64 => seq.serialize_element(&le!(i64))?,
                DType::F32 => seq.serialize_element(&le!(f32))?,
                DType::F64 => seq.serialize_element(&le!(f64))?,
                DType::F16 => seq.serialize_element(&half::f16::from_bits(le!(u16)).to_f32())?,
                DType::BF16 => seq.serialize_element(&half::bf16::from_bits(le!(u16)).to_f32())?,
                _ => seq.serialize_element(&serde_json::Value::Null)?,
            }
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn flat_and_nested_arrays_decode_alike() {
        let a = decode_json("[1, 2.5, -3, 4]", DType::F32, 4, "x").unwrap();
        let b = decode_json("[[1, 2.5], [-3, 4]]", DType::F32, 4, "x").unwrap();
        assert_eq!(a, b);
        assert_eq!(f32s(&a), vec![1.0, 2.5, -3.0, 4.0]);
    }

    #[test]
    fn counts_ranges_and_kinds_are_checked() {
        for (raw, dt, n, want) in [
            ("[1,2,3]", DType::F32, 2, "more values"),
            ("[1]", DType::F32, 2, "needs 2"),
            ("[300]", DType::U8, 1, "out of range"),
            ("[-1]", DType::U32, 1, "out of range"),
            ("[1.5]", DType::I32, 1, "not an integer"),
            ("[\"a\"]", DType::F32, 1, "invalid type"),
            ("[2]", DType::Bool, 1, "true or false"),
            ("[1,", DType::F32, 1, "EOF"),
            ("{}", DType::F32, 1, "invalid type"),
        ] {
            let e = decode_json(raw, dt, n, "x").unwrap_err();
            assert!(e.message.contains(want), "{raw}: {}", e.message);
        }
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(decode_json(&deep, DType::F32, 1, "x").is_err());
    }

    #[test]
    fn every_type_round_trips_through_json() {
        for (dt, raw) in [
            (DType::Bool, "[true,false]"),
            (DType::U8, "[0,255]"),
            (DType::I8, "[-128,127]"),
            (DType::U16, "[0,65535]"),
            (DType::I16, "[-32768,32767]"),
            (DType::U32, "[0,4294967295]"),
            (DType::I32, "[-2147483648,2147483647]"),
            (DType::U64, "[0,18446744073709551615]"),
            (DType::I64, "[-9223372036854775808,9223372036854775807]"),
            (DType::F32, "[1.5,-0.25]"),
            (DType::F64, "[1.5,-0.25]"),
            (DType::F16, "[1.5,-0.25]"),
            (DType::BF16, "[1.5,-0.25]"),
        ] {
            let b = decode_json(raw, dt, 2, "x").unwrap();
            let back = serde_json::to_string(&JsonData { dtype: dt, bytes: &b }).unwrap();
            assert_eq!(back, raw, "{dt}");
        }
    }
}
