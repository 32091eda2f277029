//! The chip catalog: the built-in data file, user overrides, and lookup by name or alias.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::chip::Chip;
use crate::error::HwError;

/// The built-in catalog text (`data/catalog.toml`).
pub const BUILTIN_TOML: &str = include_str!("../data/catalog.toml");

/// Origin name used in errors about the built-in catalog.
pub const BUILTIN_ORIGIN: &str = "built-in";

/// Largest catalog file accepted (a catalog is a few tens of kilobytes).
pub const MAX_CATALOG_BYTES: u64 = 4 << 20;

/// Top-level keys of a catalog file.
const TOP_KEYS: [&str; 3] = ["schema", "references", "chip"];

/// The set of known chips, each figure with its source.
///
/// [`Catalog::builtin`] is the data file shipped in the binary; [`Catalog::from_file`] layers a
/// user file on top of it: a `[[chip]]` entry whose `id` (or alias) names a known chip changes
/// only the fields it gives (prices, typically), any other entry adds a chip.
#[derive(Clone, Debug)]
pub struct Catalog {
    chips: Vec<Chip>,
    references: BTreeMap<String, String>,
    /// The merged tables the chips were read from, kept so that further overrides can merge.
    raw: Vec<toml::Table>,
    origins: Vec<String>,
}

impl Catalog {
    /// The built-in catalog.
    ///
    /// # Panics
    /// Never in a released build: the built-in file is checked by this crate's tests.
    #[must_use]
    pub fn builtin() -> Catalog {
        static BUILTIN: OnceLock<Catalog> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                #[allow(clippy::expect_used, reason = "the embedded file is validated by tests")]
                Catalog::from_toml_str(BUILTIN_TOML, BUILTIN_ORIGIN)
                    .expect("built-in catalog is valid")
            })
            .clone()
    }

    /// The built-in catalog with the user file at `path` layered on top.
    ///
    /// # Errors
    /// The file cannot be read, is over [`MAX_CATALOG_BYTES`], is not TOML, or has a bad field;
    /// the error names the file and the field.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Catalog, HwError> {
        Catalog::builtin().with_file(path)
    }

    /// This catalog with the user file at `path` layered on top.
    ///
    /// # Errors
    /// As [`Catalog::from_file`].
    pub fn with_file(&self, path: impl AsRef<Path>) -> Result<Catalog, HwError> {
        let path = path.as_ref();
        let io = |source| HwError::Io { path: path.to_owned(), source };
        let size = std::fs::metadata(path).map_err(io)?.len();
        if size > MAX_CATALOG_BYTES {
            return Err(HwError::TooLarge {
                path: path.to_owned(),
                size,
                limit: MAX_CATALOG_BYTES,
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        self.with_overrides(&text, &path.display().to_string())
    }

    /// A complete catalog from TOML text (no built-in data underneath).
    ///
    /// # Errors
    /// Bad TOML or a bad field; the error names `origin` and the field.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Catalog, HwError> {
        let empty = Catalog {
            chips: Vec::new(),
            references: BTreeMap::new(),
            raw: Vec::new(),
            origins: Vec::new(),
        };
        empty.layer(text, origin, false)
    }

    /// This catalog with the TOML text `text` (named `origin` in errors) layered on top.
    ///
    /// Fields the text gives replace the same fields of the chip it names (tables merge key by
    /// key, arrays are replaced). A figure the text sets without a source gets the source
    /// "user catalog `origin`"; a price it sets without `price.confidence` gets confidence
    /// `user`.
    ///
    /// # Errors
    /// Bad TOML or a bad field; the error names `origin` and the field.
    pub fn with_overrides(&self, text: &str, origin: &str) -> Result<Catalog, HwError> {
        self.layer(text, origin, true)
    }

    /// Merges `text` over this catalog; `fill_sources` gives unsourced user figures a source.
    fn layer(&self, text: &str, origin: &str, fill_sources: bool) -> Result<Catalog, HwError> {
        let doc = parse_toml(text, origin)?;
        for key in doc.keys() {
            if !TOP_KEYS.contains(&key.as_str()) {
                return Err(syntax(
                    origin,
                    format!(
                        "unknown top-level key `{key}`; expected `schema`, `references` or `[[chip]]`"
                    ),
                ));
            }
        }
        if let Some(schema) = doc.get("schema")
            && schema.as_integer() != Some(1)
        {
            return Err(syntax(
                origin,
                format!("`schema = {schema}` is not supported; this tpuport reads schema 1"),
            ));
        }
        let mut references = self.references.clone();
        if let Some(refs) = doc.get("references") {
            let toml::Value::Table(refs) = refs else {
                return Err(syntax(
                    origin,
                    "`references` must be a table of tag = \"URL\"".to_owned(),
                ));
            };
            for (tag, url) in refs {
                let toml::Value::String(url) = url else {
                    return Err(syntax(origin, format!("`references.{tag}` must be a string")));
                };
                references.insert(tag.clone(), url.clone());
            }
        }
        let mut raw = self.raw.clone();
        let entries = match doc.get("chip") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items.clone(),
            Some(_) => {
                return Err(syntax(
                    origin,
                    "`chip` must be an array of tables: write `[[chip]]`".to_owned(),
                ));
            }
        };
        for (i, entry) in entries.into_iter().enumerate() {
            let toml::Value::Table(user) = entry else {
                return Err(syntax(origin, format!("`chip` item {i} is not a table")));
            };
            let Some(toml::Value::String(id)) = user.get("id") else {
                return Err(HwError::field(
                    origin,
                    &format!("#{}", i + 1),
                    "id",
                    "every `[[chip]]` entry needs a string `id`",
                ));
            };
            let id = id.clone();
            let target = self.find(&id).map(|c| c.id.clone());
            let user = if fill_sources { with_default_sources(user, origin) } else { user };
            match target.and_then(|t| {
                raw.iter_mut().find(|r| r.get("id").and_then(toml::Value::as_str) == Some(&t))
            }) {
                Some(existing) => merge(existing, user),
                None => raw.push(user),
            }
        }
        let mut chips = Vec::with_capacity(raw.len());
        for table in &raw {
            chips.push(Chip::from_table(origin, table.clone())?);
        }
        let mut origins = self.origins.clone();
        origins.push(origin.to_owned());
        let catalog = Catalog { chips, references, raw, origins };
        catalog.check_names(origin)?;
        Ok(catalog)
    }

    /// Every chip, in catalog order.
    #[must_use]
    pub fn chips(&self) -> &[Chip] {
        &self.chips
    }

    /// The chip with this id or alias (case-insensitive, spaces collapsed), if any.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<&Chip> {
        let want = normalize(name);
        self.chips
            .iter()
            .find(|c| normalize(&c.id) == want || c.aliases.iter().any(|a| normalize(a) == want))
    }

    /// The chip with this id or alias.
    ///
    /// # Errors
    /// [`HwError::UnknownChip`], listing the known ids.
    pub fn chip(&self, name: &str) -> Result<&Chip, HwError> {
        self.find(name).ok_or_else(|| HwError::UnknownChip {
            name: name.to_owned(),
            known: self.chips.iter().map(|c| c.id.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    /// The URL or citation behind a source tag such as `G-v5e` (written `[G-v5e]` in sources).
    #[must_use]
    pub fn reference(&self, tag: &str) -> Option<&str> {
        self.references.get(tag).map(String::as_str)
    }

    /// The source of `chip`'s `field` with each `[TAG]` followed by its URL, for reports.
    #[must_use]
    pub fn cite(&self, chip: &Chip, field: &str) -> Option<String> {
        let source = chip.source(field)?;
        let mut out = String::with_capacity(source.len() * 2);
        let mut rest = source;
        while let Some(open) = rest.find('[') {
            let (before, after) = rest.split_at(open);
            out.push_str(before);
            match after.find(']').map(|close| (&after[1..close], close)) {
                Some((tag, close)) if self.references.contains_key(tag) => {
                    out.push_str(&after[..=close]);
                    out.push_str(" (");
                    out.push_str(&self.references[tag]);
                    out.push(')');
                    rest = &after[close + 1..];
                }
                _ => {
                    out.push('[');
                    rest = &after[1..];
                }
            }
        }
        out.push_str(rest);
        Some(out)
    }

    /// Every `(tag, URL or citation)` pair.
    pub fn references(&self) -> impl Iterator<Item = (&str, &str)> {
        self.references.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The files this catalog was built from, built-in first.
    #[must_use]
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    fn check_names(&self, origin: &str) -> Result<(), HwError> {
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for chip in &self.chips {
            for (field, name) in
                std::iter::once(("id", &chip.id)).chain(chip.aliases.iter().map(|a| ("aliases", a)))
            {
                if let Some(other) = seen.insert(normalize(name), &chip.id)
                    && (other != chip.id || field == "id")
                {
                    return Err(HwError::field(
                        origin,
                        &chip.id,
                        field,
                        format!("`{name}` is already a name of chip `{other}`"),
                    ));
                }
            }
            for prefix in &chip.slice_prefixes {
                if let Some(other) =
                    self.chips.iter().find(|c| c.id != chip.id && c.slice_prefixes.contains(prefix))
                {
                    return Err(HwError::field(
                        origin,
                        &chip.id,
                        "slice_prefixes",
                        format!("`{prefix}` is already a slice prefix of chip `{}`", other.id),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Lower-case, trimmed, inner whitespace collapsed to one space.
fn normalize(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn syntax(origin: &str, message: String) -> HwError {
    HwError::Syntax { origin: origin.to_owned(), line: None, message }
}

fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, HwError> {
    text.parse::<toml::Table>().map_err(|e| HwError::Syntax {
        origin: origin.to_owned(),
        line: e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1),
        message: e.message().trim().replace('\n', " "),
    })
}

/// Deep merge: tables merge key by key, anything else replaces. The target keeps its `id`.
fn merge(target: &mut toml::Table, user: toml::Table) {
    for (key, value) in user {
        if key == "id" {
            continue;
        }
        match (target.get_mut(&key), value) {
            (Some(toml::Value::Table(t)), toml::Value::Table(u)) => merge(t, u),
            (_, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// Fills in a source for every figure a user entry sets without one, and marks user prices.
fn with_default_sources(mut user: toml::Table, origin: &str) -> toml::Table {
    let mut keys = Vec::new();
    for (key, value) in &user {
        match (key.as_str(), value) {
            ("id" | "name" | "aliases" | "kind" | "slice_prefixes" | "sources" | "vm", _) => {}
            (_, toml::Value::Table(sub)) => {
                keys.extend(
                    sub.keys().filter(|k| *k != "confidence").map(|k| format!("{key}.{k}")),
                );
            }
            _ => keys.push(key.clone()),
        }
    }
    if keys.iter().any(|k| k.starts_with("price."))
        && let Some(toml::Value::Table(price)) = user.get_mut("price")
    {
        price.entry("confidence").or_insert_with(|| toml::Value::String("user".to_owned()));
    }
    let sources = user.entry("sources").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(sources) = sources {
        for key in keys {
            sources
                .entry(key)
                .or_insert_with(|| toml::Value::String(format!("user catalog `{origin}`")));
        }
    }
    if let Some(toml::Value::Array(vms)) = user.get_mut("vm") {
        for vm in vms {
            if let toml::Value::Table(vm) = vm {
                vm.entry("source")
                    .or_insert_with(|| toml::Value::String(format!("user catalog `{origin}`")));
            }
        }
    }
    user
}
