//! The Python ML frameworks installed, asked of the interpreter the plugins are found through
//! (`--python`, else the project's or the first `python3` on PATH) with `importlib.metadata`:
//! nothing is imported, a missing or slow interpreter is not an error.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Observer;
use crate::compat::{self, Verdict};

/// Python distributions whose versions `doctor` reports, in the order it lists them.
pub const PACKAGES: [&str; 11] = [
    "jax",
    "jaxlib",
    "torch",
    "torch_xla",
    "torchvision",
    "tensorflow",
    "libtpu",
    "libtpu-nightly",
    "xla-cpu-pjrt",
    "jax-cuda12-pjrt",
    "jax-cuda12-plugin",
];

/// How long the interpreter may take to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// `{"python", "executable", <package>: version or null, "requires": {<package>: [...]}}`,
/// or `None` when no interpreter answered within 20 s.
#[must_use]
pub fn versions(obs: &dyn Observer) -> Option<serde_json::Value> {
    let py = tpuport_pjrt::python().unwrap_or_else(|| PathBuf::from("python3"));
    let list = PACKAGES.map(|n| format!("{n:?}")).join(",");
    let script = format!(
        "import json,sys,importlib.metadata as m\nout={{'python':sys.version.split()[0],'executable':sys.executable,'requires':{{}}}}\n\
         for n in [{list}]:\n    try: out[n]=m.version(n); out['requires'][n]=m.requires(n) or []\n    except Exception: out[n]=None\nprint(json.dumps(out))\n"
    );
    let mut child = Command::new(&py)
        .args(["-I", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .current_dir(std::env::temp_dir())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < ANSWER_WITHIN => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                obs.warn(&format!("{} did not answer within 20 s", py.display()));
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    serde_json::from_str(out.trim()).ok()
}

/// The installed packages of a [`versions`] answer and their `Requires-Dist`, judged by
/// [`compat::judge`].
#[must_use]
pub fn judge(py: &serde_json::Value) -> Vec<Verdict> {
    let installed: Vec<compat::Installed> = PACKAGES
        .iter()
        .filter_map(|&n| {
            let version = py.get(n)?.as_str()?.to_owned();
            let requires = py["requires"][n]
                .as_array()
                .map(|a| a.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            Some(compat::Installed { name: n.to_owned(), version, requires })
        })
        .collect();
    compat::judge(&installed)
}
