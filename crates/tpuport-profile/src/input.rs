//! Finding and opening inputs: files given by path, folders walked (a TensorBoard log dir's
//! `plugins/profile/<run>/` contributes its newest run only), gzip detected by its magic bytes
//! rather than the file name.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use serde::Serialize;

use crate::error::ProfileError;

/// Deepest folder level walked.
const MAX_DEPTH: usize = 12;
/// Most files looked at in one folder tree.
const MAX_FILES: usize = 20_000;
/// Bytes sniffed to tell JSON from text.
const SNIFF: usize = 4096;
/// Read buffer size.
const BUF: usize = 1 << 20;

/// What a file holds, judged from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Chrome-trace JSON.
    Trace,
    /// Text: metrics report, `PT_XLA_DEBUG` log, JAX log (decided while reading).
    Text,
}

/// One file to read.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// Gzip-compressed.
    pub gzip: bool,
    /// Trace or text.
    pub kind: InputKind,
    /// Named on the command line (an unreadable one is an error; one found in a folder that
    /// turns out to hold nothing `profile` reads is skipped).
    pub explicit: bool,
}

/// Inputs found under the given paths, plus per-path errors and files skipped in folders.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Files to read, in path order.
    pub inputs: Vec<Input>,
    /// Paths that could not be used.
    pub errors: Vec<ProfileError>,
    /// Files in folders that were not read, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Opens `path` for reading, decompressing gzip. Not buffered: the trace scanner reads in
/// 1 MiB chunks itself.
pub(crate) fn open(path: &Path, gzip: bool) -> std::io::Result<Box<dyn Read>> {
    let f = File::open(path)?;
    Ok(if gzip {
        Box::new(MultiGzDecoder::new(BufReader::with_capacity(BUF, f)))
    } else {
        Box::new(f)
    })
}

/// Opens `path` as buffered lines.
pub(crate) fn open_lines(path: &Path, gzip: bool) -> std::io::Result<Box<dyn BufRead>> {
    let f = BufReader::with_capacity(BUF, File::open(path)?);
    Ok(if gzip {
        Box::new(BufReader::with_capacity(BUF, MultiGzDecoder::new(f)))
    } else {
        Box::new(f)
    })
}

/// Looks at the first bytes of a file: gzip or not, JSON or text. Binary content is an error
/// naming what the file seems to be.
pub(crate) fn sniff(path: &Path) -> Result<(bool, InputKind), ProfileError> {
    let mut head = [0u8; 2];
    let n = File::open(path)
        .and_then(|mut f| read_full(&mut f, &mut head))
        .map_err(|e| ProfileError::io(path, e))?;
    let gzip = n == 2 && head == [0x1f, 0x8b];
    let mut buf = vec![0u8; SNIFF];
    let n = open(path, gzip).and_then(|mut r| read_full(&mut r, &mut buf)).map_err(|e| {
        ProfileError::Unrecognized {
            path: path.to_owned(),
            what: format!("cannot decompress: {e}"),
        }
    })?;
    let head = &buf[..n];
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.ends_with(".xplane.pb") {
        return Err(ProfileError::Unrecognized {
            path: path.to_owned(),
            what: "an XSpace protobuf (xplane.pb): pass the `.trace.json.gz` written next to it (JAX and torch_xla write both), or convert it with xprof".to_owned(),
        });
    }
    if head.contains(&0) {
        return Err(ProfileError::Unrecognized {
            path: path.to_owned(),
            what: "a binary file, not a Chrome trace (JSON), metrics report or log".to_owned(),
        });
    }
    let first = head
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF);
    let kind = if matches!(first, Some(b'{' | b'[')) { InputKind::Trace } else { InputKind::Text };
    Ok((gzip, kind))
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether a file found in a folder is worth sniffing.
fn candidate(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [".json", ".json.gz", ".log", ".txt", ".out", ".err", ".log.gz", ".txt.gz"]
        .iter()
        .any(|e| n.ends_with(e))
}

/// Finds the inputs under `paths`.
#[must_use]
pub fn discover(paths: &[PathBuf]) -> Discovery {
    let mut d = Discovery::default();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                d.errors.push(ProfileError::io(p, e));
                continue;
            }
        };
        if meta.is_dir() {
            let before = d.inputs.len();
            let mut budget = MAX_FILES;
            walk(p, 0, &mut budget, &mut d);
            if d.inputs.len() == before {
                d.errors.push(ProfileError::EmptyFolder { path: p.clone() });
            }
        } else {
            match sniff(p) {
                Ok((gzip, kind)) => {
                    d.inputs.push(Input { path: p.clone(), gzip, kind, explicit: true })
                }
                Err(e) => d.errors.push(e),
            }
        }
    }
    d
}

fn walk(dir: &Path, depth: usize, budget: &mut usize, d: &mut Discovery) {
    if depth > MAX_DEPTH || *budget == 0 {
        return;
    }
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) => {
            d.errors.push(ProfileError::io(dir, e));
            return;
        }
    };
    entries.sort();
    // A TensorBoard profile folder: only the newest run.
    if dir.file_name().is_some_and(|n| n == "profile")
        && dir.parent().and_then(Path::file_name).is_some_and(|n| n == "plugins")
    {
        let newest = entries
            .iter()
            .filter(|p| p.is_dir())
            .max_by_key(|p| (std::fs::metadata(p).and_then(|m| m.modified()).ok(), (*p).clone()));
        if let Some(run) = newest.cloned() {
            for other in entries.iter().filter(|p| p.is_dir() && **p != run) {
                d.skipped.push((
                    other.clone(),
                    "an older profile run (only the newest is read)".to_owned(),
                ));
            }
            run_folder(&run, budget, d);
        }
        return;
    }
    for path in entries {
        if *budget == 0 {
            d.skipped.push((
                dir.to_owned(),
                format!("more than {MAX_FILES} files: the rest were not looked at"),
            ));
            return;
        }
        *budget -= 1;
        if path.is_dir() {
            walk(&path, depth + 1, budget, d);
            continue;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !candidate(&name) {
            continue;
        }
        // A run folder given directly: the Perfetto copy repeats the trace JSON next to it.
        if name.starts_with("perfetto_trace.json") && has_trace_sibling(&path) {
            d.skipped.push((path, "a Perfetto copy of the trace JSON next to it".to_owned()));
            continue;
        }
        match sniff(&path) {
            Ok((gzip, kind)) => d.inputs.push(Input { path, gzip, kind, explicit: false }),
            Err(e) => d.skipped.push((path, e.to_string())),
        }
    }
}

fn has_trace_sibling(path: &Path) -> bool {
    let Some(dir) = path.parent() else { return false };
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.ends_with(".trace.json.gz") || n.ends_with(".trace.json")
    })
}

/// One `plugins/profile/<run>/` folder: its `*.trace.json.gz` files (one per host); the
/// Perfetto copy only when there is no trace JSON.
fn run_folder(run: &Path, budget: &mut usize, d: &mut Discovery) {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(run) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(e) => {
            d.errors.push(ProfileError::io(run, e));
            return;
        }
    };
    files.sort();
    let name =
        |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let traces: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            let n = name(p);
            n.ends_with(".trace.json.gz") || n.ends_with(".trace.json")
        })
        .collect();
    let chosen: Vec<&PathBuf> = if traces.is_empty() {
        files.iter().filter(|p| name(p).starts_with("perfetto_trace.json")).collect()
    } else {
        traces
    };
    if chosen.is_empty() {
        d.errors.push(ProfileError::Unrecognized {
            path: run.to_owned(),
            what: "this profile run has no trace JSON (only xplane.pb?): newer JAX and torch_xla write `<host>.trace.json.gz` next to it; convert the xplane with xprof otherwise".to_owned(),
        });
        return;
    }
    for p in chosen {
        *budget = budget.saturating_sub(1);
        match sniff(p) {
            Ok((gzip, kind)) => {
                d.inputs.push(Input { path: p.clone(), gzip, kind, explicit: false })
            }
            Err(e) => d.errors.push(e),
        }
    }
}
