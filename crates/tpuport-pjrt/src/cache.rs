//! On-disk cache of compiled executables.
//!
//! Key: sha256 over the module bytes, the encoded compile options and the plugin's identity
//! (path, file size and mtime, PJRT API version, platform name and version, device count).
//! Value: `PJRT_Executable_Serialize` output with a magic and a sha256 of the payload, written
//! to a temporary file in the cache directory and renamed into place. A missing, corrupt or
//! unloadable entry is a miss: the program is compiled and the entry rewritten.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::client::Client;
use crate::env::EnvVars;
use crate::error::{PjrtError, Result};
use crate::executable::LoadedExecutable;
use crate::options::CompileOptions;
use crate::program::Program;

const MAGIC: &[u8; 8] = b"TPXEXE1\n";

/// How an executable was obtained.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Loaded from the cache.
    Hit,
    /// Compiled and stored.
    Miss,
    /// Compiled; caching was off.
    Disabled,
    /// Compiled and stored; the cache could not be written (the reason).
    WriteFailed(String),
}

/// An executable with how it was obtained and how long that took.
#[derive(Debug)]
pub struct Compiled {
    /// The executable.
    pub executable: LoadedExecutable,
    /// Hit, miss or disabled.
    pub status: CacheStatus,
    /// Time to compile (miss) or to read and deserialize (hit).
    pub elapsed: Duration,
    /// Cache key (hex sha256).
    pub key: String,
}

/// The executable cache (a directory).
#[derive(Clone, Debug)]
pub struct ExecutableCache {
    dir: Option<PathBuf>,
}

impl ExecutableCache {
    /// The default directory: `$TPUPORT_CACHE_DIR`, else `$XDG_CACHE_HOME/tpuport/executables`,
    /// else `~/.cache/tpuport/executables`.
    #[must_use]
    pub fn default_dir() -> Option<PathBuf> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(d) = var(EnvVars::TPUPORT_CACHE_DIR) {
            return Some(d);
        }
        let base = var(EnvVars::XDG_CACHE_HOME)
            .or_else(|| var(EnvVars::HOME).map(|h| h.join(".cache")))?;
        Some(base.join("tpuport").join("executables"))
    }

    /// A cache in `dir`.
    #[must_use]
    pub fn at(dir: PathBuf) -> ExecutableCache {
        ExecutableCache { dir: Some(dir) }
    }

    /// The default cache (disabled when no directory can be determined).
    #[must_use]
    pub fn default_location() -> ExecutableCache {
        ExecutableCache { dir: Self::default_dir() }
    }

    /// A cache that never reads or writes (`--no-cache`).
    #[must_use]
    pub fn disabled() -> ExecutableCache {
        ExecutableCache { dir: None }
    }

    /// The directory, when enabled.
    #[must_use]
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The cache key of a program for a client: of the program the client really compiles
    /// ([`Client::effective_program`]).
    #[must_use]
    pub fn key(client: &Client, program: &Program, options: &CompileOptions) -> String {
        Self::key_exact(client, &client.effective_program(program), options)
    }

    /// The cache key of `program` exactly as given.
    fn key_exact(client: &Client, program: &Program, options: &CompileOptions) -> String {
        let mut h = Sha256::new();
        let mut part = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        part(b"tpuport-executable-v1");
        part(program.code());
        part(program.format().as_bytes());
        part(&client.effective_options(options).encode());
        let plugin = client.plugin();
        part(plugin.path().to_string_lossy().as_bytes());
        if let Ok(meta) = std::fs::metadata(plugin.path()) {
            part(&meta.len().to_le_bytes());
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            part(&mtime.to_le_bytes());
        }
        let (major, minor) = plugin.api_version();
        part(&major.to_le_bytes());
        part(&minor.to_le_bytes());
        part(client.platform_name().as_bytes());
        part(client.platform_version().as_bytes());
        part(&(client.devices().len() as u64).to_le_bytes());
        hex::encode(h.finalize())
    }

    /// Loads the program's executable from the cache, or compiles and stores it.
    ///
    /// # Errors
    /// The compile error (cache problems never fail the call; they become a miss or
    /// [`CacheStatus::WriteFailed`]).
    pub fn get_or_compile(
        &self,
        client: &Client,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<Compiled> {
        let program = &*client.effective_program(program);
        let key = Self::key_exact(client, program, options);
        let Some(dir) = &self.dir else {
            let t = Instant::now();
            let executable = client.compile_exact(program, options)?;
            return Ok(Compiled {
                executable,
                status: CacheStatus::Disabled,
                elapsed: t.elapsed(),
                key,
            });
        };
        let path = dir.join(format!("{key}.pjrt"));
        let t = Instant::now();
        if let Some(executable) = read_entry(&path).and_then(|b| client.deserialize(&b).ok()) {
            return Ok(Compiled {
                executable,
                status: CacheStatus::Hit,
                elapsed: t.elapsed(),
                key,
            });
        }
        let t = Instant::now();
        let executable = client.compile_exact(program, options)?;
        let elapsed = t.elapsed();
        let status =
            match executable.executable().serialize().and_then(|b| write_entry(dir, &path, &b)) {
                Ok(()) => CacheStatus::Miss,
                Err(e) => CacheStatus::WriteFailed(e.to_string()),
            };
        Ok(Compiled { executable, status, elapsed, key })
    }
}

/// The payload of a valid entry, or `None` (missing, truncated, corrupt).
fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < 32 {
        return None;
    }
    let (sum, payload) = rest.split_at(32);
    (Sha256::digest(payload).as_slice() == sum).then(|| payload.to_vec())
}

/// Writes an entry atomically ([`tpuport_model::fs::write_atomic`]).
fn write_entry(dir: &Path, path: &Path, payload: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| PjrtError::io(dir, e))?;
    tpuport_model::fs::write_atomic(path, |f| {
        f.write_all(MAGIC)?;
        f.write_all(&Sha256::digest(payload))?;
        f.write_all(payload)
    })
    .map_err(|e| PjrtError::io(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_round_trip_and_corruption_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.pjrt");
        write_entry(dir.path(), &p, b"payload").unwrap();
        assert_eq!(read_entry(&p).unwrap(), b"payload");
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        assert!(read_entry(&p).is_none());
        std::fs::write(&p, b"TPX").unwrap();
        assert!(read_entry(&p).is_none());
        // No temporary files left behind.
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
    }
}
