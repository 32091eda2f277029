//! What to compile, for which slice, with which libtpu ([`Request`]), and the TPU compiler's
//! answer condensed for `tpuport audit --compiler` ([`for_audit`]).

use std::path::PathBuf;

use tpuport_analysis::compiler_check::CompilerInput;
use tpuport_exec::Observer;
use tpuport_exec::error::{Result, invalid};
use tpuport_formats::ImportOptions;
use tpuport_hw::Catalog;
use tpuport_lower::onnx::ComputeType;

use crate::{Placement, compile, find_libtpu};

/// What to compile, for which slice, with which libtpu.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// StableHLO (`.mlir` text, `.mlirbc` bytecode) or ONNX (lowered by tpuport first).
    pub model: PathBuf,
    /// Slice name (`v5e-8`, `v6e-4`, `v5p-8`, `v4-8`, `v6e-2x4`, `tpu7x-8`).
    pub target: String,
    /// ONNX: dimension bindings (batch, named dims, input shapes); ignored (with a warning)
    /// for StableHLO, whose shapes are fixed.
    pub import: ImportOptions,
    /// ONNX: compute type of the lowered program.
    pub compute: ComputeType,
    /// Devices the program is partitioned over (default: the module's `mhlo.num_partitions`).
    pub partitions: Option<u32>,
    /// libtpu (default: [`find_libtpu`]).
    pub plugin: Option<PathBuf>,
    /// Write the serialized executable here and its manifest to `FILE.json`.
    pub save: Option<PathBuf>,
    /// Shardings to place on the program's arguments first (`tpuport shard --verify`); the
    /// program is then compiled over the mesh's devices.
    pub placement: Option<Placement>,
}

/// Whether `tpuport audit` asks the TPU compiler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompilerMode {
    /// Use libtpu when it is found (the default); otherwise a note, estimate only.
    #[default]
    Auto,
    /// Always: no libtpu, or a program it rejects, is an error.
    Libtpu,
    /// Never.
    None,
}

/// The TPU compiler's answer for an audit of `req.model` on `req.target`: compiles as
/// [`compile`] does (`req.save` is ignored) and condenses the report to what the audit
/// compares.
///
/// # Errors
/// Only in [`CompilerMode::Libtpu`]: no libtpu, or a program it rejects (as [`compile`]). In
/// [`CompilerMode::Auto`] those are [`CompilerInput::Unavailable`] with the reason.
pub fn for_audit(
    req: &Request,
    mode: CompilerMode,
    catalog: &Catalog,
    obs: &dyn Observer,
) -> Result<CompilerInput> {
    if mode == CompilerMode::None {
        return Ok(CompilerInput::NotAsked);
    }
    let chip = catalog.slice(&req.target).map_err(|e| invalid(e.to_string()))?.chip;
    let req = Request { save: None, ..req.clone() };
    let answer = find_libtpu(req.plugin.as_deref()).and_then(|_| compile(&req, catalog, obs));
    match (answer, mode) {
        (Ok(r), _) => Ok(CompilerInput::Answered(r.audit_facts(&chip))),
        (Err(e), CompilerMode::Auto) => {
            let mut why = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                why = format!("{why}: {c}");
                cause = c.source();
            }
            Ok(CompilerInput::Unavailable(why))
        }
        (Err(e), _) => Err(e),
    }
}
