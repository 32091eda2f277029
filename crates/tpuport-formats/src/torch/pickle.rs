//! A restricted pickle reader: a stack machine over the protocol 0–5 opcodes that builds a
//! value tree and never executes anything.
//!
//! `GLOBAL`/`STACK_GLOBAL`/`INST` push an inert [`Obj::Global`] naming the callable; `REDUCE`,
//! `NEWOBJ`, `OBJ` and `INST` record a [`Obj::Call`] of that name with its arguments; `BUILD`
//! attaches the state to the call. Whether a name may be trusted is decided afterwards, by the
//! caller, against an allow-list ([`super::globals`]): nothing here resolves or calls a name.
//!
//! Objects live in an arena ([`Pickle::objs`]) addressed by [`Id`], so that memoised containers
//! that are filled after being memoised (`EMPTY_DICT BINPUT … SETITEMS`) stay shared, exactly as
//! in Python. Every resource is bounded: opcodes (at most one per input byte), objects and
//! stack depth (`max_items`), memo entries, and every length field is checked against the bytes
//! that remain before anything is allocated.

use std::collections::HashMap;

/// Index of an object in [`Pickle::objs`].
pub(crate) type Id = u32;

/// One unpickled object. Containers hold ids into the arena.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Obj {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// A larger integer: little-endian two's-complement bytes.
    BigInt(Vec<u8>),
    /// A float.
    Float(f64),
    /// A text string.
    Str(String),
    /// A byte string (`bytes`, `bytearray`, protocol-0 `str` that is not UTF-8).
    Bytes(Vec<u8>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A list.
    List(Vec<Id>),
    /// A dict, in insertion order.
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset.
    Set(Vec<Id>),
    /// A reference to `module.name`, never resolved.
    Global {
        /// Module as written in the pickle.
        module: String,
        /// Attribute name.
        name: String,
    },
    /// A call that Python would make (`REDUCE`, `NEWOBJ`, `OBJ`, `INST`), recorded, not made.
    Call(Box<Call>),
    /// A persistent id (`PERSID`/`BINPERSID`): torch's storage references.
    PersId(Id),
}

/// A recorded call plus whatever was applied to its result afterwards.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    /// The callable (normally an [`Obj::Global`]).
    pub func: Id,
    /// The argument tuple.
    pub args: Id,
    /// State applied by `BUILD`.
    pub state: Option<Id>,
    /// Items added by `SETITEM(S)` (an `OrderedDict()` being filled).
    pub dict_items: Vec<(Id, Id)>,
    /// Items added by `APPEND(S)` / `ADDITEMS`.
    pub list_items: Vec<Id>,
}

/// A global reference seen while reading, in order of appearance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GlobalSeen {
    /// Module as written.
    pub module: String,
    /// Name as written.
    pub name: String,
    /// Byte offset of the opcode in the pickle.
    pub offset: usize,
}

/// The result of reading one pickle.
#[derive(Debug)]
pub(crate) struct Pickle {
    /// All objects.
    pub objs: Vec<Obj>,
    /// The value `STOP` returned.
    pub root: Id,
    /// Bytes consumed, including `STOP` (legacy checkpoints hold several pickles back to back).
    pub consumed: usize,
}

impl Pickle {
    /// The object behind an id.
    pub(crate) fn get(&self, id: Id) -> &Obj {
        &self.objs[id as usize]
    }
}

/// Why a pickle could not be read (the caller adds the file name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PickleError {
    /// Byte offset of the failing opcode.
    pub offset: usize,
    /// What went wrong.
    pub what: String,
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pickle byte {}: {}", self.offset, self.what)
    }
}

/// Bounds for one run of the machine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PickleLimits {
    /// Most objects, stack entries and memo entries.
    pub max_items: u64,
}

/// Reads one pickle from the start of `data`. Every global met is appended to `seen`, even when
/// reading fails later, so a scan can report what a broken or hostile pickle references.
pub(crate) fn read(
    data: &[u8],
    limits: PickleLimits,
    seen: &mut Vec<GlobalSeen>,
) -> Result<Pickle, PickleError> {
    let mut vm = Vm {
        data,
        pos: 0,
        op_start: 0,
        objs: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        max_items: usize::try_from(limits.max_items).unwrap_or(usize::MAX),
        seen,
    };
    let root = vm.run()?;
    Ok(Pickle { objs: vm.objs, root, consumed: vm.pos })
}

struct Vm<'a, 's> {
    data: &'a [u8],
    pos: usize,
    op_start: usize,
    objs: Vec<Obj>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
    max_items: usize,
    seen: &'s mut Vec<GlobalSeen>,
}

type R<T> = Result<T, PickleError>;

impl Vm<'_, '_> {
    fn err<T>(&self, what: impl Into<String>) -> R<T> {
        Err(PickleError { offset: self.op_start, what: what.into() })
    }

    fn take(&mut self, n: usize) -> R<&[u8]> {
        let remaining = self.data.len() - self.pos;
        if n > remaining {
            return self.err(format!("needs {n} bytes but only {remaining} remain (truncated)"));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn take_len(&mut self, n: u64) -> R<&[u8]> {
        match usize::try_from(n) {
            Ok(n) => self.take(n),
            Err(_) => self.err(format!("length {n} exceeds the remaining bytes")),
        }
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> R<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> R<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i32(&mut self) -> R<i32> {
        Ok(self.u32()?.cast_signed())
    }

    fn u64(&mut self) -> R<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A protocol-0 text argument: bytes up to (not including) the next `\n`.
    fn line(&mut self) -> R<&[u8]> {
        let rest = &self.data[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return self.err("text argument has no terminating newline (truncated)");
        };
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    fn line_str(&mut self) -> R<String> {
        let l = self.line()?;
        match std::str::from_utf8(l) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => self.err("text argument is not UTF-8"),
        }
    }

    fn alloc(&mut self, o: Obj) -> R<Id> {
        if self.objs.len() >= self.max_items {
            return self.err(format!("more than {} objects", self.max_items));
        }
        let id = Id::try_from(self.objs.len()).map_err(|_| PickleError {
            offset: self.op_start,
            what: "too many objects".to_owned(),
        })?;
        self.objs.push(o);
        Ok(id)
    }

    fn push(&mut self, id: Id) -> R<()> {
        if self.stack.len() >= self.max_items {
            return self.err(format!("stack deeper than {}", self.max_items));
        }
        self.stack.push(id);
        Ok(())
    }

    fn push_new(&mut self, o: Obj) -> R<()> {
        let id = self.alloc(o)?;
        self.push(id)
    }

    fn pop(&mut self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return self.err("pops an empty stack");
        }
        Ok(self.stack.pop().unwrap_or_default())
    }

    fn top(&self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(&id) if self.stack.len() > floor => Ok(id),
            _ => self.err("reads an empty stack"),
        }
    }

    fn pop_mark(&mut self) -> R<Vec<Id>> {
        let Some(m) = self.marks.pop() else {
            return self.err("no MARK to pop to");
        };
        Ok(self.stack.split_off(m))
    }

    fn memo_put(&mut self, key: u64) -> R<()> {
        let id = self.top()?;
        if self.memo.len() >= self.max_items && !self.memo.contains_key(&key) {
            return self.err(format!("memo holds more than {} entries", self.max_items));
        }
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> R<()> {
        let Some(&id) = self.memo.get(&key) else {
            return self.err(format!("memo key {key} was never stored"));
        };
        self.push(id)
    }

    fn global(&mut self, module: String, name: String) -> R<Id> {
        self.seen.push(GlobalSeen {
            module: module.clone(),
            name: name.clone(),
            offset: self.op_start,
        });
        self.alloc(Obj::Global { module, name })
    }

    fn call(&mut self, func: Id, args: Id) -> R<()> {
        self.push_new(Obj::Call(Box::new(Call {
            func,
            args,
            state: None,
            dict_items: Vec::new(),
            list_items: Vec::new(),
        })))
    }

    fn set_items(&mut self, target: Id, items: Vec<(Id, Id)>) -> R<()> {
        match &mut self.objs[target as usize] {
            Obj::Dict(d) => d.extend(items),
            Obj::Call(c) => c.dict_items.extend(items),
            _ => return self.err("SETITEM on an object that is not a dict"),
        }
        Ok(())
    }

    fn append_items(&mut self, target: Id, items: Vec<Id>) -> R<()> {
        match &mut self.objs[target as usize] {
            Obj::List(l) | Obj::Set(l) => l.extend(items),
            Obj::Call(c) => c.list_items.extend(items),
            _ => return self.err("APPEND on an object that is not a list"),
        }
        Ok(())
    }

    fn pairs(&self, items: &[Id]) -> R<Vec<(Id, Id)>> {
        if !items.len().is_multiple_of(2) {
            return self.err("odd number of items for a dict");
        }
        Ok(items.chunks_exact(2).map(|c| (c[0], c[1])).collect())
    }

    fn str_of(&self, id: Id) -> Option<String> {
        match &self.objs[id as usize] {
            Obj::Str(s) => Some(s.clone()),
            _ => None,
        }
    }

    #[allow(clippy::too_many_lines, reason = "one arm per opcode reads best as one match")]
    fn run(&mut self) -> R<Id> {
        loop {
            self.op_start = self.pos;
            let op = match self.take(1) {
                Ok(b) => b[0],
                Err(_) => return self.err("ends without STOP (truncated)"),
            };
            match op {
                b'.' => {
                    // STOP
                    return self.pop();
                }
                0x80 => {
                    // PROTO
                    let p = self.u8()?;
                    if p > 5 {
                        return self.err(format!("unsupported pickle protocol {p}"));
                    }
                }
                0x95 => {
                    // FRAME: a length hint only.
                    self.u64()?;
                }
                b'(' => {
                    // MARK
                    if self.marks.len() >= self.max_items {
                        return self.err("too many nested MARKs");
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let t = self.top()?;
                    self.push(t)?;
                }
                b'N' => self.push_new(Obj::None)?,
                0x88 => self.push_new(Obj::Bool(true))?,
                0x89 => self.push_new(Obj::Bool(false))?,
                b'I' => {
                    let l = self.line_str()?;
                    let o = match l.as_str() {
                        "00" => Obj::Bool(false),
                        "01" => Obj::Bool(true),
                        s => match s.parse::<i64>() {
                            Ok(v) => Obj::Int(v),
                            Err(_) => return self.err(format!("bad INT `{s}`")),
                        },
                    };
                    self.push_new(o)?;
                }
                b'J' => {
                    let v = self.i32()?;
                    self.push_new(Obj::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push_new(Obj::Int(i64::from(v)))?;
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push_new(Obj::Int(i64::from(v)))?;
                }
                b'L' => {
                    let l = self.line_str()?;
                    let s = l.strip_suffix('L').unwrap_or(&l);
                    let o = match s.parse::<i64>() {
                        Ok(v) => Obj::Int(v),
                        Err(_)
                            if !s.is_empty()
                                && s.trim_start_matches('-')
                                    .bytes()
                                    .all(|b| b.is_ascii_digit()) =>
                        {
                            Obj::BigInt(s.as_bytes().to_vec())
                        }
                        Err(_) => return self.err(format!("bad LONG `{s}`")),
                    };
                    self.push_new(o)?;
                }
                0x8a | 0x8b => {
                    // LONG1 / LONG4: little-endian two's complement.
                    let n = if op == 0x8a {
                        u64::from(self.u8()?)
                    } else {
                        let n = self.i32()?;
                        match u64::try_from(n) {
                            Ok(n) => n,
                            Err(_) => return self.err("negative LONG4 length"),
                        }
                    };
                    let b = self.take_len(n)?.to_vec();
                    let o = if b.is_empty() {
                        Obj::Int(0)
                    } else if b.len() <= 8 {
                        let neg = b[b.len() - 1] & 0x80 != 0;
                        let mut a = if neg { [0xffu8; 8] } else { [0u8; 8] };
                        a[..b.len()].copy_from_slice(&b);
                        Obj::Int(i64::from_le_bytes(a))
                    } else {
                        Obj::BigInt(b)
                    };
                    self.push_new(o)?;
                }
                b'F' => {
                    let l = self.line_str()?;
                    match l.trim().parse::<f64>() {
                        Ok(v) => self.push_new(Obj::Float(v))?,
                        Err(_) => return self.err(format!("bad FLOAT `{l}`")),
                    }
                }
                b'G' => {
                    let b = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push_new(Obj::Float(f64::from_be_bytes(a)))?;
                }
                b'S' => {
                    let l = self.line()?.to_vec();
                    let o = match unquote(&l) {
                        Some(b) => bytes_or_str(b),
                        None => return self.err("STRING argument is not quoted"),
                    };
                    self.push_new(o)?;
                }
                b'T' | b'U' | b'B' | b'C' | 0x8e | 0x96 => {
                    let n = match op {
                        b'T' => match u64::try_from(self.i32()?) {
                            Ok(n) => n,
                            Err(_) => return self.err("negative BINSTRING length"),
                        },
                        b'U' | b'C' => u64::from(self.u8()?),
                        b'B' => u64::from(self.u32()?),
                        _ => self.u64()?,
                    };
                    let b = self.take_len(n)?.to_vec();
                    // Python-2 `str` (T/U) is text when it decodes; bytes otherwise.
                    let o = if matches!(op, b'T' | b'U') { bytes_or_str(b) } else { Obj::Bytes(b) };
                    self.push_new(o)?;
                }
                b'V' => {
                    let l = self.line()?.to_vec();
                    self.push_new(Obj::Str(raw_unicode_escape(&l)))?;
                }
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => u64::from(self.u32()?),
                        0x8c => u64::from(self.u8()?),
                        _ => self.u64()?,
                    };
                    let b = self.take_len(n)?;
                    let s = match std::str::from_utf8(b) {
                        Ok(s) => s.to_owned(),
                        Err(_) => return self.err("BINUNICODE is not UTF-8"),
                    };
                    self.push_new(Obj::Str(s))?;
                }
                b')' => self.push_new(Obj::Tuple(Vec::new()))?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.push_new(Obj::Tuple(items))?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.push_new(Obj::Tuple(items))?;
                }
                b']' => self.push_new(Obj::List(Vec::new()))?,
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push_new(Obj::List(items))?;
                }
                b'}' => self.push_new(Obj::Dict(Vec::new()))?,
                b'd' => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(&items)?;
                    self.push_new(Obj::Dict(pairs))?;
                }
                0x8f => self.push_new(Obj::Set(Vec::new()))?,
                0x91 => {
                    let items = self.pop_mark()?;
                    self.push_new(Obj::Set(items))?;
                }
                b'a' => {
                    let v = self.pop()?;
                    let t = self.top()?;
                    self.append_items(t, vec![v])?;
                }
                b'e' | 0x90 => {
                    let items = self.pop_mark()?;
                    let t = self.top()?;
                    self.append_items(t, items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let t = self.top()?;
                    self.set_items(t, vec![(k, v)])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let pairs = self.pairs(&items)?;
                    let t = self.top()?;
                    self.set_items(t, pairs)?;
                }
                b'p' => {
                    let l = self.line_str()?;
                    match l.parse::<u64>() {
                        Ok(k) => self.memo_put(k)?,
                        Err(_) => return self.err(format!("bad PUT key `{l}`")),
                    }
                }
                b'q' => {
                    let k = u64::from(self.u8()?);
                    self.memo_put(k)?;
                }
                b'r' => {
                    let k = u64::from(self.u32()?);
                    self.memo_put(k)?;
                }
                0x94 => {
                    let k = self.memo.len() as u64;
                    self.memo_put(k)?;
                }
                b'g' => {
                    let l = self.line_str()?;
                    match l.parse::<u64>() {
                        Ok(k) => self.memo_get(k)?,
                        Err(_) => return self.err(format!("bad GET key `{l}`")),
                    }
                }
                b'h' => {
                    let k = u64::from(self.u8()?);
                    self.memo_get(k)?;
                }
                b'j' => {
                    let k = u64::from(self.u32()?);
                    self.memo_get(k)?;
                }
                b'c' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    let g = self.global(module, name)?;
                    self.push(g)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Some(m), Some(n)) = (self.str_of(module), self.str_of(name)) else {
                        return self.err("STACK_GLOBAL needs two strings");
                    };
                    let g = self.global(m, n)?;
                    self.push(g)?;
                }
                b'i' => {
                    // INST module name: MARK args... -> call
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    let g = self.global(module, name)?;
                    let items = self.pop_mark()?;
                    let args = self.alloc(Obj::Tuple(items))?;
                    self.call(g, args)?;
                }
                b'o' => {
                    // OBJ: MARK cls args... -> call
                    let mut items = self.pop_mark()?;
                    if items.is_empty() {
                        return self.err("OBJ without a class");
                    }
                    let cls = items.remove(0);
                    let args = self.alloc(Obj::Tuple(items))?;
                    self.call(cls, args)?;
                }
                b'R' | 0x81 => {
                    // REDUCE / NEWOBJ
                    let args = self.pop()?;
                    let func = self.pop()?;
                    self.call(func, args)?;
                }
                0x92 => {
                    // NEWOBJ_EX cls args kwargs
                    let _kwargs = self.pop()?;
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    self.call(cls, args)?;
                }
                b'b' => {
                    let state = self.pop()?;
                    let t = self.top()?;
                    // BUILD on a plain container sets attributes Python would keep in
                    // `__dict__`; nothing a tensor reader needs.
                    if let Obj::Call(c) = &mut self.objs[t as usize] {
                        c.state = Some(state);
                    }
                }
                b'P' => {
                    let l = self.line()?.to_vec();
                    let s = self.alloc(bytes_or_str(l))?;
                    self.push_new(Obj::PersId(s))?;
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.push_new(Obj::PersId(pid))?;
                }
                0x82..=0x84 => {
                    let code = match op {
                        0x82 => u32::from(self.u8()?),
                        0x83 => u32::from(self.u16()?),
                        _ => self.u32()?,
                    };
                    // Extension codes name a global through copyreg's registry; report them as
                    // an (unknowable) global.
                    let g = self.global("copyreg".to_owned(), format!("<extension {code}>"))?;
                    self.push(g)?;
                }
                0x97 => return self.err("out-of-band buffer (NEXT_BUFFER) is not supported"),
                0x98 => {
                    self.top()?;
                }
                other => return self.err(format!("unknown opcode 0x{other:02x}")),
            }
        }
    }
}

fn bytes_or_str(b: Vec<u8>) -> Obj {
    match String::from_utf8(b) {
        Ok(s) => Obj::Str(s),
        Err(e) => Obj::Bytes(e.into_bytes()),
    }
}

/// Strips the quotes of a protocol-0 `STRING` argument and undoes the common escapes.
fn unquote(l: &[u8]) -> Option<Vec<u8>> {
    let q = *l.first()?;
    if !(q == b'\'' || q == b'"') || l.len() < 2 || l[l.len() - 1] != q {
        return None;
    }
    let inner = &l[1..l.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c == b'\\' && i + 1 < inner.len() {
            let e = inner[i + 1];
            i += 2;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'0' => out.push(0),
                b'x' if i + 2 <= inner.len() => {
                    let h = std::str::from_utf8(&inner[i..i + 2]).ok()?;
                    out.push(u8::from_str_radix(h, 16).ok()?);
                    i += 2;
                }
                other => out.push(other),
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    Some(out)
}

/// Decodes Python's `raw-unicode-escape` (`\uXXXX` / `\UXXXXXXXX`, other bytes latin-1).
fn raw_unicode_escape(l: &[u8]) -> String {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && i + 1 < l.len() && (l[i + 1] == b'u' || l[i + 1] == b'U') {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            if let Some(c) = l
                .get(i + 2..i + 2 + n)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
            {
                out.push(c);
                i += 2 + n;
                continue;
            }
        }
        out.push(char::from(l[i]));
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const LIM: PickleLimits = PickleLimits { max_items: 10_000 };

    fn run(b: &[u8]) -> (Result<Pickle, PickleError>, Vec<GlobalSeen>) {
        let mut seen = Vec::new();
        let r = read(b, LIM, &mut seen);
        (r, seen)
    }

    #[test]
    fn memoised_dict_filled_later_is_shared() {
        // {}, PUT 0, MARK 'a' 1 SETITEMS, POP, GET 0, STOP
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aK\x01u0h\x00.";
        let (r, _) = run(p);
        let pk = r.unwrap();
        match pk.get(pk.root) {
            Obj::Dict(d) => assert_eq!(d.len(), 1),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn global_reduce_is_recorded_not_called() {
        let p = b"cos\nsystem\n(S'echo hi'\ntR.";
        let (r, seen) = run(p);
        let pk = r.unwrap();
        assert_eq!(seen[0].module, "os");
        assert_eq!(seen[0].name, "system");
        assert!(matches!(pk.get(pk.root), Obj::Call(_)));
    }

    #[test]
    fn truncation_and_lengths_are_errors() {
        let (r, _) = run(b"\x80\x02X\xff\xff\xff\x7f");
        assert!(r.unwrap_err().what.contains("remain"));
        let (r, _) = run(b"\x80\x02K");
        assert!(r.is_err());
        let (r, _) = run(b"\x80\x02N");
        assert!(r.unwrap_err().what.contains("without STOP"));
        let (r, _) = run(b"\x80\x02h\x05.");
        assert!(r.unwrap_err().what.contains("never stored"));
        let (r, _) = run(b"\x80\x09.");
        assert!(r.is_err());
    }

    #[test]
    fn long_and_ints() {
        let (r, _) = run(b"\x80\x02\x8a\x02\xff\x7f.");
        let pk = r.unwrap();
        assert_eq!(pk.get(pk.root), &Obj::Int(0x7fff));
        let (r, _) = run(b"\x80\x02\x8a\x01\xff.");
        let pk = r.unwrap();
        assert_eq!(pk.get(pk.root), &Obj::Int(-1));
        let (r, _) = run(b"I01\n.");
        let pk = r.unwrap();
        assert_eq!(pk.get(pk.root), &Obj::Bool(true));
    }

    #[test]
    fn object_limit_holds() {
        let mut p = vec![0x80, 2, b'('];
        p.extend(std::iter::repeat_n(b'N', 20_000));
        p.extend_from_slice(b"l.");
        let (r, _) = run(&p);
        assert!(r.unwrap_err().what.contains("more than"));
    }

    #[test]
    fn stack_global_records() {
        let p = b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.";
        let (r, seen) = run(p);
        assert!(r.is_ok());
        assert_eq!((seen[0].module.as_str(), seen[0].name.as_str()), ("builtins", "eval"));
    }
}
