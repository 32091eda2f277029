//! Unit tests that need crate internals (the function table) and the real CPU plugin.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sys;

/// The CPU plugin, or a failing test with the fix.
pub(crate) fn cpu_plugin() -> &'static crate::Plugin {
    let path = crate::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
    crate::load(&path).expect("load CPU plugin")
}

#[test]
fn table_layout_matches_header_size() {
    // 8 (struct_size) + 8 (extension_start) + 24 (version) + 137 functions (header 0.113).
    assert_eq!(size_of::<sys::PJRT_Api>(), 40 + 8 * sys::PJRT_API_NUM_FUNCTIONS);
    assert_eq!(sys::PJRT_API_NUM_FUNCTIONS, 137);
    assert_eq!(size_of::<sys::PJRT_Api>(), 1136);
    assert_eq!(std::mem::offset_of!(sys::PJRT_Api, PJRT_Error_Destroy), 40);
    // Known plugin table sizes from pjrt-notes §1: 0.81 = 984 bytes = 118 functions.
    assert_eq!(
        std::mem::offset_of!(sys::PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment),
        984 - 8
    );
    assert_eq!(size_of::<sys::PJRT_NamedValue>(), 56);
    assert_eq!(std::mem::offset_of!(sys::PJRT_NamedValue, value), 40);
}

#[test]
fn struct_sizes_follow_pjrt_struct_size() {
    // PJRT_STRUCT_SIZE = offset of last field + its size (no trailing padding).
    assert_eq!(sys::PJRT_Event_IsReady_Args::new().struct_size, 25);
    assert_eq!(sys::PJRT_Plugin_Initialize_Args::new().struct_size, 16);
    assert_eq!(sys::PJRT_Client_Create_Args::new().struct_size, 88);
    assert_eq!(sys::PJRT_LoadedExecutable_Execute_Args::new().struct_size, 80);
    assert_eq!(sys::PJRT_Client_BufferFromHostBuffer_Args::new().struct_size, 120);
    assert_eq!(sys::PJRT_ExecuteOptions::new().struct_size, 144);
    // Structs that grew between 0.94 and 0.113, and the topology / AOT ones (sizes worked out
    // field by field from the 0.113 header).
    assert_eq!(sys::PJRT_Device_MemoryStats_Args::new().struct_size, 201);
    assert_eq!(sys::PJRT_Executable_GetCompiledMemoryStats_Args::new().struct_size, 144);
    assert_eq!(sys::PJRT_Executable_DeserializeAndLoad_Args::new().struct_size, 72);
    assert_eq!(sys::PJRT_TopologyDescription_Create_Args::new().struct_size, 56);
    assert_eq!(sys::PJRT_TopologyDescription_Attributes_Args::new().struct_size, 40);
    assert_eq!(sys::PJRT_Compile_Args::new().struct_size, 64);
    assert_eq!(sys::PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args::new().struct_size, 40);
    assert_eq!(sys::PJRT_Shardings_PJRT_Executable_OutputShardings_Args::new().struct_size, 48);
    assert_eq!(size_of::<sys::PJRT_Layouts_Extension>(), 24 + 7 * 8);
    assert_eq!(size_of::<sys::PJRT_Shardings_Extension>(), 24 + 2 * 8);
}

/// The function names in our table match the plugin-shipped 0.81 header, in order, for the
/// first 118 entries (the header is part of the CPU plugin wheel).
#[test]
fn table_order_matches_cpu_plugin_header() {
    let path = crate::find_cpu().expect("CPU PJRT plugin not found: run `make venv`");
    let header = path.parent().unwrap().join("include/pjrt_c_api.h");
    let text = std::fs::read_to_string(&header).expect("pjrt_c_api.h in the CPU plugin wheel");
    let start = text.find("typedef struct PJRT_Api {").expect("PJRT_Api in header");
    let body = &text[start..];
    let body = &body[..body.find("} PJRT_Api;").unwrap()];
    let names: Vec<&str> = body
        .split("_PJRT_API_STRUCT_FIELD(")
        .skip(1)
        .map(|s| s.split(')').next().unwrap())
        .collect();
    assert_eq!(names.len(), 118);
    assert_eq!(names.as_slice(), &sys::PJRT_API_FUNCTION_NAMES[..118]);
}

#[test]
fn cpu_plugin_reports_0_81_and_attributes() {
    let p = cpu_plugin();
    let (major, minor) = p.api_version();
    assert_eq!(major, 0);
    assert!(minor >= 60, "minor {minor}");
    assert_eq!(p.api.table_bytes(), 40 + 8 * p.api.num_functions());
    let (min, cur) = p.stablehlo_range().expect("stablehlo range attributes");
    assert!(min <= cur, "{min:?} {cur:?}");
    let ext = p.info().extensions;
    assert!(ext.iter().any(|e| e == "FFI"), "{ext:?}");
}

#[test]
fn function_past_a_small_table_is_unavailable_by_name() {
    let p = cpu_plugin();
    // Simulate a plugin whose table ends just before PJRT_Client_Create.
    let cut = std::mem::offset_of!(sys::PJRT_Api, PJRT_Client_Create);
    let api: &'static crate::api::Api = Box::leak(Box::new(p.api.truncated(cut)));
    let mut a = sys::PJRT_Client_Create_Args::new();
    // SAFETY: the call is refused before reaching the plugin.
    let r = unsafe { crate::api::call!(api, PJRT_Client_Create, &raw mut a) };
    let e = r.unwrap_err().to_string();
    assert!(e.contains("PJRT_Client_Create is not available"), "{e}");
    assert!(e.contains(&format!("{cut} bytes")), "{e}");
    // Entries inside the table still work.
    assert!(crate::api::func!(api, PJRT_Plugin_Initialize).is_ok());
}
