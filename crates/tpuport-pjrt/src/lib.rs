//! tpuport's runtime layer: the PJRT C API, written here.
//!
//! Three layers, as in rusqlite: raw declarations ([`sys`](self) module, private), owning
//! wrappers that free what they own in `Drop` ([`Buffer`], [`Executable`],
//! [`LoadedExecutable`], the client inside [`Client`], events), and the safe API below.
//!
//! Design decisions (see `docs/runtime.md` and `docs/pjrt-notes.md`):
//! - The declarations follow the newest header available (PJRT API 0.113); a plugin's
//!   `PJRT_Api.struct_size` is read first and every function past its table is reported as
//!   unavailable by name instead of being called.
//! - Every `PJRT_Error` is converted (code + message) and destroyed once; every event is
//!   awaited and its error queried.
//! - Plugins are loaded once per process and never unloaded.
//! - [`Client`], [`Buffer`] and [`LoadedExecutable`] are `Send + Sync`; executions borrow
//!   their input buffers, which are never donated.
//! - The runtime knows nothing of model formats: it takes StableHLO bytes and
//!   [`tpuport_model::HostTensor`]s.
//! - [`Topology`] compiles for a topology a plugin describes without a client (libtpu on a
//!   machine with no TPU): the unloaded [`Executable`] answers memory statistics, cost
//!   analysis, layouts and shardings, and serializes for a TPU VM to load.

#![allow(
    unsafe_code,
    reason = "FFI to the PJRT C API; every unsafe block carries a SAFETY comment"
)]

mod api;
mod buffer;
mod cache;
mod client;
mod device;
mod discover;
mod dtype;
mod env;
mod error;
mod event;
mod executable;
mod introspect;
mod keep;
mod named_value;
mod op_sharding;
mod options;
mod plugin;
mod program;
mod runtime;
mod sharding;
mod sys;
mod topology;
mod util;

#[cfg(test)]
mod tests;

pub use api::extension_name;
pub use buffer::Buffer;
pub use cache::{CacheStatus, Compiled, ExecutableCache};
pub use client::{Client, ProgramRewrite, set_cpu_program_rewrite};
pub use device::{Device, DeviceDescription, DeviceMemoryStats};
pub use discover::{
    Found, Place, PluginKind, discover, find, find_cpu, libtpu_places, python, search_places,
    site_packages, tpu_hardware_present,
};
pub use env::{EnvVars, libtpu_offline_env};
pub use error::{ErrorCode, PjrtError, Result};
pub use executable::{CompiledMemoryStats, Executable, LoadedExecutable, OutputInfo};
pub use keep::KeepAlive;
pub use named_value::{NamedValue, Value, find as find_value};
pub use op_sharding::Sharding;
pub use options::{
    ClientOptions, CompileOptions, CompileOptionsProto, ComputationDevice, DeviceAssignmentProto,
    ExecutableBuildOptionsProto,
};
pub use plugin::{Plugin, PluginInfo, StablehloVersion, load};
pub use program::Program;
pub use runtime::{Chosen, Runtime, Skipped, choose};
pub use sharding::{Layout, Mesh, download, parse_meshes, upload};
pub use topology::Topology;

/// PJRT API version (`major`, `minor`) of the header tpuport's declarations follow.
pub const HEADER_API_VERSION: (i32, i32) = (sys::PJRT_API_MAJOR, sys::PJRT_API_MINOR);
