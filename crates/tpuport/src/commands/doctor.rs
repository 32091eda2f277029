//! `tpuport doctor`: which PJRT plugins are here and what they offer, plus the Python-side
//! framework versions. The report and its text form are `tpuport_report::doctor`.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use tpuport_pjrt::{Client, ClientOptions, Found};
use tpuport_profile::compat::{self, Level, Verdict};
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
    /// Also judge this StableHLO module's version against each plugin's accepted range.
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Option<PathBuf>,
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
    let report = DoctorReport {
        schema: doctor::SCHEMA,
        header_api_version: format!("{hmaj}.{hmin}"),
        plugins,
        searched: tpuport_pjrt::search_places(),
        libtpu_searched: tpuport_pjrt::libtpu_places()
            .into_iter()
            .map(|mut place| {
                if !place.path.is_dir() {
                    place.why.push_str(", not present");
                }
                place
            })
            .collect(),
        python,
        versions,
        notes,
    };
    match g.format {
        Format::Json => p.json(&report)?,
        _ => p.data(&doctor::render_text(&report, &PACKAGES, p.paint())),
    }
    let mismatch = report.versions.iter().any(|v| v.level == Level::Error);
    Ok(if usable && !mismatch { Status::Success } else { Status::Findings })
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
        let why = match (m.format, m.metadata.producer.as_deref()) {
            (tpuport_model::ModelFormat::StablehloText, _) => {
                "a StableHLO text module carries no version: only a portable artifact (MLIR \
                 bytecode, e.g. jax.export's `mlir_module_serialized`) records the version it \
                 targets; pass that file"
                    .to_owned()
            }
            (tpuport_model::ModelFormat::StablehloBytecode, Some(p)) => format!(
                "its bytecode producer `{p}` names no StableHLO version (a portable artifact's is \
                 `StableHLO_vX.Y.Z`)"
            ),
            (f, _) => format!(
                "a {} file carries no StableHLO version (only a portable artifact, MLIR bytecode \
                 such as jax.export's, does)",
                f.name()
            ),
        };
        notes.push(format!("cannot judge {}'s StableHLO version: {why}", model.display()));
        return Ok(Vec::new());
    };
    if !plugins.iter().any(|pl| pl.stablehlo_range.is_some()) {
        notes.push(format!(
            "cannot judge {} (StableHLO {v}): no plugin found here reports its StableHLO range",
            model.display()
        ));
    }
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
