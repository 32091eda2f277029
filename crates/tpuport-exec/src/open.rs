//! A model opened from a path rather than a repository, for offline callers (`tpuport batch`):
//! a model-repository entry (a folder with `config.toml`), a `tpuport lower` output folder, a
//! StableHLO module, or an ONNX model lowered once per requested bucket. The result is the same
//! [`Model`] `tpuport serve` runs: every bucket compiled, weights uploaded once.
//!
//! A StableHLO module is one bucket. Which of its arguments are data is decided by the argument
//! roles of `tpuport audit` ([`tpuport_analysis::roles`], overridden by `--data-args`), so a
//! module exported with its weights as leading arguments (JAX, Keras, Flax) works: the bucket is
//! the data arguments' leading dimension, never a weight's, and the weight and state arguments
//! are read from a safetensors file next to the module ([`weights_file`]), each tensor named as
//! the argument (the exporter's name, or `argN`). A model-repository entry without `model.args`
//! binds its modules the same way ([`args_by_roles`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tpuport_pjrt::{Client, ExecutableCache};

use crate::config::{Batching, ModelConfig, ModelSource};
use crate::error::{ExecError, Result};
use crate::model::{Model, NoMetrics};
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
    /// The data arguments of a StableHLO module, by position or name (`--data-args`); empty:
    /// the argument roles decide.
    pub data_args: Vec<String>,
}

/// The PJRT client for `plugin` (chosen as [`tpuport_pjrt::choose`] does when `None`: the
/// first discovered plugin that makes a client): one device for the CPU plugin. The plugins
/// skipped on the way, if any, each with why.
///
/// # Errors
/// No plugin found, or none loads and creates a client (a forced one's error, or the first's).
pub fn client(plugin: Option<&Path>) -> Result<(Client, Vec<String>)> {
    let chosen = tpuport_pjrt::choose(plugin, 1)?;
    let notes = chosen.skipped.iter().map(|s| s.note(&chosen.found)).collect();
    Ok((chosen.client, notes))
}

/// Opens the model at `path` on `client`: compiles every bucket and uploads the weights.
///
/// # Errors
/// A path that is none of the kinds above, or the load failing (named).
pub fn open_model(path: &Path, client: &Client, opts: &OpenOptions) -> Result<Arc<Model>> {
    let plan = plan_path(path, &opts.buckets, &opts.data_args)?;
    Model::load(plan, client, opts.cache.as_ref(), &NoMetrics)
}

fn plan_path(path: &Path, buckets: &[u64], data_args: &[String]) -> Result<Plan> {
    let real = path.canonicalize().map_err(|e| ExecError::file(path, e))?;
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
        image: None,
    };
    if real.is_dir() {
        let repo = Repository::open(parent)?;
        if crate::config::is_entry(&real) {
            return repo.plan(&file_name);
        }
        if real.join("manifest.json").is_file() {
            let c = cfg(ModelSource::Lowered { path: file_name.clone() }, Vec::new());
            return repo.plan_with(&name, c, parent);
        }
        return Err(ExecError::config(
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
                .map_err(|e| ExecError::config(&real, e.to_string()))?;
            let weights = weights_file(&real);
            let store = match &weights {
                Some(w) => Some(read_store(w)?),
                None => None,
            };
            let bound = args_by_roles(
                &real,
                &model,
                data_args,
                weights.as_deref().zip(store.as_ref().map(|m| &m.weights)),
            )?;
            let modules = BTreeMap::from([(bound.batch.to_string(), file_name)]);
            let path = bound
                .has_weights
                .then(|| {
                    weights.and_then(|w| w.file_name().map(|n| n.to_string_lossy().into_owned()))
                })
                .flatten();
            let c = cfg(ModelSource::Stablehlo { path, modules, args: bound.args }, Vec::new());
            Repository::open(parent)?.plan_with(&name, c, parent)
        }
        _ => Err(ExecError::config(
            path,
            "not a model: give a `tpuport lower` folder, a model-repository entry, a StableHLO \
             module (.mlir, .mlirbc) or an ONNX model (.onnx)",
        )),
    }
}

/// The safetensors file holding a StableHLO module's weight arguments: `<stem>.safetensors`
/// next to the module, else `weights.safetensors` in its folder; `None` when neither exists.
#[must_use]
pub(crate) fn weights_file(module: &Path) -> Option<PathBuf> {
    let dir = module.parent()?;
    let stem = module.file_stem()?.to_string_lossy();
    [dir.join(format!("{stem}.safetensors")), dir.join("weights.safetensors")]
        .into_iter()
        .find(|p| p.is_file())
}

fn read_store(path: &Path) -> Result<tpuport_model::Model> {
    tpuport_formats::safetensors::import_file(path, &tpuport_formats::Limits::default())
        .map_err(|e| ExecError::config(path, e.to_string()))
}

/// A StableHLO module's arguments bound by their roles.
#[derive(Debug)]
pub(crate) struct RoleBinding {
    /// Per argument: `input:inputK` (the K-th data argument) or `weight:KEY` (a tensor of the
    /// weights file), as `model.args` spells them.
    pub(crate) args: Vec<String>,
    /// The data arguments' common leading dimension.
    pub(crate) batch: u64,
    /// Whether any argument is a weight or state (the weights file is needed).
    pub(crate) has_weights: bool,
}

/// Binds `model`'s arguments by the argument roles of [`tpuport_analysis::roles`]
/// (`data_args` overrides them): data arguments become the inputs `input0`, `input1`, … in
/// order, and weight and state arguments the tensors of `weights` named as the argument (the
/// exporter's name, `argN` or `%argN`). The batch is the data arguments' leading dimension;
/// every data argument must lead with it.
///
/// # Errors
/// No readable signature, an unknown `--data-args` entry, no data argument with a static
/// leading dimension, a batch that is a weight's dimension, a data argument with another
/// leading dimension, or a weight argument with no tensor (or no weights file): each names the
/// argument.
pub(crate) fn args_by_roles(
    path: &Path,
    model: &tpuport_model::Model,
    data_args: &[String],
    weights: Option<(&Path, &tpuport_model::WeightStore)>,
) -> Result<RoleBinding> {
    use tpuport_analysis::roles::{self, ArgSelector, Role, RoleOptions};
    if model.graph.inputs.is_empty() && model.graph.outputs.is_empty() {
        return Err(ExecError::config(
            path,
            "no signature could be read (bytecode): give the MLIR text",
        ));
    }
    let data_args = data_args
        .iter()
        .map(|s| {
            s.parse::<ArgSelector>()
                .map_err(|e| ExecError::config(path, format!("--data-args: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let r = roles::assign(model, &RoleOptions { data_args })
        .map_err(|e| ExecError::config(path, e.to_string()))?;
    let show = |a: &roles::ArgRole| {
        format!(
            "argument {} `{}` {}{:?}",
            a.index,
            a.label(),
            a.dtype,
            a.shape.clone().unwrap_or_default()
        )
    };
    let batch = r.batch.ok_or_else(|| {
        ExecError::config(
            path,
            "no data argument with a static leading (batch) dimension: name the data arguments with --data-args",
        )
    })?;
    if let Some(w) = r.batch_is_weight_dim(batch) {
        return Err(ExecError::config(
            path,
            format!(
                "the batch {batch} looks read from a weight ({} is used as a weight): name the data arguments with --data-args",
                show(w)
            ),
        ));
    }
    if let Some(a) =
        r.with(Role::Data).find(|a| a.shape.as_ref().and_then(|s| s.first()) != Some(&batch))
    {
        return Err(ExecError::config(
            path,
            format!(
                "data {} does not lead with the batch {batch} ({}): every input is batched along its leading dimension; name the data arguments with --data-args",
                show(a),
                r.batch_from.as_deref().unwrap_or("the data arguments")
            ),
        ));
    }
    let resident: Vec<&roles::ArgRole> = r.args.iter().filter(|a| a.role != Role::Data).collect();
    let mut args = Vec::with_capacity(r.args.len());
    let mut k = 0;
    for a in &r.args {
        if a.role == Role::Data {
            args.push(format!("input:input{k}"));
            k += 1;
            continue;
        }
        let Some((file, store)) = weights else {
            let n = resident.len() - 1;
            let elements: u64 = resident.iter().map(|a| a.elements()).sum();
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(ExecError::config(
                path,
                format!(
                    "{} is a {} ({}){}: their values are read from {stem}.safetensors or weights.safetensors next to the module (in a model-repository entry, the file `model.path` names), and there is none ({} tensors, {elements} elements, each named as its argument: the exporter's name or `argN`); or name the data arguments with --data-args",
                    show(a),
                    a.role,
                    a.rule.describe(),
                    if n > 0 {
                        format!(", and {n} more arguments are weights or state")
                    } else {
                        String::new()
                    },
                    resident.len()
                ),
            ));
        };
        let bare = a.value.trim_start_matches('%').to_owned();
        let key = [a.name.clone(), Some(bare.clone()), Some(a.value.clone())]
            .into_iter()
            .flatten()
            .find(|k| store.by_name(k).is_some())
            .ok_or_else(|| {
                ExecError::config(
                    file,
                    format!(
                        "no tensor for the {} {} of {} (looked for {}`{bare}`)",
                        a.role,
                        show(a),
                        path.display(),
                        a.name.as_ref().map(|n| format!("`{n}`, ")).unwrap_or_default()
                    ),
                )
            })?;
        args.push(format!("weight:{key}"));
    }
    Ok(RoleBinding { args, batch, has_weights: !resident.is_empty() })
}
