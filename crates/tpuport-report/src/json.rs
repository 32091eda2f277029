//! JSON output: every verb's `--format json` goes through [`to_pretty`], so all of them are
//! pretty-printed the same way and end with a newline.

use serde::Serialize;

use crate::ReportError;

/// `value` as pretty JSON (two-space indent) with a trailing newline.
///
/// # Errors
/// When `value` cannot be serialised ([`ReportError::Json`]).
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(value).map_err(ReportError::Json)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn pretty_with_a_trailing_newline() {
        let v = serde_json::json!({ "a": [1, 2], "b": null });
        assert_eq!(
            to_pretty(&v).unwrap(),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": null\n}\n"
        );
    }

    #[test]
    fn a_value_json_cannot_hold_is_an_error() {
        let mut m = BTreeMap::new();
        m.insert((1, 2), "tuple keys are not JSON object keys");
        let e = to_pretty(&m).unwrap_err();
        assert!(e.to_string().contains("serialising the report"), "{e}");
    }
}
