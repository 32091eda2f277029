//! [`compile`]: the model prepared as a program, compiled by libtpu against the slice's
//! topology (or by the PJRT CPU plugin for [`crate::CPU_TARGET`]), the report filled from the
//! executable or from the compiler's out-of-memory refusal, and `--save` written.

use std::time::Instant;

use tpuport_exec::Observer;
use tpuport_exec::error::{Context as _, Result, invalid};
use tpuport_hw::Catalog;
use tpuport_pjrt::{PluginKind, Topology};

use crate::executable::{fill_from_executable, operands};
use crate::find_libtpu;
use crate::libtpu::{libtpu_version, topology_options};
use crate::oom::{compiler_message, out_of_memory, to_u64};
use crate::prepare::prepare;
use crate::save::{SavedFor, hash_file, save};
use crate::{CPU_TARGET, CompileReport, CompilerInfo, Outcome, PerDevice, Request, SCHEMA};

/// Compiles `req.model` for `req.target` with libtpu and reports what the compiler answered.
///
/// # Errors
/// An unknown slice, a model that cannot be read or lowered, more partitions than the slice
/// has devices, no libtpu, a program the TPU compiler rejects (one line, the compiler's own
/// message), or writing `req.save`. A program that does not fit is not an error: the report's
/// outcome says so.
#[allow(clippy::too_many_lines, reason = "one pipeline, in order")]
pub fn compile(req: &Request, catalog: &Catalog, obs: &dyn Observer) -> Result<CompileReport> {
    if req.import.batch == Some(0) {
        return Err(invalid("--batch must be at least 1"));
    }
    if req.partitions == Some(0) {
        return Err(invalid("--partitions must be at least 1"));
    }
    if req.target == CPU_TARGET {
        return compile_cpu(req, obs);
    }
    let target = catalog.compile_target(&req.target).map_err(|e| invalid(e.to_string()))?;
    let model_sha = hash_file(&req.model)?;
    let mut prep = prepare(req, obs)?;
    if let Some(n) = req.partitions {
        prep.partitions = n;
    } else if prep.program.is_bytecode() && prep.params.is_empty() {
        obs.warn(&format!(
            "{}: the partition count of a bytecode module is not read; compiling it for one \
             device (pass --partitions N for a sharded module)",
            req.model.display()
        ));
    }
    if prep.partitions > target.devices {
        return Err(invalid(format!(
            "{} is partitioned over {} devices but {} has {}",
            req.model.display(),
            prep.partitions,
            req.target,
            target.devices
        )));
    }
    let plugin_path = find_libtpu(req.plugin.as_deref())?;
    let t_setup = Instant::now();
    obs.info(&format!("libtpu: {}", plugin_path.display()));
    let plugin = tpuport_pjrt::load(&plugin_path)?;
    let options = topology_options(&target);
    let topo = Topology::create(plugin, &target.topology_name, &options)
        .context(|| format!("describing {} ({})", req.target, target.topology_name))?;
    let devices = topo.devices()?;
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let device_kind = devices.first().map(|d| d.kind.clone()).unwrap_or_default();
    let (major, minor) = plugin.api_version();
    let compiler = CompilerInfo {
        path: plugin_path.display().to_string(),
        version: libtpu_version(&plugin_path),
        build: one_line(&topo.platform_version().unwrap_or_default()),
        pjrt_api: format!("{major}.{minor}"),
    };
    let copts = if prep.partitions > 1 {
        tpuport_pjrt::CompileOptions::spmd(prep.partitions, prep.shardy).with_identity_assignment()
    } else {
        tpuport_pjrt::CompileOptions::default()
    };
    let t = Instant::now();
    let compiled = topo.compile(&prep.program, &copts);
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let hbm = target.hbm_per_device.map(to_u64);
    let hbm_budget = target.hbm_budget_per_device.map(to_u64);
    let mut report = CompileReport {
        schema: SCHEMA,
        model: req.model.display().to_string(),
        model_sha256: model_sha,
        source: prep.source.clone(),
        target: req.target.clone(),
        topology: target.topology_name.clone(),
        chip: target.chip_name.clone(),
        device_kind,
        slice_devices: target.devices,
        program_devices: prep.partitions.max(1),
        compiler,
        setup_ms,
        compile_ms,
        outcome: Outcome::Compiled,
        per_device: PerDevice { hbm, hbm_budget, ..PerDevice::default() },
        compiler_message: None,
        cost: None,
        parameters: Vec::new(),
        outputs: Vec::new(),
        saved: None,
    };
    let exe = match compiled {
        Ok(exe) => exe,
        Err(e) => {
            let message = match &e {
                tpuport_pjrt::PjrtError::Call { code, message, .. } => {
                    compiler_message(&format!("{code}: {message}"))
                }
                other => compiler_message(&other.to_string()),
            };
            if let Some((need, limit)) = out_of_memory(&message) {
                if req.save.is_some() {
                    obs.warn("nothing saved: the compiler produced no executable");
                }
                report.outcome = Outcome::OutOfMemory;
                report.per_device.total = Some(need);
                report.per_device.compiler_hbm_limit = Some(limit);
                report.compiler_message = Some(message);
                report.parameters = operands(&prep.params, None, None, None);
                report.outputs = operands(&prep.results, None, None, None);
                return Ok(report);
            }
            obs.info(&format!("compiler output: {e}"));
            return Err(invalid(format!(
                "libtpu could not compile {} for {} ({}): {message}",
                req.model.display(),
                req.target,
                target.topology_name
            )));
        }
    };
    fill_from_executable(&mut report, &exe, &prep, obs)?;
    if let Some(file) = &req.save {
        let on = SavedFor {
            platform: "tpu",
            topology: &target.topology_name,
            topology_options: &options,
            compile_options: &copts,
            program: &prep.program,
        };
        report.saved = Some(save(file, &exe, &report, &on)?);
    }
    Ok(report)
}

/// [`compile`] for [`CPU_TARGET`]: the PJRT CPU plugin compiles the program for one device
/// of this host (with the options `tpuport run` and `tpuport serve` use, so the saved
/// executable is the one they would compile).
fn compile_cpu(req: &Request, obs: &dyn Observer) -> Result<CompileReport> {
    let model_sha = hash_file(&req.model)?;
    let prep = prepare(req, obs)?;
    let partitions = req.partitions.unwrap_or(prep.partitions);
    if partitions > 1 {
        return Err(invalid(format!(
            "{} is partitioned over {partitions} devices; the cpu target compiles for one",
            req.model.display()
        )));
    }
    let plugin_path = match &req.plugin {
        Some(p) if !p.is_file() => {
            return Err(invalid(format!("--plugin {}: no such file", p.display())));
        }
        Some(p) => p.clone(),
        None => tpuport_pjrt::discover(None)
            .into_iter()
            .find(|f| f.kind == PluginKind::Cpu && f.path.is_file())
            .map(|f| f.path)
            .ok_or_else(|| {
                invalid(
                    "the PJRT CPU plugin was not found: `pip install xla-cpu-pjrt` (tpuport[cpu]) \
                     into the project's virtual environment, or pass --plugin PATH",
                )
            })?,
    };
    let t_setup = Instant::now();
    obs.info(&format!("CPU plugin: {}", plugin_path.display()));
    let plugin = tpuport_pjrt::load(&plugin_path)?;
    let client = tpuport_pjrt::Client::new(plugin, &tpuport_pjrt::ClientOptions::cpu_devices(1))
        .context(|| format!("creating a client of {}", plugin_path.display()))?;
    let device = client.devices().into_iter().next().ok_or_else(|| invalid("no CPU device"))?;
    let device_kind = device.description().map(|d| d.kind).unwrap_or_default();
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let (major, minor) = plugin.api_version();
    let copts = tpuport_pjrt::CompileOptions::default();
    let t = Instant::now();
    let exe = client.compile(&prep.program, &copts).map_err(|e| {
        invalid(format!(
            "the CPU plugin could not compile {}: {}",
            req.model.display(),
            compiler_message(&e.to_string())
        ))
    })?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut report = CompileReport {
        schema: SCHEMA,
        model: req.model.display().to_string(),
        model_sha256: model_sha,
        source: prep.source.clone(),
        target: CPU_TARGET.to_owned(),
        topology: CPU_TARGET.to_owned(),
        chip: "host CPU".to_owned(),
        device_kind,
        slice_devices: 1,
        program_devices: 1,
        compiler: CompilerInfo {
            path: plugin_path.display().to_string(),
            version: None,
            build: one_line(client.platform_version()),
            pjrt_api: format!("{major}.{minor}"),
        },
        setup_ms,
        compile_ms,
        outcome: Outcome::Compiled,
        per_device: PerDevice::default(),
        compiler_message: None,
        cost: None,
        parameters: Vec::new(),
        outputs: Vec::new(),
        saved: None,
    };
    fill_from_executable(&mut report, exe.executable(), &prep, obs)?;
    if let Some(file) = &req.save {
        let on = SavedFor {
            platform: CPU_TARGET,
            topology: CPU_TARGET,
            topology_options: &[],
            // What the client really compiled with (the ISA cap on AVX-512 hosts included):
            // `tpuport serve` compares it with its own.
            compile_options: &client.effective_options(&copts),
            program: &prep.program,
        };
        report.saved = Some(save(file, exe.executable(), &report, &on)?);
    }
    Ok(report)
}

/// A plugin's (possibly multi-line) version string on one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
