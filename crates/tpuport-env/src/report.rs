//! The report `tpuport doctor` prints (JSON schema `tpuport.doctor/1`); its text form is
//! `tpuport_report::doctor`.

use std::path::PathBuf;

use serde::Serialize;
use tpuport_pjrt::{PluginInfo, PluginKind};

/// Schema id of [`DoctorReport`].
pub const SCHEMA: &str = "tpuport.doctor/1";

/// What one plugin offered when loaded and asked for a client.
#[derive(Clone, Debug, Serialize)]
pub struct PluginReport {
    /// The library.
    pub path: PathBuf,
    /// CPU, TPU, CUDA or other, by file name.
    pub kind: PluginKind,
    /// Where it was found: `--plugin`, an environment variable's name, or why its
    /// site-packages was searched (`next to the binary`, `python3 on PATH (…)`, …).
    pub source: String,
    /// API version, functions, attributes and extensions, when it loaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<PluginInfo>,
    /// The StableHLO versions it reads (`min .. max`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stablehlo: Option<String>,
    /// Platform name, when a client could be created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Platform version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_version: Option<String>,
    /// Number of addressable devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<usize>,
    /// Distinct device kinds.
    pub device_kinds: Vec<String>,
    /// Why it could not be loaded or could not make a client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The StableHLO versions it reads, as numbers (`stablehlo` is their text).
    #[serde(skip)]
    pub stablehlo_range: Option<([i64; 3], [i64; 3])>,
}

impl PluginReport {
    /// A plugin not yet loaded.
    #[must_use]
    pub fn new(path: PathBuf, kind: PluginKind, source: String) -> PluginReport {
        PluginReport {
            path,
            kind,
            source,
            info: None,
            stablehlo: None,
            platform: None,
            platform_version: None,
            devices: None,
            device_kinds: Vec::new(),
            error: None,
            stablehlo_range: None,
        }
    }
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct DoctorReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// PJRT API version of tpuport's own declarations (`major.minor`).
    pub header_api_version: String,
    /// Every plugin found, in discovery order.
    pub plugins: Vec<PluginReport>,
    /// The site-packages searched for plugins, in order, with the reason for each.
    pub searched: Vec<tpuport_pjrt::Place>,
    /// The folders searched, after every plugin above, for a libtpu that `make libtpu`
    /// unpacked (`<folder>/<version>/libtpu/libtpu.so`), whether or not they exist (the reason
    /// then ends with `, not present`).
    pub libtpu_searched: Vec<tpuport_pjrt::Place>,
    /// `python`, `executable` and one version (or null) per package, when Python answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<serde_json::Value>,
    /// Version pairs that do not go together ([`crate::compat`]).
    pub versions: Vec<crate::compat::Verdict>,
    /// Advice (version mismatches, nothing found).
    pub notes: Vec<String>,
}
