//! The model read as the program to compile, with what is known of its signature: StableHLO
//! as it is, ONNX through tpuport's lowering, either with a [`crate::Placement`] applied.

use tpuport_exec::error::{Context as _, Result, invalid};
use tpuport_exec::{Module, Observer, Param};
use tpuport_lower::onnx::{ArgSource, LowerOptions, lower};
use tpuport_model::{DType, ModelFormat};
use tpuport_pjrt::Program;

use crate::Request;

/// Element type and dimensions of a parameter or output, when known.
pub(crate) type Typed = Option<(DType, Vec<u64>)>;

/// The program to compile and what is known of its signature.
pub(crate) struct Prepared {
    pub(crate) program: Program,
    pub(crate) source: String,
    pub(crate) partitions: u32,
    /// Partition with Shardy (it also reads GSPMD annotations); false for a placement: libtpu
    /// 0.0.52's Shardy import aborted the process on every module tpuport printed for one
    /// ("Expected HloShardingV3 during Shardy import"), and the GSPMD partitioner compiles them.
    pub(crate) shardy: bool,
    pub(crate) params: Vec<(String, Typed)>,
    pub(crate) results: Vec<(String, Typed)>,
}

/// Reads the model as a program: StableHLO as is, ONNX through the lowering.
pub(crate) fn prepare(req: &Request, obs: &dyn Observer) -> Result<Prepared> {
    let model = tpuport_formats::open(&req.model, &req.import)?;
    match model.format {
        ModelFormat::Onnx => {
            let opts = LowerOptions {
                weights_as_constants: false,
                compute: req.compute,
                expose: Vec::new(),
            };
            let low = lower(&model, &opts)
                .context(|| format!("lowering {} to StableHLO", req.model.display()))?;
            let params = low
                .args
                .iter()
                .map(|b| {
                    let name = match &b.source {
                        ArgSource::Input(n) | ArgSource::Weight(n) => n.clone(),
                    };
                    (name, Some((b.dtype, b.shape.clone())))
                })
                .collect();
            let results = low
                .results
                .iter()
                .map(|r| (r.name.clone(), Some((r.dtype, r.shape.clone()))))
                .collect();
            let (text, partitions) = match &req.placement {
                None => (low.mlir, 1),
                Some(p) => {
                    let args: Vec<(String, Vec<u64>, bool)> = low
                        .args
                        .iter()
                        .map(|b| match &b.source {
                            ArgSource::Input(n) => (n.clone(), b.shape.clone(), true),
                            ArgSource::Weight(n) => (n.clone(), b.shape.clone(), false),
                        })
                        .collect();
                    let n = u32::try_from(p.mesh.devices()).unwrap_or(u32::MAX);
                    (p.apply(&req.model, &low.mlir, &args)?, n)
                }
            };
            Ok(Prepared {
                program: Program::mlir(text.into_bytes()),
                source: "onnx (lowered by tpuport)".into(),
                partitions,
                shardy: req.placement.is_none(),
                params,
                results,
            })
        }
        ModelFormat::StablehloText | ModelFormat::StablehloBytecode => {
            let i = &req.import;
            if i.batch.is_some() || !i.dims.is_empty() || !i.input_shapes.is_empty() {
                obs.warn("--batch, --dim and --input-shape apply to ONNX models; a StableHLO module's shapes are fixed");
            }
            let m = Module::load(&req.model, obs)?;
            let sig = |ps: &Option<Vec<Param>>| -> Vec<(String, Typed)> {
                ps.iter()
                    .flatten()
                    .map(|q| {
                        let dims: Option<Vec<u64>> = q.dims.iter().copied().collect();
                        (q.name.clone(), dims.map(|d| (q.dtype, d)))
                    })
                    .collect()
            };
            let (mut params, mut results) = (sig(&m.args), sig(&m.results));
            for (i, (name, _)) in results.iter_mut().enumerate() {
                if name.bytes().all(|b| b.is_ascii_digit()) {
                    *name = format!("result{i}");
                }
            }
            let (program, partitions) = match &req.placement {
                None => (m.program, m.partitions.max(1)),
                Some(p) => {
                    let text = std::str::from_utf8(m.program.code())
                        .ok()
                        .filter(|_| !m.program.is_bytecode())
                        .ok_or_else(|| {
                            invalid(format!(
                                "{}: shardings are placed on StableHLO text; this is bytecode \
                                 (print it as text, e.g. `jax.jit(f).lower(...).as_text()`)",
                                req.model.display()
                            ))
                        })?;
                    let model = tpuport_formats::stablehlo::parse_text(
                        &req.model,
                        text,
                        &tpuport_formats::Limits::default(),
                    )?;
                    let opts =
                        tpuport_analysis::roles::RoleOptions { data_args: p.data_args.clone() };
                    let roles = tpuport_analysis::roles::assign(&model, &opts)
                        .map_err(|e| invalid(format!("{}: {e}", req.model.display())))?;
                    let args: Vec<(String, Vec<u64>, bool)> = roles
                        .args
                        .iter()
                        .map(|r| {
                            (
                                r.label().to_owned(),
                                r.shape.clone().unwrap_or_default(),
                                r.role == tpuport_analysis::roles::Role::Data,
                            )
                        })
                        .collect();
                    // The report names each parameter as the plan does (`p['wte.weight']`
                    // from the argument's `loc`, not `arg0`).
                    for ((name, _), r) in params.iter_mut().zip(&roles.args) {
                        r.label().trim_start_matches('%').clone_into(name);
                    }
                    let n = u32::try_from(p.mesh.devices()).unwrap_or(u32::MAX);
                    (Program::mlir(p.apply(&req.model, text, &args)?.into_bytes()), n)
                }
            };
            Ok(Prepared {
                program,
                source: "stablehlo".into(),
                partitions,
                shardy: req.placement.is_none(),
                params,
                results,
            })
        }
        other => Err(invalid(format!(
            "{}: is {}; the TPU compiler takes StableHLO (.mlir, .mlirbc) or ONNX",
            req.model.display(),
            other.name()
        ))),
    }
}
