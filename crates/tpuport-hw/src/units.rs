//! Quantities with units, as the catalog writes them (`"197 TFLOP/s"`, `"16 GiB"`).
//!
//! A catalog value is either a string `"<number> <unit>"` or a bare number in the base unit
//! (bytes, bytes per second, FLOP/s, watts, US dollars per hour). Writing the unit keeps the
//! data file readable next to its sources, which quote figures in their own units.

/// What a figure measures; fixes the accepted units and the base unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quantity {
    /// Bytes (base unit: byte).
    Bytes,
    /// Bytes per second.
    Bandwidth,
    /// Operations per second (FLOP/s or integer OP/s).
    Compute,
    /// Watts.
    Power,
    /// US dollars per hour.
    Price,
}

impl Quantity {
    /// A human description of the accepted units, for error messages.
    fn expected(self) -> &'static str {
        match self {
            Quantity::Bytes => {
                "a size such as \"16 GiB\" or \"80 GB\" (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            }
            Quantity::Bandwidth => {
                "a bandwidth such as \"819 GB/s\" or \"100 Gbit/s\" (B/s, MB/s, GB/s, GiB/s, TB/s, Mbit/s, Gbit/s, Tbit/s)"
            }
            Quantity::Compute => {
                "a rate such as \"197 TFLOP/s\" or \"393 TOP/s\" (FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s, OP/s, GOP/s, TOP/s, POP/s)"
            }
            Quantity::Power => "a power such as \"700 W\" (W, kW)",
            Quantity::Price => "a price such as \"1.20 USD/h\"",
        }
    }

    /// The factor that turns one `unit` into the base unit, if `unit` measures this quantity.
    fn factor(self, unit: &str) -> Option<f64> {
        const KI: f64 = 1024.0;
        let bytes = |u: &str| -> Option<f64> {
            Some(match u {
                "B" => 1.0,
                "KB" => 1e3,
                "MB" => 1e6,
                "GB" => 1e9,
                "TB" => 1e12,
                "KiB" => KI,
                "MiB" => KI * KI,
                "GiB" => KI * KI * KI,
                "TiB" => KI * KI * KI * KI,
                _ => return None,
            })
        };
        match self {
            Quantity::Bytes => bytes(unit),
            Quantity::Bandwidth => {
                let per_s = unit.strip_suffix("/s")?;
                match per_s {
                    "Mbit" => Some(1e6 / 8.0),
                    "Gbit" => Some(1e9 / 8.0),
                    "Tbit" => Some(1e12 / 8.0),
                    other => bytes(other),
                }
            }
            Quantity::Compute => Some(match unit {
                "FLOP/s" | "OP/s" => 1.0,
                "GFLOP/s" | "GOP/s" => 1e9,
                "TFLOP/s" | "TOP/s" => 1e12,
                "PFLOP/s" | "POP/s" => 1e15,
                _ => return None,
            }),
            Quantity::Power => Some(match unit {
                "W" => 1.0,
                "kW" => 1e3,
                _ => return None,
            }),
            Quantity::Price => (unit == "USD/h").then_some(1.0),
        }
    }
}

/// Parses a catalog value of the given quantity into its base unit.
///
/// The result is finite and strictly positive: a figure that is unknown is left out of the
/// catalog, never written as zero.
pub(crate) fn parse(value: &toml::Value, q: Quantity) -> Result<f64, String> {
    let number = match value {
        toml::Value::Integer(i) => {
            #[allow(clippy::cast_precision_loss, reason = "catalog figures are far below 2^53")]
            let f = *i as f64;
            f
        }
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => parse_text(s, q)?,
        other => {
            return Err(format!("expected {}, found a {}", q.expected(), other.type_str()));
        }
    };
    if !number.is_finite() || number <= 0.0 {
        return Err(format!(
            "`{value}` must be a positive number; leave the field out when it is unknown"
        ));
    }
    Ok(number)
}

fn parse_text(s: &str, q: Quantity) -> Result<f64, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_whitespace()) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    let value: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{s}` does not start with a number; expected {}", q.expected()))?;
    if unit.is_empty() {
        return Err(format!("`{s}` has no unit; expected {}", q.expected()));
    }
    let hint = match unit {
        "GBps" | "Gbps" | "TBps" | "MBps" | "Mbps" => {
            " (write `GB/s` for bytes or `Gbit/s` for bits; `Gbps` and `GBps` are ambiguous)"
        }
        _ => "",
    };
    let factor = q.factor(unit).ok_or_else(|| {
        format!("unknown unit `{unit}` in `{s}`{hint}; expected {}", q.expected())
    })?;
    Ok(value * factor)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn text(s: &str) -> toml::Value {
        toml::Value::String(s.to_owned())
    }

    #[test]
    fn units_convert_to_base() {
        assert_eq!(parse(&text("16 GiB"), Quantity::Bytes), Ok(16.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(parse(&text("80 GB"), Quantity::Bytes), Ok(80e9));
        assert_eq!(parse(&text("819 GB/s"), Quantity::Bandwidth), Ok(819e9));
        assert_eq!(parse(&text("100 Gbit/s"), Quantity::Bandwidth), Ok(12.5e9));
        assert_eq!(parse(&text("197 TFLOP/s"), Quantity::Compute), Ok(197e12));
        assert_eq!(parse(&text("1.2 USD/h"), Quantity::Price), Ok(1.2));
        assert_eq!(parse(&toml::Value::Integer(700), Quantity::Power), Ok(700.0));
    }

    #[test]
    fn bad_values_say_why() {
        let e = parse(&text("819 GBps"), Quantity::Bandwidth).unwrap_err();
        assert!(e.contains("ambiguous"), "{e}");
        let e = parse(&text("16 GiB"), Quantity::Compute).unwrap_err();
        assert!(e.contains("unknown unit `GiB`"), "{e}");
        let e = parse(&text("lots GB"), Quantity::Bytes).unwrap_err();
        assert!(e.contains("does not start with a number"), "{e}");
        let e = parse(&text("0 W"), Quantity::Power).unwrap_err();
        assert!(e.contains("positive"), "{e}");
        let e = parse(&toml::Value::Boolean(true), Quantity::Price).unwrap_err();
        assert!(e.contains("found a boolean"), "{e}");
        let e = parse(&text("12"), Quantity::Bytes).unwrap_err();
        assert!(e.contains("no unit"), "{e}");
    }
}
