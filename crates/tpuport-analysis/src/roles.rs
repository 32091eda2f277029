//! Argument roles: which arguments of the entry function are weights, which are data and which
//! are state, for modules that take their weights as arguments (StableHLO from `jax.jit(f)
//! .lower(params, x)`, `jax.export`, Keras `stateless_call`, Flax `apply`).
//!
//! Each argument is decided by the first rule that applies, in this order (one function per
//! rule below; the report names the rule that decided):
//!
//! 1. [`rule_user`]: `--data-args` lists the data arguments by index or name; every other
//!    argument is a weight or state.
//! 2. [`rule_unused`]: an argument no op reads is state (dropout seeds kept with
//!    `keep_unused`); it carries no batch.
//! 3. [`rule_name`]: the name the exporter left (`jax.arg_info`, the `loc("params['dense']
//!    ['kernel']")` of `jax.export` modules): batch statistics, caches and seeds are state,
//!    `kernel`/`bias`/`embedding`/… leaves are weights, `x`/`tokens`/`input_ids`/… are data.
//! 4. [`rule_aliasing`]: `tf.aliasing_output` (a donated buffer updated in place) marks state,
//!    unless the argument is also a matmul / convolution weight (a training step's
//!    parameters) and is not returned unchanged (Keras's learning rate).
//! 5. [`rule_weight_side`]: the weight side of a dot (right-hand operand) or a convolution
//!    (kernel), through converts, reshapes, transposes, slices and calls.
//! 6. [`rule_gather_table`]: the table a `gather` reads rows of (an embedding).
//! 7. [`rule_integer`]: integer and boolean arguments are data (token ids, masks, positions),
//!    except raw PRNG keys.
//! 8. [`rule_activation_side`]: the input of a convolution, or the left side of a dot whose
//!    other side is a weight argument, is data.
//! 9. [`rule_broadcast`]: a float argument broadcast onto a larger tensor is a bias or a scale
//!    (a vector is followed through the arithmetic that folds it with other vectors first).
//! 10. [`rule_no_batch`]: a scalar or a raw PRNG key (`uint32[2]`) is state: a step counter, a
//!     metric's running total, an RNG stream a training step returns updated.
//! 11. [`rule_sharding`]: in a partitioned module where some arguments of rank >= 2 are split on
//!     their leading dimension and others are replicated, the split ones are data.
//! 12. [`rule_many_layers`]: a float argument read by many ops that are not weight uses (an
//!     attention bias, a mask in float) is data that flows to every layer.
//! 13. [`rule_position`]: JAX flattens `f(params, x)` in order, so arguments before the first
//!     data argument are weights and arguments after the last weight are data; with no data
//!     argument found, the last argument is the data.
//!
//! An ONNX graph needs none of these: its inputs are the data and its initializers the weights
//! ([`Rule::OnnxGraph`], reported as `onnx-graph`; `--data-args` still applies first).
//!
//! The batch is the most common leading dimension of the data arguments; the sequence is the
//! second dimension of an integer data argument of rank 2 (token ids).

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;
use tpuport_model::{Attr, DType, Graph, Model, ModelFormat, Node, ValueId, ValueKind};

use crate::taxonomy;

/// What an argument is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A trainable parameter: counted as a parameter, read once per step.
    Weight,
    /// Per-sample input: carries the batch.
    Data,
    /// Carried between steps but not trained (batch statistics, caches, seeds, unused).
    State,
}

impl Role {
    /// The report spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Weight => "weight",
            Role::Data => "data",
            Role::State => "state",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule that decided an argument's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// `--data-args`.
    User,
    /// Read by no op.
    Unused,
    /// The exporter's name for it.
    Name,
    /// `tf.aliasing_output`.
    Aliasing,
    /// `mhlo.sharding` / `sdy.sharding`: split on the leading dim vs replicated.
    Sharding,
    /// Right-hand side of a dot, kernel of a convolution.
    WeightSide,
    /// Table of a gather.
    GatherTable,
    /// Integer or boolean element type.
    Integer,
    /// Input of a convolution, left side of a dot against a weight.
    ActivationSide,
    /// Broadcast onto a larger tensor.
    Broadcast,
    /// A scalar or a PRNG key: no batch to carry.
    NoBatch,
    /// Read by many non-weight ops.
    ManyLayers,
    /// Where it sits in the signature.
    Position,
    /// An ONNX graph: its inputs are the data, its initializers the weights.
    OnnxGraph,
}

impl Rule {
    /// What the rule means, for the report line.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Rule::User => "named by --data-args",
            Rule::Unused => "read by no op",
            Rule::Name => "the exporter's argument name",
            Rule::Aliasing => "tf.aliasing_output: updated in place",
            Rule::Sharding => "split on its leading dim while other arguments are replicated",
            Rule::WeightSide => "weight side of a dot / convolution",
            Rule::GatherTable => "table read by gather (embedding)",
            Rule::Integer => "integer or boolean argument (ids, masks, positions)",
            Rule::ActivationSide => "input of a convolution / left side of a dot against a weight",
            Rule::Broadcast => "broadcast onto activations (bias, scale)",
            Rule::NoBatch => "a scalar or a PRNG key: carries no batch",
            Rule::ManyLayers => "float argument read by many non-weight ops",
            Rule::Position => "position: JAX passes the parameters before the data",
            Rule::OnnxGraph => {
                "onnx-graph: an ONNX model's graph inputs are data, its initializers the weights"
            }
        }
    }
}

/// One argument of the entry function with its role.
#[derive(Clone, Debug, Serialize)]
pub struct ArgRole {
    /// Position in the signature.
    pub index: usize,
    /// `%argN`.
    pub value: String,
    /// The exporter's name (`params['dense']['kernel']`, `x`), when it left one.
    pub name: Option<String>,
    /// Element type name.
    pub dtype: String,
    /// Static shape, when known.
    pub shape: Option<Vec<u64>>,
    /// The role.
    pub role: Role,
    /// The rule that decided it.
    pub rule: Rule,
    /// Read through `gather` (an embedding table).
    pub gather_read: bool,
    /// Read through `gather` and also used as a dot operand: an embedding tied to the output
    /// projection (one tensor, counted once).
    pub tied: bool,
    /// Used the way a weight is (dot right-hand side, convolution kernel, gather table),
    /// whatever its role.
    pub weight_use: bool,
    /// The graph value (not serialized).
    #[serde(skip)]
    pub id: ValueId,
}

impl ArgRole {
    /// `name` when there is one, else `%argN`.
    #[must_use]
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.value)
    }

    /// Elements (0 when the shape is not static).
    #[must_use]
    pub fn elements(&self) -> u64 {
        self.shape.as_ref().map_or(0, |s| crate::cost::sat(s))
    }
}

/// Counts of one role.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoleTotal {
    /// Arguments.
    pub args: u64,
    /// Elements.
    pub elements: u64,
    /// Bytes at the stored element type (bf16 as 2 bytes).
    pub bytes: u64,
}

/// Where a model keeps its weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightsIn {
    /// Function arguments (StableHLO from JAX, Keras, Flax): the rules decide which.
    #[default]
    Arguments,
    /// ONNX initializers: every graph input is data.
    Initializers,
}

/// Every argument's role, and the batch and sequence they give.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ArgRoles {
    /// Where the weights are: arguments, or ONNX initializers (then `weights` counts the float
    /// initializers of rank >= 1, and `args` holds only the graph inputs).
    pub weights_in: WeightsIn,
    /// Per argument, in signature order.
    pub args: Vec<ArgRole>,
    /// Weights.
    pub weights: RoleTotal,
    /// Data.
    pub data: RoleTotal,
    /// State.
    pub state: RoleTotal,
    /// The batch: the most common leading dimension of the data arguments.
    pub batch: Option<u64>,
    /// The sequence length of token inputs.
    pub sequence: Option<u64>,
    /// Which data argument the batch was read from and how it was decided, one line.
    pub batch_from: Option<String>,
    /// The index of that argument.
    pub batch_arg: Option<usize>,
    /// Rule → arguments it decided, for the report line.
    pub decided_by: Vec<(Rule, u64)>,
    /// Things the reader should know (disagreeing leading dims, no data argument).
    pub notes: Vec<String>,
}

impl ArgRoles {
    /// The arguments with `role`.
    pub fn with(&self, role: Role) -> impl Iterator<Item = &ArgRole> {
        self.args.iter().filter(move |a| a.role == role)
    }

    /// Whether `v` is an argument of this role.
    #[must_use]
    pub fn is(&self, v: ValueId, role: Role) -> bool {
        self.args.iter().any(|a| a.id == v && a.role == role)
    }

    /// Tied tables (each counted once).
    pub fn tied(&self) -> impl Iterator<Item = &ArgRole> {
        self.args.iter().filter(|a| a.tied)
    }

    /// Whether `batch` looks read from a weight rather than from the data: the argument it
    /// came from is used as a weight (a dot's right-hand side, a kernel, a gather table — an
    /// embedding's vocabulary), or only the position rule made it data and `batch` is a
    /// dimension of a weight argument. Returns the weight-like argument.
    #[must_use]
    pub fn batch_is_weight_dim(&self, batch: u64) -> Option<&ArgRole> {
        if batch <= 1 {
            return None;
        }
        let from = self.batch_arg.and_then(|i| self.args.get(i));
        if let Some(a) = from.filter(|a| a.weight_use) {
            return Some(a);
        }
        let weak = from.is_none_or(|a| matches!(a.rule, Rule::Position | Rule::ManyLayers));
        if !weak {
            return None;
        }
        self.with(Role::Weight).find(|a| a.shape.as_ref().is_some_and(|s| s.contains(&batch)))
    }
}

/// Selects an argument by position or by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgSelector {
    /// Position in the signature (`320`).
    Index(usize),
    /// `%arg320`, the exporter's name (`x`, `params['x']`), or a name's last component.
    Name(String),
}

impl std::str::FromStr for ArgSelector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty argument selector".to_owned());
        }
        Ok(s.parse::<usize>().map_or_else(|_| ArgSelector::Name(s.to_owned()), ArgSelector::Index))
    }
}

/// Options of [`assign`].
#[derive(Clone, Debug, Default)]
pub struct RoleOptions {
    /// The data arguments as the user names them (`--data-args`); empty: decide by the rules.
    pub data_args: Vec<ArgSelector>,
}

/// A `--data-args` entry that names no argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownArgument {
    /// The selector as given.
    pub given: String,
    /// How many arguments the entry function has.
    pub arguments: usize,
}

impl fmt::Display for UnknownArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--data-args: `{}` names no argument of the entry function ({} arguments: give an index 0..{} or an argument name)",
            self.given,
            self.arguments,
            self.arguments.saturating_sub(1)
        )
    }
}

impl std::error::Error for UnknownArgument {}

/// How one argument is read: the op and the operand position, after following converts,
/// reshapes, transposes, slices, broadcasts and calls.
#[derive(Clone, Debug)]
struct Use {
    /// Short op name.
    op: String,
    /// Operand position.
    operand: usize,
    /// The other operand of a binary op, when it is an entry argument (its index).
    other_arg: Option<usize>,
    /// A `broadcast_in_dim` that adds elements or dimensions.
    widens: bool,
}

/// Ops that pass an argument's values on for the purposes of its role.
fn passes_on(op: &str) -> bool {
    matches!(
        op,
        "convert"
            | "reshape"
            | "transpose"
            | "bitcast_convert"
            | "copy"
            | "slice"
            | "dynamic_slice"
            | "broadcast_in_dim"
            | "optimization_barrier"
            | "sharding_constraint"
            | "custom_call"
            | "pad"
    )
}

/// Per graph: value → (node index, operand index) of its readers.
struct Readers<'m> {
    model: &'m Model,
    by_graph: HashMap<usize, HashMap<ValueId, Vec<(usize, usize)>>>,
}

impl<'m> Readers<'m> {
    fn of(&mut self, g: &Graph) -> &HashMap<ValueId, Vec<(usize, usize)>> {
        let key = std::ptr::from_ref(g) as usize;
        self.by_graph.entry(key).or_insert_with(|| {
            let mut m: HashMap<ValueId, Vec<(usize, usize)>> = HashMap::new();
            for (i, n) in g.nodes.iter().enumerate() {
                for (k, v) in n.inputs.iter().enumerate() {
                    if let Some(v) = v {
                        m.entry(*v).or_default().push((i, k));
                    }
                }
            }
            m
        })
    }

    /// Every use of `start` in `g`, following pass-through ops, calls and loop bodies.
    fn uses(&mut self, g: &'m Graph, start: ValueId, args: &HashMap<ValueId, usize>) -> Vec<Use> {
        let mut out = Vec::new();
        let mut seen: HashSet<(usize, usize, ValueId)> = HashSet::new();
        // (graph, value, depth, the call that entered this graph: its caller and node).
        type Ret<'m> = Option<(&'m Graph, &'m Node)>;
        let start_shape = crate::cost::shape(g, start);
        let vector = start_shape.as_ref().is_some_and(|s| s.len() <= 1);
        let start_elems = start_shape.map(|s| crate::cost::sat(&s));
        // The last field: a broadcast was passed (the value has met the activations).
        let mut work: Vec<(&'m Graph, ValueId, usize, Ret<'m>, bool)> =
            vec![(g, start, 0, None, false)];
        let entry = std::ptr::from_ref(&self.model.graph) as usize;
        while let Some((g, v, depth, ret, bcast)) = work.pop() {
            let gk = std::ptr::from_ref(g) as usize;
            let rk = ret.map_or(0, |(_, n)| std::ptr::from_ref(n) as usize);
            if !seen.insert((gk, rk, v)) || depth > 64 || seen.len() > 100_000 {
                continue;
            }
            // Returned from a called function: go on at the call's result.
            if let Some((caller, call)) = ret {
                for (j, o) in g.outputs.iter().enumerate() {
                    if *o == v
                        && let Some(&r) = call.outputs.get(j)
                    {
                        work.push((caller, r, depth + 1, None, bcast));
                    }
                }
            }
            let readers = self.of(g).get(&v).cloned().unwrap_or_default();
            for (ni, k) in readers {
                let n: &'m Node = &g.nodes[ni];
                let op = taxonomy::short_name(&n.op);
                if op == "call" || n.op == "func.call" {
                    let callee = n.attr("callee").and_then(Attr::as_str).unwrap_or("");
                    if let Some(body) = self.model.function(callee.trim_start_matches('@'))
                        && let Some(&a) = body.inputs.get(k)
                    {
                        work.push((body, a, depth + 1, Some((g, n)), bcast));
                        continue;
                    }
                }
                if op == "while" {
                    for (_, body) in &n.subgraphs {
                        if let Some(&a) = body.inputs.get(k) {
                            work.push((body, a, depth + 1, None, bcast));
                        }
                    }
                    continue;
                }
                // A broadcast widens when it adds elements or dimensions (a bias at batch 1).
                let widens = op == "broadcast_in_dim" && {
                    let (i, o) = (
                        crate::cost::shape(g, v),
                        n.outputs.first().and_then(|o| crate::cost::shape(g, *o)),
                    );
                    i.zip(o).is_some_and(|(i, o)| {
                        crate::cost::sat(&o) > crate::cost::sat(&i) || o.len() > i.len()
                    })
                };
                let other = n.inputs.get(1 - k.min(1)).copied().flatten();
                let other_arg = if gk == entry && n.inputs.len() == 2 {
                    other.and_then(|o| root_arg(g, o, args))
                } else {
                    None
                };
                out.push(Use { op: op.clone(), operand: k, other_arg, widens });
                // A vector argument (bias, norm statistic) combined elementwise with other
                // vectors before its broadcast (a batch norm folded to one scale and shift) is
                // followed through that arithmetic.
                let same_size_elementwise = vector
                    && !bcast
                    && taxonomy::lookup(&op).family == taxonomy::OpFamily::Elementwise
                    && n.outputs
                        .first()
                        .and_then(|o| crate::cost::shape(g, *o))
                        .is_some_and(|s| Some(crate::cost::sat(&s)) == start_elems);
                if passes_on(&op) || same_size_elementwise {
                    let b = bcast || op == "broadcast_in_dim";
                    for o in &n.outputs {
                        work.push((g, *o, depth + 1, ret, b));
                    }
                }
            }
        }
        out
    }
}

/// The entry argument a value is (through pass-through ops), if any.
fn root_arg(g: &Graph, mut v: ValueId, args: &HashMap<ValueId, usize>) -> Option<usize> {
    for _ in 0..32 {
        if let Some(&i) = args.get(&v) {
            return Some(i);
        }
        let p = g.value(v).producer?;
        let n = g.node(p);
        if !passes_on(&taxonomy::short_name(&n.op)) {
            return None;
        }
        v = n.inputs.first().copied().flatten()?;
    }
    None
}

/// An argument being decided.
struct Cand<'a> {
    index: usize,
    name: Option<String>,
    dtype: Option<DType>,
    shape: Option<Vec<u64>>,
    uses: Vec<Use>,
    attrs: Vec<(&'a str, &'a Attr)>,
    /// Returned as it came in (a result is the argument itself): nothing updates it.
    passthrough: bool,
    decided: Option<(Role, Rule)>,
}

impl Cand<'_> {
    fn attr(&self, key: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(k, _)| *k == key).map(|(_, a)| *a)
    }
    fn is_float(&self) -> bool {
        self.dtype.is_some_and(DType::is_float)
    }
    fn used_as(&self, op: &[&str], operand: usize) -> bool {
        self.uses.iter().any(|u| u.operand == operand && op.contains(&u.op.as_str()))
    }
}

const DOTS: &[&str] = &["dot_general", "dot", "matmul", "gemm", "einsum"];
const CONVS: &[&str] = &["convolution", "conv", "convtranspose"];
const GATHERS: &[&str] = &["gather", "dynamic_gather", "torch_index_select"];

/// Rule 1: the user's `--data-args`. Listed arguments are data; an unlisted argument that a
/// later rule calls data becomes state (the user said it is not data).
///
pub fn rule_user(
    sel: &[ArgSelector],
    index: usize,
    value: &str,
    name: Option<&str>,
) -> Option<Role> {
    if sel.is_empty() {
        return None;
    }
    let hit = sel.iter().any(|s| match s {
        ArgSelector::Index(i) => *i == index,
        ArgSelector::Name(n) => {
            n == value
                || name.is_some_and(|x| {
                    x == n || tokens(x).last().is_some_and(|t| t == n) || x.starts_with(&**n)
                })
        }
    });
    hit.then_some(Role::Data)
}

fn check_selectors(
    sel: &[ArgSelector],
    cands: &[Cand<'_>],
    g: &Graph,
) -> Result<(), UnknownArgument> {
    for s in sel {
        let found = cands.iter().any(|c| {
            let value = &g.value(g.inputs[c.index]).name;
            rule_user(std::slice::from_ref(s), c.index, value, c.name.as_deref()).is_some()
        });
        if !found {
            let given = match s {
                ArgSelector::Index(i) => i.to_string(),
                ArgSelector::Name(n) => n.clone(),
            };
            return Err(UnknownArgument { given, arguments: cands.len() });
        }
    }
    Ok(())
}

/// Rule 2: an argument no op reads is state (it carries no batch and no parameter).
fn rule_unused(c: &Cand<'_>) -> Option<Role> {
    c.uses.is_empty().then_some(Role::State)
}

/// The identifier-like parts of an exporter name: `params['dense']['kernel'].value` gives
/// `params`, `dense`, `kernel`, `value`.
fn tokens(name: &str) -> Vec<String> {
    name.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
        .filter(|t| !t.is_empty() && !t.chars().all(|ch| ch.is_ascii_digit()))
        .map(str::to_ascii_lowercase)
        .filter(|t| t != "value")
        .collect()
}

/// Rule 3: the exporter's name. State: batch statistics (`batch_stats`, `moving_mean`,
/// `running_var`, …), caches, seeds, optimizer moments. Weights: a `kernel`, `weight`, `bias`,
/// `scale`, `embedding`(s), `gamma`/`beta` leaf, or anything under `params`. Data: the usual
/// input names (`x`, `inputs`, `images`, `tokens`, `input_ids`, masks, …) as the whole name
/// or its first component.
#[must_use]
pub fn rule_name(name: &str) -> Option<Role> {
    const STATE: &[&str] = &[
        "batch_stats",
        "moving_mean",
        "moving_variance",
        "moving_var",
        "running_mean",
        "running_var",
        "num_batches_tracked",
        "cache",
        "kv_cache",
        "cached_key",
        "cached_value",
        "cache_index",
        "seed_generator_state",
        "seed",
        "rng",
        "rngs",
        "opt_state",
        "opt",
        "optimizer",
        "mu",
        "nu",
        "count",
        "non_trainable",
        "non_trainable_variables",
    ];
    const WEIGHT: &[&str] = &[
        "params",
        "param",
        "kernel",
        "weight",
        "weights",
        "bias",
        "scale",
        "embedding",
        "embeddings",
        "gamma",
        "beta",
        "trainable",
        "trainable_variables",
    ];
    const DATA: &[&str] = &[
        "x",
        "inputs",
        "input",
        "images",
        "image",
        "pixel_values",
        "tokens",
        "token_ids",
        "input_ids",
        "ids",
        "padding_mask",
        "attention_mask",
        "mask",
        "segment_ids",
        "position_ids",
        "positions",
        "batch",
        "data",
        "features",
        "labels",
        "targets",
    ];
    // Names no weight carries, wherever they sit in the path.
    const STRONG_DATA: &[&str] = &[
        "token_ids",
        "input_ids",
        "pixel_values",
        "padding_mask",
        "attention_mask",
        "segment_ids",
    ];
    let t = tokens(name);
    let first = t.first()?;
    // Metric accumulators a training step carries (NNX's `train_metrics.loss.total`).
    if t.iter().any(|x| STATE.contains(&x.as_str()) || x == "metrics" || x.ends_with("_metrics")) {
        return Some(Role::State);
    }
    // Flax batch norm statistics sit under `batch_stats` (caught above); NNX's are `mean`/`var`
    // leaves of a norm layer.
    if t.len() > 1 && matches!(t.last().map(String::as_str), Some("mean" | "var")) {
        return Some(Role::State);
    }
    if t.len() == 1 && DATA.contains(&first.as_str()) {
        return Some(Role::Data);
    }
    if t.iter().any(|x| WEIGHT.contains(&x.as_str())) {
        return Some(Role::Weight);
    }
    if DATA.contains(&first.as_str()) || t.iter().any(|x| STRONG_DATA.contains(&x.as_str())) {
        return Some(Role::Data);
    }
    None
}

/// The name an exporter gave argument `i`: `jax.arg_info`, else the `loc("...")` name of a
/// `jax.export` module.
fn arg_name(g: &Graph, i: usize) -> Option<String> {
    let find = |key: String| g.attrs.iter().find(|(k, _)| *k == key).map(|(_, a)| a);
    if let Some(Attr::Str(s)) = find(format!("arg{i}:jax.arg_info")) {
        return Some(s.clone());
    }
    let loc = match find(format!("arg{i}:tpuport.loc"))? {
        Attr::Str(s) | Attr::Text(s) => s.clone(),
        _ => return None,
    };
    // Only a plain name (`loc("x")`), not a file position or a call-site chain.
    let s = loc.trim();
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('"') && !inner.contains(".py")).then(|| inner.replace("\\'", "'"))
}

/// Rule 4: `tf.aliasing_output` marks a buffer updated in place: state (batch statistics,
/// optimizer moments, step counters, caches), unless the argument is also used the way a
/// parameter is — a matmul / convolution weight, or a float broadcast onto the activations (a
/// bias, a norm scale): a training step donating its parameters.
fn rule_aliasing(c: &Cand<'_>) -> Option<Role> {
    c.attr("tf.aliasing_output")?;
    // Donated and returned unchanged is carried, not trained: Keras passes its optimizer's
    // learning rate this way, a float scalar broadcast onto every update.
    let param = !c.passthrough
        && (c.used_as(DOTS, 1) || c.used_as(CONVS, 1) || rule_broadcast(c).is_some());
    Some(if param { Role::Weight } else { Role::State })
}

/// Whether a sharding annotation splits the leading dimension (`{devices=[8,1]<=[8]}`,
/// `#sdy.sharding<@mesh, [{"data"}, {}]>`); `None` when there is none.
fn splits_leading(attr: &str) -> Option<bool> {
    if attr.contains("#sdy.sharding") {
        let body = &attr[attr.find('[')? + 1..];
        let first = body.split('}').next()?;
        return Some(first.contains('"'));
    }
    if attr.contains("replicated") || attr.contains("maximal") {
        return Some(false);
    }
    let i = attr.find("devices=[")?;
    let first = attr[i + 9..].split([',', ']']).next()?.trim().parse::<u64>().ok()?;
    Some(first > 1)
}

/// Rule 5: in a partitioned module where some arguments are split on their leading dimension
/// and others are not, the split ones are data (data parallelism shards the batch). Decides
/// only the split arguments: an unsplit one may still be a sharded weight.
fn rule_sharding(c: &Cand<'_>, mixed: bool) -> Option<Role> {
    if !mixed {
        return None;
    }
    let a = c.attr("mhlo.sharding").or_else(|| c.attr("sdy.sharding"))?;
    let text = match a {
        Attr::Str(s) | Attr::Text(s) => s,
        _ => return None,
    };
    // A weight split on its leading dim (FSDP) would also match: only arguments whose uses
    // did not make them weights reach here, and vectors (a tensor-parallel bias) never.
    (c.shape.as_ref().is_some_and(|s| s.len() >= 2) && splits_leading(text)?).then_some(Role::Data)
}

/// Rule 6: the weight side of a dot (its right-hand operand) or of a convolution (its
/// kernel), in any element type (int8 weights too).
fn rule_weight_side(c: &Cand<'_>) -> Option<Role> {
    (c.used_as(DOTS, 1) || c.used_as(CONVS, 1)).then_some(Role::Weight)
}

/// Rule 7: the table a `gather` reads rows from (embeddings, positional tables).
fn rule_gather_table(c: &Cand<'_>) -> Option<Role> {
    (c.is_float() && c.used_as(GATHERS, 0)).then_some(Role::Weight)
}

/// Rule 8: integer and boolean arguments are data: token ids, masks, positions, labels. Not a
/// raw JAX PRNG key (see [`rule_no_batch`]).
fn rule_integer(c: &Cand<'_>) -> Option<Role> {
    (c.dtype.is_some_and(|d| !d.is_float())
        && c.shape.as_ref().is_some_and(|s| !s.is_empty())
        && !prng_key(c))
    .then_some(Role::Data)
}

/// A `uint32[2]` argument: how a jitted step receives a threefry PRNG key (`nnx.Rngs` streams,
/// `jax.random.key_data`).
fn prng_key(c: &Cand<'_>) -> bool {
    c.dtype == Some(DType::U32) && c.shape.as_deref() == Some(&[2][..])
}

/// Rule 10: what no earlier rule decided and cannot carry a batch is state: a scalar (a step
/// counter, a metric's running total, an RNG stream's count) or a raw PRNG key. A training step
/// that returns these updated without donating them leaves no aliasing to tell.
fn rule_no_batch(c: &Cand<'_>) -> Option<Role> {
    (c.shape.as_ref().is_some_and(Vec::is_empty) || prng_key(c)).then_some(Role::State)
}

/// Rule 9: the input of a convolution, or the left side of a dot whose right side is another
/// argument, is data.
fn rule_activation_side(c: &Cand<'_>) -> Option<Role> {
    let conv_in = c.used_as(CONVS, 0);
    let dot_lhs = c
        .uses
        .iter()
        .any(|u| DOTS.contains(&u.op.as_str()) && u.operand == 0 && u.other_arg.is_some());
    (conv_in || dot_lhs).then_some(Role::Data)
}

/// Rule 10: a float argument broadcast onto a larger tensor (a bias, a norm scale, a
/// positional table added to every sample).
fn rule_broadcast(c: &Cand<'_>) -> Option<Role> {
    (c.is_float() && c.uses.iter().any(|u| u.op == "broadcast_in_dim" && u.widens))
        .then_some(Role::Weight)
}

/// Rule 11: a float argument read by many ops (8 or more) that are not weight uses: an
/// attention bias or a float mask that flows to every layer is data.
fn rule_many_layers(c: &Cand<'_>) -> Option<Role> {
    let reads = c.uses.iter().filter(|u| !passes_on(&u.op)).count();
    (c.is_float() && reads >= 8).then_some(Role::Data)
}

/// Rule 12: the position pattern. JAX flattens `f(params, x)` leaf by leaf in argument order,
/// so undecided arguments before the first data argument are weights and those after the last
/// weight are data; with no data argument at all, the last argument is the data.
fn rule_position(
    index: usize,
    first_data: Option<usize>,
    last_weight: Option<usize>,
    n: usize,
) -> Role {
    match (first_data, last_weight) {
        (Some(d), _) if index < d => Role::Weight,
        (_, Some(w)) if index > w => Role::Data,
        (None, _) if index + 1 == n => Role::Data,
        _ => Role::Weight,
    }
}

/// Decides every argument of the entry function.
///
/// # Errors
/// A `--data-args` selector that names no argument.
pub fn assign(model: &Model, opts: &RoleOptions) -> Result<ArgRoles, UnknownArgument> {
    let g = &model.graph;
    // ONNX keeps its weights in initializers: no rule is needed, and reading every use of
    // every input of a large graph would be wasted.
    let onnx = model.format == ModelFormat::Onnx;
    let args: HashMap<ValueId, usize> = g.inputs.iter().enumerate().map(|(i, v)| (*v, i)).collect();
    let mut readers = Readers { model, by_graph: HashMap::new() };
    let mut cands: Vec<Cand<'_>> = Vec::with_capacity(g.inputs.len());
    for (i, v) in g.inputs.iter().enumerate() {
        let val = g.value(*v);
        let prefix = format!("arg{i}:");
        let attrs =
            g.attrs.iter().filter_map(|(k, a)| k.strip_prefix(&prefix).map(|k| (k, a))).collect();
        cands.push(Cand {
            index: i,
            name: arg_name(g, i),
            dtype: val.ty.dtype,
            shape: val.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed),
            uses: if onnx { Vec::new() } else { readers.uses(g, *v, &args) },
            attrs,
            passthrough: g.outputs.contains(v),
            decided: None,
        });
    }
    check_selectors(&opts.data_args, &cands, g)?;
    let user = !opts.data_args.is_empty();
    let mixed = {
        let mut split = (false, false);
        for c in &cands {
            if let Some(Attr::Str(s) | Attr::Text(s)) =
                c.attr("mhlo.sharding").or_else(|| c.attr("sdy.sharding"))
                && let Some(b) = splits_leading(s)
            {
                if b { split.0 = true } else { split.1 = true }
            }
        }
        split.0 && split.1
    };
    for c in &mut cands {
        let value = &g.value(g.inputs[c.index]).name;
        if let Some(r) = rule_user(&opts.data_args, c.index, value, c.name.as_deref()) {
            c.decided = Some((r, Rule::User));
            continue;
        }
        let by_rules = if onnx {
            Some((rule_onnx_graph(&g.value(g.inputs[c.index]).kind), Rule::OnnxGraph))
        } else {
            rule_unused(c).map(|r| (r, Rule::Unused))
        };
        let by_rules = by_rules
            .or_else(|| c.name.as_deref().and_then(rule_name).map(|r| (r, Rule::Name)))
            .or_else(|| rule_aliasing(c).map(|r| (r, Rule::Aliasing)))
            .or_else(|| rule_weight_side(c).map(|r| (r, Rule::WeightSide)))
            .or_else(|| rule_gather_table(c).map(|r| (r, Rule::GatherTable)))
            .or_else(|| rule_integer(c).map(|r| (r, Rule::Integer)))
            .or_else(|| rule_activation_side(c).map(|r| (r, Rule::ActivationSide)))
            .or_else(|| rule_broadcast(c).map(|r| (r, Rule::Broadcast)))
            .or_else(|| rule_no_batch(c).map(|r| (r, Rule::NoBatch)))
            .or_else(|| rule_sharding(c, mixed).map(|r| (r, Rule::Sharding)))
            .or_else(|| rule_many_layers(c).map(|r| (r, Rule::ManyLayers)));
        c.decided = match by_rules {
            // The user listed the data: anything else a rule calls data is not.
            Some((Role::Data, rule)) if user => Some((Role::State, rule)),
            other => other,
        };
        if user && c.decided.is_none() {
            c.decided = Some((Role::Weight, Rule::User));
        }
    }
    let first_data =
        cands.iter().find(|c| matches!(c.decided, Some((Role::Data, _)))).map(|c| c.index);
    let last_weight =
        cands.iter().rev().find(|c| matches!(c.decided, Some((Role::Weight, _)))).map(|c| c.index);
    let n = cands.len();
    for c in &mut cands {
        if c.decided.is_none() {
            c.decided = Some((rule_position(c.index, first_data, last_weight, n), Rule::Position));
        }
    }
    let mut out = finish(g, cands);
    if onnx {
        out.weights_in = WeightsIn::Initializers;
        out.batch_from = out.batch_from.map(|f| f.replacen("data argument", "graph input", 1));
        out.weights = RoleTotal::default();
        for v in &g.values {
            if matches!(v.kind, ValueKind::Weight(_))
                && v.ty.dtype.is_some_and(DType::is_float)
                && let Some(shape) = v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed)
                && !shape.is_empty()
            {
                out.weights.args += 1;
                out.weights.elements =
                    out.weights.elements.saturating_add(crate::cost::sat(&shape));
                out.weights.bytes = out.weights.bytes.saturating_add(v.ty.byte_size().unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// An ONNX graph input is data; initializers are the weights (they are not graph inputs; an
/// input of the stored-weight kind, from an importer that lists both, is a weight).
fn rule_onnx_graph(kind: &ValueKind) -> Role {
    if matches!(kind, ValueKind::Weight(_)) { Role::Weight } else { Role::Data }
}

fn finish(g: &Graph, cands: Vec<Cand<'_>>) -> ArgRoles {
    let mut out = ArgRoles::default();
    for c in cands {
        let (role, rule) = c.decided.unwrap_or((Role::Weight, Rule::Position));
        let gather_read = c.used_as(GATHERS, 0);
        let weight_use = gather_read || c.used_as(DOTS, 1) || c.used_as(CONVS, 1);
        let tied = role == Role::Weight
            && gather_read
            && c.uses.iter().any(|u| DOTS.contains(&u.op.as_str()));
        let id = g.inputs[c.index];
        let val = g.value(id);
        let a = ArgRole {
            index: c.index,
            value: val.name.clone(),
            name: c.name,
            dtype: c.dtype.map_or_else(|| "?".to_owned(), |d| d.name().to_owned()),
            shape: c.shape,
            role,
            rule,
            gather_read,
            tied,
            weight_use,
            id,
        };
        let t = match role {
            Role::Weight => &mut out.weights,
            Role::Data => &mut out.data,
            Role::State => &mut out.state,
        };
        t.args += 1;
        t.elements = t.elements.saturating_add(a.elements());
        t.bytes = t.bytes.saturating_add(val.ty.byte_size().unwrap_or(0));
        match out.decided_by.iter_mut().find(|(r, _)| *r == rule) {
            Some((_, k)) => *k += 1,
            None => out.decided_by.push((rule, 1)),
        }
        out.args.push(a);
    }
    batch_and_sequence(&mut out);
    out
}

/// The batch (most common leading dim of the data arguments, the first data argument's on a
/// tie) and the sequence (dim 1 of a rank-2 integer data argument).
fn batch_and_sequence(out: &mut ArgRoles) {
    let mut counts: Vec<(u64, u64, usize)> = Vec::new(); // (dim, count, first arg index)
    for a in out.with(Role::Data) {
        let Some(&d) = a.shape.as_ref().and_then(|s| s.first()) else { continue };
        match counts.iter_mut().find(|(x, _, _)| *x == d) {
            Some((_, k, _)) => *k += 1,
            None => counts.push((d, 1, a.index)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    if let Some(&(b, _, i)) = counts.first() {
        out.batch = Some(b);
        out.batch_arg = Some(i);
        let a = &out.args[i];
        out.batch_from = Some(format!(
            "leading dim of data argument {} `{}` {}{:?} ({})",
            a.index,
            a.label(),
            a.dtype,
            a.shape.clone().unwrap_or_default(),
            a.rule.describe()
        ));
        if counts.len() > 1 {
            out.notes.push(format!(
                "data arguments disagree on the leading dim ({}): the batch is the most common, {b}",
                counts.iter().map(|c| c.0.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
    } else if !out.args.is_empty() {
        out.notes.push(
            "no data argument with a leading dim: the batch is taken as 1 (name the data with --data-args)"
                .to_owned(),
        );
    }
    let sequence = out
        .with(Role::Data)
        .filter(|a| a.dtype.starts_with('i') || a.dtype.starts_with('u'))
        .find_map(|a| a.shape.as_ref().filter(|s| s.len() == 2).map(|s| s[1]));
    out.sequence = sequence;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(rule_name("params['dense']['kernel']"), Some(Role::Weight));
        assert_eq!(rule_name("variables['batch_stats']['BatchNorm_0']['mean']"), Some(Role::State));
        assert_eq!(rule_name("state['blocks'][0]['ln1']['scale'].value"), Some(Role::Weight));
        assert_eq!(rule_name("params['non_trainable']['bn/moving_mean']"), Some(Role::State));
        assert_eq!(rule_name("x"), Some(Role::Data));
        assert_eq!(rule_name("tokens"), Some(Role::Data));
        assert_eq!(rule_name("args[1]['token_ids']"), Some(Role::Data));
        assert_eq!(rule_name("params['input_layer']['kernel']"), Some(Role::Weight));
        assert_eq!(rule_name("foo"), None);
    }

    #[test]
    fn selectors() {
        assert_eq!("320".parse::<ArgSelector>().unwrap(), ArgSelector::Index(320));
        assert_eq!("x".parse::<ArgSelector>().unwrap(), ArgSelector::Name("x".into()));
        assert!("".parse::<ArgSelector>().is_err());
    }

    #[test]
    fn sharding_split() {
        assert_eq!(splits_leading("{devices=[8,1]<=[8]}"), Some(true));
        assert_eq!(splits_leading("{replicated}"), Some(false));
        assert_eq!(splits_leading("#sdy.sharding<@mesh, [{\"data\"}, {}]>"), Some(true));
        assert_eq!(splits_leading("#sdy.sharding<@mesh, [{}, {\"model\"}]>"), Some(false));
    }

    fn arg(index: usize, shape: &[u64], role: Role, rule: Rule, weight_use: bool) -> ArgRole {
        ArgRole {
            index,
            value: format!("%arg{index}"),
            name: None,
            dtype: "f32".into(),
            shape: Some(shape.to_vec()),
            role,
            rule,
            gather_read: false,
            tied: false,
            weight_use,
            id: ValueId(u32::try_from(index).unwrap()),
        }
    }

    #[test]
    fn batch_read_from_a_weight_is_caught() {
        // The embedding table taken for data (the bug of issue 21): batch = the vocabulary.
        let mut r = ArgRoles {
            args: vec![
                arg(0, &[50257, 768], Role::Data, Rule::User, true),
                arg(1, &[768, 768], Role::Weight, Rule::WeightSide, true),
            ],
            batch: Some(50257),
            batch_arg: Some(0),
            ..ArgRoles::default()
        };
        assert_eq!(r.batch_is_weight_dim(50257).map(|a| a.index), Some(0));
        // Data decided only by position, with the batch a dimension of a weight.
        r.args[0] = arg(0, &[768, 16], Role::Data, Rule::Position, false);
        assert_eq!(r.batch_is_weight_dim(768).map(|a| a.index), Some(1));
        // Token ids decided by their type: a batch of 768 is believed.
        r.args[0] = arg(0, &[768, 16], Role::Data, Rule::Integer, false);
        assert!(r.batch_is_weight_dim(768).is_none());
        assert!(r.batch_is_weight_dim(1).is_none());
    }

    #[test]
    fn position() {
        assert_eq!(rule_position(0, Some(3), None, 4), Role::Weight);
        assert_eq!(rule_position(3, None, Some(2), 4), Role::Data);
        assert_eq!(rule_position(3, None, None, 4), Role::Data);
        assert_eq!(rule_position(1, None, None, 4), Role::Weight);
    }
}
