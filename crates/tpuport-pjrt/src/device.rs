//! [`Device`] and [`DeviceDescription`] (both non-owning: devices belong to their client).

use std::sync::Arc;

use serde::Serialize;

use crate::api::{Api, call};
use crate::client::ClientInner;
use crate::error::Result;
use crate::named_value::{self, NamedValue};
use crate::sys;

/// An addressable device of a client.
#[derive(Clone)]
pub struct Device {
    pub(crate) client: Arc<ClientInner>,
    pub(crate) raw: *mut sys::PJRT_Device,
}

// SAFETY: devices are owned by the (thread-safe) client, which this handle keeps alive.
unsafe impl Send for Device {}
// SAFETY: as above; device queries are read-only.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("raw", &self.raw).finish_non_exhaustive()
    }
}

/// What a device says about itself.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceDescription {
    /// Global id.
    pub id: i32,
    /// Process that can address it.
    pub process_index: i32,
    /// Vendor kind (`cpu`, `TPU v5 lite`, `NVIDIA H100 80GB HBM3`).
    pub kind: String,
    /// Verbose debug string.
    pub debug_string: String,
    /// Short user-facing string (`CpuDevice(id=0)`).
    pub display: String,
    /// Device attributes (`coords`, `core_on_chip`, …).
    pub attributes: Vec<NamedValue>,
}

impl DeviceDescription {
    pub(crate) fn read(
        api: &Api,
        d: *mut sys::PJRT_DeviceDescription,
    ) -> Result<DeviceDescription> {
        let mut id = sys::PJRT_DeviceDescription_Id_Args::new();
        id.device_description = d;
        let mut pi = sys::PJRT_DeviceDescription_ProcessIndex_Args::new();
        pi.device_description = d;
        let mut kind = sys::PJRT_DeviceDescription_Kind_Args::new();
        kind.device_description = d;
        let mut dbg = sys::PJRT_DeviceDescription_DebugString_Args::new();
        dbg.device_description = d;
        let mut ts = sys::PJRT_DeviceDescription_ToString_Args::new();
        ts.device_description = d;
        let mut at = sys::PJRT_DeviceDescription_Attributes_Args::new();
        at.device_description = d;
        // SAFETY: `d` is a live description owned by its device/topology; every string and
        // array returned shares that lifetime and is copied before returning.
        unsafe {
            call!(api, PJRT_DeviceDescription_Id, &raw mut id)?;
            call!(api, PJRT_DeviceDescription_ProcessIndex, &raw mut pi)?;
            call!(api, PJRT_DeviceDescription_Kind, &raw mut kind)?;
            call!(api, PJRT_DeviceDescription_DebugString, &raw mut dbg)?;
            call!(api, PJRT_DeviceDescription_ToString, &raw mut ts)?;
            let attributes = match call!(api, PJRT_DeviceDescription_Attributes, &raw mut at) {
                Ok(()) => named_value::read_all(at.attributes, at.num_attributes),
                Err(_) => Vec::new(),
            };
            Ok(DeviceDescription {
                id: id.id,
                process_index: pi.process_index,
                kind: crate::util::lossy(kind.device_kind, kind.device_kind_size),
                debug_string: crate::util::lossy(dbg.debug_string, dbg.debug_string_size),
                display: crate::util::lossy(ts.to_string, ts.to_string_size),
                attributes,
            })
        }
    }
}

/// Allocator statistics of a device (`PJRT_Device_MemoryStats`).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceMemoryStats {
    /// Bytes in use.
    pub bytes_in_use: i64,
    /// Peak bytes in use, when reported.
    pub peak_bytes_in_use: Option<i64>,
    /// Allocatable limit, when reported.
    pub bytes_limit: Option<i64>,
}

impl Device {
    pub(crate) fn new(client: Arc<ClientInner>, raw: *mut sys::PJRT_Device) -> Device {
        Device { client, raw }
    }

    /// The device's description.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn description(&self) -> Result<DeviceDescription> {
        let api = self.client.api();
        let mut a = sys::PJRT_Device_GetDescription_Args::new();
        a.device = self.raw;
        // SAFETY: live device of a live client.
        unsafe { call!(api, PJRT_Device_GetDescription, &raw mut a) }?;
        DeviceDescription::read(api, a.device_description)
    }

    /// Opaque hardware id (CUDA ordinal, TPU chip index), -1 when undefined.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn local_hardware_id(&self) -> Result<i32> {
        let mut a = sys::PJRT_Device_LocalHardwareId_Args::new();
        a.device = self.raw;
        // SAFETY: live device.
        unsafe { call!(self.client.api(), PJRT_Device_LocalHardwareId, &raw mut a) }?;
        Ok(a.local_hardware_id)
    }

    /// Allocator statistics (the CPU plugin answers `UNIMPLEMENTED`-like errors).
    ///
    /// # Errors
    /// The plugin's error.
    pub fn memory_stats(&self) -> Result<DeviceMemoryStats> {
        let mut a = sys::PJRT_Device_MemoryStats_Args::new();
        a.device = self.raw;
        // SAFETY: live device; outputs are plain integers.
        unsafe { call!(self.client.api(), PJRT_Device_MemoryStats, &raw mut a) }?;
        Ok(DeviceMemoryStats {
            bytes_in_use: a.bytes_in_use,
            peak_bytes_in_use: a.peak_bytes_in_use_is_set.then_some(a.peak_bytes_in_use),
            bytes_limit: a.bytes_limit_is_set.then_some(a.bytes_limit),
        })
    }
}
