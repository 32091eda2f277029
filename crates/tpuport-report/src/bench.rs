//! The text report of `tpuport bench`: per module, compile times, latency percentiles,
//! throughput, achieved FLOP/s against the chip's peak, compiled memory and resident memory.

use std::fmt::Write as _;

use tpuport_exec::bench::Row;

/// The text report: one block per benchmarked module.
#[must_use]
pub fn render(rows: &[Row]) -> String {
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
