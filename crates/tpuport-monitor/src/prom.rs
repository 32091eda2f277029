//! The Prometheus text exposition format (version 0.0.4), parsed here: `# HELP` / `# TYPE`
//! lines and samples `name{label="value",…} value [timestamp]`, with the label-value escapes
//! `\\`, `\"` and `\n`, and the values `+Inf`, `-Inf` and `NaN`. Fetched with a small
//! HTTP/1.1 client over `std::net` (plain `http://` only), bounded in size and time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;

use crate::error::MonitorError;

/// Largest `/metrics` body read (bytes).
pub const MAX_BODY: usize = 32 << 20;
/// Most samples accepted from one body.
pub const MAX_SAMPLES: usize = 1_000_000;

/// One sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Sample name (`tpuport_batch_size_bucket`).
    pub name: String,
    /// Labels in name order.
    pub labels: BTreeMap<String, String>,
    /// Value (`+Inf`/`-Inf`/`NaN` as floats; JSON writes non-finite values as `null`).
    pub value: f64,
}

/// A family: the samples under one `# TYPE`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Family {
    /// `counter`, `gauge`, `histogram`, `summary` or `untyped`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The `# HELP` text.
    pub help: String,
    /// Samples in body order.
    pub samples: Vec<Sample>,
}

/// A parsed body: families by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Exposition {
    /// Families by name (samples without a `# TYPE` form an `untyped` family of their name).
    pub families: BTreeMap<String, Family>,
}

impl Exposition {
    /// Samples named exactly `name` (`tpuport_queue_depth`, `tpuport_batch_size_bucket`).
    pub fn samples<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        let family = self.families.get(name).or_else(|| {
            ["_bucket", "_sum", "_count", "_total"]
                .iter()
                .find_map(|s| name.strip_suffix(s).and_then(|base| self.families.get(base)))
        });
        family.into_iter().flat_map(|f| f.samples.iter()).filter(move |s| s.name == name)
    }

    /// Sum of the samples named `name` whose labels include `filter`.
    #[must_use]
    pub fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.samples(name)
            .filter(|s| filter.iter().all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v)))
            .map(|s| s.value)
            .fold(0.0, |a, b| a + b)
    }

    /// Every value of label `label` among the samples named `name`, sorted, unique.
    #[must_use]
    pub fn label_values(&self, name: &str, label: &str) -> Vec<String> {
        let mut v: Vec<String> =
            self.samples(name).filter_map(|s| s.labels.get(label).cloned()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Parses a body; `origin` names it in errors.
///
/// # Errors
/// [`MonitorError::Exposition`] with the line number.
pub fn parse(text: &str, origin: &str) -> Result<Exposition, MonitorError> {
    let mut e = Exposition::default();
    // The family the current samples belong to (set by `# TYPE`).
    let mut current: Option<String> = None;
    let mut count = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let fail = |reason: String| MonitorError::Exposition {
            url: origin.to_owned(),
            line: i + 1,
            reason,
        };
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start();
            let (kw, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, body) = tail.trim_start().split_once(' ').unwrap_or((tail.trim(), ""));
            match kw {
                "HELP" => {
                    e.families.entry(name.to_owned()).or_default().help = unescape_help(body);
                }
                "TYPE" => {
                    let kind = body.trim();
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(fail(format!("unknown metric type `{kind}`")));
                    }
                    check_name(name).map_err(&fail)?;
                    e.families.entry(name.to_owned()).or_default().kind = kind.to_owned();
                    current = Some(name.to_owned());
                }
                _ => {}
            }
            continue;
        }
        let s = sample(line).map_err(&fail)?;
        count += 1;
        if count > MAX_SAMPLES {
            return Err(fail(format!("more than {MAX_SAMPLES} samples")));
        }
        let family = match &current {
            Some(f) if belongs(&s.name, f) => f.clone(),
            _ => {
                current = None;
                s.name.clone()
            }
        };
        let f = e.families.entry(family).or_default();
        if f.kind.is_empty() {
            f.kind = "untyped".to_owned();
        }
        f.samples.push(s);
    }
    Ok(e)
}

/// Whether sample `name` belongs to family `family` (histogram and summary suffixes).
fn belongs(name: &str, family: &str) -> bool {
    name == family
        || name
            .strip_prefix(family)
            .is_some_and(|s| matches!(s, "_bucket" | "_sum" | "_count" | "_total" | "_created"))
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if ok { Ok(()) } else { Err(format!("`{name}` is not a metric name")) }
}

fn sample(line: &str) -> Result<Sample, String> {
    let end = line.find(|c: char| c == '{' || c.is_whitespace()).unwrap_or(line.len());
    let name = &line[..end];
    check_name(name)?;
    let mut rest = &line[end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, tail) = label_set(after)?;
        labels = parsed;
        rest = tail;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or_else(|| format!("`{name}` has no value"))?;
    let value = parse_value(value).ok_or_else(|| format!("`{value}` is not a sample value"))?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().map_err(|_| format!("`{ts}` is not a timestamp"))?;
    }
    if fields.next().is_some() {
        return Err("trailing text after the timestamp".to_owned());
    }
    Ok(Sample { name: name.to_owned(), labels, value })
}

/// Parses `a="x",b="y"}` (after the `{`); returns the labels and the text after `}`.
fn label_set(mut s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let eq = s.find('=').ok_or("a label without `=`")?;
        let key = s[..eq].trim();
        check_name(key).map_err(|_| format!("`{key}` is not a label name"))?;
        s = s[eq + 1..].trim_start();
        let body = s.strip_prefix('"').ok_or("a label value must be quoted")?;
        let mut value = String::new();
        let mut chars = body.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err("an unterminated label value".to_owned()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                    Some((_, c)) => return Err(format!("unknown escape `\\{c}` in a label value")),
                    None => return Err("an unterminated label value".to_owned()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(key.to_owned(), value).is_some() {
            return Err(format!("label `{key}` given twice"));
        }
        s = body[close + 1..].trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        } else if !s.starts_with('}') {
            return Err("expected `,` or `}` after a label".to_owned());
        }
    }
}

fn parse_value(v: &str) -> Option<f64> {
    match v {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => v.parse::<f64>().ok(),
    }
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some(x) => out.push(x),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// GETs `url` (`http://host:port/path`; `/metrics` when the path is empty) and returns the
/// body.
///
/// # Errors
/// [`MonitorError::Scrape`]: a bad URL, no connection, a status other than 200, a body over
/// [`MAX_BODY`].
pub fn fetch(url: &str, timeout: Duration) -> Result<String, MonitorError> {
    let fail = |reason: String| MonitorError::Scrape { url: url.to_owned(), reason };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| fail("only http:// URLs are supported".to_owned()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/metrics"),
    };
    let path = if path == "/" { "/metrics" } else { path };
    let hostport =
        if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
    let addr = hostport
        .to_socket_addrs()
        .map_err(|e| fail(format!("cannot resolve {authority}: {e}")))?
        .next()
        .ok_or_else(|| fail(format!("cannot resolve {authority}")))?;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| fail(e.to_string()))?;
    s.set_read_timeout(Some(timeout)).map_err(|e| fail(e.to_string()))?;
    s.set_write_timeout(Some(timeout)).map_err(|e| fail(e.to_string()))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| fail(e.to_string()))?;
    let mut raw = Vec::new();
    s.take(MAX_BODY as u64 + 65_536).read_to_end(&mut raw).map_err(|e| fail(e.to_string()))?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| fail("no HTTP header in the answer".to_owned()))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = &raw[split + 4..];
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(fail(format!("HTTP status {status}")));
    }
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body).ok_or_else(|| fail("bad chunked body".into()))?
    } else {
        body.to_vec()
    };
    if body.len() > MAX_BODY {
        return Err(fail(format!("body over {MAX_BODY} bytes")));
    }
    String::from_utf8(body).map_err(|_| fail("the body is not UTF-8".to_owned()))
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..nl]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[nl + 2..];
        if size == 0 {
            return Some(out);
        }
        if b.len() < size + 2 || out.len() + size > MAX_BODY {
            return None;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]
    use super::*;

    #[test]
    fn parses_families_labels_escapes_and_special_values() {
        let text = "# HELP tpuport_queue_depth Requests waiting.\n# TYPE tpuport_queue_depth gauge\ntpuport_queue_depth{model=\"a\\\"b\\\\c\\nd\"} 3\n# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 2 1700000000000\nh_sum 1.5e0\nh_count 2\nloose 7\n";
        let e = parse(text, "t").unwrap();
        let q = &e.families["tpuport_queue_depth"];
        assert_eq!((q.kind.as_str(), q.help.as_str()), ("gauge", "Requests waiting."));
        assert_eq!(q.samples[0].labels["model"], "a\"b\\c\nd");
        assert_eq!(e.families["h"].samples.len(), 4);
        assert_eq!(e.sum("h_bucket", &[("le", "+Inf")]), 2.0);
        assert_eq!(e.sum("h_count", &[]), 2.0);
        assert_eq!(e.families["loose"].kind, "untyped");
    }

    #[test]
    fn bad_lines_name_the_line() {
        for (text, want) in [
            ("a{b=\"c} 1\n", "unterminated"),
            ("ok 1\na{b=c} 1\n", "quoted"),
            ("a 1\nb x\n", "not a sample value"),
            ("# TYPE a gauges\n", "unknown metric type"),
            ("1a 2\n", "not a metric name"),
            ("a{b=\"1\",b=\"2\"} 1\n", "twice"),
        ] {
            let err = parse(text, "u").unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(err.starts_with("u: line "), "{err}");
        }
    }

    #[test]
    fn dechunks() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"9\r\nabc\r\n").is_none());
    }
}
