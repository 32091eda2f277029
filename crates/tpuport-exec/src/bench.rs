//! Benchmarks of one [`Target`]: compile time (cold and from the cache), execute latency
//! percentiles on device-resident arguments, throughput, achieved FLOP/s from the
//! executable's cost analysis, the compiler's memory figures, the fraction of the chip's peak
//! (when the hardware catalog knows the device) and resident memory before and after the
//! timed loop (a leak check).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use tpuport_formats::tensors::{Entry, Key, SplitMix, random_tensor};
use tpuport_model::HostTensor;
use tpuport_pjrt::{CacheStatus, Runtime, Value};

use crate::error::{Result, invalid};
use crate::{Observer, Target};

/// JSON schema id of the report.
pub const SCHEMA: &str = "tpuport.bench/1";

/// Loop sizes.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Timed executions (at least 1).
    pub iters: u32,
    /// Untimed executions first.
    pub warmup: u32,
    /// Compile every time instead of using the executable cache.
    pub no_cache: bool,
}

/// One benchmarked module.
#[derive(Debug, Serialize)]
pub struct Row {
    /// The module file.
    pub model: PathBuf,
    /// Batch size: the bucket's, else the leading dimension of the data arguments as the
    /// argument roles decide them (absent when they cannot tell).
    pub batch: Option<u64>,
    /// Devices one execution runs on.
    pub devices: usize,
    /// A fresh compile, milliseconds.
    pub compile_cold_ms: f64,
    /// Loading the executable from the cache, milliseconds (absent with `--no-cache` or when
    /// the cache is not usable).
    pub compile_cached_ms: Option<f64>,
    /// Timed executions.
    pub iters: u32,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Fastest execution, microseconds.
    pub min_us: f64,
    /// Median, microseconds.
    pub p50_us: f64,
    /// 90th percentile, microseconds.
    pub p90_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// `1e6 / mean_us`.
    pub executions_per_s: f64,
    /// `batch * executions_per_s`.
    pub items_per_s: Option<f64>,
    /// FLOP per execution (cost analysis).
    pub flops: Option<f64>,
    /// `flops * executions_per_s`.
    pub achieved_flop_per_s: Option<f64>,
    /// PJRT platform name.
    pub platform: String,
    /// The device's kind string.
    pub device_kind: Option<String>,
    /// Catalog chip matched to the device kind, when any.
    pub chip: Option<String>,
    /// The chip's bf16 peak, FLOP/s.
    pub peak_bf16_flop_per_s: Option<f64>,
    /// `achieved_flop_per_s / peak_bf16_flop_per_s`.
    pub peak_fraction: Option<f64>,
    /// `PJRT_Executable_GetCompiledMemoryStats` (absent when the plugin does not give it).
    pub compiled_memory: Option<tpuport_pjrt::CompiledMemoryStats>,
    /// Resident set size of this process right before the first and after the last timed
    /// execution, bytes (Linux only).
    pub rss_before_bytes: Option<u64>,
    /// See `rss_before_bytes`.
    pub rss_after_bytes: Option<u64>,
}

/// Seeded random values for what the target's caller provides (floats ~ N(0, 1), integers in
/// [0, 16), booleans fair; seed 0).
///
/// # Errors
/// A module without a readable signature, or an argument that cannot be drawn (dynamic
/// shape, dtype); the message says to pass inputs.
pub fn random_inputs(target: &Target) -> Result<Vec<Entry>> {
    let path = target.module.path.display();
    let slots = target.inputs().ok_or_else(|| {
        invalid(format!(
            "{path}: no signature to build random inputs from (bytecode?); pass --input"
        ))
    })?;
    let mut rng = SplitMix(0);
    slots
        .iter()
        .filter(|s| !target.fixed_inputs().iter().any(|(n, _)| *n == s.name))
        .map(|s| {
            let tensor = random_tensor(s, &mut rng)
                .map_err(|p| invalid(format!("{path}: {p}; pass --input")))?;
            Ok(Entry {
                key: Key::Named(s.name.clone()),
                source: format!("random:{}", s.name),
                tensor,
            })
        })
        .collect()
}

/// Benchmarks `target` on `args` (argument order, labelled).
///
/// # Errors
/// Compile, transfer or execution errors.
pub fn bench(
    target: &Target,
    args: &[(String, HostTensor)],
    rt: &Runtime,
    opts: &Options,
    obs: &dyn Observer,
) -> Result<Row> {
    if opts.iters == 0 {
        return Err(invalid("--iters must be at least 1"));
    }
    let module = &target.module;
    let copts = module.compile_options();
    // Cold: always a fresh compile.
    let t = Instant::now();
    drop(rt.client.compile(&module.program, &copts)?);
    let compile_cold = t.elapsed();
    let mut compile_cached = None;
    let exe = if opts.no_cache {
        rt.client.compile(&module.program, &copts)?
    } else {
        let first = rt.cache.get_or_compile(&rt.client, &module.program, &copts)?;
        if first.status == CacheStatus::Hit {
            compile_cached = Some(first.elapsed);
            first.executable
        } else {
            drop(first);
            let again = rt.cache.get_or_compile(&rt.client, &module.program, &copts)?;
            if again.status == CacheStatus::Hit {
                compile_cached = Some(again.elapsed);
            } else {
                obs.warn(&format!("executable cache not usable ({:?})", rt.cache.dir()));
            }
            again.executable
        }
    };
    let bufs = tpuport_pjrt::upload(&rt.client, &exe, args, &module.arg_layouts())?;
    for _ in 0..opts.warmup {
        drop(exe.execute_lists(&bufs)?);
    }
    // Timed: one execution on device-resident inputs until every device reports completion
    // (the outputs stay on the device and are freed after the clock stops).
    let mut times: Vec<Duration> = Vec::with_capacity(opts.iters as usize);
    let rss_before = rss_bytes();
    for _ in 0..opts.iters {
        let t = Instant::now();
        let out = exe.execute_lists(&bufs)?;
        times.push(t.elapsed());
        drop(out);
    }
    let rss_after = rss_bytes();
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into `times`"
    )]
    let pct = |q: f64| us(times[((times.len() as f64 - 1.0) * q).round() as usize]);
    #[allow(clippy::cast_precision_loss, reason = "iteration counts")]
    let mean = times.iter().map(|d| us(*d)).sum::<f64>() / times.len() as f64;
    let flops =
        exe.executable().cost_analysis().ok().and_then(|c| {
            match tpuport_pjrt::find_value(&c, "flops") {
                Some(Value::Float(f)) => Some(f64::from(*f)),
                #[allow(clippy::cast_precision_loss, reason = "FLOP counts")]
                Some(Value::Int64(i)) => Some(*i as f64),
                _ => None,
            }
        });
    let batch = target.batch();
    #[allow(clippy::cast_precision_loss, reason = "batch sizes")]
    let items = batch.map(|b| b as f64 * 1e6 / mean);
    let achieved = flops.map(|f| f * 1e6 / mean);
    let device_kind =
        exe.devices().first().and_then(|d| d.description().ok()).map(|d| d.kind.trim().to_owned());
    let catalog = tpuport_hw::Catalog::builtin();
    let chip = device_kind.as_deref().and_then(|k| find_chip(&catalog, k));
    let peak = chip.and_then(|c| c.peak.bf16);
    #[allow(clippy::cast_precision_loss, reason = "device counts")]
    let devices = exe.num_devices() as f64;
    let peak_fraction = match (achieved, peak) {
        (Some(f), Some(pk)) if pk > 0.0 => Some(f / (pk * devices)),
        _ => None,
    };
    Ok(Row {
        model: module.path.clone(),
        batch,
        devices: exe.num_devices(),
        compile_cold_ms: compile_cold.as_secs_f64() * 1e3,
        compile_cached_ms: compile_cached.map(|d| d.as_secs_f64() * 1e3),
        iters: opts.iters,
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
#[must_use]
pub fn find_chip<'c>(catalog: &'c tpuport_hw::Catalog, kind: &str) -> Option<&'c tpuport_hw::Chip> {
    catalog.find(kind).or_else(|| {
        let rest = kind.strip_prefix("TPU").or_else(|| kind.strip_prefix("tpu"))?;
        catalog.find(&format!("tpu {}", rest.trim_start()))
    })
}

/// Resident set size of this process: `/proc/self/statm` field 2 (pages) times the page size
/// (`AT_PAGESZ` from `/proc/self/auxv`, else 4 KiB). `None` where `/proc` is absent.
#[must_use]
pub fn rss_bytes() -> Option<u64> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
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
