//! `tpuport validate MODEL`: run a model on a PJRT device, compare every output with a
//! reference (files, the same model in f32, or onnxruntime), optionally under TPU matmul
//! precision emulation, and bisect to the first op whose error crosses the tolerance.
//!
//! The numerics live in `tpuport-numerics`, the StableHLO rewrites in
//! `tpuport_lower::rewrite`; this file reads inputs, runs, and renders the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde::Serialize;
use tpuport_formats::stablehlo::{self, result_attr};
use tpuport_lower::rewrite::{self, EmulationStats, MatmulPrecision};
use tpuport_model::{DType, HostTensor, Model};
use tpuport_numerics::{Bisection, Metrics, Policy, Precision, Probe, Verdict};
use tpuport_pjrt::Program;

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::commands::pjrt_util::{Module, RuntimeArgs};
use crate::commands::run::{execute, to_device};
use crate::printer::Printer;

/// JSON schema id of the report.
const SCHEMA: &str = "tpuport.validate/1";

/// Arguments of `tpuport validate`.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// The model: StableHLO text (`.mlir`, e.g. `jax.jit(f).lower(...).as_text()` or a
    /// `jax.export` module) or ONNX (`.onnx`, through the ONNX lowering).
    pub(crate) model: PathBuf,
    /// Inputs: a directory of `.npy` files (`<arg name>.npy`, `argN.npy`, or sorted order),
    /// an `.npz`, a `.safetensors` or one `.npy`.
    #[arg(long, value_name = "DIR|FILE", conflicts_with = "random")]
    pub(crate) inputs: Option<PathBuf>,
    /// Generate N input samples from the signature (floats ~ N(0,1), integers in [0, 16),
    /// booleans fair), seeded by --seed.
    #[arg(long, value_name = "N")]
    pub(crate) random: Option<u32>,
    /// Seed of --random.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Reference: `f32` (the same model run unmodified, bf16/f16 internals promoted to f32),
    /// `onnxruntime` (ONNX models; runs onnxruntime in a Python subprocess, an optional
    /// dependency), or a directory / `.npz` of expected outputs (`outN.npy` or `<name>.npy`).
    #[arg(long, value_name = "f32|onnxruntime|DIR|FILE", default_value = "f32")]
    pub(crate) reference: String,
    /// Numerics of the candidate run.
    #[arg(long, value_enum, default_value_t = Emulate::None)]
    pub(crate) emulate: Emulate,
    /// Compare every intermediate of `@main` with the f32 reference run and name the first op
    /// whose error crosses the tolerance.
    #[arg(long)]
    pub(crate) bisect: bool,
    /// With --bisect: compare only these values (SSA names such as `%12`; ONNX value names),
    /// repeatable. Default: every float op result of `@main`.
    #[arg(long = "probe", value_name = "NAME", requires = "bisect")]
    pub(crate) probes: Vec<String>,
    /// Relative tolerance (default: per precision, see docs/validate.md).
    #[arg(long, value_name = "X")]
    pub(crate) rtol: Option<f64>,
    /// Absolute tolerance (default: a fraction of each reference tensor's largest magnitude).
    #[arg(long, value_name = "X")]
    pub(crate) atol: Option<f64>,
    /// Largest fraction of elements allowed outside the tolerance.
    #[arg(long, value_name = "F")]
    pub(crate) max_outside: Option<f64>,
    /// Python interpreter for `--reference onnxruntime` (default: `python3` on PATH).
    #[arg(long, value_name = "PATH")]
    pub(crate) python: Option<PathBuf>,
    /// Write the rewritten modules (`candidate.mlir`, `reference.mlir`) into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) save_modules: Option<PathBuf>,
    /// Rows of the bisection chart in the text report (the JSON has every step).
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub(crate) chart_rows: usize,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

/// `--emulate` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Emulate {
    /// Run the model as it is.
    None,
    /// f32 matmuls/convolutions as 1 bf16 pass, f32 accumulation (TPU `DEFAULT`).
    TpuDefault,
    /// 3 bf16 passes (TPU `HIGH`).
    TpuHigh,
    /// 6 bf16 passes (TPU `HIGHEST`).
    TpuHighest,
    /// The whole model in bf16.
    Bf16,
}

/// A signature entry.
#[derive(Clone, Debug, Serialize)]
struct Sig {
    name: String,
    dtype: DType,
    shape: Vec<u64>,
}

#[derive(Debug, Serialize)]
struct OutputReport {
    index: usize,
    name: String,
    dtype: Option<DType>,
    shape: Option<Vec<u64>>,
    #[serde(flatten)]
    verdict: Verdict,
    metrics: Option<Metrics>,
}

#[derive(Debug, Serialize)]
struct ReferenceReport {
    kind: &'static str,
    path: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    model: PathBuf,
    platform: String,
    reference: ReferenceReport,
    emulate: Emulate,
    emulation: Option<EmulationStats>,
    policy: Policy,
    samples: usize,
    /// Partitions of the module as given; a sharded module runs unsharded on one device.
    partitions: u32,
    outputs: Vec<OutputReport>,
    bisect: Option<Bisection>,
    passed: bool,
}

/// The model as two StableHLO modules (candidate and f32 reference) plus what they take.
struct Prepared {
    candidate: String,
    reference: String,
    /// Caller-provided arguments (weights of a lowered ONNX model come from `weights`).
    args: Vec<Sig>,
    /// Module arguments fed from the model file, by position (lowered ONNX weights).
    weights: Vec<(usize, HostTensor)>,
    outputs: Vec<Sig>,
    probes: Vec<Probe>,
    emulation: Option<EmulationStats>,
    precision: Precision,
    onnx: bool,
    /// Partition count of the module as given (run unsharded on one device when > 1).
    partitions: u32,
}

pub(crate) fn run(a: &ValidateArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let prep = prepare(a)?;
    let samples = read_samples(a, &prep.args)?;
    let mut policy = Policy::new(prep.precision);
    if let Some(r) = a.rtol {
        policy = policy.with_rtol(r);
    }
    if let Some(t) = a.atol {
        policy = policy.with_atol(t);
    }
    if let Some(f) = a.max_outside {
        policy = policy.with_max_fraction_outside(f);
    }
    let reference = ReferenceKind::parse(&a.reference, prep.onnx)?;
    if let Some(dir) = &a.save_modules {
        save_modules(dir, &prep)?;
    }

    let n_out = prep.outputs.len();
    let cand_mod = module(&a.model, &prep.candidate, "candidate");
    let rt = a.runtime.open(&cand_mod, p)?;
    let platform = rt.client.platform_name().to_owned();
    let mut keep = KeepAlive::default();
    let cand = run_module(&rt, &cand_mod, &prep, &samples, &mut keep)
        .with_context(|| format!("running {} (candidate)", a.model.display()))?;
    let need_f32_run = matches!(reference, ReferenceKind::F32) || a.bisect;
    let f32_run = if need_f32_run {
        let m = module(&a.model, &prep.reference, "reference");
        Some(
            run_module(&rt, &m, &prep, &samples, &mut keep)
                .with_context(|| format!("running {} (f32 reference)", a.model.display()))?,
        )
    } else {
        None
    };
    let expected: Vec<Option<HostTensor>> = match &reference {
        ReferenceKind::F32 => f32_run
            .as_ref()
            .map(|r| r[..n_out].iter().cloned().map(Some).collect())
            .unwrap_or_default(),
        ReferenceKind::Files(path) => {
            if samples.len() != 1 {
                bail!(
                    "--reference {}: expected outputs are for one sample, --random gives {}",
                    path.display(),
                    samples.len()
                );
            }
            read_expected(path, &prep.outputs)?
        }
        ReferenceKind::Onnxruntime => onnxruntime(a, &prep, &samples)?,
    };
    let mut outputs = Vec::with_capacity(n_out);
    for (i, sig) in prep.outputs.iter().enumerate() {
        let c = &cand[i];
        let (verdict, metrics) = match expected.get(i).and_then(Option::as_ref) {
            None => (
                Verdict::Error {
                    reason: format!("output {} (`{}`) is missing from the reference", i, sig.name),
                },
                None,
            ),
            Some(r) => match tpuport_numerics::compare(r, c, &policy.tolerance) {
                Ok(m) => (policy.verdict(&m), Some(m)),
                Err(e) => (Verdict::Error { reason: e.to_string() }, None),
            },
        };
        outputs.push(OutputReport {
            index: i,
            name: sig.name.clone(),
            dtype: Some(c.dtype),
            shape: Some(c.shape.clone()),
            verdict,
            metrics,
        });
    }
    for (i, e) in expected.iter().enumerate().skip(n_out) {
        if let Some(t) = e {
            outputs.push(OutputReport {
                index: i,
                name: format!("out{i}"),
                dtype: Some(t.dtype),
                shape: Some(t.shape.clone()),
                verdict: Verdict::Error {
                    reason: format!(
                        "the reference has output {i}, the model has {n_out} output(s)"
                    ),
                },
                metrics: None,
            });
        }
    }
    let bisection = match (&f32_run, a.bisect) {
        (Some(r), true) => {
            Some(tpuport_numerics::bisect(&prep.probes, &r[n_out..], &cand[n_out..], &policy))
        }
        _ => None,
    };
    let passed = outputs.iter().all(|o| o.verdict.passed());
    let report = Report {
        schema: SCHEMA,
        model: a.model.clone(),
        platform,
        reference: ReferenceReport {
            kind: reference.word(),
            path: match &reference {
                ReferenceKind::Files(p) => Some(p.clone()),
                _ => None,
            },
        },
        emulate: a.emulate,
        emulation: prep.emulation,
        policy,
        samples: samples.len(),
        partitions: prep.partitions,
        outputs,
        bisect: bisection,
        passed,
    };
    super::emit_report(p, g.format, &report, || render(&report, a.chart_rows))?;
    Ok(if passed { Status::Success } else { Status::Findings })
}

fn save_modules(dir: &Path, prep: &Prepared) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in [("candidate.mlir", &prep.candidate), ("reference.mlir", &prep.reference)] {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

enum ReferenceKind {
    F32,
    Onnxruntime,
    Files(PathBuf),
}

impl ReferenceKind {
    fn parse(s: &str, onnx: bool) -> anyhow::Result<ReferenceKind> {
        Ok(match s {
            "f32" => ReferenceKind::F32,
            "onnxruntime" | "ort" => {
                if !onnx {
                    bail!("--reference onnxruntime needs an ONNX model");
                }
                ReferenceKind::Onnxruntime
            }
            path => {
                let p = PathBuf::from(path);
                if !p.exists() {
                    bail!(
                        "--reference {path}: no such file or directory (expected f32, onnxruntime, a directory or an .npz)"
                    );
                }
                ReferenceKind::Files(p)
            }
        })
    }

    fn word(&self) -> &'static str {
        match self {
            ReferenceKind::F32 => "f32",
            ReferenceKind::Onnxruntime => "onnxruntime",
            ReferenceKind::Files(_) => "files",
        }
    }
}

fn module(path: &Path, text: &str, what: &str) -> Module {
    Module {
        path: path.with_extension(format!("{what}.mlir")),
        program: Program::mlir(text.as_bytes().to_vec()),
        args: None,
        results: None,
        partitions: 1,
        shardy: false,
        stablehlo_version: None,
    }
}

/// Reads the model and builds the candidate and reference modules.
fn prepare(a: &ValidateArgs) -> anyhow::Result<Prepared> {
    let is_onnx = a.model.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"));
    let Source { model, weights, arg_names, onnx } = if is_onnx {
        lower_onnx(a)?
    } else {
        let bytes =
            std::fs::read(&a.model).with_context(|| format!("reading {}", a.model.display()))?;
        if bytes.starts_with(b"ML\xefR") {
            bail!(
                "{}: MLIR bytecode; validate rewrites the module and needs MLIR text (`jax.jit(f).lower(...).as_text()` or `jax.export(...).mlir_module()`)",
                a.model.display()
            );
        }
        let text = String::from_utf8(bytes)
            .with_context(|| format!("{}: not UTF-8 text", a.model.display()))?;
        let model = stablehlo::parse_text(&a.model, &text, &tpuport_formats::Limits::default())?;
        Source { model, weights: Vec::new(), arg_names: Vec::new(), onnx: None }
    };
    if model.graph.nodes.is_empty() && model.graph.inputs.is_empty() {
        bail!("{}: no `@main` function to run", a.model.display());
    }
    let partitions = model
        .metadata
        .properties
        .iter()
        .find(|(k, _)| k == "mhlo.num_partitions")
        .and_then(|(_, v)| v.split(':').next()?.trim().parse::<u32>().ok())
        .unwrap_or(1);
    let mut model = model;
    if partitions > 1 {
        // the same values on one device: drop the (automatic) sharding annotations
        rewrite::unshard(&mut model).with_context(|| {
            format!("{}: running the sharded module on one device", a.model.display())
        })?;
    }
    let g = &model.graph;
    let sig = |id: tpuport_model::ValueId, fallback: String| -> anyhow::Result<Sig> {
        let v = g.value(id);
        let dtype = v
            .ty
            .dtype
            .with_context(|| format!("{}: {} has no element type", a.model.display(), v.name))?;
        let shape =
            v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed).with_context(|| {
                format!(
                    "{}: {} has a dynamic shape ({}); validate needs static shapes",
                    a.model.display(),
                    fallback,
                    v.ty
                )
            })?;
        Ok(Sig { name: fallback, dtype, shape })
    };
    let weight_pos: Vec<usize> = weights.iter().map(|(i, _)| *i).collect();
    let mut args = Vec::new();
    for (i, &id) in g.inputs.iter().enumerate() {
        if weight_pos.contains(&i) {
            continue;
        }
        let name = arg_names
            .get(i)
            .cloned()
            .flatten()
            .unwrap_or_else(|| g.value(id).name.trim_start_matches('%').to_owned());
        args.push(sig(id, name)?);
    }
    let mut outputs = Vec::new();
    // a lowered ONNX model's results: the graph outputs, then the values exposed for --bisect
    let n_out = onnx.as_ref().map_or(g.outputs.len(), |o| o.outputs.len());
    for (i, &id) in g.outputs.iter().enumerate().take(n_out) {
        let label = match &onnx {
            Some(o) => Some(o.outputs[i].as_str()),
            None => result_attr(g, i, "jax.result_info").and_then(tpuport_model::Attr::as_str),
        };
        let name = label
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("out{i}"), |s| format!("out{i} ({s})"));
        outputs.push(sig(id, name)?);
    }
    let precision = match a.emulate {
        Emulate::None => lowest_precision(&model),
        Emulate::TpuDefault => Precision::TpuDefault,
        Emulate::TpuHigh => Precision::TpuHigh,
        Emulate::TpuHighest => Precision::TpuHighest,
        Emulate::Bf16 => Precision::Bf16,
    };
    let mut cand = model.clone();
    let mut refm = model;
    let mut probes = Vec::new();
    if let Some(o) = onnx {
        probes = o.probes;
    } else if a.bisect {
        let only = (!a.probes.is_empty()).then_some(a.probes.as_slice());
        let exposed = rewrite::expose(&mut cand, only)
            .with_context(|| format!("--probe: {}", a.model.display()))?;
        let _ = rewrite::expose(&mut refm, only)?;
        probes = exposed
            .into_iter()
            .map(|e| Probe {
                name: e.name,
                op: e.op,
                location: e.location.as_deref().map(short_loc),
            })
            .collect();
    }
    let emulation = match a.emulate {
        Emulate::None => None,
        Emulate::TpuDefault => Some(rewrite::emulate_matmul(&mut cand, MatmulPrecision::Default)?),
        Emulate::TpuHigh => Some(rewrite::emulate_matmul(&mut cand, MatmulPrecision::High)?),
        Emulate::TpuHighest => Some(rewrite::emulate_matmul(&mut cand, MatmulPrecision::Highest)?),
        Emulate::Bf16 => {
            rewrite::retype(&mut cand, &[DType::F32], DType::BF16)?;
            None
        }
    };
    rewrite::retype(&mut refm, &[DType::BF16, DType::F16], DType::F32)?;
    Ok(Prepared {
        candidate: stablehlo::print_model(&cand)?,
        reference: stablehlo::print_model(&refm)?,
        args,
        weights,
        outputs,
        probes,
        emulation,
        precision,
        onnx: is_onnx,
        partitions,
    })
}

/// The model to validate, as a StableHLO model plus what the caller does not provide.
struct Source {
    model: Model,
    /// Module arguments fed from the model file, by position (lowered ONNX weights).
    weights: Vec<(usize, HostTensor)>,
    /// Argument names by position (ONNX input names), where known.
    arg_names: Vec<Option<String>>,
    onnx: Option<OnnxSource>,
}

/// What the ONNX lowering says about its module's results.
struct OnnxSource {
    /// Graph output names (the module's first results).
    outputs: Vec<String>,
    /// The values exposed for --bisect (the results after the outputs), in graph order.
    probes: Vec<Probe>,
}

/// ONNX: bind input shapes from the input files, lower (returning every float node output as
/// an extra result when bisecting, or the --probe values), and read the lowered module back for
/// the rewrites.
fn lower_onnx(a: &ValidateArgs) -> anyhow::Result<Source> {
    use tpuport_lower::onnx::{ArgSource, LowerOptions, lower};
    let mut opts = tpuport_formats::ImportOptions::default();
    if let Some(path) = &a.inputs {
        let files = read_tensors_as(path, Some("output_"))?;
        // `input_N` (ONNX test-data layout) names the N-th graph input: read the graph's input
        // names first, only when such files are there
        let names: Vec<String> = if files.iter().any(|(n, _)| n.starts_with("input_")) {
            tpuport_formats::open(&a.model, &opts)
                .map(|m| m.graph.inputs.iter().map(|v| m.graph.value(*v).name.clone()).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for (name, t) in files {
            let name = name
                .strip_prefix("input_")
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| names.get(n).cloned())
                .filter(|_| !names.contains(&name))
                .unwrap_or(name);
            opts.input_shapes.insert(name, tpuport_model::Shape::fixed(&t.shape));
        }
    }
    let onnx = tpuport_formats::open(&a.model, &opts)?;
    let g = &onnx.graph;
    // value name -> (op, node name) of its producer
    let producer =
        |name: &str| g.nodes.iter().find(|n| n.outputs.iter().any(|o| g.value(*o).name == name));
    let expose: Vec<String> = if !a.bisect {
        Vec::new()
    } else if a.probes.is_empty() {
        g.nodes
            .iter()
            .filter(|n| n.op != "Constant")
            .flat_map(|n| n.outputs.iter().map(|o| g.value(*o)))
            .filter(|v| v.ty.dtype.is_some_and(DType::is_float))
            .map(|v| v.name.clone())
            .collect()
    } else {
        a.probes.clone()
    };
    let lowered = lower(&onnx, &LowerOptions { expose: expose.clone(), ..LowerOptions::default() })
        .with_context(|| format!("lowering {}", a.model.display()))?;
    let model = stablehlo::parse_text(&a.model, &lowered.mlir, &tpuport_formats::Limits::default())
        .context("reading back the lowered module")?;
    let n_out = lowered.results.len().saturating_sub(expose.len());
    let outputs = lowered.results[..n_out].iter().map(|r| r.name.clone()).collect();
    let probes = lowered.results[n_out..]
        .iter()
        .map(|r| {
            let node = producer(&r.name);
            Probe {
                name: r.name.clone(),
                op: node.map_or_else(String::new, tpuport_model::Node::qualified_op),
                location: node.map(|n| n.name.clone()).filter(|n| !n.is_empty()),
            }
        })
        .collect();
    let mut weights = Vec::new();
    let mut arg_names = Vec::new();
    for (i, b) in lowered.args.iter().enumerate() {
        match &b.source {
            ArgSource::Input(n) => arg_names.push(Some(n.clone())),
            ArgSource::Weight(n) => {
                arg_names.push(None);
                let w = onnx
                    .weights
                    .by_name(n)
                    .with_context(|| format!("weight `{n}` not in {}", a.model.display()))?;
                let bytes = w.bytes().with_context(|| format!("weight `{n}`"))?;
                weights.push((
                    i,
                    HostTensor::new(
                        w.dtype,
                        w.shape().as_fixed().unwrap_or_default(),
                        bytes.into_owned(),
                    )?,
                ));
            }
        }
    }
    Ok(Source { model, weights, arg_names, onnx: Some(OnnxSource { outputs, probes }) })
}

/// bf16 or f16 when any op of the module computes in it, else f32.
fn lowest_precision(m: &Model) -> Precision {
    let mut p = Precision::F32;
    for g in std::iter::once(&m.graph).chain(&m.functions) {
        for v in &g.values {
            match v.ty.dtype {
                Some(DType::BF16) => return Precision::Bf16,
                Some(DType::F16) => p = Precision::F16,
                _ => {}
            }
        }
    }
    p
}

/// `"jit(f)/dot_general"("/src/model.py":12:4)` → `jit(f)/dot_general @ model.py:12`.
fn short_loc(loc: &str) -> String {
    let name = stablehlo::short_location(loc);
    // the first `"file":line` pair after the name
    let file_line = loc.match_indices("\":").find_map(|(i, _)| {
        let start = loc[..i].rfind('"')?;
        let file = &loc[start + 1..i];
        let line: String = loc[i + 2..].chars().take_while(char::is_ascii_digit).collect();
        (!line.is_empty()).then(|| {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{base}:{line}")
        })
    });
    match file_line {
        Some(fl) if !name.contains(&fl) => format!("{name} @ {fl}"),
        _ => name,
    }
}

/// Device buffers and executables held until the command ends.
///
/// Measured with the XLA:CPU plugin (xla-cpu-pjrt 0.0.1): when the input buffers of one
/// execution are freed and new ones allocated for the next, a later execution sometimes
/// computes with the previous sample's weights (a stable wrong result, e.g. 1 run in 3 with
/// `--random 2` on mlp_b128), consistent with a cache keyed by buffer address. Keeping every
/// buffer alive until the end makes the runs reproducible.
#[derive(Default)]
struct KeepAlive {
    buffers: Vec<Vec<Vec<tpuport_pjrt::Buffer>>>,
    executables: Vec<tpuport_pjrt::Compiled>,
}

/// Runs a module once per sample and stacks each result over the samples (`[N, ...]` when
/// N > 1).
fn run_module(
    rt: &crate::commands::pjrt_util::Runtime,
    m: &Module,
    prep: &Prepared,
    samples: &[Vec<HostTensor>],
    keep: &mut KeepAlive,
) -> anyhow::Result<Vec<HostTensor>> {
    keep.executables.push(rt.cache.get_or_compile(&rt.client, &m.program, &m.compile_options())?);
    let exe = &keep.executables.last().context("no executable")?.executable;
    let mut per_result: Vec<Vec<HostTensor>> = Vec::new();
    for sample in samples {
        let mut inputs: Vec<(String, HostTensor)> = Vec::new();
        let mut user = sample.iter();
        let total = sample.len() + prep.weights.len();
        for pos in 0..total {
            if let Some((_, w)) = prep.weights.iter().find(|(i, _)| *i == pos) {
                inputs.push((format!("weight {pos}"), w.clone()));
            } else if let Some(t) = user.next() {
                inputs.push((format!("input {pos}"), t.clone()));
            }
        }
        let bufs = to_device(&rt.client, exe, m, &inputs)?;
        let outs = execute(exe, &bufs)?;
        let host: Vec<HostTensor> = outs
            .into_iter()
            .next()
            .unwrap_or_default()
            .iter()
            .map(|b| b.to_host())
            .collect::<Result<_, _>>()?;
        keep.buffers.push(bufs);
        if per_result.is_empty() {
            per_result = host.into_iter().map(|t| vec![t]).collect();
        } else {
            for (acc, t) in per_result.iter_mut().zip(host) {
                acc.push(t);
            }
        }
    }
    per_result.into_iter().map(stack).collect()
}

fn stack(mut ts: Vec<HostTensor>) -> anyhow::Result<HostTensor> {
    if ts.len() == 1 {
        return Ok(ts.remove(0));
    }
    let first = ts.first().context("no samples")?;
    let (dtype, shape) = (first.dtype, first.shape.clone());
    let mut data = Vec::new();
    for t in &ts {
        data.extend_from_slice(t.data());
    }
    let mut s = vec![ts.len() as u64];
    s.extend(shape);
    Ok(HostTensor::new(dtype, s, data)?)
}

// ---------------------------------------------------------------- inputs

fn read_samples(a: &ValidateArgs, args: &[Sig]) -> anyhow::Result<Vec<Vec<HostTensor>>> {
    if let Some(n) = a.random {
        if n == 0 {
            bail!("--random 0: need at least one sample");
        }
        let mut rng = SplitMix(a.seed);
        return (0..n).map(|_| args.iter().map(|s| random_tensor(s, &mut rng)).collect()).collect();
    }
    let Some(path) = &a.inputs else {
        if args.is_empty() {
            return Ok(vec![Vec::new()]);
        }
        bail!(
            "{} takes {} input(s); give --inputs DIR|FILE or --random N",
            a.model.display(),
            args.len()
        );
    };
    let named = read_tensors_as(path, Some("output_"))?;
    Ok(vec![bind(path, named, args)?])
}

/// Tensors from a directory of `.npy`, an `.npz`, a `.safetensors` or one `.npy`, named by
/// file stem / member name, in natural order.
///
/// In a directory, files whose stem starts with `skip` are left out (an ONNX
/// `test_data_set_N` folder holds `input_N.pb` and `output_N.pb` side by side).
fn read_tensors_as(path: &Path, skip: Option<&str>) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let mut out = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "npy" || e == "pb"))
            .filter(|p| {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                skip.is_none_or(|k| !stem.starts_with(k))
            })
            .collect();
        files.sort();
        let mut v = Vec::new();
        for f in files {
            let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_owned();
            let t = if f.extension().is_some_and(|e| e == "pb") {
                read_pb(&f)?
            } else {
                tpuport_formats::npy::read_npy(&f)?
            };
            v.push((stem, t));
        }
        v
    } else if ext == "npz" {
        tpuport_formats::npy::read_npz(path)?
    } else if ext == "npy" {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_owned();
        vec![(stem, tpuport_formats::npy::read_npy(path)?)]
    } else if ext == "safetensors" {
        let m =
            tpuport_formats::safetensors::import_file(path, &tpuport_formats::Limits::default())?;
        let mut v = Vec::new();
        for w in m.weights.iter() {
            let bytes =
                w.bytes().with_context(|| format!("{}: tensor `{}`", path.display(), w.name))?;
            v.push((
                w.name.clone(),
                HostTensor::new(
                    w.dtype,
                    w.shape().as_fixed().unwrap_or_default(),
                    bytes.into_owned(),
                )?,
            ));
        }
        v
    } else if ext == "pb" {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_owned();
        vec![(stem, read_pb(path)?)]
    } else if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    } else {
        bail!(
            "{}: expected a directory of .npy or .pb files, an .npz, a .safetensors, an .npy or a .pb",
            path.display()
        );
    };
    out.sort_by_key(|x| natural(&x.0));
    Ok(out)
}

/// One serialized ONNX `TensorProto` (the backend test suite's `input_0.pb` layout).
fn read_pb(path: &Path) -> anyhow::Result<HostTensor> {
    Ok(tpuport_formats::onnx::read_tensor_pb(path, &tpuport_formats::Limits::default())?)
}

/// Sort key that orders `arg2` before `arg10`.
fn natural(s: &str) -> (String, u64) {
    let digits: String = s
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let head = s[..s.len() - digits.len()].to_owned();
    (head, digits.parse().unwrap_or(0))
}

/// Binds named tensors to the arguments: by name, then `argN` / `input_N` / `N`, then the
/// remaining ones in order. Checks dtype and shape.
fn bind(
    path: &Path,
    mut named: Vec<(String, HostTensor)>,
    args: &[Sig],
) -> anyhow::Result<Vec<HostTensor>> {
    let mut slots: Vec<Option<(String, HostTensor)>> = vec![None; args.len()];
    for (i, a) in args.iter().enumerate() {
        let keys = [a.name.clone(), format!("arg{i}"), format!("input_{i}"), format!("{i}")];
        if let Some(pos) = named.iter().position(|(n, _)| keys.contains(n)) {
            slots[i] = Some(named.remove(pos));
        }
    }
    let mut rest = named.into_iter();
    for s in &mut slots {
        if s.is_none() {
            *s = rest.next();
        }
    }
    let mut out = Vec::with_capacity(args.len());
    for (i, (a, s)) in args.iter().zip(slots).enumerate() {
        let Some((src, mut t)) = s else {
            bail!(
                "{}: no tensor for input {i} `{}` ({}{:?})",
                path.display(),
                a.name,
                a.dtype,
                a.shape
            );
        };
        // npy has no bf16: JAX tooling (and the fixtures) store bf16 as its u16 bit pattern
        if a.dtype == DType::BF16 && t.dtype == DType::U16 && t.shape == a.shape {
            t = HostTensor::new(DType::BF16, t.shape.clone(), t.into_data())?;
        }
        if t.dtype != a.dtype || t.shape != a.shape {
            bail!(
                "{}: `{src}` for input {i} `{}` is {}{:?}, the model expects {}{:?}",
                path.display(),
                a.name,
                t.dtype,
                t.shape,
                a.dtype,
                a.shape
            );
        }
        out.push(t);
    }
    if let Some((extra, _)) = rest.next() {
        bail!(
            "{}: `{extra}` is left over: the model takes {} input(s)",
            path.display(),
            args.len()
        );
    }
    Ok(out)
}

/// Expected outputs from a directory or `.npz`, by `outN`, `output_N`, name, then order.
fn read_expected(path: &Path, outs: &[Sig]) -> anyhow::Result<Vec<Option<HostTensor>>> {
    let mut named = read_tensors_as(path, Some("input_"))?;
    let mut v: Vec<Option<HostTensor>> = vec![None; outs.len()];
    for (i, o) in outs.iter().enumerate() {
        let keys = [format!("out{i}"), format!("output_{i}"), o.name.clone(), format!("{i}")];
        if let Some(pos) = named.iter().position(|(n, _)| keys.contains(n)) {
            v[i] = Some(named.remove(pos).1);
        }
    }
    let mut rest = named.into_iter();
    for s in &mut v {
        if s.is_none() {
            *s = rest.next().map(|(_, t)| t);
        }
    }
    v.extend(rest.map(|(_, t)| Some(t)));
    Ok(v)
}

/// splitmix64, for seeded random inputs.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn random_tensor(s: &Sig, rng: &mut SplitMix) -> anyhow::Result<HostTensor> {
    let n = usize::try_from(s.shape.iter().product::<u64>())?;
    if n > 1 << 28 {
        bail!("input `{}` has {n} elements: too large for --random", s.name);
    }
    let mut data = Vec::with_capacity(n * 4);
    for _ in 0..n {
        match s.dtype {
            DType::F32 => data.extend((rng.normal() as f32).to_le_bytes()),
            DType::F64 => data.extend(rng.normal().to_le_bytes()),
            DType::BF16 => data.extend(half::bf16::from_f64(rng.normal()).to_le_bytes()),
            DType::F16 => data.extend(half::f16::from_f64(rng.normal()).to_le_bytes()),
            DType::I64 => data.extend(((rng.next() % 16) as i64).to_le_bytes()),
            DType::I32 => data.extend(((rng.next() % 16) as i32).to_le_bytes()),
            DType::Bool => data.push((rng.next() & 1) as u8),
            d => bail!("input `{}`: --random cannot generate {d}", s.name),
        }
    }
    Ok(HostTensor::new(s.dtype, s.shape.clone(), data)?)
}

// ---------------------------------------------------------------- onnxruntime

const ORT_SCRIPT: &str = r"
import sys, numpy as np, onnxruntime as ort
model, inp, out = sys.argv[1:4]
s = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
z = np.load(inp)
names = [i.name for i in s.get_inputs()]
outs = []
for k in range(int(sys.argv[4])):
    feed = {nm: z[f's{k}_{nm}'] for nm in names if f's{k}_{nm}' in z.files}
    outs.append(s.run(None, feed))
np.savez(out, **{f'out{i}': (np.stack([o[i] for o in outs]) if len(outs) > 1 else outs[0][i]) for i in range(len(outs[0]))})
";

fn onnxruntime(
    a: &ValidateArgs,
    prep: &Prepared,
    samples: &[Vec<HostTensor>],
) -> anyhow::Result<Vec<Option<HostTensor>>> {
    let dir = std::env::temp_dir().join(format!("tpuport-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let inp = dir.join("inputs.npz");
    let out = dir.join("outputs.npz");
    let mut arrays = Vec::new();
    for (k, s) in samples.iter().enumerate() {
        for (sig, t) in prep.args.iter().zip(s) {
            arrays.push((format!("s{k}_{}", sig.name), t.clone()));
        }
    }
    tpuport_formats::npy::write_npz(&inp, &arrays, false)?;
    let python = a.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
    let res = std::process::Command::new(&python)
        .arg("-c")
        .arg(ORT_SCRIPT)
        .arg(&a.model)
        .arg(&inp)
        .arg(&out)
        .arg(samples.len().to_string())
        .output()
        .with_context(|| format!("--reference onnxruntime: running {}", python.display()))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let last = err.lines().last().unwrap_or("").to_owned();
        let _ = std::fs::remove_dir_all(&dir);
        bail!(
            "--reference onnxruntime: {} failed: {last} (onnxruntime is an optional dependency: `pip install onnxruntime numpy`, or pass --python)",
            python.display()
        );
    }
    let r = read_expected(&out, &prep.outputs);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

// ---------------------------------------------------------------- text report

fn render(r: &Report, chart_rows: usize) -> String {
    let mut s = String::new();
    let reference = match &r.reference.path {
        Some(p) => format!("files {}", p.display()),
        None => r.reference.kind.to_owned(),
    };
    let _ = writeln!(
        s,
        "validate {} on {}: candidate {}, reference {reference}, {} sample(s)",
        r.model.display(),
        r.platform,
        match r.emulate {
            Emulate::None => "as is".to_owned(),
            e => format!(
                "--emulate {}",
                e.to_possible_value().map_or_else(String::new, |v| v.get_name().to_owned())
            ),
        },
        r.samples
    );
    if r.partitions > 1 {
        let _ = writeln!(
            s,
            "sharded over {} partitions: run unsharded on one device (same values, collective \
             reduction order aside)",
            r.partitions
        );
    }
    if let Some(e) = &r.emulation {
        let _ = writeln!(
            s,
            "emulated matmuls: {} DEFAULT, {} HIGH, {} HIGHEST ({} raised by precision_config), {} skipped",
            e.default,
            e.high,
            e.highest,
            e.raised_by_precision_config,
            e.skipped.len()
        );
    }
    let t = &r.policy.tolerance;
    let atol = match t.atol {
        tpuport_numerics::Atol::Absolute(v) => format!("{v:.1e}"),
        tpuport_numerics::Atol::RelativeToMax(f) => format!("{f:.1e}·max|ref|"),
    };
    let _ = writeln!(
        s,
        "tolerance ({}): rtol {:.2e}, atol {atol}, at most {}% of elements outside",
        r.policy.precision.name(),
        t.rtol,
        t.max_fraction_outside * 100.0
    );
    s.push('\n');
    for o in &r.outputs {
        let ty = match (&o.dtype, &o.shape) {
            (Some(d), Some(sh)) => format!("{d}{sh:?}"),
            _ => String::new(),
        };
        let _ = writeln!(s, "{} {} {ty}", o.verdict.word().to_uppercase(), o.name);
        if let Some(m) = &o.metrics {
            let _ = writeln!(
                s,
                "  max abs {:.3e}  max rel {:.3e}  rmse {:.3e} (rel {:.3e})  cosine {}",
                m.max_abs,
                m.max_rel,
                m.rmse,
                m.rel_rmse,
                m.cosine.map_or_else(|| "n/a".to_owned(), |c| format!("{c:.8}"))
            );
            let _ = writeln!(
                s,
                "  bf16 ulps: median {:.2}, max {:.3e}  outside tolerance: {} of {} ({:.4}%)",
                m.bf16_ulp_median,
                m.bf16_ulp_max,
                m.outside,
                m.elements,
                m.fraction_outside * 100.0
            );
            if let (Some(i), Some(r0), Some(c0), Some(sh)) =
                (m.worst_index, m.worst_reference, m.worst_candidate, &o.shape)
                && m.max_abs > 0.0
            {
                let _ = writeln!(
                    s,
                    "  worst element {:?}: reference {r0:.6e}, candidate {c0:.6e}",
                    unravel(i, sh)
                );
            }
            let nf = &m.non_finite;
            if nf.reference_nan + nf.reference_inf + nf.candidate_nan + nf.candidate_inf > 0 {
                let _ = writeln!(
                    s,
                    "  non-finite: reference {} NaN / {} Inf, candidate {} NaN / {} Inf, {} mismatched",
                    nf.reference_nan,
                    nf.reference_inf,
                    nf.candidate_nan,
                    nf.candidate_inf,
                    nf.mismatched
                );
            }
            if let Some(c) = &m.classes {
                let _ = writeln!(
                    s,
                    "  last axis as {} ({} rows x {}): top-1 agreement {:.2}%{}  KL mean {:.3e} max {:.3e}",
                    c.interpreted_as,
                    c.rows,
                    c.classes,
                    c.top1_agreement * 100.0,
                    c.top5_agreement
                        .map_or_else(String::new, |t| format!(", top-5 {:.2}%", t * 100.0)),
                    c.kl_mean,
                    c.kl_max
                );
                if c.rows_non_finite > 0 {
                    let _ = writeln!(
                        s,
                        "  ({} row(s) with NaN/Inf left out of the last-axis metrics)",
                        c.rows_non_finite
                    );
                }
            }
        }
        match &o.verdict {
            Verdict::Fail { reasons } => {
                for reason in reasons {
                    let _ = writeln!(s, "  fail: {reason}");
                }
            }
            Verdict::Error { reason } => {
                let _ = writeln!(s, "  error: {reason}");
            }
            Verdict::Pass => {}
        }
    }
    if let Some(b) = &r.bisect {
        s.push('\n');
        render_bisect(&mut s, b, chart_rows, r.passed);
    }
    let failed = r.outputs.iter().filter(|o| !o.verdict.passed()).count();
    let _ = writeln!(
        s,
        "\n{}: {} of {} output(s) within tolerance",
        if r.passed { "PASS" } else { "FAIL" },
        r.outputs.len() - failed,
        r.outputs.len()
    );
    s
}

/// Flat index → multi-index in row-major order.
fn unravel(mut i: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

fn render_bisect(s: &mut String, b: &Bisection, rows: usize, outputs_passed: bool) {
    let _ = writeln!(
        s,
        "bisect: {} intermediate(s) compared with the f32 reference run",
        b.steps.len()
    );
    match b.first() {
        Some(st) => {
            let _ = writeln!(
                s,
                "first divergent op: #{} {} = {}{} (rel rmse {:.3e}, {:.3}% outside)",
                st.index,
                st.probe.name,
                st.probe.op,
                st.probe.location.as_deref().map_or_else(String::new, |l| format!(" at {l}")),
                st.rel_rmse,
                st.fraction_outside * 100.0
            );
            if outputs_passed {
                let _ = writeln!(
                    s,
                    "  (every output is within tolerance: this error does not reach the outputs)"
                );
            }
        }
        None => {
            let _ = writeln!(s, "no intermediate crosses the tolerance");
        }
    }
    // rows to show: evenly spaced, plus the divergence point and its neighbours
    let n = b.steps.len();
    let mut show: Vec<usize> = if n <= rows.max(1) {
        (0..n).collect()
    } else {
        (0..rows).map(|k| k * (n - 1) / (rows - 1).max(1)).collect()
    };
    if let Some(f) = b.first_divergent {
        show.extend(f.saturating_sub(1)..(f + 2).min(n));
    }
    show.sort_unstable();
    show.dedup();
    let _ = writeln!(s, "error growth (relative RMSE, log scale 1e-8 .. 1):");
    let mut prev = None;
    for i in show {
        if let Some(p) = prev
            && i > p + 1
        {
            let _ = writeln!(s, "  {:>5}", "…");
        }
        prev = Some(i);
        let st = &b.steps[i];
        let width = 32.0;
        let x = if st.rel_rmse > 0.0 {
            ((st.rel_rmse.log10() + 8.0) / 8.0).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let bar = "#".repeat((x * width).round() as usize);
        let mark = match (&st.verdict, Some(i) == b.first_divergent) {
            (_, true) => "<- first divergent",
            (Verdict::Fail { .. }, _) => "x",
            (Verdict::Error { .. }, _) => "?",
            (Verdict::Pass, _) => "",
        };
        let loc = st.probe.location.as_deref().map_or_else(String::new, |l| {
            // `jit(f)/dot_general @ m.py:3` → `dot_general @ m.py:3`
            let l =
                if l.starts_with("jit(") { l.split_once(")/").map_or(l, |(_, r)| r) } else { l };
            format!(" [{l}]")
        });
        // long value names (ONNX) add nothing to the node name in the location
        let name = if st.probe.name.len() > 12 && !loc.is_empty() { "" } else { &st.probe.name };
        let label = format!("{name} {}{loc}", st.probe.op.trim_start_matches("stablehlo."));
        let label: String = label.trim_start().chars().take(64).collect();
        let _ = writeln!(
            s,
            "  {:>5} {label:<64} {:>9.2e} |{bar:<32}| {mark}",
            format!("#{i}"),
            st.rel_rmse
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t(shape: &[u64], v: &[f32]) -> HostTensor {
        HostTensor::from_f32(shape.to_vec(), v).unwrap()
    }

    /// A report over hand-made tensors: one passing output with logits, one failing with a
    /// NaN, one missing from the reference, and a bisection.
    fn report() -> Report {
        let policy = Policy::new(Precision::TpuDefault);
        let tol = &policy.tolerance;
        let logits_ref = t(&[2, 5], &[2.0, 1.0, 0.5, -1.0, 0.0, 0.1, 0.2, 3.0, -2.0, 1.0]);
        let logits = t(&[2, 5], &[2.01, 1.0, 0.5, -1.0, 0.0, 0.1, 0.2, 2.99, -2.0, 1.0]);
        let m0 = tpuport_numerics::compare(&logits_ref, &logits, tol).unwrap();
        let m1 = tpuport_numerics::compare(
            &t(&[4], &[1.0, 2.0, 3.0, 4.0]),
            &t(&[4], &[1.0, 2.5, f32::NAN, 4.0]),
            tol,
        )
        .unwrap();
        let probes: Vec<Probe> = ["%0", "%1", "%2"]
            .iter()
            .zip(["stablehlo.dot_general", "stablehlo.reduce", "stablehlo.divide"])
            .map(|(n, op)| Probe {
                name: (*n).to_owned(),
                op: op.to_owned(),
                location: Some(format!(
                    "jit(f)/{} @ model.py:7",
                    op.trim_start_matches("stablehlo.")
                )),
            })
            .collect();
        let r = vec![t(&[2], &[1.0, 2.0]), t(&[2], &[10.0, 20.0]), t(&[2], &[0.1, 0.1])];
        let c = vec![t(&[2], &[1.001, 2.0]), t(&[2], &[12.0, 20.0]), t(&[2], &[0.12, 0.1])];
        let bisect = tpuport_numerics::bisect(&probes, &r, &c, &policy);
        let outputs = vec![
            OutputReport {
                index: 0,
                name: "out0 (logits)".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![2, 5]),
                verdict: policy.verdict(&m0),
                metrics: Some(m0),
            },
            OutputReport {
                index: 1,
                name: "out1".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![4]),
                verdict: policy.verdict(&m1),
                metrics: Some(m1),
            },
            OutputReport {
                index: 2,
                name: "out2".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![3]),
                verdict: Verdict::Error {
                    reason: "output 2 (`out2`) is missing from the reference".to_owned(),
                },
                metrics: None,
            },
        ];
        Report {
            schema: SCHEMA,
            model: PathBuf::from("model.mlir"),
            platform: "cpu".to_owned(),
            reference: ReferenceReport { kind: "f32", path: None },
            emulate: Emulate::TpuDefault,
            emulation: Some(EmulationStats {
                default: 3,
                high: 0,
                highest: 1,
                raised_by_precision_config: 1,
                skipped: vec![],
            }),
            policy,
            samples: 1,
            partitions: 1,
            passed: false,
            outputs,
            bisect: Some(bisect),
        }
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render(&report(), 40));
    }

    #[test]
    fn json_report_snapshot() {
        insta::assert_json_snapshot!(report());
    }

    #[test]
    fn short_locations() {
        assert_eq!(
            short_loc("\"jit(f)/dot_general\"(\"/src/m.py\":12:4)"),
            "jit(f)/dot_general @ m.py:12"
        );
        assert_eq!(short_loc("\"x\""), "x");
        assert_eq!(natural("arg10").1, 10);
        let mut v = vec!["arg10", "arg2", "arg1"];
        v.sort_by_key(|s| natural(s));
        assert_eq!(v, ["arg1", "arg2", "arg10"]);
    }
}
