//! Finding PJRT plugins: `--plugin`, then `$TPUPORT_PJRT_PLUGIN`, then the usual places.
//!
//! Usual places, in preference order: libtpu (`$TPU_LIBRARY_PATH`, `libtpu/libtpu.so` in a
//! site-packages of the active or project virtual environment or the user site, system
//! library dirs), the CUDA plugin (`jax_plugins/xla_cuda12/xla_cuda_plugin.so`), the CPU
//! plugin (`xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so`). The project virtual environment is
//! `.venv` in the current directory or any parent.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::env::EnvVars;
use crate::error::{PjrtError, Result};

/// Which backend a plugin file is, judged by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// libtpu.
    Tpu,
    /// The CUDA plugin.
    Cuda,
    /// The OpenXLA CPU plugin.
    Cpu,
    /// Anything else.
    Other,
}

impl PluginKind {
    /// Guesses the kind from the file name.
    #[must_use]
    pub fn of(path: &Path) -> PluginKind {
        let name =
            path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        if name.contains("libtpu") {
            PluginKind::Tpu
        } else if name.contains("cuda") {
            PluginKind::Cuda
        } else if name.contains("cpu") {
            PluginKind::Cpu
        } else {
            PluginKind::Other
        }
    }
}

/// A plugin file found on disk (not loaded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Found {
    /// Path.
    pub path: PathBuf,
    /// Kind, by file name.
    pub kind: PluginKind,
    /// Where it came from: `--plugin`, the env var name, or `search`.
    pub source: String,
}

const LIBTPU: &str = "libtpu/libtpu.so";
const CUDA: [&str; 2] =
    ["jax_plugins/xla_cuda12/xla_cuda_plugin.so", "jax_plugins/xla_cuda13/xla_cuda_plugin.so"];
const CPU: &str = "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so";

/// Every plugin that can be found, in preference order (an explicit path first). An
/// explicit path is listed even when it does not exist, so the caller reports it.
#[must_use]
pub fn discover(explicit: Option<&Path>) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let mut push = |path: PathBuf, source: &str| {
        let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !out.iter().any(|f| f.path == canon) {
            out.push(Found {
                kind: PluginKind::of(&canon),
                path: canon,
                source: source.to_owned(),
            });
        }
    };
    if let Some(p) = explicit {
        push(p.to_owned(), "--plugin");
    }
    if let Some(p) = std::env::var_os(EnvVars::TPUPORT_PJRT_PLUGIN).filter(|v| !v.is_empty()) {
        push(PathBuf::from(p), EnvVars::TPUPORT_PJRT_PLUGIN);
    }
    if let Some(p) = std::env::var_os(EnvVars::TPU_LIBRARY_PATH).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if p.is_file() {
            push(p, EnvVars::TPU_LIBRARY_PATH);
        }
    }
    let sites = site_packages();
    let mut candidates: Vec<PathBuf> = sites.iter().map(|s| s.join(LIBTPU)).collect();
    for dir in ["/usr/lib", "/usr/local/lib", "/lib"] {
        candidates.push(Path::new(dir).join("libtpu.so"));
    }
    for rel in CUDA {
        candidates.extend(sites.iter().map(|s| s.join(rel)));
    }
    candidates.extend(sites.iter().map(|s| s.join(CPU)));
    for c in candidates {
        if c.is_file() {
            push(c, "search");
        }
    }
    out
}

/// The plugin to use: the explicit one, else the first found.
///
/// # Errors
/// [`PjrtError::NotFound`] listing the places searched; an explicit path that does not exist
/// is reported as [`PjrtError::Io`].
pub fn find(explicit: Option<&Path>) -> Result<Found> {
    let all = discover(explicit);
    match all.into_iter().next() {
        Some(f) if f.path.is_file() => Ok(f),
        Some(f) => Err(PjrtError::io(f.path, std::io::Error::from(std::io::ErrorKind::NotFound))),
        None => Err(PjrtError::NotFound {
            searched: searched_places(),
            env: EnvVars::TPUPORT_PJRT_PLUGIN,
        }),
    }
}

/// Whether this machine exposes TPU device nodes (`/dev/accel*` on v2–v4/v5p hosts,
/// `/dev/vfio/<n>` on v5e/v6e hosts).
#[must_use]
pub fn tpu_hardware_present() -> bool {
    let any = |dir: &str, pred: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(dir).is_ok_and(|rd| {
            rd.filter_map(std::result::Result::ok).any(|e| pred(&e.file_name().to_string_lossy()))
        })
    };
    any("/dev", &|n| n.starts_with("accel"))
        || any("/dev/vfio", &|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// The first CPU plugin found, for tests and `--devices` defaults.
#[must_use]
pub fn find_cpu() -> Option<PathBuf> {
    site_packages().into_iter().map(|s| s.join(CPU)).find(|p| p.is_file())
}

fn searched_places() -> String {
    let mut v: Vec<String> = vec![
        format!("${}", EnvVars::TPUPORT_PJRT_PLUGIN),
        format!("${}", EnvVars::TPU_LIBRARY_PATH),
    ];
    v.extend(site_packages().iter().map(|p| p.display().to_string()));
    v.push("/usr/lib, /usr/local/lib, /lib".into());
    v.join(", ")
}

/// Site-packages directories of the active virtual environment, `.venv` in the current
/// directory or a parent, and the user site (`~/.local/lib/python3*/site-packages`).
#[must_use]
pub fn site_packages() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os(EnvVars::VIRTUAL_ENV).filter(|v| !v.is_empty()) {
        roots.push(PathBuf::from(v));
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let venv = dir.join(".venv");
            if venv.is_dir() {
                roots.push(venv);
                break;
            }
        }
    }
    if let Some(home) = std::env::var_os(EnvVars::HOME) {
        roots.push(PathBuf::from(home).join(".local"));
    }
    let mut out = Vec::new();
    for root in roots {
        let Ok(rd) = std::fs::read_dir(root.join("lib")) else { continue };
        let mut pys: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .map(|p| p.join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        pys.sort();
        for p in pys {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The project's virtual environment python (`.venv/bin/python` here or in a parent), else
/// `python3` on `PATH` (not checked).
#[must_use]
pub fn python() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(EnvVars::VIRTUAL_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v).join("bin/python");
        if p.is_file() {
            return Some(p);
        }
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors().map(|d| d.join(".venv/bin/python")).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        assert_eq!(PluginKind::of(Path::new("/x/libtpu/libtpu.so")), PluginKind::Tpu);
        assert_eq!(PluginKind::of(Path::new("/x/xla_cuda_plugin.so")), PluginKind::Cuda);
        assert_eq!(PluginKind::of(Path::new("/x/xla_cpu_pjrt.so")), PluginKind::Cpu);
        assert_eq!(PluginKind::of(Path::new("/x/pjrt_c_api_plugin.so")), PluginKind::Other);
    }

    #[test]
    fn explicit_comes_first_even_if_missing() {
        let all = discover(Some(Path::new("/nonexistent/plugin.so")));
        assert_eq!(all[0].source, "--plugin");
        assert!(find(Some(Path::new("/nonexistent/plugin.so"))).is_err());
    }
}
