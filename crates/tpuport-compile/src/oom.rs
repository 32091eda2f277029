//! The compiler's messages on one line, and its out-of-memory refusal read for the bytes it
//! names (needed and available HBM).

/// The compiler's message without libtpu's source-location trace, on one line.
#[must_use]
pub fn compiler_message(e: &str) -> String {
    let body = e.split("=== Source Location Trace").next().unwrap_or(e);
    let lines: Vec<&str> = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join(" ")
}

/// `(needed, available)` bytes from libtpu's `CompileTimeHbmOom` message ("the total memory
/// required for HLO temporaries (18.83G) exceeds available HBM (15.75G)").
#[must_use]
pub fn out_of_memory(msg: &str) -> Option<(u64, u64)> {
    if !msg.contains("RESOURCE_EXHAUSTED") || !msg.contains("HBM") {
        return None;
    }
    let sizes: Vec<u64> = msg
        .split('(')
        .skip(1)
        .filter_map(|s| s.split_once(')').map(|(v, _)| v))
        .filter_map(parse_size)
        .collect();
    match sizes.as_slice() {
        [.., need, limit] => Some((*need, *limit)),
        _ => None,
    }
}

/// `18.83G`, `512.00M`, `4.0K`, `123` (binary units, as XLA prints them) to bytes.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        'T' => (&s[..s.len() - 1], 1 << 40),
        c if c.is_ascii_digit() => (s, 1),
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    #[allow(clippy::cast_precision_loss, reason = "sizes far below 2^52")]
    Some(to_u64(v * mult as f64))
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "non-negative byte counts"
)]
pub(crate) fn to_u64(x: f64) -> u64 {
    x.max(0.0).round() as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn oom_message_sizes() {
        let m = "RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total \
                 memory required for HLO temporaries (18.83G) exceeds available HBM (15.75G). HLO \
                 module: jit__lambda. See https://openxla.org/xla/errors/error_1000 for more details.";
        let (need, limit) = out_of_memory(m).unwrap_or_default();
        assert_eq!(limit, to_u64(15.75 * f64::from(1u32 << 30)));
        assert_eq!(need, to_u64(18.83 * f64::from(1u32 << 30)));
        assert_eq!(out_of_memory("INVALID_ARGUMENT: no (1G) (2G)"), None);
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn compiler_message_drops_the_trace() {
        let e = "INVALID_ARGUMENT: bad op\n  detail\n=== Source Location Trace: ===\nfoo.cc:1";
        assert_eq!(compiler_message(e), "INVALID_ARGUMENT: bad op detail");
    }
}
