//! `PJRT_Api`: the plugin's function table, in the 0.113 header's order (137 entries).
//!
//! A plugin built against an older header has a shorter table: `struct_size` says how many
//! bytes of it exist. [`crate::api::Api`] copies only that many bytes and treats every entry
//! past them as unavailable.

use super::*;

/// `PJRT_Api_Version`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct PJRT_Api_Version {
    pub(crate) struct_size: usize,
    pub(crate) extension_start: *mut PJRT_Extension_Base,
    pub(crate) major_version: c_int,
    pub(crate) minor_version: c_int,
}

/// The function table returned by `GetPjrtApi`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct PJRT_Api {
    pub(crate) struct_size: usize,
    pub(crate) extension_start: *mut PJRT_Extension_Base,
    pub(crate) pjrt_api_version: PJRT_Api_Version,
    pub(crate) PJRT_Error_Destroy: Option<unsafe extern "C" fn(*mut PJRT_Error_Destroy_Args)>,
    pub(crate) PJRT_Error_Message: Option<unsafe extern "C" fn(*mut PJRT_Error_Message_Args)>,
    pub(crate) PJRT_Error_GetCode:
        Option<unsafe extern "C" fn(*mut PJRT_Error_GetCode_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Plugin_Initialize:
        Option<unsafe extern "C" fn(*mut PJRT_Plugin_Initialize_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Plugin_Attributes:
        Option<unsafe extern "C" fn(*mut PJRT_Plugin_Attributes_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Event_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_Event_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Event_IsReady:
        Option<unsafe extern "C" fn(*mut PJRT_Event_IsReady_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Event_Error:
        Option<unsafe extern "C" fn(*mut PJRT_Event_Error_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Event_Await:
        Option<unsafe extern "C" fn(*mut PJRT_Event_Await_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Event_OnReady: PJRT_UnusedFn,
    pub(crate) PJRT_Client_Create:
        Option<unsafe extern "C" fn(*mut PJRT_Client_Create_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_Client_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_PlatformName:
        Option<unsafe extern "C" fn(*mut PJRT_Client_PlatformName_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_ProcessIndex:
        Option<unsafe extern "C" fn(*mut PJRT_Client_ProcessIndex_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_PlatformVersion:
        Option<unsafe extern "C" fn(*mut PJRT_Client_PlatformVersion_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_Devices:
        Option<unsafe extern "C" fn(*mut PJRT_Client_Devices_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_AddressableDevices:
        Option<unsafe extern "C" fn(*mut PJRT_Client_AddressableDevices_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_LookupDevice: PJRT_UnusedFn,
    pub(crate) PJRT_Client_LookupAddressableDevice: PJRT_UnusedFn,
    pub(crate) PJRT_Client_AddressableMemories: PJRT_UnusedFn,
    pub(crate) PJRT_Client_Compile:
        Option<unsafe extern "C" fn(*mut PJRT_Client_Compile_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_DefaultDeviceAssignment: Option<
        unsafe extern "C" fn(*mut PJRT_Client_DefaultDeviceAssignment_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Client_BufferFromHostBuffer:
        Option<unsafe extern "C" fn(*mut PJRT_Client_BufferFromHostBuffer_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_DeviceDescription_Id:
        Option<unsafe extern "C" fn(*mut PJRT_DeviceDescription_Id_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_DeviceDescription_ProcessIndex: Option<
        unsafe extern "C" fn(*mut PJRT_DeviceDescription_ProcessIndex_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_DeviceDescription_Attributes: Option<
        unsafe extern "C" fn(*mut PJRT_DeviceDescription_Attributes_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_DeviceDescription_Kind:
        Option<unsafe extern "C" fn(*mut PJRT_DeviceDescription_Kind_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_DeviceDescription_DebugString: Option<
        unsafe extern "C" fn(*mut PJRT_DeviceDescription_DebugString_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_DeviceDescription_ToString:
        Option<unsafe extern "C" fn(*mut PJRT_DeviceDescription_ToString_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Device_GetDescription:
        Option<unsafe extern "C" fn(*mut PJRT_Device_GetDescription_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Device_IsAddressable:
        Option<unsafe extern "C" fn(*mut PJRT_Device_IsAddressable_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Device_LocalHardwareId:
        Option<unsafe extern "C" fn(*mut PJRT_Device_LocalHardwareId_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Device_AddressableMemories: PJRT_UnusedFn,
    pub(crate) PJRT_Device_DefaultMemory: PJRT_UnusedFn,
    pub(crate) PJRT_Device_MemoryStats:
        Option<unsafe extern "C" fn(*mut PJRT_Device_MemoryStats_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Memory_Id: PJRT_UnusedFn,
    pub(crate) PJRT_Memory_Kind: PJRT_UnusedFn,
    pub(crate) PJRT_Memory_DebugString: PJRT_UnusedFn,
    pub(crate) PJRT_Memory_ToString: PJRT_UnusedFn,
    pub(crate) PJRT_Memory_AddressableByDevices: PJRT_UnusedFn,
    pub(crate) PJRT_Executable_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_Name:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_Name_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_NumReplicas:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_NumReplicas_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_NumPartitions:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_NumPartitions_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_NumOutputs:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_NumOutputs_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_SizeOfGeneratedCodeInBytes: Option<
        unsafe extern "C" fn(
            *mut PJRT_Executable_SizeOfGeneratedCodeInBytes_Args,
        ) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Executable_GetCostAnalysis:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_GetCostAnalysis_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_OutputMemoryKinds: Option<
        unsafe extern "C" fn(*mut PJRT_Executable_OutputMemoryKinds_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Executable_OptimizedProgram: PJRT_UnusedFn,
    pub(crate) PJRT_Executable_Serialize:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_Serialize_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_LoadedExecutable_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_LoadedExecutable_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_LoadedExecutable_GetExecutable: Option<
        unsafe extern "C" fn(*mut PJRT_LoadedExecutable_GetExecutable_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_LoadedExecutable_AddressableDevices: Option<
        unsafe extern "C" fn(*mut PJRT_LoadedExecutable_AddressableDevices_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_LoadedExecutable_Delete: PJRT_UnusedFn,
    pub(crate) PJRT_LoadedExecutable_IsDeleted: PJRT_UnusedFn,
    pub(crate) PJRT_LoadedExecutable_Execute:
        Option<unsafe extern "C" fn(*mut PJRT_LoadedExecutable_Execute_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_DeserializeAndLoad: Option<
        unsafe extern "C" fn(*mut PJRT_Executable_DeserializeAndLoad_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_LoadedExecutable_Fingerprint: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_ElementType:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_ElementType_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_Dimensions:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_Dimensions_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_UnpaddedDimensions: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_DynamicDimensionIndices: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_GetMemoryLayout: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_OnDeviceSizeInBytes:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_OnDeviceSizeInBytes_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_Device:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_Device_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_Memory: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_Delete: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_IsDeleted: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_CopyToDevice: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_ToHostBuffer:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_ToHostBuffer_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_IsOnCpu:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_IsOnCpu_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_ReadyEvent:
        Option<unsafe extern "C" fn(*mut PJRT_Buffer_ReadyEvent_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_UnsafePointer: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_IncreaseExternalReferenceCount: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_DecreaseExternalReferenceCount: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_OpaqueDeviceMemoryDataPointer: PJRT_UnusedFn,
    pub(crate) PJRT_CopyToDeviceStream_Destroy: PJRT_UnusedFn,
    pub(crate) PJRT_CopyToDeviceStream_AddChunk: PJRT_UnusedFn,
    pub(crate) PJRT_CopyToDeviceStream_TotalBytes: PJRT_UnusedFn,
    pub(crate) PJRT_CopyToDeviceStream_GranuleSize: PJRT_UnusedFn,
    pub(crate) PJRT_CopyToDeviceStream_CurrentBytes: PJRT_UnusedFn,
    pub(crate) PJRT_TopologyDescription_Create:
        Option<unsafe extern "C" fn(*mut PJRT_TopologyDescription_Create_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_TopologyDescription_Destroy:
        Option<unsafe extern "C" fn(*mut PJRT_TopologyDescription_Destroy_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_TopologyDescription_PlatformName: Option<
        unsafe extern "C" fn(*mut PJRT_TopologyDescription_PlatformName_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_TopologyDescription_PlatformVersion: Option<
        unsafe extern "C" fn(*mut PJRT_TopologyDescription_PlatformVersion_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_TopologyDescription_GetDeviceDescriptions: Option<
        unsafe extern "C" fn(
            *mut PJRT_TopologyDescription_GetDeviceDescriptions_Args,
        ) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_TopologyDescription_Serialize: Option<
        unsafe extern "C" fn(*mut PJRT_TopologyDescription_Serialize_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_TopologyDescription_Attributes: Option<
        unsafe extern "C" fn(*mut PJRT_TopologyDescription_Attributes_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Compile:
        Option<unsafe extern "C" fn(*mut PJRT_Compile_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_OutputElementTypes: Option<
        unsafe extern "C" fn(*mut PJRT_Executable_OutputElementTypes_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Executable_OutputDimensions:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_OutputDimensions_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Buffer_CopyToMemory: PJRT_UnusedFn,
    pub(crate) PJRT_Client_CreateViewOfDeviceBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_Executable_Fingerprint:
        Option<unsafe extern "C" fn(*mut PJRT_Executable_Fingerprint_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Client_TopologyDescription:
        Option<unsafe extern "C" fn(*mut PJRT_Client_TopologyDescription_Args) -> *mut PJRT_Error>,
    pub(crate) PJRT_Executable_GetCompiledMemoryStats: Option<
        unsafe extern "C" fn(*mut PJRT_Executable_GetCompiledMemoryStats_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Memory_Kind_Id: PJRT_UnusedFn,
    pub(crate) PJRT_ExecuteContext_Create: PJRT_UnusedFn,
    pub(crate) PJRT_ExecuteContext_Destroy: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_CopyRawToHost: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_Destroy: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_TransferData: PJRT_UnusedFn,
    pub(crate) PJRT_Client_CreateBuffersForAsyncHostToDevice: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_Device: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_BufferCount: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_BufferSize: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_SetBufferError: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_AddMetadata: PJRT_UnusedFn,
    pub(crate) PJRT_Client_DmaMap: PJRT_UnusedFn,
    pub(crate) PJRT_Client_DmaUnmap: PJRT_UnusedFn,
    pub(crate) PJRT_Client_CreateUninitializedBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_Client_UpdateGlobalProcessInfo: PJRT_UnusedFn,
    pub(crate) PJRT_TopologyDescription_Deserialize: PJRT_UnusedFn,
    pub(crate) PJRT_Client_CreateAliasBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_Client_FulfillAliasBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_LoadedExecutable_GetDeviceAssignment: PJRT_UnusedFn,
    pub(crate) PJRT_Client_CreateErrorBuffer: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncHostToDeviceTransferManager_TransferLiteral: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_CopyRawToHostFuture: PJRT_UnusedFn,
    pub(crate) PJRT_Device_PoisonExecution: PJRT_UnusedFn,
    pub(crate) PJRT_Device_CreateAsyncTrackingEvent: PJRT_UnusedFn,
    pub(crate) PJRT_AsyncTrackingEvent_Destroy: PJRT_UnusedFn,
    pub(crate) PJRT_Executable_GetCompileOptions: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_DonateWithControlDependency: PJRT_UnusedFn,
    pub(crate) PJRT_Event_Create: PJRT_UnusedFn,
    pub(crate) PJRT_Event_Set: PJRT_UnusedFn,
    pub(crate) PJRT_Device_GetAttributes: PJRT_UnusedFn,
    // 0.95 .. 0.113
    pub(crate) PJRT_Client_Load: PJRT_UnusedFn,
    pub(crate) PJRT_LoadedExecutable_AddressableDeviceLogicalIds: PJRT_UnusedFn,
    pub(crate) PJRT_Buffer_Bitcast: PJRT_UnusedFn,
    pub(crate) PJRT_Error_ForEachPayload: PJRT_UnusedFn,
    pub(crate) PJRT_TopologyDescription_Fingerprint: Option<
        unsafe extern "C" fn(*mut PJRT_TopologyDescription_Fingerprint_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Executable_ParameterMemoryKinds: Option<
        unsafe extern "C" fn(*mut PJRT_Executable_ParameterMemoryKinds_Args) -> *mut PJRT_Error,
    >,
    pub(crate) PJRT_Device_ClearMemoryStats: PJRT_UnusedFn,
    pub(crate) PJRT_TopologyDescription_GetMemorySpaceKindIds: PJRT_UnusedFn,
}

/// Number of function entries in this header's table.
pub(crate) const PJRT_API_NUM_FUNCTIONS: usize = 137;

/// Names of the table entries, in order (used by the layout test and error messages).
pub(crate) const PJRT_API_FUNCTION_NAMES: [&str; 137] = [
    "PJRT_Error_Destroy",
    "PJRT_Error_Message",
    "PJRT_Error_GetCode",
    "PJRT_Plugin_Initialize",
    "PJRT_Plugin_Attributes",
    "PJRT_Event_Destroy",
    "PJRT_Event_IsReady",
    "PJRT_Event_Error",
    "PJRT_Event_Await",
    "PJRT_Event_OnReady",
    "PJRT_Client_Create",
    "PJRT_Client_Destroy",
    "PJRT_Client_PlatformName",
    "PJRT_Client_ProcessIndex",
    "PJRT_Client_PlatformVersion",
    "PJRT_Client_Devices",
    "PJRT_Client_AddressableDevices",
    "PJRT_Client_LookupDevice",
    "PJRT_Client_LookupAddressableDevice",
    "PJRT_Client_AddressableMemories",
    "PJRT_Client_Compile",
    "PJRT_Client_DefaultDeviceAssignment",
    "PJRT_Client_BufferFromHostBuffer",
    "PJRT_DeviceDescription_Id",
    "PJRT_DeviceDescription_ProcessIndex",
    "PJRT_DeviceDescription_Attributes",
    "PJRT_DeviceDescription_Kind",
    "PJRT_DeviceDescription_DebugString",
    "PJRT_DeviceDescription_ToString",
    "PJRT_Device_GetDescription",
    "PJRT_Device_IsAddressable",
    "PJRT_Device_LocalHardwareId",
    "PJRT_Device_AddressableMemories",
    "PJRT_Device_DefaultMemory",
    "PJRT_Device_MemoryStats",
    "PJRT_Memory_Id",
    "PJRT_Memory_Kind",
    "PJRT_Memory_DebugString",
    "PJRT_Memory_ToString",
    "PJRT_Memory_AddressableByDevices",
    "PJRT_Executable_Destroy",
    "PJRT_Executable_Name",
    "PJRT_Executable_NumReplicas",
    "PJRT_Executable_NumPartitions",
    "PJRT_Executable_NumOutputs",
    "PJRT_Executable_SizeOfGeneratedCodeInBytes",
    "PJRT_Executable_GetCostAnalysis",
    "PJRT_Executable_OutputMemoryKinds",
    "PJRT_Executable_OptimizedProgram",
    "PJRT_Executable_Serialize",
    "PJRT_LoadedExecutable_Destroy",
    "PJRT_LoadedExecutable_GetExecutable",
    "PJRT_LoadedExecutable_AddressableDevices",
    "PJRT_LoadedExecutable_Delete",
    "PJRT_LoadedExecutable_IsDeleted",
    "PJRT_LoadedExecutable_Execute",
    "PJRT_Executable_DeserializeAndLoad",
    "PJRT_LoadedExecutable_Fingerprint",
    "PJRT_Buffer_Destroy",
    "PJRT_Buffer_ElementType",
    "PJRT_Buffer_Dimensions",
    "PJRT_Buffer_UnpaddedDimensions",
    "PJRT_Buffer_DynamicDimensionIndices",
    "PJRT_Buffer_GetMemoryLayout",
    "PJRT_Buffer_OnDeviceSizeInBytes",
    "PJRT_Buffer_Device",
    "PJRT_Buffer_Memory",
    "PJRT_Buffer_Delete",
    "PJRT_Buffer_IsDeleted",
    "PJRT_Buffer_CopyToDevice",
    "PJRT_Buffer_ToHostBuffer",
    "PJRT_Buffer_IsOnCpu",
    "PJRT_Buffer_ReadyEvent",
    "PJRT_Buffer_UnsafePointer",
    "PJRT_Buffer_IncreaseExternalReferenceCount",
    "PJRT_Buffer_DecreaseExternalReferenceCount",
    "PJRT_Buffer_OpaqueDeviceMemoryDataPointer",
    "PJRT_CopyToDeviceStream_Destroy",
    "PJRT_CopyToDeviceStream_AddChunk",
    "PJRT_CopyToDeviceStream_TotalBytes",
    "PJRT_CopyToDeviceStream_GranuleSize",
    "PJRT_CopyToDeviceStream_CurrentBytes",
    "PJRT_TopologyDescription_Create",
    "PJRT_TopologyDescription_Destroy",
    "PJRT_TopologyDescription_PlatformName",
    "PJRT_TopologyDescription_PlatformVersion",
    "PJRT_TopologyDescription_GetDeviceDescriptions",
    "PJRT_TopologyDescription_Serialize",
    "PJRT_TopologyDescription_Attributes",
    "PJRT_Compile",
    "PJRT_Executable_OutputElementTypes",
    "PJRT_Executable_OutputDimensions",
    "PJRT_Buffer_CopyToMemory",
    "PJRT_Client_CreateViewOfDeviceBuffer",
    "PJRT_Executable_Fingerprint",
    "PJRT_Client_TopologyDescription",
    "PJRT_Executable_GetCompiledMemoryStats",
    "PJRT_Memory_Kind_Id",
    "PJRT_ExecuteContext_Create",
    "PJRT_ExecuteContext_Destroy",
    "PJRT_Buffer_CopyRawToHost",
    "PJRT_AsyncHostToDeviceTransferManager_Destroy",
    "PJRT_AsyncHostToDeviceTransferManager_TransferData",
    "PJRT_Client_CreateBuffersForAsyncHostToDevice",
    "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer",
    "PJRT_AsyncHostToDeviceTransferManager_Device",
    "PJRT_AsyncHostToDeviceTransferManager_BufferCount",
    "PJRT_AsyncHostToDeviceTransferManager_BufferSize",
    "PJRT_AsyncHostToDeviceTransferManager_SetBufferError",
    "PJRT_AsyncHostToDeviceTransferManager_AddMetadata",
    "PJRT_Client_DmaMap",
    "PJRT_Client_DmaUnmap",
    "PJRT_Client_CreateUninitializedBuffer",
    "PJRT_Client_UpdateGlobalProcessInfo",
    "PJRT_TopologyDescription_Deserialize",
    "PJRT_Client_CreateAliasBuffer",
    "PJRT_Client_FulfillAliasBuffer",
    "PJRT_LoadedExecutable_GetDeviceAssignment",
    "PJRT_Client_CreateErrorBuffer",
    "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral",
    "PJRT_Buffer_CopyRawToHostFuture",
    "PJRT_Device_PoisonExecution",
    "PJRT_Device_CreateAsyncTrackingEvent",
    "PJRT_AsyncTrackingEvent_Destroy",
    "PJRT_Executable_GetCompileOptions",
    "PJRT_Buffer_DonateWithControlDependency",
    "PJRT_Event_Create",
    "PJRT_Event_Set",
    "PJRT_Device_GetAttributes",
    "PJRT_Client_Load",
    "PJRT_LoadedExecutable_AddressableDeviceLogicalIds",
    "PJRT_Buffer_Bitcast",
    "PJRT_Error_ForEachPayload",
    "PJRT_TopologyDescription_Fingerprint",
    "PJRT_Executable_ParameterMemoryKinds",
    "PJRT_Device_ClearMemoryStats",
    "PJRT_TopologyDescription_GetMemorySpaceKindIds",
];
