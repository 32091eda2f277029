//! Tensor data in and out of the wire forms: JSON numbers (nested or flat arrays) decoded
//! straight into dense little-endian bytes with a hard element count, and dense bytes written
//! back as JSON numbers.

use std::fmt;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeSeq, Serializer};
use tpuport_model::DType;

use crate::error::InferError;
use tpuport_exec::wire;

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
    if let Some(out) = scan_numbers(raw, dtype, elements) {
        return Ok(out);
    }
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

/// The common case in one pass without serde: arrays (nested or not) of numbers or booleans,
/// exactly `elements` of them, each in range. Anything else (a string, `null`, an object, too
/// deep, the wrong count, a value out of range) gives `None`, and the caller's serde pass
/// reports it. Numbers are read as serde_json reads them (an integer as `u64` or `i64` when
/// it fits, otherwise as `f64`) but rounded correctly, which serde_json's default float
/// parsing does not promise.
fn scan_numbers(raw: &str, dtype: DType, elements: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(elements.saturating_mul(wire::size(dtype)));
    let b = raw.as_bytes();
    let (mut i, mut depth, mut left) = (0, 0usize, elements);
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => i += 1,
            b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
                i += 1;
            }
            b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ => {
                // A value directly at the top level is not an array: serde says so.
                if depth == 0 {
                    return None;
                }
                left = left.checked_sub(1)?;
                let (v, n) = match fast_number(&b[i..], dtype == DType::F32) {
                    Some(x) => x,
                    None => {
                        let n = b[i..]
                            .iter()
                            .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'a'..=b'z' | b'E'))
                            .unwrap_or(b.len() - i);
                        (number(&raw[i..i + n])?, n)
                    }
                };
                // FP32 decimals skip `put`'s dispatch: a tenth of the time per value.
                if let (DType::F32, Num::F(x)) = (dtype, v) {
                    #[allow(
                        clippy::cast_possible_truncation,
                        reason = "FP32 tensors hold f32 values"
                    )]
                    out.extend_from_slice(&(x as f32).to_le_bytes());
                } else {
                    put(&mut out, dtype, v).ok()?;
                }
                i += n;
            }
        }
    }
    (left == 0 && depth == 0).then_some(out)
}

/// One JSON scalar token as serde_json would visit it; `None` for anything that is not a
/// number or a boolean.
fn number(token: &str) -> Option<Num> {
    match token.as_bytes().first()? {
        b't' => return (token == "true").then_some(Num::Bool(true)),
        b'f' => return (token == "false").then_some(Num::Bool(false)),
        b'-' | b'0'..=b'9' => {}
        _ => return None,
    }
    if !token.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        if let Some(digits) = token.strip_prefix('-') {
            if let Ok(x) = token.parse::<i64>() {
                return Some(if x == 0 { Num::F(-0.0) } else { Num::I(x) });
            }
            digits.bytes().all(|c| c.is_ascii_digit()).then_some(())?;
        } else if let Ok(x) = token.parse::<u64>() {
            return Some(Num::U(x));
        }
    }
    token.parse::<f64>().ok().filter(|x| x.is_finite()).map(Num::F)
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A number at the start of `b` and the bytes it took, for the usual shapes only: an integer
/// that fits `u64` (or, negative, `i64`), or a decimal whose digits, read as one integer, fit
/// `u64`, with a power of ten within ±22. Below 2^53 the digits and the power are exact in
/// f64, so one multiplication or division rounds correctly (Clinger's fast path). Longer
/// digit strings (Python's `json.dumps` of an f32 value writes 16 or 17 digits) are only
/// taken `for_f32`: the f64 product is then within 2 of its units in the last place, which
/// decides the f32 unless it sits next to a point halfway between two f32 values. `None`
/// hands the token to the full parser.
fn fast_number(b: &[u8], for_f32: bool) -> Option<(Num, usize)> {
    let negative = b.first() == Some(&b'-');
    let start = usize::from(negative);
    let mut digits = 0u64;
    let mut i = read_digits(b, start, &mut digits)?;
    if i == start {
        return None;
    }
    let mut power: i64 = 0;
    let mut float = false;
    if b.get(i) == Some(&b'.') {
        let after = read_digits(b, i + 1, &mut digits)?;
        if after == i + 1 {
            return None;
        }
        power -= i64::try_from(after - i - 1).ok()?;
        float = true;
        i = after;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let minus = b.get(i) == Some(&b'-');
        i += usize::from(matches!(b.get(i), Some(b'-' | b'+')));
        let mut e = 0u64;
        let after = read_digits(b, i, &mut e)?;
        if after == i {
            return None;
        }
        let e = i64::try_from(e).ok()?;
        power += if minus { -e } else { e };
        float = true;
        i = after;
    }
    if !matches!(b.get(i), None | Some(b',' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    if !float {
        let v = match (negative, digits) {
            (false, _) => Num::U(digits),
            // serde_json reads `-0` as the float -0.0 (so no integer type takes it).
            (true, 0) => Num::F(-0.0),
            (true, _) => Num::I(-i64::try_from(digits).ok()?),
        };
        return Some((v, i));
    }
    #[allow(clippy::cast_precision_loss, reason = "exact below 2^53; rounded once above")]
    let m = digits as f64;
    let p = *EXACT_POWERS.get(usize::try_from(power.unsigned_abs()).ok()?)?;
    let mut v = if power < 0 { m / p } else { m * p };
    if digits >= 1 << 53 {
        if !(for_f32 && settles_f32(v)) {
            return None;
        }
        #[allow(clippy::cast_possible_truncation, reason = "the f32 this value rounds to")]
        let single = v as f32;
        v = f64::from(single);
    }
    Some((Num::F(if negative { -v } else { v }), i))
}

/// Whether every f64 within 8 units in the last place of `v` (positive) rounds to the same
/// f32: `v` is a normal f32 magnitude, and the 29 bits an f32 drops are not near one half.
fn settles_f32(v: f64) -> bool {
    let normal = f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX);
    let dropped = v.to_bits() & ((1 << 29) - 1);
    normal.contains(&v) && dropped.abs_diff(1 << 28) > 8
}

/// Appends the decimal digits of `b` from `i` to `acc`; the index after them, or `None` when
/// `acc` would overflow. Eight digits at a time where eight are there.
fn read_digits(b: &[u8], mut i: usize, acc: &mut u64) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // Every byte is 0x30..=0x39: its high nibble is 3, and adding 6 keeps it 3.
        let high = 0xF0F0_F0F0_F0F0_F0F0;
        if (w & high) | (w.wrapping_add(0x0606_0606_0606_0606) & high) >> 4 != 0x3333_3333_3333_3333
        {
            break;
        }
        *acc = acc.checked_mul(100_000_000)?.checked_add(eight_digits(w))?;
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        *acc = acc.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        i += 1;
    }
    Some(i)
}

/// The value of eight ASCII digits read as a little-endian word (the first digit in the low
/// byte): pairs, then fours, then the eight, each step one multiply.
fn eight_digits(w: u64) -> u64 {
    let d = w - 0x3030_3030_3030_3030;
    // Each 16-bit lane: 10 * first + second.
    let pairs = (d * 10 + (d >> 8)) & 0x00FF_00FF_00FF_00FF;
    // Each 32-bit lane: 100 * first pair + second pair.
    let fours = (pairs * 100 + (pairs >> 16)) & 0x0000_FFFF_0000_FFFF;
    // 10,000 * first four + second four.
    (fours * 10_000 + (fours >> 32)) & 0xFFFF_FFFF
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

    /// Tokens of every shape a client writes: shortest f32 and f64 forms, exponent forms,
    /// integers at the edges of `u64`/`i64`, digits past 2^53, powers past ±22.
    fn tokens() -> Vec<String> {
        let mut t: Vec<String> = [
            "0",
            "-0",
            "-0.0",
            "1",
            "255",
            "256",
            "-1",
            "1E22",
            "1e23",
            "1e-22",
            "1e-23",
            "9007199254740992.0",
            "9007199254740993.0",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1e400",
            "-1e400",
            "0.000000000000000000000001",
            "123456789012345678901234567890",
            "3.4028235e38",
            "3.4028236e38",
            "1.0e+5",
            "2.5E-3",
            "0.1",
            "0.30000000000000004",
            "true",
            "false",
        ]
        .map(String::from)
        .to_vec();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x >> 2) * if x & 1 == 0 { 1.0 } else { -1.0 };
            let small = (x % 20_001) as f64 / 997.0 - 10.0;
            t.push(format!("{}", small as f32));
            // What Python's json.dumps writes for an f32 tensor's values: the f64 of each.
            t.push(format!("{}", f64::from(small as f32)));
            let any = f32::from_bits((x >> 32) as u32);
            if any.is_finite() {
                t.push(format!("{}", f64::from(any)));
                t.push(format!("{:e}", f64::from(any)));
                // Halfway between two f32 values, and an f64 step either side: the f32
                // depends on the last digit.
                let half = (f64::from(any) + f64::from(any.next_up())) / 2.0;
                for h in [half.next_down(), half, half.next_up()] {
                    t.push(format!("{h}"));
                }
            }
            t.push(format!("{small}"));
            t.push(format!("{:e}", small as f32));
            if f.is_finite() {
                t.push(format!("{f:e}"));
                t.push(format!("{:E}", f as f32));
            }
            t.push(format!("{}", x >> (x % 64)));
            t.push(format!("-{}", x >> (x % 64)));
        }
        t
    }

    /// The one-pass reader gives byte for byte what the full parser (`number` then `put`)
    /// gives for the same tokens, and where either refuses, `decode_json` refuses too.
    #[test]
    fn the_one_pass_reader_equals_the_full_parser() {
        let tokens = tokens();
        for dt in
            [DType::F32, DType::F64, DType::BF16, DType::I64, DType::U64, DType::U8, DType::Bool]
        {
            for chunk in tokens.chunks(7) {
                let (a, b) = chunk.split_at(chunk.len().min(3));
                let raw = format!("[[{}], [ {} ]]", a.join(","), b.join(" ,\n"));
                let mut want = Vec::new();
                let full = chunk
                    .iter()
                    .try_for_each(|t| put(&mut want, dt, number(t).ok_or_else(String::new)?));
                let fast = scan_numbers(&raw, dt, chunk.len());
                match (full, fast) {
                    (Ok(()), Some(got)) => assert_eq!(got, want, "{dt} {raw}"),
                    (Err(_), None) => {
                        assert!(decode_json(&raw, dt, chunk.len(), "x").is_err(), "{dt} {raw}")
                    }
                    (full, fast) => panic!("{dt} {raw}: full {full:?}, one pass {fast:?}"),
                }
            }
        }
    }

    /// `-0` is the float -0.0, as serde_json reads it: its sign reaches FP32, and INT32
    /// refuses it.
    #[test]
    fn minus_zero_reads_as_serde_reads_it() {
        assert_eq!(
            decode_json("[-0, 0]", DType::F32, 2, "x").unwrap(),
            [0, 0, 0, 0x80, 0, 0, 0, 0]
        );
        let e = decode_json("[-0]", DType::I32, 1, "x").unwrap_err();
        assert!(e.to_string().contains("-0 is not an integer"), "{e}");
    }

    #[test]
    fn eight_digits_at_once() {
        for v in [0u64, 1, 12_345_678, 99_999_999, 10_000_000, 90_000_009] {
            let w = u64::from_le_bytes(format!("{v:08}").as_bytes().try_into().unwrap());
            assert_eq!(eight_digits(w), v);
        }
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
