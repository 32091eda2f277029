//! `tpuport doctor`: which PJRT plugins are here and what they offer, plus the Python-side
//! framework versions.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use tpuport_pjrt::{Client, ClientOptions, Found, PluginInfo, PluginKind};
use tpuport_profile::compat::{self, Level, Verdict};

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
    /// Also judge this StableHLO module's version against each plugin's accepted range.
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct PluginReport {
    path: PathBuf,
    kind: PluginKind,
    source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    info: Option<PluginInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stablehlo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    platform_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    devices: Option<usize>,
    device_kinds: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip)]
    stablehlo_range: Option<([i64; 3], [i64; 3])>,
}

#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    header_api_version: String,
    plugins: Vec<PluginReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    python: Option<serde_json::Value>,
    /// Version pairs that do not go together (`tpuport_profile::compat`).
    versions: Vec<Verdict>,
    notes: Vec<String>,
}

/// Python packages whose versions `doctor` reports (distribution names).
const PACKAGES: [&str; 11] = [
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

pub(crate) fn run(a: &DoctorArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let found = tpuport_pjrt::discover(a.plugin.as_deref());
    let plugins: Vec<PluginReport> = found.into_iter().map(|f| check(f, p)).collect();
    let mut notes = Vec::new();
    let python = if a.no_python { None } else { python_versions(p) };
    let mut versions = python.as_ref().map(judge_versions).unwrap_or_default();
    if let Some(model) = &a.model {
        versions.extend(judge_model(model, &plugins, &mut notes)?);
    }
    if python.is_some() && versions.is_empty() {
        notes.push("version pairs: no known mismatch among the packages above".to_owned());
    }
    for v in &versions {
        notes.push(format!(
            "{}: {} [rule: {}; source: {}] fix: {}",
            v.level, v.message, v.rule, v.source, v.fix
        ));
    }
    if plugins.is_empty() {
        notes.push(format!(
            "no PJRT plugin found: install one (`make venv` installs the CPU plugin) or set {}",
            tpuport_pjrt::EnvVars::TPUPORT_PJRT_PLUGIN
        ));
    }
    let usable = plugins.iter().any(|r| r.devices.is_some());
    let (hmaj, hmin) = tpuport_pjrt::HEADER_API_VERSION;
    let report = Report {
        schema: "tpuport.doctor/1",
        header_api_version: format!("{hmaj}.{hmin}"),
        plugins,
        python,
        versions,
        notes,
    };
    match g.format {
        Format::Json => p.data(&format!("{}\n", serde_json::to_string_pretty(&report)?)),
        _ => p.data(&render(&report)),
    }
    let mismatch = report.versions.iter().any(|v| v.level == Level::Error);
    Ok(if usable && !mismatch { Status::Success } else { Status::Findings })
}

fn check(f: Found, p: &Printer) -> PluginReport {
    let mut r = PluginReport {
        path: f.path.clone(),
        kind: f.kind,
        source: f.source,
        info: None,
        stablehlo: None,
        platform: None,
        platform_version: None,
        devices: None,
        device_kinds: Vec::new(),
        error: None,
        stablehlo_range: None,
    };
    p.info(&format!("checking {}", f.path.display()));
    let plugin = match tpuport_pjrt::load(&f.path) {
        Ok(pl) => pl,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.info = Some(plugin.info());
    r.stablehlo_range = plugin.stablehlo_range();
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

fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ =
        writeln!(s, "PJRT plugins (tpuport's declarations: PJRT API {}):", r.header_api_version);
    if r.plugins.is_empty() {
        let _ = writeln!(s, "  none found");
    }
    for pl in &r.plugins {
        let _ = writeln!(s, "  {} [{:?}, {}]", pl.path.display(), pl.kind, pl.source);
        if let Some(i) = &pl.info {
            let _ = writeln!(
                s,
                "    PJRT API {}.{} ({} functions, {} bytes table)",
                i.api_version.0, i.api_version.1, i.num_functions, i.table_bytes
            );
            if let Some(v) = &pl.stablehlo {
                let _ = writeln!(s, "    StableHLO {v}");
            }
            for a in &i.attributes {
                let _ = writeln!(s, "    attribute {} = {}", a.name, a.value);
            }
            if !i.extensions.is_empty() {
                let _ = writeln!(s, "    extensions: {}", i.extensions.join(", "));
            }
        }
        if let (Some(pf), Some(n)) = (&pl.platform, pl.devices) {
            let ver = pl.platform_version.as_deref().unwrap_or("");
            let _ = writeln!(
                s,
                "    platform {pf} {ver}: {n} device(s), kind {}",
                pl.device_kinds.join(", ")
            );
        }
        if let Some(e) = &pl.error {
            let _ = writeln!(s, "    error: {e}");
        }
    }
    if let Some(py) = &r.python {
        let _ = writeln!(s, "Python {}:", py.get("python").and_then(|v| v.as_str()).unwrap_or("?"));
        for name in PACKAGES {
            let v = py.get(name).and_then(|v| v.as_str()).unwrap_or("-");
            let _ = writeln!(s, "  {name:<16} {v}");
        }
    } else {
        let _ = writeln!(s, "Python: not found");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// Asks the project python (or `python3`) for package versions via `importlib.metadata`
/// (nothing is imported). A missing or slow python is not an error.
fn python_versions(p: &Printer) -> Option<serde_json::Value> {
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

/// The installed packages and their `Requires-Dist`, judged by `tpuport_profile::compat`.
fn judge_versions(py: &serde_json::Value) -> Vec<Verdict> {
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

/// `--model`: the module's StableHLO version against each plugin's accepted range.
fn judge_model(
    model: &std::path::Path,
    plugins: &[PluginReport],
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Verdict>> {
    let m = tpuport_formats::open(model, &tpuport_formats::ImportOptions::default())?;
    let Some(v) = m.metadata.stablehlo_version.as_deref() else {
        notes.push(format!(
            "{} carries no StableHLO version (only portable artifacts, e.g. jax.export bytecode, do)",
            model.display()
        ));
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for pl in plugins {
        if let Some((min, cur)) = pl.stablehlo_range {
            if let Some(mut verdict) = compat::stablehlo(v, min, cur) {
                verdict.message = format!("{}: {}", pl.path.display(), verdict.message);
                out.push(verdict);
            } else {
                notes.push(format!(
                    "{} (StableHLO {v}) fits {}",
                    model.display(),
                    pl.path.display()
                ));
            }
        }
    }
    Ok(out)
}
