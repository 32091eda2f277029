//! Legacy checkpoints (`torch.save(..., _use_new_zipfile_serialization=False)`): five pickles
//! back to back — torch's magic number, the protocol version (1001), a `sys_info` dict, the
//! object itself (storages as persistent ids `('storage', type, key, location, numel, None)`),
//! and the list of storage keys — followed by each storage in that order as an 8-byte
//! little-endian element count and the raw bytes. Tensors point into the file itself.

use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use tpuport_model::{Framework, Model, ModelFormat, NoteLevel, WeightData};

use super::pickle::Obj;
use super::rebuild::{self, StorageRef};
use super::{Storage, finish_notes, push_tensor, read_pickle};
use crate::{FormatError, Limits};

const MAGIC: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

pub(super) fn import(path: &Path, map: &Arc<Mmap>, limits: &Limits) -> Result<Model, FormatError> {
    let data: &[u8] = map;
    let mut pos = 0usize;
    let mut next = |what: &str| -> Result<super::pickle::Pickle, FormatError> {
        let p = read_pickle(path, what, &data[pos..], limits)?;
        pos += p.consumed;
        Ok(p)
    };
    let magic = next("magic number pickle")?;
    let is_magic = match magic.get(magic.root) {
        Obj::BigInt(b) => b.as_slice() == MAGIC,
        _ => false,
    };
    if !is_magic {
        return Err(FormatError::invalid(
            path,
            "pickle stream does not start with torch's magic number",
        ));
    }
    let proto = next("protocol pickle")?;
    if proto.get(proto.root) != &Obj::Int(1001) {
        return Err(FormatError::unsupported(path, "legacy checkpoint protocol is not 1001"));
    }
    let sys = next("sys_info pickle")?;
    let mut little = true;
    if let Obj::Dict(items) = sys.get(sys.root) {
        for &(k, v) in items {
            if matches!(sys.get(k), Obj::Str(s) if s == "little_endian") {
                little = sys.get(v) != &Obj::Bool(false);
            }
        }
    }
    let obj = next("object pickle")?;
    let keys_p = next("storage key pickle")?;
    let keys: Vec<String> = match keys_p.get(keys_p.root) {
        Obj::List(v) => v
            .iter()
            .filter_map(|&k| match keys_p.get(k) {
                Obj::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => return Err(FormatError::invalid(path, "storage key pickle is not a list")),
    };

    let refs = rebuild::storages(&obj);
    let arc_path = Arc::new(path.to_path_buf());
    let mut storages: Vec<(String, Storage)> = Vec::new();
    for key in &keys {
        let Some(r) = refs.iter().find(|r| &r.key == key) else {
            // Without its type we cannot know its element size, so not where the next begins.
            break;
        };
        let el = element_size(r);
        let Some(hdr) = data.get(pos..pos + 8) else {
            return Err(FormatError::invalid(path, format!("storage {key}: truncated size field")));
        };
        let mut a = [0u8; 8];
        a.copy_from_slice(hdr);
        let numel = if little { u64::from_le_bytes(a) } else { u64::from_be_bytes(a) };
        let bytes = numel.checked_mul(el).ok_or_else(|| {
            FormatError::invalid(path, format!("storage {key}: size {numel} overflows"))
        })?;
        let start = pos as u64 + 8;
        let end = start.checked_add(bytes).filter(|&e| e <= data.len() as u64).ok_or_else(|| {
            FormatError::invalid(
                path,
                format!("storage {key}: {bytes} bytes at offset {start} run past the end of the file ({} bytes)", data.len()),
            )
        })?;
        let d = if little {
            WeightData::Mapped {
                map: map.clone(),
                path: arc_path.clone(),
                offset: start,
                len: bytes,
            }
        } else {
            WeightData::Absent { len: Some(bytes) }
        };
        storages.push((key.clone(), Storage { bytes, data: d }));
        pos = usize::try_from(end).unwrap_or(usize::MAX);
    }

    let flat = rebuild::flatten(&obj, limits.max_nesting, limits.max_items)
        .map_err(|e| FormatError::invalid(path, format!("object pickle: {e}")))?;
    let mut model = Model::empty(ModelFormat::TorchLegacy);
    model.metadata.producer = Some("torch.save (legacy)".to_owned());
    model.metadata.framework = Framework::PyTorch;
    if !little {
        model.note(
            NoteLevel::Warning,
            "torch-big-endian",
            "storages are big-endian; tensor bytes are not mapped",
        );
    }
    let mut budget = limits.max_inflated_bytes;
    for t in &flat.tensors {
        match storages.iter().find(|(k, _)| k == &t.storage.key) {
            Some((_, s)) => push_tensor(path, &mut model, t, s.bytes, &s.data, &mut budget)?,
            None => {
                let len = super::storage_bytes(t).unwrap_or(0);
                let absent = WeightData::Absent { len: None };
                push_tensor(path, &mut model, t, len, &absent, &mut budget)?;
            }
        }
    }
    finish_notes(&mut model, &flat);
    Ok(model)
}

fn element_size(r: &StorageRef) -> u64 {
    match r.dtype {
        Some(d) if !r.untyped => d.storage_bytes(1).unwrap_or(1),
        _ => 1,
    }
}
