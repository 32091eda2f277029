//! Text form of `tpuport top` snapshots (the non-interactive output; the live view is the
//! binary's ratatui screen, which shows the same figures).

use std::fmt::Write as _;

use tpuport_monitor::libtpu::Snapshot;
use tpuport_monitor::top::{Bar, Percentiles, TargetView};

/// Seconds as `1.2 ms` / `35 µs` / `1.50 s`.
#[must_use]
pub fn seconds(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(s) if s >= 1.0 => format!("{s:.2} s"),
        Some(s) if s >= 1e-3 => format!("{:.1} ms", s * 1e3),
        Some(s) => format!("{:.0} µs", s * 1e6),
    }
}

/// `p50 / p90 / p99`.
#[must_use]
pub fn latency(p: &Percentiles) -> String {
    format!("{} / {} / {}", seconds(p.p50), seconds(p.p90), seconds(p.p99))
}

/// A histogram as `le:count` pairs of the non-empty buckets.
#[must_use]
pub fn bars(b: &[Bar]) -> String {
    let parts: Vec<String> =
        b.iter().filter(|x| x.count > 0.0).map(|x| format!("≤{}:{}", x.le, x.count)).collect();
    if parts.is_empty() { "-".to_owned() } else { parts.join(" ") }
}

/// Bytes as GiB / MiB.
#[must_use]
pub fn bytes(v: f64) -> String {
    if v >= f64::from(1u32 << 30) {
        format!("{:.2} GiB", v / f64::from(1u32 << 30))
    } else {
        format!("{:.1} MiB", v / f64::from(1u32 << 20))
    }
}

/// One block per target, then libtpu's figures, then the alarms.
#[must_use]
pub fn render_text(
    views: &[TargetView],
    libtpu: Option<&Snapshot>,
    libtpu_error: Option<&str>,
) -> String {
    let mut s = String::new();
    for v in views {
        let _ = writeln!(
            s,
            "{}  ready {}  compiles after ready {}",
            v.url,
            v.server_ready.map_or("-".to_owned(), |r| r.to_string()),
            v.compiles_after_ready
        );
        if let Some(e) = &v.error {
            let _ = writeln!(s, "  scrape failed: {e}");
            continue;
        }
        for m in &v.models {
            let _ = writeln!(
                s,
                "  {}  req {} ({} /s)  latency p50/p90/p99 {}  queue {}  inflight {}",
                m.model,
                m.requests_total,
                m.requests_per_s.map_or("-".to_owned(), |r| format!("{r:.1}")),
                latency(&m.latency),
                m.queue_depth,
                m.inflight
            );
            let _ = writeln!(s, "    batch size {}", bars(&m.batch_size));
            let _ = writeln!(
                s,
                "    padding ratio {}{}",
                bars(&m.padding_ratio),
                m.padding_mean.map_or(String::new(), |p| format!("  (mean {p:.2})"))
            );
            if !m.rejections.is_empty() {
                let r: Vec<String> = m.rejections.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(s, "    rejections {}", r.join(", "));
            }
            if !m.shape_drift.is_empty() {
                let r: Vec<String> =
                    m.shape_drift.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(s, "    shape drift {}", r.join(", "));
            }
            if !m.refusals.is_empty() {
                let r: Vec<String> = m.refusals.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(s, "    refused inputs {}", r.join(", "));
            }
            for (input, by) in &m.shapes {
                let r: Vec<String> = by.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(s, "    shapes of {input}: {}", r.join(", "));
            }
        }
        for d in &v.device_memory {
            let _ = writeln!(s, "  device {} memory {} {}", d.device, d.kind, bytes(d.bytes));
        }
    }
    match (libtpu, libtpu_error) {
        (Some(l), _) => {
            for (id, d) in &l.devices {
                let _ = writeln!(
                    s,
                    "libtpu device {id}: HBM {} of {}, duty cycle {}",
                    d.hbm_used.map_or("-".to_owned(), bytes),
                    d.hbm_total.map_or("-".to_owned(), bytes),
                    d.duty_cycle_percent.map_or("-".to_owned(), |p| format!("{p:.1}%"))
                );
            }
        }
        (None, Some(e)) => {
            let _ = writeln!(s, "libtpu: {e}");
        }
        (None, None) => {}
    }
    let alarms: Vec<_> = views.iter().flat_map(|v| &v.alarms).collect();
    if alarms.is_empty() {
        let _ = writeln!(s, "alarms: none");
    } else {
        for a in alarms {
            let _ = writeln!(s, "ALARM {}: {}", a.rule, a.message);
        }
    }
    s
}
