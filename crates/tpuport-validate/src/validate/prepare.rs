//! The model as two StableHLO modules, the candidate (as given, or under emulation) and the
//! f32 reference, with the signature the caller feeds and, for `--bisect`, the intermediates
//! both return after the outputs.

use tpuport_exec::error::{Context as _, Result, invalid, io};
use tpuport_formats::lowered::{self, ArgBinding, ArgSource};
use tpuport_formats::stablehlo::{self, result_attr};
use tpuport_formats::tensors::Slot;
use tpuport_lower::rewrite::{self, EmulationStats, MatmulPrecision};
use tpuport_model::{DType, HostTensor, Model, WeightStore};
use tpuport_numerics::{Precision, Probe};

use super::{Emulate, Options};

/// What [`prepare`] builds.
pub(super) struct Prepared {
    /// The candidate module's text.
    pub(super) candidate: String,
    /// The reference module's text (bf16/f16 promoted to f32).
    pub(super) reference: String,
    /// What the caller provides.
    pub(super) args: Vec<Slot>,
    /// A lowered ONNX model's argument binding and weights (`None`: the caller provides every
    /// argument).
    binding: Option<(Vec<ArgBinding>, WeightStore)>,
    /// The model outputs (the first results).
    pub(super) outputs: Vec<Slot>,
    /// The values exposed for `--bisect` (the results after the outputs).
    pub(super) probes: Vec<Probe>,
    pub(super) emulation: Option<EmulationStats>,
    pub(super) precision: Precision,
    pub(super) onnx: bool,
    /// Partition count of the module as given (run unsharded on one device when > 1).
    pub(super) partitions: u32,
    /// Inputs given a value at lowering time (`--input-value`), fed to every sample.
    pub(super) fixed: Vec<(String, HostTensor)>,
    /// Inputs bound from the input files for a branch, one line each, for the user.
    pub(super) notes: Vec<String>,
}

impl Prepared {
    /// A sample's module arguments, labelled.
    pub(super) fn arguments(&self, sample: Vec<HostTensor>) -> Result<Vec<(String, HostTensor)>> {
        let Some((args, weights)) = &self.binding else {
            return Ok(self.args.iter().map(|s| format!("`{}`", s.name)).zip(sample).collect());
        };
        let tensors = lowered::arguments(args, sample, weights)
            .map_err(|p| tpuport_formats::FormatError::bind("lowered module", p))?;
        Ok(args
            .iter()
            .zip(tensors)
            .map(|(a, t)| match &a.source {
                ArgSource::Input(n) => (format!("`{n}`"), t),
                ArgSource::Weight(n) => (format!("weight `{n}`"), t),
            })
            .collect())
    }
}

/// The model to validate as a StableHLO model, plus what the ONNX lowering says about it.
struct Source {
    model: Model,
    onnx: Option<OnnxSource>,
}

/// What the ONNX lowering says about its module.
struct OnnxSource {
    args: Vec<ArgBinding>,
    weights: WeightStore,
    /// Graph output names (the module's first results).
    outputs: Vec<String>,
    /// The values exposed for --bisect (the results after the outputs), in graph order.
    probes: Vec<Probe>,
    /// Inputs given a value at lowering time.
    fixed: Vec<(String, HostTensor)>,
    /// Inputs bound from the input files for a branch.
    notes: Vec<String>,
}

/// Reads the model and builds the candidate and reference modules.
pub(super) fn prepare(a: &Options) -> Result<Prepared> {
    let is_onnx = a.model.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"));
    if !is_onnx && !a.statics.is_empty() {
        return Err(invalid(format!(
            "{}: --batch, --dim, --input-shape and --input-value apply to ONNX models; a \
             StableHLO module's shapes are fixed",
            a.model.display()
        )));
    }
    let Source { mut model, onnx } = if is_onnx { lower_onnx(a)? } else { read_stablehlo(a)? };
    if model.graph.nodes.is_empty() && model.graph.inputs.is_empty() {
        return Err(invalid(format!("{}: no `@main` function to run", a.model.display())));
    }
    let partitions = tpuport_exec::module::partitions(&model);
    if partitions > 1 {
        // the same values on one device: drop the (automatic) sharding annotations
        rewrite::unshard(&mut model).context(|| {
            format!("{}: running the sharded module on one device", a.model.display())
        })?;
    }
    let g = &model.graph;
    let slot = |id: tpuport_model::ValueId, name: String| -> Result<Slot> {
        let v = g.value(id);
        let dtype = v.ty.dtype.ok_or_else(|| {
            invalid(format!("{}: {} has no element type", a.model.display(), v.name))
        })?;
        let shape =
            v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed).ok_or_else(|| {
                invalid(format!(
                    "{}: {name} has a dynamic shape ({}); validate needs static shapes",
                    a.model.display(),
                    v.ty
                ))
            })?;
        Ok(Slot::fixed(name, dtype, &shape))
    };
    let mut args = Vec::new();
    for (i, &id) in g.inputs.iter().enumerate() {
        let name = match onnx.as_ref().map(|o| &o.args[i].source) {
            Some(ArgSource::Weight(_)) => continue,
            Some(ArgSource::Input(n)) => n.clone(),
            None => g.value(id).name.trim_start_matches('%').to_owned(),
        };
        args.push(slot(id, name)?);
    }
    let mut outputs = Vec::new();
    // a lowered ONNX model's results: the graph outputs, then the values exposed for --bisect
    let n_out = onnx.as_ref().map_or(g.outputs.len(), |o| o.outputs.len());
    for (i, &id) in g.outputs.iter().enumerate().take(n_out) {
        let label = match &onnx {
            Some(o) => Some(o.outputs[i].as_str()),
            None => result_attr(g, i, "jax.result_info").and_then(tpuport_model::Attr::as_str),
        };
        let name = label
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("out{i}"), |s| format!("out{i} ({s})"));
        outputs.push(slot(id, name)?);
    }
    let precision = match a.emulate {
        Emulate::None => lowest_precision(&model),
        Emulate::TpuDefault => Precision::TpuDefault,
        Emulate::TpuHigh => Precision::TpuHigh,
        Emulate::TpuHighest => Precision::TpuHighest,
        Emulate::Bf16 => Precision::Bf16,
    };
    let mut cand = model.clone();
    let mut refm = model;
    let mut probes = Vec::new();
    let mut binding = None;
    let mut fixed = Vec::new();
    let mut notes = Vec::new();
    if let Some(o) = onnx {
        probes = o.probes;
        fixed = o.fixed;
        notes = o.notes;
        binding = Some((o.args, o.weights));
    } else if a.bisect {
        let only = (!a.probes.is_empty()).then_some(a.probes.as_slice());
        let exposed = rewrite::expose(&mut cand, only)
            .context(|| format!("--probe: {}", a.model.display()))?;
        let _ = rewrite::expose(&mut refm, only)?;
        probes = exposed
            .into_iter()
            .map(|e| Probe {
                name: e.name,
                op: e.op,
                location: e.location.as_deref().map(short_loc),
            })
            .collect();
    }
    let level = match a.emulate {
        Emulate::TpuDefault => Some(MatmulPrecision::Default),
        Emulate::TpuHigh => Some(MatmulPrecision::High),
        Emulate::TpuHighest => Some(MatmulPrecision::Highest),
        Emulate::None | Emulate::Bf16 => None,
    };
    let emulation = level.map(|l| rewrite::emulate_matmul(&mut cand, l)).transpose()?;
    if a.emulate == Emulate::Bf16 {
        rewrite::retype(&mut cand, &[DType::F32], DType::BF16)?;
    }
    rewrite::retype(&mut refm, &[DType::BF16, DType::F16], DType::F32)?;
    Ok(Prepared {
        candidate: stablehlo::print_model(&cand)?,
        reference: stablehlo::print_model(&refm)?,
        args,
        binding,
        outputs,
        probes,
        emulation,
        precision,
        onnx: is_onnx,
        partitions,
        fixed,
        notes,
    })
}

/// StableHLO text (the rewrites need text, not bytecode).
fn read_stablehlo(a: &Options) -> Result<Source> {
    let bytes =
        std::fs::read(&a.model).map_err(|e| io(format!("reading {}", a.model.display()), e))?;
    if bytes.starts_with(b"ML\xefR") {
        return Err(invalid(format!(
            "{}: MLIR bytecode; validate rewrites the module and needs MLIR text \
             (`jax.jit(f).lower(...).as_text()` or `jax.export(...).mlir_module()`)",
            a.model.display()
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| invalid(format!("{}: not UTF-8 text", a.model.display())))?;
    let model = stablehlo::parse_text(&a.model, &text, &tpuport_formats::Limits::default())?;
    Ok(Source { model, onnx: None })
}

/// ONNX: bind input shapes from the input files (and, when the graph branches on an input the
/// files hold, its value), lower (returning every float node output as an extra result when
/// bisecting, or the --probe values), and read the lowered module back for the rewrites.
fn lower_onnx(a: &Options) -> Result<Source> {
    use tpuport_lower::onnx::LowerOptions;
    let mut opts = a.statics.import_options();
    let mut statics = a.statics.clone();
    if let super::Inputs::Files(path) = &a.inputs {
        let files = tpuport_formats::tensors::read_set(path, Some("output_"), &opts.limits)?;
        // `input_N` (ONNX test-data layout) names the N-th graph input: read the graph's input
        // names first, only when such files are there
        let names: Vec<String> = if files.iter().any(|(n, _)| n.starts_with("input_")) {
            tpuport_formats::open(&a.model, &opts)
                .map(|m| m.graph.inputs.iter().map(|v| m.graph.value(*v).name.clone()).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for (name, t) in files {
            let name = name
                .strip_prefix("input_")
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| names.get(n).cloned())
                .filter(|_| !names.contains(&name))
                .unwrap_or(name);
            opts.input_shapes.insert(name.clone(), tpuport_model::Shape::fixed(&t.shape));
            statics.given.push((name, t));
        }
    }
    let onnx = tpuport_formats::open(&a.model, &opts)?;
    let g = &onnx.graph;
    let producer =
        |name: &str| g.nodes.iter().find(|n| n.outputs.iter().any(|o| g.value(*o).name == name));
    let expose: Vec<String> = if !a.bisect {
        Vec::new()
    } else if a.probes.is_empty() {
        g.nodes
            .iter()
            .filter(|n| n.op != "Constant")
            .flat_map(|n| n.outputs.iter().map(|o| g.value(*o)))
            .filter(|v| v.ty.dtype.is_some_and(DType::is_float))
            .map(|v| v.name.clone())
            .collect()
    } else {
        a.probes.clone()
    };
    let lopts = LowerOptions { expose: expose.clone(), ..LowerOptions::default() };
    let tpuport_exec::StaticLowering { lowered, fixed, notes, .. } =
        statics.lower(&a.model, &onnx, &lopts)?;
    let model = stablehlo::parse_text(&a.model, &lowered.mlir, &tpuport_formats::Limits::default())
        .context(|| "reading back the lowered module".to_owned())?;
    let n_out = lowered.results.len().saturating_sub(expose.len());
    let outputs = lowered.results[..n_out].iter().map(|r| r.name.clone()).collect();
    let probes = lowered.results[n_out..]
        .iter()
        .map(|r| {
            let node = producer(&r.name);
            Probe {
                name: r.name.clone(),
                op: node.map_or_else(String::new, tpuport_model::Node::qualified_op),
                location: node.map(|n| n.name.clone()).filter(|n| !n.is_empty()),
            }
        })
        .collect();
    let onnx_source = OnnxSource {
        args: lowered.args,
        weights: onnx.weights.clone(),
        outputs,
        probes,
        fixed,
        notes,
    };
    Ok(Source { model, onnx: Some(onnx_source) })
}

/// bf16 or f16 when any op of the module computes in it, else f32.
fn lowest_precision(m: &Model) -> Precision {
    let mut p = Precision::F32;
    for g in std::iter::once(&m.graph).chain(&m.functions) {
        for v in &g.values {
            match v.ty.dtype {
                Some(DType::BF16) => return Precision::Bf16,
                Some(DType::F16) => p = Precision::F16,
                _ => {}
            }
        }
    }
    p
}

/// `"jit(f)/dot_general"("/src/model.py":12:4)` → `jit(f)/dot_general @ model.py:12`.
#[must_use]
pub fn short_loc(loc: &str) -> String {
    let name = stablehlo::short_location(loc);
    // the first `"file":line` pair after the name
    let file_line = loc.match_indices("\":").find_map(|(i, _)| {
        let start = loc[..i].rfind('"')?;
        let file = &loc[start + 1..i];
        let line: String = loc[i + 2..].chars().take_while(char::is_ascii_digit).collect();
        (!line.is_empty()).then(|| {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{base}:{line}")
        })
    });
    match file_line {
        Some(fl) if !name.contains(&fl) => format!("{name} @ {fl}"),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_locations() {
        assert_eq!(
            short_loc("\"jit(f)/dot_general\"(\"/src/m.py\":12:4)"),
            "jit(f)/dot_general @ m.py:12"
        );
        assert_eq!(short_loc("\"x\""), "x");
    }
}
