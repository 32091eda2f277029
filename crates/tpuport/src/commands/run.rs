//! `tpuport run MODEL.mlir --input name=x.npy … --out DIR`: execute a StableHLO module on a
//! PJRT device and write its outputs as `.npy`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tpuport_model::HostTensor;
use tpuport_pjrt::{Buffer, CacheStatus, Client, LoadedExecutable};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::commands::pjrt_util::{self, Module, RuntimeArgs};
use crate::printer::Printer;

/// Arguments of `tpuport run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// StableHLO module: MLIR text (`.mlir`) or bytecode (`.mlirbc`, a `jax.export` artifact).
    pub(crate) model: PathBuf,
    /// An input as `NAME=FILE.npy` (NAME: the argument's name or `argN`) or `FILE.npy`
    /// (positional, in argument order). Repeat per argument.
    #[arg(long = "input", short = 'i', value_name = "[NAME=]FILE")]
    pub(crate) inputs: Vec<String>,
    /// Directory for the outputs (`out0.npy`, `out1.npy`, …).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

#[derive(Debug, Serialize)]
struct OutputReport {
    path: PathBuf,
    dtype: String,
    shape: Vec<u64>,
}

#[derive(Debug, Serialize)]
struct RunReport {
    schema: &'static str,
    model: PathBuf,
    platform: String,
    devices: usize,
    cache: CacheStatus,
    compile_ms: f64,
    execute_ms: f64,
    outputs: Vec<OutputReport>,
}

pub(crate) fn run(a: &RunArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let module = Module::load(&a.model, p)?;
    let inputs = read_inputs(&a.inputs, &module)?;
    module.check_inputs(&inputs)?;
    let rt = a.runtime.open(&module, p)?;
    let compiled = rt
        .cache
        .get_or_compile(&rt.client, &module.program, &module.compile_options())
        .with_context(|| format!("compiling {}", a.model.display()))?;
    if let CacheStatus::WriteFailed(why) = &compiled.status {
        p.warn(&format!("executable cache not written: {why}"));
    }
    let exe = &compiled.executable;
    let bufs = to_device(&rt.client, exe, &module, &inputs)?;
    let t = std::time::Instant::now();
    let outs = execute(exe, &bufs)?;
    let execute_ms = t.elapsed().as_secs_f64() * 1e3;
    let host = gather(&module, outs)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut outputs = Vec::new();
    for (i, t) in host.iter().enumerate() {
        let path = a.out.join(format!("out{i}.npy"));
        tpuport_formats::npy::write_npy(&path, t)?;
        outputs.push(OutputReport { path, dtype: t.dtype.to_string(), shape: t.shape.clone() });
    }
    let report = RunReport {
        schema: "tpuport.run/1",
        model: a.model.clone(),
        platform: rt.client.platform_name().to_owned(),
        devices: exe.num_devices(),
        cache: compiled.status.clone(),
        compile_ms: compiled.elapsed.as_secs_f64() * 1e3,
        execute_ms,
        outputs,
    };
    match g.format {
        Format::Json => p.data(&format!("{}\n", serde_json::to_string_pretty(&report)?)),
        _ => {
            let mut s = format!(
                "ran {} on {} ({} device(s)); compile {:.1} ms ({}), execute {:.2} ms\n",
                report.model.display(),
                report.platform,
                report.devices,
                report.compile_ms,
                cache_word(&report.cache),
                report.execute_ms
            );
            for o in &report.outputs {
                s.push_str(&format!("  {} {}{:?}\n", o.path.display(), o.dtype, o.shape));
            }
            p.data(&s);
        }
    }
    Ok(Status::Success)
}

pub(crate) fn cache_word(s: &CacheStatus) -> &'static str {
    match s {
        CacheStatus::Hit => "cached",
        CacheStatus::Miss => "compiled, cached",
        CacheStatus::Disabled => "compiled, cache off",
        CacheStatus::WriteFailed(_) => "compiled, cache write failed",
    }
}

/// Reads `--input` values into argument order: named ones by name (`x`, `arg1`, `1`),
/// positional ones fill the remaining slots in order.
pub(crate) fn read_inputs(
    specs: &[String],
    module: &Module,
) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let n = module.args.as_ref().map_or(specs.len(), Vec::len);
    let mut slots: Vec<Option<(String, HostTensor)>> =
        (0..n.max(specs.len())).map(|_| None).collect();
    let mut positional = Vec::new();
    for spec in specs {
        match spec.split_once('=') {
            Some((name, file)) if !Path::new(spec).exists() => {
                let idx = arg_index(name, module).with_context(|| {
                    let names: Vec<String> = module
                        .args
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, a)| format!("{} (arg{i})", a.name))
                        .collect();
                    format!(
                        "--input {spec}: {} has no argument named {name:?}; arguments: {}",
                        module.path.display(),
                        names.join(", ")
                    )
                })?;
                if slots.get(idx).is_some_and(Option::is_some) {
                    bail!("--input {spec}: argument {name} given twice");
                }
                slots[idx] = Some((file.to_owned(), read(file)?));
            }
            _ => positional.push(spec.clone()),
        }
    }
    let mut it = positional.into_iter();
    for slot in &mut slots {
        if slot.is_none()
            && let Some(file) = it.next()
        {
            *slot = Some((file.clone(), read(&file)?));
        }
    }
    if let Some(extra) = it.next() {
        bail!("--input {extra}: more inputs than {} takes", module.path.display());
    }
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| {
            module
                .args
                .as_ref()
                .and_then(|a| a.get(i))
                .map_or_else(|| format!("arg{i}"), |a| format!("{} (arg{i})", a.name))
        })
        .collect();
    if !missing.is_empty() {
        bail!("{}: no --input for {}", module.path.display(), missing.join(", "));
    }
    Ok(slots.into_iter().flatten().collect())
}

fn arg_index(name: &str, module: &Module) -> Option<usize> {
    let args = module.args.as_ref();
    if let Some(i) = args.and_then(|a| a.iter().position(|p| p.name == name)) {
        return Some(i);
    }
    let i: usize = name.strip_prefix("arg").unwrap_or(name).parse().ok()?;
    args.is_none_or(|a| i < a.len()).then_some(i)
}

fn read(file: &str) -> anyhow::Result<HostTensor> {
    Ok(tpuport_formats::npy::read_npy(Path::new(file))?)
}

/// Per-device argument buffers: one copy on one device, or shards split per the module's
/// argument shardings on every device of the executable.
pub(crate) fn to_device(
    client: &Client,
    exe: &LoadedExecutable,
    module: &Module,
    inputs: &[(String, HostTensor)],
) -> anyhow::Result<Vec<Vec<Buffer>>> {
    let devices = exe.devices();
    let n = devices.len() as u64;
    let mut per_dev: Vec<Vec<Buffer>> = devices.iter().map(|_| Vec::new()).collect();
    for (i, (src, t)) in inputs.iter().enumerate() {
        let what = format!("input {src} (argument {i})");
        let shards = if n == 1 {
            vec![t.clone()]
        } else {
            let layout = module
                .args
                .as_ref()
                .and_then(|a| a.get(i))
                .and_then(|a| a.layout.clone())
                .with_context(|| format!("{what}: the module has no sharding for this argument"))?;
            pjrt_util::split(t, &layout, n, &what)?
        };
        for ((dev, shard), list) in devices.iter().zip(&shards).zip(&mut per_dev) {
            list.push(
                client
                    .buffer_from_host(shard, dev)
                    .with_context(|| format!("{what}: copy to device"))?,
            );
        }
    }
    Ok(per_dev)
}

/// Executes with borrowed buffers.
pub(crate) fn execute(
    exe: &LoadedExecutable,
    bufs: &[Vec<Buffer>],
) -> anyhow::Result<Vec<Vec<Buffer>>> {
    let lists: Vec<Vec<&Buffer>> = bufs.iter().map(|l| l.iter().collect()).collect();
    let refs: Vec<&[&Buffer]> = lists.iter().map(Vec::as_slice).collect();
    Ok(exe.execute(&refs)?)
}

/// Device outputs to global host tensors (assembled per the result shardings).
fn gather(module: &Module, outs: Vec<Vec<Buffer>>) -> anyhow::Result<Vec<HostTensor>> {
    if outs.len() == 1 {
        return outs.into_iter().flatten().map(|b| Ok(b.to_host()?)).collect();
    }
    let num = outs.first().map_or(0, Vec::len);
    let mut result = Vec::with_capacity(num);
    for j in 0..num {
        let what = format!("output {j}");
        let shards: Vec<HostTensor> =
            outs.iter().map(|d| d[j].to_host()).collect::<Result<_, _>>()?;
        let layout = module.results.as_ref().and_then(|r| r.get(j)).and_then(|r| r.layout.clone());
        result.push(match layout {
            Some(l) => pjrt_util::assemble(&shards, &l, &what)?,
            None => shards.into_iter().next().context("no devices")?,
        });
    }
    Ok(result)
}
