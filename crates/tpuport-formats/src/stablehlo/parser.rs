//! Recursive-descent parser for MLIR text: module, functions, generic ops, regions, attribute
//! dictionaries, locations and the dialect-resource trailer. Pretty (custom) op forms are in
//! [`super::pretty`]; types in [`super::types`].
//!
//! Recursion is bounded by `Limits::max_nesting`: every region, bracket group or nested type
//! enters a depth counter, and bracket groups inside attributes are skipped with an explicit
//! stack, so hostile nesting is a clear error, never a stack overflow.

use std::collections::HashMap;

use super::ast::{Arg, Func, Module, Op, Region, Type};
use super::lexer::{self, Kind, Token};

/// A parse error at a byte offset.
#[derive(Debug)]
pub(crate) struct PErr {
    /// Byte offset.
    pub(crate) at: usize,
    /// What was expected or found.
    pub(crate) what: String,
}

/// Result of a parser step.
pub(crate) type PResult<T> = Result<T, PErr>;

/// Parser state over one file's text.
#[derive(Debug)]
pub(crate) struct Parser<'a> {
    /// The text as bytes.
    pub(crate) src: &'a [u8],
    /// The same text as `str`.
    pub(crate) text: &'a str,
    /// Current offset.
    pub(crate) pos: usize,
    depth: usize,
    max_depth: usize,
    items: u64,
    max_items: u64,
    /// Types of the values defined so far in the current function (latest definition wins).
    pub(crate) types: HashMap<String, Type>,
    /// Counter for names the parser invents (regions of compact pretty forms).
    pub(crate) fresh: usize,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`.
    pub(crate) fn new(text: &'a str, max_depth: usize, max_items: u64) -> Parser<'a> {
        Parser {
            src: text.as_bytes(),
            text,
            pos: 0,
            depth: 0,
            max_depth,
            items: 0,
            max_items,
            types: HashMap::new(),
            fresh: 0,
        }
    }

    // ---- token helpers -------------------------------------------------------------------

    /// An error at `at`.
    pub(crate) fn err<T>(&self, at: usize, what: impl Into<String>) -> PResult<T> {
        Err(PErr { at, what: what.into() })
    }

    /// The next token, not consumed.
    pub(crate) fn peek(&self) -> PResult<Token> {
        lexer::lex(self.src, self.pos).map_err(|e| PErr { at: e.at, what: e.what })
    }

    /// Consumes and returns the next token.
    pub(crate) fn bump(&mut self) -> PResult<Token> {
        let t = self.peek()?;
        self.pos = t.end;
        Ok(t)
    }

    /// Source text of a token.
    pub(crate) fn tx(&self, t: Token) -> &'a str {
        &self.text[t.start..t.end]
    }

    /// True when `t` is the punctuation `p`.
    pub(crate) fn is_p(&self, t: Token, p: &str) -> bool {
        t.kind == Kind::Punct && self.tx(t) == p
    }

    /// True when `t` is the keyword `kw`.
    pub(crate) fn is_kw(&self, t: Token, kw: &str) -> bool {
        t.kind == Kind::Ident && self.tx(t) == kw
    }

    /// Consumes punctuation `p` if it is next.
    pub(crate) fn eat(&mut self, p: &str) -> PResult<bool> {
        let t = self.peek()?;
        if self.is_p(t, p) {
            self.pos = t.end;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes keyword `kw` if it is next.
    pub(crate) fn eat_kw(&mut self, kw: &str) -> PResult<bool> {
        let t = self.peek()?;
        if self.is_kw(t, kw) {
            self.pos = t.end;
            return Ok(true);
        }
        Ok(false)
    }

    /// Describes a token for messages.
    pub(crate) fn describe(&self, t: Token) -> String {
        if t.kind == Kind::Eof {
            return "end of input".to_owned();
        }
        let s = self.tx(t);
        let s: String = s.chars().take(40).collect();
        format!("`{s}`")
    }

    /// Requires punctuation `p`; `ctx` says what it belongs to.
    pub(crate) fn expect(&mut self, p: &str, ctx: &str) -> PResult<Token> {
        let t = self.peek()?;
        if self.is_p(t, p) {
            self.pos = t.end;
            return Ok(t);
        }
        self.err(t.start, format!("expected `{p}` {ctx}, found {}", self.describe(t)))
    }

    /// Requires keyword `kw`.
    pub(crate) fn expect_kw(&mut self, kw: &str, ctx: &str) -> PResult<()> {
        let t = self.peek()?;
        if self.is_kw(t, kw) {
            self.pos = t.end;
            return Ok(());
        }
        self.err(t.start, format!("expected `{kw}` {ctx}, found {}", self.describe(t)))
    }

    /// Requires a token of `kind`.
    pub(crate) fn expect_kind(&mut self, kind: Kind, ctx: &str) -> PResult<Token> {
        let t = self.peek()?;
        if t.kind == kind {
            self.pos = t.end;
            return Ok(t);
        }
        self.err(t.start, format!("expected {ctx}, found {}", self.describe(t)))
    }

    /// Enters one nesting level.
    pub(crate) fn enter(&mut self, at: usize) -> PResult<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return self.err(
                at,
                format!("nesting deeper than {} levels (Limits::max_nesting)", self.max_depth),
            );
        }
        Ok(())
    }

    /// The nesting limit.
    pub(crate) fn max_nesting(&self) -> usize {
        self.max_depth
    }

    /// Leaves one nesting level.
    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// A fresh name with `stem`.
    pub(crate) fn fresh_name(&mut self, stem: &str) -> String {
        self.fresh += 1;
        format!("%__{stem}{}", self.fresh)
    }

    // ---- balanced groups and attribute values --------------------------------------------

    /// Skips a bracket group whose opener `open` was just consumed; returns the offset after
    /// its closer. Uses an explicit stack.
    pub(crate) fn skip_group(&mut self, open: Token) -> PResult<usize> {
        let closer = |s: &str| match s {
            "(" => Some(")"),
            "[" => Some("]"),
            "{" => Some("}"),
            "<" => Some(">"),
            _ => None,
        };
        let mut stack: Vec<(&'static str, usize)> = Vec::new();
        let Some(c) = closer(self.tx(open)) else {
            return self.err(open.start, "internal: not an opening bracket");
        };
        stack.push((c, open.start));
        self.enter(open.start)?;
        let base = self.depth;
        while let Some(&(want, at)) = stack.last() {
            let t = self.bump()?;
            if t.kind == Kind::Eof {
                self.depth = base - 1;
                let (l, c) = lexer::line_col(self.src, at);
                return self.err(t.start, format!("expected `{want}` to close the bracket opened at {l}:{c}, found end of input"));
            }
            if t.kind != Kind::Punct {
                continue;
            }
            let s = self.tx(t);
            if let Some(c) = closer(s) {
                stack.push((c, t.start));
                if base + stack.len() - 1 > self.max_depth {
                    self.depth = base - 1;
                    return self.err(
                        t.start,
                        format!(
                            "nesting deeper than {} levels (Limits::max_nesting)",
                            self.max_depth
                        ),
                    );
                }
            } else if matches!(s, ")" | "]" | "}" | ">") {
                if s != want {
                    self.depth = base - 1;
                    return self.err(t.start, format!("expected `{want}`, found `{s}`"));
                }
                stack.pop();
            }
        }
        self.depth = base - 1;
        Ok(self.pos)
    }

    /// Reads one attribute value and returns its verbatim text. With `typed`, a trailing
    /// `: type` belongs to the value (`dense<1> : tensor<2xi64>`, `1 : i32`) and is returned
    /// too.
    pub(crate) fn attr_value(&mut self, typed: bool) -> PResult<(String, Option<Type>)> {
        let first = self.bump()?;
        let start = first.start;
        match first.kind {
            Kind::Eof => return self.err(start, "expected an attribute value, found end of input"),
            Kind::Punct => match self.tx(first) {
                "[" | "{" | "<" => {
                    self.skip_group(first)?;
                }
                "(" => {
                    self.skip_group(first)?;
                    if self.eat("->")? {
                        let t = self.peek()?;
                        if self.is_p(t, "(") {
                            self.bump()?;
                            self.skip_group(t)?;
                        } else {
                            self.parse_type()?;
                        }
                    }
                }
                "-" => {
                    self.expect_number()?;
                }
                other => {
                    return self
                        .err(start, format!("expected an attribute value, found `{other}`"));
                }
            },
            Kind::Ident | Kind::Hash | Kind::Bang => {
                let next = self.src.get(first.end).copied();
                if matches!(next, Some(b'<' | b'(' | b'[')) {
                    let open = self.bump()?;
                    self.skip_group(open)?;
                    // `distinct[0]<...>`
                    if next == Some(b'[') && self.src.get(self.pos) == Some(&b'<') {
                        let open = self.bump()?;
                        self.skip_group(open)?;
                    }
                }
            }
            _ => {}
        }
        let mut end = self.pos;
        let mut ty = None;
        if typed {
            let t = self.peek()?;
            if self.is_p(t, ":") {
                self.bump()?;
                ty = Some(self.parse_type()?);
                end = self.pos;
            }
        }
        Ok((self.text[start..end].to_owned(), ty))
    }

    fn expect_number(&mut self) -> PResult<Token> {
        let t = self.bump()?;
        if matches!(t.kind, Kind::Int | Kind::Float) || self.is_kw(t, "inf") || self.is_kw(t, "nan")
        {
            return Ok(t);
        }
        self.err(t.start, format!("expected a number, found {}", self.describe(t)))
    }

    /// Reads an attribute dictionary `{a = v, b}` (the `{` not yet consumed); each entry is
    /// (name, verbatim value text, value offset). Unit attributes get the text `unit`.
    pub(crate) fn attr_dict(&mut self) -> PResult<Vec<(String, String, usize)>> {
        let open = self.expect("{", "to open an attribute dictionary")?;
        self.enter(open.start)?;
        let mut out = Vec::new();
        if !self.eat("}")? {
            loop {
                let t = self.bump()?;
                let name = match t.kind {
                    Kind::Ident => self.tx(t).to_owned(),
                    Kind::Str => lexer::unescape(&self.text[t.start + 1..t.end - 1]),
                    _ => {
                        return self.err(
                            t.start,
                            format!("expected an attribute name, found {}", self.describe(t)),
                        );
                    }
                };
                if self.eat("=")? {
                    let at = self.peek()?.start;
                    let (v, _) = self.attr_value(true)?;
                    out.push((name, v, at));
                } else {
                    out.push((name, "unit".to_owned(), t.start));
                }
                if self.eat(",")? {
                    continue;
                }
                self.expect("}", "to close the attribute dictionary")?;
                break;
            }
        }
        self.leave();
        Ok(out)
    }

    /// An attribute dictionary without offsets.
    pub(crate) fn attr_dict_plain(&mut self) -> PResult<Vec<(String, String)>> {
        Ok(self.attr_dict()?.into_iter().map(|(k, v, _)| (k, v)).collect())
    }

    /// Optional `loc(...)`: returns the body text.
    pub(crate) fn opt_loc(&mut self) -> PResult<Option<String>> {
        let t = self.peek()?;
        if !self.is_kw(t, "loc") || self.src.get(t.end) != Some(&b'(') {
            return Ok(None);
        }
        self.bump()?;
        let open = self.bump()?;
        let end = self.skip_group(open)?;
        Ok(Some(self.text[open.end..end - 1].trim().to_owned()))
    }

    /// Comma-separated value names (possibly none).
    pub(crate) fn value_list(&mut self) -> PResult<Vec<String>> {
        let mut out = Vec::new();
        let t = self.peek()?;
        if t.kind != Kind::Value {
            return Ok(out);
        }
        loop {
            let t = self.expect_kind(Kind::Value, "a value such as `%0`")?;
            out.push(self.tx(t).to_owned());
            let save = self.pos;
            if self.eat(",")? {
                if self.peek()?.kind == Kind::Value {
                    continue;
                }
                self.pos = save;
            }
            return Ok(out);
        }
    }

    /// A parenthesised, comma-separated list of value names.
    pub(crate) fn paren_values(&mut self) -> PResult<Vec<String>> {
        self.expect("(", "before the operand list")?;
        let v = self.value_list()?;
        self.expect(")", "after the operand list")?;
        Ok(v)
    }

    // ---- module level ---------------------------------------------------------------------

    /// Parses a whole file.
    pub(crate) fn parse_file(&mut self) -> PResult<Module> {
        let mut m = Module::default();
        let mut seen_module = false;
        loop {
            let t = self.peek()?;
            match t.kind {
                Kind::Eof => break,
                Kind::Hash => self.alias_def(&mut m)?,
                Kind::Punct if self.tx(t) == "{-#" => self.resources(&mut m)?,
                Kind::Ident if self.tx(t) == "module" => {
                    if seen_module {
                        return self.err(t.start, "a second top-level `module`");
                    }
                    seen_module = true;
                    self.bump()?;
                    self.module_body(&mut m)?;
                }
                Kind::Ident if self.tx(t) == "func.func" => {
                    self.bump()?;
                    let f = self.func(t.start)?;
                    m.funcs.push(f);
                }
                _ => {
                    if seen_module {
                        return self.err(
                            t.start,
                            format!(
                                "expected end of input after the module, found {}",
                                self.describe(t)
                            ),
                        );
                    }
                    let op = self.parse_op()?;
                    self.module_item(&mut m, op)?;
                }
            }
        }
        Ok(m)
    }

    fn alias_def(&mut self, m: &mut Module) -> PResult<()> {
        let t = self.bump()?;
        let name = self.tx(t).to_owned();
        self.expect("=", "after an alias name")?;
        let v = self.peek()?;
        if self.is_kw(v, "loc") {
            let body = self.opt_loc()?.unwrap_or_default();
            m.loc_aliases.insert(name, body);
        } else {
            let (text, _) = self.attr_value(true)?;
            m.aliases.push((name, text));
        }
        Ok(())
    }

    fn resources(&mut self, m: &mut Module) -> PResult<()> {
        self.bump()?;
        loop {
            if self.eat("#-}")? {
                return Ok(());
            }
            let sect = self.expect_kind(Kind::Ident, "a resource section name")?;
            let is_dialect = self.tx(sect) == "dialect_resources";
            self.expect(":", "after the resource section name")?;
            self.expect("{", "to open the resource section")?;
            while !self.eat("}")? {
                self.expect_kind(Kind::Ident, "a dialect name")?;
                self.expect(":", "after the dialect name")?;
                self.expect("{", "to open the dialect's resources")?;
                while !self.eat("}")? {
                    let k = self.bump()?;
                    let key = match k.kind {
                        Kind::Ident => self.tx(k).to_owned(),
                        Kind::Str => lexer::unescape(&self.text[k.start + 1..k.end - 1]),
                        _ => {
                            return self.err(
                                k.start,
                                format!("expected a resource name, found {}", self.describe(k)),
                            );
                        }
                    };
                    self.expect(":", "after the resource name")?;
                    let v = self.bump()?;
                    if v.kind == Kind::Str && is_dialect {
                        m.resources.insert(key, self.text[v.start + 1..v.end - 1].to_owned());
                    } else if v.kind == Kind::Punct {
                        self.skip_group(v)?;
                    }
                    self.eat(",")?;
                }
                self.eat(",")?;
            }
            self.eat(",")?;
        }
    }

    fn module_body(&mut self, m: &mut Module) -> PResult<()> {
        let t = self.peek()?;
        if t.kind == Kind::Symbol {
            self.bump()?;
            m.name = Some(symbol_name(self.tx(t)));
        }
        if self.eat_kw("attributes")? {
            m.attrs = self.attr_dict_plain()?;
        }
        let open = self.expect("{", "to open the module body")?;
        self.enter(open.start)?;
        loop {
            let t = self.peek()?;
            if self.is_p(t, "}") {
                self.bump()?;
                break;
            }
            if t.kind == Kind::Eof {
                return self
                    .err(t.start, "expected `}` to close the module body, found end of input");
            }
            if self.is_kw(t, "func.func") {
                self.bump()?;
                let f = self.func(t.start)?;
                m.funcs.push(f);
                continue;
            }
            let op = self.parse_op()?;
            self.module_item(m, op)?;
        }
        self.leave();
        self.opt_loc()?;
        Ok(())
    }

    /// Files a module-level op: functions, a generic `builtin.module`, or anything else.
    fn module_item(&mut self, m: &mut Module, op: Op) -> PResult<()> {
        if op.name == "builtin.module" {
            let mut attrs = op.attrs;
            let mut name = None;
            attrs.retain(|(k, v)| {
                if k == "sym_name" {
                    name = Some(lexer::unescape(v.trim_matches('"')));
                    false
                } else {
                    true
                }
            });
            m.name = name;
            m.attrs = attrs;
            for (_, r) in op.regions {
                for inner in r.ops {
                    self.module_item(m, inner)?;
                }
            }
            return Ok(());
        }
        if op.name == "func.func" {
            let at = op.at;
            let f = super::generic_func::from_generic(op, self.max_depth, self.max_items)
                .map_err(|what| PErr { at, what })?;
            m.funcs.push(f);
            return Ok(());
        }
        m.others.push(op);
        Ok(())
    }

    // ---- functions --------------------------------------------------------------------------

    /// Parses a pretty `func.func` after its name.
    pub(crate) fn func(&mut self, at: usize) -> PResult<Func> {
        self.types.clear();
        let mut f = Func::default();
        let t = self.peek()?;
        if t.kind == Kind::Ident && matches!(self.tx(t), "public" | "private" | "nested") {
            self.bump()?;
            f.visibility = Some(self.tx(t).to_owned());
        }
        let sym = self.expect_kind(Kind::Symbol, "a function name such as `@main`")?;
        f.name = symbol_name(self.tx(sym));
        self.expect("(", "to open the parameter list")?;
        if !self.eat(")")? {
            loop {
                let a =
                    self.expect_kind(Kind::Value, "a parameter such as `%arg0: tensor<f32>`")?;
                self.expect(":", "after the parameter name")?;
                let ty = self.parse_type()?;
                let attrs =
                    if self.is_p(self.peek()?, "{") { self.attr_dict_plain()? } else { Vec::new() };
                let loc = self.opt_loc()?;
                let name = self.tx(a).to_owned();
                self.types.insert(name.clone(), ty.clone());
                f.args.push(Arg { name, ty, attrs, loc });
                if self.eat(",")? {
                    continue;
                }
                self.expect(")", "to close the parameter list")?;
                break;
            }
        }
        if self.eat("->")? {
            if self.eat("(")? {
                if !self.eat(")")? {
                    loop {
                        let ty = self.parse_type()?;
                        let attrs = if self.is_p(self.peek()?, "{") {
                            self.attr_dict_plain()?
                        } else {
                            Vec::new()
                        };
                        f.results.push((ty, attrs));
                        if self.eat(",")? {
                            continue;
                        }
                        self.expect(")", "to close the result list")?;
                        break;
                    }
                }
            } else {
                let ty = self.parse_type()?;
                f.results.push((ty, Vec::new()));
            }
        }
        if self.eat_kw("attributes")? {
            f.attrs = self.attr_dict_plain()?;
        }
        if self.is_p(self.peek()?, "{") {
            let args = f.args.clone();
            f.body = self.region(args)?;
        } else {
            f.external = true;
        }
        f.loc = self.opt_loc()?;
        f.at = at;
        Ok(f)
    }

    /// Parses a `{ [^bb0(args):] ops }` region. `args` are block arguments already known
    /// (pretty forms that declare them outside the braces).
    pub(crate) fn region(&mut self, mut args: Vec<Arg>) -> PResult<Region> {
        let open = self.expect("{", "to open a region")?;
        self.enter(open.start)?;
        for a in &args {
            self.types.insert(a.name.clone(), a.ty.clone());
        }
        let mut r = Region::default();
        let mut blocks = 0;
        loop {
            let t = self.peek()?;
            if self.is_p(t, "}") {
                self.bump()?;
                break;
            }
            if t.kind == Kind::Eof {
                let (l, c) = lexer::line_col(self.src, open.start);
                return self.err(
                    t.start,
                    format!(
                        "expected `}}` to close the region opened at {l}:{c}, found end of input"
                    ),
                );
            }
            if t.kind == Kind::Block {
                blocks += 1;
                if blocks > 1 || !r.ops.is_empty() {
                    return self.err(t.start, "regions with more than one block are not supported");
                }
                self.bump()?;
                if self.eat("(")? && !self.eat(")")? {
                    loop {
                        let a = self.expect_kind(Kind::Value, "a block argument")?;
                        self.expect(":", "after the block argument name")?;
                        let ty = self.parse_type()?;
                        let loc = self.opt_loc()?;
                        self.types.insert(self.tx(a).to_owned(), ty.clone());
                        args.push(Arg { name: self.tx(a).to_owned(), ty, attrs: Vec::new(), loc });
                        if self.eat(",")? {
                            continue;
                        }
                        self.expect(")", "to close the block arguments")?;
                        break;
                    }
                }
                self.expect(":", "after the block label")?;
                continue;
            }
            let op = self.parse_op()?;
            r.ops.push(op);
        }
        r.args = args;
        self.leave();
        Ok(r)
    }

    // ---- operations -------------------------------------------------------------------------

    /// Parses one operation in either form, with its location.
    pub(crate) fn parse_op(&mut self) -> PResult<Op> {
        let first = self.peek()?;
        self.items += 1;
        if self.items > self.max_items {
            return self.err(
                first.start,
                format!("more than {} operations (Limits::max_items)", self.max_items),
            );
        }
        let mut op = Op { at: first.start, ..Op::default() };
        if first.kind == Kind::Value {
            loop {
                let t = self.expect_kind(Kind::Value, "a result name")?;
                let name = self.tx(t).to_owned();
                if self.eat(":")? {
                    let n = self.expect_kind(Kind::Int, "a result count after `:`")?;
                    let count: usize = self
                        .tx(n)
                        .parse()
                        .ok()
                        .filter(|&c: &usize| c > 0 && (c as u64) < self.max_items)
                        .ok_or(PErr {
                            at: n.start,
                            what: "result count out of range".to_owned(),
                        })?;
                    op.results.extend((0..count).map(|i| format!("{name}#{i}")));
                } else {
                    op.results.push(name);
                }
                if !self.eat(",")? {
                    break;
                }
            }
            self.expect("=", "after the result names")?;
        }
        let t = self.bump()?;
        match t.kind {
            Kind::Str => {
                op.name = lexer::unescape(&self.text[t.start + 1..t.end - 1]);
                self.generic_body(&mut op)?;
            }
            Kind::Ident => {
                op.name = self.tx(t).to_owned();
                if op.name == "func.func" {
                    return self.err(t.start, "`func.func` is only supported at module level");
                }
                super::pretty::parse(self, &mut op)?;
            }
            _ => {
                return self.err(
                    t.start,
                    format!("expected an operation name, found {}", self.describe(t)),
                );
            }
        }
        if let Some(l) = self.opt_loc()? {
            op.loc = Some(l);
        }
        if !op.types.is_empty() && op.types.len() != op.results.len() {
            return self.err(
                op.at,
                format!(
                    "`{}` names {} results but its type lists {}",
                    op.name,
                    op.results.len(),
                    op.types.len()
                ),
            );
        }
        if op.types.is_empty() && !op.results.is_empty() {
            op.types = op
                .results
                .iter()
                .map(|_| Type { tt: tpuport_model::TensorType::default(), text: String::new() })
                .collect();
        }
        for (r, ty) in op.results.iter().zip(&op.types) {
            self.types.insert(r.clone(), ty.clone());
        }
        Ok(op)
    }

    /// `(operands) [successors] <{props}> (regions) {attrs} : (types) -> types`.
    fn generic_body(&mut self, op: &mut Op) -> PResult<()> {
        op.operands = self.paren_values()?;
        let t = self.peek()?;
        if self.is_p(t, "[") {
            return self.err(t.start, "ops with successor blocks are not supported");
        }
        if self.eat("<")? {
            op.attrs.extend(self.attr_dict_plain()?);
            self.expect(">", "to close the properties")?;
        }
        let t = self.peek()?;
        if self.is_p(t, "(") {
            self.bump()?;
            self.enter(t.start)?;
            let mut i = 0;
            loop {
                let r = self.region(Vec::new())?;
                op.regions.push((region_name(&op.name, i), r));
                i += 1;
                if !self.eat(",")? {
                    break;
                }
            }
            self.expect(")", "to close the region list")?;
            self.leave();
        }
        if self.is_p(self.peek()?, "{") {
            op.attrs.extend(self.attr_dict_plain()?);
        }
        self.expect(":", "before the op's type")?;
        let (_, outs) = self.fn_type()?;
        op.types = outs;
        Ok(())
    }

    /// `(T, ...) -> T` or `(T, ...) -> (T, ...)`.
    pub(crate) fn fn_type(&mut self) -> PResult<(Vec<Type>, Vec<Type>)> {
        self.expect("(", "to open a function type")?;
        let ins = self.type_list_until(")")?;
        self.expect("->", "in a function type")?;
        let outs =
            if self.eat("(")? { self.type_list_until(")")? } else { vec![self.parse_type()?] };
        Ok((ins, outs))
    }

    /// Types separated by commas up to the closer `close` (consumed).
    pub(crate) fn type_list_until(&mut self, close: &str) -> PResult<Vec<Type>> {
        let mut out = Vec::new();
        if self.eat(close)? {
            return Ok(out);
        }
        loop {
            out.push(self.parse_type()?);
            if self.eat(",")? {
                continue;
            }
            self.expect(close, "to close the type list")?;
            return Ok(out);
        }
    }
}

/// Name of an op's region `i` in the neutral IR.
pub(crate) fn region_name(op: &str, i: usize) -> String {
    let short = op.rsplit('.').next().unwrap_or(op);
    let names: &[&str] = match short {
        "while" => &["cond", "body"],
        "if" => &["true_branch", "false_branch"],
        "case" => return format!("branch{i}"),
        "sort" => &["comparator"],
        "reduce" | "reduce_window" | "all_reduce" | "reduce_scatter" => &["reducer"],
        "scatter" => &["update_computation"],
        "select_and_scatter" => &["select", "scatter"],
        "map" => &["computation"],
        "manual_computation" | "named_computation" => &["body"],
        _ => &[],
    };
    names.get(i).map_or_else(|| format!("region{i}"), |s| (*s).to_owned())
}

/// `@name` or `@"name"` without the sigil.
pub(crate) fn symbol_name(s: &str) -> String {
    let s = s.strip_prefix('@').unwrap_or(s);
    if s.starts_with('"') && s.len() >= 2 {
        lexer::unescape(&s[1..s.len() - 1])
    } else {
        s.to_owned()
    }
}
