//! Text inputs: one pass over the lines feeds three parsers, since one captured stderr often
//! holds a metrics report, `PT_XLA_DEBUG` blocks and JAX log lines together.

pub mod jax_log;
pub mod metrics;
pub mod xla_debug;

use std::io::BufRead;

/// Longest line kept; the rest of a longer line is skipped.
const MAX_LINE: usize = 1 << 20;

/// What a text file held.
#[derive(Debug, Default)]
pub(crate) struct TextEvidence {
    pub(crate) metrics: Option<metrics::MetricsReport>,
    pub(crate) xla_debug: Option<xla_debug::XlaDebugLog>,
    pub(crate) jax: Option<jax_log::JaxLog>,
    /// Bytes read.
    pub(crate) bytes: u64,
}

impl TextEvidence {
    pub(crate) fn is_empty(&self) -> bool {
        self.metrics.is_none() && self.xla_debug.is_none() && self.jax.is_none()
    }
}

/// Reads every line of `r` (bounded per line).
pub(crate) fn read_text(mut r: impl BufRead) -> std::io::Result<TextEvidence> {
    let mut m = metrics::MetricsParser::default();
    let mut x = xla_debug::XlaDebugParser::default();
    let mut j = jax_log::JaxLogParser::default();
    let mut buf = Vec::new();
    let mut no = 0usize;
    let mut bytes = 0u64;
    loop {
        buf.clear();
        let n = read_line_capped(&mut r, &mut buf)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        no += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        m.line(line, no);
        x.line(line, no);
        j.line(line, no);
    }
    Ok(TextEvidence { metrics: m.finish(), xla_debug: x.finish(), jax: j.finish(), bytes })
}

/// Reads one line into `buf` (at most [`MAX_LINE`] bytes kept); returns the bytes consumed.
fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let (done, used) = {
            let avail = match r.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(consumed);
            }
            let (done, used) = match memchr::memchr(b'\n', avail) {
                Some(i) => (true, i + 1),
                None => (false, avail.len()),
            };
            let room = MAX_LINE.saturating_sub(buf.len());
            buf.extend_from_slice(&avail[..used.min(room)]);
            (done, used)
        };
        r.consume(used);
        consumed += used;
        if done {
            return Ok(consumed);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn long_lines_are_cut_not_held() {
        let mut text = "x".repeat(3 * MAX_LINE);
        text.push_str("\nCounter: MarkStep\n  Value: 3\n");
        let ev = read_text(std::io::BufReader::new(text.as_bytes())).unwrap();
        assert_eq!(ev.metrics.unwrap().counter("MarkStep"), Some(3));
        assert_eq!(ev.bytes, text.len() as u64);
    }
}
