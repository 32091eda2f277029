//! [`Client`]: a PJRT client, shareable across threads.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use tpuport_model::{DType, HostTensor};

use crate::api::{Api, call};
use crate::buffer::Buffer;
use crate::device::{Device, DeviceDescription};
use crate::env::EnvVars;
use crate::error::{PjrtError, Result};
use crate::event::Event;
use crate::executable::LoadedExecutable;
use crate::named_value::RawNamedValues;
use crate::options::{ClientOptions, CompileOptions};
use crate::plugin::Plugin;
use crate::program::Program;
use crate::sys;

/// Shared state of a client; every wrapper created from it holds an `Arc` to it, so the
/// client is destroyed only after its last buffer and executable.
pub(crate) struct ClientInner {
    pub(crate) plugin: &'static Plugin,
    pub(crate) raw: *mut sys::PJRT_Client,
    platform_name: String,
    platform_version: String,
    pub(crate) addressable: Vec<*mut sys::PJRT_Device>,
}

// SAFETY: a PJRT client is thread-safe (XLA's PjRtClient contract: all methods may be called
// concurrently); the device pointers are owned by the client and immutable.
unsafe impl Send for ClientInner {}
// SAFETY: as above.
unsafe impl Sync for ClientInner {}

impl ClientInner {
    pub(crate) fn api(&self) -> &'static Api {
        &self.plugin.api
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        let mut a = sys::PJRT_Client_Destroy_Args::new();
        a.client = self.raw;
        // SAFETY: the last reference to the client is going away; it is destroyed once.
        let _ = unsafe { call!(self.api(), PJRT_Client_Destroy, &raw mut a) };
    }
}

/// A StableHLO text rewrite for the CPU plugin: `Some(text)` to compile instead, `None` to
/// compile the module as given.
pub type ProgramRewrite = fn(&str) -> Option<String>;

static CPU_PROGRAM_REWRITE: OnceLock<ProgramRewrite> = OnceLock::new();

/// Registers the rewrite every CPU-plugin compile applies to text modules (the binary registers
/// `tpuport_lower`'s depthwise-convolution unrolling; the runtime knows nothing of StableHLO).
/// Returns false when one was already registered (the first stays).
pub fn set_cpu_program_rewrite(f: ProgramRewrite) -> bool {
    CPU_PROGRAM_REWRITE.set(f).is_ok()
}

/// A PJRT client: devices, compilation, host↔device transfers. `Send + Sync`; clone it
/// cheaply or share it by reference between threads.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("platform", &self.inner.platform_name)
            .field("devices", &self.inner.addressable.len())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Creates a client.
    ///
    /// # Errors
    /// The plugin's error; [`PjrtError::NoDevices`] when it reports no devices (libtpu on a
    /// machine without a TPU).
    pub fn new(plugin: &'static Plugin, options: &ClientOptions) -> Result<Client> {
        let api = &plugin.api;
        if !options.skip_hardware_check
            && crate::PluginKind::of(plugin.path()) == crate::PluginKind::Tpu
            && !crate::tpu_hardware_present()
        {
            // libtpu would retry the GCE metadata server for minutes before failing.
            return Err(PjrtError::NoDevices {
                platform: "TPU".into(),
                detail: "this machine has no /dev/accel* or /dev/vfio/<n> device".into(),
            });
        }
        plugin.initialize()?;
        let named = RawNamedValues::new(&options.create_options);
        let mut a = sys::PJRT_Client_Create_Args::new();
        a.create_options = named.as_ptr();
        a.num_options = named.len();
        // SAFETY: the options array and the strings it points to live in `options`/`named`
        // across the call; the callbacks are null (single-process client).
        let created = unsafe { call!(api, PJRT_Client_Create, &raw mut a) };
        if let Err(e) = created {
            return Err(no_devices(plugin, e));
        }
        let raw = a.client;
        let mut inner = ClientInner {
            plugin,
            raw,
            platform_name: String::new(),
            platform_version: String::new(),
            addressable: vec![],
        };
        let mut n = sys::PJRT_Client_PlatformName_Args::new();
        n.client = raw;
        // SAFETY: `raw` is the live client; the name is owned by the client and copied.
        unsafe {
            call!(api, PJRT_Client_PlatformName, &raw mut n)?;
            inner.platform_name = crate::util::lossy(n.platform_name, n.platform_name_size);
        }
        let mut v = sys::PJRT_Client_PlatformVersion_Args::new();
        v.client = raw;
        // SAFETY: as above.
        unsafe {
            call!(api, PJRT_Client_PlatformVersion, &raw mut v)?;
            inner.platform_version =
                crate::util::lossy(v.platform_version, v.platform_version_size);
        }
        let mut d = sys::PJRT_Client_AddressableDevices_Args::new();
        d.client = raw;
        // SAFETY: as above; the device array is owned by the client.
        unsafe {
            call!(api, PJRT_Client_AddressableDevices, &raw mut d)?;
            inner.addressable =
                crate::util::to_vec(d.addressable_devices, d.num_addressable_devices);
        }
        if inner.addressable.is_empty() {
            return Err(PjrtError::NoDevices {
                platform: inner.platform_name.clone(),
                detail: "the client has no addressable devices".into(),
            });
        }
        Ok(Client { inner: Arc::new(inner) })
    }

    /// The plugin this client runs on.
    #[must_use]
    pub fn plugin(&self) -> &'static Plugin {
        self.inner.plugin
    }

    /// Platform name (`cpu`, `tpu`, `cuda`).
    #[must_use]
    pub fn platform_name(&self) -> &str {
        &self.inner.platform_name
    }

    /// Platform version string (libtpu version on TPU, CUDA version on GPU).
    #[must_use]
    pub fn platform_version(&self) -> &str {
        &self.inner.platform_version
    }

    /// Addressable devices, in the plugin's order.
    #[must_use]
    pub fn devices(&self) -> Vec<Device> {
        self.inner.addressable.iter().map(|&d| Device::new(self.inner.clone(), d)).collect()
    }

    /// Device descriptions of the client's topology (non-owning: the topology belongs to the
    /// client and is never destroyed here).
    ///
    /// # Errors
    /// When the plugin does not implement the topology query.
    pub fn topology(&self) -> Result<(String, Vec<DeviceDescription>)> {
        let api = self.inner.api();
        let mut t = sys::PJRT_Client_TopologyDescription_Args::new();
        t.client = self.inner.raw;
        // SAFETY: live client; the topology is client-owned and outlives this call.
        unsafe { call!(api, PJRT_Client_TopologyDescription, &raw mut t) }?;
        let mut n = sys::PJRT_TopologyDescription_PlatformName_Args::new();
        n.topology = t.topology;
        // SAFETY: the topology pointer is valid while the client lives.
        let name = unsafe {
            call!(api, PJRT_TopologyDescription_PlatformName, &raw mut n)?;
            crate::util::lossy(n.platform_name, n.platform_name_size)
        };
        let mut g = sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        g.topology = t.topology;
        // SAFETY: as above; descriptions share the topology's lifetime.
        let descs = unsafe {
            call!(api, PJRT_TopologyDescription_GetDeviceDescriptions, &raw mut g)?;
            crate::util::to_vec(g.descriptions, g.num_descriptions)
        };
        let out = descs
            .into_iter()
            .map(|d| DeviceDescription::read(api, d))
            .collect::<Result<Vec<_>>>()?;
        Ok((name, out))
    }

    /// The plugin's default device assignment for `replicas × partitions` (`[replica][partition]`
    /// device ids).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn default_device_assignment(
        &self,
        replicas: u32,
        partitions: u32,
    ) -> Result<Vec<Vec<i32>>> {
        let n = (replicas as usize).saturating_mul(partitions as usize);
        let mut out = vec![0i32; n];
        let mut a = sys::PJRT_Client_DefaultDeviceAssignment_Args::new();
        a.client = self.inner.raw;
        a.num_replicas = i32::try_from(replicas)
            .map_err(|_| PjrtError::InvalidArgument("too many replicas".into()))?;
        a.num_partitions = i32::try_from(partitions)
            .map_err(|_| PjrtError::InvalidArgument("too many partitions".into()))?;
        a.default_assignment_size = n;
        a.default_assignment = out.as_mut_ptr();
        // SAFETY: `out` has room for `n` ints and outlives the call.
        unsafe { call!(self.inner.api(), PJRT_Client_DefaultDeviceAssignment, &raw mut a) }?;
        Ok(out.chunks(partitions.max(1) as usize).map(<[i32]>::to_vec).collect())
    }

    /// Compiles a program: [`Client::effective_program`] of it, with
    /// [`Client::effective_options`].
    ///
    /// # Errors
    /// The plugin's compile error (its message names the problem in the module).
    pub fn compile(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        self.compile_exact(&self.effective_program(program), options)
    }

    /// The program a compile on this client really compiles: on the CPU plugin, the text
    /// module after the rewrite registered with [`set_cpu_program_rewrite`] (when one is, it
    /// changes something and `$TPUPORT_NO_CPU_REWRITE` is not set); else `program` itself.
    #[must_use]
    pub fn effective_program<'p>(&self, program: &'p Program) -> Cow<'p, Program> {
        let rewrite = CPU_PROGRAM_REWRITE.get().filter(|_| {
            self.platform_name().eq_ignore_ascii_case("cpu")
                && std::env::var_os(EnvVars::TPUPORT_NO_CPU_REWRITE).is_none_or(|v| v.is_empty())
                && program.format() == "mlir"
                && !program.is_bytecode()
        });
        match rewrite
            .and_then(|f| f(std::str::from_utf8(program.code()).ok()?))
            .map(|text| Program::mlir(text.into_bytes()))
        {
            Some(p) => Cow::Owned(p),
            None => Cow::Borrowed(program),
        }
    }

    /// Compiles `program` as given (no [`Client::effective_program`] step).
    pub(crate) fn compile_exact(
        &self,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<LoadedExecutable> {
        let opts = self.effective_options(options).encode();
        let mut prog = program.raw();
        let mut a = sys::PJRT_Client_Compile_Args::new();
        a.client = self.inner.raw;
        a.program = &raw mut prog;
        a.compile_options = opts.as_ptr().cast();
        a.compile_options_size = opts.len();
        // SAFETY: program code/format and the options bytes outlive the call; the plugin only
        // reads them.
        unsafe { call!(self.inner.api(), PJRT_Client_Compile, &raw mut a) }?;
        LoadedExecutable::new(self.inner.clone(), a.executable)
    }

    /// The options a compile on this client really uses: `options`, plus two XLA:CPU
    /// workarounds on the CPU plugin, each unless the user chose that flag (`XLA_FLAGS` naming
    /// it, or `options` already overriding it):
    ///
    /// - `xla_cpu_use_xnnpack=false`. With XNNPACK on, xla-cpu-pjrt 0.0.1 computed wrong
    ///   values once an execution's buffers were freed and new ones uploaded for the next: on
    ///   an AMD EPYC host with AVX2 and no AVX-512 (2026-12-05), `tests/buffer_reuse.rs` and
    ///   `tests/stale_inputs.rs` failed in 5 runs of 5 (the freed-buffer executions matched no
    ///   sample; the same samples with every buffer held were right), also with
    ///   `--xla_cpu_max_isa=AVX2`, and passed in 5 of 5 with XNNPACK off (by this override, or
    ///   by `XLA_FLAGS`). `XLA_FLAGS=--xla_cpu_use_xnnpack=true` brings the failure back. A
    ///   server reloading a model, or any verb uploading new weights, would be exposed.
    /// - `xla_cpu_max_isa=AVX2` on a host with AVX-512. On an AMD EPYC host with AVX-512
    ///   (Zen 4, 2026-12-03) the same tests failed every run, with held buffers too, and were
    ///   right with that cap. Whether XNNPACK off alone suffices there was not checked (no
    ///   such host since), so the cap stays.
    #[must_use]
    pub fn effective_options(&self, options: &CompileOptions) -> CompileOptions {
        if !self.platform_name().eq_ignore_ascii_case("cpu") {
            return options.clone();
        }
        let flags = std::env::var("XLA_FLAGS").unwrap_or_default();
        let mut o = options.clone();
        // `with_override` keeps a value the options already have.
        if !flags.contains("xla_cpu_use_xnnpack") {
            o = o.with_override("xla_cpu_use_xnnpack", "false");
        }
        if host_has_avx512() && !flags.contains("xla_cpu_max_isa") {
            o = o.with_override("xla_cpu_max_isa", "AVX2");
        }
        o
    }

    /// Loads an executable serialized by [`crate::Executable::serialize`] with the same plugin.
    ///
    /// # Errors
    /// The plugin's error (e.g. bytes from another plugin version).
    pub fn deserialize(&self, bytes: &[u8]) -> Result<LoadedExecutable> {
        let mut a = sys::PJRT_Executable_DeserializeAndLoad_Args::new();
        a.client = self.inner.raw;
        a.serialized_executable = bytes.as_ptr().cast();
        a.serialized_executable_size = bytes.len();
        // SAFETY: `bytes` outlives the call and is only read.
        unsafe { call!(self.inner.api(), PJRT_Executable_DeserializeAndLoad, &raw mut a) }?;
        LoadedExecutable::new(self.inner.clone(), a.loaded_executable)
    }

    /// Copies a host tensor to `device`. Returns once the plugin no longer needs the host
    /// bytes (`done_with_host_buffer` awaited).
    ///
    /// # Errors
    /// Unsupported dtype, a device of another client, or the plugin's error.
    pub fn buffer_from_host(&self, t: &HostTensor, device: &Device) -> Result<Buffer> {
        self.buffer_from_bytes(t.dtype, &t.shape, t.data(), device)
    }

    /// Copies dense row-major little-endian bytes of `dtype`/`dims` to `device`.
    ///
    /// # Errors
    /// As [`Client::buffer_from_host`]; also when `bytes` has the wrong length.
    pub fn buffer_from_bytes(
        &self,
        dtype: DType,
        dims: &[u64],
        bytes: &[u8],
        device: &Device,
    ) -> Result<Buffer> {
        if !Arc::ptr_eq(&device.client, &self.inner) {
            return Err(PjrtError::InvalidArgument("device belongs to another client".into()));
        }
        let elems = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        let need = elems.and_then(|n| dtype.storage_bytes(n));
        if need != Some(bytes.len() as u64) {
            return Err(PjrtError::InvalidArgument(format!(
                "host data for {dtype}{dims:?} must be {} bytes, got {}",
                need.map_or_else(|| "?".to_owned(), |n| n.to_string()),
                bytes.len()
            )));
        }
        let dims_i64: Vec<i64> = dims
            .iter()
            .map(|&d| {
                i64::try_from(d)
                    .map_err(|_| PjrtError::InvalidArgument(format!("dimension {d} too large")))
            })
            .collect::<Result<_>>()?;
        // 4-bit types cross the C API one element per byte (the plugin packs them itself).
        let unpacked = matches!(dtype, DType::I4 | DType::U4)
            .then(|| crate::util::unpack_nibbles(bytes, elems.unwrap_or(0), dtype == DType::I4));
        let bytes = unpacked.as_deref().unwrap_or(bytes);
        let api = self.inner.api();
        let mut a = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        a.client = self.inner.raw;
        a.data = bytes.as_ptr().cast();
        a.type_ = crate::dtype::to_pjrt(dtype)?;
        a.dims = dims_i64.as_ptr();
        a.num_dims = dims_i64.len();
        a.host_buffer_semantics = sys::PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
        a.device = device.raw;
        // SAFETY: `bytes` and `dims_i64` outlive the call; with "until transfer completes" the
        // plugin may read `bytes` until `done_with_host_buffer` fires, which is awaited below
        // before the borrow of `bytes` ends.
        unsafe { call!(api, PJRT_Client_BufferFromHostBuffer, &raw mut a) }?;
        let buffer = Buffer::new(self.inner.clone(), a.buffer);
        Event::new(api, a.done_with_host_buffer).wait()?;
        Ok(buffer)
    }
}

/// Turns a client-creation failure that means "no devices" into [`PjrtError::NoDevices`].
fn no_devices(plugin: &Plugin, e: PjrtError) -> PjrtError {
    let PjrtError::Call { message, code, .. } = &e else { return e };
    let m = message.to_ascii_lowercase();
    let is_tpu = plugin.path().to_string_lossy().contains("libtpu") || m.contains("tpu");
    // libtpu 0.0.52 without hardware: NOT_FOUND "TPU initialization failed: No jellyfish
    // device found."
    let missing = *code == crate::ErrorCode::NOT_FOUND
        || [
            "device found",
            "no tpu",
            "not find",
            "not found",
            "no such",
            "no devices",
            "failed to open",
        ]
        .iter()
        .any(|w| m.contains(w));
    if is_tpu && missing {
        return PjrtError::NoDevices { platform: "TPU".into(), detail: message.clone() };
    }
    e
}

/// Whether the host CPU has AVX-512 (foundation).
fn host_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
