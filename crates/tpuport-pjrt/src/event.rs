//! Owning wrapper for `PJRT_Event`.

use crate::api::{Api, call};
use crate::error::Result;
use crate::sys;

/// An event the plugin returned; destroyed on drop.
pub(crate) struct Event {
    api: &'static Api,
    raw: *mut sys::PJRT_Event,
}

impl Event {
    /// Takes ownership of `raw` (may be null: a null event is already complete).
    pub(crate) fn new(api: &'static Api, raw: *mut sys::PJRT_Event) -> Event {
        Event { api, raw }
    }

    /// Blocks until the event is ready, then reports its error. `PJRT_Event_Error` is always
    /// queried too, so an error on an already-completed event is never lost.
    pub(crate) fn wait(self) -> Result<()> {
        if self.raw.is_null() {
            return Ok(());
        }
        let mut a = sys::PJRT_Event_Await_Args::new();
        a.event = self.raw;
        // SAFETY: `raw` is a live event owned by `self`.
        unsafe { call!(self.api, PJRT_Event_Await, &raw mut a) }?;
        let mut e = sys::PJRT_Event_Error_Args::new();
        e.event = self.raw;
        // SAFETY: as above; the event is ready after Await.
        unsafe { call!(self.api, PJRT_Event_Error, &raw mut e) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let mut a = sys::PJRT_Event_Destroy_Args::new();
        a.event = self.raw;
        // SAFETY: `raw` is owned by `self` and destroyed once; a failure has nowhere to go but
        // is still converted (and so destroyed).
        let _ = unsafe { call!(self.api, PJRT_Event_Destroy, &raw mut a) };
    }
}

/// Waits for every event, returning the first error after all have completed.
pub(crate) fn wait_all(events: Vec<Event>) -> Result<()> {
    let mut first = Ok(());
    for ev in events {
        let r = ev.wait();
        if first.is_ok() {
            first = r;
        }
    }
    first
}
