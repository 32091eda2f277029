//! `tpuport doctor`: which PJRT plugins are here and what they offer, plus the Python-side
//! framework versions. The report and its text form are `tpuport_report::doctor`.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use tpuport_pjrt::{Client, ClientOptions, Found};
use tpuport_report::doctor::{self, DoctorReport, PluginReport};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Also check this plugin library (listed first).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Do not ask Python for framework versions.
    #[arg(long)]
    pub(crate) no_python: bool,
}

/// Python packages whose versions `doctor` reports (distribution names).
const PACKAGES: [&str; 9] = [
    "jax",
    "jaxlib",
    "torch",
    "torch_xla",
    "tensorflow",
    "libtpu",
    "libtpu-nightly",
    "xla-cpu-pjrt",
    "jax-cuda12-pjrt",
];

pub(crate) fn run(a: &DoctorArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let found = tpuport_pjrt::discover(a.plugin.as_deref());
    let plugins: Vec<PluginReport> = found.into_iter().map(|f| check(f, p)).collect();
    let mut notes = Vec::new();
    let python = if a.no_python { None } else { python_versions(p) };
    if let Some(py) = &python {
        notes.extend(version_notes(py));
    }
    if plugins.is_empty() {
        notes.push(format!(
            "no PJRT plugin found: install one (`make venv` installs the CPU plugin) or set {}",
            tpuport_pjrt::EnvVars::TPUPORT_PJRT_PLUGIN
        ));
    }
    let usable = plugins.iter().any(|r| r.devices.is_some());
    let (hmaj, hmin) = tpuport_pjrt::HEADER_API_VERSION;
    let report = DoctorReport {
        schema: doctor::SCHEMA,
        header_api_version: format!("{hmaj}.{hmin}"),
        plugins,
        searched: tpuport_pjrt::search_places(),
        python,
        notes,
    };
    match g.format {
        Format::Json => p.json(&report)?,
        _ => p.data(&doctor::render_text(&report, &PACKAGES, p.paint())),
    }
    Ok(if usable { Status::Success } else { Status::Findings })
}

fn check(f: Found, p: &Printer) -> PluginReport {
    let mut r = PluginReport::new(f.path.clone(), f.kind, f.source);
    p.info(&format!("checking {}", f.path.display()));
    let plugin = match tpuport_pjrt::load(&f.path) {
        Ok(pl) => pl,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.info = Some(plugin.info());
    r.stablehlo = plugin
        .stablehlo_range()
        .map(|(lo, hi)| format!("{}.{}.{} .. {}.{}.{}", lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]));
    match Client::new(plugin, &ClientOptions::default()) {
        Ok(c) => {
            r.platform = Some(c.platform_name().to_owned());
            r.platform_version = Some(c.platform_version().to_owned());
            let devs = c.devices();
            r.devices = Some(devs.len());
            for d in devs {
                if let Ok(desc) = d.description()
                    && !r.device_kinds.contains(&desc.kind)
                {
                    r.device_kinds.push(desc.kind);
                }
            }
        }
        Err(e) => r.error = Some(e.to_string()),
    }
    r
}

/// Asks the project python (or `python3`) for package versions via `importlib.metadata`
/// (nothing is imported). A missing or slow python is not an error.
fn python_versions(p: &Printer) -> Option<serde_json::Value> {
    let py = tpuport_pjrt::python().unwrap_or_else(|| PathBuf::from("python3"));
    let list = PACKAGES.map(|n| format!("{n:?}")).join(",");
    let script = format!(
        "import json,sys,importlib.metadata as m\nout={{'python':sys.version.split()[0],'executable':sys.executable}}\n\
         for n in [{list}]:\n    try: out[n]=m.version(n)\n    except Exception: out[n]=None\nprint(json.dumps(out))\n"
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
            Ok(None) if start.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                p.warn(&format!("{} did not answer within 20 s", py.display()));
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    serde_json::from_str(out.trim()).ok()
}

fn version_notes(py: &serde_json::Value) -> Vec<String> {
    let get = |k: &str| py.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let minor = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    let mut notes = Vec::new();
    if let (Some(j), Some(l)) = (get("jax"), get("jaxlib"))
        && j != l
    {
        notes.push(format!("jax {j} with jaxlib {l}: jax expects the jaxlib of the same release"));
    }
    if let (Some(t), Some(x)) = (get("torch"), get("torch_xla"))
        && minor(&t) != minor(&x)
    {
        notes.push(format!(
            "torch {t} with torch_xla {x}: torch_xla must match torch's minor version"
        ));
    }
    notes
}
