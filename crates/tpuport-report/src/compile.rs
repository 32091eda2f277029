//! `tpuport compile`'s report (JSON schema `tpuport.compile/1`) and its text rendering.
//!
//! The binary fills a [`CompileReport`] from libtpu's answers; this module only shapes them
//! for reading: summary first (target, outcome, per-chip memory and fit), then cost, then the
//! parameters and outputs with the layout and sharding the compiler chose.

use serde::Serialize;

use crate::human::{bytes, si, thousands};
use crate::{Align, Table};

/// JSON schema tag of [`CompileReport`].
pub const SCHEMA: &str = "tpuport.compile/1";

/// Everything `tpuport compile` learnt from the TPU compiler.
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
    /// The compiler's peak of live buffers (parameters, outputs, temporaries; no code), 0 or
    /// absent when it gives none.
    pub peak: Option<u64>,
    /// What a device needs: the larger of `peak` and arguments + outputs - aliased +
    /// temporaries, plus generated code; on an out-of-memory refusal, the total the compiler's
    /// message names.
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

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "display only")]
fn count(x: f64) -> String {
    si(x.max(0.0).round() as u64)
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "-".to_owned(), bytes)
}

/// The text report.
#[must_use]
pub fn render_text(r: &CompileReport) -> String {
    let mut s = String::new();
    let devices = if r.program_devices == 1 {
        "1 device".to_owned()
    } else {
        format!("{} devices", r.program_devices)
    };
    s.push_str(&format!(
        "{} for {} ({}, topology {}, {} x {}): {} on {devices} in {:.0} ms\n",
        r.model,
        r.target,
        r.chip,
        r.topology,
        r.slice_devices,
        r.device_kind,
        match r.outcome {
            Outcome::Compiled => "compiled",
            Outcome::OutOfMemory => "DOES NOT FIT",
        },
        r.compile_ms
    ));
    s.push_str(&format!(
        "  compiler: libtpu {} (PJRT API {}; {})\n",
        r.compiler.version.as_deref().unwrap_or("(version unknown)"),
        r.compiler.pjrt_api,
        r.compiler.build
    ));
    let d = &r.per_device;
    s.push_str("\nmemory per device\n");
    let mut t = Table::new(&["", "bytes", ""], &[Align::Left, Align::Right, Align::Right]);
    let mut row = |name: &str, v: Option<u64>| {
        if let Some(v) = v {
            t.row([name.to_owned(), thousands(v), bytes(v)]);
        }
    };
    row("arguments", d.arguments);
    row("outputs", d.outputs);
    row("aliased", d.aliased.filter(|&a| a > 0));
    row("temporaries", d.temporaries);
    row("generated code", d.generated_code);
    row("peak live buffers", d.peak.filter(|&p| p > 0));
    row("total (peak + code)", d.total);
    row("HBM available (compiler)", d.compiler_hbm_limit);
    row("HBM per device", d.hbm);
    s.push_str(&t.render());
    let verdict = match (d.fits, d.total, d.hbm) {
        (true, Some(total), Some(hbm)) => {
            #[allow(clippy::cast_precision_loss, reason = "display only")]
            let pct = total as f64 / hbm as f64 * 100.0;
            let mut v = format!("  fits: yes, {pct:.1} % of HBM");
            if d.hbm_budget.is_some_and(|b| total > b) {
                v.push_str(&format!(
                    " (above tpuport's planning budget of {})",
                    opt_bytes(d.hbm_budget)
                ));
            }
            v
        }
        (true, ..) => "  fits: yes".to_owned(),
        (false, ..) => "  fits: no".to_owned(),
    };
    s.push_str(&verdict);
    s.push('\n');
    if let Some(m) = &r.compiler_message {
        s.push_str(&format!("  compiler message: {m}\n"));
    }
    if let Some(c) = &r.cost {
        s.push_str("\ncost per device (compiler)\n");
        let mut t = Table::new(&[], &[]);
        if let Some(f) = c.flops {
            t.row(["flops".to_owned(), count(f)]);
        }
        if let Some(b) = c.bytes_accessed {
            t.row(["bytes accessed".to_owned(), count(b)]);
        }
        if let Some(x) = c.transcendentals {
            t.row(["transcendentals".to_owned(), count(x)]);
        }
        if let Some(o) = c.optimal_seconds {
            t.row(["optimal time".to_owned(), format!("{:.3} ms", o * 1e3)]);
        }
        s.push_str(&t.render());
    }
    for (title, ops) in [("parameters", &r.parameters), ("outputs", &r.outputs)] {
        if ops.is_empty() {
            continue;
        }
        s.push_str(&format!("\n{title} ({})\n", ops.len()));
        let sharded = ops.iter().any(|o| o.sharding.is_some());
        let mut head = vec!["#", "name", "type", "layout", "device bytes", "padding"];
        let mut align =
            vec![Align::Right, Align::Left, Align::Left, Align::Left, Align::Right, Align::Right];
        if sharded {
            head.insert(3, "sharding");
            align.insert(3, Align::Left);
        }
        let mut t = Table::new(&head, &align);
        for o in ops {
            let padding = match (o.device_bytes, o.logical_bytes) {
                (Some(dev), Some(log)) if log > 0 => {
                    #[allow(clippy::cast_precision_loss, reason = "display only")]
                    let r = dev as f64 / log as f64;
                    format!("x{r:.2}")
                }
                _ => String::new(),
            };
            let mut cells = vec![
                o.index.to_string(),
                o.name.clone(),
                o.ty.clone().unwrap_or_default(),
                o.layout.clone().unwrap_or_default(),
                o.device_bytes.map(thousands).unwrap_or_default(),
                padding,
            ];
            if sharded {
                cells.insert(3, o.sharding.clone().unwrap_or_default());
            }
            t.row(cells);
        }
        s.push_str(&t.render());
    }
    if let Some(sv) = &r.saved {
        s.push_str(&format!(
            "\nsaved {} ({}) and {}\n",
            sv.executable,
            bytes(sv.bytes),
            sv.manifest
        ));
    }
    s
}
