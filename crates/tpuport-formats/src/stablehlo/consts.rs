//! Dense literals: `dense<"0x...">`, `dense<[1.0, 2.0]>`, splats and `dense_resource` blobs
//! decoded into little-endian element bytes, and hex encoding back for the printer.

use tpuport_model::DType;

use super::lexer::{self, Kind};

/// Decoded bytes of a dense literal.
#[derive(Debug, PartialEq)]
pub(crate) enum Dense {
    /// One element's bytes, repeated over the shape.
    Splat(Vec<u8>),
    /// All elements.
    Full(Vec<u8>),
}

/// True for the dtypes whose constants may be decoded into weights.
pub(crate) fn decodable(d: DType) -> bool {
    d.is_float()
        && !matches!(d, DType::F8E4M3FN | DType::F8E5M2 | DType::F8E4M3FNUZ | DType::F8E5M2FNUZ)
        || (d.is_int() && !matches!(d, DType::I4 | DType::U4))
}

/// Decodes the body of `dense<BODY>` for `elements` elements of `dtype`; `None` when the
/// literal does not fit (wrong count, unsupported dtype, malformed number).
pub(crate) fn decode(body: &str, dtype: DType, elements: u64) -> Option<Dense> {
    if !decodable(dtype) {
        return None;
    }
    let width = (dtype.bits()? / 8) as usize;
    let body = body.trim();
    if body.starts_with('"') {
        let hex = body.strip_prefix("\"0x")?.strip_suffix('"')?;
        let bytes = unhex(hex)?;
        if bytes.len() == width {
            return Some(Dense::Splat(bytes));
        }
        return (bytes.len() as u64 == elements.checked_mul(width as u64)?)
            .then_some(Dense::Full(bytes));
    }
    let src = body.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut neg = false;
    let mut count: u64 = 0;
    loop {
        let t = lexer::lex(src, pos).ok()?;
        pos = t.end;
        let s = &body[t.start..t.end];
        match t.kind {
            Kind::Eof => break,
            Kind::Punct if matches!(s, "[" | "]" | ",") => {}
            Kind::Punct if s == "-" => neg = true,
            Kind::Int | Kind::Float | Kind::Ident => {
                encode_scalar(s, neg, dtype, &mut out)?;
                neg = false;
                count += 1;
                if count > elements {
                    return None;
                }
            }
            _ => return None,
        }
    }
    if count == 1 && elements != 1 {
        return Some(Dense::Splat(out));
    }
    (count == elements).then_some(Dense::Full(out))
}

fn encode_scalar(s: &str, neg: bool, dtype: DType, out: &mut Vec<u8>) -> Option<()> {
    let width = (dtype.bits()? / 8) as usize;
    if let Some(h) = s.strip_prefix("0x") {
        // Bit pattern (MLIR prints NaN and infinities of floats this way).
        let v = u64::from_str_radix(h, 16).ok()?;
        if neg {
            return None;
        }
        out.extend_from_slice(&v.to_le_bytes()[..width]);
        return Some(());
    }
    if dtype.is_float() {
        let v: f64 = match s {
            "true" => 1.0,
            "false" => 0.0,
            "inf" => f64::INFINITY,
            "nan" => f64::NAN,
            _ => s.parse().ok()?,
        };
        let v = if neg { -v } else { v };
        #[allow(clippy::cast_possible_truncation, reason = "narrowing to the constant's own dtype")]
        match dtype {
            DType::F64 => out.extend_from_slice(&v.to_le_bytes()),
            DType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            DType::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
            DType::BF16 => out.extend_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
            _ => return None,
        }
        return Some(());
    }
    let v: i128 = match s {
        "true" => 1,
        "false" => 0,
        _ => s.parse().ok()?,
    };
    let v = if neg { -v } else { v };
    out.extend_from_slice(&v.to_le_bytes()[..width]);
    Some(())
}

/// Hex digits to bytes.
pub(crate) fn unhex(hex: &str) -> Option<Vec<u8>> {
    let h = hex.as_bytes();
    if !h.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    h.chunks_exact(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// Bytes as upper-case hex, as MLIR prints them.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            decode("\"0x0000803F\"", DType::F32, 4),
            Some(Dense::Splat(1f32.to_le_bytes().to_vec()))
        );
        let two: Vec<u8> = [1f32, -2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode("[1.000000e+00, -2.500000e+00]", DType::F32, 2), Some(Dense::Full(two)));
        assert_eq!(
            decode("[[1, 2], [3, 4]]", DType::I32, 4)
                .map(|d| matches!(d, Dense::Full(b) if b.len() == 16)),
            Some(true)
        );
        assert_eq!(
            decode("0xFF800000", DType::F32, 1),
            Some(Dense::Full(f32::NEG_INFINITY.to_le_bytes().to_vec()))
        );
        assert_eq!(decode("[1, 2, 3]", DType::I32, 4), None);
        assert_eq!(decode("[1, 2]", DType::F8E4M3FN, 2), None);
        assert_eq!(unhex("0aFF"), Some(vec![10, 255]));
        assert_eq!(hex(&[10, 255]), "0AFF");
    }
}
