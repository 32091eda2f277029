//! Location resolution: `loc(#loc12)` references replaced by their `#loc12 = loc(...)`
//! definitions, recursively, into one self-contained MLIR location text.

use std::collections::HashMap;

/// Largest resolved location kept; longer expansions fall back to the outermost name.
const MAX_LEN: usize = 4096;
/// Deepest alias chain followed.
const MAX_DEPTH: usize = 32;

/// Resolves aliases in location bodies, caching each alias's expansion.
#[derive(Debug)]
pub(crate) struct Resolver<'a> {
    aliases: &'a HashMap<String, String>,
    cache: HashMap<String, String>,
}

impl<'a> Resolver<'a> {
    /// A resolver over the file's `#loc` definitions.
    pub(crate) fn new(aliases: &'a HashMap<String, String>) -> Resolver<'a> {
        Resolver { aliases, cache: HashMap::new() }
    }

    /// The self-contained text of a `loc(...)` body; `None` for `unknown`.
    pub(crate) fn resolve(&mut self, raw: &str) -> Option<String> {
        let s = self.expand(raw, 0);
        let s = s.trim();
        if s.is_empty() || s == "unknown" {
            return None;
        }
        if s.len() > MAX_LEN {
            return Some(first_string(s).unwrap_or_else(|| "unknown".to_owned()));
        }
        Some(s.to_owned())
    }

    fn expand(&mut self, raw: &str, depth: usize) -> String {
        let b = raw.as_bytes();
        let mut out = String::with_capacity(raw.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    let mut j = i + 1;
                    while j < b.len() && b[j] != b'"' {
                        j += if b[j] == b'\\' { 2 } else { 1 };
                    }
                    let j = (j + 1).min(b.len());
                    out.push_str(&raw[i..j]);
                    i = j;
                }
                b'#' => {
                    let mut j = i + 1;
                    while j < b.len()
                        && (b[j].is_ascii_alphanumeric()
                            || matches!(b[j], b'_' | b'.' | b'$' | b'-'))
                    {
                        j += 1;
                    }
                    let name = &raw[i..j];
                    out.push_str(&self.alias(name, depth));
                    i = j;
                }
                _ => {
                    let ch = raw[i..].chars().next().unwrap_or(' ');
                    out.push(ch);
                    i += ch.len_utf8();
                }
            }
            if out.len() > MAX_LEN * 4 {
                break;
            }
        }
        out
    }

    fn alias(&mut self, name: &str, depth: usize) -> String {
        if let Some(c) = self.cache.get(name) {
            return c.clone();
        }
        let Some(body) = self.aliases.get(name) else {
            return "unknown".to_owned();
        };
        if depth >= MAX_DEPTH {
            return "unknown".to_owned();
        }
        let body = body.clone();
        let mut e = self.expand(&body, depth + 1);
        if e.len() > MAX_LEN {
            e = first_string(&e).unwrap_or_else(|| "unknown".to_owned());
        }
        self.cache.insert(name.to_owned(), e.clone());
        e
    }
}

/// The first string literal in a location text (its outermost name), quotes included.
fn first_string(s: &str) -> Option<String> {
    let start = s.find('"')?;
    let b = s.as_bytes();
    let mut j = start + 1;
    while j < b.len() && b[j] != b'"' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    (j < b.len()).then(|| s[start..=j].to_owned())
}

/// The most specific readable part of a location: the first name or file reference
/// (`jit(mlp)/dot_general`, `model.py:12:3`), for messages.
#[must_use]
pub fn short(loc: &str) -> String {
    first_string(loc).map_or_else(|| loc.to_owned(), |s| super::lexer::unescape(&s[1..s.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_chains() {
        let mut a = HashMap::new();
        a.insert("#loc1".to_owned(), "\"f.py\":3:4".to_owned());
        a.insert("#loc2".to_owned(), "\"jit(f)/add\"(#loc1)".to_owned());
        a.insert("#loc".to_owned(), "unknown".to_owned());
        a.insert("#self".to_owned(), "\"x\"(#self)".to_owned());
        let mut r = Resolver::new(&a);
        assert_eq!(r.resolve("#loc2").as_deref(), Some("\"jit(f)/add\"(\"f.py\":3:4)"));
        assert_eq!(r.resolve("#loc"), None);
        assert!(r.resolve("#self").is_some());
        assert_eq!(short("\"jit(f)/add\"(\"f.py\":3:4)"), "jit(f)/add");
    }
}
