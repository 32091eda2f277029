//! The real TPU compiler (libtpu) on a machine without a TPU, behind `tpuport compile` and the
//! compiler check of `tpuport audit --compiler`: the slice name becomes a libtpu topology
//! (`v5e:2x4`), the model a StableHLO program (ONNX through tpuport's lowering), and
//! `PJRT_Compile` against the topology answers with the compiler's own figures: memory per
//! device and whether it fits, cost, the layout and sharding of every parameter and output, or
//! the compiler's refusal. `save` keeps the serialized TPU executable with a manifest. JSON
//! schema `tpuport.compile/1`: `docs/compile.md`.
//!
//! The target `cpu` compiles with the PJRT CPU plugin instead (on this host, for one device),
//! so that an executable saved with its manifest can be produced, and served by
//! `tpuport serve`, on a machine without a TPU.
//!
//! [`compile`] returns a [`CompileReport`] whose `outcome` is `compiled` or `out_of_memory` (the
//! compiler refused for lack of HBM: a finding, with the bytes its message names); every other
//! failure (no libtpu, a program the TPU compiler rejects, a model that cannot be read or
//! lowered) is an error.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};
use tpuport_formats::ImportOptions;
use tpuport_hw::{Catalog, CompileTarget, XlaLayout};
use tpuport_lower::onnx::{ArgSource, ComputeType, LowerOptions, lower};
use tpuport_model::{DType, ModelFormat};
use tpuport_pjrt::{Executable, NamedValue, PluginKind, Program, Topology, Value};

use tpuport_analysis::compiler_check::{CompiledTensor, CompilerFacts, CompilerInput};

use crate::error::{Context as _, Result, invalid, io};
use tpuport_exec::{Module, Observer, Param};

/// Manifest schema of a saved executable (a CPU one too: its `platform` says `cpu`).
pub const MANIFEST_SCHEMA: &str = "tpuport.tpu-executable/1";

/// The `--target` that compiles with the PJRT CPU plugin instead of libtpu.
pub const CPU_TARGET: &str = "cpu";

/// JSON schema tag of [`CompileReport`].
pub const SCHEMA: &str = "tpuport.compile/1";

/// Everything the TPU compiler answered (`tpuport compile`'s report).
#[derive(Clone, Debug, Serialize)]
pub struct CompileReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The model file as given.
    pub model: String,
    /// SHA-256 of the model file, hex.
    pub model_sha256: String,
    /// How the program was obtained: `stablehlo` or `onnx (lowered by tpuport)`.
    pub source: String,
    /// The slice named with `--target` (`v5e-8`).
    pub target: String,
    /// libtpu's topology name (`v5e:2x4`).
    pub topology: String,
    /// Chip (`TPU v5e`).
    pub chip: String,
    /// Device kind libtpu reports (`TPU v5 lite`).
    pub device_kind: String,
    /// Devices in the slice.
    pub slice_devices: u32,
    /// Devices the program runs on (its partition count; 1 when unsharded).
    pub program_devices: u32,
    /// The compiler.
    pub compiler: CompilerInfo,
    /// Wall time of loading and initialising libtpu and describing the topology, milliseconds.
    pub setup_ms: f64,
    /// Wall time of `PJRT_Compile`, milliseconds.
    pub compile_ms: f64,
    /// `compiled`, or `out_of_memory` when the compiler refused for lack of HBM.
    pub outcome: Outcome,
    /// Memory per device (every device of an SPMD program holds the same amounts).
    pub per_device: PerDevice,
    /// The compiler's message when it refused.
    pub compiler_message: Option<String>,
    /// Cost analysis per device, where the compile succeeded.
    pub cost: Option<Cost>,
    /// Program parameters, in order.
    pub parameters: Vec<Operand>,
    /// Program outputs, in order.
    pub outputs: Vec<Operand>,
    /// Where `--save` wrote the executable.
    pub saved: Option<Saved>,
}

/// libtpu as loaded.
#[derive(Clone, Debug, Serialize)]
pub struct CompilerInfo {
    /// Library path.
    pub path: String,
    /// libtpu's package version (`0.0.52`), from its wheel's metadata or install folder.
    pub version: Option<String>,
    /// libtpu's platform version string, on one line (build date and change number).
    pub build: String,
    /// PJRT C API version of the plugin (`0.117`).
    pub pjrt_api: String,
}

/// How the compile ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An executable was produced.
    Compiled,
    /// The compiler refused: the program needs more HBM than a device has.
    OutOfMemory,
}

/// Bytes one device needs, from `PJRT_Executable_GetCompiledMemoryStats` (or, when the
/// compiler refused for lack of memory, the figures its message gives).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PerDevice {
    /// Parameters.
    pub arguments: Option<u64>,
    /// Outputs.
    pub outputs: Option<u64>,
    /// Temporaries.
    pub temporaries: Option<u64>,
    /// Generated code.
    pub generated_code: Option<u64>,
    /// Output bytes that reuse parameter buffers.
    pub aliased: Option<u64>,
    /// The compiler's peak of live buffers in HBM and on-chip VMEM together (no code), 0 or
    /// absent when it gives none. Not an HBM figure: intermediates that fit stay in VMEM.
    pub peak: Option<u64>,
    /// HBM one device needs: arguments + outputs - aliased + temporaries, plus generated
    /// code; on an out-of-memory refusal, the total the compiler's message names.
    pub total: Option<u64>,
    /// HBM the compiler said is available (only known from an out-of-memory message).
    pub compiler_hbm_limit: Option<u64>,
    /// Nominal HBM of one device (chip catalog).
    pub hbm: Option<u64>,
    /// tpuport's planning budget for one device (chip catalog: usable HBM, else 97 %).
    pub hbm_budget: Option<u64>,
    /// Whether the program fits: the compiler accepted it.
    pub fits: bool,
}

/// The compiler's cost analysis (per device).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cost {
    /// Floating-point operations.
    pub flops: Option<f64>,
    /// HBM bytes read and written.
    pub bytes_accessed: Option<f64>,
    /// Transcendental operations.
    pub transcendentals: Option<f64>,
    /// The compiler's estimate of the best achievable time, seconds.
    pub optimal_seconds: Option<f64>,
}

/// One parameter or output as compiled.
#[derive(Clone, Debug, Serialize)]
pub struct Operand {
    /// Position.
    pub index: usize,
    /// Name (the module's argument name, the ONNX input or weight name, or `result`).
    pub name: String,
    /// Logical type (`f32[512,512,3,3]`), when known.
    pub ty: Option<String>,
    /// Shape of one device's shard, when known.
    pub shard: Option<Vec<u64>>,
    /// Layout the compiler chose (`{1,0:T(8,128)}`).
    pub layout: Option<String>,
    /// Bytes one device stores under that layout, when computable.
    pub device_bytes: Option<u64>,
    /// Bytes of the shard without padding.
    pub logical_bytes: Option<u64>,
    /// Sharding the compiler chose (`{devices=[8,1]<=[8]}`), for multi-device programs.
    pub sharding: Option<String>,
}

/// Files written by `--save`.
#[derive(Clone, Debug, Serialize)]
pub struct Saved {
    /// The serialized executable.
    pub executable: String,
    /// Its manifest.
    pub manifest: String,
    /// Size of the executable, bytes.
    pub bytes: u64,
    /// SHA-256 of the executable, hex.
    pub sha256: String,
}

/// What to compile, for which slice, with which libtpu.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// StableHLO (`.mlir` text, `.mlirbc` bytecode) or ONNX (lowered by tpuport first).
    pub model: PathBuf,
    /// Slice name (`v5e-8`, `v6e-4`, `v5p-8`, `v4-8`, `v6e-2x4`, `tpu7x-8`).
    pub target: String,
    /// ONNX: dimension bindings (batch, named dims, input shapes); ignored (with a warning)
    /// for StableHLO, whose shapes are fixed.
    pub import: ImportOptions,
    /// ONNX: compute type of the lowered program.
    pub compute: ComputeType,
    /// Devices the program is partitioned over (default: the module's `mhlo.num_partitions`).
    pub partitions: Option<u32>,
    /// libtpu (default: [`find_libtpu`]).
    pub plugin: Option<PathBuf>,
    /// Write the serialized executable here and its manifest to `FILE.json`.
    pub save: Option<PathBuf>,
    /// Shardings to place on the program's arguments first (`tpuport shard --verify`); the
    /// program is then compiled over the mesh's devices.
    pub placement: Option<Placement>,
}

/// A sharding plan to place on a program's arguments before it compiles: each parameter
/// the plan names gets its partition spec, each data argument whose leading dimension is the
/// plan's batch is split there, everything else stays replicated (the SPMD partitioner
/// propagates the rest). A result an argument is donated to takes the argument's sharding.
/// The module's own annotations on its arguments and results are dropped first; constraints
/// inside it stay when the module was written for the mesh's device count
/// (`tpuport_lower::rewrite::place_shardings`).
#[derive(Clone, Debug)]
pub struct Placement {
    /// The mesh (`data × fsdp × tensor`, devices row-major).
    pub mesh: tpuport_analysis::shard::Mesh,
    /// Partition spec per parameter name, one entry per dimension (`None`: whole).
    pub params: std::collections::BTreeMap<String, Vec<Option<tpuport_analysis::shard::Axis>>>,
    /// The global batch.
    pub batch: u64,
    /// The axes a data argument's leading dimension is split over.
    pub batch_axes: Vec<tpuport_analysis::shard::Axis>,
    /// A StableHLO module's data arguments as the user named them (`--data-args`); empty:
    /// the argument-role rules decide.
    pub data_args: Vec<tpuport_analysis::roles::ArgSelector>,
}

impl Placement {
    /// The `mhlo.sharding` text for an argument, `None` for one left replicated.
    fn sharding(&self, name: &str, shape: &[u64], data: bool) -> Option<String> {
        use tpuport_analysis::shard::gspmd::hlo_sharding;
        let dims: Vec<Vec<tpuport_analysis::shard::Axis>> = if data {
            let split: u64 =
                self.batch_axes.iter().map(|&a| u64::from(self.mesh.size(a))).product();
            if shape.first() != Some(&self.batch) || split <= 1 || !self.batch.is_multiple_of(split)
            {
                return None;
            }
            std::iter::once(self.batch_axes.clone())
                .chain(std::iter::repeat_n(Vec::new(), shape.len() - 1))
                .collect()
        } else {
            let spec = self.params.get(name)?;
            if spec.len() != shape.len() {
                return None;
            }
            spec.iter()
                .zip(shape)
                .map(|(a, &n)| match a {
                    Some(a) if n.is_multiple_of(u64::from(self.mesh.size(*a))) => vec![*a],
                    _ => Vec::new(),
                })
                .collect()
        };
        let s = hlo_sharding(&dims, &self.mesh);
        (s != "{replicated}").then_some(s)
    }

    /// Places the shardings on `text` (a StableHLO text module) whose `@main` arguments are
    /// `args`: (name, shape, is data) in order.
    fn apply(&self, path: &Path, text: &str, args: &[(String, Vec<u64>, bool)]) -> Result<String> {
        let mut model = tpuport_formats::stablehlo::parse_text(
            path,
            text,
            &tpuport_formats::Limits::default(),
        )?;
        let placed: Vec<(usize, String)> = args
            .iter()
            .enumerate()
            .filter_map(|(i, (name, shape, data))| Some((i, self.sharding(name, shape, *data)?)))
            .collect();
        // A result an argument is donated to (a training step's new parameters and optimizer
        // state) keeps that argument's sharding, so the buffer can be updated in place.
        // Results with the batch leading are split as the data arguments are (an inference
        // step's logits stay where they were computed instead of being gathered whole).
        let g = &model.graph;
        let aliased = donated_results(g, &placed);
        let results: Vec<(usize, String)> = g
            .outputs
            .iter()
            .enumerate()
            .filter_map(|(i, &v)| {
                if let Some(s) = aliased.get(&i) {
                    return Some((i, s.clone()));
                }
                let shape: Vec<u64> = g
                    .value(v)
                    .ty
                    .shape
                    .as_ref()?
                    .0
                    .iter()
                    .map(tpuport_model::Dim::known)
                    .collect::<Option<_>>()?;
                Some((i, self.sharding("", &shape, true)?))
            })
            .collect();
        let partitions = u32::try_from(self.mesh.devices()).unwrap_or(u32::MAX);
        shardy_constraints_to_gspmd(&mut model);
        tpuport_lower::rewrite::place_shardings(&mut model, partitions, &placed, &results, true)
            .context(|| format!("placing the plan's shardings on {}", path.display()))?;
        Ok(tpuport_formats::stablehlo::print_model(&model)?)
    }
}

/// Rewrites each Shardy `sdy.sharding_constraint` of `model` (JAX's default spelling of
/// `with_sharding_constraint` since 0.7) as the GSPMD `custom_call @Sharding` it means, so a
/// step's activation pins survive the GSPMD compile `--verify` uses. A constraint this cannot
/// read (sub-axes, open dimensions, an unknown mesh) is left as it is, and then every Shardy
/// annotation is dropped by the placement.
fn shardy_constraints_to_gspmd(model: &mut tpuport_model::Model) {
    use tpuport_model::Attr;
    // A mesh with its own device order is not the row-major iota the rewrite writes: its
    // constraints are left alone.
    let meshes: Vec<_> =
        tpuport_analysis::memory::sdy_meshes(model).into_iter().filter(|m| !m.device_ids).collect();
    // `#sdy.sharding<@mesh, [{"data"}, {}, {}]>` → the GSPMD text, when every dimension is a
    // closed list of whole axes.
    let gspmd = |text: &str| -> Option<String> {
        let (mesh, dims) = tpuport_analysis::memory::sdy_sharding_dims(text)?;
        let axes = &meshes.iter().find(|m| m.name == mesh)?.axes;
        let dims = dims
            .iter()
            .map(|d| {
                d.iter()
                    .map(|e| {
                        let name = e.strip_prefix('"')?.strip_suffix('"')?;
                        axes.iter().position(|(n, _)| n == name)
                    })
                    .collect::<Option<Vec<usize>>>()
            })
            .collect::<Option<Vec<_>>>()?;
        let sizes: Vec<u64> = axes.iter().map(|(_, n)| *n).collect();
        Some(tpuport_analysis::shard::gspmd::iota_sharding(&dims, &sizes))
    };
    // Constraints sit in regions too: JAX pins a reduction's scalar body values (flax's
    // `argmax` in a metric's update) inside the `reduce` op.
    let mut rewrite = |node: &mut tpuport_model::Node| {
        if node.op != "sdy.sharding_constraint" {
            return;
        }
        let Some(sharding) = (match node.attr("sharding") {
            Some(Attr::Str(t) | Attr::Text(t)) => gspmd(t),
            _ => None,
        }) else {
            return;
        };
        "stablehlo.custom_call".clone_into(&mut node.op);
        "stablehlo".clone_into(&mut node.domain);
        node.attrs.retain(|(k, _)| k != "sharding");
        node.attrs.push(("call_target_name".into(), Attr::Str("Sharding".into())));
        node.attrs.push(("backend_config".into(), Attr::Str(String::new())));
        node.attrs.push(("mhlo.sharding".into(), Attr::Str(sharding)));
    };
    model.graph.for_each_node_mut(&mut rewrite);
    for f in &mut model.functions {
        f.for_each_node_mut(&mut rewrite);
    }
}

/// Result index → sharding for the results that placed arguments are donated to: an explicit
/// `tf.aliasing_output = k`, else for each `jax.buffer_donor` argument (in order) the first
/// result not yet taken with the same type, the way JAX pairs donated buffers with outputs.
fn donated_results(
    g: &tpuport_model::Graph,
    placed: &[(usize, String)],
) -> std::collections::HashMap<usize, String> {
    use tpuport_model::Attr;
    // `tf.aliasing_output = 0 : i32` and `jax.buffer_donor = true` read back as text.
    let attr = |i: usize, key: &str| -> Option<String> {
        let key = format!("arg{i}:{key}");
        match &g.attrs.iter().find(|(k, _)| *k == key)?.1 {
            Attr::Int(n) => Some(n.to_string()),
            Attr::Str(t) | Attr::Text(t) => Some(t.split(':').next()?.trim().to_owned()),
            _ => None,
        }
    };
    let sharding: std::collections::HashMap<usize, &String> =
        placed.iter().map(|(i, s)| (*i, s)).collect();
    // Result index → the argument given to it.
    let mut taken: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for i in 0..g.inputs.len() {
        if let Some(k) = attr(i, "tf.aliasing_output").and_then(|k| k.parse().ok()) {
            taken.insert(k, i);
        }
    }
    for (i, &arg) in g.inputs.iter().enumerate() {
        if attr(i, "jax.buffer_donor").as_deref() != Some("true") || taken.values().any(|&a| a == i)
        {
            continue;
        }
        let ty = &g.value(arg).ty;
        if let Some(k) = (0..g.outputs.len())
            .find(|k| !taken.contains_key(k) && g.value(g.outputs[*k]).ty == *ty)
        {
            taken.insert(k, i);
        }
    }
    taken.into_iter().filter_map(|(k, i)| Some((k, sharding.get(&i)?.to_string()))).collect()
}

/// Whether `tpuport audit` asks the TPU compiler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompilerMode {
    /// Use libtpu when it is found (the default); otherwise a note, estimate only.
    #[default]
    Auto,
    /// Always: no libtpu, or a program it rejects, is an error.
    Libtpu,
    /// Never.
    None,
}

/// The TPU compiler's answer for an audit of `req.model` on `req.target`: compiles as
/// [`compile`] does (`req.save` is ignored) and condenses the report to what the audit
/// compares.
///
/// # Errors
/// Only in [`CompilerMode::Libtpu`]: no libtpu, or a program it rejects (as [`compile`]). In
/// [`CompilerMode::Auto`] those are [`CompilerInput::Unavailable`] with the reason.
pub fn for_audit(
    req: &Request,
    mode: CompilerMode,
    catalog: &Catalog,
    obs: &dyn Observer,
) -> Result<CompilerInput> {
    if mode == CompilerMode::None {
        return Ok(CompilerInput::NotAsked);
    }
    let chip = catalog.slice(&req.target).map_err(|e| invalid(e.to_string()))?.chip;
    let req = Request { save: None, ..req.clone() };
    let answer = find_libtpu(req.plugin.as_deref()).and_then(|_| compile(&req, catalog, obs));
    match (answer, mode) {
        (Ok(r), _) => Ok(CompilerInput::Answered(r.audit_facts(&chip))),
        (Err(e), CompilerMode::Auto) => {
            let mut why = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                why = format!("{why}: {c}");
                cause = c.source();
            }
            Ok(CompilerInput::Unavailable(why))
        }
        (Err(e), _) => Err(e),
    }
}

impl CompileReport {
    /// What the audit compares: per-device HBM (arguments + outputs - aliased + temporaries,
    /// or the bytes a refusal names), code, and the parameters' layouts. `chip` is the catalog
    /// id of the target's chip.
    #[must_use]
    pub fn audit_facts(&self, chip: &str) -> CompilerFacts {
        let d = &self.per_device;
        let fits = self.outcome == Outcome::Compiled;
        let hbm_bytes = if fits { d.hbm_buffers().unwrap_or(0) } else { d.total.unwrap_or(0) };
        CompilerFacts {
            compiler: format!(
                "libtpu {}",
                self.compiler.version.as_deref().unwrap_or("(version unknown)")
            ),
            target: self.target.clone(),
            chip: chip.to_owned(),
            devices: self.program_devices,
            compile_ms: self.compile_ms,
            fits,
            hbm_bytes,
            generated_code: d.generated_code,
            hbm_limit: d.compiler_hbm_limit,
            message: self.compiler_message.clone(),
            parameters: self
                .parameters
                .iter()
                .map(|p| CompiledTensor {
                    name: p.name.clone(),
                    shard: p.shard.clone(),
                    layout: p.layout.clone(),
                    device_bytes: p.device_bytes,
                })
                .collect(),
        }
    }
}

impl PerDevice {
    /// HBM buffers of one device: arguments + outputs - aliased + temporaries.
    #[must_use]
    pub fn hbm_buffers(&self) -> Option<u64> {
        let sum = self.arguments?.saturating_add(self.outputs?).saturating_add(self.temporaries?);
        Some(sum.saturating_sub(self.aliased.unwrap_or(0)))
    }
}

/// Element type and dimensions of a parameter or output, when known.
type Typed = Option<(DType, Vec<u64>)>;

/// The program to compile and what is known of its signature.
struct Prepared {
    program: Program,
    source: String,
    partitions: u32,
    /// Partition with Shardy (it also reads GSPMD annotations); false for a placement: libtpu
    /// 0.0.52's Shardy import aborted the process on every module tpuport printed for one
    /// ("Expected HloShardingV3 during Shardy import"), and the GSPMD partitioner compiles them.
    shardy: bool,
    params: Vec<(String, Typed)>,
    results: Vec<(String, Typed)>,
}

/// Compiles `req.model` for `req.target` with libtpu and reports what the compiler answered.
///
/// # Errors
/// An unknown slice, a model that cannot be read or lowered, more partitions than the slice
/// has devices, no libtpu, a program the TPU compiler rejects (one line, the compiler's own
/// message), or writing `req.save`. A program that does not fit is not an error: the report's
/// outcome says so.
#[allow(clippy::too_many_lines, reason = "one pipeline, in order")]
pub fn compile(req: &Request, catalog: &Catalog, obs: &dyn Observer) -> Result<CompileReport> {
    if req.import.batch == Some(0) {
        return Err(invalid("--batch must be at least 1"));
    }
    if req.partitions == Some(0) {
        return Err(invalid("--partitions must be at least 1"));
    }
    if req.target == CPU_TARGET {
        return compile_cpu(req, obs);
    }
    let target = catalog.compile_target(&req.target).map_err(|e| invalid(e.to_string()))?;
    let model_sha = hash_file(&req.model)?;
    let mut prep = prepare(req, obs)?;
    if let Some(n) = req.partitions {
        prep.partitions = n;
    } else if prep.program.is_bytecode() && prep.params.is_empty() {
        obs.warn(&format!(
            "{}: the partition count of a bytecode module is not read; compiling it for one \
             device (pass --partitions N for a sharded module)",
            req.model.display()
        ));
    }
    if prep.partitions > target.devices {
        return Err(invalid(format!(
            "{} is partitioned over {} devices but {} has {}",
            req.model.display(),
            prep.partitions,
            req.target,
            target.devices
        )));
    }
    let plugin_path = find_libtpu(req.plugin.as_deref())?;
    let t_setup = Instant::now();
    obs.info(&format!("libtpu: {}", plugin_path.display()));
    let plugin = tpuport_pjrt::load(&plugin_path)?;
    let options = topology_options(&target);
    let topo = Topology::create(plugin, &target.topology_name, &options)
        .context(|| format!("describing {} ({})", req.target, target.topology_name))?;
    let devices = topo.devices()?;
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let device_kind = devices.first().map(|d| d.kind.clone()).unwrap_or_default();
    let (major, minor) = plugin.api_version();
    let compiler = CompilerInfo {
        path: plugin_path.display().to_string(),
        version: libtpu_version(&plugin_path),
        build: one_line(&topo.platform_version().unwrap_or_default()),
        pjrt_api: format!("{major}.{minor}"),
    };
    let copts = if prep.partitions > 1 {
        tpuport_pjrt::CompileOptions::spmd(prep.partitions, prep.shardy).with_identity_assignment()
    } else {
        tpuport_pjrt::CompileOptions::default()
    };
    let t = Instant::now();
    let compiled = topo.compile(&prep.program, &copts);
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let hbm = target.hbm_per_device.map(to_u64);
    let hbm_budget = target.hbm_budget_per_device.map(to_u64);
    let mut report = CompileReport {
        schema: SCHEMA,
        model: req.model.display().to_string(),
        model_sha256: model_sha,
        source: prep.source.clone(),
        target: req.target.clone(),
        topology: target.topology_name.clone(),
        chip: target.chip_name.clone(),
        device_kind,
        slice_devices: target.devices,
        program_devices: prep.partitions.max(1),
        compiler,
        setup_ms,
        compile_ms,
        outcome: Outcome::Compiled,
        per_device: PerDevice { hbm, hbm_budget, ..PerDevice::default() },
        compiler_message: None,
        cost: None,
        parameters: Vec::new(),
        outputs: Vec::new(),
        saved: None,
    };
    let exe = match compiled {
        Ok(exe) => exe,
        Err(e) => {
            let message = match &e {
                tpuport_pjrt::PjrtError::Call { code, message, .. } => {
                    compiler_message(&format!("{code}: {message}"))
                }
                other => compiler_message(&other.to_string()),
            };
            if let Some((need, limit)) = out_of_memory(&message) {
                if req.save.is_some() {
                    obs.warn("nothing saved: the compiler produced no executable");
                }
                report.outcome = Outcome::OutOfMemory;
                report.per_device.total = Some(need);
                report.per_device.compiler_hbm_limit = Some(limit);
                report.compiler_message = Some(message);
                report.parameters = operands(&prep.params, None, None, None);
                report.outputs = operands(&prep.results, None, None, None);
                return Ok(report);
            }
            obs.info(&format!("compiler output: {e}"));
            return Err(invalid(format!(
                "libtpu could not compile {} for {} ({}): {message}",
                req.model.display(),
                req.target,
                target.topology_name
            )));
        }
    };
    fill_from_executable(&mut report, &exe, &prep, obs)?;
    if let Some(file) = &req.save {
        let on = SavedFor {
            platform: "tpu",
            topology: &target.topology_name,
            topology_options: &options,
            compile_options: &copts,
            program: &prep.program,
        };
        report.saved = Some(save(file, &exe, &report, &on)?);
    }
    Ok(report)
}

/// [`compile`] for [`CPU_TARGET`]: the PJRT CPU plugin compiles the program for one device
/// of this host (with the options `tpuport run` and `tpuport serve` use, so the saved
/// executable is the one they would compile).
fn compile_cpu(req: &Request, obs: &dyn Observer) -> Result<CompileReport> {
    let model_sha = hash_file(&req.model)?;
    let prep = prepare(req, obs)?;
    let partitions = req.partitions.unwrap_or(prep.partitions);
    if partitions > 1 {
        return Err(invalid(format!(
            "{} is partitioned over {partitions} devices; the cpu target compiles for one",
            req.model.display()
        )));
    }
    let plugin_path = match &req.plugin {
        Some(p) if !p.is_file() => {
            return Err(invalid(format!("--plugin {}: no such file", p.display())));
        }
        Some(p) => p.clone(),
        None => tpuport_pjrt::discover(None)
            .into_iter()
            .find(|f| f.kind == PluginKind::Cpu && f.path.is_file())
            .map(|f| f.path)
            .ok_or_else(|| {
                invalid(
                    "the PJRT CPU plugin was not found: `pip install xla-cpu-pjrt` (tpuport[cpu]) \
                     into the project's virtual environment, or pass --plugin PATH",
                )
            })?,
    };
    let t_setup = Instant::now();
    obs.info(&format!("CPU plugin: {}", plugin_path.display()));
    let plugin = tpuport_pjrt::load(&plugin_path)?;
    let client = tpuport_pjrt::Client::new(plugin, &tpuport_pjrt::ClientOptions::cpu_devices(1))
        .context(|| format!("creating a client of {}", plugin_path.display()))?;
    let device = client.devices().into_iter().next().ok_or_else(|| invalid("no CPU device"))?;
    let device_kind = device.description().map(|d| d.kind).unwrap_or_default();
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let (major, minor) = plugin.api_version();
    let copts = tpuport_pjrt::CompileOptions::default();
    let t = Instant::now();
    let exe = client.compile(&prep.program, &copts).map_err(|e| {
        invalid(format!(
            "the CPU plugin could not compile {}: {}",
            req.model.display(),
            compiler_message(&e.to_string())
        ))
    })?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut report = CompileReport {
        schema: SCHEMA,
        model: req.model.display().to_string(),
        model_sha256: model_sha,
        source: prep.source.clone(),
        target: CPU_TARGET.to_owned(),
        topology: CPU_TARGET.to_owned(),
        chip: "host CPU".to_owned(),
        device_kind,
        slice_devices: 1,
        program_devices: 1,
        compiler: CompilerInfo {
            path: plugin_path.display().to_string(),
            version: None,
            build: one_line(client.platform_version()),
            pjrt_api: format!("{major}.{minor}"),
        },
        setup_ms,
        compile_ms,
        outcome: Outcome::Compiled,
        per_device: PerDevice::default(),
        compiler_message: None,
        cost: None,
        parameters: Vec::new(),
        outputs: Vec::new(),
        saved: None,
    };
    fill_from_executable(&mut report, exe.executable(), &prep, obs)?;
    if let Some(file) = &req.save {
        let on = SavedFor {
            platform: CPU_TARGET,
            topology: CPU_TARGET,
            topology_options: &[],
            // What the client really compiled with (the ISA cap on AVX-512 hosts included):
            // `tpuport serve` compares it with its own.
            compile_options: &client.effective_options(&copts),
            program: &prep.program,
        };
        report.saved = Some(save(file, exe.executable(), &report, &on)?);
    }
    Ok(report)
}

/// A plugin's (possibly multi-line) version string on one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Reads the model as a program: StableHLO as is, ONNX through the lowering.
fn prepare(req: &Request, obs: &dyn Observer) -> Result<Prepared> {
    let model = tpuport_formats::open(&req.model, &req.import)?;
    match model.format {
        ModelFormat::Onnx => {
            let opts = LowerOptions {
                weights_as_constants: false,
                compute: req.compute,
                expose: Vec::new(),
            };
            let low = lower(&model, &opts)
                .context(|| format!("lowering {} to StableHLO", req.model.display()))?;
            let params = low
                .args
                .iter()
                .map(|b| {
                    let name = match &b.source {
                        ArgSource::Input(n) | ArgSource::Weight(n) => n.clone(),
                    };
                    (name, Some((b.dtype, b.shape.clone())))
                })
                .collect();
            let results = low
                .results
                .iter()
                .map(|r| (r.name.clone(), Some((r.dtype, r.shape.clone()))))
                .collect();
            let (text, partitions) = match &req.placement {
                None => (low.mlir, 1),
                Some(p) => {
                    let args: Vec<(String, Vec<u64>, bool)> = low
                        .args
                        .iter()
                        .map(|b| match &b.source {
                            ArgSource::Input(n) => (n.clone(), b.shape.clone(), true),
                            ArgSource::Weight(n) => (n.clone(), b.shape.clone(), false),
                        })
                        .collect();
                    let n = u32::try_from(p.mesh.devices()).unwrap_or(u32::MAX);
                    (p.apply(&req.model, &low.mlir, &args)?, n)
                }
            };
            Ok(Prepared {
                program: Program::mlir(text.into_bytes()),
                source: "onnx (lowered by tpuport)".into(),
                partitions,
                shardy: req.placement.is_none(),
                params,
                results,
            })
        }
        ModelFormat::StablehloText | ModelFormat::StablehloBytecode => {
            let i = &req.import;
            if i.batch.is_some() || !i.dims.is_empty() || !i.input_shapes.is_empty() {
                obs.warn("--batch, --dim and --input-shape apply to ONNX models; a StableHLO module's shapes are fixed");
            }
            let m = Module::load(&req.model, obs)?;
            let sig = |ps: &Option<Vec<Param>>| -> Vec<(String, Typed)> {
                ps.iter()
                    .flatten()
                    .map(|q| {
                        let dims: Option<Vec<u64>> = q.dims.iter().copied().collect();
                        (q.name.clone(), dims.map(|d| (q.dtype, d)))
                    })
                    .collect()
            };
            let (mut params, mut results) = (sig(&m.args), sig(&m.results));
            for (i, (name, _)) in results.iter_mut().enumerate() {
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    *name = format!("result{i}");
                }
            }
            let (program, partitions) = match &req.placement {
                None => (m.program, m.partitions.max(1)),
                Some(p) => {
                    let text = std::str::from_utf8(m.program.code())
                        .ok()
                        .filter(|_| !m.program.is_bytecode())
                        .ok_or_else(|| {
                            invalid(format!(
                                "{}: shardings are placed on StableHLO text; this is bytecode \
                                 (print it as text, e.g. `jax.jit(f).lower(...).as_text()`)",
                                req.model.display()
                            ))
                        })?;
                    let model = tpuport_formats::stablehlo::parse_text(
                        &req.model,
                        text,
                        &tpuport_formats::Limits::default(),
                    )?;
                    let opts =
                        tpuport_analysis::roles::RoleOptions { data_args: p.data_args.clone() };
                    let roles = tpuport_analysis::roles::assign(&model, &opts)
                        .map_err(|e| invalid(format!("{}: {e}", req.model.display())))?;
                    let args: Vec<(String, Vec<u64>, bool)> = roles
                        .args
                        .iter()
                        .map(|r| {
                            (
                                r.label().to_owned(),
                                r.shape.clone().unwrap_or_default(),
                                r.role == tpuport_analysis::roles::Role::Data,
                            )
                        })
                        .collect();
                    // The report names each parameter as the plan does (`p['wte.weight']`
                    // from the argument's `loc`, not `arg0`).
                    for ((name, _), r) in params.iter_mut().zip(&roles.args) {
                        r.label().trim_start_matches('%').clone_into(name);
                    }
                    let n = u32::try_from(p.mesh.devices()).unwrap_or(u32::MAX);
                    (Program::mlir(p.apply(&req.model, text, &args)?.into_bytes()), n)
                }
            };
            Ok(Prepared {
                program,
                source: "stablehlo".into(),
                partitions,
                shardy: req.placement.is_none(),
                params,
                results,
            })
        }
        other => Err(invalid(format!(
            "{}: is {}; the TPU compiler takes StableHLO (.mlir, .mlirbc) or ONNX",
            req.model.display(),
            other.name()
        ))),
    }
}

/// libtpu: the explicit path, else the first libtpu plugin [`tpuport_pjrt::discover`] finds:
/// `$TPUPORT_PJRT_PLUGIN` / `$TPU_LIBRARY_PATH` when they name libtpu, `libtpu/libtpu.so` in a
/// searched site-packages (`pip install libtpu`), `/usr/lib`, `/usr/local/lib` or `/lib`, then
/// the newest version `make libtpu` unpacked: `.cache/libtpu/<version>/` in the current
/// directory or its nearest parent that has one, else `tpuport/libtpu/<version>/` in the user
/// cache (`$XDG_CACHE_HOME`, else `~/.cache`); see [`tpuport_pjrt::libtpu_places`].
///
/// # Errors
/// The explicit path is not a file, or no libtpu was found (one line saying how to get it).
pub fn find_libtpu(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(invalid(format!("--plugin {}: no such file", p.display())));
        }
        return Ok(p.to_owned());
    }
    tpuport_pjrt::discover(None)
        .into_iter()
        .find(|f| f.kind == PluginKind::Tpu && f.path.is_file())
        .map(|f| f.path)
        .ok_or_else(|| {
            invalid(
                "libtpu not found: `pip install libtpu` into the project's virtual environment \
                 (or run `make libtpu` in a tpuport checkout), set TPU_LIBRARY_PATH, or pass \
                 --plugin PATH/libtpu.so (`tpuport doctor` lists where it looked)",
            )
        })
}

/// libtpu's package version: the `libtpu-X.dist-info` next to the `libtpu` package in a
/// site-packages, else a version-named folder above it (`.cache/libtpu/0.0.52/libtpu/`).
fn libtpu_version(lib: &Path) -> Option<String> {
    let lib = lib.canonicalize().unwrap_or_else(|_| lib.to_owned());
    let above = lib.parent()?.parent()?;
    let from_dist_info = std::fs::read_dir(above).ok().and_then(|rd| {
        rd.filter_map(std::result::Result::ok).find_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("libtpu-").and_then(|v| v.strip_suffix(".dist-info")).map(str::to_owned)
        })
    });
    from_dist_info.or_else(|| {
        let name = above.file_name()?.to_string_lossy().into_owned();
        name.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then_some(name)
    })
}

/// The create options JAX passes for the same slice.
fn topology_options(t: &CompileTarget) -> Vec<NamedValue> {
    let ints = |v: &[i64]| Value::Int64List(v.to_vec());
    let b = t.chips_per_host_bounds.map(i64::from);
    let mut o = vec![
        NamedValue::string("chip_config_name", &t.chip_config_name),
        NamedValue { name: "chips_per_host_bounds".into(), value: ints(&b) },
        NamedValue::int64("num_slices", i64::from(t.num_slices)),
    ];
    if let Some(w) = t.wrap {
        o.push(NamedValue { name: "wrap".into(), value: ints(&w.map(i64::from)) });
    }
    o
}

/// The compiler's message without libtpu's source-location trace, on one line.
#[must_use]
pub fn compiler_message(e: &str) -> String {
    let body = e.split("=== Source Location Trace").next().unwrap_or(e);
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join(" ")
}

/// `(needed, available)` bytes from libtpu's `CompileTimeHbmOom` message ("the total memory
/// required for HLO temporaries (18.83G) exceeds available HBM (15.75G)").
#[must_use]
pub fn out_of_memory(msg: &str) -> Option<(u64, u64)> {
    if !msg.contains("RESOURCE_EXHAUSTED") || !msg.contains("HBM") {
        return None;
    }
    let sizes: Vec<u64> = msg
        .split('(')
        .skip(1)
        .filter_map(|s| s.split_once(')').map(|(v, _)| v))
        .filter_map(parse_size)
        .collect();
    match sizes.as_slice() {
        [.., need, limit] => Some((*need, *limit)),
        _ => None,
    }
}

/// `18.83G`, `512.00M`, `4.0K`, `123` (binary units, as XLA prints them) to bytes.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        'T' => (&s[..s.len() - 1], 1 << 40),
        c if c.is_ascii_digit() => (s, 1),
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    #[allow(clippy::cast_precision_loss, reason = "sizes far below 2^52")]
    Some(to_u64(v * mult as f64))
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "non-negative byte counts"
)]
fn to_u64(x: f64) -> u64 {
    x.max(0.0).round() as u64
}

fn nonneg(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

/// Memory, cost, layouts and shardings from the compiled executable.
fn fill_from_executable(
    r: &mut CompileReport,
    exe: &Executable,
    prep: &Prepared,
    obs: &dyn Observer,
) -> Result<()> {
    let stats = exe.compiled_memory_stats();
    let d = &mut r.per_device;
    d.fits = true;
    match stats {
        Ok(m) => {
            obs.info(&format!("compiled memory statistics: {m:?}"));
            d.arguments = Some(nonneg(m.argument));
            d.outputs = Some(nonneg(m.output));
            d.aliased = Some(nonneg(m.alias));
            d.temporaries = Some(nonneg(m.temp));
            d.generated_code = Some(nonneg(m.generated_code));
            d.peak = Some(nonneg(m.peak));
            // HBM: parameters, outputs and HBM temporaries (less what outputs reuse), plus the
            // code. `peak` also counts on-chip VMEM (libtpu 0.0.52 keeps most intermediates of
            // a small program there: cnn_b8's buffer assignment has 366 KiB in HBM and 3.6 MiB
            // in VMEM, and a peak of 3.9 MiB), so it is not an HBM figure.
            let buffers = (nonneg(m.argument) + nonneg(m.output) + nonneg(m.temp))
                .saturating_sub(nonneg(m.alias));
            d.total = Some(buffers + nonneg(m.generated_code));
        }
        // libtpu always answers; a plugin that does not (the CPU plugin may) leaves them out.
        Err(e) if r.target == CPU_TARGET => obs.info(&format!("no memory statistics: {e}")),
        Err(e) => return Err(e).context(|| "reading the compiled memory statistics".into()),
    }
    match exe.cost_analysis() {
        Ok(values) => {
            let get = |k: &str| match tpuport_pjrt::find_value(&values, k) {
                Some(Value::Float(f)) => Some(f64::from(*f)),
                Some(Value::Int64(i)) => {
                    #[allow(clippy::cast_precision_loss, reason = "display")]
                    let v = *i as f64;
                    Some(v)
                }
                _ => None,
            };
            r.cost = Some(Cost {
                flops: get("flops"),
                bytes_accessed: get("bytes accessed"),
                transcendentals: get("transcendentals"),
                // libtpu answers negative values for some programs: no estimate.
                optimal_seconds: get("optimal_seconds").filter(|s| *s >= 0.0),
            });
        }
        Err(e) => obs.info(&format!("no cost analysis: {e}")),
    }
    let note = |what: &str, e: &tpuport_pjrt::PjrtError| obs.info(&format!("no {what}: {e}"));
    let pl = exe.parameter_layouts().map_err(|e| note("parameter layouts", &e)).ok();
    let ol = exe.output_layouts().map_err(|e| note("output layouts", &e)).ok();
    let multi = r.program_devices > 1;
    let ps =
        multi.then(|| exe.parameter_shardings().map_err(|e| note("shardings", &e)).ok()).flatten();
    let os =
        multi.then(|| exe.output_shardings().map_err(|e| note("shardings", &e)).ok()).flatten();
    r.parameters = operands(&prep.params, pl.as_deref(), ps.as_deref(), None);
    let shard_dims = exe.outputs().ok().map(|o| o.into_iter().map(|o| o.dims).collect::<Vec<_>>());
    r.outputs = operands(&prep.results, ol.as_deref(), os.as_deref(), shard_dims.as_deref());
    if r.outputs.is_empty()
        && let Some(dims) = &shard_dims
    {
        // Bytecode modules are read header-only: name the outputs by position.
        let unnamed: Vec<(String, Typed)> =
            (0..dims.len()).map(|i| (format!("result{i}"), None)).collect();
        r.outputs = operands(&unnamed, ol.as_deref(), os.as_deref(), Some(dims));
    }
    Ok(())
}

/// One row per parameter or output: logical type, the shard a device holds, the compiler's
/// layout and the bytes it costs.
fn operands(
    sig: &[(String, Typed)],
    layouts: Option<&[String]>,
    shardings: Option<&[tpuport_pjrt::Sharding]>,
    shard_dims: Option<&[Vec<u64>]>,
) -> Vec<Operand> {
    sig.iter()
        .enumerate()
        .map(|(i, (name, ty))| {
            let sharding = shardings.and_then(|s| s.get(i));
            let shard: Option<Vec<u64>> =
                shard_dims.and_then(|d| d.get(i).cloned()).or_else(|| {
                    let (_, dims) = ty.as_ref()?;
                    let tiles = sharding.map(|s| s.tiles.clone()).unwrap_or_default();
                    Some(
                        dims.iter()
                            .enumerate()
                            .map(|(k, &d)| d.div_ceil(tiles.get(k).copied().unwrap_or(1).max(1)))
                            .collect(),
                    )
                });
            let layout = layouts.and_then(|l| l.get(i)).cloned();
            let dtype = ty.as_ref().map(|(d, _)| *d);
            let logical_bytes = match (dtype, &shard) {
                (Some(d), Some(s)) => {
                    d.bits().map(|b| (s.iter().product::<u64>() * u64::from(b)).div_ceil(8))
                }
                _ => None,
            };
            let device_bytes = match (dtype, &shard, &layout) {
                (Some(d), Some(s), Some(l)) => {
                    XlaLayout::parse(l).ok().and_then(|x| x.device_bytes(s, d))
                }
                _ => None,
            };
            Operand {
                index: i,
                name: name.clone(),
                ty: ty.as_ref().map(|(d, s)| {
                    let dims: Vec<String> = s.iter().map(u64::to_string).collect();
                    format!("{d}[{}]", dims.join(","))
                }),
                shard,
                layout,
                device_bytes,
                logical_bytes,
                sharding: sharding.map(|s| s.hlo.clone()),
            }
        })
        .collect()
}

/// Manifest written next to a saved executable. `tpuport serve` checks `platform`,
/// `device_kind`, `program_devices`, `compile_options_hex`, `compiler.build`,
/// `compiler.pjrt_api` and `program_sha256` against the plugin it runs on and the program it
/// would compile, and `executable_bytes` / `executable_sha256` against the file.
#[derive(Debug, Serialize)]
struct Manifest<'a> {
    schema: &'static str,
    /// `tpu` or `cpu`: the PJRT platform the executable runs on.
    platform: &'a str,
    executable: String,
    executable_sha256: String,
    executable_bytes: u64,
    model: &'a str,
    model_sha256: &'a str,
    /// SHA-256 of the StableHLO program compiled (the module file's bytes; for ONNX, the
    /// program tpuport lowered it to).
    program_sha256: String,
    source: &'a str,
    target: &'a str,
    topology: &'a str,
    topology_options: Vec<NamedValue>,
    device_kind: &'a str,
    program_devices: u32,
    compile_options_hex: String,
    compiler: &'a CompilerInfo,
    per_device: &'a PerDevice,
    parameters: &'a [Operand],
    outputs: &'a [Operand],
}

/// Writes the executable and then its manifest, each atomically
/// ([`tpuport_model::fs::write_atomic_bytes`]), so a manifest on disk always describes a
/// complete executable.
/// What a saved executable was compiled for.
struct SavedFor<'a> {
    platform: &'a str,
    topology: &'a str,
    topology_options: &'a [NamedValue],
    compile_options: &'a tpuport_pjrt::CompileOptions,
    program: &'a Program,
}

fn save(file: &Path, exe: &Executable, r: &CompileReport, on: &SavedFor<'_>) -> Result<Saved> {
    let bytes = exe.serialize().context(|| "serializing the executable".into())?;
    let sha = hex(&Sha256::digest(&bytes));
    let manifest_path = PathBuf::from(format!("{}.json", file.display()));
    tpuport_model::fs::write_atomic_bytes(file, &bytes)
        .map_err(|e| io(format!("writing {}", file.display()), e))?;
    let m = Manifest {
        schema: MANIFEST_SCHEMA,
        platform: on.platform,
        executable: file.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        executable_sha256: sha.clone(),
        executable_bytes: bytes.len() as u64,
        model: &r.model,
        model_sha256: &r.model_sha256,
        program_sha256: hex(&Sha256::digest(on.program.code())),
        source: &r.source,
        target: &r.target,
        topology: on.topology,
        topology_options: on.topology_options.to_vec(),
        device_kind: &r.device_kind,
        program_devices: r.program_devices,
        compile_options_hex: hex(&on.compile_options.encode()),
        compiler: &r.compiler,
        per_device: &r.per_device,
        parameters: &r.parameters,
        outputs: &r.outputs,
    };
    let json = serde_json::to_string_pretty(&m)
        .map_err(|e| invalid(format!("encoding the manifest: {e}")))?
        + "\n";
    tpuport_model::fs::write_atomic_bytes(&manifest_path, json.as_bytes())
        .map_err(|e| io(format!("writing {}", manifest_path.display()), e))?;
    Ok(Saved {
        executable: file.display().to_string(),
        manifest: manifest_path.display().to_string(),
        bytes: bytes.len() as u64,
        sha256: sha,
    })
}

/// SHA-256 of a file, read in a stream.
fn hash_file(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| io(format!("reading {}", path.display()), e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| io(format!("reading {}", path.display()), e))?;
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn oom_message_sizes() {
        let m = "RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total \
                 memory required for HLO temporaries (18.83G) exceeds available HBM (15.75G). HLO \
                 module: jit__lambda. See https://openxla.org/xla/errors/error_1000 for more details.";
        let (need, limit) = out_of_memory(m).unwrap_or_default();
        assert_eq!(limit, to_u64(15.75 * f64::from(1u32 << 30)));
        assert_eq!(need, to_u64(18.83 * f64::from(1u32 << 30)));
        assert_eq!(out_of_memory("INVALID_ARGUMENT: no (1G) (2G)"), None);
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    /// A training step as JAX 0.10 prints `jax.jit(step, donate_argnums=(0, 1)).lower(p, mu,
    /// x).as_text(debug_info=True)` with a `with_sharding_constraint` inside (Shardy): the
    /// moment takes its parameter's spec, the donated results take their arguments', and the
    /// constraint becomes the GSPMD annotation it means.
    const STEP: &str = r#"module @jit_step attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "fsdp"=1, "tensor"=4]>
  func.func public @main(%arg0: tensor<16x8xf32> {jax.buffer_donor = true} loc("p['w']"), %arg1: tensor<16x8xf32> {jax.buffer_donor = true} loc("mu['w']"), %arg2: tensor<4x16xf32> loc("x")) -> (tensor<16x8xf32> {jax.result_info = "result[0]['w']"}, tensor<16x8xf32> {jax.result_info = "result[1]['w']"}, tensor<4x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"data"}, {}]> : tensor<4x8xf32>
    %2 = stablehlo.add %arg1, %arg0 : tensor<16x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%1 init: %cst) across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%arg3: tensor<f32>, %arg4: tensor<f32>)  {
      %5 = sdy.sharding_constraint %arg3 <@mesh, []> : tensor<f32>
      %6 = stablehlo.add %5, %arg4 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }
    return %arg0, %2, %1 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>
  }
}
"#;

    #[test]
    fn a_training_step_places_moments_donations_and_constraints() {
        use tpuport_analysis::shard::{Axis, Mesh};
        let spec = vec![None, Some(Axis::Tensor)];
        let p = Placement {
            mesh: Mesh { data: 2, fsdp: 1, tensor: 4 },
            params: [("p['w']".to_owned(), spec.clone()), ("mu['w']".to_owned(), spec)]
                .into_iter()
                .collect(),
            batch: 4,
            batch_axes: vec![Axis::Data],
            data_args: Vec::new(),
        };
        let args = vec![
            ("p['w']".to_owned(), vec![16, 8], false),
            ("mu['w']".to_owned(), vec![16, 8], false),
            ("x".to_owned(), vec![4, 16], true),
        ];
        let out = p.apply(Path::new("step.mlir"), STEP, &args).unwrap();
        let col = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}";
        let batch = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}";
        // Both weight-like arguments and both donated results: the column split.
        assert_eq!(out.matches(col).count(), 4, "{out}");
        // The data argument, the batch-leading result, and the constraint: the batch split.
        assert_eq!(out.matches(batch).count(), 3, "{out}");
        assert!(out.contains(r#"call_target_name = "Sharding""#), "{out}");
        // The constraint in the reduction's body too (the mesh it named is gone).
        assert!(out.contains(r#"mhlo.sharding = "{replicated}""#), "{out}");
        assert!(!out.contains("sdy."), "{out}");
        assert!(out.contains("jax.buffer_donor = true"), "{out}");
        assert!(out.contains("mhlo.num_partitions = 8"), "{out}");
    }

    #[test]
    fn compiler_message_drops_the_trace() {
        let e = "INVALID_ARGUMENT: bad op\n  detail\n=== Source Location Trace: ===\nfoo.cc:1";
        assert_eq!(compiler_message(e), "INVALID_ARGUMENT: bad op detail");
    }
}
