//! The mesh and each parameter's partition spec.
//!
//! Axes, outermost first: `data` (batch only, weights replicated), `fsdp` (batch and the
//! weights' hidden dimension, MaxText's `embed → fsdp`), `tensor` (Megatron: heads, MLP
//! features, vocabulary). Per parameter (`sharding-anchors.md` §2, §4):
//!
//! | role | `tensor` on | `fsdp` on |
//! |---|---|---|
//! | q, k, v, qkv, up, gate (column) | output features (`[out, in]` dim 0, `[in, out]` dim 1, a 3-D kernel's heads) | input features (hidden) |
//! | attention out, down (row) | input features (heads / MLP width) | output features (hidden) |
//! | LM head, embedding tied to it | vocabulary | hidden |
//! | embedding with its own LM head | hidden (GSPMD cannot split a gather's indexed dimension) | vocabulary |
//! | position embedding, conv, unknown matrix | — | largest dimension (FSDPv2's rule) |
//! | norm, bias, state, unknown vector | — | — |
//!
//! A vocabulary the `tensor` axis does not divide (GPT-2's 50257) stays whole on that axis (a
//! note says so); an FSDP dimension the `fsdp` axis does not divide moves to another dimension
//! that it divides, else stays whole. A column/row dimension the `tensor` axis does not divide
//! is an error: tensor parallelism of that model needs another axis size.

use std::fmt;

use serde::Serialize;
use tpuport_model::DType;

use super::names::{Kind, Orientation, Parallel, ParamRole};
use super::{ParamInfo, ParamPlan, ShardError};

/// A mesh axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Data parallel.
    Data,
    /// Fully sharded data parallel.
    Fsdp,
    /// Tensor parallel.
    Tensor,
}

impl Axis {
    /// The name used in emitted code.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Data => "data",
            Axis::Fsdp => "fsdp",
            Axis::Tensor => "tensor",
        }
    }
}

/// A `data × fsdp × tensor` mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Mesh {
    /// Data-parallel axis size.
    pub data: u32,
    /// FSDP axis size.
    pub fsdp: u32,
    /// Tensor-parallel axis size.
    pub tensor: u32,
}

impl Mesh {
    /// Chips it needs.
    #[must_use]
    pub fn devices(&self) -> u64 {
        u64::from(self.data) * u64::from(self.fsdp) * u64::from(self.tensor)
    }

    /// Size of `axis`.
    #[must_use]
    pub fn size(&self, axis: Axis) -> u32 {
        match axis {
            Axis::Data => self.data,
            Axis::Fsdp => self.fsdp,
            Axis::Tensor => self.tensor,
        }
    }

    /// `dp`, `fsdp`, `tp`, `fsdp+tp`, `dp+fsdp`…; `single` for one chip.
    #[must_use]
    pub fn strategy(&self) -> String {
        let mut parts = Vec::new();
        if self.data > 1 {
            parts.push("dp");
        }
        if self.fsdp > 1 {
            parts.push("fsdp");
        }
        if self.tensor > 1 {
            parts.push("tp");
        }
        if parts.is_empty() { "single".into() } else { parts.join("+") }
    }

    /// Parses `data=2,fsdp=2,tensor=2` (missing axes are 1; `dp`/`tp`/`model` are accepted).
    ///
    /// # Errors
    /// [`ShardError::MeshSyntax`].
    pub fn parse(text: &str) -> Result<Mesh, ShardError> {
        let bad = |reason: String| ShardError::MeshSyntax { text: text.to_owned(), reason };
        let mut m = Mesh { data: 1, fsdp: 1, tensor: 1 };
        let mut seen = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) =
                part.split_once('=').ok_or_else(|| bad(format!("`{part}` is not AXIS=N")))?;
            let n: u32 = v
                .trim()
                .parse()
                .ok()
                .filter(|&n| (1..=1 << 16).contains(&n))
                .ok_or_else(|| bad(format!("`{v}` is not a size from 1 to 65536")))?;
            let axis = match k.trim().to_ascii_lowercase().as_str() {
                "data" | "dp" => Axis::Data,
                "fsdp" => Axis::Fsdp,
                "tensor" | "tp" | "model" => Axis::Tensor,
                other => return Err(bad(format!("unknown axis `{other}` (data, fsdp, tensor)"))),
            };
            if seen.contains(&axis) {
                return Err(bad(format!("axis `{}` given twice", axis.as_str())));
            }
            seen.push(axis);
            match axis {
                Axis::Data => m.data = n,
                Axis::Fsdp => m.fsdp = n,
                Axis::Tensor => m.tensor = n,
            }
        }
        if seen.is_empty() {
            return Err(bad("no axis given".into()));
        }
        Ok(m)
    }
}

impl fmt::Display for Mesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data={},fsdp={},tensor={}", self.data, self.fsdp, self.tensor)
    }
}

/// The dimension the `tensor` axis splits and the one the `fsdp` axis prefers.
fn split_dims(
    role: &ParamRole,
    shape: &[u64],
    hidden: Option<u64>,
    untied: bool,
) -> (Option<usize>, Option<usize>) {
    let rank = shape.len();
    let largest = || (0..rank).max_by_key(|&i| (shape[i], std::cmp::Reverse(i)));
    match role.kind.parallel() {
        Parallel::Replicated => (None, None),
        Parallel::Fsdp => (None, if rank >= 2 { largest() } else { None }),
        _ if rank < 2 => (None, None),
        // A lookup table with its own LM head: `tensor` on the hidden dimension. GSPMD cannot
        // partition a gather on the dimension it indexes (XLA warns "Involuntary full
        // rematerialization" and replicates the table, measured in scripts/proofs/shard_proof.py),
        // while a split on the gathered rows' features passes through.
        Parallel::Vocab if role.kind == Kind::Embedding && untied && rank == 2 => {
            (Some(1), Some(0))
        }
        Parallel::Vocab => {
            let vocab = match (role.kind, role.orientation) {
                (Kind::LmHead, Orientation::InOut) => rank - 1,
                _ => 0,
            };
            let other = if vocab == 0 { rank - 1 } else { 0 };
            (Some(vocab), Some(other))
        }
        Parallel::Column | Parallel::Row if rank >= 3 => {
            // Flax/Keras attention kernels: `[D, H, Dh]`, `[H, Dh, D]`, keras-hub Gemma
            // `[H, D, Dh]`: heads are the first dimension that is not the hidden size. Gemma's
            // stacked projections (`kv_einsum` `[2, K, D, Dh]`, `qkv_einsum` `[3, N, D, Dh]`)
            // lead with the q/k/v index, which is not a head dimension.
            let stacked = rank >= 4 && matches!(role.kind, Kind::Qkv | Kind::Key | Kind::Value);
            let hid = shape.iter().position(|&s| Some(s) == hidden);
            let heads = (usize::from(stacked)..rank).find(|&i| Some(i) != hid).unwrap_or(0);
            (Some(heads), hid.or_else(|| (0..rank).find(|&i| i != heads)))
        }
        Parallel::Column | Parallel::Row => {
            let out = match role.orientation {
                Orientation::OutIn => 0,
                Orientation::InOut => 1,
            };
            let inp = 1 - out;
            if role.kind.parallel() == Parallel::Column {
                (Some(out), Some(inp))
            } else {
                (Some(inp), Some(out))
            }
        }
    }
}

/// Whether `tensor` divides every column/row dimension; the first that it does not, as
/// `(param, kind, dim, size)`.
pub(crate) fn tensor_divides(
    roles: &[(ParamInfo, ParamRole)],
    tensor: u32,
) -> Result<(), (String, &'static str, usize, u64)> {
    if tensor <= 1 {
        return Ok(());
    }
    let hidden = hidden_of(roles);
    for (p, r) in roles {
        // Key/value projections with fewer KV heads than the axis (MQA, GQA) are replicated
        // over it instead, as Megatron does.
        if !matches!(r.kind.parallel(), Parallel::Column | Parallel::Row)
            || matches!(r.kind, Kind::Key | Kind::Value)
        {
            continue;
        }
        if let (Some(d), _) = split_dims(r, &p.shape, hidden, false)
            && p.shape[d] % u64::from(tensor) != 0
        {
            return Err((p.name.clone(), r.kind.as_str(), d, p.shape[d]));
        }
    }
    Ok(())
}

/// The hidden size as [`super::model_dims`] reads it (embedding width, else the most common
/// norm length).
fn hidden_of(roles: &[(ParamInfo, ParamRole)]) -> Option<u64> {
    let emb = roles
        .iter()
        .filter(|(p, r)| r.kind == Kind::Embedding && p.shape.len() == 2)
        .max_by_key(|(p, _)| p.shape[0])
        .map(|(p, _)| p.shape[1]);
    emb.or_else(|| {
        let mut counts = std::collections::HashMap::new();
        for (p, r) in roles {
            if r.kind == Kind::Norm && p.shape.len() == 1 {
                *counts.entry(p.shape[0]).or_insert(0usize) += 1;
            }
        }
        counts.into_iter().max_by_key(|(len, n)| (*n, *len)).map(|(l, _)| l)
    })
}

/// Parameters placed on a mesh, and what could not be placed as the rule wanted.
pub(crate) struct Placed {
    pub(crate) params: Vec<ParamPlan>,
    pub(crate) notes: Vec<String>,
}

/// Places every parameter on `mesh`. Trained parameters are counted at `param_dtype`, state
/// at its stored dtype; `tied_head` is [`super::ModelDims::tied_head`] (the embedding is then
/// split on the vocabulary, else on its features). Assumes [`tensor_divides`] passed.
pub(crate) fn place(
    roles: &[(ParamInfo, ParamRole)],
    mesh: &Mesh,
    param_dtype: DType,
    tied_head: bool,
) -> Placed {
    let hidden = hidden_of(roles);
    let untied = !tied_head;
    let mut notes = Vec::new();
    let mut vocab_whole: Vec<String> = Vec::new();
    let mut fsdp_whole = 0usize;
    let mut kv_whole: Vec<u64> = Vec::new();
    let params = roles
        .iter()
        .map(|(p, r)| {
            let mut spec: Vec<Option<Axis>> = vec![None; p.shape.len()];
            let (tp, fs) = split_dims(r, &p.shape, hidden, untied);
            if let Some(d) = tp.filter(|_| mesh.tensor > 1) {
                if p.shape[d] % u64::from(mesh.tensor) == 0 {
                    spec[d] = Some(Axis::Tensor);
                } else if matches!(r.kind, Kind::Key | Kind::Value) {
                    kv_whole.push(p.shape[d]);
                } else {
                    vocab_whole.push(format!("`{}` ({} rows)", p.name, p.shape[d]));
                }
            }
            if let Some(d) = fs.filter(|_| mesh.fsdp > 1) {
                let f = u64::from(mesh.fsdp);
                let pick = if spec[d].is_none() && p.shape[d] % f == 0 {
                    Some(d)
                } else {
                    (0..p.shape.len())
                        .filter(|&i| spec[i].is_none() && p.shape[i] % f == 0)
                        .max_by_key(|&i| p.shape[i])
                };
                match pick {
                    Some(i) => spec[i] = Some(Axis::Fsdp),
                    None => fsdp_whole += 1,
                }
            }
            let local_shape: Vec<u64> = p
                .shape
                .iter()
                .zip(&spec)
                .map(|(&s, a)| a.map_or(s, |a| s / u64::from(mesh.size(a))))
                .collect();
            let dtype = if r.kind.trained() { param_dtype } else { p.dtype };
            let local_bytes = dtype.storage_bytes(local_shape.iter().product::<u64>()).unwrap_or(0);
            ParamPlan {
                name: p.name.clone(),
                shape: p.shape.clone(),
                dtype: p.dtype.to_string(),
                kind: r.kind,
                recognised: r.recognised,
                orientation: r.orientation,
                layer: r.layer,
                spec,
                local_shape,
                local_bytes,
            }
        })
        .collect();
    if !vocab_whole.is_empty() {
        notes.push(format!(
            "tensor={} does not divide the vocabulary of {}: kept whole on the tensor axis (pad the vocabulary to a multiple of {} to split it)",
            mesh.tensor,
            vocab_whole.join(", "),
            mesh.tensor
        ));
    }
    if !kv_whole.is_empty() {
        kv_whole.sort_unstable();
        kv_whole.dedup();
        notes.push(format!(
            "{} key/value projections have {} head(s) or features, not divisible by tensor={}: replicated over the tensor axis (MQA/GQA)",
            roles.iter().filter(|(_, r)| matches!(r.kind, Kind::Key | Kind::Value)).count(),
            kv_whole.iter().map(u64::to_string).collect::<Vec<_>>().join("/"),
            mesh.tensor
        ));
    }
    if fsdp_whole > 0 {
        notes.push(format!(
            "{fsdp_whole} parameter(s) have no dimension divisible by fsdp={}: replicated",
            mesh.fsdp
        ));
    }
    Placed { params, notes }
}

/// The activations' batch spec: the batch split over `data` then `fsdp` (MaxText's
/// `activation_batch: [data, fsdp]`) as far as the batch divides, the rest whole.
#[must_use]
pub fn batch_spec(mesh: &Mesh, batch: u64) -> Vec<Option<Vec<Axis>>> {
    let axes = batch_axes(mesh, batch);
    vec![if axes.is_empty() { None } else { Some(axes) }, None]
}

/// The axes the batch is split over.
#[must_use]
pub fn batch_axes(mesh: &Mesh, batch: u64) -> Vec<Axis> {
    let mut axes = Vec::new();
    let mut split = 1u64;
    for a in [Axis::Data, Axis::Fsdp] {
        let n = u64::from(mesh.size(a));
        if n > 1 && batch.is_multiple_of(split * n) {
            axes.push(a);
            split *= n;
        }
    }
    axes
}
