//! What the linter knows about a file before rules run: imports, frameworks, jitted and step
//! functions, and which names hold tensors.

use std::collections::{HashMap, HashSet};

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, ExprKind, FunctionDef, Module, Stmt, StmtKind};
use tpuport_python::visitor::{Visitor, walk_expr, walk_stmt};

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

/// The semantic model of one file.
#[derive(Debug, Default)]
pub(crate) struct Semantic {
    imports: HashMap<String, String>,
    frameworks: Vec<Framework>,
    pub(crate) jitted: HashMap<String, JitInfo>,
    pub(crate) step_functions: HashSet<String>,
    pub(crate) step_loops: HashSet<Span>,
    pub(crate) tensor_names: HashSet<String>,
    /// Names bound to a `torch.utils.data.DataLoader(...)`.
    pub(crate) dataloaders: HashSet<String>,
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
        let mut loops = LoopCollector { sem: &mut s };
        loops.visit_body(&module.body);
        let mut tensors = TensorCollector { sem: &mut s, changed: false };
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
        self.qualified_name(expr).is_some_and(|q| names.contains(&q.as_str()))
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

    /// Whether `expr` evaluates to a tensor (heuristic, flow-insensitive; `extra` adds names).
    pub(crate) fn is_tensor_expr(&self, expr: &Expr, extra: &HashSet<String>) -> bool {
        match &expr.kind {
            ExprKind::Name(n) => self.tensor_names.contains(n) || extra.contains(n),
            ExprKind::Attribute { value, attr } => {
                !STATIC_ATTRS.contains(&attr.name.as_str()) && self.is_tensor_expr(value, extra)
            }
            ExprKind::Subscript { value, .. } => self.is_tensor_expr(value, extra),
            ExprKind::Call(call) => {
                if let ExprKind::Attribute { value, attr } = &call.func.kind {
                    if HOST_METHODS.contains(&attr.name.as_str())
                        || STATIC_ATTRS.contains(&attr.name.as_str())
                    {
                        return false;
                    }
                    if self.is_tensor_expr(value, extra) {
                        return true;
                    }
                }
                self.is_tensor_library_call(call)
            }
            ExprKind::BinOp { left, right, .. } => {
                self.is_tensor_expr(left, extra) || self.is_tensor_expr(right, extra)
            }
            ExprKind::UnaryOp { operand, .. } => self.is_tensor_expr(operand, extra),
            ExprKind::Compare { left, ops, comparators } => {
                ops.iter().all(|o| {
                    !matches!(
                        o,
                        tpuport_python::ast::CmpOp::Is
                            | tpuport_python::ast::CmpOp::IsNot
                            | tpuport_python::ast::CmpOp::In
                            | tpuport_python::ast::CmpOp::NotIn
                    )
                }) && (self.is_tensor_expr(left, extra)
                    || comparators.iter().any(|c| self.is_tensor_expr(c, extra)))
            }
            ExprKind::BoolOp { values, .. } => values.iter().any(|v| self.is_tensor_expr(v, extra)),
            _ => false,
        }
    }
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
            }
            StmtKind::Assign { targets, value } => {
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
                    if self.sem.resolves_to(
                        &call.func,
                        &["torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"],
                    ) {
                        self.sem.dataloaders.extend(names.iter().map(|n| (*n).to_owned()));
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
}

impl<'a> Visitor<'a> for LoopCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let body = match &stmt.kind {
            StmtKind::For(f) => Some(&f.body),
            StmtKind::While(w) => Some(&w.body),
            _ => None,
        };
        if let Some(body) = body {
            let mut finder = StepCallFinder { sem: self.sem, found: false, descend_loops: false };
            finder.visit_body(body);
            if finder.found {
                self.sem.step_loops.insert(stmt.span);
            }
        }
        walk_stmt(self, stmt);
    }
    fn visit_expr(&mut self, _e: &'a Expr) {}
}

/// Collects names bound to tensors: receivers of `.backward()`, results of model / loss /
/// library / jitted calls, arithmetic on those, and the batch variables of step loops.
struct TensorCollector<'s> {
    sem: &'s mut Semantic,
    changed: bool,
}

impl TensorCollector<'_> {
    fn add(&mut self, name: &str) {
        if self.sem.tensor_names.insert(name.to_owned()) {
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
        self.sem.is_tensor_expr(value, &HashSet::new())
    }
}

impl<'a> Visitor<'a> for TensorCollector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match &stmt.kind {
            StmtKind::Assign { targets, value } if self.value_is_tensor(value) => {
                targets.iter().for_each(|t| self.add_target(t));
            }
            StmtKind::AugAssign { target, value } if self.value_is_tensor(value) => {
                self.add_target(target)
            }
            StmtKind::For(f) if self.sem.step_loops.contains(&stmt.span) => {
                let iter_is_range =
                    f.iter.as_call().is_some_and(|c| c.func.as_name() == Some("range"));
                let enumerate = f.iter.as_call().filter(|c| c.func.as_name() == Some("enumerate"));
                if let Some(e) = enumerate {
                    let inner_range = e
                        .args
                        .first()
                        .and_then(Expr::as_call)
                        .is_some_and(|c| c.func.as_name() == Some("range"));
                    if let (ExprKind::Tuple(v), false) = (&f.target.kind, inner_range) {
                        v.iter().skip(1).for_each(|x| self.add_target(x));
                    }
                } else if !iter_is_range {
                    self.add_target(&f.target);
                }
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
