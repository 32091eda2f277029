//! Loading a PJRT plugin: `dlopen`, `GetPjrtApi`, version and table checks,
//! `PJRT_Plugin_Initialize`, attributes, extensions.
//!
//! Plugins are loaded once per process and never unloaded: they keep threads and static state
//! alive, and the C API has no teardown. Loaded plugins live in a process-global map keyed by
//! canonical path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;

use crate::api::{Api, TableProblem, call, extension_name};
use crate::error::{PjrtError, Result};
use crate::named_value::{self, NamedValue, Value};
use crate::sys;

/// A loaded, initialised PJRT plugin.
#[derive(Debug)]
pub struct Plugin {
    path: PathBuf,
    pub(crate) api: Api,
    attributes: Vec<NamedValue>,
    extensions: Vec<(i32, usize)>,
    /// Result of `PJRT_Plugin_Initialize` (run at load, or deferred; see [`load`]).
    init: OnceLock<std::result::Result<(), String>>,
}

/// A StableHLO version triple (`[major, minor, patch]`).
pub type StablehloVersion = [i64; 3];

static PLUGINS: OnceLock<Mutex<HashMap<PathBuf, &'static Plugin>>> = OnceLock::new();

/// Loads (once per process) and initialises the plugin at `path`.
///
/// libtpu on a machine without TPU device nodes is loaded but not initialised: its
/// `PJRT_Plugin_Initialize` retries the GCE metadata server for about ten minutes there.
/// Version, attributes and extensions are still available, and [`crate::Client::new`]
/// answers "no TPU devices" at once.
///
/// # Errors
/// [`PjrtError::Io`] when the file does not exist, [`PjrtError::Load`] when it is not a
/// loadable library, [`PjrtError::NotAPlugin`] without `GetPjrtApi`,
/// [`PjrtError::IncompatibleVersion`] for a PJRT API this build cannot use, or the plugin's
/// own error from `PJRT_Plugin_Initialize`.
pub fn load(path: &Path) -> Result<&'static Plugin> {
    let canonical = path.canonicalize().map_err(|e| PjrtError::io(path, e))?;
    let map = PLUGINS.get_or_init(|| Mutex::new(HashMap::new()));
    // Loading holds the lock: two threads must not initialise the same plugin twice.
    let mut guard = map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(p) = guard.get(&canonical) {
        return Ok(p);
    }
    let plugin: &'static Plugin = Box::leak(Box::new(open(&canonical)?));
    guard.insert(canonical, plugin);
    Ok(plugin)
}

fn open(path: &Path) -> Result<Plugin> {
    if !path.is_file() {
        return Err(PjrtError::Load {
            path: path.to_owned(),
            message: "not a regular file".into(),
        });
    }
    // SAFETY: loading a shared library runs its initialisers. The path is a plugin the user
    // named or one found in the documented plugin locations; that trust is the premise of
    // running a PJRT plugin at all.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| PjrtError::Load { path: path.to_owned(), message: e.to_string() })?;
    // Never unloaded (see module docs), also when the checks below fail.
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: `GetPjrtApi` has the C signature `const PJRT_Api* GetPjrtApi(void)` in every
    // PJRT plugin; the symbol is looked up by that name only.
    let get: libloading::Symbol<'static, sys::GetPjrtApiFn> =
        unsafe { lib.get(b"GetPjrtApi\0") }.map_err(|_| PjrtError::NotAPlugin {
            path: path.to_owned(),
            what: "it does not export GetPjrtApi".into(),
        })?;
    // SAFETY: calling the plugin's entry point; it takes no arguments and returns a pointer to
    // its static function table (or null).
    let raw = unsafe { get() };
    if raw.is_null() {
        return Err(PjrtError::NotAPlugin {
            path: path.to_owned(),
            what: "GetPjrtApi returned null".into(),
        });
    }
    // SAFETY: `raw` is the non-null table pointer from `GetPjrtApi`, static for the process.
    let api = unsafe { Api::from_raw(raw) }.map_err(|p| match p {
        TableProblem::TooSmall(n) => PjrtError::NotAPlugin {
            path: path.to_owned(),
            what: format!("its PJRT_Api table is only {n} bytes"),
        },
        TableProblem::Major(major, minor) => PjrtError::IncompatibleVersion {
            path: path.to_owned(),
            major,
            minor,
            header_minor: sys::PJRT_API_MINOR,
            why: format!("the major version must be {}", sys::PJRT_API_MAJOR),
        },
    })?;
    let attributes = read_attributes(&api).unwrap_or_default();
    let extensions = api.extensions();
    let plugin =
        Plugin { path: path.to_owned(), api, attributes, extensions, init: OnceLock::new() };
    let defer =
        crate::PluginKind::of(path) == crate::PluginKind::Tpu && !crate::tpu_hardware_present();
    if !defer {
        plugin.initialize()?;
    }
    Ok(plugin)
}

fn read_attributes(api: &Api) -> Result<Vec<NamedValue>> {
    let mut a = sys::PJRT_Plugin_Attributes_Args::new();
    // SAFETY: args initialised; the returned array lives as long as the process.
    unsafe {
        call!(api, PJRT_Plugin_Attributes, &raw mut a)?;
        Ok(named_value::read_all(a.attributes, a.num_attributes))
    }
}

/// What [`Plugin::info`] reports, without creating a client.
#[derive(Clone, Debug, Serialize)]
pub struct PluginInfo {
    /// Canonical path.
    pub path: PathBuf,
    /// PJRT API version `major.minor`.
    pub api_version: (i32, i32),
    /// The plugin's `PJRT_Api.struct_size`.
    pub table_bytes: usize,
    /// Number of functions in its table.
    pub num_functions: usize,
    /// Plugin attributes.
    pub attributes: Vec<NamedValue>,
    /// Extension names in chain order.
    pub extensions: Vec<String>,
}

impl Plugin {
    /// Runs `PJRT_Plugin_Initialize` once (later calls return the first result).
    ///
    /// # Errors
    /// The plugin's initialisation error.
    pub fn initialize(&self) -> Result<()> {
        let r = self.init.get_or_init(|| {
            let mut init = sys::PJRT_Plugin_Initialize_Args::new();
            // SAFETY: the args struct is fully initialised and outlives the call.
            unsafe { call!(self.api, PJRT_Plugin_Initialize, &raw mut init) }
                .map_err(|e| e.to_string())
        });
        r.clone().map_err(|message| PjrtError::Load { path: self.path.clone(), message })
    }

    /// Whether `PJRT_Plugin_Initialize` has run successfully.
    #[must_use]
    pub fn is_initialized(&self) -> bool {
        matches!(self.init.get(), Some(Ok(())))
    }

    /// Canonical path the plugin was loaded from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// PJRT API version `(major, minor)`.
    #[must_use]
    pub fn api_version(&self) -> (i32, i32) {
        self.api.version()
    }

    /// Plugin attributes (`xla_version`, `stablehlo_current_version`, …).
    #[must_use]
    pub fn attributes(&self) -> &[NamedValue] {
        &self.attributes
    }

    /// `stablehlo_current_version` and `stablehlo_minimum_version`, when reported.
    #[must_use]
    pub fn stablehlo_range(&self) -> Option<(StablehloVersion, StablehloVersion)> {
        let get = |n: &str| match named_value::find(&self.attributes, n) {
            Some(Value::Int64List(v)) if v.len() == 3 => Some([v[0], v[1], v[2]]),
            _ => None,
        };
        Some((get("stablehlo_minimum_version")?, get("stablehlo_current_version")?))
    }

    /// A summary for reports.
    #[must_use]
    pub fn info(&self) -> PluginInfo {
        PluginInfo {
            path: self.path.clone(),
            api_version: self.api.version(),
            table_bytes: self.api.table_bytes(),
            num_functions: self.api.num_functions(),
            attributes: self.attributes.clone(),
            extensions: self.extensions.iter().map(|(t, _)| extension_name(*t)).collect(),
        }
    }
}
