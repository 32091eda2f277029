//! What `tpuport top` shows and alarms on, computed from successive scrapes of `tpuport
//! serve`'s `/metrics` (metric names: `tpuport_serve::metrics::names`, `docs/serve.md`).
//!
//! Rates and latency percentiles are over the interval since the previous scrape of the same
//! target (cumulative since start on the first one). Alarms:
//! - `compile_after_ready`: `tpuport_compiles_after_ready_total` above 0 (a program compiled on
//!   the request path: the warm-up missed a shape);
//! - `shape_drift`: `tpuport_shape_drift_total` above 0 (requests whose input's non-batch shape
//!   is not the model's, or whose batch is over the largest bucket), naming the shapes seen
//!   (`tpuport_input_shapes_total`); a batch between buckets is dynamic batching, not drift;
//! - `input_refusals`: `tpuport_input_refusals_total` over `tpuport_requests_total` in the
//!   interval above [`Thresholds::max_refusal_rate`] (clients sending what the model does not
//!   take: a wrong dimension, datatype, a missing input), naming the reasons;
//! - `padding_waste`: the mean of `tpuport_padding_ratio` over the interval's batches above
//!   [`Thresholds::max_padding_ratio`] (buckets too far apart for the traffic);
//! - `queue_growing`: a model's `tpuport_queue_depth` has not gone down for at least
//!   [`Thresholds::queue_growth_s`] and is higher than when it started rising;
//! - `rejection_rate`: `tpuport_rejections_total` over `tpuport_requests_total` in the interval
//!   (cumulative on the first scrape) above [`Thresholds::max_rejection_rate`].
//!
//! The same rules are in `deploy/prometheus/tpuport-alerts.yaml`.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::prom::Exposition;

/// Alarm thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// Seconds a queue may keep growing.
    pub queue_growth_s: f64,
    /// Largest fraction of requests rejected.
    pub max_rejection_rate: f64,
    /// Largest fraction of requests refused for their inputs.
    pub max_refusal_rate: f64,
    /// Largest mean fraction of padded rows per executed batch.
    pub max_padding_ratio: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            queue_growth_s: 30.0,
            max_rejection_rate: 0.01,
            max_refusal_rate: 0.01,
            max_padding_ratio: 0.5,
        }
    }
}

/// Latency percentiles, seconds (linear inside a histogram bucket, as PromQL's
/// `histogram_quantile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// 50th percentile.
    pub p50: Option<f64>,
    /// 90th.
    pub p90: Option<f64>,
    /// 99th.
    pub p99: Option<f64>,
}

/// One histogram bucket as a count of its own (not cumulative).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bar {
    /// Upper bound (`le`).
    pub le: String,
    /// Observations in this bucket.
    pub count: f64,
}

/// One model's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelView {
    /// Model name.
    pub model: String,
    /// Requests answered since start.
    pub requests_total: f64,
    /// Requests answered per second over the interval (`None` on the first scrape).
    pub requests_per_s: Option<f64>,
    /// Request latency over the interval.
    pub latency: Percentiles,
    /// Requests waiting now.
    pub queue_depth: f64,
    /// Batches executing now.
    pub inflight: f64,
    /// Executed batch sizes over the interval.
    pub batch_size: Vec<Bar>,
    /// Padding ratios over the interval.
    pub padding_ratio: Vec<Bar>,
    /// Rejections since start, by reason.
    pub rejections: BTreeMap<String, f64>,
    /// Rejected over answered requests in the interval.
    pub rejection_rate: Option<f64>,
    /// Shape-drift requests since start, by kind.
    pub shape_drift: BTreeMap<String, f64>,
    /// Requests refused for their inputs since start, by reason.
    pub refusals: BTreeMap<String, f64>,
    /// Refused for their inputs over answered requests in the interval.
    pub refusal_rate: Option<f64>,
    /// Requests since start per input and shape (`Nx3x224x224`).
    pub shapes: BTreeMap<String, BTreeMap<String, f64>>,
    /// Mean padding ratio of the interval's batches.
    pub padding_mean: Option<f64>,
}

/// Device memory gauge.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceMemory {
    /// Device ordinal.
    pub device: String,
    /// `in_use`, `limit`, … as the server labels them.
    pub kind: String,
    /// Bytes.
    pub bytes: f64,
}

/// A raised alarm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alarm {
    /// Rule id: `compile_after_ready`, `shape_drift`, `input_refusals`, `padding_waste`,
    /// `queue_growing`, `rejection_rate`, `scrape_failed`.
    pub rule: String,
    /// The model, for per-model rules.
    pub model: Option<String>,
    /// One line for people.
    pub message: String,
}

/// One target at one scrape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetView {
    /// The scraped URL.
    pub url: String,
    /// Seconds since the watch started.
    pub at_s: f64,
    /// Why the scrape failed, when it did.
    pub error: Option<String>,
    /// `tpuport_server_ready`.
    pub server_ready: Option<f64>,
    /// `tpuport_compiles_after_ready_total`.
    pub compiles_after_ready: f64,
    /// Device memory gauges.
    pub device_memory: Vec<DeviceMemory>,
    /// One row per model.
    pub models: Vec<ModelView>,
    /// Alarms raised at this scrape.
    pub alarms: Vec<Alarm>,
}

#[derive(Debug, Default)]
struct TargetState {
    prev: Option<(f64, Exposition)>,
    /// Per model: when the queue started rising without going down, the depth then, the
    /// last depth seen.
    rising: HashMap<String, (f64, f64, f64)>,
}

/// Alarm state over time for any number of targets.
#[derive(Debug, Default)]
pub struct Watch {
    thresholds: Thresholds,
    targets: HashMap<String, TargetState>,
}

impl Watch {
    /// A watch with these thresholds.
    #[must_use]
    pub fn new(thresholds: Thresholds) -> Watch {
        Watch { thresholds, targets: HashMap::new() }
    }

    /// Records one scrape of `url` taken at `at_s` and returns what to show.
    pub fn observe(
        &mut self,
        url: &str,
        at_s: f64,
        scrape: Result<Exposition, String>,
    ) -> TargetView {
        let e = match scrape {
            Ok(e) => e,
            Err(reason) => {
                return TargetView {
                    url: url.to_owned(),
                    at_s,
                    error: Some(reason.clone()),
                    server_ready: None,
                    compiles_after_ready: 0.0,
                    device_memory: Vec::new(),
                    models: Vec::new(),
                    alarms: vec![Alarm {
                        rule: "scrape_failed".into(),
                        model: None,
                        message: reason,
                    }],
                };
            }
        };
        let th = self.thresholds;
        let st = self.targets.entry(url.to_owned()).or_default();
        let prev = st.prev.as_ref();
        let dt = prev.map(|(t, _)| at_s - t).filter(|d| *d > 0.0);
        let delta = |name: &str, filter: &[(&str, &str)]| -> f64 {
            let now = e.sum(name, filter);
            match prev {
                // A counter that went down means the server restarted: count from zero.
                Some((_, p)) => {
                    let before = p.sum(name, filter);
                    if now >= before { now - before } else { now }
                }
                None => now,
            }
        };
        let mut models: Vec<String> = Vec::new();
        for n in [
            "tpuport_requests_total",
            "tpuport_queue_depth",
            "tpuport_model_ready",
            "tpuport_rejections_total",
        ] {
            models.extend(e.label_values(n, "model"));
        }
        models.sort();
        models.dedup();
        let mut alarms = Vec::new();
        let compiles = e.sum("tpuport_compiles_after_ready_total", &[]);
        if compiles > 0.0 {
            alarms.push(Alarm {
                rule: "compile_after_ready".into(),
                model: None,
                message: format!(
                    "{compiles} program(s) compiled after the server turned ready: a request shape missed the warm-up"
                ),
            });
        }
        let mut rows = Vec::new();
        for m in &models {
            let f = [("model", m.as_str())];
            let requests_total = e.sum("tpuport_requests_total", &f);
            let answered = delta("tpuport_requests_total", &f);
            let rejected = delta("tpuport_rejections_total", &f);
            let rejection_rate = (answered > 0.0).then(|| rejected / answered);
            let depth = e.sum("tpuport_queue_depth", &f);
            let by = |name: &str, label: &str| -> BTreeMap<String, f64> {
                let mut out = BTreeMap::new();
                for k in e.label_values(name, label) {
                    let v = e.sum(name, &[("model", m), (label, &k)]);
                    if v > 0.0 {
                        out.insert(k, v);
                    }
                }
                out
            };
            let rejections = by("tpuport_rejections_total", "reason");
            let shape_drift = by("tpuport_shape_drift_total", "kind");
            let refusals = by("tpuport_input_refusals_total", "reason");
            let refused = delta("tpuport_input_refusals_total", &f);
            let refusal_rate = (answered > 0.0).then(|| refused / answered);
            let mut shapes: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
            for s in e.samples("tpuport_input_shapes_total") {
                if s.labels.get("model").is_some_and(|x| x == m) && s.value > 0.0 {
                    let input = s.labels.get("input").cloned().unwrap_or_default();
                    let shape = s.labels.get("shape").cloned().unwrap_or_default();
                    *shapes.entry(input).or_default().entry(shape).or_default() += s.value;
                }
            }
            let batches = delta("tpuport_padding_ratio_count", &f);
            let padding_mean =
                (batches > 0.0).then(|| delta("tpuport_padding_ratio_sum", &f) / batches);
            let drift: f64 = shape_drift.values().sum();
            if drift > 0.0 {
                let seen: Vec<String> = shapes
                    .iter()
                    .map(|(i, by)| {
                        let v: Vec<String> = by.iter().map(|(s, n)| format!("{s} {n}")).collect();
                        format!("{i}: {}", v.join(", "))
                    })
                    .collect();
                alarms.push(Alarm {
                    rule: "shape_drift".into(),
                    model: Some(m.clone()),
                    message: format!(
                        "{m}: {drift} request(s) whose shape the model does not take ({}); shapes seen: {}",
                        join(&shape_drift),
                        seen.join("; ")
                    ),
                });
            }
            if let Some(rate) = refusal_rate
                && rate > th.max_refusal_rate
            {
                alarms.push(Alarm {
                    rule: "input_refusals".into(),
                    model: Some(m.clone()),
                    message: format!(
                        "{m}: {:.1}% of requests refused for their inputs ({refused} of {answered}), above {:.1}% (since start: {})",
                        rate * 100.0,
                        th.max_refusal_rate * 100.0,
                        join(&refusals)
                    ),
                });
            }
            if let Some(p) = padding_mean
                && p > th.max_padding_ratio
            {
                alarms.push(Alarm {
                    rule: "padding_waste".into(),
                    model: Some(m.clone()),
                    message: format!(
                        "{m}: {:.0}% of each batch's rows were padding on average over {batches} batch(es), above {:.0}%: add a bucket near the batch sizes served",
                        p * 100.0,
                        th.max_padding_ratio * 100.0
                    ),
                });
            }
            if let Some(rate) = rejection_rate
                && rate > th.max_rejection_rate
            {
                alarms.push(Alarm {
                    rule: "rejection_rate".into(),
                    model: Some(m.clone()),
                    message: format!(
                        "{m}: {:.1}% of requests rejected ({rejected} of {answered}), above {:.1}%",
                        rate * 100.0,
                        th.max_rejection_rate * 100.0
                    ),
                });
            }
            // Queue growth: the rise starts when the depth goes up from a lower value and
            // ends when it goes down.
            let entry = st.rising.get(m).copied();
            let next = match entry {
                None => (at_s, depth, depth),
                Some((since, base, last)) if depth < last => {
                    let _ = (since, base);
                    (at_s, depth, depth)
                }
                Some((since, base, _)) => (since, base, depth),
            };
            st.rising.insert(m.clone(), next);
            let (since, base, _) = next;
            if depth > base && at_s - since >= th.queue_growth_s {
                alarms.push(Alarm {
                    rule: "queue_growing".into(),
                    model: Some(m.clone()),
                    message: format!(
                        "{m}: queue grew from {base} to {depth} over {:.0} s without going down",
                        at_s - since
                    ),
                });
            }
            rows.push(ModelView {
                model: m.clone(),
                requests_total,
                requests_per_s: dt.map(|d| answered / d),
                latency: percentiles(&e, prev.map(|p| &p.1), "tpuport_request_duration_seconds", m),
                queue_depth: depth,
                inflight: e.sum("tpuport_inflight_batches", &f),
                batch_size: bars(&e, prev.map(|p| &p.1), "tpuport_batch_size", m),
                padding_ratio: bars(&e, prev.map(|p| &p.1), "tpuport_padding_ratio", m),
                rejections,
                rejection_rate,
                shape_drift,
                refusals,
                refusal_rate,
                shapes,
                padding_mean,
            });
        }
        let device_memory = e
            .samples("tpuport_device_memory_bytes")
            .map(|s| DeviceMemory {
                device: s.labels.get("device").cloned().unwrap_or_default(),
                kind: s.labels.get("kind").cloned().unwrap_or_default(),
                bytes: s.value,
            })
            .collect();
        let server_ready = e.samples("tpuport_server_ready").next().map(|s| s.value);
        st.prev = Some((at_s, e));
        TargetView {
            url: url.to_owned(),
            at_s,
            error: None,
            server_ready,
            compiles_after_ready: compiles,
            device_memory,
            models: rows,
            alarms,
        }
    }
}

/// `k v, k v` of a count map.
fn join(m: &BTreeMap<String, f64>) -> String {
    m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// The cumulative buckets (`le` → count) of histogram `name` for `model`, summed over the
/// other labels, minus the previous scrape's.
fn cumulative(
    e: &Exposition,
    prev: Option<&Exposition>,
    name: &str,
    model: &str,
) -> Vec<(f64, String, f64)> {
    let bucket = format!("{name}_bucket");
    let collect = |x: &Exposition| {
        let mut by: BTreeMap<String, f64> = BTreeMap::new();
        for s in x.samples(&bucket) {
            if s.labels.get("model").is_some_and(|m| m == model)
                && let Some(le) = s.labels.get("le")
            {
                *by.entry(le.clone()).or_default() += s.value;
            }
        }
        by
    };
    let now = collect(e);
    let before = prev.map(collect).unwrap_or_default();
    let restarted = now.iter().any(|(k, v)| before.get(k).is_some_and(|b| b > v));
    let mut out: Vec<(f64, String, f64)> = now
        .iter()
        .map(|(le, v)| {
            let bound = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::NAN) };
            let b = if restarted { 0.0 } else { before.get(le).copied().unwrap_or(0.0) };
            (bound, le.clone(), v - b)
        })
        .filter(|(b, _, _)| !b.is_nan())
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

fn bars(e: &Exposition, prev: Option<&Exposition>, name: &str, model: &str) -> Vec<Bar> {
    let c = cumulative(e, prev, name, model);
    let mut last = 0.0;
    c.into_iter()
        .map(|(_, le, v)| {
            let own = (v - last).max(0.0);
            last = v;
            Bar { le, count: own }
        })
        .collect()
}

fn percentiles(e: &Exposition, prev: Option<&Exposition>, name: &str, model: &str) -> Percentiles {
    let c = cumulative(e, prev, name, model);
    let q = |q: f64| quantile(&c, q);
    Percentiles { p50: q(0.5), p90: q(0.9), p99: q(0.99) }
}

/// PromQL's `histogram_quantile` on cumulative buckets sorted by bound: linear inside the
/// bucket; the highest finite bound when the rank falls in `+Inf`.
fn quantile(c: &[(f64, String, f64)], q: f64) -> Option<f64> {
    let total = c.last()?.2;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for (bound, _, count) in c {
        if *count >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let width = bound - lower.0;
            let inside = count - lower.1;
            return Some(if inside > 0.0 {
                lower.0 + width * (rank - lower.1) / inside
            } else {
                *bound
            });
        }
        lower = (*bound, *count);
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]
    use super::*;
    use crate::prom::parse;

    fn body(requests: u64, rejected: u64, depth: u64, drift: u64, compiles: u64) -> Exposition {
        let text = format!(
            "# TYPE tpuport_requests_total counter\ntpuport_requests_total{{model=\"m\",protocol=\"http\",code=\"200\"}} {requests}\n\
             # TYPE tpuport_rejections_total counter\ntpuport_rejections_total{{model=\"m\",reason=\"queue_full\"}} {rejected}\n\
             # TYPE tpuport_queue_depth gauge\ntpuport_queue_depth{{model=\"m\"}} {depth}\n\
             # TYPE tpuport_shape_drift_total counter\ntpuport_shape_drift_total{{model=\"m\",input=\"X\",kind=\"row_shape\"}} {drift}\n\
             # TYPE tpuport_compiles_after_ready_total counter\ntpuport_compiles_after_ready_total {compiles}\n\
             # TYPE tpuport_request_duration_seconds histogram\n\
             tpuport_request_duration_seconds_bucket{{model=\"m\",protocol=\"http\",le=\"0.01\"}} {a}\n\
             tpuport_request_duration_seconds_bucket{{model=\"m\",protocol=\"http\",le=\"0.1\"}} {requests}\n\
             tpuport_request_duration_seconds_bucket{{model=\"m\",protocol=\"http\",le=\"+Inf\"}} {requests}\n",
            a = requests / 2
        );
        parse(&text, "t").unwrap()
    }

    fn rules(v: &TargetView) -> Vec<&str> {
        v.alarms.iter().map(|a| a.rule.as_str()).collect()
    }

    #[test]
    fn a_quiet_server_raises_nothing() {
        let mut w = Watch::new(Thresholds::default());
        let v = w.observe("u", 0.0, Ok(body(100, 0, 0, 0, 0)));
        assert!(v.alarms.is_empty(), "{:?}", v.alarms);
        let v = w.observe("u", 10.0, Ok(body(200, 0, 0, 0, 0)));
        assert!(v.alarms.is_empty());
        assert_eq!(v.models[0].requests_per_s, Some(10.0));
        // Half the interval's 100 requests under 10 ms, the rest under 100 ms.
        assert_eq!(v.models[0].latency.p50, Some(0.01));
        assert!((v.models[0].latency.p90.unwrap() - 0.082).abs() < 1e-9);
    }

    #[test]
    fn drift_compiles_and_rejections_alarm() {
        let mut w = Watch::new(Thresholds::default());
        let v = w.observe("u", 0.0, Ok(body(100, 0, 0, 1, 2)));
        assert_eq!(rules(&v), ["compile_after_ready", "shape_drift"]);
        // 5 rejected of the interval's 50 answered: 10% > 1%.
        let v = w.observe("u", 1.0, Ok(body(150, 5, 0, 1, 2)));
        assert!(rules(&v).contains(&"rejection_rate"), "{:?}", v.alarms);
        // No new rejections in the next interval: the rate alarm clears.
        let v = w.observe("u", 2.0, Ok(body(200, 5, 0, 1, 2)));
        assert!(!rules(&v).contains(&"rejection_rate"));
    }

    /// `requests` answered, `refused` of them for a wrong shape, `batches` executed with
    /// `padding` padded rows in all per batch ratio sum.
    fn traffic(requests: u64, refused: u64, batches: u64, padding: f64) -> Exposition {
        let text = format!(
            "# TYPE tpuport_requests_total counter\ntpuport_requests_total{{model=\"m\",protocol=\"http\",code=\"200\"}} {requests}\n\
             # TYPE tpuport_input_refusals_total counter\ntpuport_input_refusals_total{{model=\"m\",reason=\"wrong_shape\"}} {refused}\n\
             tpuport_input_refusals_total{{model=\"m\",reason=\"wrong_dtype\"}} 0\n\
             # TYPE tpuport_input_shapes_total counter\ntpuport_input_shapes_total{{model=\"m\",input=\"X\",shape=\"Nx192\"}} {requests}\n\
             # TYPE tpuport_padding_ratio histogram\n\
             tpuport_padding_ratio_bucket{{model=\"m\",le=\"+Inf\"}} {batches}\n\
             tpuport_padding_ratio_sum{{model=\"m\"}} {padding}\n\
             tpuport_padding_ratio_count{{model=\"m\"}} {batches}\n"
        );
        parse(&text, "t").unwrap()
    }

    #[test]
    fn refusals_and_padding_alarm_per_interval_and_batching_between_buckets_does_not() {
        let mut w = Watch::new(Thresholds::default());
        // Ordinary dynamic batching: every request refused for nothing, a quarter of each
        // batch padding on average. No alarm.
        let v = w.observe("u", 0.0, Ok(traffic(100, 0, 40, 10.0)));
        assert!(v.alarms.is_empty(), "{:?}", v.alarms);
        assert_eq!(v.models[0].padding_mean, Some(0.25));
        assert_eq!(v.models[0].shapes["X"]["Nx192"], 100.0);
        // 5 of the next 50 requests refused (10% > 1%), and the next 10 batches 70% padding.
        let v = w.observe("u", 1.0, Ok(traffic(150, 5, 50, 17.0)));
        assert_eq!(rules(&v), ["input_refusals", "padding_waste"], "{:?}", v.alarms);
        assert!(v.alarms[0].message.contains("wrong_shape 5"), "{:?}", v.alarms);
        assert_eq!(v.models[0].refusals["wrong_shape"], 5.0);
        assert!(!v.models[0].refusals.contains_key("wrong_dtype"));
        // A quiet interval clears both.
        let v = w.observe("u", 2.0, Ok(traffic(200, 5, 60, 19.0)));
        assert!(v.alarms.is_empty(), "{:?}", v.alarms);
    }

    #[test]
    fn queue_growth_alarms_only_after_the_window_and_clears_when_it_drains() {
        let mut w = Watch::new(Thresholds {
            queue_growth_s: 5.0,
            max_rejection_rate: 1.0,
            ..Thresholds::default()
        });
        let mut raised = Vec::new();
        for (t, depth) in [(0.0, 0), (2.0, 3), (4.0, 3), (6.0, 9), (8.0, 2), (10.0, 4)] {
            let v = w.observe("u", t, Ok(body(1, 0, depth, 0, 0)));
            raised.push(rules(&v).contains(&"queue_growing"));
        }
        // Rising since t=0: alarm at t=6 (6 s >= 5 s); drained at t=8; rising again but only 2 s.
        assert_eq!(raised, [false, false, false, true, false, false]);
    }

    #[test]
    fn a_failed_scrape_is_an_alarm() {
        let mut w = Watch::new(Thresholds::default());
        let v = w.observe("u", 0.0, Err("connection refused".into()));
        assert_eq!(rules(&v), ["scrape_failed"]);
    }
}
