//! Tokens of MLIR text as JAX and the StableHLO tools print it.
//!
//! The lexer is lazy: the parser asks for the next token at a byte offset and may also read
//! raw characters (tensor shapes such as `2x?x3xf32` are not token-friendly, so the type
//! parser works on characters). Every token records its byte span so the parser can keep an
//! attribute's source text verbatim.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `%name`, `%0`, `%0#1` (a value use or definition).
    Value,
    /// `@name` or `@"quoted"`.
    Symbol,
    /// `^bb0`.
    Block,
    /// `#name` (attribute alias, `#loc3`, dialect attribute such as `#stablehlo.dot`).
    Hash,
    /// `!name` (dialect type such as `!stablehlo.token`).
    Bang,
    /// Bare identifier or keyword (`func.func`, `tensor`, `dense`, `x`, `f32`).
    Ident,
    /// Integer literal, decimal or `0x` hexadecimal.
    Int,
    /// Floating-point literal.
    Float,
    /// Double-quoted string (escapes not decoded; see [`unescape`]).
    Str,
    /// One punctuation mark or `->`, `{-#`, `#-}`, `...`.
    Punct,
    /// End of input.
    Eof,
}

/// One token: kind and byte span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// What it is.
    pub(crate) kind: Kind,
    /// Start offset.
    pub(crate) start: usize,
    /// End offset (exclusive).
    pub(crate) end: usize,
}

/// Why a token could not be read.
#[derive(Debug)]
pub(crate) struct LexError {
    /// Offset of the offending character.
    pub(crate) at: usize,
    /// What is wrong.
    pub(crate) what: String,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

fn is_suffix_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

/// Skips whitespace and `//` comments from `pos`; returns the new offset.
pub(crate) fn skip_trivia(src: &[u8], mut pos: usize) -> usize {
    loop {
        while pos < src.len() && src[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if src.get(pos) == Some(&b'/') && src.get(pos + 1) == Some(&b'/') {
            while pos < src.len() && src[pos] != b'\n' {
                pos += 1;
            }
        } else {
            return pos;
        }
    }
}

/// Reads the token starting at or after `pos` (after trivia).
pub(crate) fn lex(src: &[u8], pos: usize) -> Result<Token, LexError> {
    let start = skip_trivia(src, pos);
    let Some(&c) = src.get(start) else {
        return Ok(Token { kind: Kind::Eof, start, end: start });
    };
    let tok = |kind, end| Ok(Token { kind, start, end });
    let at = |i: usize| src.get(i).copied();
    match c {
        b'%' | b'@' | b'^' | b'#' | b'!' => {
            let kind = match c {
                b'%' => Kind::Value,
                b'@' => Kind::Symbol,
                b'^' => Kind::Block,
                b'#' => Kind::Hash,
                _ => Kind::Bang,
            };
            if c == b'#' && at(start + 1) == Some(b'-') && at(start + 2) == Some(b'}') {
                return tok(Kind::Punct, start + 3);
            }
            if c == b'@' && at(start + 1) == Some(b'"') {
                let end = string_end(src, start + 1)?;
                return tok(Kind::Symbol, end);
            }
            let mut i = start + 1;
            while i < src.len() && is_suffix_char(src[i]) {
                i += 1;
            }
            if i == start + 1 {
                return Err(LexError {
                    at: start,
                    what: format!("expected a name after `{}`", char::from(c)),
                });
            }
            if c == b'%' && at(i) == Some(b'#') && at(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                i += 1;
                while i < src.len() && src[i].is_ascii_digit() {
                    i += 1;
                }
            }
            tok(kind, i)
        }
        b'"' => {
            let end = string_end(src, start)?;
            tok(Kind::Str, end)
        }
        b'0'..=b'9' => {
            if c == b'0'
                && at(start + 1) == Some(b'x')
                && at(start + 2).is_some_and(|d| d.is_ascii_hexdigit())
            {
                let mut i = start + 2;
                while i < src.len() && src[i].is_ascii_hexdigit() {
                    i += 1;
                }
                return tok(Kind::Int, i);
            }
            let mut i = start;
            while i < src.len() && src[i].is_ascii_digit() {
                i += 1;
            }
            let mut kind = Kind::Int;
            if at(i) == Some(b'.') {
                kind = Kind::Float;
                i += 1;
                while i < src.len() && src[i].is_ascii_digit() {
                    i += 1;
                }
                if matches!(at(i), Some(b'e' | b'E')) {
                    let mut j = i + 1;
                    if matches!(at(j), Some(b'+' | b'-')) {
                        j += 1;
                    }
                    if at(j).is_some_and(|d| d.is_ascii_digit()) {
                        while j < src.len() && src[j].is_ascii_digit() {
                            j += 1;
                        }
                        i = j;
                    }
                }
            }
            tok(kind, i)
        }
        c if is_ident_start(c) => {
            let mut i = start + 1;
            while i < src.len() && is_ident_char(src[i]) {
                i += 1;
            }
            tok(Kind::Ident, i)
        }
        b'-' if at(start + 1) == Some(b'>') => tok(Kind::Punct, start + 2),
        b'{' if at(start + 1) == Some(b'-') && at(start + 2) == Some(b'#') => {
            tok(Kind::Punct, start + 3)
        }
        b'.' if at(start + 1) == Some(b'.') && at(start + 2) == Some(b'.') => {
            tok(Kind::Punct, start + 3)
        }
        b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'<' | b'>' | b',' | b':' | b'=' | b'?'
        | b'*' | b'+' | b'-' | b'|' | b'&' | b'/' | b'.' | b'\\' | b';' => {
            tok(Kind::Punct, start + 1)
        }
        _ => Err(LexError { at: start, what: format!("unexpected character {:?}", char::from(c)) }),
    }
}

/// End offset (exclusive) of the string literal whose opening quote is at `open`.
fn string_end(src: &[u8], open: usize) -> Result<usize, LexError> {
    let mut i = open + 1;
    while i < src.len() {
        match src[i] {
            b'"' => return Ok(i + 1),
            b'\\' => i += 2,
            b'\n' => break,
            _ => i += 1,
        }
    }
    Err(LexError { at: open, what: "unterminated string literal".to_owned() })
}

/// Decodes an MLIR string literal's body (without quotes): `\"`, `\\`, `\n`, `\t` and two-digit
/// hex escapes `\0A`. Invalid UTF-8 from hex escapes is replaced.
pub(crate) fn unescape(body: &str) -> String {
    let b = body.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let n = b[i + 1];
            match n {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'"' | b'\\' => out.push(n),
                _ => {
                    let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                    if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    out.push(n);
                }
            }
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes `s` as an MLIR string literal, quotes included.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// 1-based line and column of byte offset `at`.
pub(crate) fn line_col(src: &[u8], at: usize) -> (usize, usize) {
    let at = at.min(src.len());
    let before = &src[..at];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let col = at - before.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn kinds(s: &str) -> Vec<(Kind, &str)> {
        let mut pos = 0;
        let mut out = Vec::new();
        loop {
            let t = lex(s.as_bytes(), pos).unwrap();
            if t.kind == Kind::Eof {
                return out;
            }
            out.push((t.kind, &s[t.start..t.end]));
            pos = t.end;
        }
    }

    #[test]
    fn tokens() {
        let k = kinds(
            "%0:2 = \"x\"(%a#1) -> @f @\"q r\" #loc3 !stablehlo.token 0xFF 1.5e-3 {-# #-} // c\n^bb0",
        );
        let texts: Vec<&str> = k.iter().map(|t| t.1).collect();
        assert_eq!(
            texts,
            vec![
                "%0",
                ":",
                "2",
                "=",
                "\"x\"",
                "(",
                "%a#1",
                ")",
                "->",
                "@f",
                "@\"q r\"",
                "#loc3",
                "!stablehlo.token",
                "0xFF",
                "1.5e-3",
                "{-#",
                "#-}",
                "^bb0"
            ]
        );
        assert_eq!(k[14].0, Kind::Float);
    }

    #[test]
    fn strings() {
        assert!(lex(b"\"abc", 0).is_err());
        assert_eq!(unescape(r#"a\"b\0Ac"#), "a\"b\nc");
        assert_eq!(quote("a\"b\n"), r#""a\"b\n""#);
        assert_eq!(line_col(b"ab\ncd", 4), (2, 2));
    }
}
