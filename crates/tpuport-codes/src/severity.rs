//! How bad a finding is.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; may cost speed or accuracy.
    Info,
    /// Likely to hurt: recompilation, slow lowering, accuracy loss.
    Warning,
    /// Will fail to compile for TPU or be badly wrong.
    Error,
}

impl Severity {
    /// Every severity, lowest first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

    /// Lowercase name (`info`, `warning`, `error`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "info" => Ok(Severity::Info),
            "warning" | "warn" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            other => Err(format!("unknown severity `{other}` (expected info, warning or error)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!("warn".parse::<Severity>(), Ok(Severity::Warning));
        assert_eq!("ERROR".parse::<Severity>(), Ok(Severity::Error));
        assert!("fatal".parse::<Severity>().is_err());
        assert_eq!(Severity::Info.to_string(), "info");
        assert!(Severity::Error > Severity::Warning);
    }
}
