//! YAML text from a JSON value, written here: block style, keys in the map's (sorted) order, strings
//! quoted whenever a YAML 1.1 or 1.2 reader could take them for anything but a string.
//!
//! Kubernetes manifests only need maps, sequences, strings, integers and booleans; the output
//! is meant for `kubectl apply` and for people reading a diff, so it is deterministic.

use serde_json::Value;

/// One YAML document (no `---`), ending with a newline.
#[must_use]
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => seq(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn map(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    for (k, v) in m {
        pad(out, indent);
        out.push_str(&string(k));
        out.push(':');
        value_after_key(out, v, indent);
    }
}

fn value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            map(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            seq(out, a, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn seq(out: &mut String, a: &[Value], indent: usize) {
    for v in a {
        pad(out, indent);
        out.push_str("- ");
        match v {
            Value::Object(m) if !m.is_empty() => {
                // The first key sits on the dash line; the rest align under it.
                let mut first = true;
                for (k, item) in m {
                    if !first {
                        pad(out, indent + 2);
                    }
                    first = false;
                    out.push_str(&string(k));
                    out.push(':');
                    value_after_key(out, item, indent + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                seq(out, inner, indent + 2);
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// A string plain when that is unambiguous, else double-quoted with JSON escapes (a JSON
/// string is a valid YAML double-quoted scalar).
fn string(s: &str) -> String {
    if plain_ok(s) { s.to_owned() } else { serde_json::Value::String(s.to_owned()).to_string() }
}

fn plain_ok(s: &str) -> bool {
    let Some(first) = s.chars().next() else { return false };
    // Words YAML 1.1 or 1.2 readers turn into booleans or null.
    const WORDS: &[&str] =
        &["y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", "nan", "inf"];
    if WORDS.iter().any(|w| s.eq_ignore_ascii_case(w)) {
        return false;
    }
    // Anything that starts like a number (or `.inf`, `-1`, `0x1F`, `1e3`, `1:20` sexagesimal).
    if first.is_ascii_digit() || matches!(first, '-' | '+' | '.') {
        return false;
    }
    if "!&*[]{}|>'\"%@`#,?:".contains(first) || first.is_whitespace() {
        return false;
    }
    if s.ends_with(char::is_whitespace) || s.contains(": ") || s.contains(" #") || s.ends_with(':')
    {
        return false;
    }
    s.chars().all(|c| !c.is_control())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn quotes_what_a_reader_would_retype() {
        let v = json!({"a": "true", "b": "8", "c": "2x4", "d": "cloud.google.com/gke-tpu-topology",
                        "e": "", "f": "a: b", "g": "-c", "h": "NO", "i": "1x1"});
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "a: \"true\"\nb: \"8\"\nc: \"2x4\"\nd: cloud.google.com/gke-tpu-topology\ne: \"\"\nf: \"a: b\"\ng: \"-c\"\nh: \"NO\"\ni: \"1x1\"\n"
        );
    }

    #[test]
    fn nests_maps_in_sequences() {
        let v = json!({"spec": {"containers": [{"name": "x", "args": ["serve", "/m"], "ports": [{"containerPort": 8000}]}], "empty": [], "none": {}}});
        assert_eq!(
            to_yaml(&v),
            "spec:\n  containers:\n  - args:\n    - serve\n    - /m\n    name: x\n    ports:\n    - containerPort: 8000\n  empty: []\n  none: {}\n"
        );
    }
}
