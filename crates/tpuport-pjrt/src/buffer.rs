//! [`Buffer`]: an owning handle to device memory.

use std::sync::Arc;

use tpuport_model::{DType, HostTensor};

use crate::api::call;
use crate::client::ClientInner;
use crate::error::{PjrtError, Result};
use crate::event::Event;
use crate::sys;

/// A device buffer; destroyed on drop. Executions borrow buffers, so one buffer (weights)
/// serves many executions.
pub struct Buffer {
    pub(crate) client: Arc<ClientInner>,
    pub(crate) raw: *mut sys::PJRT_Buffer,
}

// SAFETY: PJRT buffers are thread-safe handles (PjRtBuffer's contract); this one keeps its
// client alive.
unsafe impl Send for Buffer {}
// SAFETY: as above; all methods taking `&self` are read-only queries or copies.
unsafe impl Sync for Buffer {}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer").field("raw", &self.raw).finish_non_exhaustive()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mut a = sys::PJRT_Buffer_Destroy_Args::new();
        a.buffer = self.raw;
        // SAFETY: `raw` is owned by `self` and destroyed once.
        let _ = unsafe { call!(self.client.api(), PJRT_Buffer_Destroy, &raw mut a) };
    }
}

impl Buffer {
    pub(crate) fn new(client: Arc<ClientInner>, raw: *mut sys::PJRT_Buffer) -> Buffer {
        Buffer { client, raw }
    }

    /// Element type.
    ///
    /// # Errors
    /// The plugin's error, or a type tpuport does not map.
    pub fn dtype(&self) -> Result<DType> {
        let mut a = sys::PJRT_Buffer_ElementType_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer.
        unsafe { call!(self.client.api(), PJRT_Buffer_ElementType, &raw mut a) }?;
        crate::dtype::from_pjrt(a.type_)
    }

    /// Dimensions.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn dims(&self) -> Result<Vec<u64>> {
        let mut a = sys::PJRT_Buffer_Dimensions_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer; the dims array has the buffer's lifetime and is copied.
        let dims = unsafe {
            call!(self.client.api(), PJRT_Buffer_Dimensions, &raw mut a)?;
            crate::util::to_vec(a.dims, a.num_dims)
        };
        dims.into_iter()
            .map(|d| {
                u64::try_from(d)
                    .map_err(|_| PjrtError::InvalidArgument(format!("negative dimension {d}")))
            })
            .collect()
    }

    /// Bytes the buffer occupies on the device.
    ///
    /// # Errors
    /// The plugin's error.
    pub fn on_device_size(&self) -> Result<usize> {
        let mut a = sys::PJRT_Buffer_OnDeviceSizeInBytes_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer.
        unsafe { call!(self.client.api(), PJRT_Buffer_OnDeviceSizeInBytes, &raw mut a) }?;
        Ok(a.on_device_size_in_bytes)
    }

    /// Copies the buffer to host memory as a dense row-major tensor. The size is queried
    /// first and the bytes land directly in the returned tensor's storage.
    ///
    /// # Errors
    /// The plugin's error, or a size that disagrees with dtype and shape.
    pub fn to_host(&self) -> Result<HostTensor> {
        let dtype = self.dtype()?;
        let dims = self.dims()?;
        let api = self.client.api();
        let mut q = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        q.src = self.raw;
        // SAFETY: size query (dst null) on a live buffer.
        unsafe { call!(api, PJRT_Buffer_ToHostBuffer, &raw mut q) }?;
        Event::new(api, q.event).wait()?;
        let elems = dims.iter().product::<u64>();
        // 4-bit types arrive one element per byte and are packed here.
        let nibbles = matches!(dtype, DType::I4 | DType::U4);
        let want = if nibbles { Some(elems) } else { dtype.storage_bytes(elems) };
        if want != Some(q.dst_size as u64) {
            return Err(PjrtError::InvalidArgument(format!(
                "device buffer {dtype}{dims:?} reports {} host bytes",
                q.dst_size
            )));
        }
        let mut data = vec![0u8; q.dst_size];
        let mut a = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        a.src = self.raw;
        a.dst = data.as_mut_ptr().cast();
        a.dst_size = data.len();
        // SAFETY: `data` has `dst_size` writable bytes and is not touched until the copy's
        // event has completed (awaited below).
        unsafe { call!(api, PJRT_Buffer_ToHostBuffer, &raw mut a) }?;
        Event::new(api, a.event).wait()?;
        let data = if nibbles { crate::util::pack_nibbles(&data) } else { data };
        HostTensor::new(dtype, dims, data).map_err(|e| PjrtError::InvalidArgument(e.to_string()))
    }

    /// Blocks until the buffer's data is ready (or failed).
    ///
    /// # Errors
    /// The error the computation producing the buffer ended with.
    pub fn ready(&self) -> Result<()> {
        let mut a = sys::PJRT_Buffer_ReadyEvent_Args::new();
        a.buffer = self.raw;
        // SAFETY: live buffer; the returned event is owned by us.
        unsafe { call!(self.client.api(), PJRT_Buffer_ReadyEvent, &raw mut a) }?;
        Event::new(self.client.api(), a.event).wait()
    }
}
