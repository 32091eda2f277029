//! Numerics parity: run a model on a PJRT device, compare every output with a reference (files,
//! the same model in f32, or onnxruntime), optionally under TPU matmul-precision emulation, and
//! bisect to the first op whose error crosses the tolerance.
//!
//! The metrics live in `tpuport-numerics`, the StableHLO rewrites in `tpuport_lower::rewrite`;
//! [`prepare`] builds the candidate and reference modules, [`reference`] reads expected outputs
//! and runs onnxruntime, and [`validate`] runs both modules over the samples and compares.

mod prepare;
mod reference;

use std::path::{Path, PathBuf};

use serde::Serialize;
use tpuport_exec::error::{Context as _, Result, invalid};
use tpuport_exec::{Module, Observer, RuntimeOptions};
use tpuport_formats::tensors::{Entry, Slot, SplitMix};
use tpuport_lower::rewrite::EmulationStats;
use tpuport_model::{DType, HostTensor};
use tpuport_numerics::{Bisection, Metrics, Policy, Verdict};
use tpuport_pjrt::{KeepAlive, Program, Runtime};

pub use prepare::short_loc;
use prepare::{Prepared, prepare};
use reference::ReferenceKind;

/// JSON schema id of the report.
pub const SCHEMA: &str = "tpuport.validate/1";

/// Numerics of the candidate run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Emulate {
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

impl Emulate {
    /// The `--emulate` spelling.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Emulate::None => "none",
            Emulate::TpuDefault => "tpu-default",
            Emulate::TpuHigh => "tpu-high",
            Emulate::TpuHighest => "tpu-highest",
            Emulate::Bf16 => "bf16",
        }
    }
}

/// Where the input samples come from.
#[derive(Clone, Debug)]
pub enum Inputs {
    /// A tensor set (see [`tpuport_formats::tensors::read_set`]); one sample.
    Files(PathBuf),
    /// Seeded samples drawn from the signature.
    Random {
        /// Number of samples (at least 1).
        samples: u32,
        /// Seed.
        seed: u64,
    },
    /// None given (fine for a model without inputs).
    None,
}

/// What to validate and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// StableHLO text or ONNX.
    pub model: PathBuf,
    /// Input samples.
    pub inputs: Inputs,
    /// ONNX: dimensions bound and inputs given a value at lowering time.
    pub statics: tpuport_exec::Statics,
    /// `f32`, `onnxruntime` (`ort`), or a folder / `.npz` of expected outputs.
    pub reference: String,
    /// Numerics of the candidate run.
    pub emulate: Emulate,
    /// Compare every intermediate with the f32 run and name the first divergent op.
    pub bisect: bool,
    /// With `bisect`: only these values.
    pub probes: Vec<String>,
    /// Relative tolerance (default: per precision).
    pub rtol: Option<f64>,
    /// Absolute tolerance (default: relative to each reference's largest magnitude).
    pub atol: Option<f64>,
    /// Largest fraction of elements allowed outside the tolerance.
    pub max_outside: Option<f64>,
    /// Python for onnxruntime (default `python3`).
    pub python: Option<PathBuf>,
    /// Write `candidate.mlir` and `reference.mlir` here.
    pub save_modules: Option<PathBuf>,
    /// The runtime.
    pub runtime: RuntimeOptions,
}

/// One output's verdict.
#[derive(Debug, Serialize)]
pub struct OutputReport {
    /// Position among the outputs.
    pub index: usize,
    /// `outN` with the model's label, when it has one.
    pub name: String,
    /// The candidate's element type.
    pub dtype: Option<DType>,
    /// The candidate's shape (samples stacked first when there are several).
    pub shape: Option<Vec<u64>>,
    /// Pass, fail with reasons, or error.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The comparison, when it ran.
    pub metrics: Option<Metrics>,
}

/// What the candidate was compared with.
#[derive(Debug, Serialize)]
pub struct ReferenceReport {
    /// `f32`, `onnxruntime` or `files`.
    pub kind: &'static str,
    /// The files, for `files`.
    pub path: Option<PathBuf>,
}

/// The validation report.
#[derive(Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The model file.
    pub model: PathBuf,
    /// PJRT platform name.
    pub platform: String,
    /// The reference.
    pub reference: ReferenceReport,
    /// Numerics of the candidate run.
    pub emulate: Emulate,
    /// What the emulation rewrote.
    pub emulation: Option<EmulationStats>,
    /// Tolerances applied.
    pub policy: Policy,
    /// Number of input samples.
    pub samples: usize,
    /// Partitions of the module as given; a sharded module runs unsharded on one device.
    pub partitions: u32,
    /// Per output.
    pub outputs: Vec<OutputReport>,
    /// The bisection, with `bisect`.
    pub bisect: Option<Bisection>,
    /// Every output within tolerance.
    pub passed: bool,
}

/// Runs the validation.
///
/// # Errors
/// A model, input or reference that cannot be read or does not fit, or a run that fails.
/// Outputs that differ are verdicts in the report, not errors.
pub fn validate(opts: &Options, obs: &dyn Observer) -> Result<Report> {
    let prep = prepare(opts)?;
    for n in &prep.notes {
        obs.note(n);
    }
    let samples = read_samples(opts, &prep.args, &prep.fixed)?;
    let mut policy = Policy::new(prep.precision);
    if let Some(r) = opts.rtol {
        policy = policy.with_rtol(r);
    }
    if let Some(t) = opts.atol {
        policy = policy.with_atol(t);
    }
    if let Some(f) = opts.max_outside {
        policy = policy.with_max_fraction_outside(f);
    }
    let reference = ReferenceKind::parse(&opts.reference, prep.onnx)?;
    if let Some(dir) = &opts.save_modules {
        reference::save_modules(dir, &prep)?;
    }
    let n_out = prep.outputs.len();
    let cand_mod = module(&opts.model, &prep.candidate, "candidate");
    let rt = cand_mod.open_runtime(&opts.runtime, obs)?;
    let platform = rt.client.platform_name().to_owned();
    let mut keep = KeepAlive::default();
    let cand = run_module(&rt, &cand_mod, &prep, &samples, &mut keep)
        .context(|| format!("running {} (candidate)", opts.model.display()))?;
    let f32_run = if matches!(reference, ReferenceKind::F32) || opts.bisect {
        let m = module(&opts.model, &prep.reference, "reference");
        Some(
            run_module(&rt, &m, &prep, &samples, &mut keep)
                .context(|| format!("running {} (f32 reference)", opts.model.display()))?,
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
                return Err(invalid(format!(
                    "--reference {}: expected outputs are for one sample, --random gives {}",
                    path.display(),
                    samples.len()
                )));
            }
            reference::read_expected(path, &prep.outputs)?
        }
        ReferenceKind::Onnxruntime => reference::onnxruntime(opts, &prep, &samples)?,
    };
    let outputs = compare_outputs(&prep.outputs, &cand, &expected, &policy);
    let bisect = match (&f32_run, opts.bisect) {
        (Some(r), true) => {
            Some(tpuport_numerics::bisect(&prep.probes, &r[n_out..], &cand[n_out..], &policy))
        }
        _ => None,
    };
    let passed = outputs.iter().all(|o| o.verdict.passed());
    Ok(Report {
        schema: SCHEMA,
        model: opts.model.clone(),
        platform,
        reference: ReferenceReport {
            kind: reference.word(),
            path: match &reference {
                ReferenceKind::Files(p) => Some(p.clone()),
                _ => None,
            },
        },
        emulate: opts.emulate,
        emulation: prep.emulation,
        policy,
        samples: samples.len(),
        partitions: prep.partitions,
        outputs,
        bisect,
        passed,
    })
}

/// One verdict per model output, then one error per extra reference output.
fn compare_outputs(
    outs: &[Slot],
    cand: &[HostTensor],
    expected: &[Option<HostTensor>],
    policy: &Policy,
) -> Vec<OutputReport> {
    let n_out = outs.len();
    let mut reports = Vec::with_capacity(n_out);
    for (i, (sig, c)) in outs.iter().zip(cand).enumerate() {
        let (verdict, metrics) = match expected.get(i).and_then(Option::as_ref) {
            None => (
                Verdict::Error {
                    reason: format!("output {i} (`{}`) is missing from the reference", sig.name),
                },
                None,
            ),
            Some(r) => match tpuport_numerics::compare(r, c, &policy.tolerance) {
                Ok(m) => (policy.verdict(&m), Some(m)),
                Err(e) => (Verdict::Error { reason: e.to_string() }, None),
            },
        };
        reports.push(OutputReport {
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
            reports.push(OutputReport {
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
    reports
}

/// A rewritten module to run (no signature: arguments come from [`Prepared`]).
fn module(path: &Path, text: &str, what: &str) -> Module {
    Module::new(
        &path.with_extension(format!("{what}.mlir")),
        Program::mlir(text.as_bytes().to_vec()),
    )
}

/// Runs a module once per sample and stacks each result over the samples (`[N, ...]` when
/// N > 1). Executables and buffers stay in `keep` (see [`KeepAlive`]).
fn run_module(
    rt: &Runtime,
    m: &Module,
    prep: &Prepared,
    samples: &[Vec<HostTensor>],
    keep: &mut KeepAlive,
) -> Result<Vec<HostTensor>> {
    let exe = tpuport_exec::module::compile(rt, m)?.executable;
    let mut per_result: Vec<Vec<HostTensor>> = Vec::new();
    let mut held = Vec::new();
    for sample in samples {
        let args = prep.arguments(sample.clone())?;
        let bufs = tpuport_pjrt::upload(&rt.client, &exe, &args, &[])?;
        let outs = exe.execute_lists(&bufs)?;
        let host = tpuport_pjrt::download(outs, &[])?;
        held.extend(bufs.into_iter().flatten());
        if per_result.is_empty() {
            per_result = host.into_iter().map(|t| vec![t]).collect();
        } else {
            for (acc, t) in per_result.iter_mut().zip(host) {
                acc.push(t);
            }
        }
    }
    keep.buffers(held);
    keep.executable(exe);
    per_result.into_iter().map(stack).collect()
}

fn stack(mut ts: Vec<HostTensor>) -> Result<HostTensor> {
    if ts.len() == 1 {
        return Ok(ts.remove(0));
    }
    let first = ts.first().ok_or_else(|| invalid("no samples"))?;
    let (dtype, shape) = (first.dtype, first.shape.clone());
    let mut data = Vec::new();
    for t in &ts {
        data.extend_from_slice(t.data());
    }
    let mut s = vec![ts.len() as u64];
    s.extend(shape);
    Ok(HostTensor::new(dtype, s, data)?)
}

/// The input samples: seeded draws, or one sample bound from a tensor set; inputs given a
/// value at lowering time (`fixed`) always take that value.
fn read_samples(
    opts: &Options,
    args: &[Slot],
    fixed: &[(String, HostTensor)],
) -> Result<Vec<Vec<HostTensor>>> {
    let fixed_value = |s: &Slot| fixed.iter().find(|(n, _)| *n == s.name).map(|(_, t)| t.clone());
    let path = match &opts.inputs {
        Inputs::Random { samples, seed } => {
            if *samples == 0 {
                return Err(invalid("--random 0: need at least one sample"));
            }
            let mut rng = SplitMix(*seed);
            return (0..*samples)
                .map(|_| {
                    args.iter()
                        .map(|s| match fixed_value(s) {
                            Some(t) => Ok(t),
                            None => tpuport_formats::tensors::random_tensor(s, &mut rng)
                                .map_err(|p| invalid(format!("--random: {p}"))),
                        })
                        .collect()
                })
                .collect();
        }
        Inputs::Files(p) => p,
        Inputs::None if args.iter().all(|s| fixed_value(s).is_some()) => {
            return Ok(vec![args.iter().filter_map(fixed_value).collect()]);
        }
        Inputs::None => {
            return Err(invalid(format!(
                "{} takes {} input(s); give --inputs DIR|FILE or --random N",
                opts.model.display(),
                args.len()
            )));
        }
    };
    let set = tpuport_formats::tensors::read_set(path, Some("output_"), &Default::default())?;
    let mut entries: Vec<Entry> = set.into_iter().map(|(n, t)| Entry::hint(n, t)).collect();
    // The module is specialised to the --input-value: a file's own value for that input
    // would disagree with it (and with the reference run), so the bound value replaces it.
    for (name, t) in fixed {
        entries.retain(|e| e.source != *name);
        entries.push(Entry {
            key: tpuport_formats::tensors::Key::Named(name.clone()),
            source: format!("--input-value {name}"),
            tensor: t.clone(),
        });
    }
    let bound = tpuport_formats::tensors::bind(entries, args)
        .map_err(|p| tpuport_formats::FormatError::bind(path.display().to_string(), p))?;
    Ok(vec![bound])
}
