//! The real TPU compiler (libtpu) on a machine without a TPU, behind `tpuport compile` and the
//! compiler check of `tpuport audit --compiler`: the slice name becomes a libtpu topology
//! (`v5e:2x4`), the model a StableHLO program (ONNX through tpuport's lowering), and
//! `PJRT_Compile` against the topology answers with the compiler's own figures: memory per
//! device and whether it fits, cost, the layout and sharding of every parameter and output, or
//! the compiler's refusal. `save` keeps the serialized TPU executable with a manifest. JSON
//! schema `tpuport.compile/1`: `docs/compile.md`.
//!
//! The target `cpu` compiles with the PJRT CPU plugin instead (on this host, for one device),
//! so that an executable saved with its manifest can be produced, and served by
//! `tpuport serve`, on a machine without a TPU.
//!
//! [`compile`] returns a [`CompileReport`] whose `outcome` is `compiled` or `out_of_memory` (the
//! compiler refused for lack of HBM: a finding, with the bytes its message names); every other
//! failure (no libtpu, a program the TPU compiler rejects, a model that cannot be read or
//! lowered) is an error.
//!
//! By concern:
//! - [`request`]: what to compile ([`Request`]) and the audit's question ([`for_audit`]);
//! - [`placement`]: a sharding plan placed on the program's arguments (`tpuport shard
//!   --verify`);
//! - [`prepare`]: the model read as a program with its signature (ONNX lowered here);
//! - [`pipeline`]: [`compile`] itself, for a TPU slice or the CPU plugin;
//! - [`libtpu`]: finding libtpu and describing the slice's topology to it;
//! - [`executable`]: the report's memory, cost, layouts and shardings read from the
//!   executable;
//! - [`oom`]: the compiler's messages, its out-of-memory refusal read for the bytes it names;
//! - [`save`]: `--save`, the executable and its manifest;
//! - [`report`]: the report ([`CompileReport`]) and what the audit compares of it.
//!
//! Nothing here prints: progress and warnings go to a [`tpuport_exec::Observer`]. Errors are
//! [`tpuport_exec::ExecError`]s.

pub mod executable;
pub mod libtpu;
pub mod oom;
pub mod pipeline;
pub mod placement;
pub mod prepare;
pub mod report;
pub mod request;
pub mod save;

pub use libtpu::find_libtpu;
pub use oom::{compiler_message, out_of_memory};
pub use pipeline::compile;
pub use placement::Placement;
pub use report::{
    CPU_TARGET, CompileReport, CompilerInfo, Cost, Operand, Outcome, PerDevice, SCHEMA, Saved,
};
pub use request::{CompilerMode, Request, for_audit};
pub use save::MANIFEST_SCHEMA;
