//! [`LoadedExecutable`] (compiled and loaded on devices) and [`Executable`] (its
//! device-independent view: introspection and serialization).

use std::sync::Arc;

use serde::Serialize;
use tpuport_model::DType;

use crate::api::{Api, call};
use crate::buffer::Buffer;
use crate::client::ClientInner;
use crate::device::Device;
use crate::error::{PjrtError, Result};
use crate::event::{Event, wait_all};
use crate::named_value::{self, NamedValue};
use crate::sys;

/// An owned `PJRT_Executable`.
pub struct Executable {
    pub(crate) api: &'static Api,
    pub(crate) raw: *mut sys::PJRT_Executable,
}

// SAFETY: executables are immutable after compilation; queries are thread-safe.
unsafe impl Send for Executable {}
// SAFETY: as above.
unsafe impl Sync for Executable {}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable").field("raw", &self.raw).finish_non_exhaustive()
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        let mut a = sys::PJRT_Executable_Destroy_Args::new();
        a.executable = self.raw;
        // SAFETY: owned by `self`, destroyed once.
        let _ = unsafe { call!(self.api, PJRT_Executable_Destroy, &raw mut a) };
    }
}

/// `PJRT_Executable_GetCompiledMemoryStats`, in bytes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompiledMemoryStats {
    /// Generated code.
    pub generated_code: i64,
    /// Arguments.
    pub argument: i64,
    /// Outputs.
    pub output: i64,
    /// Argument bytes reused for outputs.
    pub alias: i64,
    /// Temporaries.
    pub temp: i64,
    /// Host-side argument bytes.
    pub host_argument: i64,
    /// Host-side output bytes.
    pub host_output: i64,
    /// Host-side temporaries.
    pub host_temp: i64,
    /// Peak device memory of the program, where the plugin reports it (0 otherwise).
    pub peak: i64,
    /// Total device memory the plugin reports (`total_size_in_bytes`; 0 when not given).
    pub total: i64,
}

/// Element type and (per-device) dimensions of one output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OutputInfo {
    /// Element type.
    pub dtype: DType,
    /// Dimensions of one device's shard.
    pub dims: Vec<u64>,
}

impl Executable {
    /// Takes ownership of an executable returned by the plugin (`PJRT_Compile`).
    pub(crate) fn from_raw(api: &'static Api, raw: *mut sys::PJRT_Executable) -> Executable {
        Executable { api, raw }
    }

    /// Program name (`jit_f`).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn name(&self) -> Result<String> {
        let mut a = sys::PJRT_Executable_Name_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; the name has its lifetime and is copied.
        unsafe {
            call!(self.api, PJRT_Executable_Name, &raw mut a)?;
            Ok(crate::util::lossy(a.executable_name, a.executable_name_size))
        }
    }

    /// Number of replicas.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn num_replicas(&self) -> Result<usize> {
        let mut a = sys::PJRT_Executable_NumReplicas_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable.
        unsafe { call!(self.api, PJRT_Executable_NumReplicas, &raw mut a) }?;
        Ok(a.num_replicas)
    }

    /// Number of partitions.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn num_partitions(&self) -> Result<usize> {
        let mut a = sys::PJRT_Executable_NumPartitions_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable.
        unsafe { call!(self.api, PJRT_Executable_NumPartitions, &raw mut a) }?;
        Ok(a.num_partitions)
    }

    /// Number of outputs per device.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn num_outputs(&self) -> Result<usize> {
        let mut a = sys::PJRT_Executable_NumOutputs_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable.
        unsafe { call!(self.api, PJRT_Executable_NumOutputs, &raw mut a) }?;
        Ok(a.num_outputs)
    }

    /// Element types and per-device dimensions of the outputs.
    ///
    /// # Errors
    /// The plugin's error, or inconsistent counts.
    pub fn outputs(&self) -> Result<Vec<OutputInfo>> {
        let mut t = sys::PJRT_Executable_OutputElementTypes_Args::new();
        t.executable = self.raw;
        let mut d = sys::PJRT_Executable_OutputDimensions_Args::new();
        d.executable = self.raw;
        // SAFETY: live executable; the arrays have its lifetime and are copied.
        let (types, sizes, dims) = unsafe {
            call!(self.api, PJRT_Executable_OutputElementTypes, &raw mut t)?;
            call!(self.api, PJRT_Executable_OutputDimensions, &raw mut d)?;
            let types = crate::util::to_vec(t.output_types, t.num_output_types);
            let sizes = crate::util::to_vec(d.dim_sizes, d.num_outputs);
            let total = sizes.iter().sum::<usize>();
            (types, sizes, crate::util::to_vec(d.dims, total))
        };
        if types.len() != sizes.len() {
            return Err(PjrtError::InvalidArgument(format!(
                "plugin reports {} output types but {} output shapes",
                types.len(),
                sizes.len()
            )));
        }
        let mut at = 0;
        types
            .into_iter()
            .zip(sizes)
            .map(|(ty, n)| {
                let dims =
                    dims[at..at + n].iter().map(|&x| u64::try_from(x).unwrap_or(0)).collect();
                at += n;
                Ok(OutputInfo { dtype: crate::dtype::from_pjrt(ty)?, dims })
            })
            .collect()
    }

    /// The compiler's cost analysis (`flops`, `bytes accessed`, `transcendentals`, …).
    ///
    /// # Errors
    /// The plugin's error (not every plugin implements it).
    pub fn cost_analysis(&self) -> Result<Vec<NamedValue>> {
        let mut a = sys::PJRT_Executable_GetCostAnalysis_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; properties have its lifetime and are copied.
        unsafe {
            call!(self.api, PJRT_Executable_GetCostAnalysis, &raw mut a)?;
            Ok(named_value::read_all(a.properties, a.num_properties))
        }
    }

    /// Memory the compiled program needs.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn compiled_memory_stats(&self) -> Result<CompiledMemoryStats> {
        let mut a = sys::PJRT_Executable_GetCompiledMemoryStats_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; outputs are integers.
        unsafe { call!(self.api, PJRT_Executable_GetCompiledMemoryStats, &raw mut a) }?;
        Ok(CompiledMemoryStats {
            generated_code: a.generated_code_size_in_bytes,
            argument: a.argument_size_in_bytes,
            output: a.output_size_in_bytes,
            alias: a.alias_size_in_bytes,
            temp: a.temp_size_in_bytes,
            host_argument: a.host_argument_size_in_bytes,
            host_output: a.host_output_size_in_bytes,
            host_temp: a.host_temp_size_in_bytes,
            peak: a.peak_memory_in_bytes,
            total: a.total_size_in_bytes,
        })
    }

    /// The plugin's fingerprint of the compiled program.
    ///
    /// # Errors
    /// The plugin's error (not implemented everywhere).
    pub fn fingerprint(&self) -> Result<String> {
        let mut a = sys::PJRT_Executable_Fingerprint_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; the string has its lifetime and is copied.
        unsafe {
            call!(self.api, PJRT_Executable_Fingerprint, &raw mut a)?;
            Ok(crate::util::lossy(a.executable_fingerprint, a.executable_fingerprint_size))
        }
    }

    /// Platform-specific serialization, loadable by the same plugin version with
    /// [`crate::Client::deserialize`].
    ///
    /// # Errors
    /// The plugin's error.
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let mut a = sys::PJRT_Executable_Serialize_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable. The bytes live as long as `serialized_executable`, which is
        // freed with the plugin's deleter exactly once after copying.
        unsafe {
            call!(self.api, PJRT_Executable_Serialize, &raw mut a)?;
            let bytes =
                crate::util::to_vec(a.serialized_bytes.cast::<u8>(), a.serialized_bytes_size);
            if let Some(del) = a.serialized_executable_deleter {
                del(a.serialized_executable);
            }
            Ok(bytes)
        }
    }
}

/// A compiled program loaded on its devices. `Send + Sync`: executions from several threads
/// at once are allowed.
pub struct LoadedExecutable {
    client: Arc<ClientInner>,
    raw: *mut sys::PJRT_LoadedExecutable,
    exe: Executable,
    num_outputs: usize,
    devices: Vec<*mut sys::PJRT_Device>,
}

// SAFETY: PjRtLoadedExecutable::Execute is thread-safe; the cached fields are immutable.
unsafe impl Send for LoadedExecutable {}
// SAFETY: as above.
unsafe impl Sync for LoadedExecutable {}

impl std::fmt::Debug for LoadedExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedExecutable")
            .field("num_outputs", &self.num_outputs)
            .field("devices", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl Drop for LoadedExecutable {
    fn drop(&mut self) {
        let mut a = sys::PJRT_LoadedExecutable_Destroy_Args::new();
        a.executable = self.raw;
        // SAFETY: owned by `self`, destroyed once (after `exe`, a separate object, is dropped
        // with the other fields — destroying either first is allowed by the C API).
        let _ = unsafe { call!(self.client.api(), PJRT_LoadedExecutable_Destroy, &raw mut a) };
    }
}

impl LoadedExecutable {
    pub(crate) fn new(
        client: Arc<ClientInner>,
        raw: *mut sys::PJRT_LoadedExecutable,
    ) -> Result<LoadedExecutable> {
        let api = client.api();
        let mut g = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        g.loaded_executable = raw;
        // SAFETY: `raw` is a live loaded executable; the returned executable is ours to destroy.
        let got = unsafe { call!(api, PJRT_LoadedExecutable_GetExecutable, &raw mut g) };
        let mut le = LoadedExecutable {
            client,
            raw,
            exe: Executable { api, raw: g.executable },
            num_outputs: 0,
            devices: Vec::new(),
        };
        got?;
        le.num_outputs = le.exe.num_outputs()?;
        let mut d = sys::PJRT_LoadedExecutable_AddressableDevices_Args::new();
        d.executable = raw;
        // SAFETY: live executable; the device array is owned by the client and copied.
        unsafe {
            call!(api, PJRT_LoadedExecutable_AddressableDevices, &raw mut d)?;
            le.devices = crate::util::to_vec(d.addressable_devices, d.num_addressable_devices);
        }
        Ok(le)
    }

    /// The device-independent view (introspection, serialization).
    #[must_use]
    pub fn executable(&self) -> &Executable {
        &self.exe
    }

    /// Outputs per device.
    #[must_use]
    pub fn num_outputs(&self) -> usize {
        self.num_outputs
    }

    /// Devices one execution runs on, in argument-list order.
    #[must_use]
    pub fn devices(&self) -> Vec<Device> {
        self.devices.iter().map(|&d| Device::new(self.client.clone(), d)).collect()
    }

    /// Number of devices one execution runs on.
    #[must_use]
    pub fn num_devices(&self) -> usize {
        self.devices.len()
    }

    /// Runs on one device: `args` are borrowed (never donated) and stay usable.
    ///
    /// # Errors
    /// As [`LoadedExecutable::execute`].
    pub fn execute_one(&self, args: &[&Buffer]) -> Result<Vec<Buffer>> {
        let mut out = self.execute(&[args])?;
        Ok(out.pop().unwrap_or_default())
    }

    /// [`LoadedExecutable::execute`] over owned per-device lists (`[device][argument]`, as
    /// [`crate::upload`] returns them).
    ///
    /// # Errors
    /// As [`LoadedExecutable::execute`].
    pub fn execute_lists(&self, args: &[Vec<Buffer>]) -> Result<Vec<Vec<Buffer>>> {
        let lists: Vec<Vec<&Buffer>> = args.iter().map(|l| l.iter().collect()).collect();
        let refs: Vec<&[&Buffer]> = lists.iter().map(Vec::as_slice).collect();
        self.execute(&refs)
    }

    /// Runs on every device of the executable. `args[d][i]` is argument `i` on device `d`
    /// (device order as [`LoadedExecutable::devices`]); returns `outputs[d][j]`. Waits for
    /// every device to finish and reports the first device error.
    ///
    /// # Errors
    /// Wrong number of device lists or ragged lists, buffers of another client, or the
    /// plugin's execution error.
    pub fn execute(&self, args: &[&[&Buffer]]) -> Result<Vec<Vec<Buffer>>> {
        let num_devices = self.devices.len();
        if args.len() != num_devices {
            return Err(PjrtError::InvalidArgument(format!(
                "executable runs on {num_devices} device(s) but {} argument list(s) were given",
                args.len()
            )));
        }
        let num_args = args.first().map_or(0, |a| a.len());
        let mut lists: Vec<Vec<*mut sys::PJRT_Buffer>> = Vec::with_capacity(num_devices);
        for (d, list) in args.iter().enumerate() {
            if list.len() != num_args {
                return Err(PjrtError::InvalidArgument(format!(
                    "device {d} has {} arguments, device 0 has {num_args}",
                    list.len()
                )));
            }
            if let Some(b) = list.iter().find(|b| !Arc::ptr_eq(&b.client, &self.client)) {
                return Err(PjrtError::InvalidArgument(format!(
                    "buffer {:p} belongs to another client",
                    b.raw
                )));
            }
            lists.push(list.iter().map(|b| b.raw).collect());
        }
        // One plain pointer per device (never fat slice pointers), one output array per device.
        let arg_ptrs: Vec<*const *mut sys::PJRT_Buffer> =
            lists.iter().map(|l| l.as_ptr()).collect();
        let mut outputs: Vec<Vec<*mut sys::PJRT_Buffer>> =
            (0..num_devices).map(|_| vec![std::ptr::null_mut(); self.num_outputs]).collect();
        let out_ptrs: Vec<*mut *mut sys::PJRT_Buffer> =
            outputs.iter_mut().map(|o| o.as_mut_ptr()).collect();
        let mut events: Vec<*mut sys::PJRT_Event> = vec![std::ptr::null_mut(); num_devices];
        // Inputs are borrowed: mark every one non-donatable so the plugin never consumes them.
        let keep: Vec<i64> = (0..num_args as i64).collect();
        let mut opts = sys::PJRT_ExecuteOptions::new();
        opts.non_donatable_input_indices = keep.as_ptr();
        opts.num_non_donatable_input_indices = keep.len();
        let mut a = sys::PJRT_LoadedExecutable_Execute_Args::new();
        a.executable = self.raw;
        a.options = &raw mut opts;
        a.argument_lists = arg_ptrs.as_ptr();
        a.num_devices = num_devices;
        a.num_args = num_args;
        a.output_lists = out_ptrs.as_ptr();
        a.device_complete_events = events.as_mut_ptr();
        let api = self.client.api();
        // SAFETY: argument lists are `num_devices` arrays of `num_args` live buffers of this
        // client; output lists are `num_devices` caller-owned arrays of `num_outputs` slots;
        // the events array has `num_devices` slots; all outlive the call.
        unsafe { call!(api, PJRT_LoadedExecutable_Execute, &raw mut a) }?;
        // Take ownership of every output before waiting, so nothing leaks on error.
        let result: Vec<Vec<Buffer>> = outputs
            .into_iter()
            .map(|o| o.into_iter().map(|b| Buffer::new(self.client.clone(), b)).collect())
            .collect();
        wait_all(events.into_iter().map(|e| Event::new(api, e)).collect())?;
        Ok(result)
    }
}
