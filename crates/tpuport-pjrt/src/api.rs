//! [`Api`]: a checked view of a plugin's `PJRT_Api` function table.
//!
//! The table is copied at `min(plugin struct_size, our struct size)` bytes (never at the
//! header's size: an older plugin's table is shorter, and reading past it reads foreign memory).
//! Entries beyond the plugin's `struct_size` stay null, and [`Api::func`] reports them as
//! [`PjrtError::Unavailable`] naming the function. Every `PJRT_Error*` a call returns goes
//! through [`Api::check`], which reads message and code and destroys the error exactly once.

use crate::error::{ErrorCode, PjrtError, Result};
use crate::sys;

/// Looks up a table entry, failing with the function's name when it is past the plugin's table.
macro_rules! func {
    ($api:expr, $f:ident) => {
        $api.func(std::mem::offset_of!($crate::sys::PJRT_Api, $f), stringify!($f), $api.table.$f)
    };
}

/// Calls a PJRT function with an argument struct and converts the returned error.
///
/// Must be used inside an `unsafe` block whose `SAFETY` comment justifies the argument
/// struct's pointers for this call.
macro_rules! call {
    ($api:expr, $f:ident, $args:expr) => {{
        match $crate::api::func!($api, $f) {
            Ok(f) => {
                let err = f($args);
                $api.check(stringify!($f), err)
            }
            Err(e) => Err(e),
        }
    }};
}

pub(crate) use {call, func};

/// A plugin's function table plus what was learnt reading it.
pub(crate) struct Api {
    /// Copy of the plugin's table; entries past `table_bytes` are `None`.
    pub(crate) table: sys::PJRT_Api,
    /// The plugin's own table, for walking the extension chain.
    raw: *const sys::PJRT_Api,
    /// The plugin's `PJRT_Api.struct_size` (or a smaller simulated one in tests).
    table_bytes: usize,
    major: i32,
    minor: i32,
}

// SAFETY: the table is immutable after load and holds only function pointers and pointers
// into the plugin's static data; PJRT functions are callable from any thread.
unsafe impl Send for Api {}
// SAFETY: as above; `Api` has no interior mutability.
unsafe impl Sync for Api {}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("version", &format_args!("{}.{}", self.major, self.minor))
            .field("table_bytes", &self.table_bytes)
            .finish_non_exhaustive()
    }
}

/// The smallest table tpuport accepts: through `PJRT_Plugin_Initialize`, so that error
/// handling (the first three entries) and initialisation are present.
const MIN_TABLE_BYTES: usize =
    std::mem::offset_of!(sys::PJRT_Api, PJRT_Plugin_Initialize) + size_of::<usize>();

/// Why a table cannot be used (the caller turns this into a [`PjrtError`] naming the plugin).
pub(crate) enum TableProblem {
    TooSmall(usize),
    Major(i32, i32),
}

impl Api {
    /// Reads a plugin's table: `struct_size` first, then the version, then a bounded copy.
    ///
    /// # Safety
    /// `raw` must be the non-null pointer `GetPjrtApi` returned: valid for reads of at least
    /// its own `struct_size` bytes for the life of the process.
    pub(crate) unsafe fn from_raw(
        raw: *const sys::PJRT_Api,
    ) -> std::result::Result<Api, TableProblem> {
        // SAFETY: the first field of every table is `struct_size`; the caller guarantees the
        // pointer is valid for at least that read.
        let table_bytes = unsafe { std::ptr::addr_of!((*raw).struct_size).read() };
        if table_bytes < MIN_TABLE_BYTES {
            return Err(TableProblem::TooSmall(table_bytes));
        }
        // SAFETY: `table_bytes` covers the version struct (it lies before the first function).
        let version = unsafe { std::ptr::addr_of!((*raw).pjrt_api_version).read() };
        let (major, minor) = (version.major_version, version.minor_version);
        if major != sys::PJRT_API_MAJOR {
            return Err(TableProblem::Major(major, minor));
        }
        let mut table = std::mem::MaybeUninit::<sys::PJRT_Api>::zeroed();
        let n = table_bytes.min(size_of::<sys::PJRT_Api>());
        // SAFETY: source valid for `table_bytes >= n` bytes (caller), destination is our own
        // `n <= size_of::<PJRT_Api>()` bytes; the regions cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(raw.cast::<u8>(), table.as_mut_ptr().cast::<u8>(), n);
        }
        // SAFETY: every field of `PJRT_Api` is an integer, raw pointer or `Option<fn>`; zero is
        // valid for all, and the first `n` bytes are the plugin's valid values for them.
        let table = unsafe { table.assume_init() };
        Ok(Api { table, raw, table_bytes, major, minor })
    }

    /// The same table, cut to `bytes` (tests simulate an older plugin with this).
    #[cfg(test)]
    pub(crate) fn truncated(&self, bytes: usize) -> Api {
        let mut table = self.table;
        let keep = bytes.min(size_of::<sys::PJRT_Api>());
        // SAFETY: zeroes the tail of our own copy; zero is a valid `None` for every entry.
        unsafe {
            let base = std::ptr::addr_of_mut!(table).cast::<u8>();
            std::ptr::write_bytes(base.add(keep), 0, size_of::<sys::PJRT_Api>() - keep);
        }
        table.struct_size = bytes;
        Api { table, raw: self.raw, table_bytes: bytes, major: self.major, minor: self.minor }
    }

    /// `(major, minor)` PJRT API version the plugin reports.
    pub(crate) fn version(&self) -> (i32, i32) {
        (self.major, self.minor)
    }

    /// The plugin's `PJRT_Api.struct_size`.
    pub(crate) fn table_bytes(&self) -> usize {
        self.table_bytes
    }

    /// Number of function entries the plugin's table holds.
    pub(crate) fn num_functions(&self) -> usize {
        let head = std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_Destroy);
        self.table_bytes.saturating_sub(head) / size_of::<usize>()
    }

    /// A table entry, or [`PjrtError::Unavailable`] when it lies past the plugin's table or
    /// is null. Use through `func!`.
    pub(crate) fn func<F: Copy>(
        &self,
        offset: usize,
        name: &'static str,
        f: Option<F>,
    ) -> Result<F> {
        let end = offset + size_of::<usize>();
        match f {
            Some(f) if end <= self.table_bytes => Ok(f),
            _ => Err(PjrtError::Unavailable {
                function: name,
                major: self.major,
                minor: self.minor,
                table_bytes: self.table_bytes,
            }),
        }
    }

    /// Converts a returned `PJRT_Error*` into a `Result`, destroying the error.
    pub(crate) fn check(&self, function: &'static str, err: *mut sys::PJRT_Error) -> Result<()> {
        if err.is_null() {
            return Ok(());
        }
        let (code, message) = self.take_error(err);
        Err(PjrtError::Call { function, code, message })
    }

    /// Reads code and message of a non-null error and destroys it.
    fn take_error(&self, err: *mut sys::PJRT_Error) -> (ErrorCode, String) {
        let mut message = String::from("(no message)");
        if let Some(f) = self.table.PJRT_Error_Message {
            let mut a = sys::PJRT_Error_Message_Args::new();
            a.error = err;
            // SAFETY: `err` is a live error returned by this plugin; the message pointer has the
            // error's lifetime and is copied before the error is destroyed below.
            unsafe {
                f(&raw mut a);
                message = crate::util::lossy(a.message, a.message_size);
            }
        }
        let mut code = ErrorCode(2);
        if let Some(f) = self.table.PJRT_Error_GetCode {
            let mut a = sys::PJRT_Error_GetCode_Args::new();
            a.error = err;
            // SAFETY: `err` is live; GetCode may itself return an error, which is destroyed.
            unsafe {
                let e2 = f(&raw mut a);
                if e2.is_null() {
                    code = ErrorCode(a.code);
                } else {
                    self.destroy_error(e2);
                }
            }
        }
        self.destroy_error(err);
        (code, message)
    }

    fn destroy_error(&self, err: *mut sys::PJRT_Error) {
        if let Some(f) = self.table.PJRT_Error_Destroy {
            let mut a = sys::PJRT_Error_Destroy_Args::new();
            a.error = err;
            // SAFETY: `err` was returned by this plugin and is destroyed exactly once here.
            unsafe { f(&raw mut a) };
        }
    }

    /// The first extension of type `ty` in the chain and its `struct_size`.
    pub(crate) fn extension(&self, ty: i32) -> Option<(*const sys::PJRT_Extension_Base, usize)> {
        // SAFETY: as in `extensions`: the chain lives in the plugin's static data.
        let mut p = unsafe { std::ptr::addr_of!((*self.raw).extension_start).read() };
        for _ in 0..64 {
            if p.is_null() {
                return None;
            }
            // SAFETY: each non-null link is a `PJRT_Extension_Base` in the plugin's static data.
            let (t, size, next) = unsafe { ((*p).type_, (*p).struct_size, (*p).next) };
            if t == ty {
                return Some((p.cast_const(), size));
            }
            p = next;
        }
        None
    }

    /// The extension chain, as `(type id, struct_size)` pairs in chain order.
    pub(crate) fn extensions(&self) -> Vec<(i32, usize)> {
        let mut out = Vec::new();
        // SAFETY: `raw` is the plugin's table (valid for the process); `extension_start` is in
        // its header, before the first function.
        let mut p = unsafe { std::ptr::addr_of!((*self.raw).extension_start).read() };
        // Bounded walk: a corrupt chain (a cycle) must not hang the process.
        while !p.is_null() && out.len() < 64 {
            // SAFETY: each non-null link is a `PJRT_Extension_Base` in the plugin's static data.
            let (ty, size, next) = unsafe { ((*p).type_, (*p).struct_size, (*p).next) };
            out.push((ty, size));
            p = next;
        }
        out
    }
}

/// Name of an extension type id (0.113 numbering; newer ids print as numbers).
#[must_use]
pub fn extension_name(id: i32) -> String {
    const NAMES: [&str; 26] = [
        "Gpu_Custom_Call",
        "Profiler",
        "Custom_Partitioner",
        "Stream",
        "Layouts",
        "FFI",
        "MemoryDescriptions",
        "Triton",
        "RawBuffer",
        "PhaseCompile",
        "Example",
        "Unknown",
        "CrossHostTransfers",
        "ExecutableMetadata",
        "Callback",
        "HostAllocator",
        "TpuTopology",
        "TpuExecutable",
        "Megascale",
        "Shardings",
        "AbiVersion",
        "Collectives",
        "MultiSlice",
        "HostMemoryAllocator",
        "XlaTransform",
        "ExecuteChain",
    ];
    usize::try_from(id)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("extension#{id}"), |s| (*s).to_owned())
}
