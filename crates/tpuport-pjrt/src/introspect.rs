//! What the compiler chose, read from an [`Executable`]: the memory layout of every parameter
//! and output (Layouts extension), their shardings (Shardings extension) and memory kinds.
//!
//! Extensions are optional and versioned by their own `struct_size`: an entry past the
//! plugin's extension table, or a missing extension, is [`PjrtError::Unavailable`] naming the
//! function, like a core function past the table.

use crate::api::Api;
use crate::error::{PjrtError, Result};
use crate::executable::Executable;
use crate::op_sharding::Sharding;
use crate::sys;

/// An extension entry, or `Unavailable` when the extension is absent or its table too short.
macro_rules! ext_fn {
    ($api:expr, $ty:ident, $ext:ty, $f:ident) => {{
        let api: &Api = $api;
        let (major, minor) = api.version();
        let unavailable = |table_bytes: usize| PjrtError::Unavailable {
            function: stringify!($f),
            major,
            minor,
            table_bytes,
        };
        match api.extension(sys::$ty) {
            None => Err(unavailable(0)),
            Some((base, size)) => {
                let end = std::mem::offset_of!($ext, $f) + size_of::<usize>();
                // SAFETY: an extension of this type id has the declared layout for at least
                // `size` bytes; the entry is read only when it lies inside them.
                let f = if end <= size { unsafe { (*base.cast::<$ext>()).$f } } else { None };
                f.ok_or_else(|| unavailable(size))
            }
        }
    }};
}

/// Reads `(pointer, size)` string arrays the plugin owns into owned byte vectors.
///
/// # Safety
/// When non-null, `ptrs` and `sizes` must each be valid for `n` elements, and every pointer for
/// its size in bytes.
unsafe fn byte_strings(
    ptrs: *const *const std::ffi::c_char,
    sizes: *const usize,
    n: usize,
) -> Vec<Vec<u8>> {
    if ptrs.is_null() || sizes.is_null() {
        return Vec::new();
    }
    // SAFETY: per the caller's contract.
    let (ptrs, sizes) = unsafe { (crate::util::to_vec(ptrs, n), crate::util::to_vec(sizes, n)) };
    let copy = |(p, s): (*const std::ffi::c_char, usize)| {
        // SAFETY: per the caller's contract, each pointer is valid for its size.
        unsafe { crate::util::to_vec(p.cast::<u8>(), s) }
    };
    ptrs.into_iter().zip(sizes).map(copy).collect()
}

impl Executable {
    /// The compiler's layout of each parameter, in XLA's notation (`{1,0:T(8,128)}`: the
    /// minor-to-major dimension order, then the tiling).
    ///
    /// # Errors
    /// [`PjrtError::Unavailable`] without the Layouts extension (or an older one), or the
    /// plugin's error.
    pub fn parameter_layouts(&self) -> Result<Vec<String>> {
        let f = ext_fn!(
            self.api,
            PJRT_Extension_Type_Layouts,
            sys::PJRT_Layouts_Extension,
            PJRT_Layouts_PJRT_Executable_GetParameterLayouts
        )?;
        let mut a = sys::PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; the layouts array is owned by it (valid for
        // `num_parameters` entries) and each layout is serialized and copied below.
        let layouts = unsafe {
            self.api.check("PJRT_Layouts_PJRT_Executable_GetParameterLayouts", f(&raw mut a))?;
            crate::util::to_vec(a.layouts, a.num_parameters)
        };
        layouts.into_iter().map(|l| self.serialize_layout(l)).collect()
    }

    /// The compiler's layout of each output (see [`Executable::parameter_layouts`]).
    ///
    /// # Errors
    /// As [`Executable::parameter_layouts`].
    pub fn output_layouts(&self) -> Result<Vec<String>> {
        let f = ext_fn!(
            self.api,
            PJRT_Extension_Type_Layouts,
            sys::PJRT_Layouts_Extension,
            PJRT_Layouts_PJRT_Executable_GetOutputLayouts
        )?;
        let mut a = sys::PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args::new();
        a.executable = self.raw;
        // SAFETY: as in `parameter_layouts`.
        let layouts = unsafe {
            self.api.check("PJRT_Layouts_PJRT_Executable_GetOutputLayouts", f(&raw mut a))?;
            crate::util::to_vec(a.layouts, a.num_outputs)
        };
        layouts.into_iter().map(|l| self.serialize_layout(l)).collect()
    }

    /// A layout the executable owns, as text (not destroyed: the executable owns it).
    fn serialize_layout(&self, layout: *mut sys::PJRT_Layouts_MemoryLayout) -> Result<String> {
        let f = ext_fn!(
            self.api,
            PJRT_Extension_Type_Layouts,
            sys::PJRT_Layouts_Extension,
            PJRT_Layouts_MemoryLayout_Serialize
        )?;
        let mut a = sys::PJRT_Layouts_MemoryLayout_Serialize_Args::new();
        a.layout = layout;
        // SAFETY: `layout` is owned by the live executable; the serialized bytes live until
        // the deleter runs, which happens exactly once after they are copied.
        unsafe {
            self.api.check("PJRT_Layouts_MemoryLayout_Serialize", f(&raw mut a))?;
            let text = crate::util::lossy(a.serialized_bytes, a.serialized_bytes_size);
            if let Some(del) = a.serialized_layout_deleter {
                del(a.serialized_layout);
            }
            Ok(text)
        }
    }

    /// The compiler's sharding of each parameter.
    ///
    /// # Errors
    /// [`PjrtError::Unavailable`] without the Shardings extension, the plugin's error, or
    /// bytes that are not an `xla.OpSharding`.
    pub fn parameter_shardings(&self) -> Result<Vec<Sharding>> {
        let f = ext_fn!(
            self.api,
            PJRT_Extension_Type_Shardings,
            sys::PJRT_Shardings_Extension,
            PJRT_Shardings_PJRT_Executable_ParameterShardings
        )?;
        let mut a = sys::PJRT_Shardings_PJRT_Executable_ParameterShardings_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; both arrays and their strings are owned by it and copied.
        let raw = unsafe {
            self.api.check("PJRT_Shardings_PJRT_Executable_ParameterShardings", f(&raw mut a))?;
            byte_strings(a.shardings, a.sharding_sizes, a.num_parameters)
        };
        decode_all(&raw)
    }

    /// The compiler's sharding of each output.
    ///
    /// # Errors
    /// As [`Executable::parameter_shardings`].
    pub fn output_shardings(&self) -> Result<Vec<Sharding>> {
        let f = ext_fn!(
            self.api,
            PJRT_Extension_Type_Shardings,
            sys::PJRT_Shardings_Extension,
            PJRT_Shardings_PJRT_Executable_OutputShardings
        )?;
        let mut a = sys::PJRT_Shardings_PJRT_Executable_OutputShardings_Args::new();
        a.executable = self.raw;
        // SAFETY: as in `parameter_shardings`.
        let raw = unsafe {
            self.api.check("PJRT_Shardings_PJRT_Executable_OutputShardings", f(&raw mut a))?;
            byte_strings(a.shardings, a.sharding_sizes, a.num_outputs)
        };
        decode_all(&raw)
    }

    /// Memory kind of each output (`device`, `pinned_host`, …).
    ///
    /// # Errors
    /// The plugin's error (the CPU plugin does not implement it).
    pub fn output_memory_kinds(&self) -> Result<Vec<String>> {
        let mut a = sys::PJRT_Executable_OutputMemoryKinds_Args::new();
        a.executable = self.raw;
        // SAFETY: live executable; the arrays have its lifetime and are copied.
        let raw = unsafe {
            crate::api::call!(self.api, PJRT_Executable_OutputMemoryKinds, &raw mut a)?;
            byte_strings(a.memory_kinds, a.memory_kind_sizes, a.num_outputs)
        };
        Ok(raw.into_iter().map(|b| String::from_utf8_lossy(&b).into_owned()).collect())
    }
}

fn decode_all(raw: &[Vec<u8>]) -> Result<Vec<Sharding>> {
    raw.iter()
        .enumerate()
        .map(|(i, b)| {
            Sharding::decode(b).map_err(|e| {
                PjrtError::InvalidArgument(format!("sharding {i} from the plugin: {e}"))
            })
        })
        .collect()
}
