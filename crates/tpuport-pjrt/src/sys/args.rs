//! Argument structs, one per C function used (`PJRT_<Name>_Args`), declared by [`args!`].
//!
//! `new()` zeroes every field (all field types here are raw pointers, integers, bools or
//! optional function pointers, for which all-zero is valid) and sets `struct_size` the way the
//! header's `PJRT_STRUCT_SIZE` does: offset of the last field plus its size.

use super::*;

/// Declares `PJRT_<name>_Args` with the common head and a `new()` constructor.
macro_rules! args {
    ($name:ident { $($field:ident : $ty:ty),* $(,)? } last = $last:ident) => {
        #[repr(C)]
        pub(crate) struct $name {
            pub(crate) struct_size: usize,
            pub(crate) extension_start: *mut PJRT_Extension_Base,
            $(pub(crate) $field: $ty,)*
        }

        impl $name {
            /// All fields zero/null, `struct_size` set.
            pub(crate) fn new() -> Self {
                // SAFETY: every field is a raw pointer, integer, bool or `Option<fn>`; the
                // all-zero bit pattern is a valid value (null / 0 / false / None) for each.
                let mut s: Self = unsafe { std::mem::zeroed() };
                s.struct_size = std::mem::offset_of!($name, $last) + std::mem::size_of_val(&s.$last);
                s
            }
        }
    };
}
pub(super) use args;

args!(PJRT_Error_Destroy_Args {
    error: *mut PJRT_Error,
} last = error);

args!(PJRT_Error_Message_Args {
    error: *const PJRT_Error,
    message: *const c_char,
    message_size: usize,
} last = message_size);

args!(PJRT_Error_GetCode_Args {
    error: *const PJRT_Error,
    code: PJRT_Error_Code,
} last = code);

args!(PJRT_Plugin_Initialize_Args {
} last = extension_start);

args!(PJRT_Plugin_Attributes_Args {
    attributes: *const PJRT_NamedValue,
    num_attributes: usize,
} last = num_attributes);

args!(PJRT_Event_Destroy_Args {
    event: *mut PJRT_Event,
} last = event);

args!(PJRT_Event_IsReady_Args {
    event: *mut PJRT_Event,
    is_ready: bool,
} last = is_ready);

args!(PJRT_Event_Error_Args {
    event: *mut PJRT_Event,
} last = event);

args!(PJRT_Event_Await_Args {
    event: *mut PJRT_Event,
} last = event);

args!(PJRT_Client_Create_Args {
    create_options: *const PJRT_NamedValue,
    num_options: usize,
    kv_get_callback: *mut c_void,
    kv_get_user_arg: *mut c_void,
    kv_put_callback: *mut c_void,
    kv_put_user_arg: *mut c_void,
    client: *mut PJRT_Client,
    kv_try_get_callback: *mut c_void,
    kv_try_get_user_arg: *mut c_void,
} last = kv_try_get_user_arg);

args!(PJRT_Client_Destroy_Args {
    client: *mut PJRT_Client,
} last = client);

args!(PJRT_Client_PlatformName_Args {
    client: *mut PJRT_Client,
    platform_name: *const c_char,
    platform_name_size: usize,
} last = platform_name_size);

args!(PJRT_Client_ProcessIndex_Args {
    client: *mut PJRT_Client,
    process_index: c_int,
} last = process_index);

args!(PJRT_Client_PlatformVersion_Args {
    client: *mut PJRT_Client,
    platform_version: *const c_char,
    platform_version_size: usize,
} last = platform_version_size);

args!(PJRT_Client_TopologyDescription_Args {
    client: *mut PJRT_Client,
    topology: *mut PJRT_TopologyDescription,
} last = topology);

args!(PJRT_Client_Devices_Args {
    client: *mut PJRT_Client,
    devices: *const *mut PJRT_Device,
    num_devices: usize,
} last = num_devices);

args!(PJRT_Client_AddressableDevices_Args {
    client: *mut PJRT_Client,
    addressable_devices: *const *mut PJRT_Device,
    num_addressable_devices: usize,
} last = num_addressable_devices);

args!(PJRT_Client_Compile_Args {
    client: *mut PJRT_Client,
    program: *const PJRT_Program,
    compile_options: *const c_char,
    compile_options_size: usize,
    executable: *mut PJRT_LoadedExecutable,
} last = executable);

args!(PJRT_Client_DefaultDeviceAssignment_Args {
    client: *mut PJRT_Client,
    num_replicas: c_int,
    num_partitions: c_int,
    default_assignment_size: usize,
    default_assignment: *mut c_int,
} last = default_assignment);

args!(PJRT_Client_BufferFromHostBuffer_Args {
    client: *mut PJRT_Client,
    data: *const c_void,
    type_: PJRT_Buffer_Type,
    dims: *const i64,
    num_dims: usize,
    byte_strides: *const i64,
    num_byte_strides: usize,
    host_buffer_semantics: PJRT_HostBufferSemantics,
    device: *mut PJRT_Device,
    memory: *mut PJRT_Memory,
    device_layout: *mut c_void,
    done_with_host_buffer: *mut PJRT_Event,
    buffer: *mut PJRT_Buffer,
} last = buffer);

args!(PJRT_DeviceDescription_Id_Args {
    device_description: *mut PJRT_DeviceDescription,
    id: c_int,
} last = id);

args!(PJRT_DeviceDescription_ProcessIndex_Args {
    device_description: *mut PJRT_DeviceDescription,
    process_index: c_int,
} last = process_index);

args!(PJRT_DeviceDescription_Attributes_Args {
    device_description: *mut PJRT_DeviceDescription,
    num_attributes: usize,
    attributes: *const PJRT_NamedValue,
} last = attributes);

args!(PJRT_DeviceDescription_Kind_Args {
    device_description: *mut PJRT_DeviceDescription,
    device_kind: *const c_char,
    device_kind_size: usize,
} last = device_kind_size);

args!(PJRT_DeviceDescription_DebugString_Args {
    device_description: *mut PJRT_DeviceDescription,
    debug_string: *const c_char,
    debug_string_size: usize,
} last = debug_string_size);

args!(PJRT_DeviceDescription_ToString_Args {
    device_description: *mut PJRT_DeviceDescription,
    to_string: *const c_char,
    to_string_size: usize,
} last = to_string_size);

args!(PJRT_Device_GetDescription_Args {
    device: *mut PJRT_Device,
    device_description: *mut PJRT_DeviceDescription,
} last = device_description);

args!(PJRT_Device_IsAddressable_Args {
    device: *mut PJRT_Device,
    is_addressable: bool,
} last = is_addressable);

args!(PJRT_Device_LocalHardwareId_Args {
    device: *mut PJRT_Device,
    local_hardware_id: c_int,
} last = local_hardware_id);

args!(PJRT_Device_MemoryStats_Args {
    device: *mut PJRT_Device,
    bytes_in_use: i64,
    peak_bytes_in_use: i64,
    peak_bytes_in_use_is_set: bool,
    num_allocs: i64,
    num_allocs_is_set: bool,
    largest_alloc_size: i64,
    largest_alloc_size_is_set: bool,
    bytes_limit: i64,
    bytes_limit_is_set: bool,
    bytes_reserved: i64,
    bytes_reserved_is_set: bool,
    peak_bytes_reserved: i64,
    peak_bytes_reserved_is_set: bool,
    bytes_reservable_limit: i64,
    bytes_reservable_limit_is_set: bool,
    largest_free_block_bytes: i64,
    largest_free_block_bytes_is_set: bool,
    pool_bytes: i64,
    pool_bytes_is_set: bool,
    peak_pool_bytes: i64,
    peak_pool_bytes_is_set: bool,
    peak_allocated_bytes: i64,
    peak_allocated_bytes_is_set: bool,
} last = peak_allocated_bytes_is_set);

args!(PJRT_Executable_Destroy_Args {
    executable: *mut PJRT_Executable,
} last = executable);

args!(PJRT_LoadedExecutable_Destroy_Args {
    executable: *mut PJRT_LoadedExecutable,
} last = executable);

args!(PJRT_LoadedExecutable_GetExecutable_Args {
    loaded_executable: *mut PJRT_LoadedExecutable,
    executable: *mut PJRT_Executable,
} last = executable);

args!(PJRT_Executable_Name_Args {
    executable: *mut PJRT_Executable,
    executable_name: *const c_char,
    executable_name_size: usize,
} last = executable_name_size);

args!(PJRT_Executable_NumReplicas_Args {
    executable: *mut PJRT_Executable,
    num_replicas: usize,
} last = num_replicas);

args!(PJRT_Executable_NumPartitions_Args {
    executable: *mut PJRT_Executable,
    num_partitions: usize,
} last = num_partitions);

args!(PJRT_LoadedExecutable_AddressableDevices_Args {
    executable: *mut PJRT_LoadedExecutable,
    addressable_devices: *const *mut PJRT_Device,
    num_addressable_devices: usize,
} last = num_addressable_devices);

args!(PJRT_LoadedExecutable_Execute_Args {
    executable: *mut PJRT_LoadedExecutable,
    options: *mut PJRT_ExecuteOptions,
    argument_lists: *const *const *mut PJRT_Buffer,
    num_devices: usize,
    num_args: usize,
    output_lists: *const *mut *mut PJRT_Buffer,
    device_complete_events: *mut *mut PJRT_Event,
    execute_device: *mut PJRT_Device,
} last = execute_device);

args!(PJRT_Executable_NumOutputs_Args {
    executable: *mut PJRT_Executable,
    num_outputs: usize,
} last = num_outputs);

args!(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args {
    executable: *mut PJRT_Executable,
    size_in_bytes: i64,
} last = size_in_bytes);

args!(PJRT_Executable_Fingerprint_Args {
    executable: *mut PJRT_Executable,
    executable_fingerprint: *const c_char,
    executable_fingerprint_size: usize,
} last = executable_fingerprint_size);

args!(PJRT_Executable_GetCostAnalysis_Args {
    executable: *mut PJRT_Executable,
    num_properties: usize,
    properties: *const PJRT_NamedValue,
} last = properties);

args!(PJRT_Executable_GetCompiledMemoryStats_Args {
    executable: *mut PJRT_Executable,
    generated_code_size_in_bytes: i64,
    argument_size_in_bytes: i64,
    output_size_in_bytes: i64,
    alias_size_in_bytes: i64,
    temp_size_in_bytes: i64,
    host_generated_code_size_in_bytes: i64,
    host_argument_size_in_bytes: i64,
    host_output_size_in_bytes: i64,
    host_alias_size_in_bytes: i64,
    host_temp_size_in_bytes: i64,
    peak_memory_in_bytes: i64,
    total_size_in_bytes: i64,
    total_allocation_bytes: i64,
    indefinite_allocations: i64,
    peak_unpadded_heap_bytes: i64,
} last = peak_unpadded_heap_bytes);

args!(PJRT_Executable_OutputElementTypes_Args {
    executable: *mut PJRT_Executable,
    output_types: *mut PJRT_Buffer_Type,
    num_output_types: usize,
} last = num_output_types);

args!(PJRT_Executable_OutputDimensions_Args {
    executable: *mut PJRT_Executable,
    num_outputs: usize,
    dims: *const i64,
    dim_sizes: *const usize,
} last = dim_sizes);

args!(PJRT_Executable_Serialize_Args {
    executable: *const PJRT_Executable,
    serialized_bytes: *const c_char,
    serialized_bytes_size: usize,
    serialized_executable: *mut PJRT_SerializedExecutable,
    serialized_executable_deleter: Option<unsafe extern "C" fn(*mut PJRT_SerializedExecutable)>,
} last = serialized_executable_deleter);

args!(PJRT_Executable_DeserializeAndLoad_Args {
    client: *mut PJRT_Client,
    serialized_executable: *const c_char,
    serialized_executable_size: usize,
    loaded_executable: *mut PJRT_LoadedExecutable,
    overridden_serialized_compile_options: *const c_char,
    overridden_serialized_compile_options_size: usize,
    load_options: *mut PJRT_LoadOptions,
} last = load_options);

args!(PJRT_Buffer_Destroy_Args {
    buffer: *mut PJRT_Buffer,
} last = buffer);

args!(PJRT_Buffer_ElementType_Args {
    buffer: *mut PJRT_Buffer,
    type_: PJRT_Buffer_Type,
} last = type_);

args!(PJRT_Buffer_Dimensions_Args {
    buffer: *mut PJRT_Buffer,
    dims: *const i64,
    num_dims: usize,
} last = num_dims);

args!(PJRT_Buffer_OnDeviceSizeInBytes_Args {
    buffer: *mut PJRT_Buffer,
    on_device_size_in_bytes: usize,
} last = on_device_size_in_bytes);

args!(PJRT_Buffer_Device_Args {
    buffer: *mut PJRT_Buffer,
    device: *mut PJRT_Device,
} last = device);

args!(PJRT_Buffer_ToHostBuffer_Args {
    src: *mut PJRT_Buffer,
    host_layout: *mut c_void,
    dst: *mut c_void,
    dst_size: usize,
    event: *mut PJRT_Event,
} last = event);

args!(PJRT_Buffer_IsOnCpu_Args {
    buffer: *mut PJRT_Buffer,
    is_on_cpu: bool,
} last = is_on_cpu);

args!(PJRT_Buffer_ReadyEvent_Args {
    buffer: *mut PJRT_Buffer,
    event: *mut PJRT_Event,
} last = event);

args!(PJRT_TopologyDescription_PlatformName_Args {
    topology: *const PJRT_TopologyDescription,
    platform_name: *const c_char,
    platform_name_size: usize,
} last = platform_name_size);

args!(PJRT_TopologyDescription_PlatformVersion_Args {
    topology: *mut PJRT_TopologyDescription,
    platform_version: *const c_char,
    platform_version_size: usize,
} last = platform_version_size);

args!(PJRT_TopologyDescription_GetDeviceDescriptions_Args {
    topology: *const PJRT_TopologyDescription,
    descriptions: *const *mut PJRT_DeviceDescription,
    num_descriptions: usize,
} last = num_descriptions);

args!(PJRT_TopologyDescription_Create_Args {
    topology_name: *const c_char,
    topology_name_size: usize,
    create_options: *const PJRT_NamedValue,
    num_options: usize,
    topology: *mut PJRT_TopologyDescription,
} last = topology);

args!(PJRT_TopologyDescription_Destroy_Args {
    topology: *mut PJRT_TopologyDescription,
} last = topology);

args!(PJRT_TopologyDescription_Serialize_Args {
    topology: *mut PJRT_TopologyDescription,
    serialized_bytes: *const c_char,
    serialized_bytes_size: usize,
    serialized_topology: *mut PJRT_SerializedTopology,
    serialized_topology_deleter: Option<unsafe extern "C" fn(*mut PJRT_SerializedTopology)>,
} last = serialized_topology_deleter);

args!(PJRT_TopologyDescription_Attributes_Args {
    topology: *mut PJRT_TopologyDescription,
    attributes: *const PJRT_NamedValue,
    num_attributes: usize,
} last = num_attributes);

args!(PJRT_TopologyDescription_Fingerprint_Args {
    topology: *const PJRT_TopologyDescription,
    fingerprint: u64,
} last = fingerprint);

args!(PJRT_Compile_Args {
    topology: *const PJRT_TopologyDescription,
    program: *const PJRT_Program,
    compile_options: *const c_char,
    compile_options_size: usize,
    client: *mut PJRT_Client,
    executable: *mut PJRT_Executable,
} last = executable);

args!(PJRT_Executable_OutputMemoryKinds_Args {
    executable: *mut PJRT_Executable,
    num_outputs: usize,
    memory_kinds: *const *const c_char,
    memory_kind_sizes: *const usize,
} last = memory_kind_sizes);

args!(PJRT_Executable_ParameterMemoryKinds_Args {
    executable: *mut PJRT_Executable,
    num_parameters: usize,
    memory_kinds: *const *const c_char,
    memory_kind_sizes: *const usize,
} last = memory_kind_sizes);
