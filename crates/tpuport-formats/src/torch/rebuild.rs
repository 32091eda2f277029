//! From an unpickled value tree to tensor records: finds the `_rebuild_tensor*` /
//! `_rebuild_parameter*` calls torch writes for each tensor, reads their storage reference,
//! offset, size and stride, and names them by their path through the nested dicts and lists
//! (`model.conv1.weight`, `optimizer.state.0.exp_avg`). Nothing is called: the tree is only
//! read, after every global in it was checked against the allow-list.

use tpuport_model::DType;

use super::globals::{normalize_module, storage_dtype, torch_dtype};
use super::pickle::{Call, Id, Obj, Pickle};

/// A storage a tensor views (torch's persistent id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StorageRef {
    /// Storage key (zip: `data/<key>` member; legacy: position in the key list).
    pub key: String,
    /// Element type of a typed storage; `None` for `UntypedStorage` (bytes).
    pub dtype: Option<DType>,
    /// True for `torch.storage.UntypedStorage` (`numel` counts bytes).
    pub untyped: bool,
    /// Declared length: elements (typed) or bytes (untyped).
    pub numel: u64,
    /// Device the storage was saved from (`cpu`, `cuda:0`).
    pub location: String,
}

/// One tensor found in the tree.
#[derive(Clone, Debug)]
pub(crate) struct TensorRec {
    /// Dotted name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub shape: Vec<u64>,
    /// Strides in elements.
    pub stride: Vec<u64>,
    /// Offset into the storage, in elements.
    pub offset: u64,
    /// The storage.
    pub storage: StorageRef,
}

impl TensorRec {
    /// Elements the view reaches in its storage (offset + extent), `None` on overflow.
    pub(crate) fn extent(&self) -> Option<u64> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        let mut far = self.offset;
        for (&n, &s) in self.shape.iter().zip(&self.stride) {
            far = far.checked_add((n - 1).checked_mul(s)?)?;
        }
        far.checked_add(1)
    }

    /// True when the strides are those of a row-major (C-contiguous) array.
    pub(crate) fn is_contiguous(&self) -> bool {
        let mut expect = 1u64;
        for (&n, &s) in self.shape.iter().zip(&self.stride).rev() {
            if n != 1 && s != expect {
                return false;
            }
            expect = expect.saturating_mul(n);
        }
        true
    }
}

/// What flattening found.
#[derive(Debug, Default)]
pub(crate) struct Flat {
    /// Tensors, in pickle order.
    pub tensors: Vec<TensorRec>,
    /// Tensor-like entries that could not be represented: (name, why).
    pub skipped: Vec<(String, String)>,
    /// Non-tensor leaves (ints, strings, devices) that were passed over.
    pub other: u64,
}

/// Walks the tree from the root. `max_depth` bounds nesting, `max_visits` the work (shared
/// references could otherwise make a small pickle expand exponentially).
pub(crate) fn flatten(p: &Pickle, max_depth: usize, max_visits: u64) -> Result<Flat, String> {
    let mut w = Walker { p, max_depth, visits: 0, max_visits, out: Flat::default() };
    w.walk(p.root, String::new(), 0)?;
    Ok(w.out)
}

struct Walker<'p> {
    p: &'p Pickle,
    max_depth: usize,
    visits: u64,
    max_visits: u64,
    out: Flat,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") }
}

impl Walker<'_> {
    fn walk(&mut self, id: Id, name: String, depth: usize) -> Result<(), String> {
        self.visits += 1;
        if self.visits > self.max_visits {
            return Err(format!("value tree has more than {} entries", self.max_visits));
        }
        if depth > self.max_depth {
            return Err(format!("value tree is nested deeper than {}", self.max_depth));
        }
        if let Some(r) = self.tensor(id, 0) {
            match r {
                Ok(mut t) => {
                    t.name = name;
                    self.out.tensors.push(t);
                }
                Err(why) => self.out.skipped.push((name, why)),
            }
            return Ok(());
        }
        let p = self.p;
        match p.get(id) {
            Obj::Dict(items) => self.walk_items(items, &name, depth),
            Obj::Call(c) if !c.dict_items.is_empty() => {
                self.walk_items(&c.dict_items, &name, depth)
            }
            Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => {
                for (i, &e) in v.iter().enumerate() {
                    self.walk(e, join(&name, &i.to_string()), depth + 1)?;
                }
                Ok(())
            }
            _ => {
                self.out.other += 1;
                Ok(())
            }
        }
    }

    fn walk_items(&mut self, items: &[(Id, Id)], name: &str, depth: usize) -> Result<(), String> {
        for &(k, v) in items {
            let key = self.key_text(k);
            self.walk(v, join(name, &key), depth + 1)?;
        }
        Ok(())
    }

    fn key_text(&self, k: Id) -> String {
        match self.p.get(k) {
            Obj::Str(s) => s.clone(),
            Obj::Int(i) => i.to_string(),
            Obj::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Obj::None => "None".to_owned(),
            Obj::Float(f) => f.to_string(),
            Obj::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Obj::Tuple(v) => v.iter().map(|&e| self.key_text(e)).collect::<Vec<_>>().join("."),
            _ => "?".to_owned(),
        }
    }

    fn global(&self, id: Id) -> Option<(&str, &str)> {
        match self.p.get(id) {
            Obj::Global { module, name } => Some((normalize_module(module), name.as_str())),
            _ => None,
        }
    }

    fn call(&self, id: Id) -> Option<&Call> {
        match self.p.get(id) {
            Obj::Call(c) => Some(c),
            _ => None,
        }
    }

    fn tuple(&self, id: Id) -> Option<&[Id]> {
        match self.p.get(id) {
            Obj::Tuple(v) | Obj::List(v) => Some(v),
            _ => None,
        }
    }

    fn int(&self, id: Id) -> Option<i64> {
        match self.p.get(id) {
            Obj::Int(i) => Some(*i),
            Obj::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    fn uint(&self, id: Id, what: &str) -> Result<u64, String> {
        self.int(id)
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| format!("{what} is not a non-negative integer"))
    }

    /// A tuple of sizes, possibly wrapped in `torch.Size(...)`.
    fn dims(&self, id: Id, what: &str) -> Result<Vec<u64>, String> {
        let id = match self.call(id) {
            Some(c) if self.global(c.func) == Some(("torch", "Size")) => {
                self.tuple(c.args).and_then(|a| a.first().copied()).unwrap_or(id)
            }
            _ => id,
        };
        let Some(items) = self.tuple(id) else {
            return Err(format!("{what} is not a tuple"));
        };
        items.iter().map(|&e| self.uint(e, what)).collect()
    }

    /// `Some` when `id` is a tensor-rebuild call: the tensor (name left empty) or why it cannot
    /// be represented. `None` when it is not a tensor at all.
    fn tensor(&self, id: Id, depth: usize) -> Option<Result<TensorRec, String>> {
        let c = self.call(id)?;
        self.tensor_call(c.func, c.args, depth)
    }

    fn tensor_call(&self, func: Id, args: Id, depth: usize) -> Option<Result<TensorRec, String>> {
        let (m, n) = self.global(func)?;
        if depth > 4 {
            return Some(Err("tensor wrapped too deeply".to_owned()));
        }
        let a = self.tuple(args).unwrap_or(&[]);
        match (m, n) {
            ("torch._utils", "_rebuild_tensor" | "_rebuild_tensor_v2" | "_rebuild_tensor_v3") => {
                Some(self.plain_tensor(n, a))
            }
            ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
                match a.first() {
                    Some(&d) => self.tensor(d, depth + 1),
                    None => Some(Err("parameter without data".to_owned())),
                }
            }
            ("torch._tensor", "_rebuild_from_type_v2") => {
                // (func, new_type, args, state): the tensor is func(*args).
                match (a.first(), a.get(2)) {
                    (Some(&f), Some(&inner)) => self.tensor_call(f, inner, depth + 1),
                    _ => Some(Err("tensor subclass without a rebuild call".to_owned())),
                }
            }
            ("torch._utils", other) if other.starts_with("_rebuild_") => {
                let what = match other {
                    "_rebuild_qtensor" => "quantized tensor",
                    "_rebuild_sparse_tensor" => "sparse tensor",
                    "_rebuild_meta_tensor_no_storage" => "meta tensor without storage",
                    "_rebuild_wrapper_subclass" => "tensor subclass",
                    _ => "device tensor rebuilt from numpy/CPU data",
                };
                Some(Err(format!("{what} ({other}) is not supported")))
            }
            _ => None,
        }
    }

    fn plain_tensor(&self, func: &str, a: &[Id]) -> Result<TensorRec, String> {
        if a.len() < 4 {
            return Err(format!("{func} has {} arguments, expected at least 4", a.len()));
        }
        let storage = self.storage(a[0])?;
        let offset = self.uint(a[1], "storage offset")?;
        let shape = self.dims(a[2], "size")?;
        let stride = self.dims(a[3], "stride")?;
        if shape.len() != stride.len() {
            return Err(format!("size has {} dims but stride has {}", shape.len(), stride.len()));
        }
        let dtype = if func == "_rebuild_tensor_v3" {
            let Some((m, n)) = a.get(6).and_then(|&d| self.global(d)) else {
                return Err("_rebuild_tensor_v3 without a dtype".to_owned());
            };
            match (m, torch_dtype(n)) {
                ("torch", Some(Some(d))) => d,
                ("torch", Some(None)) => {
                    return Err(format!("dtype torch.{n} has no tpuport equivalent"));
                }
                _ => return Err(format!("dtype {m}.{n} is not a torch dtype")),
            }
        } else {
            match storage.dtype {
                Some(d) => d,
                None => return Err("untyped storage without a dtype".to_owned()),
            }
        };
        if let Some(sd) = storage.dtype
            && sd != dtype
        {
            return Err(format!("dtype {dtype} differs from its storage's {sd}"));
        }
        Ok(TensorRec { name: String::new(), dtype, shape, stride, offset, storage })
    }

    fn storage(&self, id: Id) -> Result<StorageRef, String> {
        let Obj::PersId(pid) = self.p.get(id) else {
            return Err("storage is not a persistent reference".to_owned());
        };
        let Some(t) = self.tuple(*pid) else {
            return Err("persistent id is not a tuple".to_owned());
        };
        if t.len() < 5 || !matches!(self.p.get(t[0]), Obj::Str(s) if s == "storage") {
            return Err("persistent id is not ('storage', type, key, location, numel)".to_owned());
        }
        if let Some(&vm) = t.get(5)
            && !matches!(self.p.get(vm), Obj::None)
        {
            return Err("storage views (legacy view_metadata) are not supported".to_owned());
        }
        let Some((m, n)) = self.global(t[1]) else {
            return Err("storage type is not a global".to_owned());
        };
        let (dtype, untyped) = match (m, n) {
            ("torch.storage", "UntypedStorage") => (None, true),
            ("torch" | "torch.cuda", s) => match storage_dtype(s) {
                Some(Some(d)) => (Some(d), false),
                Some(None) => return Err(format!("quantized storage {m}.{n} is not supported")),
                None => return Err(format!("{m}.{n} is not a storage type")),
            },
            _ => return Err(format!("{m}.{n} is not a storage type")),
        };
        let key = match self.p.get(t[2]) {
            Obj::Str(s) => s.clone(),
            Obj::Int(i) => i.to_string(),
            _ => return Err("storage key is not a string".to_owned()),
        };
        let location = match self.p.get(t[3]) {
            Obj::Str(s) => s.clone(),
            _ => String::new(),
        };
        let numel = self.uint(t[4], "storage size")?;
        Ok(StorageRef { key, dtype, untyped, numel, location })
    }
}

/// Every storage referenced anywhere in the tree, by key (legacy files need each storage's
/// element size to walk the raw storage section).
pub(crate) fn storages(p: &Pickle) -> Vec<StorageRef> {
    let w = Walker { p, max_depth: 0, visits: 0, max_visits: 0, out: Flat::default() };
    let mut out: Vec<StorageRef> = Vec::new();
    for (i, o) in p.objs.iter().enumerate() {
        if matches!(o, Obj::PersId(_))
            && let Ok(s) = w.storage(Id::try_from(i).unwrap_or(Id::MAX))
            && !out.iter().any(|e| e.key == s.key)
        {
            out.push(s);
        }
    }
    out
}
