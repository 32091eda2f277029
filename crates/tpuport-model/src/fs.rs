//! Atomic file writes, shared by every crate that writes a file a user may read while it is
//! being written (tensor files, lowered modules, reports, the executable cache, rewritten
//! sources).
//!
//! The bytes go to a fresh temporary file in the target's folder (created with `create_new`,
//! named after the target, the process and a per-process counter, so concurrent writers never
//! share one), are flushed to disk, take the permissions of the file they replace when there
//! is one, and are renamed over the target. On any failure the temporary file is removed and
//! the target is left as it was.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-process counter that keeps temporary names of concurrent writers apart.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Writes `path` through `fill`, atomically: readers see the old file or the complete new one.
///
/// # Errors
/// The I/O error of creating, filling, syncing or renaming the temporary file (the target is
/// then untouched and no temporary file is left behind).
pub fn write_atomic(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let (tmp, mut file) = loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{base}.tmp-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    };
    let written = fill(&mut file).and_then(|()| file.sync_all());
    drop(file);
    let done = written
        .and_then(|()| match std::fs::metadata(path) {
            Ok(m) => std::fs::set_permissions(&tmp, m.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// [`write_atomic`] of a byte slice.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(path, |f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_whole_files_and_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("tpuport-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.txt");
        write_atomic_bytes(&p, b"one").unwrap();
        write_atomic_bytes(&p, b"two, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two, longer");
        // a failing writer leaves the old content and no temporary file
        let e = write_atomic(&p, |f| {
            f.write_all(b"partial")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(std::fs::read(&p).unwrap(), b"two, longer");
        assert_eq!(names(&dir), ["a.txt"]);
        // a target in a missing folder is an error, not a panic
        assert!(write_atomic_bytes(&dir.join("no/such/b.txt"), b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn keeps_the_permissions_of_the_replaced_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tpuport-fs-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("script.py");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic_bytes(&p, b"new").unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o750);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_writers_do_not_collide() {
        let dir = std::env::temp_dir().join(format!("tpuport-fs-par-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("shared.bin");
        std::thread::scope(|s| {
            for k in 0..8u8 {
                let p = &p;
                s.spawn(move || write_atomic_bytes(p, &[k; 4096]).unwrap());
            }
        });
        let got = std::fs::read(&p).unwrap();
        assert_eq!(got.len(), 4096);
        assert!(got.iter().all(|&b| b == got[0]), "torn write");
        assert_eq!(names(&dir), ["shared.bin"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
