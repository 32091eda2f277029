//! One execution: upload the arguments (split per the module's shardings over several
//! devices), execute, download the results (assembled per the result shardings) and write
//! each as `out<N>.npy`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use tpuport_model::HostTensor;
use tpuport_pjrt::{CacheStatus, Runtime};

use crate::error::{Result, io};
use crate::{Observer, Target};

/// JSON schema id of the report.
pub const SCHEMA: &str = "tpuport.run/1";

/// One output written.
#[derive(Debug, Serialize)]
pub struct OutputFile {
    /// The `.npy` file.
    pub path: PathBuf,
    /// Element type.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
}

/// What `run` did.
#[derive(Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The module file.
    pub model: PathBuf,
    /// PJRT platform name.
    pub platform: String,
    /// Devices the executable ran on.
    pub devices: usize,
    /// How the executable was obtained.
    pub cache: CacheStatus,
    /// Compile (or cache load) time, milliseconds.
    pub compile_ms: f64,
    /// Execution time, milliseconds.
    pub execute_ms: f64,
    /// The outputs written.
    pub outputs: Vec<OutputFile>,
}

/// Compiles `target` (through the cache), runs it once on `args` (in argument order, with a
/// label each) and writes the outputs into `out` (created).
///
/// # Errors
/// Compile, transfer or execution errors naming the module or argument; writing the outputs.
pub fn run(
    target: &Target,
    args: &[(String, HostTensor)],
    rt: &Runtime,
    out: &Path,
    obs: &dyn Observer,
) -> Result<Report> {
    let module = &target.module;
    let compiled = crate::module::compile(rt, module)?;
    if let CacheStatus::WriteFailed(why) = &compiled.status {
        obs.warn(&format!("executable cache not written: {why}"));
    }
    let exe = &compiled.executable;
    let bufs = tpuport_pjrt::upload(&rt.client, exe, args, &module.arg_layouts())?;
    let t = Instant::now();
    let outs = exe.execute_lists(&bufs)?;
    let execute_ms = t.elapsed().as_secs_f64() * 1e3;
    let host = tpuport_pjrt::download(outs, &module.result_layouts())?;
    std::fs::create_dir_all(out).map_err(|e| io(format!("creating {}", out.display()), e))?;
    let mut outputs = Vec::with_capacity(host.len());
    for (i, t) in host.iter().enumerate() {
        let path = out.join(format!("out{i}.npy"));
        tpuport_formats::npy::write_npy(&path, t)?;
        outputs.push(OutputFile { path, dtype: t.dtype.to_string(), shape: t.shape.clone() });
    }
    Ok(Report {
        schema: SCHEMA,
        model: module.path.clone(),
        platform: rt.client.platform_name().to_owned(),
        devices: exe.num_devices(),
        cache: compiled.status.clone(),
        compile_ms: compiled.elapsed.as_secs_f64() * 1e3,
        execute_ms,
        outputs,
    })
}
