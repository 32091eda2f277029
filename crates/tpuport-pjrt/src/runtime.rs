//! [`Runtime`]: a plugin found and loaded, a client with the devices a module needs, and the
//! executable cache: what every verb that executes opens first.
//!
//! Which plugin: `--plugin` or `$TPUPORT_PJRT_PLUGIN` when given (that one or an error), else
//! the first plugin discovery finds ([`crate::discover`], libtpu first) that creates a client
//! with devices. A plugin that cannot — libtpu installed by `jax[tpu]` on a machine without a
//! TPU, a CUDA plugin without a GPU — is skipped, and [`Chosen::skipped`] says which and why,
//! so that the CPU plugin installed next to it runs the model. On a TPU VM libtpu makes its
//! client and wins as before.

use std::path::Path;

use crate::cache::ExecutableCache;
use crate::client::Client;
use crate::discover::{Found, PluginKind};
use crate::env::EnvVars;
use crate::error::Result;
use crate::options::ClientOptions;

/// A client ready to compile and run.
#[derive(Debug)]
pub struct Runtime {
    /// The plugin file and how it was found.
    pub found: Found,
    /// The client.
    pub client: Client,
    /// The executable cache (disabled when asked).
    pub cache: ExecutableCache,
    /// Plugins found before it that could not make a client, with why.
    pub skipped: Vec<Skipped>,
}

/// A plugin discovery found that could not make a client with devices here.
#[derive(Clone, Debug)]
pub struct Skipped {
    /// The plugin.
    pub found: Found,
    /// Why (the loader's or the client's error).
    pub why: String,
}

impl Skipped {
    /// One line for the user: `skipped PATH (why); using PATH`.
    #[must_use]
    pub fn note(&self, used: &Found) -> String {
        format!(
            "PJRT plugin {} skipped ({}); using {}",
            self.found.path.display(),
            self.why,
            used.path.display()
        )
    }
}

/// The plugin chosen and its client.
#[derive(Debug)]
pub struct Chosen {
    /// The plugin file and how it was found.
    pub found: Found,
    /// Its client.
    pub client: Client,
    /// Plugins found before it that could not make a client.
    pub skipped: Vec<Skipped>,
}

/// The client options for a plugin: `devices` host devices on the CPU plugin (and unknown
/// plugins), the hardware's devices on TPU and GPU.
fn options(kind: PluginKind, devices: u32) -> ClientOptions {
    match kind {
        PluginKind::Cpu | PluginKind::Other => ClientOptions::cpu_devices(devices),
        PluginKind::Tpu | PluginKind::Cuda => ClientOptions::default(),
    }
}

fn client_of(found: &Found, devices: u32) -> Result<Client> {
    let plugin = crate::load(&found.path)?;
    let client = Client::new(plugin, &options(found.kind, devices))?;
    if client.devices().is_empty() {
        return Err(crate::PjrtError::NoDevices {
            platform: client.platform_name().to_owned(),
            detail: "the client reports no addressable devices".into(),
        });
    }
    Ok(client)
}

/// The client of the plugin to use (see the module doc): `explicit` or `$TPUPORT_PJRT_PLUGIN`
/// when set, else the first discovered plugin that makes a client with devices.
///
/// # Errors
/// No plugin found; a forced plugin that fails; or, when every discovered plugin fails, the
/// first one's error (the most preferred, e.g. libtpu's on a TPU VM whose TPU is busy).
pub fn choose(explicit: Option<&Path>, devices: u32) -> Result<Chosen> {
    let forced = explicit.is_some()
        || std::env::var_os(EnvVars::TPUPORT_PJRT_PLUGIN).is_some_and(|v| !v.is_empty());
    if forced {
        let found = crate::find(explicit)?;
        let client = client_of(&found, devices)?;
        return Ok(Chosen { found, client, skipped: Vec::new() });
    }
    let mut skipped = Vec::new();
    let mut first_error = None;
    for found in crate::discover(None) {
        match client_of(&found, devices) {
            Ok(client) => return Ok(Chosen { found, client, skipped }),
            Err(e) => {
                skipped.push(Skipped { found, why: e.to_string() });
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(crate::discover::not_found))
}

impl Runtime {
    /// The plugin and client [`choose`] picks: with `devices` devices on the CPU plugin (and
    /// unknown plugins), with the hardware's devices on TPU and GPU. The cache is the default location unless `cache` is
    /// false.
    ///
    /// # Errors
    /// No plugin found, a plugin that does not load, or the client's creation error.
    pub fn open(explicit: Option<&Path>, devices: u32, cache: bool) -> Result<Runtime> {
        let Chosen { found, client, skipped } = choose(explicit, devices)?;
        let cache =
            if cache { ExecutableCache::default_location() } else { ExecutableCache::disabled() };
        Ok(Runtime { found, client, cache, skipped })
    }

    /// The plugin's newest StableHLO version when `module_version` (`1.2.3`) is newer than it:
    /// compiling such a module may fail.
    #[must_use]
    pub fn stablehlo_newer_than_plugin(&self, module_version: &str) -> Option<String> {
        let (_, cur) = self.client.plugin().stablehlo_range()?;
        let parts: Vec<i64> =
            module_version.split('.').filter_map(|s| s.trim().parse().ok()).collect();
        (parts.len() == 3 && [parts[0], parts[1], parts[2]] > cur)
            .then(|| format!("{}.{}.{}", cur[0], cur[1], cur[2]))
    }
}
