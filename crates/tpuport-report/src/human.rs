//! Human-readable numbers: counts, bytes, FLOPs, durations, percentages.

/// `25557032` → `25,557,032`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Bytes in binary units with one decimal: `4096` → `4.0 KiB`, `512` → `512 B`.
#[must_use]
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    #[allow(clippy::cast_precision_loss, reason = "display only")]
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// A count (parameters, FLOPs, ops) with an SI suffix and three significant digits:
/// `25557032` → `25.6M`.
#[must_use]
pub fn si(n: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    #[allow(clippy::cast_precision_loss, reason = "display only")]
    let v = n as f64;
    for (scale, suffix) in UNITS {
        if v >= scale {
            let x = v / scale;
            return if x >= 100.0 {
                format!("{x:.0}{suffix}")
            } else if x >= 10.0 {
                format!("{x:.1}{suffix}")
            } else {
                format!("{x:.2}{suffix}")
            };
        }
    }
    n.to_string()
}

/// A duration in seconds in the unit that reads best, three significant digits at most:
/// `1.5` → `1.50 s`, `0.00105` → `1.05 ms`, `2.5e-6` → `2.5 us`, `4e-8` → `40 ns`.
#[must_use]
pub fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else if seconds >= 1e-6 {
        format!("{:.1} us", seconds * 1e6)
    } else {
        format!("{:.0} ns", seconds * 1e9)
    }
}

/// A fraction as a percentage with one decimal: `0.2913` → `29.1%`.
#[must_use]
pub fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(25_557_032), "25,557,032");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4096), "4.0 KiB");
        assert_eq!(bytes(102_228_128), "97.5 MiB");
        assert_eq!(si(25_557_032), "25.6M");
        assert_eq!(si(124_439_808), "124M");
        assert_eq!(si(7), "7");
        assert_eq!(duration(1.5), "1.50 s");
        assert_eq!(duration(0.001_05), "1.05 ms");
        assert_eq!(duration(2.5e-6), "2.5 us");
        assert_eq!(duration(4e-8), "40 ns");
        assert_eq!(percent(0.2913), "29.1%");
        assert_eq!(percent(1.0), "100.0%");
    }
}
