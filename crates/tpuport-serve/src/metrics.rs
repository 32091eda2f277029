//! Prometheus metrics in the text exposition format, written here: atomics on the hot path,
//! families keyed by label values, rendered on scrape.
//!
//! Names (all prefixed `tpuport_`): see `docs/serve.md`. Latencies are histograms (operators
//! aggregate them across replicas; summaries cannot be), batch size and padding waste are
//! histograms too, queue depth and in-flight executions are gauges for autoscaling.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Latency buckets in seconds: 50 µs … 10 s.
pub const LATENCY_BOUNDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];
/// Batch-size buckets (rows).
pub const BATCH_BOUNDS: &[f64] =
    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];
/// Padding-ratio buckets (padded rows / bucket rows).
pub const RATIO_BOUNDS: &[f64] = &[0.0, 0.1, 0.25, 0.5, 0.75, 0.9];

/// A histogram with fixed upper bounds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum as f64 bits.
    sum: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Records one observation.
    pub fn observe(&self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut cur = self.sum.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(cur) + v).to_bits();
            match self.sum.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(x) => cur = x,
            }
        }
    }

    /// Observations so far.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// A monotonically increasing counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The value.
    #[must_use]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A gauge.
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    /// Adds `d` (may be negative).
    pub fn add(&self, d: i64) {
        self.0.fetch_add(d, Ordering::Relaxed);
    }
    /// The value.
    #[must_use]
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

enum Kind {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
}

enum Cell {
    Counter(Arc<Counter>),
    Gauge(Arc<Gauge>),
    Histogram(Arc<Histogram>),
}

struct Family {
    help: &'static str,
    labels: &'static [&'static str],
    kind: Kind,
    cells: BTreeMap<Vec<String>, Cell>,
}

/// Every metric of the server. Handles are looked up once (at model load) and kept.
pub struct Registry {
    families: Mutex<BTreeMap<&'static str, Family>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

/// Metric names, one place.
pub mod names {
    /// Requests answered, by model and status code.
    pub const REQUESTS: &str = "tpuport_requests_total";
    /// Time from arrival to response, seconds, by status code.
    pub const REQUEST_DURATION: &str = "tpuport_request_duration_seconds";
    /// Time a request waited in the queue before its batch ran, seconds.
    pub const QUEUE_DURATION: &str = "tpuport_queue_duration_seconds";
    /// Time of one batch: upload, execute, download, seconds.
    pub const COMPUTE_DURATION: &str = "tpuport_compute_duration_seconds";
    /// Real rows per executed batch.
    pub const BATCH_SIZE: &str = "tpuport_batch_size";
    /// Padded rows / bucket rows per executed batch.
    pub const PADDING_RATIO: &str = "tpuport_padding_ratio";
    /// Executions per model and bucket.
    pub const EXECUTIONS: &str = "tpuport_executions_total";
    /// Requests waiting in a model's queue.
    pub const QUEUE_DEPTH: &str = "tpuport_queue_depth";
    /// Batches executing now.
    pub const INFLIGHT: &str = "tpuport_inflight_batches";
    /// Requests refused or dropped, by reason.
    pub const REJECTIONS: &str = "tpuport_rejections_total";
    /// Executables obtained at load, by cache status.
    pub const COMPILE_CACHE: &str = "tpuport_compile_cache_total";
    /// Programs compiled at load (not taken from the executable cache or a saved executable).
    pub const COMPILES: &str = "tpuport_compiles_total";
    /// Seconds to compile or load each bucket.
    pub const COMPILE_SECONDS: &str = "tpuport_compile_seconds";
    /// Programs compiled or loaded after the server turned ready.
    pub const COMPILES_AFTER_READY: &str = "tpuport_compiles_after_ready_total";
    /// Requests whose input's non-batch shape is not the model's (`row_shape`) or whose batch
    /// is above the largest bucket (`batch_over_max`).
    pub const SHAPE_DRIFT: &str = "tpuport_shape_drift_total";
    /// Requests refused for their inputs (400, 413), by reason.
    pub const INPUT_REFUSALS: &str = "tpuport_input_refusals_total";
    /// Requests per input and shape seen (batch dimension `N`; `other` past the first 8).
    pub const INPUT_SHAPES: &str = "tpuport_input_shapes_total";
    /// 1 when a model is ready.
    pub const MODEL_READY: &str = "tpuport_model_ready";
    /// 1 when the server is ready.
    pub const SERVER_READY: &str = "tpuport_server_ready";
    /// Device memory reported by the plugin, bytes.
    pub const DEVICE_MEMORY: &str = "tpuport_device_memory_bytes";
    /// Weight bytes held on the device per model.
    pub const WEIGHT_BYTES: &str = "tpuport_model_weight_bytes";
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

impl Registry {
    /// A registry with every family declared.
    #[must_use]
    pub fn new() -> Registry {
        use names::*;
        let r = Registry { families: Mutex::new(BTreeMap::new()) };
        let h = Kind::Histogram;
        r.declare(
            REQUESTS,
            "Requests answered, by status code.",
            &["model", "protocol", "code"],
            Kind::Counter,
        );
        r.declare(
            REQUEST_DURATION,
            "Time from arrival to response, seconds, by status code.",
            &["model", "protocol", "code"],
            h(LATENCY_BOUNDS),
        );
        r.declare(
            QUEUE_DURATION,
            "Time a request waited before its batch ran, seconds.",
            &["model"],
            h(LATENCY_BOUNDS),
        );
        r.declare(
            COMPUTE_DURATION,
            "Time of one batch (upload, execute, download), seconds.",
            &["model", "bucket"],
            h(LATENCY_BOUNDS),
        );
        r.declare(BATCH_SIZE, "Real rows per executed batch.", &["model"], h(BATCH_BOUNDS));
        r.declare(
            PADDING_RATIO,
            "Padded rows over bucket rows per executed batch.",
            &["model"],
            h(RATIO_BOUNDS),
        );
        r.declare(EXECUTIONS, "Batches executed.", &["model", "bucket"], Kind::Counter);
        r.declare(QUEUE_DEPTH, "Requests waiting in the model's queue.", &["model"], Kind::Gauge);
        r.declare(INFLIGHT, "Batches executing now.", &["model"], Kind::Gauge);
        r.declare(
            REJECTIONS,
            "Requests refused or dropped, by reason.",
            &["model", "reason"],
            Kind::Counter,
        );
        r.declare(
            COMPILE_CACHE,
            "Executables obtained at load: saved, or by executable-cache status.",
            &["model", "status"],
            Kind::Counter,
        );
        r.declare(
            COMPILES,
            "Programs compiled at load (not from the executable cache or a saved executable).",
            &["model"],
            Kind::Counter,
        );
        r.declare(
            COMPILE_SECONDS,
            "Seconds to compile or load a bucket's executable.",
            &["model", "bucket"],
            Kind::Gauge,
        );
        r.declare(
            COMPILES_AFTER_READY,
            "Programs compiled or loaded after the server turned ready.",
            &[],
            Kind::Counter,
        );
        r.declare(
            SHAPE_DRIFT,
            "Requests whose input's non-batch shape is not the model's (row_shape) or whose batch is above the largest bucket (batch_over_max).",
            &["model", "input", "kind"],
            Kind::Counter,
        );
        r.declare(
            INPUT_REFUSALS,
            "Requests refused for their inputs (400, 413), by reason.",
            &["model", "reason"],
            Kind::Counter,
        );
        r.declare(
            INPUT_SHAPES,
            "Requests per input and shape seen, the batch dimension written N (other: past the first 8 shapes).",
            &["model", "input", "shape"],
            Kind::Counter,
        );
        r.declare(MODEL_READY, "1 when the model is ready.", &["model"], Kind::Gauge);
        r.declare(SERVER_READY, "1 when the server is ready.", &[], Kind::Gauge);
        r.declare(
            DEVICE_MEMORY,
            "Device memory reported by the PJRT plugin, bytes.",
            &["device", "kind"],
            Kind::Gauge,
        );
        r.declare(WEIGHT_BYTES, "Weight bytes held on the device.", &["model"], Kind::Gauge);
        r
    }

    fn declare(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        kind: Kind,
    ) {
        self.lock().insert(name, Family { help, labels, kind, cells: BTreeMap::new() });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, Family>> {
        self.families.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn cell(&self, name: &str, values: &[&str]) -> Option<CellRef> {
        let mut fams = self.lock();
        let fam = fams.get_mut(name)?;
        debug_assert_eq!(fam.labels.len(), values.len(), "{name}");
        let key: Vec<String> = values.iter().map(|s| (*s).to_owned()).collect();
        let cell = fam.cells.entry(key).or_insert_with(|| match fam.kind {
            Kind::Counter => Cell::Counter(Arc::default()),
            Kind::Gauge => Cell::Gauge(Arc::default()),
            Kind::Histogram(b) => Cell::Histogram(Arc::new(Histogram::new(b))),
        });
        Some(match cell {
            Cell::Counter(c) => CellRef::Counter(c.clone()),
            Cell::Gauge(g) => CellRef::Gauge(g.clone()),
            Cell::Histogram(h) => CellRef::Histogram(h.clone()),
        })
    }

    /// The counter `name{values}` (created on first use).
    #[must_use]
    pub fn counter(&self, name: &str, values: &[&str]) -> Arc<Counter> {
        match self.cell(name, values) {
            Some(CellRef::Counter(c)) => c,
            _ => Arc::default(),
        }
    }

    /// The gauge `name{values}`.
    #[must_use]
    pub fn gauge(&self, name: &str, values: &[&str]) -> Arc<Gauge> {
        match self.cell(name, values) {
            Some(CellRef::Gauge(g)) => g,
            _ => Arc::default(),
        }
    }

    /// The histogram `name{values}`.
    #[must_use]
    pub fn histogram(&self, name: &str, values: &[&str]) -> Arc<Histogram> {
        match self.cell(name, values) {
            Some(CellRef::Histogram(h)) => h,
            _ => Arc::new(Histogram::new(LATENCY_BOUNDS)),
        }
    }

    /// The text exposition of every family.
    #[must_use]
    pub fn render(&self) -> String {
        let fams = self.lock();
        let mut s = String::with_capacity(16 << 10);
        for (name, fam) in fams.iter() {
            let ty = match fam.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(s, "# HELP {name} {}\n# TYPE {name} {ty}", fam.help);
            for (values, cell) in &fam.cells {
                let labels = label_text(fam.labels, values);
                match cell {
                    Cell::Counter(c) => {
                        let _ = writeln!(s, "{name}{} {}", wrap(&labels), c.get());
                    }
                    Cell::Gauge(g) => {
                        let _ = writeln!(s, "{name}{} {}", wrap(&labels), g.get());
                    }
                    Cell::Histogram(h) => render_histogram(&mut s, name, &labels, h),
                }
            }
        }
        s
    }
}

enum CellRef {
    Counter(Arc<Counter>),
    Gauge(Arc<Gauge>),
    Histogram(Arc<Histogram>),
}

fn render_histogram(s: &mut String, name: &str, labels: &str, h: &Histogram) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cum = 0;
    for (b, c) in h.bounds.iter().zip(&h.counts) {
        cum += c.load(Ordering::Relaxed);
        let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cum}");
    }
    let count = h.count.load(Ordering::Relaxed);
    let _ = writeln!(s, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
    let sum = f64::from_bits(h.sum.load(Ordering::Relaxed));
    let _ = writeln!(s, "{name}_sum{} {sum}", wrap(labels));
    let _ = writeln!(s, "{name}_count{} {count}", wrap(labels));
}

fn wrap(labels: &str) -> String {
    if labels.is_empty() { String::new() } else { format!("{{{labels}}}") }
}

fn label_text(names: &[&str], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Escapes a label value (`\`, `"`, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `tpuport serve`'s figures of a model's load: its weight bytes, each bucket's executable
/// (cache outcome, compiles) and the seconds it took.
impl tpuport_exec::LoadMetrics for Registry {
    fn weight_bytes(&self, model: &str, bytes: usize) {
        self.gauge(names::WEIGHT_BYTES, &[model]).set(i64::try_from(bytes).unwrap_or(0));
    }

    fn bucket_ready(&self, model: &str, bucket: &str, cache: tpuport_exec::CacheUse, seconds: f64) {
        self.counter(names::COMPILE_CACHE, &[model, cache.as_str()]).inc();
        // Registered at 0 for a model whose executables all came from the cache or a file.
        let compiles = self.counter(names::COMPILES, &[model]);
        if cache.source() == tpuport_exec::ExeSource::Compiled {
            compiles.inc();
        }
        self.gauge(names::COMPILE_SECONDS, &[model, bucket])
            .set(i64::try_from(seconds.ceil() as u64).unwrap_or(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_cumulative_histograms() {
        let r = Registry::new();
        r.counter(names::REQUESTS, &["m", "http", "200"]).add(3);
        r.gauge(names::QUEUE_DEPTH, &["m"]).set(2);
        let h = r.histogram(names::BATCH_SIZE, &["m"]);
        h.observe(3.0);
        h.observe(8.0);
        h.observe(5000.0);
        let t = r.render();
        assert!(
            t.contains("tpuport_requests_total{model=\"m\",protocol=\"http\",code=\"200\"} 3\n"),
            "{t}"
        );
        assert!(t.contains("tpuport_queue_depth{model=\"m\"} 2\n"));
        assert!(t.contains("tpuport_batch_size_bucket{model=\"m\",le=\"2\"} 0\n"));
        assert!(t.contains("tpuport_batch_size_bucket{model=\"m\",le=\"4\"} 1\n"));
        assert!(t.contains("tpuport_batch_size_bucket{model=\"m\",le=\"8\"} 2\n"));
        assert!(t.contains("tpuport_batch_size_bucket{model=\"m\",le=\"+Inf\"} 3\n"));
        assert!(t.contains("tpuport_batch_size_sum{model=\"m\"} 5011\n"));
        assert!(t.contains("# TYPE tpuport_batch_size histogram\n"));
        assert!(t.contains("# TYPE tpuport_compiles_after_ready_total counter\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        let r = Registry::new();
        r.counter(names::REJECTIONS, &["a\"b\\c\nd", "queue_full"]).inc();
        assert!(r.render().contains("model=\"a\\\"b\\\\c\\nd\""));
    }
}
