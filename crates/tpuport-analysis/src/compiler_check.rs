//! The audit checked against the TPU compiler: the per-device HBM the compiler needs next to
//! the audit's estimate, and every padding claim re-checked against the layout the compiler
//! chose. The caller compiles the model (libtpu, `tpuport_compile`) and passes what
//! the compiler answered as [`CompilerFacts`]; this module compares, it never compiles.

use serde::Serialize;
use tpuport_hw::{Chip, XlaLayout};

use crate::layout::{self, ChipLayout};

/// Whether and how the audit was checked against the TPU compiler.
#[derive(Clone, Debug, Default)]
pub enum CompilerInput {
    /// No check asked for (no `--slice`, or `--compiler none`).
    #[default]
    NotAsked,
    /// A check was wanted but could not be made (no libtpu, the compiler rejected the
    /// program): why, in one line. The audit is the estimate only.
    Unavailable(String),
    /// The compiler's answer.
    Answered(CompilerFacts),
}

/// What the TPU compiler answered for the audited model on the audited slice.
#[derive(Clone, Debug, Default)]
pub struct CompilerFacts {
    /// The compiler (`libtpu 0.0.52`).
    pub compiler: String,
    /// The slice compiled for (`v5e-8`).
    pub target: String,
    /// Catalog id of the slice's chip (`v5e`).
    pub chip: String,
    /// Devices the program runs on.
    pub devices: u32,
    /// Compile wall time, milliseconds.
    pub compile_ms: f64,
    /// The compiler accepted the program; false when it refused for lack of HBM.
    pub fits: bool,
    /// HBM buffers one device needs: arguments + outputs - aliased + temporaries; on a refusal,
    /// the bytes the compiler's message says are needed.
    pub hbm_bytes: u64,
    /// Generated code per device (not on a refusal).
    pub generated_code: Option<u64>,
    /// HBM the compiler allows one device, when its refusal says.
    pub hbm_limit: Option<u64>,
    /// The compiler's message on a refusal.
    pub message: Option<String>,
    /// Program parameters as compiled.
    pub parameters: Vec<CompiledTensor>,
}

/// One program parameter as the compiler laid it out.
#[derive(Clone, Debug, Default)]
pub struct CompiledTensor {
    /// The parameter's name (a module argument `arg0`, an ONNX input or weight name).
    pub name: String,
    /// The shard one device holds.
    pub shard: Option<Vec<u64>>,
    /// The compiler's layout (`{1,0:T(8,128)}`).
    pub layout: Option<String>,
    /// Bytes one device stores under it.
    pub device_bytes: Option<u64>,
}

/// A padding claim the compiler's layout contradicted, restated with the compiler's figure.
#[derive(Clone, Debug, Serialize)]
pub struct RestatedLayout {
    /// Tensor.
    pub name: String,
    /// Shape of the shard compared.
    pub shape: Vec<u64>,
    /// The audit's estimated layout.
    pub estimate_layout: String,
    /// Bytes under it.
    pub estimate_bytes: u64,
    /// The compiler's layout.
    pub compiler_layout: String,
    /// Bytes under it.
    pub compiler_bytes: u64,
}

/// The audit's estimate next to the TPU compiler's answer (JSON `compiler`).
#[derive(Clone, Debug, Serialize)]
pub struct CompilerCheck {
    /// The compiler (`libtpu 0.0.52`).
    pub compiler: String,
    /// The slice compiled for.
    pub target: String,
    /// Its chip.
    pub chip: String,
    /// Devices the program ran on.
    pub devices: u32,
    /// Compile wall time, milliseconds.
    pub compile_ms: f64,
    /// `compiled`, or `out_of_memory` when the compiler refused for lack of HBM.
    pub outcome: &'static str,
    /// The audit's estimate of the HBM one device needs for the forward pass (weights, inputs,
    /// outputs, activations beyond VMEM; per device for a partitioned module).
    pub estimate_bytes: u64,
    /// The compiler's figure for the same: arguments + outputs - aliased + temporaries, or on
    /// a refusal the bytes its message names.
    pub compiler_bytes: u64,
    /// Generated code per device, which the estimate does not include.
    pub generated_code: Option<u64>,
    /// `(estimate - compiler) / compiler`, in percent.
    pub difference_pct: f64,
    /// The HBM the verdicts are against: the compiler's own limit when it named one, else the
    /// chip's planning budget.
    pub hbm_limit: u64,
    /// The estimate (plus the compiler's code size when known) fits under `hbm_limit`.
    pub estimate_fits: bool,
    /// The compiler accepted the program.
    pub compiler_fits: bool,
    /// Weights whose estimated layout was compared with the compiler's.
    pub layouts_checked: u64,
    /// Of those, the ones whose bytes the compiler confirmed.
    pub layouts_confirmed: u64,
    /// The others, restated with the compiler's layout and bytes in the layout section.
    pub restated: Vec<RestatedLayout>,
    /// The compiler's message on a refusal.
    pub message: Option<String>,
}

fn bare(name: &str) -> &str {
    name.trim_start_matches('%')
}

/// Re-checks the chip's padding claims against the compiler's layouts: a weight whose estimated
/// bytes the compiler's layout confirms is kept; one it contradicts is restated with the
/// compiler's layout and bytes (and its fix recomputed from that layout). Returns
/// `(checked, confirmed, restated)`.
pub(crate) fn recheck_layouts(
    cl: &mut ChipLayout,
    facts: &CompilerFacts,
    chip: &Chip,
) -> (u64, u64, Vec<RestatedLayout>) {
    let (mut checked, mut confirmed, mut restated) = (0u64, 0u64, Vec::new());
    for t in &mut cl.tensors {
        let Some(p) = facts.parameters.iter().find(|p| bare(&p.name) == bare(&t.name)) else {
            continue;
        };
        let (Some(lay), Some(bytes), Some(shard)) = (&p.layout, p.device_bytes, &p.shard) else {
            continue;
        };
        let whole = *shard == t.shape;
        // A shard is compared with the estimate's layout of the same shard.
        let estimate = if whole {
            Some((t.layout.clone(), t.padded_bytes))
        } else {
            tpuport_hw::device_layout(shard, t.dtype, chip).ok().map(|l| (l.notation(), l.bytes))
        };
        let Some((est_layout, est_bytes)) = estimate else { continue };
        checked += 1;
        if est_bytes == bytes {
            confirmed += 1;
            continue;
        }
        restated.push(RestatedLayout {
            name: t.name.clone(),
            shape: shard.clone(),
            estimate_layout: est_layout,
            estimate_bytes: est_bytes,
            compiler_layout: lay.clone(),
            compiler_bytes: bytes,
        });
        if whole && let Ok(x) = XlaLayout::parse(lay) {
            t.layout.clone_from(lay);
            t.layout_source = "compiler";
            t.padded_bytes = bytes;
            if let Some(d) = x.padded_dims(shard) {
                t.padded_shape = d;
            }
            let tile: Vec<u64> = x.tiles.first().cloned().unwrap_or_default();
            t.fix = layout::tensor_fix(&t.shape, &x.minor_to_major, &tile);
        }
    }
    if !restated.is_empty() {
        cl.weights_padded = cl.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.padded_bytes));
        cl.worst_tensors = layout::worst_tensors(cl.tensors.clone());
    }
    (checked, confirmed, restated)
}

/// The comparison of `estimate_bytes` (the audit's per-device HBM estimate) with the compiler,
/// given the layout recheck's counts and the chip's planning budget.
pub(crate) fn check(
    facts: &CompilerFacts,
    estimate_bytes: u64,
    budget: u64,
    layouts: (u64, u64, Vec<RestatedLayout>),
) -> CompilerCheck {
    let compiler_bytes = facts.hbm_bytes;
    #[allow(clippy::cast_precision_loss, reason = "a percentage")]
    let difference_pct = if compiler_bytes == 0 {
        0.0
    } else {
        (estimate_bytes as f64 - compiler_bytes as f64) / compiler_bytes as f64 * 100.0
    };
    let hbm_limit = facts.hbm_limit.unwrap_or(budget);
    let need = estimate_bytes.saturating_add(facts.generated_code.unwrap_or(0));
    CompilerCheck {
        compiler: facts.compiler.clone(),
        target: facts.target.clone(),
        chip: facts.chip.clone(),
        devices: facts.devices,
        compile_ms: facts.compile_ms,
        outcome: if facts.fits { "compiled" } else { "out_of_memory" },
        estimate_bytes,
        compiler_bytes,
        generated_code: facts.generated_code,
        difference_pct,
        hbm_limit,
        estimate_fits: need <= hbm_limit,
        compiler_fits: facts.fits,
        layouts_checked: layouts.0,
        layouts_confirmed: layouts.1,
        restated: layouts.2,
        message: facts.message.clone(),
    }
}
