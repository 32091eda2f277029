//! `tpuport bench MODEL…`: compile time (cold and cached), execute latency percentiles,
//! throughput and achieved FLOP/s from the executable's cost analysis, the compiler's memory
//! figures, the fraction of the chip's peak (when the catalog knows the device) and resident
//! memory before and after the timed loop (a leak check).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tpuport_model::{DType, HostTensor};
use tpuport_pjrt::{ExecutableCache, Value};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::commands::pjrt_util::{Module, RuntimeArgs};
use crate::commands::run::{execute, read_inputs, to_device};
use crate::printer::Printer;

/// Arguments of `tpuport bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// StableHLO module(s) (text or bytecode).
    #[arg(required = true)]
    pub(crate) models: Vec<PathBuf>,
    /// Timed executions.
    #[arg(long, default_value_t = 100)]
    pub(crate) iters: u32,
    /// Untimed executions first.
    #[arg(long, default_value_t = 10)]
    pub(crate) warmup: u32,
    /// Also bench the sibling batch buckets of each model: paths that differ only in the
    /// number after a `b` (`mlp_b1/jit.mlir` → `mlp_b8/…`, `mlp_b128/…`).
    #[arg(long)]
    pub(crate) batch_sweep: bool,
    /// Inputs as for `tpuport run` (default: random values of the signature's types).
    #[arg(long = "input", short = 'i', value_name = "[NAME=]FILE")]
    pub(crate) inputs: Vec<String>,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

#[derive(Debug, Serialize)]
struct Row {
    model: PathBuf,
    batch: Option<u64>,
    devices: usize,
    compile_cold_ms: f64,
    compile_cached_ms: Option<f64>,
    iters: u32,
    mean_us: f64,
    min_us: f64,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
    executions_per_s: f64,
    items_per_s: Option<f64>,
    flops: Option<f64>,
    achieved_flop_per_s: Option<f64>,
    platform: String,
    device_kind: Option<String>,
    /// Catalog chip matched to the device kind, when any.
    chip: Option<String>,
    peak_bf16_flop_per_s: Option<f64>,
    /// `achieved_flop_per_s / peak_bf16_flop_per_s`.
    peak_fraction: Option<f64>,
    /// `PJRT_Executable_GetCompiledMemoryStats` (absent when the plugin does not give it).
    compiled_memory: Option<tpuport_pjrt::CompiledMemoryStats>,
    /// Resident set size of this process right before the first and after the last timed
    /// execution, bytes (Linux only).
    rss_before_bytes: Option<u64>,
    rss_after_bytes: Option<u64>,
}

pub(crate) fn run(a: &BenchArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    if a.iters == 0 {
        bail!("--iters must be at least 1");
    }
    let mut models = Vec::new();
    for m in &a.models {
        let list = if a.batch_sweep { sweep(m) } else { vec![m.clone()] };
        for x in list {
            if !models.contains(&x) {
                models.push(x);
            }
        }
    }
    let mut rows = Vec::new();
    for m in &models {
        rows.push(bench_one(m, a, p).with_context(|| format!("benchmarking {}", m.display()))?);
    }
    match g.format {
        Format::Json => p.data(&format!(
            "{}\n",
            serde_json::to_string_pretty(
                &serde_json::json!({"schema": "tpuport.bench/1", "results": rows})
            )?
        )),
        _ => p.data(&render(&rows)),
    }
    Ok(Status::Success)
}

fn bench_one(path: &Path, a: &BenchArgs, p: &Printer) -> anyhow::Result<Row> {
    let module = Module::load(path, p)?;
    let inputs = if a.inputs.is_empty() {
        random_inputs(&module)?
    } else {
        read_inputs(&a.inputs, &module)?
    };
    module.check_inputs(&inputs)?;
    let rt = a.runtime.open(&module, p)?;
    let opts = module.compile_options();
    // Cold: always a fresh compile.
    let t = Instant::now();
    let cold = rt.client.compile(&module.program, &opts)?;
    let compile_cold = t.elapsed();
    drop(cold);
    let mut compile_cached = None;
    let exe = if a.runtime.no_cache {
        rt.client.compile(&module.program, &opts)?
    } else {
        let cache = rt.cache.clone();
        let first = cache.get_or_compile(&rt.client, &module.program, &opts)?;
        if first.status == tpuport_pjrt::CacheStatus::Hit {
            compile_cached = Some(first.elapsed);
            first.executable
        } else {
            drop(first);
            let again = cache.get_or_compile(&rt.client, &module.program, &opts)?;
            if again.status == tpuport_pjrt::CacheStatus::Hit {
                compile_cached = Some(again.elapsed);
            } else {
                p.warn(&format!(
                    "executable cache not usable ({:?})",
                    ExecutableCache::default_dir()
                ));
            }
            again.executable
        }
    };
    let bufs = to_device(&rt.client, &exe, &module, &inputs)?;
    for _ in 0..a.warmup {
        drop(execute(&exe, &bufs)?);
    }
    // Timed: one execution on device-resident inputs until every device reports completion
    // (the outputs stay on the device and are freed after the clock stops).
    let mut times: Vec<Duration> = Vec::with_capacity(a.iters as usize);
    let rss_before = rss_bytes();
    for _ in 0..a.iters {
        let t = Instant::now();
        let out = execute(&exe, &bufs)?;
        times.push(t.elapsed());
        drop(out);
    }
    let rss_after = rss_bytes();
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let pct = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((times.len() as f64 - 1.0) * q).round() as usize;
        us(times[i])
    };
    #[allow(clippy::cast_precision_loss)]
    let mean = times.iter().map(|d| us(*d)).sum::<f64>() / times.len() as f64;
    let flops =
        exe.executable().cost_analysis().ok().and_then(|c| {
            match tpuport_pjrt::find_value(&c, "flops") {
                Some(Value::Float(f)) => Some(f64::from(*f)),
                Some(Value::Int64(i)) => {
                    #[allow(clippy::cast_precision_loss)]
                    let f = *i as f64;
                    Some(f)
                }
                _ => None,
            }
        });
    let batch = inputs.last().and_then(|(_, t)| t.shape.first().copied());
    #[allow(clippy::cast_precision_loss)]
    let items = batch.map(|b| b as f64 * 1e6 / mean);
    let achieved = flops.map(|f| f * 1e6 / mean);
    let device_kind =
        exe.devices().first().and_then(|d| d.description().ok()).map(|d| d.kind.trim().to_owned());
    let catalog = tpuport_hw::Catalog::builtin();
    let chip = device_kind.as_deref().and_then(|k| find_chip(&catalog, k));
    let peak = chip.and_then(|c| c.peak.bf16);
    #[allow(clippy::cast_precision_loss)]
    let devices = exe.num_devices() as f64;
    let peak_fraction = match (achieved, peak) {
        (Some(f), Some(pk)) if pk > 0.0 => Some(f / (pk * devices)),
        _ => None,
    };
    Ok(Row {
        model: path.to_owned(),
        batch,
        devices: exe.num_devices(),
        compile_cold_ms: compile_cold.as_secs_f64() * 1e3,
        compile_cached_ms: compile_cached.map(|d| d.as_secs_f64() * 1e3),
        iters: a.iters,
        mean_us: mean,
        min_us: us(times[0]),
        p50_us: pct(0.5),
        p90_us: pct(0.9),
        p99_us: pct(0.99),
        executions_per_s: 1e6 / mean,
        items_per_s: items,
        flops,
        achieved_flop_per_s: achieved,
        platform: rt.client.platform_name().to_owned(),
        chip: chip.map(|c| c.id.clone()),
        device_kind,
        peak_bf16_flop_per_s: peak,
        peak_fraction,
        compiled_memory: exe.executable().compiled_memory_stats().ok(),
        rss_before_bytes: rss_before,
        rss_after_bytes: rss_after,
    })
}

/// The catalog chip for a PJRT device kind (`TPU v5 lite`, `TPU7x`, `NVIDIA H100 80GB HBM3`):
/// the kind itself, else with a space after a leading `TPU`.
fn find_chip<'c>(catalog: &'c tpuport_hw::Catalog, kind: &str) -> Option<&'c tpuport_hw::Chip> {
    catalog.find(kind).or_else(|| {
        let rest = kind.strip_prefix("TPU").or_else(|| kind.strip_prefix("tpu"))?;
        catalog.find(&format!("tpu {}", rest.trim_start()))
    })
}

/// Resident set size of this process: `/proc/self/statm` field 2 (pages) times the page size
/// (`AT_PAGESZ` from `/proc/self/auxv`, else 4 KiB). `None` where `/proc` is absent.
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

fn page_size() -> u64 {
    const AT_PAGESZ: u64 = 6;
    let Ok(aux) = std::fs::read("/proc/self/auxv") else { return 4096 };
    aux.chunks_exact(16)
        .map(|c| {
            let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
            (word(&c[..8]), word(&c[8..]))
        })
        .find(|(k, _)| *k == AT_PAGESZ)
        .map_or(4096, |(_, v)| v)
}

fn render(rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for r in rows {
        let _ = writeln!(
            s,
            "{} ({} device(s){})",
            r.model.display(),
            r.devices,
            r.batch.map_or(String::new(), |b| format!(", batch {b}"))
        );
        let cached = r.compile_cached_ms.map_or_else(|| "-".to_owned(), |c| format!("{c:.1} ms"));
        let _ = writeln!(s, "  compile: cold {:.1} ms, from cache {cached}", r.compile_cold_ms);
        let _ = writeln!(
            s,
            "  latency over {} iters: mean {:.1} us, min {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}",
            r.iters, r.mean_us, r.min_us, r.p50_us, r.p90_us, r.p99_us
        );
        let items = r.items_per_s.map_or(String::new(), |i| format!(", {i:.0} items/s"));
        let _ = writeln!(s, "  throughput: {:.0} executions/s{items}", r.executions_per_s);
        if let (Some(f), Some(fs)) = (r.flops, r.achieved_flop_per_s) {
            let _ = writeln!(
                s,
                "  cost analysis: {f:.0} FLOP per execution, achieved {:.3} GFLOP/s",
                fs / 1e9
            );
        }
        let dev = r.device_kind.as_deref().unwrap_or("unknown device");
        let _ = match (r.chip.as_deref(), r.peak_bf16_flop_per_s, r.peak_fraction) {
            (Some(c), Some(pk), Some(f)) => writeln!(
                s,
                "  peak: {:.1}% of {c}'s {:.0} TFLOP/s bf16 per chip ({dev})",
                f * 100.0,
                pk / 1e12
            ),
            (Some(c), Some(pk), None) => writeln!(
                s,
                "  peak: {c} {:.0} TFLOP/s bf16 per chip; no FLOP count to compare ({dev})",
                pk / 1e12
            ),
            _ => writeln!(
                s,
                "  peak: unknown for {} device {dev:?} (not in the hardware catalog)",
                r.platform
            ),
        };
        if let Some(m) = &r.compiled_memory {
            let _ = writeln!(
                s,
                "  compiled memory: arguments {}, outputs {}, temporaries {}, code {}{}",
                mib(m.argument),
                mib(m.output),
                mib(m.temp),
                mib(m.generated_code),
                if m.alias > 0 { format!(", aliased {}", mib(m.alias)) } else { String::new() }
            );
        }
        if let (Some(b), Some(a)) = (r.rss_before_bytes, r.rss_after_bytes) {
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_wrap)]
            let grow = (a as i64 - b as i64) as f64 / 1024.0;
            #[allow(clippy::cast_precision_loss)]
            let (bm, am) = (b as f64 / 1048576.0, a as f64 / 1048576.0);
            let _ = writeln!(
                s,
                "  resident memory: {bm:.1} MiB before the timed loop, {am:.1} MiB after ({grow:+.0} KiB)"
            );
        }
    }
    s
}

fn mib(b: i64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let v = b as f64;
    if b.abs() < 1024 {
        format!("{b} B")
    } else if b.abs() < 1 << 20 {
        format!("{:.1} KiB", v / 1024.0)
    } else {
        format!("{:.2} MiB", v / 1048576.0)
    }
}

/// Random inputs of the signature's types (floats in [-1, 1), small integers, booleans).
fn random_inputs(module: &Module) -> anyhow::Result<Vec<(String, HostTensor)>> {
    let args = module.args.as_ref().with_context(|| {
        format!(
            "{}: no signature to build random inputs from (bytecode?); pass --input",
            module.path.display()
        )
    })?;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    args.iter()
        .map(|a| {
            let dims: Vec<u64> = a
                .dims
                .iter()
                .map(|d| {
                    d.with_context(|| {
                        format!(
                            "argument {} has a dynamic shape {}; pass --input",
                            a.name,
                            a.type_string()
                        )
                    })
                })
                .collect::<anyhow::Result<_>>()?;
            let n = usize::try_from(dims.iter().product::<u64>())?;
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            let mut unit = || (next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            let bytes: Vec<u8> = match a.dtype {
                #[allow(clippy::cast_possible_truncation)]
                DType::F32 => (0..n).flat_map(|_| (unit() as f32).to_le_bytes()).collect(),
                DType::F64 => (0..n).flat_map(|_| unit().to_le_bytes()).collect(),
                #[allow(clippy::cast_possible_truncation)]
                DType::BF16 => {
                    (0..n).flat_map(|_| half::bf16::from_f64(unit()).to_le_bytes()).collect()
                }
                DType::F16 => {
                    (0..n).flat_map(|_| half::f16::from_f64(unit()).to_le_bytes()).collect()
                }
                DType::Bool => (0..n).map(|_| u8::from(unit() > 0.0)).collect(),
                d if d.is_int() && d.bits().is_some_and(|b| b >= 8) => {
                    let w = d.bits().unwrap_or(8) as usize / 8;
                    (0..n)
                        .flat_map(|_| {
                            let mut b = vec![0u8; w];
                            b[0] = (next() % 8) as u8;
                            b
                        })
                        .collect()
                }
                other => {
                    bail!("argument {}: cannot make random {other} values; pass --input", a.name)
                }
            };
            Ok((format!("random:{}", a.name), HostTensor::new(a.dtype, dims, bytes)?))
        })
        .collect()
}

/// Sibling batch buckets of `path`: the last `b<digits>` in the path replaced by every other
/// number for which a file exists.
fn sweep(path: &Path) -> Vec<PathBuf> {
    let s = path.to_string_lossy().into_owned();
    let bytes = s.as_bytes();
    let mut at = None;
    for i in (0..bytes.len()).rev() {
        if bytes[i] == b'b'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        {
            at = Some(i + 1);
            break;
        }
    }
    let Some(start) = at else { return vec![path.to_owned()] };
    let end = start + bytes[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    let (prefix, suffix) = (&s[..start], &s[end..]);
    // The directory that holds the varying component.
    let comp_start = prefix.rfind('/').map_or(0, |i| i + 1);
    let parent =
        if comp_start == 0 { Path::new(".") } else { Path::new(&prefix[..comp_start - 1]) };
    let head = &prefix[comp_start..];
    let tail_end = suffix.find('/').unwrap_or(suffix.len());
    let (tail, rest) = suffix.split_at(tail_end);
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(parent) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(mid) = name.strip_prefix(head).and_then(|r| r.strip_suffix(tail)) else {
                continue;
            };
            let Ok(n) = mid.parse::<u64>() else { continue };
            let cand = PathBuf::from(format!("{}{name}{rest}", &prefix[..comp_start]));
            if cand.is_file() {
                found.push((n, cand));
            }
        }
    }
    found.sort();
    if found.is_empty() {
        vec![path.to_owned()]
    } else {
        found.into_iter().map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn device_kinds_map_to_catalog_chips() {
        let c = tpuport_hw::Catalog::builtin();
        let id = |k: &str| find_chip(&c, k).map(|c| c.id.clone());
        for (kind, want) in [
            ("TPU v4", "v4"),
            ("TPU v5 lite", "v5e"),
            ("TPU v5", "v5p"),
            ("TPU v6 lite", "v6e"),
            ("TPU7x", "tpu7x"),
            ("NVIDIA H100 80GB HBM3", "h100"),
        ] {
            assert_eq!(id(kind).as_deref(), Some(want), "{kind}");
        }
        assert_eq!(id("cpu"), None);
        assert!(find_chip(&c, "TPU v6 lite").and_then(|c| c.peak.bf16).is_some());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn resident_memory_is_read_from_proc() {
        let ps = page_size();
        assert!(ps >= 4096 && ps.is_power_of_two(), "{ps}");
        let before = rss_bytes().unwrap();
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        let after = rss_bytes().unwrap();
        assert!(after >= before + (32 << 20), "{before} -> {after}");
    }
}
