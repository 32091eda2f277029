//! A security scan of a checkpoint's pickles: every global named, judged against the allow-list,
//! without failing on the first bad one (the importer refuses; the scan reports).

use std::path::{Path, PathBuf};

use serde::Serialize;
use tpuport_model::{Note, NoteLevel};

use super::archive::{Archive, map_file};
use super::globals::{GlobalClass, classify};
use super::pickle::{self, GlobalSeen};
use super::pickle_limits;
use crate::{FormatError, Limits};

/// One global a pickle names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GlobalUse {
    /// Module as the pickle spells it (`os`, `__builtin__`, `torch._utils`).
    pub module: String,
    /// Attribute name (`system`, `_rebuild_tensor_v2`).
    pub name: String,
    /// Verdict.
    pub class: GlobalClass,
    /// The pickle it was found in (zip member name, or `pickle #N` in a legacy stream).
    pub pickle: String,
    /// How many times it is referenced there.
    pub count: u64,
}

impl GlobalUse {
    /// `module.name`.
    #[must_use]
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.module, self.name)
    }
}

/// What [`scan`] found.
#[derive(Clone, Debug, Serialize)]
pub struct ScanReport {
    /// The file.
    pub path: PathBuf,
    /// `torch-zip`, `torch-legacy` or `pickle`.
    pub format: String,
    /// The pickles read.
    pub pickles: Vec<String>,
    /// Every distinct global, per pickle, in order of first appearance.
    pub globals: Vec<GlobalUse>,
    /// Findings: one `Security` note (code `pickle-global`) per global outside the allow-list,
    /// `Warning`s for pickles that could not be read to the end.
    pub notes: Vec<Note>,
}

impl ScanReport {
    /// Globals outside the allow-list (unknown or dangerous).
    pub fn flagged(&self) -> impl Iterator<Item = &GlobalUse> {
        self.globals.iter().filter(|g| g.class != GlobalClass::Allowed)
    }

    /// True when every global is on the allow-list and every pickle was read to the end.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.flagged().next().is_none() && !self.notes.iter().any(|n| n.level != NoteLevel::Info)
    }
}

/// Scans a checkpoint (zip, legacy stream or bare pickle) with default limits.
///
/// # Errors
/// When the file cannot be read or is neither a zip nor a pickle. A hostile or broken pickle is
/// not an error: it is reported in [`ScanReport::notes`].
pub fn scan(path: &Path) -> Result<ScanReport, FormatError> {
    scan_with(path, &Limits::default())
}

/// [`scan`] under explicit limits.
///
/// # Errors
/// As [`scan`].
pub fn scan_with(path: &Path, limits: &Limits) -> Result<ScanReport, FormatError> {
    let map = map_file(path)?;
    let mut rep = ScanReport {
        path: path.to_path_buf(),
        format: String::new(),
        pickles: Vec::new(),
        globals: Vec::new(),
        notes: Vec::new(),
    };
    if map.starts_with(b"PK\x03\x04") || map.starts_with(b"PK\x05\x06") {
        rep.format = "torch-zip".to_owned();
        let mut ar = Archive::from_map(path, map, limits)?;
        let names: Vec<String> = ar
            .members()
            .iter()
            .filter(|m| m.name.ends_with(".pkl"))
            .map(|m| m.name.clone())
            .collect();
        for name in names {
            match ar.read(&name) {
                Ok(bytes) => scan_one(&mut rep, &name, &bytes, limits),
                Err(e) => rep.notes.push(warn(format!("{name} was not scanned: {e}"))),
            }
        }
        if rep.pickles.is_empty() {
            rep.notes.push(warn("zip archive holds no .pkl member".to_owned()));
        }
    } else if map.first() == Some(&0x80) || map.first() == Some(&b'(') || map.first() == Some(&b'c')
    {
        rep.format = if map.starts_with(&super::LEGACY_MAGIC) { "torch-legacy" } else { "pickle" }
            .to_owned();
        let mut pos = 0usize;
        // A legacy checkpoint is five pickles and then raw storage bytes.
        for i in 0..5 {
            let label = format!("pickle #{i}");
            let mut seen = Vec::new();
            let r = pickle::read(&map[pos..], pickle_limits(limits), &mut seen);
            record(&mut rep, &label, &seen);
            match r {
                Ok(p) => pos += p.consumed,
                Err(e) => {
                    rep.notes.push(warn(format!("{label} could not be read to the end: {e}")));
                    break;
                }
            }
            if map.get(pos) != Some(&0x80) {
                break;
            }
        }
    } else {
        return Err(FormatError::invalid(path, "neither a zip archive nor a pickle stream"));
    }
    Ok(rep)
}

fn warn(message: String) -> Note {
    Note { level: NoteLevel::Warning, code: "pickle-unreadable".to_owned(), message }
}

fn scan_one(rep: &mut ScanReport, name: &str, bytes: &[u8], limits: &Limits) {
    let mut seen = Vec::new();
    let r = pickle::read(bytes, pickle_limits(limits), &mut seen);
    record(rep, name, &seen);
    if let Err(e) = r {
        rep.notes.push(warn(format!("{name} could not be read to the end: {e}")));
    }
}

fn record(rep: &mut ScanReport, pickle: &str, seen: &[GlobalSeen]) {
    rep.pickles.push(pickle.to_owned());
    for g in seen {
        if let Some(u) = rep
            .globals
            .iter_mut()
            .find(|u| u.pickle == pickle && u.module == g.module && u.name == g.name)
        {
            u.count += 1;
            continue;
        }
        let class = classify(&g.module, &g.name);
        if class != GlobalClass::Allowed {
            let why = if class == GlobalClass::Dangerous {
                "can execute code or reach the system"
            } else {
                "is outside the tensor allow-list"
            };
            rep.notes.push(Note {
                level: NoteLevel::Security,
                code: "pickle-global".to_owned(),
                message: format!(
                    "pickle global {}.{} ({pickle}, byte {}) {why}",
                    g.module, g.name, g.offset
                ),
            });
        }
        rep.globals.push(GlobalUse {
            module: g.module.clone(),
            name: g.name.clone(),
            class,
            pickle: pickle.to_owned(),
            count: 1,
        });
    }
}
