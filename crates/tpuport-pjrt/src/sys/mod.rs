//! Raw declarations for the part of the PJRT C API tpuport uses.
//!
//! Written by hand against `xla/pjrt/c/pjrt_c_api.h` at PJRT API **0.113** (the copy in the
//! public repository `zml/xla` at commit `569845078f053a43af6b1519eacbcf95a032919e`; see
//! `docs/runtime.md`), and checked against the 0.81 header the CPU plugin wheel ships (the
//! function table's first 118 entries and every argument struct used here are prefixes of the
//! 0.113 layouts; the `layout` tests compare them). The Layouts and Shardings extensions
//! ([`ext`]) follow `pjrt_c_api_layouts_extension.h` (version 4) and
//! `pjrt_c_api_shardings_extension.h` (version 1) of the same commit. Minor versions only ever append fields, so a caller built against a newer header
//! works with an older plugin: the plugin checks that `struct_size` is at least its own size.
//!
//! Every argument struct is built with its `new()` constructor, which sets `struct_size` to
//! the declared size; nothing here implements `Default`. C enums are plain `c_int` aliases
//! with constants, so a value the plugin returns that this header does not know is still a
//! valid Rust value.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    reason = "C names kept as in pjrt_c_api.h"
)]
#![allow(
    dead_code,
    reason = "declarations mirror the header; not every constructor and constant is used"
)]

mod api;
mod args;
mod ext;

pub(crate) use api::*;
pub(crate) use args::*;
pub(crate) use ext::*;

use std::ffi::{c_char, c_int, c_void};

/// Major version of the header these declarations follow.
pub(crate) const PJRT_API_MAJOR: c_int = 0;
/// Minor version of the header these declarations follow.
pub(crate) const PJRT_API_MINOR: c_int = 113;

// Opaque handles.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub(crate) struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    PJRT_Error,
    PJRT_Event,
    PJRT_Client,
    PJRT_Device,
    PJRT_Memory,
    PJRT_DeviceDescription,
    PJRT_TopologyDescription,
    PJRT_Executable,
    PJRT_LoadedExecutable,
    PJRT_Buffer,
    PJRT_ExecuteContext,
    PJRT_SerializedExecutable,
    PJRT_SendCallbackInfo,
    PJRT_RecvCallbackInfo,
    PJRT_SerializedTopology,
    PJRT_MultiSlice_Config,
    PJRT_HloOutputCallbackInfo,
    PJRT_Layouts_MemoryLayout,
    PJRT_Layouts_SerializedLayout,
);

/// `PJRT_Extension_Type` (0.113 numbering).
pub(crate) type PJRT_Extension_Type = c_int;

/// `PJRT_Extension_Base`: the head of every extension struct in the chain.
#[repr(C)]
pub(crate) struct PJRT_Extension_Base {
    pub(crate) struct_size: usize,
    pub(crate) type_: PJRT_Extension_Type,
    pub(crate) next: *mut PJRT_Extension_Base,
}

/// `PJRT_Error_Code` (absl status codes).
pub(crate) type PJRT_Error_Code = c_int;

/// `PJRT_NamedValue_Type`.
pub(crate) type PJRT_NamedValue_Type = c_int;
pub(crate) const PJRT_NamedValue_kString: PJRT_NamedValue_Type = 0;
pub(crate) const PJRT_NamedValue_kInt64: PJRT_NamedValue_Type = 1;
pub(crate) const PJRT_NamedValue_kInt64List: PJRT_NamedValue_Type = 2;
pub(crate) const PJRT_NamedValue_kFloat: PJRT_NamedValue_Type = 3;
pub(crate) const PJRT_NamedValue_kBool: PJRT_NamedValue_Type = 4;

/// The value union of `PJRT_NamedValue`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union PJRT_NamedValue_Union {
    pub(crate) string_value: *const c_char,
    pub(crate) int64_value: i64,
    pub(crate) int64_array_value: *const i64,
    pub(crate) float_value: f32,
    pub(crate) bool_value: bool,
}

/// `PJRT_NamedValue`: a typed key-value pair. The type must match what the plugin expects
/// exactly (a string where the plugin reads an int64 aborts the process).
#[repr(C)]
pub(crate) struct PJRT_NamedValue {
    pub(crate) struct_size: usize,
    pub(crate) extension_start: *mut PJRT_Extension_Base,
    pub(crate) name: *const c_char,
    pub(crate) name_size: usize,
    pub(crate) type_: PJRT_NamedValue_Type,
    pub(crate) value: PJRT_NamedValue_Union,
    /// Number of elements for lists and strings, 1 for scalars.
    pub(crate) value_size: usize,
}

impl PJRT_NamedValue {
    /// A named value with `struct_size` set; the caller fills name, type and value.
    pub(crate) fn new(
        name: *const c_char,
        name_size: usize,
        type_: PJRT_NamedValue_Type,
        value: PJRT_NamedValue_Union,
        value_size: usize,
    ) -> Self {
        PJRT_NamedValue {
            struct_size: size_of::<Self>(),
            extension_start: std::ptr::null_mut(),
            name,
            name_size,
            type_,
            value,
            value_size,
        }
    }
}

/// `PJRT_Buffer_Type`.
pub(crate) type PJRT_Buffer_Type = c_int;
pub(crate) const PJRT_Buffer_Type_INVALID: PJRT_Buffer_Type = 0;
pub(crate) const PJRT_Buffer_Type_PRED: PJRT_Buffer_Type = 1;
pub(crate) const PJRT_Buffer_Type_S8: PJRT_Buffer_Type = 2;
pub(crate) const PJRT_Buffer_Type_S16: PJRT_Buffer_Type = 3;
pub(crate) const PJRT_Buffer_Type_S32: PJRT_Buffer_Type = 4;
pub(crate) const PJRT_Buffer_Type_S64: PJRT_Buffer_Type = 5;
pub(crate) const PJRT_Buffer_Type_U8: PJRT_Buffer_Type = 6;
pub(crate) const PJRT_Buffer_Type_U16: PJRT_Buffer_Type = 7;
pub(crate) const PJRT_Buffer_Type_U32: PJRT_Buffer_Type = 8;
pub(crate) const PJRT_Buffer_Type_U64: PJRT_Buffer_Type = 9;
pub(crate) const PJRT_Buffer_Type_F16: PJRT_Buffer_Type = 10;
pub(crate) const PJRT_Buffer_Type_F32: PJRT_Buffer_Type = 11;
pub(crate) const PJRT_Buffer_Type_F64: PJRT_Buffer_Type = 12;
pub(crate) const PJRT_Buffer_Type_BF16: PJRT_Buffer_Type = 13;
pub(crate) const PJRT_Buffer_Type_C64: PJRT_Buffer_Type = 14;
pub(crate) const PJRT_Buffer_Type_C128: PJRT_Buffer_Type = 15;
pub(crate) const PJRT_Buffer_Type_F8E5M2: PJRT_Buffer_Type = 16;
pub(crate) const PJRT_Buffer_Type_F8E4M3FN: PJRT_Buffer_Type = 17;
pub(crate) const PJRT_Buffer_Type_F8E5M2FNUZ: PJRT_Buffer_Type = 19;
pub(crate) const PJRT_Buffer_Type_F8E4M3FNUZ: PJRT_Buffer_Type = 20;
pub(crate) const PJRT_Buffer_Type_S4: PJRT_Buffer_Type = 21;
pub(crate) const PJRT_Buffer_Type_U4: PJRT_Buffer_Type = 22;

/// `PJRT_HostBufferSemantics`.
pub(crate) type PJRT_HostBufferSemantics = c_int;
pub(crate) const PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes:
    PJRT_HostBufferSemantics = 1;

/// `PJRT_Program`: code plus its format (`mlir`, `hlo`, `hlo_with_config`).
#[repr(C)]
pub(crate) struct PJRT_Program {
    pub(crate) struct_size: usize,
    pub(crate) extension_start: *mut PJRT_Extension_Base,
    pub(crate) code: *mut c_char,
    pub(crate) code_size: usize,
    pub(crate) format: *const c_char,
    pub(crate) format_size: usize,
}

impl PJRT_Program {
    pub(crate) fn new() -> Self {
        PJRT_Program {
            struct_size: size_of::<Self>(),
            extension_start: std::ptr::null_mut(),
            code: std::ptr::null_mut(),
            code_size: 0,
            format: std::ptr::null(),
            format_size: 0,
        }
    }
}

/// `PJRT_ExecuteOptions`.
#[repr(C)]
pub(crate) struct PJRT_ExecuteOptions {
    pub(crate) struct_size: usize,
    pub(crate) extension_start: *mut PJRT_Extension_Base,
    pub(crate) send_callbacks: *mut *mut PJRT_SendCallbackInfo,
    pub(crate) recv_callbacks: *mut *mut PJRT_RecvCallbackInfo,
    pub(crate) num_send_ops: usize,
    pub(crate) num_recv_ops: usize,
    pub(crate) launch_id: c_int,
    pub(crate) non_donatable_input_indices: *const i64,
    pub(crate) num_non_donatable_input_indices: usize,
    pub(crate) context: *mut PJRT_ExecuteContext,
    pub(crate) call_location: *const c_char,
    pub(crate) num_tasks: usize,
    pub(crate) task_ids: *mut c_int,
    pub(crate) incarnation_ids: *mut i64,
    pub(crate) multi_slice_config: *mut PJRT_MultiSlice_Config,
    pub(crate) use_major_to_minor_data_layout_for_callbacks: bool,
    pub(crate) hlo_output_callbacks: *mut PJRT_HloOutputCallbackInfo,
    pub(crate) num_hlo_output_callbacks: usize,
}

impl PJRT_ExecuteOptions {
    pub(crate) fn new() -> Self {
        PJRT_ExecuteOptions {
            struct_size: size_of::<Self>(),
            extension_start: std::ptr::null_mut(),
            send_callbacks: std::ptr::null_mut(),
            recv_callbacks: std::ptr::null_mut(),
            num_send_ops: 0,
            num_recv_ops: 0,
            launch_id: 0,
            non_donatable_input_indices: std::ptr::null(),
            num_non_donatable_input_indices: 0,
            context: std::ptr::null_mut(),
            call_location: std::ptr::null(),
            num_tasks: 0,
            task_ids: std::ptr::null_mut(),
            incarnation_ids: std::ptr::null_mut(),
            multi_slice_config: std::ptr::null_mut(),
            use_major_to_minor_data_layout_for_callbacks: false,
            hlo_output_callbacks: std::ptr::null_mut(),
            num_hlo_output_callbacks: 0,
        }
    }
}

/// Function pointer type for table entries tpuport does not call (same ABI as a pointer).
pub(crate) type PJRT_UnusedFn = Option<unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error>;

/// `PJRT_LoadOptions` (a plain struct: it has no `extension_start`).
#[repr(C)]
pub(crate) struct PJRT_LoadOptions {
    pub(crate) struct_size: usize,
    pub(crate) computation_origin: *const i32,
    pub(crate) computation_origin_size: usize,
    pub(crate) multi_slice_config: *mut PJRT_MultiSlice_Config,
}

/// `const PJRT_Api* GetPjrtApi(void)`, the one symbol every plugin exports.
pub(crate) type GetPjrtApiFn = unsafe extern "C" fn() -> *const PJRT_Api;
