//! The input: which files, in which order, how they split into parts, and how one window of
//! rows is read.
//!
//! A source is a folder (walked recursively, sorted by relative path), one file, or a glob on
//! the last path component (`shards/*.npy`). Files are tensor shards (`.npy`, `.npz`,
//! `.safetensors`: rows along the leading dimension) or images (`.jpg`, `.jpeg`, `.png`: one
//! row each); one source holds one kind. The order, and so every row's part, depends only on
//! the file names and headers, never on the run: that is what makes shards and resumed runs
//! write the same bytes as one run.

use std::io::{Read as _, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use tpuport_exec::TensorSig;
use tpuport_model::DType;

use crate::error::{BatchError, Result};
use crate::image::ImageSpec;

/// What a source holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tensors,
    Images,
}

/// The files of a source, sorted.
#[derive(Debug)]
pub(crate) struct Listing {
    /// Keys are paths relative to this folder.
    pub(crate) root: PathBuf,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) kind: Kind,
}

impl Listing {
    /// The key of file `i`: its path relative to the source root.
    pub(crate) fn key(&self, i: usize) -> String {
        let p = &self.files[i];
        p.strip_prefix(&self.root).unwrap_or(p).to_string_lossy().into_owned()
    }
}

fn kind_of(p: &Path) -> Option<Kind> {
    let ext = p.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "npy" | "npz" | "safetensors" | "parquet" => Some(Kind::Tensors),
        "jpg" | "jpeg" | "png" => Some(Kind::Images),
        _ => None,
    }
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character).
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some(('*', rest)) => (0..=name.len()).any(|i| glob_match(rest, &name[i..])),
        Some(('?', rest)) => !name.is_empty() && glob_match(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && glob_match(rest, &name[1..]),
    }
}

/// Lists `input`.
///
/// # Errors
/// A missing source, no usable file, or a source mixing images and tensor files.
pub(crate) fn list(input: &Path) -> Result<Listing> {
    let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (root, mut files) = if name.contains(['*', '?']) {
        let dir = match input.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let pat: Vec<char> = name.chars().collect();
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| BatchError::io(&dir, e))? {
            let e = e.map_err(|e| BatchError::io(&dir, e))?;
            let n: Vec<char> = e.file_name().to_string_lossy().chars().collect();
            if glob_match(&pat, &n) && e.path().is_file() {
                files.push(e.path());
            }
        }
        (dir, files)
    } else if input.is_dir() {
        let mut files = Vec::new();
        walk(input, &mut files, 0)?;
        (input.to_path_buf(), files)
    } else if input.is_file() {
        let dir = input.parent().map(Path::to_path_buf).unwrap_or_default();
        (dir, vec![input.to_path_buf()])
    } else {
        return Err(BatchError::io(
            input,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        ));
    };
    files.retain(|f| kind_of(f).is_some());
    files.sort();
    let mut kinds = files.iter().filter_map(|f| kind_of(f));
    let Some(kind) = kinds.next() else {
        return Err(BatchError::invalid(
            input.display().to_string(),
            "no .npy, .npz, .safetensors, .parquet, .jpg, .jpeg or .png file",
        ));
    };
    if kinds.any(|k| k != kind) {
        return Err(BatchError::invalid(
            input.display().to_string(),
            "mixes images and tensor files; give one kind per run",
        ));
    }
    Ok(Listing { root, files, kind })
}

/// Folder depth walked at most (a symlink loop ends here).
const MAX_DEPTH: usize = 32;

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    for e in std::fs::read_dir(dir).map_err(|e| BatchError::io(dir, e))? {
        let e = e.map_err(|e| BatchError::io(dir, e))?;
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            walk(&p, out, depth + 1)?;
        } else if p.is_file() {
            out.push(p);
        }
    }
    Ok(())
}

/// Where one input's rows lie in a tensor file.
#[derive(Clone, Debug)]
pub(crate) enum Rows {
    /// Row 0 of each model input starts at this byte; rows are contiguous (`.npy`,
    /// safetensors).
    Offsets(Vec<u64>),
    /// An `.npz`: the members, in model-input order, read whole when a window needs them.
    Npz(Vec<String>),
    /// A Parquet file: the column of each model input.
    Parquet(Vec<usize>),
}

/// A tensor shard, opened.
#[derive(Clone, Debug)]
pub(crate) struct TensorFile {
    pub(crate) path: PathBuf,
    pub(crate) key: String,
    /// Rows the header declares.
    pub(crate) rows: u64,
    /// Rows whose bytes are all in the file (fewer than `rows` when it is truncated).
    pub(crate) complete: u64,
    pub(crate) data: Rows,
}

/// Opens a tensor shard against the model's inputs. `Ok(Err(reason))` is a bad file (recorded,
/// skipped); `Err` stops the run.
pub(crate) fn open_tensor_file(
    path: &Path,
    key: String,
    inputs: &[TensorSig],
) -> Result<std::result::Result<TensorFile, String>> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let file_len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => return Ok(Err(e.to_string())),
    };
    if ext == "parquet" {
        return Ok(crate::parquet::open(path, inputs).map(|(rows, cols)| TensorFile {
            path: path.to_path_buf(),
            key,
            rows,
            complete: rows,
            data: Rows::Parquet(cols),
        }));
    }
    // (name, dtype, shape, start offset or None for npz)
    let arrays: Vec<(String, DType, Vec<u64>, Option<u64>)> = match ext.as_str() {
        "npy" => {
            if inputs.len() != 1 {
                return Err(BatchError::invalid(
                    path.display().to_string(),
                    format!(
                        "the model takes {} inputs; give .npz or safetensors shards with one \
                         array per input name",
                        inputs.len()
                    ),
                ));
            }
            match tpuport_formats::npy::read_npy_layout(path) {
                Ok(l) if !l.c_order_le => {
                    return Ok(Err(
                        "Fortran-order or big-endian .npy; rewrite it C-order little-endian"
                            .to_owned(),
                    ));
                }
                Ok(l) => vec![(inputs[0].name.clone(), l.dtype, l.shape, Some(l.data_start))],
                Err(e) => return Ok(Err(one_line(&e.to_string(), path))),
            }
        }
        "safetensors" => {
            let limits = tpuport_formats::Limits::default();
            match tpuport_formats::safetensors::read_header(path, &limits) {
                Ok(h) => h
                    .tensors
                    .iter()
                    .map(|t| {
                        (t.name.clone(), t.dtype, t.shape.clone(), Some(h.data_start + t.begin))
                    })
                    .collect(),
                Err(e) => return Ok(Err(one_line(&e.to_string(), path))),
            }
        }
        _ => match tpuport_formats::npy::read_npz(path) {
            Ok(v) => v.into_iter().map(|(n, t)| (n, t.dtype, t.shape, None)).collect(),
            Err(e) => return Ok(Err(one_line(&e.to_string(), path))),
        },
    };
    let mut rows = None;
    let mut starts = Vec::new();
    let mut members = Vec::new();
    for sig in inputs {
        let found = if arrays.len() == 1 && inputs.len() == 1 {
            arrays.first()
        } else {
            arrays.iter().find(|a| a.0 == sig.name)
        };
        let Some((name, dtype, shape, start)) = found else {
            let have: Vec<&str> = arrays.iter().map(|a| a.0.as_str()).collect();
            return Ok(Err(format!(
                "no array named `{}` (the model's input); the file holds: {}",
                sig.name,
                have.join(", ")
            )));
        };
        if *dtype != sig.dtype || shape.get(1..) != Some(&sig.row_shape[..]) {
            return Ok(Err(format!(
                "array `{name}` is {dtype}{shape:?}, the model's input `{}` takes {}[N, {}]",
                sig.name,
                sig.dtype,
                sig.row_shape.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            )));
        }
        let n = shape[0];
        if *rows.get_or_insert(n) != n {
            return Ok(Err(format!(
                "arrays have different row counts ({} and {n})",
                rows.unwrap_or(0)
            )));
        }
        starts.push(*start);
        members.push(name.clone());
    }
    let rows = rows.unwrap_or(0);
    let data = if starts.iter().all(Option::is_some) {
        Rows::Offsets(starts.into_iter().flatten().collect())
    } else {
        Rows::Npz(members)
    };
    let complete = match &data {
        Rows::Offsets(offs) => offs
            .iter()
            .zip(inputs)
            .map(|(&o, s)| {
                let row = s.row_bytes as u64;
                file_len.saturating_sub(o).checked_div(row).map_or(rows, |n| n.min(rows))
            })
            .min()
            .unwrap_or(rows),
        Rows::Npz(_) | Rows::Parquet(_) => rows,
    };
    Ok(Ok(TensorFile { path: path.to_path_buf(), key, rows, complete, data }))
}

/// An error's message without the path prefix the formats crate puts in front.
fn one_line(msg: &str, path: &Path) -> String {
    let p = format!("{}: ", path.display());
    msg.strip_prefix(&p).unwrap_or(msg).lines().next().unwrap_or("").to_owned()
}

/// A message on one line (decoders' messages may hold newlines).
pub(crate) fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One row refused: its key and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BadRow {
    /// The row's key (`file:row` for tensor rows, the file for images and whole files).
    pub key: String,
    /// Why.
    pub reason: String,
}

/// Rows of one window, read: the good rows' bytes per input, their keys, the bad rows.
#[derive(Debug, Default)]
pub(crate) struct ReadRows {
    pub(crate) inputs: Vec<Vec<u8>>,
    pub(crate) keys: Vec<String>,
    pub(crate) bad: Vec<BadRow>,
}

/// A decoder thread's cache of the last `.npz` read (windows of one file come in a row).
#[derive(Debug, Default)]
pub(crate) struct NpzCache {
    path: Option<PathBuf>,
    arrays: Vec<(String, Vec<u8>)>,
}

/// Reads rows `start..end` of a tensor file.
pub(crate) fn read_tensor_rows(
    f: &TensorFile,
    inputs: &[TensorSig],
    start: u64,
    end: u64,
    cache: &mut NpzCache,
) -> ReadRows {
    let mut r = ReadRows { inputs: vec![Vec::new(); inputs.len()], ..ReadRows::default() };
    let good_end = end.min(f.complete).max(start);
    let n = good_end - start;
    let mut failed = None;
    match &f.data {
        Rows::Parquet(cols) => {
            return crate::parquet::read_rows(&f.path, &f.key, cols, inputs, start, end);
        }
        Rows::Offsets(offs) => {
            for ((off, sig), buf) in offs.iter().zip(inputs).zip(&mut r.inputs) {
                let row = sig.row_bytes as u64;
                let res = (|| -> std::io::Result<()> {
                    let mut file = std::fs::File::open(&f.path)?;
                    file.seek(SeekFrom::Start(off + start * row))?;
                    buf.resize(usize::try_from(n * row).unwrap_or(usize::MAX), 0);
                    file.read_exact(buf)
                })();
                if let Err(e) = res {
                    failed = Some(e.to_string());
                }
            }
        }
        Rows::Npz(members) => {
            if cache.path.as_deref() != Some(&f.path) {
                cache.path = None;
                cache.arrays.clear();
                match tpuport_formats::npy::read_npz(&f.path) {
                    Ok(v) => {
                        cache.arrays =
                            v.into_iter().map(|(name, t)| (name, t.data().to_vec())).collect();
                        cache.path = Some(f.path.clone());
                    }
                    Err(e) => failed = Some(one_line(&e.to_string(), &f.path)),
                }
            }
            if failed.is_none() {
                for ((m, sig), buf) in members.iter().zip(inputs).zip(&mut r.inputs) {
                    let row = sig.row_bytes;
                    let (s, e) = (start as usize * row, good_end as usize * row);
                    match cache.arrays.iter().find(|a| &a.0 == m).and_then(|a| a.1.get(s..e)) {
                        Some(b) => buf.extend_from_slice(b),
                        None => failed = Some(format!("array `{m}` changed while reading")),
                    }
                }
            }
        }
    }
    if let Some(reason) = failed {
        for b in &mut r.inputs {
            b.clear();
        }
        for i in start..end {
            r.bad.push(BadRow { key: format!("{}:{i}", f.key), reason: reason.clone() });
        }
        return r;
    }
    r.keys = (start..good_end).map(|i| format!("{}:{i}", f.key)).collect();
    for i in good_end..end {
        r.bad.push(BadRow {
            key: format!("{}:{i}", f.key),
            reason: format!("truncated: the file holds {} of its {} rows", f.complete, f.rows),
        });
    }
    r
}

/// Decodes images `files[start..end]` (keys relative to the root).
pub(crate) fn read_image_rows(
    listing: &Listing,
    spec: &ImageSpec,
    start: usize,
    end: usize,
) -> ReadRows {
    let mut r = ReadRows {
        inputs: vec![Vec::with_capacity((end - start) * spec.row_bytes())],
        ..ReadRows::default()
    };
    for i in start..end {
        match spec.decode_into(&listing.files[i], &mut r.inputs[0]) {
            Ok(()) => r.keys.push(listing.key(i)),
            Err(reason) => r.bad.push(BadRow { key: listing.key(i), reason: flat(&reason) }),
        }
    }
    r
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn globs_match_the_last_component() {
        let m = |p: &str, n: &str| {
            glob_match(&p.chars().collect::<Vec<_>>(), &n.chars().collect::<Vec<_>>())
        };
        assert!(m("*.npy", "a.npy"));
        assert!(m("part-??.npy", "part-01.npy"));
        assert!(!m("part-??.npy", "part-1.npy"));
        assert!(!m("*.npy", "a.npz"));
        assert!(m("*", ""));
    }
}

#[cfg(test)]
mod file_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tpuport_model::HostTensor;

    fn sig(name: &str) -> TensorSig {
        TensorSig { name: name.into(), dtype: DType::F32, row_shape: vec![3], row_bytes: 12 }
    }

    fn rows(n: usize, base: f32) -> HostTensor {
        let v: Vec<u8> = (0..n * 3).flat_map(|i| (base + i as f32).to_le_bytes()).collect();
        HostTensor::new(DType::F32, vec![n as u64, 3], v).unwrap()
    }

    #[test]
    fn npy_rows_are_read_by_offset_and_truncation_is_per_row() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.npy");
        let t = rows(5, 0.0);
        tpuport_formats::npy::write_npy(&p, &t).unwrap();
        let f = open_tensor_file(&p, "a.npy".into(), &[sig("x")]).unwrap().unwrap();
        assert_eq!((f.rows, f.complete), (5, 5));
        let r = read_tensor_rows(&f, &[sig("x")], 1, 4, &mut NpzCache::default());
        assert_eq!(r.inputs[0], t.data()[12..48]);
        assert_eq!(r.keys, ["a.npy:1", "a.npy:2", "a.npy:3"]);
        // Cut inside row 3: rows 0..3 stay readable, 3 and 4 are bad.
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 20]).unwrap();
        let f = open_tensor_file(&p, "a.npy".into(), &[sig("x")]).unwrap().unwrap();
        assert_eq!((f.rows, f.complete), (5, 3));
        let r = read_tensor_rows(&f, &[sig("x")], 2, 5, &mut NpzCache::default());
        assert_eq!(r.keys, ["a.npy:2"]);
        assert_eq!(r.inputs[0], t.data()[24..36]);
        let bad: Vec<&str> = r.bad.iter().map(|b| b.key.as_str()).collect();
        assert_eq!(bad, ["a.npy:3", "a.npy:4"]);
        assert!(r.bad[0].reason.contains("3 of its 5 rows"), "{:?}", r.bad);
    }

    #[test]
    fn npz_and_safetensors_bind_arrays_by_input_name() {
        let d = tempfile::tempdir().unwrap();
        let (x, y) = (rows(4, 0.0), rows(4, 100.0));
        let sigs = [sig("x"), sig("y")];
        let npz = d.path().join("s.npz");
        tpuport_formats::npy::write_npz(
            &npz,
            &[("y".into(), y.clone()), ("x".into(), x.clone())],
            true,
        )
        .unwrap();
        let st = d.path().join("s.safetensors");
        let out = |n: &str, t: &HostTensor| tpuport_formats::safetensors::TensorOut {
            name: n.into(),
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: t.data().to_vec().into(),
        };
        tpuport_formats::safetensors::write_safetensors(&st, &[out("y", &y), out("x", &x)], &[])
            .unwrap();
        for p in [&npz, &st] {
            let f = open_tensor_file(p, "k".into(), &sigs).unwrap().unwrap();
            assert_eq!(f.rows, 4);
            let r = read_tensor_rows(&f, &sigs, 2, 4, &mut NpzCache::default());
            assert_eq!(r.inputs[0], x.data()[24..48], "{}", p.display());
            assert_eq!(r.inputs[1], y.data()[24..48], "{}", p.display());
        }
        // A missing input name or a wrong row shape is a bad file, with the reason.
        let e = open_tensor_file(&npz, "k".into(), &[sig("x"), sig("z")]).unwrap().unwrap_err();
        assert!(e.contains("no array named `z`"), "{e}");
        let wide = TensorSig { row_shape: vec![4], row_bytes: 16, ..sig("x") };
        let e = open_tensor_file(&st, "k".into(), &[wide, sig("y")]).unwrap().unwrap_err();
        assert!(e.contains("[N, 4]"), "{e}");
        // .npy shards feed one input only: a configuration error, not a bad file.
        let a = d.path().join("a.npy");
        tpuport_formats::npy::write_npy(&a, &x).unwrap();
        assert!(open_tensor_file(&a, "a".into(), &sigs).is_err());
    }
}
