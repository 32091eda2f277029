//! A streaming scanner for Chrome-trace JSON: finds each element of `traceEvents` (or of a
//! top-level array) as a byte slice without holding the file.
//!
//! The scanner only tracks strings and one kind of bracket per value, so finding an event costs
//! a `memchr` pass; the event itself is then deserialised from its slice by serde. Memory is the
//! read buffer (1 MiB) grown to the largest event, which is capped: a hostile file cannot make
//! it allocate without bound.
//!
//! The Trace Event Format lets a JSON-array trace end without its closing `]` (a crashed
//! process); such a trace is read to its last complete event and flagged as truncated.

use std::io::Read;

use memchr::{memchr2, memchr3};

/// Bytes read per refill.
const CHUNK: usize = 1 << 20;

/// What went wrong while scanning.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading the source failed.
    Io(std::io::Error),
    /// Not valid trace JSON at `offset`.
    Json { offset: u64, message: String },
    /// A value starting at `offset` is larger than the limit.
    TooLarge { offset: u64 },
    /// Valid JSON without an event array.
    NotATrace,
}

/// What the scan saw besides the events.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ScanStats {
    /// Bytes of JSON text read.
    pub(crate) bytes: u64,
    /// Events handed to the callback.
    pub(crate) events: u64,
    /// The text ended before the event array was closed.
    pub(crate) truncated: bool,
    /// An event array was found (a top-level array, or a `traceEvents` key).
    pub(crate) has_events: bool,
}

/// Receives what the scanner finds.
pub(crate) trait Sink {
    /// A top-level key other than `traceEvents`, with its raw JSON value.
    fn top(&mut self, key: &str, value: &[u8]);
    /// One element of the event array (raw JSON). An error message stops the scan.
    fn event(&mut self, raw: &[u8]) -> Result<(), String>;
}

struct Scanner<R> {
    src: R,
    buf: Vec<u8>,
    /// First unconsumed byte.
    start: usize,
    /// End of the filled part.
    end: usize,
    /// Absolute offset of `buf[0]`.
    base: u64,
    eof: bool,
    limit: usize,
}

/// Scans `src` (decompressed JSON text), calling `sink` for top-level keys and events. Events
/// larger than `limit` bytes are an error.
pub(crate) fn scan<R: Read>(
    src: R,
    limit: usize,
    sink: &mut dyn Sink,
) -> Result<ScanStats, ScanError> {
    let mut s = Scanner {
        src,
        buf: vec![0; CHUNK],
        start: 0,
        end: 0,
        base: 0,
        eof: false,
        limit: limit.max(1024),
    };
    let mut stats = ScanStats::default();
    s.skip_ws()?;
    if s.buf[s.start..s.end].starts_with(&[0xEF, 0xBB, 0xBF]) {
        s.start += 3;
        s.skip_ws()?;
    }
    match s.peek() {
        Some(b'[') => {
            s.start += 1;
            stats.has_events = true;
            s.events(sink, &mut stats)?;
        }
        Some(b'{') => {
            s.start += 1;
            s.object(sink, &mut stats)?;
        }
        Some(b) => {
            return Err(s.err(format!(
                "expected `{{` or `[` at the start of a trace, found `{}`",
                char::from(b)
            )));
        }
        None => return Err(s.err("the file is empty".to_owned())),
    }
    stats.bytes = s.base + s.start as u64;
    Ok(stats)
}

impl<R: Read> Scanner<R> {
    fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    fn err(&self, message: String) -> ScanError {
        ScanError::Json { offset: self.offset(), message }
    }

    /// Reads more bytes after `end`, first moving the unconsumed part to the front. Returns
    /// false at end of input.
    fn fill(&mut self) -> Result<bool, ScanError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < CHUNK / 4 {
            let want = (self.buf.len() * 2).min(self.limit + CHUNK).max(self.end + CHUNK / 4);
            if want <= self.buf.len() {
                return Err(ScanError::TooLarge { offset: self.base });
            }
            self.buf.resize(want, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ScanError::Io(e)),
            }
        }
    }

    fn skip_ws(&mut self) -> Result<(), ScanError> {
        loop {
            while self.start < self.end && self.buf[self.start].is_ascii_whitespace() {
                self.start += 1;
            }
            if self.start < self.end || !self.fill()? {
                return Ok(());
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        (self.start < self.end).then(|| self.buf[self.start])
    }

    /// Length of the JSON value at `start` (whitespace already skipped), reading more input as
    /// needed. `None` when the input ends inside the value.
    fn value_len(&mut self) -> Result<Option<usize>, ScanError> {
        let Some(first) = self.peek() else { return Ok(None) };
        let (open, close) = match first {
            b'{' => (b'{', b'}'),
            b'[' => (b'[', b']'),
            _ => (0, 0),
        };
        // Resumable state, relative to `start` (which stays put while filling).
        let mut pos = 1usize;
        let mut depth = 1usize;
        let mut in_str = first == b'"';
        let scalar = open == 0 && !in_str;
        loop {
            let hay = &self.buf[self.start..self.end];
            while pos < hay.len() {
                if in_str {
                    match memchr2(b'"', b'\\', &hay[pos..]) {
                        Some(i) => {
                            let at = pos + i;
                            if hay[at] == b'\\' {
                                if at + 1 >= hay.len() {
                                    pos = at;
                                    break;
                                }
                                pos = at + 2;
                            } else {
                                in_str = false;
                                pos = at + 1;
                                if open == 0 {
                                    return Ok(Some(pos));
                                }
                            }
                        }
                        None => pos = hay.len(),
                    }
                } else if scalar {
                    match hay[pos..]
                        .iter()
                        .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                    {
                        Some(i) => return Ok(Some(pos + i)),
                        None => pos = hay.len(),
                    }
                } else {
                    match memchr3(b'"', open, close, &hay[pos..]) {
                        Some(i) => {
                            let at = pos + i;
                            pos = at + 1;
                            let b = hay[at];
                            if b == b'"' {
                                in_str = true;
                            } else if b == open {
                                depth += 1;
                            } else {
                                depth -= 1;
                                if depth == 0 {
                                    return Ok(Some(pos));
                                }
                            }
                        }
                        None => pos = hay.len(),
                    }
                }
            }
            if self.end - self.start > self.limit {
                return Err(ScanError::TooLarge { offset: self.offset() });
            }
            if !self.fill()? {
                // A number at the very end of the input is complete.
                return Ok((scalar && pos > 0).then_some(pos));
            }
        }
    }

    fn object(&mut self, sink: &mut dyn Sink, stats: &mut ScanStats) -> Result<(), ScanError> {
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.start += 1;
                    return Ok(());
                }
                Some(b'"') => {}
                Some(b) => {
                    return Err(self.err(format!("expected a key, found `{}`", char::from(b))));
                }
                None => {
                    stats.truncated = true;
                    return Ok(());
                }
            }
            let Some(klen) = self.value_len()? else {
                stats.truncated = true;
                return Ok(());
            };
            let key: String = serde_json::from_slice(&self.buf[self.start..self.start + klen])
                .map_err(|e| self.err(format!("bad key: {e}")))?;
            self.start += klen;
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                return Err(self.err(format!("expected `:` after key `{key}`")));
            }
            self.start += 1;
            self.skip_ws()?;
            if key == "traceEvents" {
                if self.peek() != Some(b'[') {
                    return Err(self.err("`traceEvents` is not an array".to_owned()));
                }
                self.start += 1;
                stats.has_events = true;
                self.events(sink, stats)?;
                if stats.truncated {
                    return Ok(());
                }
            } else {
                let Some(vlen) = self.value_len()? else {
                    stats.truncated = true;
                    return Ok(());
                };
                sink.top(&key, &self.buf[self.start..self.start + vlen]);
                self.start += vlen;
            }
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.start += 1,
                Some(b'}') => {
                    self.start += 1;
                    return Ok(());
                }
                Some(b) => {
                    return Err(self.err(format!(
                        "expected `,` or `}}` after `{key}`, found `{}`",
                        char::from(b)
                    )));
                }
                None => {
                    stats.truncated = true;
                    return Ok(());
                }
            }
        }
    }

    fn events(&mut self, sink: &mut dyn Sink, stats: &mut ScanStats) -> Result<(), ScanError> {
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b']') => {
                    self.start += 1;
                    return Ok(());
                }
                Some(_) => {}
                None => {
                    stats.truncated = true;
                    return Ok(());
                }
            }
            let Some(len) = self.value_len()? else {
                stats.truncated = true;
                return Ok(());
            };
            let raw = &self.buf[self.start..self.start + len];
            if let Err(message) = sink.event(raw) {
                return Err(self.err(message));
            }
            stats.events += 1;
            self.start += len;
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.start += 1,
                Some(b']') => {
                    self.start += 1;
                    return Ok(());
                }
                Some(b) => {
                    return Err(self.err(format!(
                        "expected `,` or `]` between events, found `{}`",
                        char::from(b)
                    )));
                }
                None => {
                    stats.truncated = true;
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[derive(Default)]
    struct Collect {
        top: Vec<(String, String)>,
        events: Vec<String>,
    }

    impl Sink for Collect {
        fn top(&mut self, key: &str, value: &[u8]) {
            self.top.push((key.to_owned(), String::from_utf8_lossy(value).into_owned()));
        }
        fn event(&mut self, raw: &[u8]) -> Result<(), String> {
            self.events.push(String::from_utf8_lossy(raw).into_owned());
            Ok(())
        }
    }

    /// A reader that hands out one byte at a time, to exercise every refill path.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    fn run(text: &str) -> (Collect, ScanStats) {
        let mut a = Collect::default();
        let st = scan(text.as_bytes(), 1 << 20, &mut a).unwrap();
        let mut b = Collect::default();
        let st2 = scan(Trickle(text.as_bytes()), 1 << 20, &mut b).unwrap();
        assert_eq!(a.events, b.events);
        assert_eq!(a.top, b.top);
        assert_eq!(st.truncated, st2.truncated);
        (a, st)
    }

    #[test]
    fn object_form_with_keys_around_events() {
        let (c, st) = run(
            r#" {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
              "traceEvents": [ {"name": "a{}\"]", "ph": "X"}, {"args": {"x": [1, {"y": "}"}]}} , {}],
              "traceName": "t.json"} "#,
        );
        assert_eq!(c.events.len(), 3);
        assert_eq!(c.events[0], r#"{"name": "a{}\"]", "ph": "X"}"#);
        assert_eq!(c.events[2], "{}");
        let keys: Vec<&str> = c.top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["schemaVersion", "deviceProperties", "displayTimeUnit", "traceName"]);
        assert_eq!(c.top[0].1, "1");
        assert!(!st.truncated);
    }

    #[test]
    fn array_form_may_lack_its_closing_bracket() {
        let (c, st) = run(r#"[{"ph":"B","ts":1},{"ph":"E","ts":2},"#);
        assert_eq!(c.events.len(), 2);
        assert!(st.truncated);
        let (c, st) = run(r#"[{"ph":"B","ts":1},{"ph":"E","#);
        assert_eq!(c.events.len(), 1);
        assert!(st.truncated);
    }

    #[test]
    fn bad_input_names_the_offset() {
        let mut c = Collect::default();
        match scan(&b"  x"[..], 1 << 20, &mut c) {
            Err(ScanError::Json { offset, .. }) => assert_eq!(offset, 2),
            other => panic!("{other:?}"),
        }
        match scan(&br#"{"traceEvents": [{"a":1} {"b":2}]}"#[..], 1 << 20, &mut c) {
            Err(ScanError::Json { offset, message }) => {
                assert_eq!(offset, 25, "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_event_is_refused_without_reading_it_all() {
        let mut big = String::from(r#"{"traceEvents":[{"name":""#);
        big.push_str(&"x".repeat(3 << 20));
        big.push_str(r#""}]}"#);
        let mut c = Collect::default();
        match scan(big.as_bytes(), 1 << 20, &mut c) {
            Err(ScanError::TooLarge { offset }) => assert_eq!(offset, 16),
            other => panic!("{other:?}"),
        }
    }
}
