//! `tpuport lower MODEL.onnx --batch 1,8,32 [--input-shape name=dims] -o DIR`: lower an ONNX
//! model to one static StableHLO module per batch bucket, plus `manifest.json` binding every
//! module argument to a graph input or a weight, and `weights.safetensors` holding each
//! weight once.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use tpuport_formats::ImportOptions;
use tpuport_formats::lowered::{Bucket, MANIFEST, Manifest, SCHEMA};
use tpuport_formats::safetensors::{TensorOut, write_safetensors};
use tpuport_lower::onnx::{ArgSource, ComputeType, LowerOptions, lower};
use tpuport_model::{DType, ModelFormat, Shape};

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Compute dtype of the lowered modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LowerDtype {
    /// Keep the model's types.
    F32,
    /// Weights and compute in bf16, accumulations and reductions in f32.
    Bf16,
}

/// Arguments of `tpuport lower`.
#[derive(Debug, Args)]
pub(crate) struct LowerArgs {
    /// ONNX model.
    pub(crate) model: PathBuf,
    /// Batch buckets, comma separated (`1,8,32,128`): one module per size for the leading
    /// dimension of every input whose first dimension is symbolic.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub(crate) batch: Vec<u64>,
    /// Full shape of a named input, e.g. `input_ids=1x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = super::inspect::parse_input_shape)]
    pub(crate) input_shape: Vec<(String, Shape)>,
    /// Size of a named symbolic dimension, e.g. `sequence=128` (repeatable).
    #[arg(long = "dim", value_name = "NAME=N", value_parser = super::inspect::parse_dim)]
    pub(crate) dims: Vec<(String, u64)>,
    /// Embed the weights in the modules as constants (small models) instead of arguments.
    #[arg(long)]
    pub(crate) weights_as_constants: bool,
    /// Compute dtype.
    #[arg(long, value_enum, default_value_t = LowerDtype::F32)]
    pub(crate) dtype: LowerDtype,
    /// Do not write `weights.safetensors`.
    #[arg(long)]
    pub(crate) no_weights_file: bool,
    /// Output directory (created; an existing one is replaced only if it holds a previous
    /// `tpuport lower` output).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(a: &LowerArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let t0 = Instant::now();
    check_out_dir(&a.out)?;
    if a.batch.contains(&0) {
        bail!("--batch: bucket sizes must be at least 1");
    }
    let mut seen = HashSet::new();
    if let Some(d) = a.batch.iter().find(|b| !seen.insert(**b)) {
        bail!("--batch: bucket {d} is listed twice");
    }
    let opts = LowerOptions {
        weights_as_constants: a.weights_as_constants,
        compute: if a.dtype == LowerDtype::Bf16 { ComputeType::Bf16 } else { ComputeType::Native },
        expose: Vec::new(),
    };
    let buckets: Vec<Option<u64>> =
        if a.batch.is_empty() { vec![None] } else { a.batch.iter().copied().map(Some).collect() };
    let parent = a.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let stem = a.out.file_name().map_or_else(|| "out".into(), |s| s.to_string_lossy().into_owned());
    let tmp = parent.join(format!(".{stem}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let result = write_all(a, &opts, &buckets, &tmp, t0);
    let manifest = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if a.out.exists() {
        std::fs::remove_dir_all(&a.out)
            .with_context(|| format!("replacing {}", a.out.display()))?;
    }
    std::fs::rename(&tmp, &a.out)
        .with_context(|| format!("moving the output into {}", a.out.display()))?;
    super::emit_report(p, g.format, &manifest, || {
        tpuport_report::lower::render(&manifest, &a.out)
    })?;
    Ok(Status::Success)
}

/// Refuses a non-empty directory that is not a previous `tpuport lower` output.
fn check_out_dir(out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("{}: exists and is not a directory", out.display());
    }
    let empty = std::fs::read_dir(out)
        .with_context(|| format!("reading {}", out.display()))?
        .next()
        .is_none();
    if empty {
        return Ok(());
    }
    let ours = Manifest::is_in(out);
    if !ours {
        bail!(
            "{}: directory is not empty and holds no tpuport lower manifest; refusing to overwrite it",
            out.display()
        );
    }
    Ok(())
}

fn write_all(
    a: &LowerArgs,
    opts: &LowerOptions,
    buckets: &[Option<u64>],
    dir: &Path,
    t0: Instant,
) -> anyhow::Result<Manifest> {
    let mut out = Vec::new();
    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    let mut weights: Vec<(String, DType)> = Vec::new();
    let mut seen = HashSet::new();
    let mut last_model = None;
    for &b in buckets {
        let iopts = ImportOptions {
            dims: a.dims.iter().cloned().collect(),
            input_shapes: a.input_shape.iter().cloned().collect(),
            batch: b,
            ..ImportOptions::default()
        };
        let model = tpuport_formats::open(&a.model, &iopts)?;
        if model.format != ModelFormat::Onnx {
            bail!(
                "{}: is {}, not ONNX; `tpuport lower` takes ONNX models",
                a.model.display(),
                model.format.name()
            );
        }
        if ops.is_empty() {
            for n in model.graph.walk_nodes() {
                *ops.entry(n.qualified_op()).or_default() += 1;
            }
        }
        let t = Instant::now();
        let what = b.map_or_else(String::new, |b| format!(" (batch {b})"));
        let low =
            lower(&model, opts).with_context(|| format!("lowering {}{what}", a.model.display()))?;
        let lower_ms = t.elapsed().as_secs_f64() * 1e3;
        let name = b.map_or_else(|| "model.mlir".to_owned(), |b| format!("model_b{b}.mlir"));
        std::fs::write(dir.join(&name), low.mlir.as_bytes())
            .with_context(|| format!("writing {name}"))?;
        for arg in &low.args {
            if let ArgSource::Weight(w) = &arg.source
                && seen.insert(w.clone())
            {
                weights.push((w.clone(), arg.dtype));
            }
        }
        out.push(Bucket { batch: b, module: name, args: low.args, results: low.results, lower_ms });
        last_model = Some(model);
    }
    let mut weights_file = None;
    if !a.no_weights_file
        && !weights.is_empty()
        && let Some(model) = &last_model
    {
        let mut ts = Vec::with_capacity(weights.len());
        for (name, dt) in &weights {
            let w = model
                .weights
                .by_name(name)
                .with_context(|| format!("weight `{name}` not in the model"))?;
            let bytes = w.bytes().with_context(|| format!("reading weight `{name}`"))?;
            let data = if *dt == w.dtype {
                bytes
            } else if w.dtype == DType::F32 && *dt == DType::BF16 {
                Cow::Owned(
                    bytes
                        .chunks_exact(4)
                        .flat_map(|c| {
                            let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                            half::bf16::from_f32(x).to_le_bytes()
                        })
                        .collect(),
                )
            } else {
                bail!("weight `{name}`: no conversion from {} to {dt}", w.dtype);
            };
            ts.push(TensorOut { name: name.clone(), dtype: *dt, shape: w.shape.clone(), data });
        }
        write_safetensors(
            &dir.join("weights.safetensors"),
            &ts,
            &[("format".to_owned(), "tpuport".to_owned())],
        )?;
        weights_file = Some("weights.safetensors".to_owned());
    }
    let m = Manifest {
        schema: SCHEMA.to_owned(),
        source: a.model.display().to_string(),
        dtype: if a.dtype == LowerDtype::Bf16 { "bf16" } else { "f32" }.to_owned(),
        weights_as_constants: a.weights_as_constants,
        weights_file,
        ops,
        buckets: out,
        total_ms: t0.elapsed().as_secs_f64() * 1e3,
    };
    std::fs::write(dir.join(MANIFEST), m.to_json()?).context("writing manifest.json")?;
    Ok(m)
}
