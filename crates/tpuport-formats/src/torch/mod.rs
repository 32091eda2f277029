//! PyTorch checkpoints (`torch.save`): the zip format (default since torch 1.6) and the legacy
//! stream of pickles, read with a restricted unpickler that never runs code.
//!
//! A zip checkpoint holds `<prefix>/data.pkl` (the pickled object: a state dict, or a dict of
//! them), `<prefix>/data/<key>` (one member per storage, stored uncompressed and 64-byte
//! aligned by torch 2.x), `<prefix>/byteorder` and version members. The pickle is read by
//! [`pickle`] into an inert value tree; every global it names is checked against the tensor
//! allow-list in [`globals`] before anything else happens, and a checkpoint naming any other
//! global is refused with [`FormatError::Unsafe`]. [`scan`] reports the same findings without
//! failing. Tensors become weights whose bytes point into the storage members
//! ([`WeightData::Mapped`]) when contiguous and stored; otherwise they are gathered into memory
//! (non-contiguous views, bounded by the inflation limit) or left [`WeightData::Absent`]
//! (compressed members, big-endian storages).
//!
//! Names are the dotted paths through nested dicts and lists, with every wrapper key kept:
//! `torch.save({'model': sd, 'optimizer': opt.state_dict()})` gives `model.conv1.weight` and
//! `optimizer.state.0.exp_avg`. Non-tensor leaves (epochs, learning rates) are skipped.

pub(crate) mod archive;
mod globals;
mod legacy;
mod pickle;
mod rebuild;
mod scan;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tpuport_model::{Framework, Model, ModelFormat, NoteLevel, Weight, WeightData};

pub use globals::GlobalClass;
pub use scan::{GlobalUse, ScanReport, scan, scan_with};

use crate::{FormatError, ImportOptions, Importer, Limits};
use archive::Archive;
use pickle::{GlobalSeen, PickleLimits};
use rebuild::{Flat, TensorRec};

/// The first bytes of a legacy checkpoint: `PROTO 2`, then `LONG1` of torch's magic number.
pub(crate) const LEGACY_MAGIC: [u8; 14] =
    [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

/// Importer for PyTorch checkpoints (`.pt`, `.pth`, `.bin`, `.ckpt`).
#[derive(Debug)]
pub struct TorchImporter;

impl Importer for TorchImporter {
    fn name(&self) -> &'static str {
        "torch"
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let zip = head.starts_with(b"PK\x03\x04");
        let legacy = head.starts_with(&LEGACY_MAGIC);
        if legacy || (zip && first_member_name(head).is_some_and(|n| n.ends_with("data.pkl"))) {
            return true;
        }
        match ext.as_str() {
            "pt" | "pth" | "ckpt" => path.is_file(),
            // `.bin` is also ONNX external data and raw dumps: only a zip or a pickle.
            "bin" => zip || head.first() == Some(&0x80),
            _ => false,
        }
    }

    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
        import_with(path, &opts.limits)
    }
}

/// Name of the first local file header's member, from the first bytes of a zip.
pub(crate) fn first_member_name(head: &[u8]) -> Option<&str> {
    let n = usize::from(u16::from_le_bytes([*head.get(26)?, *head.get(27)?]));
    let end = (30 + n).min(head.len());
    std::str::from_utf8(head.get(30..end)?).ok()
}

/// Reads a checkpoint under `limits`.
///
/// # Errors
/// [`FormatError::Unsafe`] when the pickle names a global outside the allow-list,
/// [`FormatError::Invalid`] for malformed files, [`FormatError::Unsupported`] for TorchScript
/// archives and pre-1.0 tar checkpoints.
pub fn import_with(path: &Path, limits: &Limits) -> Result<Model, FormatError> {
    let map = archive::map_file(path)?;
    if map.starts_with(b"PK\x03\x04") || map.starts_with(b"PK\x05\x06") {
        let ar = Archive::from_map(path, map, limits)?;
        import_zip(path, ar, limits)
    } else if map.first() == Some(&0x80) {
        legacy::import(path, &map, limits)
    } else if map.len() > 262 && &map[257..262] == b"ustar" {
        Err(FormatError::unsupported(
            path,
            "tar-format checkpoint (torch < 0.4); re-save it with a current torch.save",
        ))
    } else {
        Err(FormatError::invalid(path, "neither a zip checkpoint nor a pickle stream"))
    }
}

pub(crate) fn pickle_limits(limits: &Limits) -> PickleLimits {
    PickleLimits { max_items: limits.max_items }
}

/// Refuses the file when any global is outside the allow-list.
pub(crate) fn check_globals(path: &Path, seen: &[GlobalSeen]) -> Result<(), FormatError> {
    let mut bad: Vec<String> = Vec::new();
    for g in seen {
        if globals::classify(&g.module, &g.name) != GlobalClass::Allowed {
            let q = format!("{}.{}", g.module, g.name);
            if !bad.contains(&q) {
                bad.push(q);
            }
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    let module_like =
        bad.iter().any(|q| q.starts_with("torch.nn.modules.") || q.starts_with("__main__."));
    let shown = bad.len().min(8);
    let mut list = bad[..shown].join(", ");
    if bad.len() > shown {
        list.push_str(&format!(" and {} more", bad.len() - shown));
    }
    let mut what = if bad.len() == 1 {
        format!("pickle global {list} is outside the tensor allow-list")
    } else {
        format!("pickle globals {list} are outside the tensor allow-list")
    };
    if module_like {
        what.push_str(" (a pickled nn.Module: save model.state_dict() instead)");
    }
    Err(FormatError::Unsafe { path: path.to_path_buf(), what })
}

/// Reads a pickle, refusing unsafe globals before reporting any parse error.
pub(crate) fn read_pickle(
    path: &Path,
    what: &str,
    data: &[u8],
    limits: &Limits,
) -> Result<pickle::Pickle, FormatError> {
    let mut seen = Vec::new();
    let r = pickle::read(data, pickle_limits(limits), &mut seen);
    check_globals(path, &seen)?;
    r.map_err(|e| FormatError::invalid(path, format!("{what}: {e}")))
}

fn find_prefix(path: &Path, ar: &Archive) -> Result<String, FormatError> {
    let mut prefixes = ar.members().iter().filter_map(|m| {
        let p = m.name.strip_suffix("data.pkl")?;
        (p.is_empty() || (p.ends_with('/') && p.matches('/').count() == 1)).then(|| p.to_owned())
    });
    let Some(prefix) = prefixes.next() else {
        let npy = ar.members().iter().any(|m| m.name.ends_with(".npy"));
        return Err(FormatError::invalid(
            path,
            if npy {
                "zip archive of .npy members (an .npz), not a torch checkpoint".to_owned()
            } else {
                "zip archive has no <prefix>/data.pkl: not a torch.save checkpoint".to_owned()
            },
        ));
    };
    if ar.member(&format!("{prefix}constants.pkl")).is_some()
        || ar.members().iter().any(|m| m.name.starts_with(&format!("{prefix}code/")))
    {
        return Err(FormatError::unsupported(
            path,
            "TorchScript archive (torch.jit.save); save the state_dict with torch.save instead",
        ));
    }
    Ok(prefix)
}

fn small_text(ar: &mut Archive, name: &str) -> Option<String> {
    let m = ar.member(name)?;
    if m.size > 64 {
        return None;
    }
    let b = ar.read(name).ok()?;
    Some(String::from_utf8_lossy(&b).trim().to_owned())
}

fn import_zip(path: &Path, mut ar: Archive, limits: &Limits) -> Result<Model, FormatError> {
    let prefix = find_prefix(path, &ar)?;
    let pkl_name = format!("{prefix}data.pkl");
    let pkl = ar.read(&pkl_name)?;
    let p = read_pickle(path, &pkl_name, &pkl, limits)?;
    let flat = rebuild::flatten(&p, limits.max_nesting, limits.max_items)
        .map_err(|e| FormatError::invalid(path, format!("{pkl_name}: {e}")))?;

    let mut model = Model::empty(ModelFormat::TorchZip);
    model.metadata.producer = Some("torch.save".to_owned());
    model.metadata.framework = Framework::PyTorch;
    let byteorder = small_text(&mut ar, &format!("{prefix}byteorder"));
    for (key, member) in [
        ("torch.format_version", ".format_version"),
        ("torch.archive_version", "version"),
        ("torch.storage_alignment", ".storage_alignment"),
        ("torch.byteorder", "byteorder"),
    ] {
        if let Some(v) = small_text(&mut ar, &format!("{prefix}{member}")) {
            model.metadata.properties.push((key.to_owned(), v));
        }
    }
    model.metadata.producer_version = small_text(&mut ar, &format!("{prefix}version"));
    let big_endian = byteorder.as_deref() == Some("big");
    if big_endian {
        model.note(
            NoteLevel::Warning,
            "torch-big-endian",
            "storages are big-endian; tensor bytes are not mapped",
        );
    }

    let mut storages: HashMap<String, Storage> = HashMap::new();
    let mut gather_budget = limits.max_inflated_bytes;
    for t in &flat.tensors {
        if !storages.contains_key(&t.storage.key) {
            let s = zip_storage(path, &ar, &prefix, t)?;
            storages.insert(t.storage.key.clone(), s);
        }
        let s = &storages[&t.storage.key];
        let data = if big_endian { WeightData::Absent { len: None } } else { s.data.clone() };
        push_tensor(path, &mut model, t, s.bytes, &data, &mut gather_budget)?;
    }
    finish_notes(&mut model, &flat);
    Ok(model)
}

/// A storage's bytes: the member's range in the mapping, or absent.
pub(crate) struct Storage {
    /// Size in bytes.
    pub bytes: u64,
    /// Where the bytes are (`Mapped` over the whole storage, or `Absent`).
    pub data: WeightData,
}

fn zip_storage(
    path: &Path,
    ar: &Archive,
    prefix: &str,
    t: &TensorRec,
) -> Result<Storage, FormatError> {
    let name = format!("{prefix}data/{}", t.storage.key);
    let Some(m) = ar.member(&name) else {
        return Err(FormatError::invalid(
            path,
            format!("tensor {}: storage member {name} is missing", t.name),
        ));
    };
    let expected = storage_bytes(t);
    if expected != Some(m.size) {
        return Err(FormatError::invalid(
            path,
            format!(
                "storage {name} holds {} bytes but its persistent id declares {} {} elements",
                m.size,
                t.storage.numel,
                if t.storage.untyped { "u8".to_owned() } else { t.dtype.to_string() },
            ),
        ));
    }
    let data = match ar.stored_range(m)? {
        Some((start, end)) => WeightData::Mapped {
            map: ar.map().clone(),
            path: Arc::new(path.to_path_buf()),
            offset: start,
            len: end - start,
        },
        None => WeightData::Absent { len: Some(m.size) },
    };
    Ok(Storage { bytes: m.size, data })
}

/// Bytes of the storage a tensor views, as its persistent id declares them.
pub(crate) fn storage_bytes(t: &TensorRec) -> Option<u64> {
    if t.storage.untyped { Some(t.storage.numel) } else { t.dtype.storage_bytes(t.storage.numel) }
}

/// Adds one tensor, viewing `storage` (whose total size is `storage_len`).
pub(crate) fn push_tensor(
    path: &Path,
    model: &mut Model,
    t: &TensorRec,
    storage_len: u64,
    storage: &WeightData,
    gather_budget: &mut u64,
) -> Result<(), FormatError> {
    let bad = |what: String| FormatError::invalid(path, format!("tensor {}: {what}", t.name));
    let el = t.dtype.storage_bytes(1).unwrap_or(1);
    let elements = tpuport_model::Shape::fixed(&t.shape)
        .elements()
        .map_err(|_| bad(format!("shape {:?} overflows", t.shape)))?;
    let nbytes = t.dtype.storage_bytes(elements).ok_or_else(|| bad("size overflows".to_owned()))?;
    let reach = t
        .extent()
        .and_then(|e| e.checked_mul(el))
        .ok_or_else(|| bad("view extent overflows".to_owned()))?;
    if reach > storage_len {
        return Err(bad(format!(
            "view (offset {}, size {:?}, stride {:?}) reaches byte {reach} of a {storage_len}-byte storage",
            t.offset, t.shape, t.stride
        )));
    }
    let data = match storage {
        WeightData::Mapped { map: m, path: p, offset, .. } if t.is_contiguous() => {
            WeightData::Mapped {
                map: m.clone(),
                path: p.clone(),
                offset: offset + t.offset * el,
                len: nbytes,
            }
        }
        WeightData::Mapped { map, offset, len, .. } if nbytes <= *gather_budget => {
            *gather_budget -= nbytes;
            let (s, e) =
                (usize::try_from(*offset).unwrap_or(0), usize::try_from(offset + len).unwrap_or(0));
            WeightData::Inline(gather(t, &map[s..e], el))
        }
        _ => WeightData::Absent { len: Some(nbytes) },
    };
    if !model.weights.is_empty() && model.weights.by_name(&t.name).is_some() {
        model.note(
            NoteLevel::Warning,
            "duplicate-tensor",
            format!("tensor {} appears twice", t.name),
        );
    }
    model.weights.push(Weight {
        name: t.name.clone(),
        dtype: t.dtype,
        shape: t.shape.clone(),
        data,
    });
    Ok(())
}

/// Copies a strided view into row-major order (bounds were checked by the caller).
fn gather(t: &TensorRec, storage: &[u8], el: u64) -> Arc<[u8]> {
    let n: u64 = t.shape.iter().product();
    let el = usize::try_from(el).unwrap_or(1);
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0) * el);
    let mut idx = vec![0u64; t.shape.len()];
    for _ in 0..n {
        let off = t.offset + idx.iter().zip(&t.stride).map(|(i, s)| i * s).sum::<u64>();
        let b = usize::try_from(off).unwrap_or(0) * el;
        out.extend_from_slice(&storage[b..b + el]);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < t.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Arc::from(out)
}

pub(crate) fn finish_notes(model: &mut Model, flat: &Flat) {
    for (name, why) in &flat.skipped {
        model.note(NoteLevel::Warning, "torch-tensor-skipped", format!("tensor {name}: {why}"));
    }
    if flat.other > 0 {
        model.note(
            NoteLevel::Info,
            "torch-non-tensor",
            format!("{} non-tensor entries (ints, strings, devices) were skipped", flat.other),
        );
    }
}
