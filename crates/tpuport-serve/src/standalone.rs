//! A model opened from a path rather than a repository, for offline callers (`tpuport batch`):
//! a model-repository entry (a folder with `config.toml`), a `tpuport lower` output folder, a
//! StableHLO module (one bucket, the leading dimension of its first argument), or an ONNX
//! model lowered once per requested bucket. The result is the same [`Model`] the server runs:
//! every bucket compiled, weights uploaded once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tpuport_pjrt::{Client, ExecutableCache};

use crate::config::{Batching, ModelConfig, ModelSource};
use crate::error::ServeError;
use crate::metrics::Registry;
use crate::model::Model;
use crate::repo::{Plan, Repository};

/// How [`open_model`] loads.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Buckets to lower an ONNX model at (default `[8]`); ignored for other kinds, whose
    /// buckets are the ones compiled into them.
    pub buckets: Vec<u64>,
    /// PJRT plugin (default: discovery as in `tpuport run`).
    pub plugin: Option<PathBuf>,
    /// Executable cache; `None` compiles every bucket.
    pub cache: Option<ExecutableCache>,
}

/// The PJRT client for `plugin` (discovered when `None`): one device for the CPU plugin.
///
/// # Errors
/// No plugin found, or it fails to load or to create a client.
pub fn client(plugin: Option<&Path>) -> Result<Client, ServeError> {
    let found = tpuport_pjrt::find(plugin)?;
    let plugin = tpuport_pjrt::load(&found.path)?;
    let opts = match found.kind {
        tpuport_pjrt::PluginKind::Cpu | tpuport_pjrt::PluginKind::Other => {
            tpuport_pjrt::ClientOptions::cpu_devices(1)
        }
        _ => tpuport_pjrt::ClientOptions::default(),
    };
    Ok(Client::new(plugin, &opts)?)
}

/// Opens the model at `path` on `client`: compiles every bucket and uploads the weights.
///
/// # Errors
/// A path that is none of the kinds above, or the load failing (named).
pub fn open_model(
    path: &Path,
    client: &Client,
    opts: &OpenOptions,
) -> Result<Arc<Model>, ServeError> {
    let plan = plan_path(path, &opts.buckets)?;
    crate::model::load(plan, client, opts.cache.as_ref(), &Registry::new())
}

fn plan_path(path: &Path, buckets: &[u64]) -> Result<Plan, ServeError> {
    let real = path.canonicalize().map_err(|e| ServeError::io(path, e))?;
    let name =
        real.file_stem().map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
    let parent = real.parent().unwrap_or(Path::new("/"));
    let file_name = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cfg = |model: ModelSource, buckets: Vec<u64>| ModelConfig {
        version: "1".to_owned(),
        model,
        inputs: Vec::new(),
        outputs: Vec::new(),
        batching: Batching { buckets, ..Batching::default() },
        executables: None,
    };
    if real.is_dir() {
        let repo = Repository::open(parent)?;
        if real.join("config.toml").is_file() {
            return repo.plan(&file_name);
        }
        if real.join("manifest.json").is_file() {
            let c = cfg(ModelSource::Lowered { path: file_name.clone() }, Vec::new());
            return repo.plan_with(&name, c, parent);
        }
        return Err(ServeError::config(
            path,
            "a folder model needs a config.toml (model-repository entry) or a manifest.json \
             (`tpuport lower` output)",
        ));
    }
    let ext = real.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "onnx" => {
            let b = if buckets.is_empty() { vec![8] } else { buckets.to_vec() };
            let repo = Repository::open(parent)?;
            repo.plan_with(&name, cfg(ModelSource::Onnx { path: file_name }, b), parent)
        }
        "mlir" | "mlirbc" => {
            let model = tpuport_formats::open(&real, &tpuport_formats::ImportOptions::default())
                .map_err(|e| ServeError::config(&real, e.to_string()))?;
            let g = &model.graph;
            let lead = g
                .inputs
                .first()
                .and_then(|&id| g.value(id).ty.shape.as_ref())
                .and_then(tpuport_model::Shape::as_fixed)
                .and_then(|s| s.first().copied())
                .ok_or_else(|| {
                    ServeError::config(
                        &real,
                        "the first argument has no static leading (batch) dimension",
                    )
                })?;
            let modules = BTreeMap::from([(lead.to_string(), file_name)]);
            let c =
                cfg(ModelSource::Stablehlo { path: None, modules, args: Vec::new() }, Vec::new());
            Repository::open(parent)?.plan_with(&name, c, parent)
        }
        _ => Err(ServeError::config(
            path,
            "not a model: give a `tpuport lower` folder, a model-repository entry, a StableHLO \
             module (.mlir, .mlirbc) or an ONNX model (.onnx)",
        )),
    }
}
