//! The report's memory per device, cost, layouts and shardings, read from the compiled
//! executable.

use tpuport_exec::Observer;
use tpuport_exec::error::{Context as _, Result};
use tpuport_hw::XlaLayout;
use tpuport_pjrt::{Executable, Value};

use crate::prepare::{Prepared, Typed};
use crate::{CPU_TARGET, CompileReport, Cost, Operand};

fn nonneg(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

/// Memory, cost, layouts and shardings from the compiled executable.
pub(crate) fn fill_from_executable(
    r: &mut CompileReport,
    exe: &Executable,
    prep: &Prepared,
    obs: &dyn Observer,
) -> Result<()> {
    let stats = exe.compiled_memory_stats();
    let d = &mut r.per_device;
    d.fits = true;
    match stats {
        Ok(m) => {
            obs.info(&format!("compiled memory statistics: {m:?}"));
            d.arguments = Some(nonneg(m.argument));
            d.outputs = Some(nonneg(m.output));
            d.aliased = Some(nonneg(m.alias));
            d.temporaries = Some(nonneg(m.temp));
            d.generated_code = Some(nonneg(m.generated_code));
            d.peak = Some(nonneg(m.peak));
            // HBM: parameters, outputs and HBM temporaries (less what outputs reuse), plus the
            // code. `peak` also counts on-chip VMEM (libtpu 0.0.52 keeps most intermediates of
            // a small program there: cnn_b8's buffer assignment has 366 KiB in HBM and 3.6 MiB
            // in VMEM, and a peak of 3.9 MiB), so it is not an HBM figure.
            let buffers = (nonneg(m.argument) + nonneg(m.output) + nonneg(m.temp))
                .saturating_sub(nonneg(m.alias));
            d.total = Some(buffers + nonneg(m.generated_code));
        }
        // libtpu always answers; a plugin that does not (the CPU plugin may) leaves them out.
        Err(e) if r.target == CPU_TARGET => obs.info(&format!("no memory statistics: {e}")),
        Err(e) => return Err(e).context(|| "reading the compiled memory statistics".into()),
    }
    match exe.cost_analysis() {
        Ok(values) => {
            let get = |k: &str| match tpuport_pjrt::find_value(&values, k) {
                Some(Value::Float(f)) => Some(f64::from(*f)),
                Some(Value::Int64(i)) => {
                    #[allow(clippy::cast_precision_loss, reason = "display")]
                    let v = *i as f64;
                    Some(v)
                }
                _ => None,
            };
            r.cost = Some(Cost {
                flops: get("flops"),
                bytes_accessed: get("bytes accessed"),
                transcendentals: get("transcendentals"),
                // libtpu answers negative values for some programs: no estimate.
                optimal_seconds: get("optimal_seconds").filter(|s| *s >= 0.0),
            });
        }
        Err(e) => obs.info(&format!("no cost analysis: {e}")),
    }
    let note = |what: &str, e: &tpuport_pjrt::PjrtError| obs.info(&format!("no {what}: {e}"));
    let pl = exe.parameter_layouts().map_err(|e| note("parameter layouts", &e)).ok();
    let ol = exe.output_layouts().map_err(|e| note("output layouts", &e)).ok();
    let multi = r.program_devices > 1;
    let ps =
        multi.then(|| exe.parameter_shardings().map_err(|e| note("shardings", &e)).ok()).flatten();
    let os =
        multi.then(|| exe.output_shardings().map_err(|e| note("shardings", &e)).ok()).flatten();
    r.parameters = operands(&prep.params, pl.as_deref(), ps.as_deref(), None);
    let shard_dims = exe.outputs().ok().map(|o| o.into_iter().map(|o| o.dims).collect::<Vec<_>>());
    r.outputs = operands(&prep.results, ol.as_deref(), os.as_deref(), shard_dims.as_deref());
    if r.outputs.is_empty()
        && let Some(dims) = &shard_dims
    {
        // Bytecode modules are read header-only: name the outputs by position.
        let unnamed: Vec<(String, Typed)> =
            (0..dims.len()).map(|i| (format!("result{i}"), None)).collect();
        r.outputs = operands(&unnamed, ol.as_deref(), os.as_deref(), Some(dims));
    }
    Ok(())
}

/// One row per parameter or output: logical type, the shard a device holds, the compiler's
/// layout and the bytes it costs.
pub(crate) fn operands(
    sig: &[(String, Typed)],
    layouts: Option<&[String]>,
    shardings: Option<&[tpuport_pjrt::Sharding]>,
    shard_dims: Option<&[Vec<u64>]>,
) -> Vec<Operand> {
    sig.iter()
        .enumerate()
        .map(|(i, (name, ty))| {
            let sharding = shardings.and_then(|s| s.get(i));
            let shard: Option<Vec<u64>> =
                shard_dims.and_then(|d| d.get(i).cloned()).or_else(|| {
                    let (_, dims) = ty.as_ref()?;
                    let tiles = sharding.map(|s| s.tiles.clone()).unwrap_or_default();
                    Some(
                        dims.iter()
                            .enumerate()
                            .map(|(k, &d)| d.div_ceil(tiles.get(k).copied().unwrap_or(1).max(1)))
                            .collect(),
                    )
                });
            let layout = layouts.and_then(|l| l.get(i)).cloned();
            let dtype = ty.as_ref().map(|(d, _)| *d);
            let logical_bytes = match (dtype, &shard) {
                (Some(d), Some(s)) => {
                    d.bits().map(|b| (s.iter().product::<u64>() * u64::from(b)).div_ceil(8))
                }
                _ => None,
            };
            let device_bytes = match (dtype, &shard, &layout) {
                (Some(d), Some(s), Some(l)) => {
                    XlaLayout::parse(l).ok().and_then(|x| x.device_bytes(s, d))
                }
                _ => None,
            };
            Operand {
                index: i,
                name: name.clone(),
                ty: ty.as_ref().map(|(d, s)| {
                    let dims: Vec<String> = s.iter().map(u64::to_string).collect();
                    format!("{d}[{}]", dims.join(","))
                }),
                shard,
                layout,
                device_bytes,
                logical_bytes,
                sharding: sharding.map(|s| s.hlo.clone()),
            }
        })
        .collect()
}
