//! The compiler's answer as `tpuport compile` reports it ([`CompileReport`], JSON schema
//! `tpuport.compile/1`), and what `tpuport audit --compiler` compares of it
//! ([`CompileReport::audit_facts`]).

use serde::Serialize;
use tpuport_analysis::compiler_check::{CompiledTensor, CompilerFacts};

/// The `--target` that compiles with the PJRT CPU plugin instead of libtpu.
pub const CPU_TARGET: &str = "cpu";

/// JSON schema tag of [`CompileReport`].
pub const SCHEMA: &str = "tpuport.compile/1";

/// Everything the TPU compiler answered (`tpuport compile`'s report).
#[derive(Clone, Debug, Serialize)]
pub struct CompileReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The model file as given.
    pub model: String,
    /// SHA-256 of the model file, hex.
    pub model_sha256: String,
    /// How the program was obtained: `stablehlo` or `onnx (lowered by tpuport)`.
    pub source: String,
    /// The slice named with `--target` (`v5e-8`).
    pub target: String,
    /// libtpu's topology name (`v5e:2x4`).
    pub topology: String,
    /// Chip (`TPU v5e`).
    pub chip: String,
    /// Device kind libtpu reports (`TPU v5 lite`).
    pub device_kind: String,
    /// Devices in the slice.
    pub slice_devices: u32,
    /// Devices the program runs on (its partition count; 1 when unsharded).
    pub program_devices: u32,
    /// The compiler.
    pub compiler: CompilerInfo,
    /// Wall time of loading and initialising libtpu and describing the topology, milliseconds.
    pub setup_ms: f64,
    /// Wall time of `PJRT_Compile`, milliseconds.
    pub compile_ms: f64,
    /// `compiled`, or `out_of_memory` when the compiler refused for lack of HBM.
    pub outcome: Outcome,
    /// Memory per device (every device of an SPMD program holds the same amounts).
    pub per_device: PerDevice,
    /// The compiler's message when it refused.
    pub compiler_message: Option<String>,
    /// Cost analysis per device, where the compile succeeded.
    pub cost: Option<Cost>,
    /// Program parameters, in order.
    pub parameters: Vec<Operand>,
    /// Program outputs, in order.
    pub outputs: Vec<Operand>,
    /// Where `--save` wrote the executable.
    pub saved: Option<Saved>,
}

/// libtpu as loaded.
#[derive(Clone, Debug, Serialize)]
pub struct CompilerInfo {
    /// Library path.
    pub path: String,
    /// libtpu's package version (`0.0.52`), from its wheel's metadata or install folder.
    pub version: Option<String>,
    /// libtpu's platform version string, on one line (build date and change number).
    pub build: String,
    /// PJRT C API version of the plugin (`0.117`).
    pub pjrt_api: String,
}

/// How the compile ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// An executable was produced.
    Compiled,
    /// The compiler refused: the program needs more HBM than a device has.
    OutOfMemory,
}

/// Bytes one device needs, from `PJRT_Executable_GetCompiledMemoryStats` (or, when the
/// compiler refused for lack of memory, the figures its message gives).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PerDevice {
    /// Parameters.
    pub arguments: Option<u64>,
    /// Outputs.
    pub outputs: Option<u64>,
    /// Temporaries.
    pub temporaries: Option<u64>,
    /// Generated code.
    pub generated_code: Option<u64>,
    /// Output bytes that reuse parameter buffers.
    pub aliased: Option<u64>,
    /// The compiler's peak of live buffers in HBM and on-chip VMEM together (no code), 0 or
    /// absent when it gives none. Not an HBM figure: intermediates that fit stay in VMEM.
    pub peak: Option<u64>,
    /// HBM one device needs: arguments + outputs - aliased + temporaries, plus generated
    /// code; on an out-of-memory refusal, the total the compiler's message names.
    pub total: Option<u64>,
    /// HBM the compiler said is available (only known from an out-of-memory message).
    pub compiler_hbm_limit: Option<u64>,
    /// Nominal HBM of one device (chip catalog).
    pub hbm: Option<u64>,
    /// tpuport's planning budget for one device (chip catalog: usable HBM, else 97 %).
    pub hbm_budget: Option<u64>,
    /// Whether the program fits: the compiler accepted it.
    pub fits: bool,
}

/// The compiler's cost analysis (per device).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cost {
    /// Floating-point operations.
    pub flops: Option<f64>,
    /// HBM bytes read and written.
    pub bytes_accessed: Option<f64>,
    /// Transcendental operations.
    pub transcendentals: Option<f64>,
    /// The compiler's estimate of the best achievable time, seconds.
    pub optimal_seconds: Option<f64>,
}

/// One parameter or output as compiled.
#[derive(Clone, Debug, Serialize)]
pub struct Operand {
    /// Position.
    pub index: usize,
    /// Name (the module's argument name, the ONNX input or weight name, or `result`).
    pub name: String,
    /// Logical type (`f32[512,512,3,3]`), when known.
    pub ty: Option<String>,
    /// Shape of one device's shard, when known.
    pub shard: Option<Vec<u64>>,
    /// Layout the compiler chose (`{1,0:T(8,128)}`).
    pub layout: Option<String>,
    /// Bytes one device stores under that layout, when computable.
    pub device_bytes: Option<u64>,
    /// Bytes of the shard without padding.
    pub logical_bytes: Option<u64>,
    /// Sharding the compiler chose (`{devices=[8,1]<=[8]}`), for multi-device programs.
    pub sharding: Option<String>,
}

/// Files written by `--save`.
#[derive(Clone, Debug, Serialize)]
pub struct Saved {
    /// The serialized executable.
    pub executable: String,
    /// Its manifest.
    pub manifest: String,
    /// Size of the executable, bytes.
    pub bytes: u64,
    /// SHA-256 of the executable, hex.
    pub sha256: String,
}

impl CompileReport {
    /// What the audit compares: per-device HBM (arguments + outputs - aliased + temporaries,
    /// or the bytes a refusal names), code, and the parameters' layouts. `chip` is the catalog
    /// id of the target's chip.
    #[must_use]
    pub fn audit_facts(&self, chip: &str) -> CompilerFacts {
        let d = &self.per_device;
        let fits = self.outcome == Outcome::Compiled;
        let hbm_bytes = if fits { d.hbm_buffers().unwrap_or(0) } else { d.total.unwrap_or(0) };
        CompilerFacts {
            compiler: format!(
                "libtpu {}",
                self.compiler.version.as_deref().unwrap_or("(version unknown)")
            ),
            target: self.target.clone(),
            chip: chip.to_owned(),
            devices: self.program_devices,
            compile_ms: self.compile_ms,
            fits,
            hbm_bytes,
            generated_code: d.generated_code,
            hbm_limit: d.compiler_hbm_limit,
            message: self.compiler_message.clone(),
            parameters: self
                .parameters
                .iter()
                .map(|p| CompiledTensor {
                    name: p.name.clone(),
                    shard: p.shard.clone(),
                    layout: p.layout.clone(),
                    device_bytes: p.device_bytes,
                })
                .collect(),
        }
    }
}

impl PerDevice {
    /// HBM buffers of one device: arguments + outputs - aliased + temporaries.
    #[must_use]
    pub fn hbm_buffers(&self) -> Option<u64> {
        let sum = self.arguments?.saturating_add(self.outputs?).saturating_add(self.temporaries?);
        Some(sum.saturating_sub(self.aliased.unwrap_or(0)))
    }
}
