//! [`Runtime`]: a plugin found and loaded, a client with the devices a module needs, and the
//! executable cache: what every verb that executes opens first.

use std::path::Path;

use crate::cache::ExecutableCache;
use crate::client::Client;
use crate::discover::{Found, PluginKind};
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
}

impl Runtime {
    /// Finds the plugin (`explicit`, else discovery as [`crate::find`]), loads it and creates
    /// a client: with `devices` devices on the CPU plugin (and unknown plugins), with the
    /// hardware's devices on TPU and GPU. The cache is the default location unless `cache` is
    /// false.
    ///
    /// # Errors
    /// No plugin found, a plugin that does not load, or the client's creation error.
    pub fn open(explicit: Option<&Path>, devices: u32, cache: bool) -> Result<Runtime> {
        let found = crate::find(explicit)?;
        let plugin = crate::load(&found.path)?;
        let opts = match found.kind {
            PluginKind::Cpu | PluginKind::Other => ClientOptions::cpu_devices(devices),
            PluginKind::Tpu | PluginKind::Cuda => ClientOptions::default(),
        };
        let client = Client::new(plugin, &opts)?;
        let cache =
            if cache { ExecutableCache::default_location() } else { ExecutableCache::disabled() };
        Ok(Runtime { found, client, cache })
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
