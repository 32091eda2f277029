//! [`Topology`]: a device topology described by a plugin without a client, and compilation
//! against it (ahead-of-time compilation for hardware that is not attached).
//!
//! libtpu builds a topology from a name such as `v5e:2x4` (`PJRT_TopologyDescription_Create`)
//! on any machine, with no TPU, and `PJRT_Compile` then runs the real TPU compiler for it. The
//! result is an unloaded [`Executable`]: memory statistics, cost analysis, layouts, shardings
//! and a serialized form a TPU VM can load, but nothing to execute here.
//!
//! libtpu's `PJRT_Plugin_Initialize` is deferred at load time on machines without TPU device
//! nodes (see [`crate::load`]); [`Topology::create`] runs it, which takes well under a second
//! when the GCE metadata server is not queried ([`crate::libtpu_offline_env`]), and refuses at
//! once when `TPU_SKIP_MDS_QUERY` is unset there (it would otherwise retry for ten minutes).

use crate::api::call;
use crate::device::DeviceDescription;
use crate::env::EnvVars;
use crate::error::{PjrtError, Result};
use crate::executable::Executable;
use crate::named_value::{self, NamedValue, RawNamedValues};
use crate::options::CompileOptions;
use crate::plugin::Plugin;
use crate::program::Program;
use crate::sys;

/// An owned `PJRT_TopologyDescription` created from a name (not a client's topology).
pub struct Topology {
    plugin: &'static Plugin,
    raw: *mut sys::PJRT_TopologyDescription,
    name: String,
}

// SAFETY: a topology description is immutable after creation; the plugin's queries and
// `PJRT_Compile` on it are thread-safe.
unsafe impl Send for Topology {}
// SAFETY: as above.
unsafe impl Sync for Topology {}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let mut a = sys::PJRT_TopologyDescription_Destroy_Args::new();
        a.topology = self.raw;
        // SAFETY: created by `PJRT_TopologyDescription_Create`, owned by `self`, destroyed once.
        let _ = unsafe { call!(self.plugin.api, PJRT_TopologyDescription_Destroy, &raw mut a) };
    }
}

impl Topology {
    /// Creates the topology `name` (`v5e:2x4`) with platform-specific `options`
    /// (`chip_config_name`, `chips_per_host_bounds`, `num_slices`, `wrap` for libtpu).
    /// Initialises the plugin first if that was deferred.
    ///
    /// # Errors
    /// The plugin's initialisation error, [`crate::PjrtError::Unavailable`] when the plugin
    /// has no `PJRT_TopologyDescription_Create`, or its error for an unknown name.
    pub fn create(plugin: &'static Plugin, name: &str, options: &[NamedValue]) -> Result<Topology> {
        if !plugin.is_initialized()
            && crate::PluginKind::of(plugin.path()) == crate::PluginKind::Tpu
            && !crate::tpu_hardware_present()
            && std::env::var_os(EnvVars::TPU_SKIP_MDS_QUERY).is_none()
        {
            // Initialising would retry the GCE metadata server for about ten minutes.
            return Err(PjrtError::Environment {
                plugin: plugin.path().to_owned(),
                what: format!(
                    "libtpu on a machine without a TPU needs {}=1 in the environment before it \
                     starts (see tpuport_pjrt::libtpu_offline_env); without it, its \
                     initialisation retries the GCE metadata server for about ten minutes",
                    EnvVars::TPU_SKIP_MDS_QUERY
                ),
            });
        }
        plugin.initialize()?;
        let named = RawNamedValues::new(options);
        let mut a = sys::PJRT_TopologyDescription_Create_Args::new();
        a.topology_name = name.as_ptr().cast();
        a.topology_name_size = name.len();
        a.create_options = named.as_ptr();
        a.num_options = named.len();
        // SAFETY: the name, the options array and the strings it points to outlive the call;
        // the returned topology is owned by the `Topology` built below.
        unsafe { call!(plugin.api, PJRT_TopologyDescription_Create, &raw mut a) }?;
        Ok(Topology { plugin, raw: a.topology, name: name.to_owned() })
    }

    /// The name it was created from.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin that described it.
    #[must_use]
    pub fn plugin(&self) -> &'static Plugin {
        self.plugin
    }

    /// Platform name (`tpu`).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn platform_name(&self) -> Result<String> {
        let mut a = sys::PJRT_TopologyDescription_PlatformName_Args::new();
        a.topology = self.raw;
        // SAFETY: live topology; the name has its lifetime and is copied.
        unsafe {
            call!(self.plugin.api, PJRT_TopologyDescription_PlatformName, &raw mut a)?;
            Ok(crate::util::lossy(a.platform_name, a.platform_name_size))
        }
    }

    /// Platform version (libtpu's build description).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn platform_version(&self) -> Result<String> {
        let mut a = sys::PJRT_TopologyDescription_PlatformVersion_Args::new();
        a.topology = self.raw;
        // SAFETY: live topology; the string has its lifetime and is copied.
        unsafe {
            call!(self.plugin.api, PJRT_TopologyDescription_PlatformVersion, &raw mut a)?;
            Ok(crate::util::lossy(a.platform_version, a.platform_version_size))
        }
    }

    /// One description per device of the topology (kind `TPU v5 lite`, coordinates, …).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn devices(&self) -> Result<Vec<DeviceDescription>> {
        let mut a = sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        a.topology = self.raw;
        // SAFETY: live topology; the array is owned by it and copied before use.
        let raw = unsafe {
            call!(self.plugin.api, PJRT_TopologyDescription_GetDeviceDescriptions, &raw mut a)?;
            crate::util::to_vec(a.descriptions, a.num_descriptions)
        };
        raw.into_iter().map(|d| DeviceDescription::read(&self.plugin.api, d)).collect()
    }

    /// Topology attributes (libtpu: chip bounds, cores per chip, …).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn attributes(&self) -> Result<Vec<NamedValue>> {
        let mut a = sys::PJRT_TopologyDescription_Attributes_Args::new();
        a.topology = self.raw;
        // SAFETY: live topology; the attributes have its lifetime and are copied.
        unsafe {
            call!(self.plugin.api, PJRT_TopologyDescription_Attributes, &raw mut a)?;
            Ok(named_value::read_all(a.attributes, a.num_attributes))
        }
    }

    /// Compiles `program` for this topology. No device is needed or touched: the result can
    /// be inspected and serialized, not run.
    ///
    /// # Errors
    /// The compiler's error (an op the target cannot compile, a program too large, …), or
    /// [`crate::PjrtError::Unavailable`] when the plugin has no `PJRT_Compile`.
    pub fn compile(&self, program: &Program, options: &CompileOptions) -> Result<Executable> {
        let opts = options.encode();
        let prog = program.raw();
        let mut a = sys::PJRT_Compile_Args::new();
        a.topology = self.raw;
        a.program = &raw const prog;
        a.compile_options = opts.as_ptr().cast();
        a.compile_options_size = opts.len();
        // SAFETY: topology, program bytes and options bytes outlive the call and are only
        // read; no client is passed; the returned executable is owned by the result.
        unsafe { call!(self.plugin.api, PJRT_Compile, &raw mut a) }?;
        Ok(Executable::from_raw(&self.plugin.api, a.executable))
    }
}
