//! `tpuport compile MODEL --target v5e-8`: the real TPU compiler (libtpu) on a machine without a
//! TPU. The slice name becomes a libtpu topology (`v5e:2x4`), the model a StableHLO program
//! (ONNX through tpuport's lowering), and `PJRT_Compile` against the topology answers with the
//! compiler's own figures: memory per device and whether it fits, cost, the layout and sharding
//! of every parameter and output, or the compiler's refusal. `--save` keeps the serialized TPU
//! executable with a manifest. JSON schema `tpuport.compile/1`: `docs/compile.md`.
//!
//! Exit status: 0 compiled, 1 the compiler refused for lack of HBM (a finding: the report says
//! how much was needed), 2 anything else (no libtpu, an op the TPU compiler rejects, bad input).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tpuport_formats::ImportOptions;
use tpuport_hw::{Catalog, CompileTarget, XlaLayout};
use tpuport_lower::onnx::{ArgSource, ComputeType, LowerOptions, lower};
use tpuport_model::{DType, ModelFormat, Shape};
use tpuport_pjrt::{CompileOptions, Executable, NamedValue, PluginKind, Program, Topology, Value};
use tpuport_report::compile::{
    CompileReport, CompilerInfo, Cost, Operand, Outcome, PerDevice, SCHEMA, Saved, render_text,
};

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::commands::lower::LowerDtype;
use crate::printer::Printer;
use tpuport_validate::{Module, Param};

/// Manifest schema of `--save`.
const MANIFEST_SCHEMA: &str = "tpuport.tpu-executable/1";

/// Arguments of `tpuport compile`.
#[derive(Debug, Args)]
pub(crate) struct CompileArgs {
    /// Model: StableHLO (.mlir text, .mlirbc bytecode) or ONNX (lowered by tpuport first).
    pub(crate) model: PathBuf,
    /// TPU slice to compile for: `v5e-8`, `v6e-4`, `v5p-8`, `v4-8`, `v6e-2x4`, `tpu7x-8`.
    #[arg(long, value_name = "SLICE")]
    pub(crate) target: String,
    /// ONNX: size of the leading dimension of every input whose first dimension is symbolic.
    #[arg(long)]
    pub(crate) batch: Option<u64>,
    /// ONNX: size of a named symbolic dimension, e.g. `sequence=128` (repeatable).
    #[arg(long = "dim", value_name = "NAME=N", value_parser = super::inspect::parse_dim)]
    pub(crate) dims: Vec<(String, u64)>,
    /// ONNX: full shape of a named input, e.g. `input_ids=1x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = super::inspect::parse_input_shape)]
    pub(crate) input_shape: Vec<(String, Shape)>,
    /// ONNX: compute dtype of the lowered program.
    #[arg(long, value_enum, default_value_t = LowerDtype::F32)]
    pub(crate) dtype: LowerDtype,
    /// Devices the program is partitioned over (default: the module's `mhlo.num_partitions`;
    /// needed for sharded bytecode modules, whose attributes are not read).
    #[arg(long, value_name = "N")]
    pub(crate) partitions: Option<u32>,
    /// libtpu library (default: $TPUPORT_PJRT_PLUGIN or $TPU_LIBRARY_PATH when they name
    /// libtpu, else `libtpu/libtpu.so` in the project's or active virtual environment).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Write the serialized TPU executable to FILE and its manifest to FILE.json.
    #[arg(long, value_name = "FILE")]
    pub(crate) save: Option<PathBuf>,
    /// A TOML file that overrides or extends the built-in chip catalog.
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
}

/// Manifest written next to a saved executable.
#[derive(Debug, Serialize)]
struct Manifest<'a> {
    schema: &'static str,
    executable: String,
    executable_sha256: String,
    executable_bytes: u64,
    model: &'a str,
    model_sha256: &'a str,
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

/// Element type and dimensions of a parameter or output, when known.
type Typed = Option<(DType, Vec<u64>)>;

/// The program to compile and what is known of its signature.
struct Prepared {
    program: Program,
    source: String,
    partitions: u32,
    params: Vec<(String, Typed)>,
    results: Vec<(String, Typed)>,
}

pub(crate) fn run(a: &CompileArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.batch == Some(0) {
        bail!("--batch must be at least 1");
    }
    if a.partitions == Some(0) {
        bail!("--partitions must be at least 1");
    }
    let catalog = match &a.catalog {
        Some(f) => Catalog::from_file(f)?,
        None => Catalog::builtin(),
    };
    let target = catalog.compile_target(&a.target)?;
    let model_sha = hash_file(&a.model)?;
    let mut prep = prepare(a, p)?;
    if let Some(n) = a.partitions {
        prep.partitions = n;
    } else if prep.program.is_bytecode() && prep.params.is_empty() {
        p.warn(&format!(
            "{}: the partition count of a bytecode module is not read; compiling it for one \
             device (pass --partitions N for a sharded module)",
            a.model.display()
        ));
    }
    if prep.partitions > target.devices {
        bail!(
            "{} is partitioned over {} devices but {} has {}",
            a.model.display(),
            prep.partitions,
            a.target,
            target.devices
        );
    }
    let plugin_path = find_libtpu(a.plugin.as_deref())?;
    let t_setup = Instant::now();
    p.info(&format!("libtpu: {}", plugin_path.display()));
    let plugin = tpuport_pjrt::load(&plugin_path)?;
    let options = topology_options(&target);
    let topo = Topology::create(plugin, &target.topology_name, &options)
        .with_context(|| format!("describing {} ({})", a.target, target.topology_name))?;
    let devices = topo.devices()?;
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let device_kind = devices.first().map(|d| d.kind.clone()).unwrap_or_default();
    let (major, minor) = plugin.api_version();
    let compiler = CompilerInfo {
        path: plugin_path.display().to_string(),
        version: libtpu_version(&plugin_path),
        build: topo
            .platform_version()
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
        pjrt_api: format!("{major}.{minor}"),
    };
    let copts = if prep.partitions > 1 {
        CompileOptions::spmd(prep.partitions, true).with_identity_assignment()
    } else {
        CompileOptions::default()
    };
    let t = Instant::now();
    let compiled = topo.compile(&prep.program, &copts);
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let hbm = target.hbm_per_device.map(to_u64);
    let hbm_budget = target.hbm_budget_per_device.map(to_u64);
    let mut report = CompileReport {
        schema: SCHEMA,
        model: a.model.display().to_string(),
        model_sha256: model_sha,
        source: prep.source.clone(),
        target: a.target.clone(),
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
                if a.save.is_some() {
                    p.warn("nothing saved: the compiler produced no executable");
                }
                report.outcome = Outcome::OutOfMemory;
                report.per_device.total = Some(need);
                report.per_device.compiler_hbm_limit = Some(limit);
                report.compiler_message = Some(message);
                report.parameters = operands(&prep.params, None, None, None);
                report.outputs = operands(&prep.results, None, None, None);
                super::emit_report(p, g.format, &report, || render_text(&report))?;
                return Ok(Status::Findings);
            }
            p.info(&format!("compiler output: {e}"));
            bail!(
                "libtpu could not compile {} for {} ({}): {message}",
                a.model.display(),
                a.target,
                target.topology_name
            );
        }
    };
    fill_from_executable(&mut report, &exe, &prep, p)?;
    if let Some(file) = &a.save {
        report.saved = Some(save(file, &exe, &report, &target, &options, &copts)?);
    }
    super::emit_report(p, g.format, &report, || render_text(&report))?;
    Ok(Status::Success)
}

/// Reads the model as a program: StableHLO as is, ONNX through the lowering.
fn prepare(a: &CompileArgs, p: &Printer) -> anyhow::Result<Prepared> {
    let iopts = ImportOptions {
        dims: a.dims.iter().cloned().collect(),
        input_shapes: a.input_shape.iter().cloned().collect(),
        batch: a.batch,
        ..ImportOptions::default()
    };
    let model = tpuport_formats::open(&a.model, &iopts)?;
    match model.format {
        ModelFormat::Onnx => {
            let opts = LowerOptions {
                weights_as_constants: false,
                compute: if a.dtype == LowerDtype::Bf16 {
                    ComputeType::Bf16
                } else {
                    ComputeType::Native
                },
                expose: Vec::new(),
            };
            let low = lower(&model, &opts)
                .with_context(|| format!("lowering {} to StableHLO", a.model.display()))?;
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
            Ok(Prepared {
                program: Program::mlir(low.mlir.into_bytes()),
                source: "onnx (lowered by tpuport)".into(),
                partitions: 1,
                params,
                results,
            })
        }
        ModelFormat::StablehloText | ModelFormat::StablehloBytecode => {
            if a.batch.is_some() || !a.dims.is_empty() || !a.input_shape.is_empty() {
                p.warn("--batch, --dim and --input-shape apply to ONNX models; a StableHLO module's shapes are fixed");
            }
            let m = Module::load(&a.model, p)?;
            let sig = |ps: &Option<Vec<Param>>| -> Vec<(String, Typed)> {
                ps.iter()
                    .flatten()
                    .map(|q| {
                        let dims: Option<Vec<u64>> = q.dims.iter().copied().collect();
                        (q.name.clone(), dims.map(|d| (q.dtype, d)))
                    })
                    .collect()
            };
            let (params, mut results) = (sig(&m.args), sig(&m.results));
            for (i, (name, _)) in results.iter_mut().enumerate() {
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    *name = format!("result{i}");
                }
            }
            Ok(Prepared {
                program: m.program,
                source: "stablehlo".into(),
                partitions: m.partitions.max(1),
                params,
                results,
            })
        }
        other => bail!(
            "{}: is {}; `tpuport compile` takes StableHLO (.mlir, .mlirbc) or ONNX",
            a.model.display(),
            other.name()
        ),
    }
}

/// libtpu: the explicit path, else the first libtpu discovery finds.
fn find_libtpu(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--plugin {}: no such file", p.display());
        }
        return Ok(p.to_owned());
    }
    tpuport_pjrt::discover(None)
        .into_iter()
        .find(|f| f.kind == PluginKind::Tpu && f.path.is_file())
        .map(|f| f.path)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "libtpu not found: `pip install libtpu` into the project's virtual environment \
                 (or run `make libtpu`), or pass --plugin PATH/libtpu.so"
            )
        })
}

/// libtpu's package version: the `libtpu-X.dist-info` next to the `libtpu` package in a
/// site-packages, else a version-named folder above it (`.cache/libtpu/0.0.52/libtpu/`).
fn libtpu_version(lib: &Path) -> Option<String> {
    let lib = lib.canonicalize().unwrap_or_else(|_| lib.to_owned());
    let above = lib.parent()?.parent()?;
    let from_dist_info = std::fs::read_dir(above).ok().and_then(|rd| {
        rd.filter_map(Result::ok).find_map(|e| {
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
fn compiler_message(e: &str) -> String {
    let body = e.split("=== Source Location Trace").next().unwrap_or(e);
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join(" ")
}

/// `(needed, available)` bytes from libtpu's `CompileTimeHbmOom` message ("the total memory
/// required for HLO temporaries (18.83G) exceeds available HBM (15.75G)").
fn out_of_memory(msg: &str) -> Option<(u64, u64)> {
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
    p: &Printer,
) -> anyhow::Result<()> {
    let m = exe.compiled_memory_stats().context("reading the compiled memory statistics")?;
    p.info(&format!("compiled memory statistics: {m:?}"));
    let d = &mut r.per_device;
    d.arguments = Some(nonneg(m.argument));
    d.outputs = Some(nonneg(m.output));
    d.aliased = Some(nonneg(m.alias));
    d.temporaries = Some(nonneg(m.temp));
    d.generated_code = Some(nonneg(m.generated_code));
    d.peak = Some(nonneg(m.peak));
    // libtpu 0.0.52 reports temporaries as 0 and gives the live-buffer peak (parameters,
    // outputs and temporaries, without code) separately: the device needs the larger of that
    // peak and the buffer sum, plus the code.
    let buffers =
        (nonneg(m.argument) + nonneg(m.output) + nonneg(m.temp)).saturating_sub(nonneg(m.alias));
    d.total = Some(buffers.max(nonneg(m.peak)) + nonneg(m.generated_code));
    d.fits = true;
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
        Err(e) => p.info(&format!("no cost analysis: {e}")),
    }
    let warn_once = |what: &str, e: &tpuport_pjrt::PjrtError| p.info(&format!("no {what}: {e}"));
    let pl = exe.parameter_layouts().map_err(|e| warn_once("parameter layouts", &e)).ok();
    let ol = exe.output_layouts().map_err(|e| warn_once("output layouts", &e)).ok();
    let multi = r.program_devices > 1;
    let ps = multi
        .then(|| exe.parameter_shardings().map_err(|e| warn_once("shardings", &e)).ok())
        .flatten();
    let os = multi
        .then(|| exe.output_shardings().map_err(|e| warn_once("shardings", &e)).ok())
        .flatten();
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

/// Writes the executable and then its manifest, each through a temporary file and a rename,
/// so a manifest on disk always describes a complete executable.
fn save(
    file: &Path,
    exe: &Executable,
    r: &CompileReport,
    target: &CompileTarget,
    options: &[NamedValue],
    copts: &CompileOptions,
) -> anyhow::Result<Saved> {
    let bytes = exe.serialize().context("serializing the TPU executable")?;
    let sha = hex(&Sha256::digest(&bytes));
    let manifest_path = PathBuf::from(format!("{}.json", file.display()));
    write_atomic(file, &bytes)?;
    let m = Manifest {
        schema: MANIFEST_SCHEMA,
        executable: file.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        executable_sha256: sha.clone(),
        executable_bytes: bytes.len() as u64,
        model: &r.model,
        model_sha256: &r.model_sha256,
        source: &r.source,
        target: &r.target,
        topology: &target.topology_name,
        topology_options: options.to_vec(),
        device_kind: &r.device_kind,
        program_devices: r.program_devices,
        compile_options_hex: hex(&copts.encode()),
        compiler: &r.compiler,
        per_device: &r.per_device,
        parameters: &r.parameters,
        outputs: &r.outputs,
    };
    let json = serde_json::to_string_pretty(&m)? + "\n";
    write_atomic(&manifest_path, json.as_bytes())?;
    Ok(Saved {
        executable: file.display().to_string(),
        manifest: manifest_path.display().to_string(),
        bytes: bytes.len() as u64,
        sha256: sha,
    })
}

fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("moving {} into place: {e}", path.display())
    })
}

/// SHA-256 of a file, read in a stream.
fn hash_file(path: &Path) -> anyhow::Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex(&h.finalize()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
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

    fn sample() -> CompileReport {
        let op = |index: usize, name: &str, ty: &str, layout: &str, dev: u64, log: u64| Operand {
            index,
            name: name.into(),
            ty: Some(ty.into()),
            shard: None,
            layout: Some(layout.into()),
            device_bytes: Some(dev),
            logical_bytes: Some(log),
            sharding: None,
        };
        CompileReport {
            schema: SCHEMA,
            model: "conv.mlir".into(),
            model_sha256: "00".into(),
            source: "stablehlo".into(),
            target: "v5e-8".into(),
            topology: "v5e:2x4".into(),
            chip: "TPU v5e".into(),
            device_kind: "TPU v5 lite".into(),
            slice_devices: 8,
            program_devices: 1,
            compiler: CompilerInfo {
                path: "libtpu.so".into(),
                version: Some("0.0.52".into()),
                build: "TFRT TPU v5 lite".into(),
                pjrt_api: "0.117".into(),
            },
            setup_ms: 150.0,
            compile_ms: 812.0,
            outcome: Outcome::Compiled,
            per_device: PerDevice {
                arguments: Some(9_453_568),
                outputs: Some(9_454_080),
                aliased: Some(0),
                temporaries: Some(0),
                generated_code: Some(1_154_048),
                peak: Some(18_907_648),
                total: Some(20_061_696),
                compiler_hbm_limit: None,
                hbm: Some(17_179_869_184),
                hbm_budget: Some(16_664_473_108),
                fits: true,
            },
            compiler_message: None,
            cost: Some(Cost {
                flops: Some(2_362_296.0),
                bytes_accessed: Some(18_907_648.0),
                transcendentals: None,
                optimal_seconds: Some(2.4e-5),
            }),
            parameters: vec![
                op(0, "a", "f32[512,512,3,3]", "{1,0,3,2:T(8,128)}", 9_437_184, 9_437_184),
                op(1, "b", "f32[1000,3]", "{0,1:T(4,128)}", 16_384, 12_000),
            ],
            outputs: vec![op(0, "result0", "f32[1000,3]", "{0,1:T(8,128)}", 32_768, 12_000)],
            saved: None,
        }
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render_text(&sample()));
    }

    #[test]
    fn out_of_memory_text_report_snapshot() {
        let mut r = sample();
        r.outcome = Outcome::OutOfMemory;
        r.per_device = PerDevice {
            total: Some(20_218_962_739),
            compiler_hbm_limit: Some(16_911_433_728),
            hbm: Some(17_179_869_184),
            ..PerDevice::default()
        };
        r.cost = None;
        r.compiler_message =
            Some("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM".into());
        insta::assert_snapshot!(render_text(&r));
    }

    #[test]
    fn compiler_message_drops_the_trace() {
        let e = "INVALID_ARGUMENT: bad op\n  detail\n=== Source Location Trace: ===\nfoo.cc:1";
        assert_eq!(compiler_message(e), "INVALID_ARGUMENT: bad op detail");
    }
}
