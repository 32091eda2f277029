//! Typed, field-named reading of one TOML table of a catalog.
//!
//! The catalog is read by hand rather than through `serde` derive so that every error names the
//! file, the chip and the dotted field (`peak.bf16`), in one line, and so that an unknown key is
//! an error listing the known ones.

use crate::error::HwError;
use crate::units::{self, Quantity};

/// Takes typed values out of a table; leftover keys are errors at [`Reader::finish`].
pub(crate) struct Reader<'a> {
    origin: &'a str,
    chip: &'a str,
    prefix: String,
    table: toml::Table,
    asked: Vec<&'static str>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(origin: &'a str, chip: &'a str, prefix: &str, table: toml::Table) -> Self {
        Reader { origin, chip, prefix: prefix.to_owned(), table, asked: Vec::new() }
    }

    /// The dotted field name of `key` in this table.
    pub(crate) fn path(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> HwError {
        HwError::field(self.origin, self.chip, &self.path(key), message)
    }

    fn take(&mut self, key: &'static str) -> Option<toml::Value> {
        self.asked.push(key);
        self.table.remove(key)
    }

    pub(crate) fn string(&mut self, key: &'static str) -> Result<Option<String>, HwError> {
        match self.take(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s)),
            Some(toml::Value::String(_)) => Err(self.error(key, "must not be empty")),
            Some(other) => {
                Err(self.error(key, format!("expected a string, found a {}", other.type_str())))
            }
        }
    }

    pub(crate) fn required_string(&mut self, key: &'static str) -> Result<String, HwError> {
        self.string(key)?.ok_or_else(|| self.error(key, "is required"))
    }

    pub(crate) fn strings(&mut self, key: &'static str) -> Result<Vec<String>, HwError> {
        let Some(value) = self.take(key) else { return Ok(Vec::new()) };
        let toml::Value::Array(items) = value else {
            return Err(self.error(
                key,
                format!("expected an array of strings, found a {}", value.type_str()),
            ));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                toml::Value::String(s) if !s.trim().is_empty() => Ok(s),
                other => Err(self
                    .error(key, format!("item {i}: expected a non-empty string, found `{other}`"))),
            })
            .collect()
    }

    /// A positive integer count.
    pub(crate) fn count(&mut self, key: &'static str) -> Result<Option<u32>, HwError> {
        match self.take(key) {
            None => Ok(None),
            Some(toml::Value::Integer(i)) => match u32::try_from(i) {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.error(key, format!("`{i}` must be a positive integer below 2^32; leave the field out when it is unknown"))),
            },
            Some(other) => Err(self.error(key, format!("expected a positive integer, found `{other}`"))),
        }
    }

    /// A figure with a unit, converted to its base unit.
    pub(crate) fn figure(
        &mut self,
        key: &'static str,
        q: Quantity,
    ) -> Result<Option<f64>, HwError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => units::parse(&v, q).map(Some).map_err(|m| self.error(key, m)),
        }
    }

    /// One of a fixed set of spellings.
    pub(crate) fn choice<T: Copy>(
        &mut self,
        key: &'static str,
        choices: &[(&'static str, T)],
    ) -> Result<Option<T>, HwError> {
        let Some(s) = self.string(key)? else { return Ok(None) };
        choices.iter().find(|(name, _)| *name == s).map(|(_, t)| Some(*t)).ok_or_else(|| {
            let names: Vec<_> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
            self.error(key, format!("`{s}` is not one of {}", names.join(", ")))
        })
    }

    /// A nested table, read with its own reader.
    pub(crate) fn table(&mut self, key: &'static str) -> Result<Option<Reader<'a>>, HwError> {
        match self.take(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => {
                Ok(Some(Reader::new(self.origin, self.chip, &format!("{}.", self.path(key)), t)))
            }
            Some(other) => {
                Err(self.error(key, format!("expected a table, found a {}", other.type_str())))
            }
        }
    }

    /// An array of tables (`[[chip.vm]]`), each read with its own reader.
    pub(crate) fn tables(&mut self, key: &'static str) -> Result<Vec<Reader<'a>>, HwError> {
        let Some(value) = self.take(key) else { return Ok(Vec::new()) };
        let toml::Value::Array(items) = value else {
            return Err(self
                .error(key, format!("expected an array of tables, found a {}", value.type_str())));
        };
        let path = self.path(key);
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                toml::Value::Table(t) => {
                    Ok(Reader::new(self.origin, self.chip, &format!("{path}[{i}]."), t))
                }
                other => Err(self.error(
                    key,
                    format!("item {i}: expected a table, found a {}", other.type_str()),
                )),
            })
            .collect()
    }

    /// All remaining entries as string pairs (the `sources` table).
    pub(crate) fn string_map(self) -> Result<Vec<(String, String)>, HwError> {
        let mut out = Vec::with_capacity(self.table.len());
        for (k, v) in &self.table {
            match v {
                toml::Value::String(s) if !s.trim().is_empty() => out.push((k.clone(), s.clone())),
                other => {
                    return Err(
                        self.error(k, format!("expected a non-empty string, found `{other}`"))
                    );
                }
            }
        }
        Ok(out)
    }

    /// Fails on the first key nobody asked for, suggesting the nearest known one.
    pub(crate) fn finish(self) -> Result<(), HwError> {
        let Some(key) = self.table.keys().next() else { return Ok(()) };
        let nearest =
            self.asked.iter().map(|k| (edit_distance(key, k), *k)).min().filter(|(d, _)| *d <= 3);
        let message = match nearest {
            Some((_, k)) => format!("unknown field; did you mean `{}`?", self.path(k)),
            None => {
                let known: Vec<_> = self.asked.iter().map(|k| format!("`{k}`")).collect();
                format!("unknown field; known fields here: {}", known.join(", "))
            }
        };
        Err(self.error(key, message))
    }
}

/// Levenshtein distance, for "did you mean" hints on short keys.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
