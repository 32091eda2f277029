//! `tpuport shard MODEL --slice v5e-8`: a sharding plan (mesh, partition spec per parameter,
//! memory per chip, collectives per step) from `tpuport_analysis::shard`, rendered by
//! `tpuport_report::shard`, and the plan as JAX / torch_xla / JSON code (`--emit`).
//!
//! Exit status: 0 a plan that fits, 1 no mesh fits the chip's HBM (the report shows the
//! smallest), 2 anything else (bad input, a mesh the slice or the model cannot take).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tpuport_analysis::roles::Role;
use tpuport_analysis::shard::{self, Mesh, ShardOptions, Strategy, emit};
use tpuport_analysis::{Optimizer, Workload};
use tpuport_model::{DType, Model, ModelFormat};

use crate::cli::GlobalArgs;
use crate::commands::{RoleArgs, Status};
use crate::printer::Printer;

/// What `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EmitKind {
    /// A Python module with the mesh and a `NamedSharding` per parameter path.
    Jax,
    /// A Python module that marks every parameter with `xs.mark_sharding`.
    TorchXla,
    /// The mesh and the specs as JSON.
    Json,
}

/// Element types the plan can count parameters and activations in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlanDtype {
    /// 32-bit float.
    F32,
    /// bfloat16.
    Bf16,
}

impl PlanDtype {
    fn dtype(self) -> DType {
        match self {
            PlanDtype::F32 => DType::F32,
            PlanDtype::Bf16 => DType::BF16,
        }
    }
}

/// Arguments of `tpuport shard`.
#[derive(Debug, Args)]
pub(crate) struct ShardArgs {
    /// Model or checkpoint: .safetensors (or its index.json), .pt, .onnx, StableHLO .mlir /
    /// .mlirbc. Only names, shapes and dtypes are read.
    pub(crate) model: PathBuf,
    /// TPU slice: `v5e-8`, `v5e-4`, `v6e-8`, `v5p-8`, `v4-8`, `v6e-2x4`.
    #[arg(long, value_name = "SLICE")]
    pub(crate) slice: String,
    /// What the plan is for.
    #[arg(long, default_value = "infer", value_parser = parse_workload)]
    pub(crate) workload: Workload,
    /// Global batch in sequences (default: one per chip).
    #[arg(long)]
    pub(crate) batch: Option<u64>,
    /// Sequence length (default 2048).
    #[arg(long)]
    pub(crate) seq: Option<u64>,
    /// Optimizer whose state is counted when training.
    #[arg(long, default_value = "adamw", value_parser = parse_optimizer)]
    pub(crate) optimizer: Optimizer,
    /// Mesh family to search: auto, dp, fsdp, tp, fsdp+tp.
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    pub(crate) strategy: Strategy,
    /// An explicit mesh, e.g. `data=2,fsdp=2,tensor=2` (sizes multiply to the slice's chips).
    #[arg(long, value_name = "AXIS=N,...", value_parser = parse_mesh)]
    pub(crate) mesh: Option<Mesh>,
    /// Element type of the parameters and gradients (default: f32 for training, as stored
    /// for inference).
    #[arg(long, value_enum)]
    pub(crate) param_dtype: Option<PlanDtype>,
    /// Element type of the activations.
    #[arg(long, value_enum, default_value_t = PlanDtype::Bf16)]
    pub(crate) dtype: PlanDtype,
    /// Attention heads, where the weights do not show them (PyTorch `[out, in]` matrices).
    #[arg(long)]
    pub(crate) heads: Option<u64>,
    /// Write the plan as code: jax, torch-xla or json (to stdout, or to `-o FILE`).
    #[arg(long, value_enum)]
    pub(crate) emit: Option<EmitKind>,
    /// File for `--emit` (the report still goes to stdout).
    #[arg(long, short = 'o', value_name = "FILE", requires = "emit")]
    pub(crate) output: Option<PathBuf>,
    /// A TOML file that overrides or extends the built-in chip catalog.
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) roles: RoleArgs,
    /// Print the time spent importing and planning to stderr.
    #[arg(long)]
    pub(crate) timings: bool,
    /// Prove the plan with the TPU compiler: place the chosen specs on the model's own
    /// program (ONNX lowered by tpuport, or StableHLO text: a forward pass, or with
    /// `--workload train` an exported training step, whose optimizer moments are placed like
    /// their parameters), compile it for the slice with libtpu and report its per-chip memory
    /// next to the plan's.
    #[arg(long)]
    pub(crate) verify: bool,
    /// libtpu for `--verify` (default: found as `tpuport compile` finds it).
    #[arg(long, value_name = "PATH", requires = "verify")]
    pub(crate) plugin: Option<PathBuf>,
    /// `--verify` on ONNX: the size of a named symbolic dimension, e.g. `samples=512`
    /// (repeatable). Unnamed ones: each input's leading dimension is the batch, any other the
    /// sequence length.
    #[arg(long = "dim", value_name = "NAME=N", value_parser = crate::commands::inspect::parse_dim, requires = "verify")]
    pub(crate) dims: Vec<(String, u64)>,
    /// `--verify` on ONNX: the full shape of a named input, e.g. `state=2x8x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = crate::commands::inspect::parse_input_shape, requires = "verify")]
    pub(crate) input_shape: Vec<(String, tpuport_model::Shape)>,
}

fn parse_workload(s: &str) -> Result<Workload, String> {
    s.parse()
}
fn parse_optimizer(s: &str) -> Result<Optimizer, String> {
    s.parse()
}
fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse()
}
fn parse_mesh(s: &str) -> Result<Mesh, String> {
    Mesh::parse(s).map_err(|e| e.to_string())
}

pub(crate) fn run(a: &ShardArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let catalog = crate::commands::catalog::load(a.catalog.as_ref())?;
    let slice = catalog.slice(&a.slice)?;
    let chip = catalog.chip(&slice.chip)?;
    if !chip.is_tpu() {
        anyhow::bail!("--slice {}: `{}` is not a TPU", a.slice, chip.id);
    }
    if a.batch == Some(0) || a.seq == Some(0) {
        anyhow::bail!("--batch and --seq must be at least 1");
    }
    let started = std::time::Instant::now();
    let model = tpuport_formats::open(&a.model, &tpuport_formats::ImportOptions::default())?;
    if a.verify
        && !matches!(
            model.format,
            ModelFormat::Onnx | ModelFormat::StablehloText | ModelFormat::StablehloBytecode
        )
    {
        anyhow::bail!(
            "{}: --verify needs the model's program (ONNX or StableHLO); a {} holds weights \
             only: export the model (torch.onnx.export, jax.export) and pass that",
            a.model.display(),
            model.format.name()
        );
    }
    if a.verify && a.workload.is_training() && model.format == ModelFormat::Onnx {
        anyhow::bail!(
            "{}: --verify --workload train compiles a training step, and an ONNX export holds \
             the forward pass only: export the step itself as StableHLO text \
             (`jax.jit(step, donate_argnums=...).lower(...).as_text(debug_info=True)`) and pass that",
            a.model.display()
        );
    }
    let imported = std::time::Instant::now();
    let roles = tpuport_analysis::roles::RoleOptions { data_args: a.roles.data_args.clone() };
    let shard::params::ModelParams { params, state, state_by, fixed_batch, fixed_seq } =
        shard::params::model_params(&model, &roles, a.workload, a.optimizer)
            .map_err(|e| anyhow::anyhow!("{}: {e}", a.model.display()))?;
    let fixed = (fixed_batch, fixed_seq);
    // `--verify` compiles a program, and the plan counts it in the program's dtypes so that the
    // two figures compare like with like. tpuport's lowering of an ONNX model keeps weights and
    // activations in one dtype: f32 unless the parameters are asked in bf16. A StableHLO
    // module's parameters say how they are stored, and its matmuls what it computes in (a
    // mixed-precision step keeps f32 parameters and multiplies in bf16).
    let stored_bf16 = model.format != ModelFormat::Onnx
        && !params.is_empty()
        && params.iter().all(|q| q.dtype == DType::BF16);
    let program_dtype =
        a.param_dtype.unwrap_or(if stored_bf16 { PlanDtype::Bf16 } else { PlanDtype::F32 });
    let matmuls = (a.verify && model.format != ModelFormat::Onnx)
        .then(|| tpuport_analysis::cost::analyze(&model).matmul_dtype())
        .flatten()
        .and_then(|d| match d {
            DType::BF16 => Some(PlanDtype::Bf16),
            DType::F32 => Some(PlanDtype::F32),
            _ => None,
        });
    let compute = if a.verify { matmuls.unwrap_or(program_dtype) } else { a.dtype };
    let opts = ShardOptions {
        workload: a.workload,
        optimizer: a.optimizer,
        batch: a.batch.or(fixed.0),
        seq: a.seq.or(fixed.1),
        strategy: a.strategy,
        mesh: a.mesh,
        param_dtype: if a.verify {
            Some(program_dtype.dtype())
        } else {
            a.param_dtype.map(PlanDtype::dtype)
        },
        compute_dtype: Some(compute.dtype()),
        heads: a.heads,
        llm: model.metadata.llm.clone(),
    };
    let mut plan = shard::plan(&params, &a.slice, &slice, chip, &opts)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.model.display()))?;
    plan.state = state;
    plan.look_wider(&params, &catalog.slices(chip), chip, &opts);
    let from_module: Vec<String> =
        [(a.batch.is_none(), fixed.0, "batch"), (a.seq.is_none(), fixed.1, "sequence")]
            .iter()
            .filter_map(|&(unset, v, what)| Some(format!("{what} {}", v.filter(|_| unset)?)))
            .collect();
    if !from_module.is_empty() {
        plan.notes.push(format!(
            "{} from the module's data arguments (its shapes are fixed; --batch / --seq override)",
            from_module.join(" and ")
        ));
    }
    if let Some(by) = state_by {
        plan.notes.push(format!(
            "training step: {} arguments are optimizer state (told by their {by}), placed like \
             their parameters and counted as the {} state, not as parameters",
            plan.state.len(),
            a.optimizer.as_str()
        ));
    } else if a.workload.is_training()
        && a.optimizer.full_state_slots() > 0
        && model.format != ModelFormat::Onnx
        && model.weights.is_empty()
    {
        plan.notes.push(format!(
            "no argument of this module was recognised as {} state (by a name such as \
             `mu['w']`, or as the parameters' run of shapes repeated once per moment): every \
             weight-like argument is counted as a parameter; a training step exported with names \
             (`as_text(debug_info=True)`, `jax.export`) is split correctly",
            a.optimizer.as_str()
        ));
    }
    if a.verify {
        if compute != a.dtype {
            plan.notes.push(match matmuls {
                Some(_) => format!(
                    "--verify: activations counted in {}, the type of most of the module's \
                     matmul FLOPs",
                    plan.compute_dtype
                ),
                None => format!(
                    "--verify: activations counted in {} like the compiled program, which \
                     computes in its parameters' dtype (pass --param-dtype bf16 for a bf16 program)",
                    plan.compute_dtype
                ),
            });
        }
        verify(a, &model, &mut plan, &catalog, p, program_dtype)?;
    }
    if a.timings {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        p.note(&format!(
            "timings: import {:.3} ms, planning {:.3} ms",
            ms(imported - started),
            ms(imported.elapsed())
        ));
    }
    let code = match a.emit {
        None => None,
        Some(EmitKind::Jax) => Some(emit::jax(&plan)),
        Some(EmitKind::TorchXla) => Some(emit::torch_xla(&plan)),
        Some(EmitKind::Json) => Some(emit::json(&plan)?),
    };
    match (code, &a.output) {
        (Some(code), None) => p.data(code.trim_end_matches('\n')),
        (code, out) => {
            if let (Some(code), Some(path)) = (code, out) {
                tpuport_model::fs::write_atomic_bytes(path, code.as_bytes())
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            }
            let name = a.model.display().to_string();
            super::emit_report(p, g.format, &plan, || {
                tpuport_report::shard::render_text(&name, &plan, p.paint())
            })?;
        }
    }
    Ok(if plan.fits() { Status::Success } else { Status::Findings })
}

/// `--verify`: places the chosen plan on the model's program, compiles it with libtpu for the
/// slice and records the compiler's per-chip memory on the plan.
fn verify(
    a: &ShardArgs,
    model: &Model,
    plan: &mut shard::ShardPlan,
    catalog: &tpuport_hw::Catalog,
    p: &Printer,
    dtype: PlanDtype,
) -> anyhow::Result<()> {
    use tpuport_compile::{Placement, Request, compile};
    // Data inputs: an ONNX model's graph inputs; a StableHLO module's data arguments.
    let data: Vec<String> = if model.format == ModelFormat::Onnx {
        model.graph.inputs.iter().map(|&v| model.graph.value(v).name.clone()).collect()
    } else {
        a.roles
            .roles(&a.model, model)?
            .args
            .iter()
            .filter(|r| r.role == Role::Data)
            .map(|r| r.label().to_owned())
            .collect()
    };
    // An ONNX model's symbolic dimensions: `--dim` and `--input-shape` first; otherwise the
    // leading one of each input is the batch and any other takes the sequence length.
    // (A StableHLO module's shapes are fixed: it takes none of these.)
    let mut import = tpuport_formats::ImportOptions::default();
    if model.format == ModelFormat::Onnx {
        import = tpuport_formats::ImportOptions {
            batch: Some(plan.batch),
            dims: a.dims.iter().cloned().collect(),
            input_shapes: a.input_shape.iter().cloned().collect(),
            ..Default::default()
        };
        for &v in &model.graph.inputs {
            let Some(shape) = &model.graph.value(v).ty.shape else { continue };
            for d in shape.0.iter().skip(1) {
                if let tpuport_model::Dim::Sym(name) = d {
                    import.dims.entry(name.clone()).or_insert(plan.seq);
                }
            }
        }
    }
    // Each optimizer moment takes its parameter's spec.
    let specs = plan
        .params
        .iter()
        .map(|q| (q.name.clone(), q.spec.clone()))
        .chain(plan.state_specs().into_iter().map(|(st, q)| (st.name.clone(), q.spec.clone())))
        .collect();
    let placement = Placement {
        mesh: plan.chosen.mesh,
        params: specs,
        batch: plan.batch,
        batch_axes: plan.batch_spec.first().cloned().flatten().unwrap_or_default(),
        data_args: a.roles.data_args.clone(),
    };
    let req = Request {
        model: a.model.clone(),
        target: a.slice.clone(),
        import,
        compute: if dtype == PlanDtype::Bf16 {
            tpuport_lower::onnx::ComputeType::Bf16
        } else {
            tpuport_lower::onnx::ComputeType::Native
        },
        partitions: None,
        plugin: a.plugin.clone(),
        save: None,
        placement: Some(placement),
    };
    let report = compile(&req, catalog, p)?;
    let accounted: Vec<String> =
        data.into_iter().chain(plan.state.iter().map(|st| st.name.clone())).collect();
    plan.record_compiler(&report.audit_facts(&plan.chip), &accounted);
    Ok(())
}
