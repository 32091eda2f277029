//! Finding PJRT plugins: `--plugin`, then `$TPUPORT_PJRT_PLUGIN`, then the usual places.
//!
//! Usual places, in preference order: libtpu (`$TPU_LIBRARY_PATH`, `libtpu/libtpu.so` in a
//! searched site-packages, system library dirs), the CUDA plugin
//! (`jax_plugins/xla_cuda12/xla_cuda_plugin.so`), the CPU plugin
//! (`xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so`), and last a libtpu that `make libtpu`
//! unpacked ([`libtpu_places`]). The site-packages searched, in order, are listed by
//! [`search_places`]: the environment the binary was installed into by pip first, so that
//! `pip install tpuport[cpu]` works with no environment variable set.

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
    /// Where it came from: `--plugin`, the env var name, or the reason its site-packages was
    /// searched (see [`search_places`]).
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
    let sites = search_places();
    let in_sites = |rel: &str| -> Vec<(PathBuf, String)> {
        sites.iter().map(|s| (s.path.join(rel), s.why.clone())).collect()
    };
    let mut candidates = in_sites(LIBTPU);
    for dir in ["/usr/lib", "/usr/local/lib", "/lib"] {
        candidates.push((Path::new(dir).join("libtpu.so"), "system library dir".to_owned()));
    }
    for rel in CUDA {
        candidates.extend(in_sites(rel));
    }
    candidates.extend(in_sites(CPU));
    // Last: a libtpu unpacked by `make libtpu`. It is there for the TPU compiler (`compile`,
    // `audit --compiler`, which look for libtpu by kind), and after the CPU plugin so that
    // `run` and `bench` on a machine without a TPU keep taking the CPU plugin.
    for place in libtpu_places() {
        if let Some(lib) = newest_unpacked_libtpu(&place.path) {
            candidates.push((lib, place.why));
        }
    }
    for (c, why) in candidates {
        if c.is_file() {
            push(c, &why);
        }
    }
    out
}

/// Folders holding libtpu versions unpacked by `make libtpu` (`scripts/tools/libtpu_fetch.sh`) as
/// `<folder>/<version>/libtpu/libtpu.so`, in the order [`discover`] searches them (the newest
/// version in each):
///
/// 1. `.cache/libtpu` in the current directory or the nearest parent that has one (a tpuport
///    checkout, where `make libtpu` links it), else `<current directory>/.cache/libtpu`;
/// 2. `tpuport/libtpu` in the user cache (`$XDG_CACHE_HOME`, else `~/.cache`), where
///    `make libtpu` unpacks it so that every checkout on the machine shares one copy.
///
/// Listed whether or not they exist (`tpuport doctor` shows them as the places to put one).
#[must_use]
pub fn libtpu_places() -> Vec<Place> {
    let mut out = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        let rel = Path::new(".cache").join("libtpu");
        let found = cwd.ancestors().map(|d| d.join(&rel)).find(|p| p.is_dir());
        let path = found.unwrap_or_else(|| cwd.join(&rel));
        let project = path.parent().and_then(Path::parent).unwrap_or(&path);
        let why = format!(".cache/libtpu in {} (make libtpu)", project.display());
        out.push(Place { path, why });
    }
    let cache = non_empty_var(EnvVars::XDG_CACHE_HOME)
        .map(PathBuf::from)
        .or_else(|| non_empty_var(EnvVars::HOME).map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        out.push(Place {
            path: c.join("tpuport").join("libtpu"),
            why: "tpuport's user cache (make libtpu)".to_owned(),
        });
    }
    out
}

/// `<dir>/<version>/libtpu/libtpu.so` for the highest numeric `<version>` (`0.0.52`) that has
/// one.
fn newest_unpacked_libtpu(dir: &Path) -> Option<PathBuf> {
    let rd = std::fs::read_dir(dir).ok()?;
    rd.filter_map(std::result::Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u64>> = name.split('.').map(|n| n.parse().ok()).collect();
            let lib = e.path().join(LIBTPU);
            Some((version?, lib)).filter(|(_, l)| l.is_file())
        })
        .max()
        .map(|(_, lib)| lib)
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
        None => Err(not_found()),
    }
}

/// The error for a machine where discovery finds no plugin, naming where it looked.
pub(crate) fn not_found() -> PjrtError {
    PjrtError::NotFound { searched: searched_places(), env: EnvVars::TPUPORT_PJRT_PLUGIN }
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
    v.extend(search_places().iter().map(|p| format!("{} ({})", p.path.display(), p.why)));
    v.push("/usr/lib, /usr/local/lib, /lib".into());
    v.extend(libtpu_places().iter().map(|p| format!("{} ({})", p.path.display(), p.why)));
    v.join(", ")
}

/// A directory that discovery searches (a Python site-packages, or a folder of libtpu versions
/// from [`libtpu_places`]), and why it is on the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The site-packages (or dist-packages) directory, or the libtpu folder.
    pub path: PathBuf,
    /// Why it is searched: `next to the binary`, `$VIRTUAL_ENV`, `python3 on PATH (…)`, …
    pub why: String,
}

/// How long an interpreter may take to name its site-packages before it is skipped.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Site-packages directories to search, in preference order, each with the reason:
///
/// 1. next to the tpuport binary (a wheel installs it into the environment's `bin/`, so the
///    plugins installed as its extras are in that environment's site-packages; with
///    `pip install --target DIR` the binary is in `DIR/bin` and `DIR` is the site dir);
/// 2. the interpreter named by `--python` / `$TPUPORT_PYTHON`;
/// 3. the active virtual environment (`$VIRTUAL_ENV`);
/// 4. `.venv` in the current directory or a parent;
/// 5. the `python3` first on `PATH` (a venv that is not activated, a pyenv or system Python);
/// 6. the user site (`~/.local/lib/python3*/site-packages`).
///
/// An interpreter's directories are found from its file layout first; only when that finds
/// none (a pyenv shim, an unusual prefix) is the interpreter asked, with a 5 s limit.
#[must_use]
pub fn search_places() -> Vec<Place> {
    let mut out: Vec<Place> = Vec::new();
    let mut add = |dirs: Vec<PathBuf>, why: &str| {
        for path in dirs {
            // One entry per directory, however it was reached (a `.cache` or venv symlink).
            let path = path.canonicalize().unwrap_or(path);
            if path.is_dir() && !out.iter().any(|p| p.path == path) {
                out.push(Place { path, why: why.to_owned() });
            }
        }
    };
    if let Some(prefix) =
        std::env::current_exe().ok().and_then(|e| Some(e.parent()?.parent()?.to_owned()))
    {
        let mut dirs = prefix_sites(&prefix);
        if prefix.join("tpuport").join("__init__.py").is_file() {
            dirs.insert(0, prefix.clone());
        }
        add(dirs, "next to the binary");
    }
    if let Some(py) = non_empty_var(EnvVars::TPUPORT_PYTHON) {
        let py = PathBuf::from(py);
        add(interpreter_sites(&py), &format!("--python ({})", py.display()));
    }
    if let Some(v) = non_empty_var(EnvVars::VIRTUAL_ENV) {
        add(prefix_sites(Path::new(&v)), "$VIRTUAL_ENV");
    }
    if let Some(venv) = project_venv() {
        let why = format!(".venv in {}", venv.parent().unwrap_or(&venv).display());
        add(prefix_sites(&venv), &why);
    }
    if let Some(py) = python_on_path() {
        add(interpreter_sites(&py), &format!("python3 on PATH ({})", py.display()));
    }
    if let Some(home) = non_empty_var(EnvVars::HOME) {
        add(prefix_sites(&PathBuf::from(home).join(".local")), "user site");
    }
    out
}

/// The site-packages directories of [`search_places`], without the reasons.
#[must_use]
pub fn site_packages() -> Vec<PathBuf> {
    search_places().into_iter().map(|p| p.path).collect()
}

fn non_empty_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// `.venv` in the current directory or the nearest parent that has one.
fn project_venv() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors().map(|d| d.join(".venv")).find(|v| v.is_dir())
}

/// `lib/python3*/{site,dist}-packages` under an installation prefix, plus Debian's
/// `lib/python3/dist-packages`, sorted for a stable order.
fn prefix_sites(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(prefix.join("lib")) {
        let mut libs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .collect();
        libs.sort();
        for lib in libs {
            for leaf in ["site-packages", "dist-packages"] {
                let d = lib.join(leaf);
                if d.is_dir() {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// The first `python3` (else `python`) on `PATH`, as written there (symlinks not followed: a
/// venv's interpreter is a symlink to the base one, and the venv is what matters).
fn python_on_path() -> Option<PathBuf> {
    let path = std::env::var_os(EnvVars::PATH)?;
    for name in ["python3", "python"] {
        for dir in std::env::split_paths(&path) {
            let cand = dir.join(name);
            if is_executable(&cand) {
                return Some(cand);
            }
        }
    }
    None
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Site directories of one interpreter: from the layout around it (`<prefix>/bin/python3`),
/// else by asking it.
fn interpreter_sites(py: &Path) -> Vec<PathBuf> {
    let mut dirs = py.parent().and_then(Path::parent).map(prefix_sites).unwrap_or_default();
    if py.starts_with("/usr/bin") || py.starts_with("/bin") {
        // Debian's system Python: pip installs into /usr/local, the distribution into /usr.
        dirs.extend(prefix_sites(Path::new("/usr/local")));
    }
    if dirs.is_empty() {
        dirs = ask_interpreter(py);
    }
    dirs
}

/// Runs `py -I -c …` to list `site.getsitepackages()` and the user site. A missing, failing or
/// slow interpreter gives nothing.
fn ask_interpreter(py: &Path) -> Vec<PathBuf> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    const SCRIPT: &str = "import site, sys\n\
        d = list(getattr(site, 'getsitepackages', lambda: [])())\n\
        d.append(site.getusersitepackages())\n\
        sys.stdout.write('\\n'.join(d))\n";
    let Ok(mut child) = Command::new(py)
        .args(["-I", "-c", SCRIPT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if start.elapsed() < ASK_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let mut text = String::new();
    if child.stdout.take().is_none_or(|mut o| o.read_to_string(&mut text).is_err()) {
        return Vec::new();
    }
    text.lines().filter(|l| !l.is_empty()).map(PathBuf::from).collect()
}

/// The Python to ask about frameworks: `--python` / `$TPUPORT_PYTHON`, the active virtual
/// environment's, the one of the environment the binary is installed in, the project
/// `.venv`'s, else the `python3` first on `PATH`.
#[must_use]
pub fn python() -> Option<PathBuf> {
    if let Some(p) = non_empty_var(EnvVars::TPUPORT_PYTHON) {
        return Some(PathBuf::from(p));
    }
    let in_prefix = |prefix: &Path| {
        ["bin/python3", "bin/python"].iter().map(|b| prefix.join(b)).find(|p| is_executable(p))
    };
    if let Some(p) = non_empty_var(EnvVars::VIRTUAL_ENV).and_then(|v| in_prefix(Path::new(&v))) {
        return Some(p);
    }
    if let Some(p) =
        binary_prefix().filter(|b| b.join("pyvenv.cfg").is_file()).and_then(|b| in_prefix(&b))
    {
        return Some(p);
    }
    project_venv().and_then(|v| in_prefix(&v)).or_else(python_on_path)
}

/// `<prefix>` of the running binary when it is `<prefix>/bin/tpuport`.
fn binary_prefix() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.to_owned())
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
