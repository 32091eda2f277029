//! What the linter knows about a file before rules run: imports, frameworks, jitted and step
//! functions, and which names hold tensors.

use std::collections::{HashMap, HashSet};

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, ExprKind, FunctionDef, Module, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

use crate::scope::{MODULE, Scopes};

/// A framework detected from a file's imports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Framework {
    /// `torch` (and friends).
    PyTorch,
    /// `torch_xla` is already imported.
    TorchXla,
    /// `tensorflow` / `keras`.
    TensorFlow,
    /// `jax` / `flax` / `optax`.
    Jax,
}

impl Framework {
    /// Display name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Framework::PyTorch => "PyTorch",
            Framework::TorchXla => "PyTorch/XLA",
            Framework::TensorFlow => "TensorFlow/Keras",
            Framework::Jax => "JAX/Flax",
        }
    }
}

/// A function compiled by `jax.jit` / `jax.pmap` / `tf.function`.
#[derive(Clone, Debug)]
pub(crate) struct JitInfo {
    /// Span of the `jax.jit(...)` call or decorator expression.
    pub(crate) site: Span,
    /// Qualified name of the transform (`jax.jit`, `jax.pmap`, …).
    pub(crate) transform: String,
    /// `donate_argnums` / `donate_argnames` given.
    pub(crate) donates: bool,
    /// Names of static parameters.
    pub(crate) static_params: HashSet<String>,
}

/// A `key: value` entry of a dict display that reaches a call through `**name`.
#[derive(Clone, Debug)]
pub(crate) struct DictEntry {
    /// The key string.
    pub(crate) key: String,
    /// Span of the key (where a finding about the entry is reported).
    pub(crate) key_span: Span,
    /// The value's literal kind.
    pub(crate) value: Literal,
}

/// What a value is, as far as literals tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Literal {
    /// `True`.
    True,
    /// `False` / `None`.
    Falsy,
    /// `0`.
    Zero,
    /// Anything else.
    Other,
}

impl Literal {
    pub(crate) fn of(e: &Expr) -> Literal {
        match e.kind {
            ExprKind::Bool(true) => Literal::True,
            ExprKind::Bool(false) | ExprKind::NoneLit => Literal::Falsy,
            ExprKind::Int(Some(0)) => Literal::Zero,
            _ => Literal::Other,
        }
    }
}

/// The semantic model of one file.
#[derive(Debug, Default)]
pub(crate) struct Semantic {
    imports: HashMap<String, String>,
    frameworks: Vec<Framework>,
    pub(crate) jitted: HashMap<String, JitInfo>,
    pub(crate) step_functions: HashSet<String>,
    pub(crate) step_loops: HashSet<Span>,
    /// Names bound to tensors, with the scopes that bind them so (see [`crate::scope`]); keyed
    /// by name so a lookup does not allocate.
    pub(crate) tensor_names: HashMap<String, HashSet<u32>>,
    /// Names bound to an iterator of Python integers (`steps = trange(n)`): a loop over them,
    /// or over a `zip` with them, counts; it does not bind tensors.
    pub(crate) counters: HashSet<String>,
    /// String constants that reach names and option attributes (`backend = "nccl"`).
    pub(crate) consts: crate::constants::ConstStrings,
    /// Names (or `self.attr` chains) bound to a `torch.utils.data.DataLoader(...)`, parameters
    /// annotated as one, and parameters named like one (`dataloader`, `train_loader`); minus
    /// those rebound from `accelerator.prepare(...)`, which places batches itself.
    pub(crate) dataloaders: HashSet<String>,
    /// Names rebound from a `.prepare(...)` call (🤗 Accelerate).
    pub(crate) prepared: HashSet<String>,
    /// Dict displays bound to `(scope, name)`, with `.update(...)` merged in: what `**name`
    /// passes.
    dicts: HashMap<(u32, String), Vec<DictEntry>>,
    /// `(scope, name)`s whose value could not be followed (anything but a dict display or
    /// `dict(...)`).
    opaque_dicts: HashSet<(u32, String)>,
    /// Assignments of `(scope, name)`, in source order: (end of the statement, whether the value is a
    /// `tf.data` chain that prefetches after its last batching step, see
    /// [`crate::rules::input_pipeline::prefetch_before_batch`]).
    pub(crate) prefetched: HashMap<(u32, String), Vec<(u32, bool)>>,
    /// Bindings per scope.
    pub(crate) scopes: Scopes,
    /// Whether a `device` variable exists.
    pub(crate) has_device_var: bool,
    /// Whether the text calls `.prefetch(` anywhere.
    pub(crate) has_prefetch: bool,
    /// Whether the text mentions `TPUStrategy`.
    pub(crate) mentions_tpu_strategy: bool,
}

const TORCH_ROOTS: &[&str] =
    &["torch", "torchvision", "torchaudio", "torchtext", "lightning", "pytorch_lightning"];
const TF_ROOTS: &[&str] = &["tensorflow", "keras", "tf_keras"];
const JAX_ROOTS: &[&str] = &["jax", "jaxlib", "flax", "optax", "orbax", "equinox", "haiku"];

impl Semantic {
    /// Builds the model for `module`.
    #[must_use]
    pub(crate) fn build(module: &Module, source: &str) -> Semantic {
        let mut s = Semantic {
            has_prefetch: source.contains(".prefetch("),
            mentions_tpu_strategy: source.contains("TPUStrategy"),
            scopes: Scopes::build(module),
            consts: crate::constants::ConstStrings::build(module),
            ..Semantic::default()
        };
        let mut imports = ImportCollector::default();
        imports.visit_body(&module.body);
        s.imports = imports.map;
        let mut fw: Vec<Framework> = Vec::new();
        for root in imports.roots {
            let f = if root == "torch_xla" {
                Some(Framework::TorchXla)
            } else if TORCH_ROOTS.contains(&root.as_str()) {
                Some(Framework::PyTorch)
            } else if TF_ROOTS.contains(&root.as_str()) {
                Some(Framework::TensorFlow)
            } else if JAX_ROOTS.contains(&root.as_str()) {
                Some(Framework::Jax)
            } else {
                None
            };
            if let Some(f) = f {
                fw.push(f);
                if f == Framework::TorchXla {
                    fw.push(Framework::PyTorch);
                }
            }
        }
        fw.sort();
        fw.dedup();
        s.frameworks = fw;
        let mut defs = DefCollector { sem: &mut s };
        defs.visit_body(&module.body);
        for n in std::mem::take(&mut s.prepared) {
            s.dataloaders.remove(&n);
            s.prepared.insert(n);
        }
        s.merge_dict_updates(module);
        let mut loops = LoopCollector { sem: &mut s, found: Vec::new() };
        loops.visit_body(&module.body);
        let found = std::mem::take(&mut loops.found);
        s.step_loops = drop_epoch_loops(found);
        let mut tensors = TensorCollector { sem: &mut s, changed: false, scope: vec![MODULE] };
        for _ in 0..3 {
            tensors.changed = false;
            tensors.visit_body(&module.body);
            if !tensors.changed {
                break;
            }
        }
        s
    }

    /// Frameworks the file imports.
    #[must_use]
    pub(crate) fn frameworks(&self) -> &[Framework] {
        &self.frameworks
    }

    /// Whether the file imports `f`.
    #[must_use]
    pub(crate) fn uses(&self, f: Framework) -> bool {
        self.frameworks.contains(&f)
    }

    /// `torch.cuda.amp.GradScaler` for `GradScaler` imported from `torch.cuda.amp`, `np.float64`
    /// → `numpy.float64`; `None` when the chain does not start at an imported name.
    #[must_use]
    pub(crate) fn qualified_name(&self, expr: &Expr) -> Option<String> {
        // The attribute names, outermost first, gathered without a vector (hot: rules and the
        // tensor inference ask it of every call).
        let mut attrs: [&str; 16] = [""; 16];
        let mut n = 0;
        let mut cur = expr;
        let root = loop {
            match &cur.kind {
                ExprKind::Attribute { value, attr } => {
                    if n == attrs.len() {
                        return self.qualified_name_slow(expr);
                    }
                    attrs[n] = attr.name.as_str();
                    n += 1;
                    cur = value;
                }
                ExprKind::Name(name) => break name.as_str(),
                _ => return None,
            }
        };
        let head = self.imports.get(root)?;
        let len = head.len() + attrs[..n].iter().map(|a| a.len() + 1).sum::<usize>();
        let mut out = String::with_capacity(len);
        out.push_str(head);
        for a in attrs[..n].iter().rev() {
            out.push('.');
            out.push_str(a);
        }
        Some(out)
    }

    /// [`Self::qualified_name`] for chains of more than 16 attributes.
    fn qualified_name_slow(&self, expr: &Expr) -> Option<String> {
        let parts = expr.dotted_parts()?;
        let head = self.imports.get(parts[0])?;
        let mut out = head.clone();
        for p in &parts[1..] {
            out.push('.');
            out.push_str(p);
        }
        Some(out)
    }

    /// Whether `expr` resolves to one of `names` (qualified).
    #[must_use]
    pub(crate) fn resolves_to(&self, expr: &Expr, names: &[&str]) -> bool {
        // The attribute names of the chain, outermost first, without allocating (every rule
        // asks this of every call).
        let mut attrs: [&str; 16] = [""; 16];
        let mut n = 0;
        let mut cur = expr;
        let root = loop {
            match &cur.kind {
                ExprKind::Attribute { value, attr } => {
                    let Some(slot) = attrs.get_mut(n) else {
                        return self
                            .qualified_name(expr)
                            .is_some_and(|q| names.contains(&q.as_str()));
                    };
                    *slot = attr.name.as_str();
                    n += 1;
                    cur = value;
                }
                ExprKind::Name(name) => break name.as_str(),
                _ => return false,
            }
        };
        // Most calls are methods no wanted name ends with (`x.view`, `opt.step`): no lookup.
        if n > 0
            && !names
                .iter()
                .any(|w| w.strip_suffix(attrs[0]).is_some_and(|rest| rest.ends_with('.')))
        {
            return false;
        }
        let Some(head) = self.imports.get(root) else { return false };
        names.iter().any(|want| {
            let Some(mut rest) = want.strip_prefix(head.as_str()) else { return false };
            for a in attrs[..n].iter().rev() {
                let Some(r) = rest.strip_prefix('.').and_then(|r| r.strip_prefix(a)) else {
                    return false;
                };
                rest = r;
            }
            rest.is_empty()
        })
    }

    /// What the local name `name` was imported as (`tf` → `tensorflow`).
    #[must_use]
    pub(crate) fn binding(&self, name: &str) -> Option<&str> {
        self.imports.get(name).map(String::as_str)
    }

    /// Whether the local name `name` is bound by an import.
    #[must_use]
    pub(crate) fn is_imported(&self, name: &str) -> bool {
        self.imports.contains_key(name)
    }

    /// Whether the last assignment to `name` before `offset`, in the scope that binds it
    /// there, is a `tf.data` chain ending in `prefetch` after its last batching step.
    pub(crate) fn prefetched_at(&self, name: &str, offset: u32) -> bool {
        let here = self.scopes.scope_at(offset);
        let Some(scope) = self.scopes.lookup_chain(here).find(|s| self.scopes.binds(*s, name))
        else {
            return false;
        };
        self.prefetched.get(&(scope, name.to_owned())).is_some_and(|v| {
            let before = v.iter().rfind(|(at, _)| *at < offset);
            // A function body runs after the module binds its globals: use the last one.
            before.or_else(|| if scope == here { None } else { v.last() }).is_some_and(|x| x.1)
        })
    }

    /// Whether `call` marks a training / evaluation step.
    pub(crate) fn is_step_call(&self, call: &Call) -> bool {
        let func = &*call.func;
        if let ExprKind::Attribute { value, attr } = &func.kind {
            let recv = value.last_name().unwrap_or("").to_ascii_lowercase();
            match attr.name.as_str() {
                "backward" => return true,
                "step" => {
                    return (recv.contains("opt") || recv.contains("scaler"))
                        && !recv.contains("sched");
                }
                "apply_gradients" | "train_on_batch" | "minimize" => return true,
                "gradient" if recv.contains("tape") => return true,
                "run" if recv.contains("strategy") => return true,
                _ => {}
            }
        }
        if self.resolves_to(
            func,
            &[
                "torch_xla.core.xla_model.optimizer_step",
                "torch_xla.core.xla_model.mark_step",
                "torch_xla.sync",
                "optax.apply_updates",
            ],
        ) {
            return true;
        }
        match func.last_name() {
            Some(n) => {
                (func.as_name().is_some() || func.root_name() == Some("self"))
                    && (self.jitted.contains_key(n)
                        || self.step_functions.contains(n)
                        || is_step_name(n))
            }
            None => false,
        }
    }

    /// Whether `expr` (resolved) is a tensor-producing library call.
    fn is_tensor_library_call(&self, call: &Call) -> bool {
        let q = self.qualified_name(&call.func).unwrap_or_default();
        ["torch.", "jax.numpy.", "jax.nn.", "jax.lax.", "tensorflow.", "jax.random."]
            .iter()
            .any(|p| q.starts_with(p))
            && !q.starts_with("torch.cuda")
    }

    /// Whether the name `n`, read in `scope`, holds a tensor: the innermost scope that binds
    /// it decides.
    fn is_tensor_name(&self, n: &str, scope: u32) -> bool {
        for s in self.scopes.lookup_chain(scope) {
            if self.tensor_names.get(n).is_some_and(|scopes| scopes.contains(&s)) {
                return true;
            }
            if self.scopes.binds(s, n) {
                return false;
            }
        }
        false
    }

    /// Whether `expr`, read in `scope`, evaluates to a tensor (heuristic; `extra` adds names).
    pub(crate) fn is_tensor_expr(&self, expr: &Expr, extra: &HashSet<String>, scope: u32) -> bool {
        let rec = |e: &Expr| self.is_tensor_expr(e, extra, scope);
        match &expr.kind {
            ExprKind::Name(n) => self.is_tensor_name(n, scope) || extra.contains(n),
            ExprKind::Attribute { value, attr } => {
                !STATIC_ATTRS.contains(&attr.name.as_str()) && rec(value)
            }
            ExprKind::Subscript { value, .. } => rec(value),
            ExprKind::Call(call) => {
                if let ExprKind::Attribute { value, attr } = &call.func.kind {
                    if HOST_METHODS.contains(&attr.name.as_str())
                        || STATIC_ATTRS.contains(&attr.name.as_str())
                    {
                        return false;
                    }
                    if rec(value) {
                        return true;
                    }
                }
                self.is_tensor_library_call(call)
            }
            ExprKind::BinOp { left, right, .. } => rec(left) || rec(right),
            ExprKind::UnaryOp { operand, .. } => rec(operand),
            ExprKind::Compare { left, ops, comparators } => {
                ops.iter().all(|o| {
                    !matches!(
                        o,
                        tpuport_python::ast::CmpOp::Is
                            | tpuport_python::ast::CmpOp::IsNot
                            | tpuport_python::ast::CmpOp::In
                            | tpuport_python::ast::CmpOp::NotIn
                    )
                }) && (rec(left) || comparators.iter().any(&rec))
            }
            ExprKind::BoolOp { values, .. } => values.iter().any(rec),
            _ => false,
        }
    }

    /// The dict entries `call` receives through `**name` splats; `None` when a splat is not a
    /// name bound to dict displays only.
    pub(crate) fn splat_entries(&self, call: &Call) -> Option<Vec<&DictEntry>> {
        let mut out = Vec::new();
        let here = self.scopes.scope_at(call.func.span.start);
        for k in call.keywords.iter().filter(|k| k.arg.is_none()) {
            let name = k.value.as_name()?;
            let scope = self.scopes.lookup_chain(here).find(|s| self.scopes.binds(*s, name))?;
            let key = (scope, name.to_owned());
            if self.opaque_dicts.contains(&key) {
                return None;
            }
            out.extend(self.dicts.get(&key)?);
        }
        Some(out)
    }

    /// Adds the entries of `.update(...)`-merged dicts (`a.update(b)`, `a.update({...})`), in
    /// the scope of the `update` call.
    fn merge_dict_updates(&mut self, module: &Module) {
        type Update = (u32, String, Option<String>, Vec<DictEntry>);
        struct Find<'s>(&'s Scopes, Vec<Update>);
        impl<'a> Visitor<'a> for Find<'_> {
            fn visit_stmt(&mut self, s: &'a Stmt) {
                if let StmtKind::Expr(e) = &s.kind
                    && let Some(call) = e.as_call()
                    && let ExprKind::Attribute { value, attr } = &call.func.kind
                    && attr.name == "update"
                    && let Some(target) = value.as_name()
                    && let [arg] = call.args.as_slice()
                {
                    let scope = self.0.scope_at(s.span.start);
                    match &arg.kind {
                        ExprKind::Name(n) => {
                            self.1.push((scope, target.to_owned(), Some(n.clone()), vec![]));
                        }
                        _ => {
                            let mut entries = Vec::new();
                            if dict_entries(arg, &mut entries) {
                                self.1.push((scope, target.to_owned(), None, entries));
                            }
                        }
                    }
                }
                walk_stmt(self, s);
            }
            fn visit_expr(&mut self, _e: &'a Expr) {}
        }
        let mut f = Find(&self.scopes, Vec::new());
        f.visit_body(&module.body);
        let updates = f.1;
        for _ in 0..2 {
            for (scope, target, from, entries) in &updates {
                let mut add = entries.clone();
                if let Some(n) = from {
                    match self.dicts.get(&(*scope, n.clone())) {
                        Some(e) => add.extend(e.iter().cloned()),
                        None => continue,
                    }
                }
                let slot = self.dicts.entry((*scope, target.clone())).or_default();
                for e in add {
                    if !slot.iter().any(|x| x.key_span == e.key_span) {
                        slot.push(e);
                    }
                }
            }
        }
    }
}

/// Collects the entries of a dict display, of `dict(k=v)`, or of both sides of
/// `{...} if c else {...}`; `false` when `e` is anything else.
fn dict_entries(e: &Expr, out: &mut Vec<DictEntry>) -> bool {
    match &e.kind {
        ExprKind::Dict(items) => {
            for i in items {
                match i.key.as_ref().and_then(|k| k.as_str().map(|s| (s, k.span))) {
                    Some((key, key_span)) => out.push(DictEntry {
                        key: key.to_owned(),
                        key_span,
                        value: Literal::of(&i.value),
                    }),
                    None => return false,
                }
            }
            true
        }
        ExprKind::Call(c) if c.func.as_name() == Some("dict") && c.args.is_empty() => {
            for k in &c.keywords {
                let Some(arg) = &k.arg else { return false };
                out.push(DictEntry {
                    key: arg.name.clone(),
                    key_span: arg.span,
                    value: Literal::of(&k.value),
                });
            }
            true
        }
        ExprKind::IfExp { body, orelse, .. } => {
            dict_entries(body, out) && dict_entries(orelse, out)
        }
        _ => false,
    }
}

/// Drops loops over `range(...)` that hold another step loop: they are epoch loops, even when
/// they also call a step function once (an extra step after the inner loop).
fn drop_epoch_loops(mut found: Vec<(Span, bool)>) -> HashSet<Span> {
    found.sort_by_key(|(s, _)| (s.start, std::cmp::Reverse(s.end)));
    let mut out = HashSet::new();
    for (i, (span, over_range)) in found.iter().enumerate() {
        let holds_inner = found[i + 1..]
            .iter()
            .take_while(|(s, _)| s.start < span.end)
            .any(|(s, _)| s.end <= span.end);
        if !(*over_range && holds_inner) {
            out.insert(*span);
        }
    }
    out
}

/// Attributes that are static metadata, not device values.
const STATIC_ATTRS: &[&str] = &[
    "shape",
    "ndim",
    "dtype",
    "device",
    "size",
    "dim",
    "numel",
    "is_cuda",
    "requires_grad",
    "sharding",
    "nbytes",
];
/// Methods that already return a host value.
const HOST_METHODS: &[&str] = &["item", "tolist", "numpy", "cpu", "__len__"];

/// Whether a function name reads like a step function (`train_step`, `p_train_step`, `eval_step`).
pub(crate) fn is_step_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with("_step")
        || n == "train_step"
        || n.ends_with("train_step")
        || n == "step_fn"
        || n.ends_with("_step_fn")
}

#[derive(Default)]
struct ImportCollector {
    map: HashMap<String, String>,
    roots: HashSet<String>,
}

impl<'a> Visitor<'a> for ImportCollector {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::Import(names) => {
                for a in names {
                    let root = a.name.split('.').next().unwrap_or("").to_owned();
                    self.roots.insert(root.clone());
                    match &a.asname {
                        Some(asname) => self.map.insert(asname.clone(), a.name.clone()),
                        None => self.map.insert(root.clone(), root),
                    };
                }
            }
            StmtKind::ImportFrom { module: Some(m), level: 0, names } => {
                self.roots.insert(m.split('.').next().unwrap_or("").to_owned());
                for a in names {
                    let local = a.asname.clone().unwrap_or_else(|| a.name.clone());
                    self.map.insert(local, format!("{m}.{}", a.name));
                }
            }
            _ => walk_stmt(self, stmt),
        }
    }
    fn visit_expr(&mut self, _expr: &'a Expr) {}
}

/// Finds jitted functions, step functions, DataLoader variables and `device` variables.
struct DefCollector<'s> {
    sem: &'s mut Semantic,
}

const DATALOADER: &[&str] =
    &["torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"];

/// Whether a parameter or variable name reads like a data loader (`dataloader`, `train_loader`).
pub(crate) fn is_loader_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with("loader") || n.starts_with("loader_")
}

/// Every name a target binds.
fn target_names(t: &Expr, out: &mut Vec<String>) {
    match &t.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| target_names(x, out)),
        ExprKind::Starred(x) => target_names(x, out),
        _ => {}
    }
}

const JIT_NAMES: &[&str] = &[
    "jax.jit",
    "jax.pmap",
    "flax.nnx.jit",
    "equinox.filter_jit",
    "tensorflow.function",
    "torch_xla.compile",
];

impl DefCollector<'_> {
    /// `jax.jit`, `partial(jax.jit, ...)` or `jax.jit(...)` used as a decorator.
    fn jit_from_decorator(&self, d: &Expr, f: &FunctionDef) -> Option<JitInfo> {
        if let Some(q) = self.sem.qualified_name(d)
            && JIT_NAMES.contains(&q.as_str())
        {
            return Some(JitInfo {
                site: d.span,
                transform: q,
                donates: false,
                static_params: HashSet::new(),
            });
        }
        let call = d.as_call()?;
        let (transform, opts) = if self.sem.resolves_to(&call.func, &["functools.partial"]) {
            let first = call.args.first()?;
            (self.sem.qualified_name(first)?, call)
        } else {
            (self.sem.qualified_name(&call.func)?, call)
        };
        if !JIT_NAMES.contains(&transform.as_str()) {
            return None;
        }
        Some(JitInfo {
            site: d.span,
            transform,
            donates: donates(opts),
            static_params: static_params(opts, Some(f)),
        })
    }
}

fn donates(call: &Call) -> bool {
    call.keyword("donate_argnums").is_some() || call.keyword("donate_argnames").is_some()
}

fn static_params(call: &Call, f: Option<&FunctionDef>) -> HashSet<String> {
    let mut out = HashSet::new();
    if let Some(k) = call.keyword("static_argnames") {
        collect_strs(&k.value, &mut out);
    }
    for name in ["static_argnums", "static_broadcasted_argnums"] {
        if let (Some(k), Some(f)) = (call.keyword(name), f) {
            let mut idx = Vec::new();
            collect_ints(&k.value, &mut idx);
            for i in idx {
                if let Some(p) = usize::try_from(i).ok().and_then(|i| f.params.get(i)) {
                    out.insert(p.name.name.clone());
                }
            }
        }
    }
    out
}

fn collect_strs(e: &Expr, out: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Str(s) => {
            out.insert(s.clone());
        }
        ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| collect_strs(x, out)),
        _ => {}
    }
}

fn collect_ints(e: &Expr, out: &mut Vec<i64>) {
    match &e.kind {
        ExprKind::Int(Some(i)) => out.push(*i),
        ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| collect_ints(x, out)),
        _ => {}
    }
}

impl<'a> Visitor<'a> for DefCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::FunctionDef(f) => {
                if let Some(info) = f.decorators.iter().find_map(|d| self.jit_from_decorator(d, f))
                {
                    self.sem.jitted.insert(f.name.name.clone(), info);
                }
                let mut finder =
                    StepCallFinder { sem: self.sem, found: false, descend_loops: false };
                finder.visit_body(&f.body);
                if finder.found
                    || (is_step_name(&f.name.name) && self.sem.jitted.contains_key(&f.name.name))
                {
                    self.sem.step_functions.insert(f.name.name.clone());
                }
                if f.params.iter().any(|p| p.name.name == "device") {
                    self.sem.has_device_var = true;
                }
                if self.sem.uses(Framework::PyTorch) {
                    for p in &f.params {
                        let annotated = p
                            .annotation
                            .as_ref()
                            .is_some_and(|a| self.sem.resolves_to(a, DATALOADER));
                        if annotated || is_loader_name(&p.name.name) {
                            self.sem.dataloaders.insert(p.name.name.clone());
                        }
                    }
                }
            }
            StmtKind::Assign { targets, value } => {
                // `self.loader = loader` keeps a loader under an attribute chain.
                if let Some(src) = value.dotted()
                    && self.sem.dataloaders.contains(&src)
                {
                    self.sem.dataloaders.extend(targets.iter().filter_map(Expr::dotted));
                }
                if let [t] = targets.as_slice()
                    && let Some(n) = t.as_name()
                {
                    let key = (self.sem.scopes.scope_at(stmt.span.start), n.to_owned());
                    use crate::rules::input_pipeline::prefetch_before_batch::{Scan, scan};
                    let prefetched = match scan(value) {
                        Scan::Prefetch(..) => true,
                        // `ds = ds.shuffle(8)` keeps what `ds` was.
                        Scan::Root(r) => self.sem.prefetched_at(r, stmt.span.start),
                        Scan::Other => false,
                    };
                    self.sem
                        .prefetched
                        .entry(key.clone())
                        .or_default()
                        .push((stmt.span.end, prefetched));
                    let mut entries = Vec::new();
                    if dict_entries(value, &mut entries) {
                        self.sem.dicts.entry(key).or_default().extend(entries);
                    } else {
                        self.sem.opaque_dicts.insert(key);
                    }
                }
                if let Some(call) = value.as_call()
                    // 🤗 Accelerate's `accelerator.prepare(...)`, Lightning Fabric's
                    // `fabric.setup_dataloaders(...)`: the loaders they return place batches on
                    // the device themselves.
                    && crate::rules::helpers::method(call)
                        .is_some_and(|(_, m)| m == "prepare" || m == "setup_dataloaders")
                {
                    for t in targets {
                        let mut names = Vec::new();
                        target_names(t, &mut names);
                        self.sem.prepared.extend(names);
                    }
                }
                if let Some(call) = value.as_call() {
                    let names: Vec<&str> = targets.iter().filter_map(|t| t.last_name()).collect();
                    if let Some(q) = self.sem.qualified_name(&call.func)
                        && JIT_NAMES.contains(&q.as_str())
                    {
                        for n in &names {
                            self.sem.jitted.insert(
                                (*n).to_owned(),
                                JitInfo {
                                    site: value.span,
                                    transform: q.clone(),
                                    donates: donates(call),
                                    static_params: HashSet::new(),
                                },
                            );
                        }
                    }
                    if self.sem.resolves_to(&call.func, DATALOADER) {
                        self.sem.dataloaders.extend(targets.iter().filter_map(Expr::dotted));
                    }
                }
                if targets.iter().any(|t| t.as_name() == Some("device")) {
                    self.sem.has_device_var = true;
                }
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }
    fn visit_expr(&mut self, _e: &'a Expr) {}
}

/// Looks for a step call in a body, not entering nested functions, classes or (optionally) loops.
pub(crate) struct StepCallFinder<'s> {
    pub(crate) sem: &'s Semantic,
    pub(crate) found: bool,
    pub(crate) descend_loops: bool,
}

impl<'a> Visitor<'a> for StepCallFinder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::FunctionDef(_) | StmtKind::ClassDef(_) => {}
            StmtKind::For(_) | StmtKind::While(_) if !self.descend_loops => {}
            _ => walk_stmt(self, stmt),
        }
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found {
            return;
        }
        if let ExprKind::Lambda { .. } = expr.kind {
            return;
        }
        if let Some(call) = expr.as_call()
            && self.sem.is_step_call(call)
        {
            self.found = true;
            return;
        }
        walk_expr(self, expr);
    }
}

struct LoopCollector<'s> {
    sem: &'s mut Semantic,
    /// Step loops found, with whether they iterate `range(...)`.
    found: Vec<(Span, bool)>,
}

impl LoopCollector<'_> {
    /// A loop that steps a model by what it does, whatever it is called: it iterates a data
    /// loader (directly, or through `enumerate` / `tqdm` / a logger's `log_every(loader, ..)`)
    /// and runs a model on the batch (a call to a model-like name, or a batch moved to the
    /// device with `.to(..)` / `.cuda()`); or it steps an environment (`env.step(action)`), where
    /// each iteration runs the policy once.
    fn is_eval_loop(&self, iter: Option<&Expr>, body: &[Stmt]) -> bool {
        let is_loader = |e: &Expr| {
            e.dotted().is_some_and(|d| {
                self.sem.dataloaders.contains(&d)
                    || is_loader_name(d.rsplit('.').next().unwrap_or(""))
            })
        };
        let over_loader = iter.is_some_and(|i| {
            is_loader(i) || i.as_call().is_some_and(|c| c.args.iter().take(2).any(is_loader))
        });
        let mut f = LoopBody { model: false, device: false, env: false };
        f.visit_body(body);
        (over_loader && (f.model || f.device)) || f.env
    }
}

/// What a loop body does, for [`LoopCollector::is_eval_loop`] (nested functions not entered).
struct LoopBody {
    model: bool,
    device: bool,
    env: bool,
}

impl<'a> Visitor<'a> for LoopBody {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        if !matches!(s.kind, StmtKind::FunctionDef(_) | StmtKind::ClassDef(_)) {
            walk_stmt(self, s);
        }
    }
    fn visit_expr(&mut self, e: &'a Expr) {
        if let Some(c) = e.as_call() {
            let last = c.func.last_name().unwrap_or("");
            if (c.func.as_name().is_some() || c.func.root_name() == Some("self"))
                && is_model_name(last)
            {
                self.model = true;
            }
            if let ExprKind::Attribute { value, attr } = &c.func.kind {
                match attr.name.as_str() {
                    "to" | "cuda" => self.device = true,
                    "step" => {
                        let recv = value.last_name().unwrap_or("").to_ascii_lowercase();
                        if recv == "env" || recv == "envs" || recv.ends_with("_env") {
                            self.env = true;
                        }
                    }
                    _ => {}
                }
            }
        }
        walk_expr(self, e);
    }
}

/// Whether a callee name reads like a model (`model`, `net`, `netD`, `self.model`).
fn is_model_name(n: &str) -> bool {
    let n = n.to_ascii_lowercase();
    n.contains("model") || n == "net" || n.starts_with("net") || n.ends_with("net")
}

impl<'a> Visitor<'a> for LoopCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let (body, iter) = match &stmt.kind {
            StmtKind::For(f) => (Some(&f.body), Some(&f.iter)),
            StmtKind::While(w) => (Some(&w.body), None),
            _ => (None, None),
        };
        if let Some(body) = body {
            let mut finder = StepCallFinder { sem: self.sem, found: false, descend_loops: false };
            finder.visit_body(body);
            let eval = !finder.found && self.is_eval_loop(iter, body);
            if finder.found || eval {
                let over_range =
                    iter.and_then(Expr::as_call).is_some_and(|c| c.func.as_name() == Some("range"));
                self.found.push((stmt.span, over_range));
            }
        }
        walk_stmt(self, stmt);
    }
    fn visit_expr(&mut self, _e: &'a Expr) {}
}

/// Whether iterating `e` yields Python integers: `range(...)`, `itertools.count()`,
/// `tqdm.trange(...)`, a progress bar over one of those (`tqdm(range(n))`), or a name bound to
/// one (`steps = trange(start, total)`).
fn counts(e: &Expr, counters: &HashSet<String>) -> bool {
    if let Some(n) = e.as_name() {
        return counters.contains(n);
    }
    let Some(c) = e.as_call() else { return false };
    match c.func.last_name() {
        Some("range" | "count" | "trange") => true,
        Some("tqdm") => c.args.first().is_some_and(|a| counts(a, counters)),
        _ => false,
    }
}

/// Collects names bound to tensors, per scope: receivers of `.backward()`, results of model /
/// loss / library / jitted calls, arithmetic on those, and the batch variables of step loops
/// (not their counters: `range`, `enumerate` and `zip(range(..), ..)` give Python ints).
struct TensorCollector<'s> {
    sem: &'s mut Semantic,
    changed: bool,
    scope: Vec<u32>,
}

impl TensorCollector<'_> {
    fn current(&self) -> u32 {
        self.scope.last().copied().unwrap_or(MODULE)
    }

    fn add(&mut self, name: &str) {
        let scope = self.current();
        let scopes = match self.sem.tensor_names.get_mut(name) {
            Some(s) => s,
            None => self.sem.tensor_names.entry(name.to_owned()).or_default(),
        };
        if scopes.insert(scope) {
            self.changed = true;
        }
    }

    fn add_target(&mut self, t: &Expr) {
        match &t.kind {
            ExprKind::Name(n) => {
                let n = n.clone();
                self.add(&n);
            }
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().for_each(|x| self.add_target(x)),
            ExprKind::Starred(x) => self.add_target(x),
            _ => {}
        }
    }

    fn value_is_tensor(&self, value: &Expr) -> bool {
        if let Some(call) = value.as_call() {
            let name = call.func.last_name().unwrap_or("").to_ascii_lowercase();
            let modelish =
                ["model", "net", "criterion", "loss", "forward", "apply_fn", "encoder", "decoder"]
                    .iter()
                    .any(|k| name.contains(k));
            let jitted = call.func.last_name().is_some_and(|n| {
                self.sem.jitted.contains_key(n) || self.sem.step_functions.contains(n)
            });
            if (modelish && !name.contains("load") && !name.contains("save")) || jitted {
                return true;
            }
        }
        self.sem.is_tensor_expr(value, &HashSet::new(), self.current())
    }

    /// The batch variables of a step loop's target, without its counters.
    fn add_loop_target(&mut self, target: &Expr, iter: &Expr) {
        let call = iter.as_call();
        let name = call.and_then(|c| c.func.as_name());
        let counters = self.sem.counters.clone();
        let is_counter = |e: &Expr| counts(e, &counters);
        match (name, &target.kind) {
            (Some("range"), _) => {}
            (Some("enumerate"), ExprKind::Tuple(v)) => {
                let inner = call.and_then(|c| c.args.first());
                if !inner.is_some_and(is_counter) {
                    v.iter().skip(1).for_each(|x| self.add_target(x));
                }
            }
            (Some("zip"), ExprKind::Tuple(v)) => {
                let args = call.map(|c| c.args.as_slice()).unwrap_or_default();
                for (x, a) in v.iter().zip(args) {
                    if !is_counter(a) {
                        self.add_target(x);
                    }
                }
            }
            _ => self.add_target(target),
        }
    }
}

impl<'a> Visitor<'a> for TensorCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::FunctionDef(_) | StmtKind::ClassDef(_) => {
                self.scope.push(stmt.span.start);
                walk_stmt(self, stmt);
                self.scope.pop();
                return;
            }
            StmtKind::Assign { targets, value } if self.value_is_tensor(value) => {
                targets.iter().for_each(|t| self.add_target(t));
            }
            StmtKind::Assign { targets, value } if counts(value, &self.sem.counters) => {
                for n in targets.iter().filter_map(Expr::as_name) {
                    self.sem.counters.insert(n.to_owned());
                }
            }
            StmtKind::AugAssign { target, value } if self.value_is_tensor(value) => {
                self.add_target(target)
            }
            StmtKind::For(f) if self.sem.step_loops.contains(&stmt.span) => {
                self.add_loop_target(&f.target, &f.iter);
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Some(call) = expr.as_call()
            && let ExprKind::Attribute { value, attr } = &call.func.kind
            && attr.name == "backward"
            && let Some(n) = value.as_name()
        {
            let n = n.to_owned();
            self.add(&n);
        }
        walk_expr(self, expr);
    }
}
