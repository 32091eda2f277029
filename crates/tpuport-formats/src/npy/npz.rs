//! `.npz`: a zip archive of `.npy` members (`np.savez` stores them, `np.savez_compressed`
//! deflates them). Members are read within [`Limits::max_inflated_bytes`].

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;
use tpuport_model::{HostTensor, Model, ModelFormat, NoteLevel};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::{decode, encode, header, weight, write_atomic};
use crate::torch::archive::Archive;
use crate::{FormatError, Limits};

fn array_name(member: &str) -> &str {
    member.strip_suffix(".npy").unwrap_or(member)
}

/// Reads every array of an `.npz`, in archive order, with default limits.
///
/// # Errors
/// [`FormatError::Invalid`] for a malformed archive or member (named), or a member that
/// declares or inflates past the inflation limit.
pub fn read_npz(path: &Path) -> Result<Vec<(String, HostTensor)>, FormatError> {
    read_npz_with(path, &Limits::default())
}

/// [`read_npz`] under explicit limits.
///
/// # Errors
/// As [`read_npz`].
pub fn read_npz_with(
    path: &Path,
    limits: &Limits,
) -> Result<Vec<(String, HostTensor)>, FormatError> {
    let mut ar = Archive::open(path, limits)?;
    let names: Vec<String> =
        ar.members().iter().filter(|m| m.name.ends_with(".npy")).map(|m| m.name.clone()).collect();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let bytes = ar.read(&name)?;
        let t = decode(&bytes).map_err(|e| FormatError::invalid(path, format!("{name}: {e}")))?;
        out.push((array_name(&name).to_owned(), t));
    }
    Ok(out)
}

/// Writes arrays as an `.npz` (members `<name>.npy`), deflated when `compress`, atomically.
///
/// # Errors
/// [`FormatError::Unsupported`] for a dtype `.npy` cannot hold, [`FormatError::Invalid`] for a
/// duplicate name, [`FormatError::Io`] when writing fails (the target is then untouched).
pub fn write_npz(
    path: &Path,
    arrays: &[(String, HostTensor)],
    compress: bool,
) -> Result<(), FormatError> {
    let mut images = Vec::with_capacity(arrays.len());
    for (i, (name, t)) in arrays.iter().enumerate() {
        if arrays[..i].iter().any(|(n, _)| n == name) {
            return Err(FormatError::invalid(path, format!("array name `{name}` is used twice")));
        }
        let b = encode(t).map_err(|e| FormatError::unsupported(path, format!("{name}: {e}")))?;
        images.push((format!("{name}.npy"), b));
    }
    let method = if compress { CompressionMethod::Deflated } else { CompressionMethod::Stored };
    write_atomic(path, |f| {
        let mut z = ZipWriter::new(f);
        for (member, b) in &images {
            let opts = SimpleFileOptions::default()
                .compression_method(method)
                .large_file(b.len() as u64 >= u64::from(u32::MAX));
            z.start_file(member.as_str(), opts).map_err(std::io::Error::other)?;
            z.write_all(b)?;
        }
        z.finish().map_err(std::io::Error::other)?;
        Ok(())
    })
}

/// Imports an `.npz` as a weights-only model.
pub(super) fn import(path: &Path, map: Arc<Mmap>, limits: &Limits) -> Result<Model, FormatError> {
    let mut ar = Archive::from_map(path, map.clone(), limits)?;
    let mut model = Model::empty(ModelFormat::Npz);
    model.metadata.producer = Some("numpy".to_owned());
    let members = ar.members().to_vec();
    if members.iter().any(|m| m.name.ends_with("data.pkl")) {
        return Err(FormatError::invalid(
            path,
            "zip holds data.pkl: a torch checkpoint, not an .npz",
        ));
    }
    let mut budget = limits.max_inflated_bytes;
    for m in &members {
        if !m.name.ends_with(".npy") {
            model.note(
                NoteLevel::Warning,
                "npz-member",
                format!("member {} is not an .npy; skipped", m.name),
            );
            continue;
        }
        let name = array_name(&m.name).to_owned();
        let w = match ar.stored_range(m)? {
            Some((s, e)) => {
                let (s, e) = (usize::try_from(s).unwrap_or(0), usize::try_from(e).unwrap_or(0));
                let img = &map[s..e];
                let h = header::parse(img)
                    .map_err(|e| FormatError::invalid(path, format!("{}: {e}", m.name)))?;
                weight(path, &map, s as u64, img, &h, name, &mut budget)?
            }
            None => {
                let bytes = ar.read(&m.name)?;
                let t = decode(&bytes)
                    .map_err(|e| FormatError::invalid(path, format!("{}: {e}", m.name)))?;
                tpuport_model::Weight {
                    name,
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    data: tpuport_model::WeightData::Inline(Arc::from(t.into_data())),
                }
            }
        };
        model.weights.push(w);
    }
    Ok(model)
}
