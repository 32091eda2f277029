//! What this machine offers tpuport, behind `tpuport doctor` (and any caller that needs the
//! same answer in-process): the PJRT plugins found, each loaded and asked for a client
//! ([`plugins`]); the Python ML frameworks installed, read with `importlib.metadata` by the
//! interpreter the plugins are found through, nothing imported ([`python`]); the version pairs
//! that do not go together, by rule and source ([`compat`]); and, for a given module, its
//! StableHLO version against each plugin's accepted range.
//!
//! [`doctor`] gathers all of it into a [`DoctorReport`] (JSON schema `tpuport.doctor/1`);
//! `tpuport-report` renders it. Nothing here prints: progress goes to an [`Observer`].

pub mod compat;
mod error;
mod plugins;
pub mod python;
mod report;

use std::path::{Path, PathBuf};

pub use error::EnvError;
pub use plugins::probe;
pub use report::{DoctorReport, PluginReport, SCHEMA};

use compat::Level;

/// Where [`doctor`] reports progress (`info`, shown with `-v`) and problems that do not stop it.
pub trait Observer {
    /// A progress line.
    fn info(&self, _msg: &str) {}
    /// A warning.
    fn warn(&self, _msg: &str) {}
}

/// An observer that drops everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Observer for Silent {}

/// What [`doctor`] checks.
#[derive(Clone, Debug, Default)]
pub struct DoctorOptions {
    /// Also check this plugin library (listed first).
    pub plugin: Option<PathBuf>,
    /// Do not ask Python for framework versions.
    pub no_python: bool,
    /// Also judge this StableHLO module's version against each plugin's accepted range.
    pub model: Option<PathBuf>,
}

/// Every plugin found (loaded, asked for a client), the Python framework versions and their
/// pairs, and notes for the user.
///
/// # Errors
/// [`EnvError::Model`]: `opts.model` cannot be read. Everything else (a plugin that does not
/// load, no Python) is part of the report.
pub fn doctor(opts: &DoctorOptions, obs: &dyn Observer) -> Result<DoctorReport, EnvError> {
    let found = tpuport_pjrt::discover(opts.plugin.as_deref());
    let plugins: Vec<PluginReport> = found.into_iter().map(|f| probe(f, obs)).collect();
    let mut notes = Vec::new();
    let python = if opts.no_python { None } else { python::versions(obs) };
    let mut versions = python.as_ref().map(python::judge).unwrap_or_default();
    if let Some(model) = &opts.model {
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
    let (hmaj, hmin) = tpuport_pjrt::HEADER_API_VERSION;
    Ok(DoctorReport {
        schema: SCHEMA,
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
    })
}

impl DoctorReport {
    /// Some plugin made a client with devices.
    #[must_use]
    pub fn usable(&self) -> bool {
        self.plugins.iter().any(|r| r.devices.is_some())
    }

    /// Some version pair is an error (they will not work together).
    #[must_use]
    pub fn mismatch(&self) -> bool {
        self.versions.iter().any(|v| v.level == Level::Error)
    }
}

/// `model`'s StableHLO version against each plugin's accepted range.
fn judge_model(
    model: &Path,
    plugins: &[PluginReport],
    notes: &mut Vec<String>,
) -> Result<Vec<compat::Verdict>, EnvError> {
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
