//! The two extensions tpuport reads: Layouts (the compiler's chosen memory layout of every
//! parameter and output) and Shardings (the compiler's parameter and output shardings).
//!
//! An extension is found by walking `PJRT_Api.extension_start` for its type id; its table may
//! be older than these declarations, so every entry is checked against the extension's own
//! `base.struct_size` before it is called (see [`crate::extension`]).

use super::args::args;
use super::*;

/// `PJRT_Extension_Type_Layouts`.
pub(crate) const PJRT_Extension_Type_Layouts: PJRT_Extension_Type = 4;
/// `PJRT_Extension_Type_Shardings`.
pub(crate) const PJRT_Extension_Type_Shardings: PJRT_Extension_Type = 19;

args!(PJRT_Layouts_MemoryLayout_Destroy_Args {
    layout: *mut PJRT_Layouts_MemoryLayout,
} last = layout);

args!(PJRT_Layouts_MemoryLayout_Serialize_Args {
    layout: *mut PJRT_Layouts_MemoryLayout,
    serialized_bytes: *const c_char,
    serialized_bytes_size: usize,
    serialized_layout: *mut PJRT_Layouts_SerializedLayout,
    serialized_layout_deleter: Option<unsafe extern "C" fn(*mut PJRT_Layouts_SerializedLayout)>,
} last = serialized_layout_deleter);

args!(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args {
    executable: *mut PJRT_Executable,
    num_outputs: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
} last = layouts);

args!(PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args {
    executable: *mut PJRT_Executable,
    num_parameters: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
} last = layouts);

/// `PJRT_Layouts_Extension` (version 4).
#[repr(C)]
pub(crate) struct PJRT_Layouts_Extension {
    pub(crate) base: PJRT_Extension_Base,
    pub(crate) PJRT_Layouts_MemoryLayout_Destroy: Option<
        unsafe extern "C" fn(*mut PJRT_Layouts_MemoryLayout_Destroy_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Layouts_MemoryLayout_Serialize: Option<
        unsafe extern "C" fn(*mut PJRT_Layouts_MemoryLayout_Serialize_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Layouts_PJRT_Client_GetDefaultLayout: PJRT_UnusedFn,
    pub(crate) PJRT_Layouts_PJRT_Buffer_MemoryLayout: PJRT_UnusedFn,
    pub(crate) PJRT_Layouts_PJRT_Topology_GetDefaultLayout: PJRT_UnusedFn,
    pub(crate) PJRT_Layouts_PJRT_Executable_GetOutputLayouts: Option<
        unsafe extern "C" fn(
            *mut PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args,
        ) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Layouts_PJRT_Executable_GetParameterLayouts: Option<
        unsafe extern "C" fn(
            *mut PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args,
        ) -> *mut PJRT_Error,
    >,
}

args!(PJRT_Shardings_PJRT_Executable_ParameterShardings_Args {
    executable: *mut PJRT_Executable,
    num_parameters: usize,
    shardings: *const *const c_char,
    sharding_sizes: *const usize,
} last = sharding_sizes);

args!(PJRT_Shardings_PJRT_Executable_OutputShardings_Args {
    executable: *mut PJRT_Executable,
    num_outputs: usize,
    shardings: *const *const c_char,
    sharding_sizes: *const usize,
} last = sharding_sizes);

/// `PJRT_Shardings_Extension` (version 1).
#[repr(C)]
pub(crate) struct PJRT_Shardings_Extension {
    pub(crate) base: PJRT_Extension_Base,
    pub(crate) PJRT_Shardings_PJRT_Executable_ParameterShardings: Option<
        unsafe extern "C" fn(
            *mut PJRT_Shardings_PJRT_Executable_ParameterShardings_Args,
        ) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Shardings_PJRT_Executable_OutputShardings: Option<
        unsafe extern "C" fn(
            *mut PJRT_Shardings_PJRT_Executable_OutputShardings_Args,
        ) -> *mut PJRT_Error,
    >,
}
