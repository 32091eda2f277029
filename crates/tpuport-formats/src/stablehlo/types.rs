//! MLIR types, read character by character (`tensor<2x?x3xf32>` does not split into tokens
//! the way the rest of the language does): ranked and unranked tensors with any element type,
//! encodings, `complex<...>`, `tuple<...>`, dialect types such as `!stablehlo.token`.

use tpuport_model::{DType, Dim, Shape, TensorType};

use super::ast::Type;
use super::lexer;
use super::parser::{PResult, Parser};

/// Largest dimension accepted (MLIR stores sizes as signed 64-bit).
const MAX_DIM: u64 = i64::MAX as u64;

impl Parser<'_> {
    /// Parses one type at the current position.
    pub(crate) fn parse_type(&mut self) -> PResult<Type> {
        let start = lexer::skip_trivia(self.src, self.pos);
        self.pos = start;
        self.enter(start)?;
        let r = self.type_inner();
        self.leave();
        r
    }

    fn starts(&self, s: &str) -> bool {
        self.src[self.pos..].starts_with(s.as_bytes())
    }

    fn type_inner(&mut self) -> PResult<Type> {
        let at = self.pos;
        for kw in ["tensor<", "vector<", "memref<"] {
            if self.starts(kw) {
                self.pos += kw.len();
                return self.shaped(&kw[..kw.len() - 1]);
            }
        }
        if self.starts("tuple<") {
            self.pos += 6;
            let mut parts = Vec::new();
            self.pos = lexer::skip_trivia(self.src, self.pos);
            if self.src.get(self.pos) == Some(&b'>') {
                self.pos += 1;
            } else {
                loop {
                    parts.push(self.parse_type()?.text);
                    self.pos = lexer::skip_trivia(self.src, self.pos);
                    match self.src.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'>') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return self.err(self.pos, "expected `,` or `>` in `tuple<...>`"),
                    }
                }
            }
            return Ok(opaque(format!("tuple<{}>", parts.join(", "))));
        }
        if self.starts("complex<") {
            self.pos += 8;
            let inner = self.parse_type()?;
            self.close_angle("complex<...>")?;
            let text = format!("complex<{}>", inner.text);
            let tt = TensorType { dtype: DType::from_mlir(&text), shape: None };
            return Ok(Type { tt, text });
        }
        if self.src.get(self.pos) == Some(&b'!') {
            let mut i = self.pos + 1;
            while i < self.src.len()
                && (self.src[i].is_ascii_alphanumeric()
                    || matches!(self.src[i], b'_' | b'.' | b'$'))
            {
                i += 1;
            }
            if i == self.pos + 1 {
                return self.err(self.pos, "expected a dialect type name after `!`");
            }
            self.pos = i;
            if self.src.get(i) == Some(&b'<') {
                self.skip_angle_chars()?;
            }
            return Ok(opaque(self.text[at..self.pos].to_owned()));
        }
        let mut i = self.pos;
        while i < self.src.len() && (self.src[i].is_ascii_alphanumeric() || self.src[i] == b'_') {
            i += 1;
        }
        if i == self.pos || self.src[self.pos].is_ascii_digit() {
            let found: String = self.text[self.pos..].chars().take(20).collect();
            return self.err(self.pos, format!("expected a type, found `{found}`"));
        }
        self.pos = i;
        let text = self.text[at..i].to_owned();
        let tt = TensorType { dtype: DType::from_mlir(&text), shape: None };
        Ok(Type { tt, text })
    }

    /// After `tensor<`: dimensions, element type, optional encoding, `>`.
    fn shaped(&mut self, kw: &str) -> PResult<Type> {
        let mut dims: Vec<Dim> = Vec::new();
        let mut dims_text = String::new();
        let mut unranked = false;
        loop {
            self.pos = lexer::skip_trivia(self.src, self.pos);
            let c = self.src.get(self.pos).copied();
            let next = self.src.get(self.pos + 1).copied();
            match (c, next) {
                (Some(b'*'), Some(b'x')) if dims.is_empty() && !unranked => {
                    unranked = true;
                    dims_text.push_str("*x");
                    self.pos += 2;
                }
                (Some(b'?'), Some(b'x')) => {
                    dims.push(Dim::unknown());
                    dims_text.push_str("?x");
                    self.pos += 2;
                }
                (Some(d), _) if d.is_ascii_digit() => {
                    let mut j = self.pos;
                    while j < self.src.len() && self.src[j].is_ascii_digit() {
                        j += 1;
                    }
                    if self.src.get(j) != Some(&b'x') {
                        return self.err(
                            self.pos,
                            format!("expected `x` after a dimension in `{kw}<...>`"),
                        );
                    }
                    let digits = &self.text[self.pos..j];
                    let n = digits.parse::<u64>().ok().filter(|&n| n <= MAX_DIM);
                    let Some(n) = n else {
                        return self.err(
                            self.pos,
                            format!(
                                "dimension {digits} in `{kw}<...>` is too large (at most {MAX_DIM})"
                            ),
                        );
                    };
                    if dims.len() as u64 >= self.max_rank() {
                        return self.err(
                            self.pos,
                            format!("`{kw}<...>` has more than {} dimensions", self.max_rank()),
                        );
                    }
                    dims.push(Dim::Known(n));
                    dims_text.push_str(&format!("{n}x"));
                    self.pos = j + 1;
                }
                _ => break,
            }
        }
        let elem = self.parse_type()?;
        self.pos = lexer::skip_trivia(self.src, self.pos);
        let mut encoding = String::new();
        if self.src.get(self.pos) == Some(&b',') {
            self.pos += 1;
            let s = lexer::skip_trivia(self.src, self.pos);
            self.pos = s;
            self.skip_until_angle_close()?;
            encoding = format!(", {}", self.text[s..self.pos].trim_end());
        }
        self.close_angle(&format!("{kw}<...>"))?;
        let text = format!("{kw}<{dims_text}{}{encoding}>", elem.text);
        let mut tt = TensorType::default();
        if kw == "tensor" && encoding.is_empty() {
            tt.dtype = elem.tt.dtype.filter(|_| elem.tt.shape.is_none());
            if tt.dtype.is_some() {
                tt.shape = if unranked { None } else { Some(Shape(dims)) };
            }
        }
        Ok(Type { tt, text })
    }

    fn max_rank(&self) -> u64 {
        4096
    }

    fn close_angle(&mut self, what: &str) -> PResult<()> {
        self.pos = lexer::skip_trivia(self.src, self.pos);
        if self.src.get(self.pos) == Some(&b'>') {
            self.pos += 1;
            return Ok(());
        }
        let found: String = self.text[self.pos..].chars().take(20).collect();
        if found.is_empty() {
            return self
                .err(self.pos, format!("expected `>` to close `{what}`, found end of input"));
        }
        self.err(self.pos, format!("expected `>` to close `{what}`, found `{found}`"))
    }

    /// Skips `<...>` starting at the current `<`, by characters, strings and nesting aware.
    fn skip_angle_chars(&mut self) -> PResult<()> {
        self.pos += 1;
        self.skip_until_angle_close()?;
        self.pos += 1;
        Ok(())
    }

    /// Advances to the `>` that closes the current angle group (not consumed).
    fn skip_until_angle_close(&mut self) -> PResult<()> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(&c) = self.src.get(self.pos) {
            match c {
                b'"' => {
                    let t = lexer::lex(self.src, self.pos)
                        .map_err(|e| super::parser::PErr { at: e.at, what: e.what })?;
                    self.pos = t.end;
                    continue;
                }
                b'-' if self.src.get(self.pos + 1) == Some(&b'>') => {
                    self.pos += 2;
                    continue;
                }
                b'<' | b'(' | b'[' | b'{' => {
                    depth += 1;
                    if depth > self.max_nesting() {
                        return self.err(
                            self.pos,
                            format!(
                                "nesting deeper than {} levels (Limits::max_nesting)",
                                self.max_nesting()
                            ),
                        );
                    }
                }
                b'>' if depth == 0 => return Ok(()),
                b'>' | b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.pos += 1;
        }
        self.err(start, "expected `>` to close a type, found end of input")
    }
}

fn opaque(text: String) -> Type {
    Type { tt: TensorType::default(), text }
}

/// Renders a neutral type as MLIR (`tensor<2x?xf32>`); `None` when the dtype is unknown or has
/// no MLIR spelling.
pub(crate) fn render(tt: &TensorType) -> Option<String> {
    let elem = tt.dtype?.mlir()?;
    let Some(shape) = &tt.shape else {
        return Some(format!("tensor<*x{elem}>"));
    };
    let mut s = String::from("tensor<");
    for d in &shape.0 {
        match d {
            Dim::Known(n) => s.push_str(&format!("{n}x")),
            Dim::Sym(_) => s.push_str("?x"),
        }
    }
    s.push_str(elem);
    s.push('>');
    Some(s)
}
