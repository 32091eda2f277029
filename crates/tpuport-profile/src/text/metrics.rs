//! torch_xla's metrics report (`torch_xla.debug.metrics.metrics_report()`).
//!
//! ```text
//! Metric: CompileTime
//!   TotalSamples: 202
//!   Accumulator: 06m09s401ms746.001us
//!   ValueRate: 778ms572.062us / second
//!   Rate: 0.425201 / second
//!   Percentiles: 1%=001ms32.778us; 5%=001ms61.283us; …
//! Counter: CachedSyncTensors
//!   Value: 395
//! ```
//!
//! The troubleshooting guide prints the accumulator as `  Counter: …` under a `Metric:`; the
//! code prints `  Accumulator: …`. Both are read. A file holding several reports (one printed
//! per epoch) keeps the last: counters are cumulative.

use serde::Serialize;

/// A metric's value with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "unit", content = "value", rename_all = "lowercase")]
pub enum MetricValue {
    /// A duration in nanoseconds (`01s335ms096.802us`).
    Nanos(f64),
    /// A size in bytes (`2.30KB`, 1024-based).
    Bytes(f64),
    /// A plain number (`12.00`).
    Number(f64),
}

impl MetricValue {
    /// The number in its base unit (ns, bytes or plain).
    #[must_use]
    pub fn raw(self) -> f64 {
        match self {
            MetricValue::Nanos(v) | MetricValue::Bytes(v) | MetricValue::Number(v) => v,
        }
    }
}

/// One `Metric:` entry.
#[derive(Debug, Clone, Serialize)]
pub struct Metric {
    /// The metric's name (`CompileTime`).
    pub name: String,
    /// `TotalSamples`.
    pub samples: u64,
    /// `Accumulator` (or the documented `Counter`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accumulator: Option<MetricValue>,
    /// `Percentiles`: (percent, value).
    pub percentiles: Vec<(f64, MetricValue)>,
    /// Line of the `Metric:` header in the file.
    pub line: usize,
}

impl Metric {
    /// The largest percentile point given (the closest the report comes to the maximum).
    #[must_use]
    pub fn top_percentile(&self) -> Option<(f64, MetricValue)> {
        self.percentiles.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// One `Counter:` entry.
#[derive(Debug, Clone, Serialize)]
pub struct Counter {
    /// The counter's name (`aten::nonzero`, `MarkStep`).
    pub name: String,
    /// Its value.
    pub value: u64,
    /// Line of the `Counter:` header in the file.
    pub line: usize,
}

/// A parsed metrics report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MetricsReport {
    /// Metrics in file order.
    pub metrics: Vec<Metric>,
    /// Counters in file order.
    pub counters: Vec<Counter>,
    /// How many reports the file held (the last is kept).
    pub reports: usize,
}

impl MetricsReport {
    /// A counter's value.
    #[must_use]
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters.iter().find(|c| c.name == name).map(|c| c.value)
    }

    /// A metric.
    #[must_use]
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// CPU fallback counters (`aten::…`), largest first.
    #[must_use]
    pub fn fallbacks(&self) -> Vec<&Counter> {
        let mut v: Vec<&Counter> =
            self.counters.iter().filter(|c| c.name.starts_with("aten::")).collect();
        v.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.name.cmp(&b.name)));
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Current {
    None,
    Metric,
    Counter,
}

/// Line-by-line parser state.
#[derive(Debug)]
pub(crate) struct MetricsParser {
    report: MetricsReport,
    current: Current,
    /// At least one header followed by a field was seen.
    seen: bool,
}

impl Default for MetricsParser {
    fn default() -> Self {
        MetricsParser { report: MetricsReport::default(), current: Current::None, seen: false }
    }
}

impl MetricsParser {
    pub(crate) fn line(&mut self, line: &str, no: usize) {
        // A header may follow unrelated output on the same line (`Prediction: ***Metric: X`
        // when the report is printed without a newline before it).
        let line = match header_start(line) {
            Some(i) => &line[i..],
            None => line,
        };
        if let Some(name) = line.strip_prefix("Metric: ") {
            let name = name.trim();
            if self.report.metrics.iter().any(|m| m.name == name) {
                self.restart();
            }
            self.report.metrics.push(Metric {
                name: name.to_owned(),
                samples: 0,
                accumulator: None,
                percentiles: Vec::new(),
                line: no,
            });
            self.current = Current::Metric;
            return;
        }
        if let Some(name) = line.strip_prefix("Counter: ") {
            let name = name.trim();
            if self.report.counters.iter().any(|c| c.name == name) {
                self.restart();
            }
            self.report.counters.push(Counter { name: name.to_owned(), value: 0, line: no });
            self.current = Current::Counter;
            return;
        }
        let Some(field) = line.strip_prefix("  ") else {
            self.current = Current::None;
            return;
        };
        let Some((key, value)) = field.split_once(": ") else { return };
        let value = value.trim();
        match self.current {
            Current::Metric => {
                let Some(m) = self.report.metrics.last_mut() else { return };
                match key.trim() {
                    "TotalSamples" => {
                        if let Ok(n) = value.parse() {
                            m.samples = n;
                            self.seen = true;
                        }
                    }
                    "Accumulator" | "Counter" => m.accumulator = parse_value(value),
                    "Percentiles" => {
                        m.percentiles = value
                            .split(';')
                            .filter_map(|item| {
                                let (p, v) = item.trim().split_once("%=")?;
                                Some((p.parse().ok()?, parse_value(v)?))
                            })
                            .collect();
                    }
                    _ => {}
                }
            }
            Current::Counter => {
                if key.trim() == "Value"
                    && let Ok(n) = value.parse()
                    && let Some(c) = self.report.counters.last_mut()
                {
                    c.value = n;
                    self.seen = true;
                }
            }
            Current::None => {}
        }
    }

    fn restart(&mut self) {
        self.report.metrics.clear();
        self.report.counters.clear();
        self.report.reports += 1;
    }

    pub(crate) fn finish(mut self) -> Option<MetricsReport> {
        if !self.seen {
            return None;
        }
        self.report.reports += 1;
        Some(self.report)
    }
}

/// Where a `Metric: NAME` / `Counter: NAME` header starts in a line that does not begin with
/// blank space (indented lines are fields); the name must be one word.
fn header_start(line: &str) -> Option<usize> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    ["Metric: ", "Counter: "].iter().find_map(|h| {
        let i = line.find(h)?;
        let name = line[i + h.len()..].trim_end();
        (i > 0 && !name.is_empty() && !name.contains(char::is_whitespace)).then_some(i)
    })
}

/// A value as the report prints it: a duration (`06m09s401ms746.001us`), a byte size
/// (`2.30KB`) or a plain number.
#[must_use]
pub fn parse_value(s: &str) -> Option<MetricValue> {
    let s = s.trim();
    for (suffix, scale) in [("PB", 5), ("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1), ("B", 0)] {
        if let Some(num) = s.strip_suffix(suffix)
            && let Ok(v) = num.parse::<f64>()
        {
            return Some(MetricValue::Bytes(v * 1024f64.powi(scale)));
        }
    }
    if let Ok(v) = s.parse::<f64>() {
        return Some(MetricValue::Number(v));
    }
    parse_duration_ns(s).map(MetricValue::Nanos)
}

/// `06m09s401ms746.001us` → nanoseconds. Units `d`, `h`, `m`, `s`, `ms`, `us`, `ns`.
#[must_use]
pub fn parse_duration_ns(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut total = 0.0;
    let mut parts = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        let num: f64 = s.get(start..i)?.parse().ok()?;
        let rest = &s[i..];
        let (unit_ns, len) = if rest.starts_with("ms") {
            (1e6, 2)
        } else if rest.starts_with("us") {
            (1e3, 2)
        } else if rest.starts_with("ns") {
            (1.0, 2)
        } else if rest.starts_with('d') {
            (86_400e9, 1)
        } else if rest.starts_with('h') {
            (3_600e9, 1)
        } else if rest.starts_with('m') {
            (60e9, 1)
        } else if rest.starts_with('s') {
            (1e9, 1)
        } else {
            return None;
        };
        total += num * unit_ns;
        i += len;
        parts += 1;
    }
    (parts > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp, reason = "tests")]

    use super::*;

    #[test]
    fn durations_and_sizes() {
        let ns = parse_duration_ns("06m09s401ms746.001us").unwrap();
        assert!((ns - (369.0e9 + 401.0e6 + 746_001.0)).abs() < 1.0);
        assert_eq!(parse_duration_ns("001ms32.778us").unwrap(), 1e6 + 32_778.0);
        assert_eq!(parse_duration_ns("210.038us").unwrap(), 210_038.0);
        assert_eq!(parse_duration_ns("01h02m").unwrap(), 3_720e9);
        assert!(parse_duration_ns("12 apples").is_none());
        assert_eq!(parse_value("2.30KB"), Some(MetricValue::Bytes(2.30 * 1024.0)));
        assert_eq!(parse_value("4.00B"), Some(MetricValue::Bytes(4.0)));
        assert_eq!(parse_value("12.00"), Some(MetricValue::Number(12.0)));
    }

    #[test]
    fn documented_and_current_spellings() {
        let mut p = MetricsParser::default();
        let text = "Metric: CompileTime\n  TotalSamples: 202\n  Counter: 06m09s401ms746.001us\n  ValueRate: 778ms572.062us / second\n  Percentiles: 1%=001ms32.778us; 99%=21s102ms853.173us\nMetric: ExecuteTime\n  TotalSamples: 3\n  Accumulator: 1s\nCounter: CachedSyncTensors\n  Value: 395\nCounter: aten::nonzero\n  Value: 7\n";
        for (i, l) in text.lines().enumerate() {
            p.line(l, i + 1);
        }
        let r = p.finish().unwrap();
        let c = r.metric("CompileTime").unwrap();
        assert_eq!(c.samples, 202);
        assert!(matches!(c.accumulator, Some(MetricValue::Nanos(v)) if v > 369e9));
        assert_eq!(c.top_percentile().unwrap().0, 99.0);
        assert_eq!(r.metric("ExecuteTime").unwrap().accumulator, Some(MetricValue::Nanos(1e9)));
        assert_eq!(r.counter("CachedSyncTensors"), Some(395));
        assert_eq!(r.fallbacks()[0].name, "aten::nonzero");
    }

    #[test]
    fn header_after_other_output() {
        let mut p = MetricsParser::default();
        for (i, l) in "Prediction: ***Metric: CompileTime\n  TotalSamples: 13\n  Accumulator: 02m38s528ms309.014us\n".lines().enumerate() {
            p.line(l, i + 1);
        }
        assert_eq!(p.finish().unwrap().metric("CompileTime").unwrap().samples, 13);
    }

    #[test]
    fn a_second_report_replaces_the_first() {
        let mut p = MetricsParser::default();
        let text = "Counter: MarkStep\n  Value: 1\nCounter: MarkStep\n  Value: 9\n";
        for (i, l) in text.lines().enumerate() {
            p.line(l, i + 1);
        }
        let r = p.finish().unwrap();
        assert_eq!((r.counter("MarkStep"), r.reports), (Some(9), 2));
    }
}
