//! The inventory pass behind `tpuport inspect`.
//!
//! Counting rules (documented in `docs/inspect.md`):
//! - A *stored tensor* is a weight of the model's store. For graphs (ONNX, StableHLO) only
//!   tensors the graph uses as initializers or constants count, rank-0 tensors are *scalar
//!   constants* and are not parameters.
//! - For checkpoints, tensors whose names mark them as framework buffers are buffers, not
//!   parameters, and are counted apart by convention ([`BufferConvention`]): PyTorch's
//!   (BatchNorm `running_mean`/`running_var`, `num_batches_tracked`, attention masks,
//!   position-id tables: what `sum(p.numel() for p in model.parameters())` leaves out), Keras'
//!   non-trainable BatchNorm statistics (`moving_mean`/`moving_variance`, which
//!   `model.count_params()` does include) and Flax's `batch_stats` collection (`mean`/`var`,
//!   outside the `params` collection).
//! - Tensors backed by the same bytes of the same file (tied weights in a `torch.save` state
//!   dict share one storage) are counted once.
//! - Byte-identical tensors stored twice (the legacy ONNX exporter's tied embeddings) are listed
//!   as duplicate groups and a deduplicated count is given next to the file's count.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use sha2::{Digest, Sha256};
use tpuport_model::{
    Attr, DType, Framework, Graph, Model, ModelFormat, Note, TensorType, ValueKind, WeightData,
    WeightId,
};

/// Version of the JSON schema of [`Inventory`]; bump on any incompatible change.
pub const SCHEMA: &str = "tpuport.inspect/1";

/// One input or output of the entry graph.
#[derive(Clone, Debug, Serialize)]
pub struct Port {
    /// Name as in the file.
    pub name: String,
    /// Element type name, or `?`.
    pub dtype: String,
    /// Dimensions; symbolic ones as strings.
    pub shape: Option<Vec<serde_json::Value>>,
    /// Printed type, e.g. `f32[batch,3,224,224]`.
    pub display: String,
}

/// Totals for one dtype.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DTypeTotal {
    /// Tensors of this dtype.
    pub tensors: u64,
    /// Elements.
    pub elements: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A stored tensor, for the largest-tensors list.
#[derive(Clone, Debug, Serialize)]
pub struct TensorEntry {
    /// Name.
    pub name: String,
    /// Element type name.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Elements.
    pub elements: u64,
    /// Bytes.
    pub bytes: u64,
}

/// A set of tensors holding the same values.
#[derive(Clone, Debug, Serialize)]
pub struct DuplicateGroup {
    /// Names of the tensors, first one kept.
    pub names: Vec<String>,
    /// Elements of one copy.
    pub elements: u64,
    /// True when the copies are transposes of each other rather than byte-identical.
    pub transposed: bool,
}

/// Parameter accounting.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Params {
    /// Elements counted as parameters (see the module docs for the rules).
    pub elements: u64,
    /// Bytes of those parameters.
    pub bytes: u64,
    /// Tensors counted as parameters.
    pub tensors: u64,
    /// Elements after removing duplicate copies.
    pub deduplicated_elements: u64,
    /// Elements in buffers (BN statistics, masks) not counted as parameters.
    pub buffer_elements: u64,
    /// Buffer tensors.
    pub buffer_tensors: u64,
    /// The buffers by the framework convention their names follow (`torch`, `keras`, `flax`):
    /// tensors and elements.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub buffers_by_convention: BTreeMap<String, DTypeTotal>,
    /// Rank-0 constants not counted.
    pub scalar_constants: u64,
    /// Elements held in graph constants (ONNX `Constant` nodes, large StableHLO `constant`s)
    /// of rank ≥ 1; not included in `elements` (an explanation is given when they hold most of
    /// the model's weights).
    pub constant_elements: u64,
    /// Tensors held in graph constants.
    pub constant_tensors: u64,
    /// Elements of tensors that alias another tensor's bytes (tied weights), counted once.
    pub aliased_elements: u64,
    /// Per dtype totals of counted parameters.
    pub by_dtype: BTreeMap<String, DTypeTotal>,
}

/// A known difference between the file's count and what the framework would report.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// Stable code (`bn-folded`, `tied-duplicated`, `buffers-excluded`, `tied-aliased`).
    pub code: String,
    /// One-line explanation.
    pub message: String,
}

/// Everything `tpuport inspect` reports about a file.
#[derive(Clone, Debug, Serialize)]
pub struct Inventory {
    /// Schema identifier ([`SCHEMA`]).
    pub schema: &'static str,
    /// Source file as given.
    pub path: String,
    /// File format.
    pub format: &'static str,
    /// Producer name and version.
    pub producer: Option<String>,
    /// Framework guess.
    pub framework: Framework,
    /// Exporter guess.
    pub exporter: Option<String>,
    /// ONNX IR version.
    pub ir_version: Option<i64>,
    /// Opset imports (`""` printed as `ai.onnx`).
    pub opsets: Vec<(String, i64)>,
    /// StableHLO/VHLO version.
    pub stablehlo_version: Option<String>,
    /// Entry graph inputs (weights excluded).
    pub inputs: Vec<Port>,
    /// Entry graph outputs.
    pub outputs: Vec<Port>,
    /// Nodes in the entry graph and all subgraphs.
    pub nodes: u64,
    /// Functions besides the entry graph.
    pub functions: u64,
    /// Op name → count, over the entry graph, its subgraphs and the functions.
    pub ops: BTreeMap<String, u64>,
    /// Values whose shape is not fully static after binding.
    pub dynamic_values: u64,
    /// Parameter accounting.
    pub params: Params,
    /// Largest stored tensors, biggest first.
    pub largest: Vec<TensorEntry>,
    /// Duplicate tensor groups.
    pub duplicates: Vec<DuplicateGroup>,
    /// Why the count may differ from the framework's.
    pub explanations: Vec<Explanation>,
    /// Notes raised by the importer.
    pub notes: Vec<Note>,
    /// Which entry arguments are weights, data and state (StableHLO modules taking their
    /// weights as arguments); the weight arguments are counted in `params`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<crate::roles::ArgRoles>,
    /// A language model's own configuration (a Hugging Face folder's `config.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<tpuport_model::LlmConfig>,
    /// KV-cache bytes one token adds, all layers, in the config's dtype (bf16 when it names
    /// none): layers x 2 x KV heads x head dim x bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_bytes_per_token: Option<u64>,
}

/// Options for the inventory.
#[derive(Clone, Debug)]
pub struct InventoryOptions {
    /// How many largest tensors to list.
    pub top: usize,
    /// Whether to look for duplicate tensors in graph formats (samples every weight, reads in
    /// full only those whose samples match). Checkpoints are never scanned: their tied weights
    /// share storage and are found without reading bytes.
    pub find_duplicates: bool,
    /// Argument roles decided by the caller (`--data-args`); for StableHLO they are decided by
    /// the rules of [`crate::roles`] when `None`.
    pub roles: Option<crate::roles::ArgRoles>,
}

impl Default for InventoryOptions {
    fn default() -> Self {
        InventoryOptions { top: 10, find_duplicates: true, roles: None }
    }
}

/// Builds the inventory of a model.
#[must_use]
pub fn inventory(path: &str, model: &Model, opts: &InventoryOptions) -> Inventory {
    let g = &model.graph;
    let mut ops = BTreeMap::new();
    let mut nodes = 0u64;
    let mut dynamic_values = 0u64;
    for graph in std::iter::once(g).chain(model.functions.iter()) {
        for n in graph.walk_nodes() {
            *ops.entry(n.qualified_op()).or_insert(0) += 1;
            nodes += 1;
        }
        dynamic_values += count_dynamic(graph);
    }
    let counted = counted_weights(model);
    let params = count_params(model, &counted);
    let mut largest: Vec<TensorEntry> = counted
        .iter()
        .map(|(id, _)| model.weights.get(*id))
        .filter(|w| !w.shape.is_empty())
        .map(|w| TensorEntry {
            name: w.name.clone(),
            dtype: w.dtype.name().to_owned(),
            shape: w.shape.clone(),
            elements: w.elements(),
            bytes: w.nbytes(),
        })
        .collect();
    largest.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    largest.truncate(opts.top);
    let duplicates = if opts.find_duplicates && model.format.has_graph() {
        duplicate_groups(model, &counted, MIN_DUP_ELEMENTS)
    } else {
        vec![]
    };
    let mut inv = Inventory {
        schema: SCHEMA,
        path: path.to_owned(),
        format: model.format.name(),
        producer: match (&model.metadata.producer, &model.metadata.producer_version) {
            (Some(p), Some(v)) if !v.is_empty() => Some(format!("{p} {v}")),
            (Some(p), _) => Some(p.clone()),
            _ => None,
        },
        framework: model.metadata.framework,
        exporter: model.metadata.exporter.clone(),
        ir_version: model.metadata.ir_version,
        opsets: model
            .metadata
            .opsets
            .iter()
            .map(|(d, v)| (if d.is_empty() { "ai.onnx".to_owned() } else { d.clone() }, *v))
            .collect(),
        stablehlo_version: model.metadata.stablehlo_version.clone(),
        llm: model.metadata.llm.clone(),
        kv_bytes_per_token: model
            .metadata
            .llm
            .as_ref()
            .and_then(|c| c.kv_bytes_per_token(c.dtype_bytes().unwrap_or(2))),
        inputs: g.inputs.iter().map(|v| port(&g.value(*v).name, &g.value(*v).ty)).collect(),
        outputs: g.outputs.iter().map(|v| port(&g.value(*v).name, &g.value(*v).ty)).collect(),
        nodes,
        functions: model.functions.len() as u64,
        ops,
        dynamic_values,
        params,
        largest,
        duplicates,
        explanations: Vec::new(),
        notes: model.notes.clone(),
        roles: None,
    };
    if matches!(model.format, ModelFormat::StablehloText | ModelFormat::StablehloBytecode)
        && !g.inputs.is_empty()
    {
        let roles = opts.roles.clone().unwrap_or_else(|| {
            crate::roles::assign(model, &crate::roles::RoleOptions::default()).unwrap_or_default()
        });
        for a in roles.with(crate::roles::Role::Weight) {
            let ty = &g.value(a.id).ty;
            let bytes = ty.byte_size().unwrap_or(0);
            let p = &mut inv.params;
            p.elements += a.elements();
            p.bytes += bytes;
            p.tensors += 1;
            let t = p.by_dtype.entry(a.dtype.clone()).or_default();
            t.tensors += 1;
            t.elements += a.elements();
            t.bytes += bytes;
        }
        inv.roles = Some(roles);
    }
    let dedup: u64 = inv.duplicates.iter().map(|d| d.elements * (d.names.len() as u64 - 1)).sum();
    inv.params.deduplicated_elements = inv.params.elements.saturating_sub(dedup);
    inv.explanations = explain(model, &inv);
    if let Some(r) = &inv.roles {
        if r.weights.args > 0 {
            inv.explanations.push(Explanation {
                code: "weights-as-arguments".to_owned(),
                message: format!(
                    "{} of the parameters are function arguments ({} weight arguments); {} state arguments ({} elements: batch statistics, caches, seeds) are not counted",
                    r.weights.elements, r.weights.args, r.state.args, r.state.elements
                ),
            });
        }
        for t in r.tied() {
            inv.explanations.push(Explanation {
                code: "tied-argument".to_owned(),
                message: format!(
                    "`{}` is read by gather and used as the output projection: one tied table, counted once",
                    t.label()
                ),
            });
        }
    }
    inv
}

fn port(name: &str, ty: &TensorType) -> Port {
    Port {
        name: name.to_owned(),
        dtype: ty.dtype.map_or_else(|| "?".to_owned(), |d| d.name().to_owned()),
        shape: ty.shape.as_ref().map(|s| {
            s.0.iter()
                .map(|d| match d {
                    tpuport_model::Dim::Known(n) => serde_json::Value::from(*n),
                    tpuport_model::Dim::Sym(s) => serde_json::Value::from(s.clone()),
                })
                .collect()
        }),
        display: ty.to_string(),
    }
}

fn count_dynamic(g: &Graph) -> u64 {
    let mut n = 0;
    for v in &g.values {
        if !v.ty.shape.as_ref().is_some_and(tpuport_model::Shape::is_static) {
            n += 1;
        }
    }
    for node in &g.nodes {
        for (_, sg) in &node.subgraphs {
            n += count_dynamic(sg);
        }
    }
    n
}

/// Where a counted weight comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// A checkpoint tensor, an initializer, or a graph value bound to a weight.
    Stored,
    /// Held by a constant node.
    Constant,
}

/// The weights that count for this model: for graph formats, those the graph references; for
/// checkpoints, all of them.
fn counted_weights(model: &Model) -> Vec<(WeightId, Origin)> {
    if !model.format.has_graph() {
        return (0..model.weights.len()).map(|i| (weight_id(i), Origin::Stored)).collect();
    }
    let mut seen: HashMap<WeightId, Origin> = HashMap::new();
    let mut order = Vec::new();
    let mut visit = |id: WeightId, origin: Origin| {
        if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(id) {
            e.insert(origin);
            order.push((id, origin));
        }
    };
    let mut stack: Vec<&Graph> = std::iter::once(&model.graph).chain(&model.functions).collect();
    while let Some(g) = stack.pop() {
        for v in &g.values {
            if let ValueKind::Weight(id) = v.kind {
                visit(id, Origin::Stored);
            }
        }
        for n in &g.nodes {
            for (_, a) in &n.attrs {
                if let Attr::Weight(id) = a {
                    visit(*id, Origin::Constant);
                }
            }
            for (_, sg) in &n.subgraphs {
                stack.push(sg);
            }
        }
    }
    order
}

fn weight_id(i: usize) -> WeightId {
    WeightId(u32::try_from(i).unwrap_or(u32::MAX))
}

/// Name suffixes of framework buffers that `model.parameters()` does not include.
const BUFFER_SUFFIXES: &[&str] = &[
    "running_mean",
    "running_var",
    "num_batches_tracked",
    "position_ids",
    "token_type_ids",
    "attn.bias",
    "attn.masked_bias",
];

/// Whose convention a buffer's name follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferConvention {
    /// `module.running_mean`, `num_batches_tracked`, masks, position ids.
    Torch,
    /// `batch_normalization/moving_mean`, `bn.moving_variance:0`.
    Keras,
    /// `batch_stats.BatchNorm_0.mean`, `batch_stats/bn/var`.
    Flax,
}

impl BufferConvention {
    /// `torch`, `keras` or `flax`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            BufferConvention::Torch => "torch",
            BufferConvention::Keras => "keras",
            BufferConvention::Flax => "flax",
        }
    }
}

/// The buffer convention `name` follows, if it names a buffer. Path components are split on
/// `.` and `/` (Flax flattens with either, Keras paths use `/`), and a TensorFlow variable's
/// `:0` suffix is ignored.
#[must_use]
pub fn buffer_convention(name: &str) -> Option<BufferConvention> {
    let name = name.strip_suffix(":0").unwrap_or(name);
    let parts: Vec<&str> = name.split(['.', '/']).filter(|p| !p.is_empty()).collect();
    let last = *parts.last()?;
    if parts.contains(&"batch_stats") {
        return Some(BufferConvention::Flax);
    }
    if matches!(last, "moving_mean" | "moving_variance") {
        return Some(BufferConvention::Keras);
    }
    let torch = BUFFER_SUFFIXES
        .iter()
        .any(|s| name.strip_suffix(s).is_some_and(|head| head.is_empty() || head.ends_with('.')));
    torch.then_some(BufferConvention::Torch)
}

fn count_params(model: &Model, counted: &[(WeightId, Origin)]) -> Params {
    let checkpoint = !model.format.has_graph();
    let mut p = Params::default();
    let mut ranges: HashMap<(usize, u64, u64), ()> = HashMap::new();
    for (id, origin) in counted {
        let w = model.weights.get(*id);
        if w.shape.is_empty() {
            p.scalar_constants += 1;
            continue;
        }
        if checkpoint && let Some(conv) = buffer_convention(&w.name) {
            p.buffer_elements += w.elements();
            p.buffer_tensors += 1;
            let t = p.buffers_by_convention.entry(conv.name().to_owned()).or_default();
            t.tensors += 1;
            t.elements += w.elements();
            t.bytes += w.nbytes();
            continue;
        }
        if let WeightData::Mapped { map, offset, len, .. } = &w.data {
            let key = (std::sync::Arc::as_ptr(map) as usize, *offset, *len);
            if ranges.insert(key, ()).is_some() {
                p.aliased_elements += w.elements();
                continue;
            }
        }
        if *origin == Origin::Constant {
            p.constant_elements += w.elements();
            p.constant_tensors += 1;
            continue;
        }
        p.elements += w.elements();
        p.bytes += w.nbytes();
        p.tensors += 1;
        let t = p.by_dtype.entry(w.dtype.name().to_owned()).or_default();
        t.tensors += 1;
        t.elements += w.elements();
        t.bytes += w.nbytes();
    }
    p
}

/// Tensors smaller than this are not hashed for duplicate detection (biases, scalars).
const MIN_DUP_ELEMENTS: u64 = 1024;

/// Groups of tensors the model stores more than once — byte-identical, or a 2-D tensor and its
/// transpose — among the stored weights the model uses (initializers, checkpoint tensors; not
/// constant-node tensors), ignoring tensors with fewer than `min_elements` elements. Biggest
/// groups first.
#[must_use]
pub fn duplicate_tensors(model: &Model, min_elements: u64) -> Vec<DuplicateGroup> {
    duplicate_groups(model, &counted_weights(model), min_elements)
}

fn duplicate_groups(
    model: &Model,
    counted: &[(WeightId, Origin)],
    min_elements: u64,
) -> Vec<DuplicateGroup> {
    // Bucket by (dtype, element count); inside a bucket compare a cheap fingerprint (a hash of
    // elements sampled at fixed logical positions), and only on a fingerprint match compare the
    // full contents. 2-D tensors are also fingerprinted in transposed order, so a transposed
    // copy (the legacy ONNX exporter's tied lm_head) is found without transposing anything.
    let mut buckets: BTreeMap<(DType, u64), Vec<WeightId>> = BTreeMap::new();
    // Only stored tensors (initializers, checkpoint tensors): constants are not counted as
    // parameters, so their copies must not be subtracted from the parameter count either.
    for (id, _) in counted.iter().filter(|(_, o)| *o == Origin::Stored) {
        let w = model.weights.get(*id);
        if w.elements() >= min_elements && !matches!(w.data, WeightData::Absent { .. }) {
            buckets.entry((w.dtype, w.elements())).or_default().push(*id);
        }
    }
    let mut groups = Vec::new();
    for ids in buckets.values().filter(|ids| ids.len() > 1) {
        // fingerprint -> members (id, viewed transposed)
        let mut by_print: BTreeMap<[u8; 32], Vec<(WeightId, bool)>> = BTreeMap::new();
        for id in ids {
            let w = model.weights.get(*id);
            let Some(elem) = w.dtype.bits().filter(|b| b % 8 == 0).map(|b| b as usize / 8) else {
                continue;
            };
            let Ok(bytes) = w.bytes() else { continue };
            let (rows, cols) = match w.shape.as_slice() {
                [r, c] => (*r, *c),
                _ => (1, w.elements()),
            };
            by_print
                .entry(fingerprint(&bytes, rows, cols, elem, false))
                .or_default()
                .push((*id, false));
            if w.shape.len() == 2 && rows > 1 && cols > 1 {
                by_print
                    .entry(fingerprint(&bytes, rows, cols, elem, true))
                    .or_default()
                    .push((*id, true));
            }
        }
        let mut used: Vec<WeightId> = Vec::new();
        for members in by_print.values() {
            // One entry per tensor: a tensor whose plain and transposed samples agree (constant
            // or symmetric data) must not be reported as a copy of itself.
            let mut cand: Vec<(WeightId, bool)> = Vec::new();
            for m in members {
                if !used.contains(&m.0) && !cand.iter().any(|c| c.0 == m.0) {
                    cand.push(*m);
                }
            }
            if cand.len() < 2 {
                continue;
            }
            // Confirm by comparing full contents against each group's first member, directly
            // (a blocked strided compare for transposed copies: nothing is hashed or copied).
            let mut found: Vec<Vec<(WeightId, bool)>> = Vec::new();
            for m in cand {
                match found.iter_mut().find(|g| same_view(model, g[0], m)) {
                    Some(g) => g.push(m),
                    None => found.push(vec![m]),
                }
            }
            for same in found.into_iter().filter(|v| v.len() > 1) {
                let transposed = same.iter().any(|(_, t)| *t) && !same.iter().all(|(_, t)| *t);
                used.extend(same.iter().map(|(id, _)| *id));
                groups.push(DuplicateGroup {
                    names: same.iter().map(|(id, _)| model.weights.get(*id).name.clone()).collect(),
                    elements: model.weights.get(same[0].0).elements(),
                    transposed,
                });
            }
        }
    }
    groups.sort_by(|a, b| b.elements.cmp(&a.elements).then_with(|| a.names.cmp(&b.names)));
    groups
}

/// Number of elements sampled for a fingerprint.
const SAMPLES: u64 = 64;

/// Hash of `SAMPLES` elements at evenly spaced logical positions of the row-major tensor
/// `[rows, cols]`, or of its transpose when `transposed`.
fn fingerprint(b: &[u8], rows: u64, cols: u64, elem: usize, transposed: bool) -> [u8; 32] {
    let n = rows.saturating_mul(cols);
    let mut h = Sha256::new();
    for k in 0..SAMPLES.min(n) {
        let logical = k * n / SAMPLES.min(n);
        // Logical index into the (possibly transposed) view -> physical row-major index.
        let physical = if transposed {
            let (i, j) = (logical / rows, logical % rows); // view is [cols, rows]
            j * cols + i
        } else {
            logical
        };
        let off = usize::try_from(physical).unwrap_or(usize::MAX).saturating_mul(elem);
        if let Some(s) = b.get(off..off.saturating_add(elem)) {
            h.update(s);
        }
    }
    h.finalize().into()
}

/// Whether tensor `a` viewed as flagged equals tensor `b` viewed as flagged (a flag means
/// "viewed transposed"; both are row-major in memory).
fn same_view(model: &Model, (a, ta): (WeightId, bool), (b, tb): (WeightId, bool)) -> bool {
    let (wa, wb) = (model.weights.get(a), model.weights.get(b));
    let (Ok(x), Ok(y)) = (wa.bytes(), wb.bytes()) else { return false };
    if x.len() != y.len() {
        return false;
    }
    if ta == tb {
        return wa.shape == wb.shape && x == y;
    }
    // a == transpose(b): a is [r, c], b must be [c, r].
    let ([r, c], [c2, r2]) = (wa.shape.as_slice(), wb.shape.as_slice()) else { return false };
    if (r, c) != (r2, c2) {
        return false;
    }
    let Some(elem) = wa.dtype.bits().map(|bits| bits as usize / 8) else { return false };
    let (Ok(r), Ok(c)) = (usize::try_from(*r), usize::try_from(*c)) else { return false };
    transposed_equal(&x, &y, r, c, elem)
}

/// `a` is row-major `[r, c]`, `b` row-major `[c, r]`; true when `a[i][j] == b[j][i]` for all
/// i, j. Compared in 64x64 blocks so both sides stay in cache.
fn transposed_equal(a: &[u8], b: &[u8], r: usize, c: usize, elem: usize) -> bool {
    const B: usize = 64;
    for i0 in (0..r).step_by(B) {
        for j0 in (0..c).step_by(B) {
            for i in i0..(i0 + B).min(r) {
                for j in j0..(j0 + B).min(c) {
                    let (s, d) = ((i * c + j) * elem, (j * r + i) * elem);
                    if a.get(s..s + elem) != b.get(d..d + elem) {
                        return false;
                    }
                }
            }
        }
    }
    true
}

fn explain(model: &Model, inv: &Inventory) -> Vec<Explanation> {
    let mut out = Vec::new();
    let has = |op: &str| inv.ops.contains_key(op);
    if model.format == ModelFormat::Onnx && has("Conv") && !has("BatchNormalization") {
        let biased = model
            .graph
            .walk_nodes()
            .filter(|n| n.op == "Conv" && n.inputs.get(2).is_some_and(Option::is_some))
            .count();
        if biased > 0 && model.metadata.framework != Framework::Jax {
            out.push(Explanation {
                code: "bn-folded".into(),
                message: format!(
                    "no BatchNormalization nodes and {biased} Conv nodes with a bias: the \
                     exporter folded BatchNorm into Conv, so the file holds conv biases instead \
                     of BN scale/shift and fewer elements than the framework's parameter count"
                ),
            });
        }
    }
    if !inv.duplicates.is_empty() {
        let dup: u64 = inv.duplicates.iter().map(|d| d.elements * (d.names.len() as u64 - 1)).sum();
        let t = inv.duplicates.iter().any(|d| d.transposed);
        out.push(Explanation {
            code: "tied-duplicated".into(),
            message: format!(
                "{} tensor group(s) stored more than once{} ({dup} extra elements; e.g. {}): \
                 tied weights duplicated by the exporter; deduplicated count {}",
                inv.duplicates.len(),
                if t { ", some as a transposed copy" } else { "" },
                inv.duplicates[0].names.join(" = "),
                inv.params.deduplicated_elements
            ),
        });
    }
    for (conv, t) in &inv.params.buffers_by_convention {
        let message = match conv.as_str() {
            "keras" => format!(
                "{} Keras BatchNorm statistics tensor(s) (moving_mean / moving_variance, {} \
                 elements) are non-trainable state, counted apart; Keras' count_params() \
                 includes them: {} with them",
                t.tensors,
                t.elements,
                inv.params.elements + t.elements
            ),
            "flax" => format!(
                "{} tensor(s) of Flax's batch_stats collection (BatchNorm mean / var, {} \
                 elements) are state, not params, counted apart as the params pytree does",
                t.tensors, t.elements
            ),
            _ => format!(
                "{} buffer tensor(s) ({} elements: BatchNorm running statistics, \
                 num_batches_tracked, masks, position ids) are stored but are not parameters, \
                 as model.parameters() sees them",
                t.tensors, t.elements
            ),
        };
        let code = match conv.as_str() {
            "keras" => "keras-bn-state",
            "flax" => "flax-batch-stats",
            _ => "buffers-excluded",
        };
        out.push(Explanation { code: code.into(), message });
    }
    if inv.params.constant_elements > inv.params.elements {
        out.push(Explanation {
            code: "weights-in-constants".into(),
            message: format!(
                "{} elements in {} constant tensors exceed the {} initializer elements: this \
                 exporter keeps the weights in constant nodes, so count those as parameters",
                inv.params.constant_elements, inv.params.constant_tensors, inv.params.elements
            ),
        });
    }
    if inv.params.aliased_elements > 0 {
        out.push(Explanation {
            code: "tied-aliased".into(),
            message: format!(
                "{} elements belong to tensors sharing storage with another tensor (tied \
                 weights); counted once",
                inv.params.aliased_elements
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use tpuport_model::{Weight, WeightStore};

    use super::*;

    fn w(name: &str, shape: Vec<u64>, data: Vec<u8>) -> Weight {
        Weight {
            name: name.into(),
            dtype: DType::F32,
            shape,
            data: WeightData::Inline(data.into()),
        }
    }

    #[test]
    fn buffer_names_by_convention() {
        use BufferConvention::{Flax, Keras, Torch};
        let cases = [
            ("bn1.running_mean", Some(Torch)),
            ("num_batches_tracked", Some(Torch)),
            ("h.0.attn.bias", Some(Torch)),
            ("conv1_bn/moving_mean", Some(Keras)),
            ("block_1/bn/moving_variance:0", Some(Keras)),
            ("batch_stats.BatchNorm_0.mean", Some(Flax)),
            ("batch_stats/bn/var", Some(Flax)),
            ("params.BatchNorm_0.scale", None),
            ("conv1_bn/gamma", None),
            ("moving_mean_scale", None),
            ("encoder.layer.0.attention.self.query.bias", None),
        ];
        for (name, want) in cases {
            assert_eq!(buffer_convention(name), want, "{name}");
        }
    }

    #[test]
    fn checkpoint_counts_exclude_buffers_and_scalars() {
        let mut m = Model::empty(ModelFormat::Safetensors);
        let mut s = WeightStore::default();
        s.push(w("conv.weight", vec![4, 4], vec![0; 64]));
        s.push(w("bn.running_mean", vec![4], vec![0; 16]));
        s.push(w("bn.num_batches_tracked", vec![], vec![0; 4]));
        m.weights = s;
        let inv = inventory("x", &m, &InventoryOptions::default());
        assert_eq!(inv.params.elements, 16);
        assert_eq!(inv.params.buffer_elements, 4);
        assert_eq!(inv.params.scalar_constants, 1);
        assert!(inv.explanations.iter().any(|e| e.code == "buffers-excluded"));
    }

    #[test]
    fn transposed_duplicates_are_found() {
        let mut m = Model::empty(ModelFormat::Onnx);
        let (r, c) = (32u64, 48u64);
        let a: Vec<u8> = (0..r * c).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let t: Vec<u8> = (0..c)
            .flat_map(|j| (0..r).flat_map(move |i| ((i * c + j) as f32).to_le_bytes()))
            .collect();
        for (name, shape, data) in
            [("wte", vec![r, c], a.clone()), ("lm_head", vec![c, r], t), ("copy", vec![r, c], a)]
        {
            let id = m.weights.push(w(name, shape, data));
            m.graph.add_value(tpuport_model::Value {
                name: name.into(),
                ty: TensorType::default(),
                kind: ValueKind::Weight(id),
                producer: None,
            });
        }
        let inv = inventory("x", &m, &InventoryOptions::default());
        assert_eq!(inv.duplicates.len(), 1, "{:?}", inv.duplicates);
        assert_eq!(inv.duplicates[0].names.len(), 3);
        assert!(inv.duplicates[0].transposed);
        assert_eq!(inv.params.deduplicated_elements, r * c);
    }

    #[test]
    fn shared_storage_counts_once() {
        let dir = std::env::temp_dir().join(format!("tpuport-inv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b");
        std::fs::write(&p, [0u8; 64]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // SAFETY: the file was just written by this test and is not modified while mapped.
        #[allow(unsafe_code, reason = "test maps a private temp file")]
        let map = Arc::new(unsafe { memmap2::Mmap::map(&f) }.unwrap());
        let mut m = Model::empty(ModelFormat::TorchZip);
        for name in ["wte.weight", "lm_head.weight"] {
            m.weights.push(Weight {
                name: name.into(),
                dtype: DType::F32,
                shape: vec![16],
                data: WeightData::Mapped {
                    map: map.clone(),
                    path: Arc::new(p.clone()),
                    offset: 0,
                    len: 64,
                },
            });
        }
        let inv = inventory("x", &m, &InventoryOptions::default());
        assert_eq!(inv.params.elements, 16);
        assert_eq!(inv.params.aliased_elements, 16);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
