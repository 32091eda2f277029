//! A plan as code: JAX, torch_xla SPMD, and a JSON spec file.
//!
//! - JAX: `jax.sharding.Mesh` over the devices reshaped to the mesh with
//!   `axis_types=(AxisType.Auto,)*3` (JAX 0.9+ `make_mesh` defaults to `Explicit`, which rejects
//!   a matmul whose operands are both split on the contracting dimension unless the output
//!   sharding is given; `sharding-anchors.md` §6), a `PARAM_SPECS` dict keyed by parameter
//!   path, and helpers that build `NamedSharding`s for a flat dict or a pytree.
//! - torch_xla: `xr.use_spmd()`, `xs.Mesh(np.arange(n), shape, names)`, and `xs.mark_sharding`
//!   per `named_parameters()` entry; the specs are in the stored order, `[out, in]` for
//!   `nn.Linear` (`sharding-anchors.md` §4, §5).
//! - JSON: mesh axes and sizes, one spec per parameter, the batch spec.

use serde::Serialize;

use super::ShardPlan;
use super::spec::Axis;

/// Python string literal (double-quoted, escaped).
fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JAX `PartitionSpec`: `P()` when nothing is split, which fits a value of any rank (a PRNG
/// key is `uint32[2]` in the exported module and a rank-0 key array in the program).
fn jax_spec(spec: &[Option<Axis>]) -> String {
    if spec.iter().all(Option::is_none) {
        return "P()".to_owned();
    }
    format!("P({})", py_spec(spec))
}

fn py_spec(spec: &[Option<Axis>]) -> String {
    let parts: Vec<String> =
        spec.iter().map(|a| a.map_or_else(|| "None".to_owned(), |a| py_str(a.as_str()))).collect();
    parts.join(", ")
}

fn header(plan: &ShardPlan, lang: &str) -> String {
    let opt = plan.optimizer.map(|o| format!(", {o}")).unwrap_or_default();
    format!(
        "# Sharding plan written by `tpuport shard` for {lang}: {} on {} ({} chips, topology {}), {}{}.\n\
         # Mesh {} ({}); batch {} x seq {}; per chip {:.2} GiB of {:.2} GiB ({}).\n",
        plan.params.len().to_string() + " parameters",
        plan.slice,
        plan.chips,
        plan.topology,
        plan.workload,
        opt,
        plan.chosen.mesh,
        plan.chosen.strategy,
        plan.batch,
        plan.seq,
        plan.chosen.memory.total as f64 / f64::from(1u32 << 30),
        plan.chosen.memory.budget as f64 / f64::from(1u32 << 30),
        if plan.chosen.fits { "fits" } else { "does not fit" }
    )
}

fn mesh_consts(plan: &ShardPlan) -> String {
    let m = &plan.chosen.mesh;
    format!(
        "MESH_AXES = (\"data\", \"fsdp\", \"tensor\")\nMESH_SHAPE = ({}, {}, {})\n",
        m.data, m.fsdp, m.tensor
    )
}

fn batch_dim_py(plan: &ShardPlan) -> String {
    batch_entries(plan).into_iter().next().unwrap_or_else(|| "None".to_owned())
}

fn batch_spec_py(plan: &ShardPlan) -> String {
    batch_entries(plan).join(", ")
}

fn batch_entries(plan: &ShardPlan) -> Vec<String> {
    plan.batch_spec
        .iter()
        .map(|d| match d {
            None => "None".to_owned(),
            Some(axes) if axes.len() == 1 => py_str(axes[0].as_str()),
            Some(axes) => format!(
                "({},)",
                axes.iter().map(|a| py_str(a.as_str())).collect::<Vec<_>>().join(", ")
            ),
        })
        .collect()
}

/// Whether the logits are split on the vocabulary (the `tensor` axis divides it).
fn vocab_split(plan: &ShardPlan) -> bool {
    let t = plan.chosen.mesh.tensor;
    t > 1 && plan.model.vocab.is_some_and(|v| v % u64::from(t) == 0)
}

/// The plan as a JAX module.
#[must_use]
pub fn jax(plan: &ShardPlan) -> String {
    let mut s = header(plan, "JAX");
    s.push_str(
        "import numpy as np\nimport jax\nfrom jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P\n\n",
    );
    s.push_str(&mesh_consts(plan));
    let batch = batch_spec_py(plan);
    let first = batch_dim_py(plan);
    s.push_str(&format!(
        "# Activations: [batch, seq, ...] split on the batch; logits [batch, seq, vocab].\nBATCH_SPEC = P({batch})\nLOGITS_SPEC = P({first}, None, {})\n\n",
        if vocab_split(plan) { "\"tensor\"" } else { "None" }
    ));
    s.push_str("# Per parameter path, as the checkpoint or export names it.\nPARAM_SPECS = {\n");
    for p in &plan.params {
        s.push_str(&format!("    {}: {},\n", py_str(&p.name), jax_spec(&p.spec)));
    }
    let state = plan.state_specs();
    if !state.is_empty() {
        s.push_str("    # The training step's optimizer state, each placed like its parameter.\n");
        for (st, p) in state {
            s.push_str(&format!("    {}: {},\n", py_str(&st.name), jax_spec(&p.spec)));
        }
    }
    s.push_str("}\n\n");
    s.push_str(
        "\ndef make_mesh(devices=None):\n    \"\"\"The mesh, with Auto axis types (GSPMD propagates shardings through matmuls).\"\"\"\n    devices = jax.devices() if devices is None else devices\n    return Mesh(np.asarray(devices).reshape(MESH_SHAPE), MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES))\n\n\ndef param_shardings(mesh, names=None):\n    \"\"\"NamedSharding per parameter path (every path in PARAM_SPECS, or `names`).\"\"\"\n    names = PARAM_SPECS.keys() if names is None else names\n    return {n: NamedSharding(mesh, PARAM_SPECS.get(n, P())) for n in names}\n\n\ndef batch_sharding(mesh, rank=2):\n    \"\"\"NamedSharding of an activation/input of `rank` dimensions with the batch first.\"\"\"\n    spec = tuple(BATCH_SPEC)[:1] + (None,) * (rank - 1)\n    return NamedSharding(mesh, P(*spec))\n\n\ndef logits_sharding(mesh):\n    \"\"\"NamedSharding of [batch, seq, vocab] logits.\"\"\"\n    return NamedSharding(mesh, LOGITS_SPEC)\n\n\ndef constrain(x, mesh):\n    \"\"\"Pins an activation (batch first) to the batch split; call it on the hidden states at\n    layer boundaries so the partitioner keeps FSDP's batch split instead of splitting the\n    hidden dimension.\"\"\"\n    return jax.lax.with_sharding_constraint(x, batch_sharding(mesh, x.ndim))\n\n\ndef shard_params(params, mesh):\n    \"\"\"Places a flat {path: array} dict on the mesh.\"\"\"\n    shardings = param_shardings(mesh, params.keys())\n    return {n: jax.device_put(v, shardings[n]) for n, v in params.items()}\n\n\ndef tree_shardings(tree, mesh, prefix=\"\"):\n    \"\"\"NamedSharding per leaf of a pytree passed to a jitted step, found by the name JAX gives\n    the leaf: `prefix + keystr(path)` with the argument's name as prefix, e.g.\n    `jax.jit(step, in_shardings=(tree_shardings(model, mesh, \"model\"), ...))`. Leaves the\n    plan does not list are replicated.\"\"\"\n    def one(path, _):\n        return NamedSharding(mesh, PARAM_SPECS.get(prefix + jax.tree_util.keystr(path), P()))\n    return jax.tree_util.tree_map_with_path(one, tree)\n",
    );
    s
}

/// The plan as torch_xla SPMD code.
#[must_use]
pub fn torch_xla(plan: &ShardPlan) -> String {
    let mut s = header(plan, "torch_xla SPMD");
    s.push_str(
        "import numpy as np\nimport torch_xla.distributed.spmd as xs\nimport torch_xla.runtime as xr\n\n",
    );
    s.push_str(&mesh_consts(plan));
    s.push_str(&format!("BATCH_SPEC = ({},)\n\n", batch_spec_py(plan)));
    s.push_str(
        "# Per `named_parameters()` name, in the stored order (`[out, in]` for nn.Linear).\nPARAM_SPECS = {\n",
    );
    for p in &plan.params {
        s.push_str(&format!(
            "    {}: ({}{}),\n",
            py_str(&p.name),
            py_spec(&p.spec),
            if p.spec.len() == 1 { "," } else { "" }
        ));
    }
    s.push_str("}\n\n");
    s.push_str(
        "\ndef make_mesh():\n    \"\"\"Enables SPMD and builds the mesh over every device.\"\"\"\n    xr.use_spmd()\n    n = xr.global_runtime_device_count()\n    shape = MESH_SHAPE if int(np.prod(MESH_SHAPE)) == n else (1, n, 1)\n    return xs.Mesh(np.arange(n), shape, MESH_AXES)\n\n\ndef shard_model(model, mesh):\n    \"\"\"Marks every planned parameter of `model` (already on the XLA device); returns the\n    names of parameters the plan does not cover.\"\"\"\n    missing = []\n    for name, param in model.named_parameters():\n        spec = PARAM_SPECS.get(name)\n        if spec is None or len(spec) != param.dim():\n            missing.append(name)\n            continue\n        xs.mark_sharding(param, mesh, spec)\n    return missing\n\n\ndef shard_batch(tensor, mesh):\n    \"\"\"Marks an input whose first dimension is the batch.\"\"\"\n    spec = BATCH_SPEC[:1] + (None,) * (tensor.dim() - 1)\n    xs.mark_sharding(tensor, mesh, spec)\n    return tensor\n",
    );
    if plan.chosen.mesh.fsdp > 1 {
        s.push_str(&format!(
            "\n\ndef wrap_fsdpv2(model, mesh, shard_output=None):\n    \"\"\"torch_xla's FSDPv2 around `model` (on the XLA device): the plan's specs first\n    (`shard_model`), then `SpmdFullyShardedDataParallel` shards every parameter the plan left\n    whole on its largest dimension over `fsdp`{extra_doc}. Pass `shard_output(output, mesh)`\n    when the forward does not return a batch-first tensor (a scalar loss: `lambda o, m: None`).\"\"\"\n    from torch_xla.experimental.spmd_fully_sharded_data_parallel import (\n        SpmdFullyShardedDataParallel as FSDPv2,\n    )\n\n    shard_model(model, mesh)\n    return FSDPv2(model, mesh=mesh, shard_output=shard_output{extra_arg})\n",
            extra_doc = if plan.chosen.mesh.data > 1 { ", with the batch also split over `data`" } else { "" },
            extra_arg = if plan.chosen.mesh.data > 1 { ", extra_data_axis=\"data\"" } else { "" },
        ));
    }
    s
}

/// The spec file.
#[derive(Serialize)]
struct SpecFile<'a> {
    schema: &'static str,
    slice: &'a str,
    mesh: MeshJson,
    batch_spec: &'a [Option<Vec<Axis>>],
    params: Vec<ParamJson<'a>>,
    /// A training step's optimizer state, with the spec of the parameter it is placed like.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    state: Vec<StateJson<'a>>,
}

#[derive(Serialize)]
struct StateJson<'a> {
    name: &'a str,
    like: &'a str,
    spec: &'a [Option<Axis>],
}

#[derive(Serialize)]
struct MeshJson {
    axes: [&'static str; 3],
    shape: [u32; 3],
}

#[derive(Serialize)]
struct ParamJson<'a> {
    name: &'a str,
    shape: &'a [u64],
    spec: &'a [Option<Axis>],
}

/// The plan's mesh and specs as JSON.
///
/// # Errors
/// Serialisation errors (none expected).
pub fn json(plan: &ShardPlan) -> Result<String, serde_json::Error> {
    let m = &plan.chosen.mesh;
    let file = SpecFile {
        schema: "tpuport.shard-spec/1",
        slice: &plan.slice,
        mesh: MeshJson { axes: ["data", "fsdp", "tensor"], shape: [m.data, m.fsdp, m.tensor] },
        batch_spec: &plan.batch_spec,
        params: plan
            .params
            .iter()
            .map(|p| ParamJson { name: &p.name, shape: &p.shape, spec: &p.spec })
            .collect(),
        state: plan
            .state_specs()
            .into_iter()
            .map(|(st, p)| StateJson { name: &st.name, like: &p.name, spec: &p.spec })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&file)?;
    s.push('\n');
    Ok(s)
}
