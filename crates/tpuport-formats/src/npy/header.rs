//! The `.npy` header: `\x93NUMPY`, major and minor version, a little-endian header length (u16
//! for version 1, u32 for 2 and 3), then a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and ended
//! by `\n` so that the data starts on a 64-byte boundary.
//!
//! `descr` maps to a [`DType`]: `<f2 <f4 <f8 <i1.. <u8 |b1 <c8 <c16` as NumPy writes them,
//! `<V2` for `ml_dtypes.bfloat16` (which `np.save` can only record as a 2-byte void), `<f1` for
//! `ml_dtypes.float8_e5m2` (what `np.save` records), and dtype names such as `'bfloat16'` or
//! `'float8_e4m3fn'`. `<V1` is refused: `np.save` writes it for every 1-byte ml_dtypes type
//! (float8 e4m3 variants, int4, uint4), so the element type cannot be known.

use tpuport_model::DType;

/// The magic string every `.npy` starts with.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A parsed header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    /// Element type.
    pub dtype: DType,
    /// True when the data is big-endian (converted on read).
    pub big_endian: bool,
    /// True for column-major data (transposed on read).
    pub fortran: bool,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Offset of the first data byte.
    pub data_start: usize,
}

/// Parses the header at the start of `b`. Errors are one phrase, without the file name.
pub(crate) fn parse(b: &[u8]) -> Result<NpyHeader, String> {
    if b.len() < 10 || &b[..6] != MAGIC {
        return Err("not an .npy file (no \\x93NUMPY magic)".to_owned());
    }
    let (major, minor) = (b[6], b[7]);
    let (len, start): (usize, usize) = match major {
        1 => (usize::from(u16::from_le_bytes([b[8], b[9]])), 10),
        2 | 3 => {
            let Some(l) = b.get(8..12) else {
                return Err("truncated header length".to_owned());
            };
            let n = u32::from_le_bytes([l[0], l[1], l[2], l[3]]);
            (usize::try_from(n).unwrap_or(usize::MAX), 12)
        }
        _ => return Err(format!("unsupported .npy format version {major}.{minor}")),
    };
    let end = start
        .checked_add(len)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| format!("header length {len} exceeds file size {}", b.len()))?;
    let text = std::str::from_utf8(&b[start..end]).map_err(|_| "header is not UTF-8".to_owned())?;
    let dict = match Lit::parse(text)? {
        Lit::Dict(d) => d,
        _ => return Err("header is not a dict".to_owned()),
    };
    let get = |k: &str| dict.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Lit::Str(s)) => s.clone(),
        Some(Lit::List(_)) => {
            return Err("structured dtypes (a descr list) are not supported".to_owned());
        }
        _ => return Err("header has no 'descr' string".to_owned()),
    };
    let fortran = match get("fortran_order") {
        Some(Lit::Bool(b)) => *b,
        None => false,
        _ => return Err("'fortran_order' is not True or False".to_owned()),
    };
    let shape = match get("shape") {
        Some(Lit::Tuple(items)) => items
            .iter()
            .map(|i| match i {
                Lit::Int(n) => u64::try_from(*n).map_err(|_| format!("negative dimension {n}")),
                _ => Err("shape holds a non-integer".to_owned()),
            })
            .collect::<Result<Vec<u64>, String>>()?,
        _ => return Err("header has no 'shape' tuple".to_owned()),
    };
    let (dtype, big_endian) = descr_to_dtype(&descr)?;
    Ok(NpyHeader { dtype, big_endian, fortran, shape, data_start: end })
}

/// Maps a descr string to (dtype, big-endian).
pub(crate) fn descr_to_dtype(descr: &str) -> Result<(DType, bool), String> {
    let (order, rest) = match descr.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (false, &descr[1..]),
        Some(b'>') => (true, &descr[1..]),
        _ => {
            return DType::from_name(descr)
                .filter(|d| !matches!(d, DType::String | DType::I4 | DType::U4))
                .map(|d| (d, false))
                .ok_or_else(|| format!("unsupported descr '{descr}'"));
        }
    };
    let d = match rest {
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        "f1" => DType::F8E5M2,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        "c8" => DType::C64,
        "c16" => DType::C128,
        "V2" => DType::BF16,
        "V1" => {
            return Err(
                "descr 'V1' is ambiguous (np.save writes it for every 1-byte ml_dtypes type: \
                 float8 e4m3 variants, int4, uint4); re-save with a descr naming the type"
                    .to_owned(),
            );
        }
        _ => return Err(format!("unsupported descr '{descr}'")),
    };
    Ok((d, order))
}

/// The descr tpuport writes for a dtype (readable by NumPy; ml_dtypes types as ml_dtypes'
/// `np.save` writes them or by name).
pub(crate) fn dtype_to_descr(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => "<V2",
        DType::F8E5M2 => "float8_e5m2",
        DType::F8E4M3FN => "float8_e4m3fn",
        DType::F8E4M3FNUZ => "float8_e4m3fnuz",
        DType::F8E5M2FNUZ => "float8_e5m2fnuz",
        _ => return None,
    })
}

/// Formats a version 1.0 (or 2.0 when long) header whose data starts on a 64-byte boundary.
pub(crate) fn format(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let v1_total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let v1 = v1_total - 10 <= usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
    let hlen = total - prefix;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&u16::try_from(hlen).unwrap_or(u16::MAX).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&u32::try_from(hlen).unwrap_or(u32::MAX).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// The Python literal subset `.npy` headers use.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Str(String),
    Int(i64),
    Bool(bool),
    None,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(String, Lit)>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Lit {
    fn parse(text: &str) -> Result<Lit, String> {
        let mut p = P { s: text.as_bytes(), i: 0, depth: 0 };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("header has trailing text at byte {}", p.i));
        }
        Ok(v)
    }
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Lit, String> {
        self.depth += 1;
        if self.depth > 16 {
            return Err("header literal nested too deeply".to_owned());
        }
        let v = match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                while !self.eat(b'}') {
                    let Lit::Str(k) = self.value()? else {
                        return Err("header dict key is not a string".to_owned());
                    };
                    if !self.eat(b':') {
                        return Err("header dict is missing ':'".to_owned());
                    }
                    items.push((k, self.value()?));
                    if !self.eat(b',') && self.peek() != Some(b'}') {
                        return Err("header dict is missing ','".to_owned());
                    }
                }
                Lit::Dict(items)
            }
            Some(open @ (b'(' | b'[')) => {
                self.i += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                while !self.eat(close) {
                    items.push(self.value()?);
                    if !self.eat(b',') && self.peek() != Some(close) {
                        return Err("header sequence is missing ','".to_owned());
                    }
                }
                if open == b'(' { Lit::Tuple(items) } else { Lit::List(items) }
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i] != q {
                    self.i += 1;
                }
                if self.i >= self.s.len() {
                    return Err("header string is not closed".to_owned());
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Lit::Str(s)
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                self.i += 1;
                while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                Lit::Int(t.parse().map_err(|_| format!("bad integer `{t}` in header"))?)
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i].is_ascii_alphabetic() {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Lit::Bool(true),
                    b"False" => Lit::Bool(false),
                    b"None" => Lit::None,
                    _ => return Err(format!("unexpected text at header byte {start}")),
                }
            }
            None => return Err("header ends early".to_owned()),
        };
        self.depth -= 1;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = format("<f4", &[2, 3]);
        assert_eq!(h.len() % 64, 0);
        let p = parse(&h).unwrap();
        assert_eq!(p.shape, vec![2, 3]);
        assert_eq!(p.dtype, DType::F32);
        assert_eq!(p.data_start, h.len());
        let s = parse(&format("|b1", &[])).unwrap();
        assert!(s.shape.is_empty());
        assert_eq!(parse(&format("<i8", &[5])).unwrap().shape, vec![5]);
    }

    #[test]
    fn descrs() {
        assert_eq!(descr_to_dtype("<V2").unwrap(), (DType::BF16, false));
        assert_eq!(descr_to_dtype("bfloat16").unwrap(), (DType::BF16, false));
        assert_eq!(descr_to_dtype(">f8").unwrap(), (DType::F64, true));
        assert!(descr_to_dtype("<V1").unwrap_err().contains("ambiguous"));
        assert!(descr_to_dtype("<U3").is_err());
        assert!(descr_to_dtype("O").is_err());
    }

    #[test]
    fn hostile_headers() {
        assert!(parse(b"\x93NUMPY\x01\x00\xff\xff{").unwrap_err().contains("exceeds"));
        assert!(parse(b"\x93NUMPY\x09\x00\x00\x00").is_err());
        let mut deep = b"\x93NUMPY\x01\x00\x40\x00".to_vec();
        deep.extend(std::iter::repeat_n(b'[', 64));
        assert!(parse(&deep).unwrap_err().contains("deeply"));
    }
}
