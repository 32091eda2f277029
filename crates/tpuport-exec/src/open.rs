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

use crate::config::{ModelConfig, ModelSource};
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
    let parent = real.parent().unwrap_or(Path::new("/"));
    if real.is_dir() && crate::config::is_entry(&real) {
        let file_name = real.file_name().map(|n| n.to_string_lossy().into_owned());
        return Repository::open(parent)?.plan(&file_name.unwrap_or_default());
    }
    let d = draft(path, &real, buckets, data_args)?;
    Repository::open(&d.base)?.plan_with(&d.name, d.config, &d.base)
}

/// A model-repository entry drafted for a model that is not in one (a `tpuport lower` folder, a
/// StableHLO module with its weights file, an ONNX model): the `config.toml` [`open_model`]
/// runs it with, and the files that config names. `tpuport deploy` copies the files into a
/// new entry folder and writes the config next to them.
#[derive(Clone, Debug)]
pub struct EntryDraft {
    /// The model's name: the file's stem or the folder's name (`model` when that is not a
    /// valid model name).
    pub name: String,
    /// The config; its paths are relative to [`EntryDraft::base`].
    pub config: ModelConfig,
    /// The source's folder, canonical.
    pub base: PathBuf,
    /// Every file the config names, relative to `base` (a lowered folder's manifest, modules
    /// and weights), each checked to stay inside `base` after following symlinks.
    pub files: Vec<String>,
}

impl EntryDraft {
    /// The entry's `config.toml`: the model source and, for an ONNX model, its buckets.
    ///
    /// # Errors
    /// When the config cannot be written as TOML (not expected for a drafted one).
    pub fn config_toml(&self, source: &Path) -> Result<String> {
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            version: &'a str,
            model: &'a ModelSource,
            #[serde(skip_serializing_if = "Option::is_none")]
            batching: Option<Buckets<'a>>,
        }
        #[derive(serde::Serialize)]
        struct Buckets<'a> {
            buckets: &'a [u64],
        }
        let buckets = &self.config.batching.buckets;
        let doc = Doc {
            version: &self.config.version,
            model: &self.config.model,
            batching: (!buckets.is_empty()).then_some(Buckets { buckets }),
        };
        let body = toml::to_string(&doc).map_err(|e| ExecError::config(source, e.to_string()))?;
        Ok(format!(
            "# A model-repository entry written by `tpuport deploy` for {}\n# (format: the doc of \
             tpuport-exec's config module, or `tpuport serve --help`).\n{body}",
            source.display()
        ))
    }
}

impl EntryDraft {
    /// Writes the entry into `dir` (created): each file copied to its relative path, then
    /// `config.toml`, each file atomically (a failed copy leaves no partial file). Returns the
    /// paths written, `config.toml` last.
    ///
    /// # Errors
    /// A file that cannot be read or written (named).
    pub fn write(&self, dir: &Path, source: &Path) -> Result<Vec<PathBuf>> {
        let toml = self.config_toml(source)?;
        std::fs::create_dir_all(dir).map_err(|e| ExecError::file(dir, e))?;
        let mut written = Vec::new();
        for rel in &self.files {
            let (from, to) = (self.base.join(rel), dir.join(rel));
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| ExecError::file(parent, e))?;
            }
            let mut src = std::fs::File::open(&from).map_err(|e| ExecError::file(&from, e))?;
            tpuport_model::fs::write_atomic(&to, |f| std::io::copy(&mut src, f).map(|_| ()))
                .map_err(|e| ExecError::file(&to, e))?;
            written.push(to);
        }
        let cfg = dir.join(crate::config::CONFIG_FILE);
        tpuport_model::fs::write_atomic_bytes(&cfg, toml.as_bytes())
            .map_err(|e| ExecError::file(&cfg, e))?;
        written.push(cfg);
        Ok(written)
    }
}

/// Drafts the repository entry of the model at `path`: a `tpuport lower` folder, a StableHLO
/// module (its weight arguments from the safetensors file next to it, bound by the argument
/// roles as [`open_model`] binds them) or an ONNX model (at `opts.buckets`, default `[8]`).
///
/// # Errors
/// A model-repository entry or repository (nothing to draft), a path of another kind, a file a
/// lowered manifest names that is missing or outside its folder, or an unbindable module.
pub fn draft_entry(path: &Path, opts: &OpenOptions) -> Result<EntryDraft> {
    let real = path.canonicalize().map_err(|e| ExecError::file(path, e))?;
    if real.is_dir() && crate::config::is_entry(&real) {
        return Err(ExecError::config(path, "already a model-repository entry (config.toml)"));
    }
    let mut d = draft(path, &real, &opts.buckets, &opts.data_args)?;
    if let ModelSource::Onnx { path: file } = &d.config.model {
        d.files = onnx_files(&real, &d.base, file)?;
        let confined = Repository::open(&d.base)?;
        for f in &d.files {
            confined.confine(&d.base, f)?;
        }
    }
    if !crate::repo::valid_model_name(&d.name) {
        "model".clone_into(&mut d.name);
    }
    Ok(d)
}

fn draft(path: &Path, real: &Path, buckets: &[u64], data_args: &[String]) -> Result<EntryDraft> {
    let name =
        real.file_stem().map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
    let base = real.parent().unwrap_or(Path::new("/")).to_path_buf();
    let file_name = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cfg = ModelConfig::of_source;
    let (config, files) = if real.is_dir() {
        if !real.join("manifest.json").is_file() {
            return Err(ExecError::config(
                path,
                "a folder model needs a config.toml (model-repository entry) or a manifest.json \
                 (`tpuport lower` output)",
            ));
        }
        let art = tpuport_formats::lowered::Artifact::open(real)
            .map_err(|e| ExecError::config(real, e.to_string()))?;
        let mut files = vec!["manifest.json".to_owned()];
        files.extend(art.manifest.buckets.iter().map(|b| b.module.clone()));
        files.extend(art.manifest.weights_file.clone());
        let files = files.into_iter().map(|f| format!("{file_name}/{f}")).collect();
        (cfg(ModelSource::Lowered { path: file_name.clone() }, Vec::new()), files)
    } else {
        let ext = real.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext {
            "onnx" => {
                let b = if buckets.is_empty() { vec![8] } else { buckets.to_vec() };
                // Its external data files are listed by `draft_entry` alone (a full parse).
                (cfg(ModelSource::Onnx { path: file_name.clone() }, b), vec![file_name.clone()])
            }
            "mlir" | "mlirbc" => {
                let model = tpuport_formats::open(real, &tpuport_formats::ImportOptions::default())
                    .map_err(|e| ExecError::config(real, e.to_string()))?;
                let weights = weights_file(real);
                let store = match &weights {
                    Some(w) => Some(read_store(w)?),
                    None => None,
                };
                let bound = args_by_roles(
                    real,
                    &model,
                    data_args,
                    weights.as_deref().zip(store.as_ref().map(|m| &m.weights)),
                )?;
                let modules = BTreeMap::from([(bound.batch.to_string(), file_name.clone())]);
                let wpath = bound
                    .has_weights
                    .then(|| {
                        weights
                            .and_then(|w| w.file_name().map(|n| n.to_string_lossy().into_owned()))
                    })
                    .flatten();
                let mut files = vec![file_name.clone()];
                files.extend(wpath.clone());
                let c =
                    cfg(ModelSource::Stablehlo { path: wpath, modules, args: bound.args }, vec![]);
                (c, files)
            }
            _ => {
                return Err(ExecError::config(
                    path,
                    "not a model: give a `tpuport lower` folder, a model-repository entry, a \
                     StableHLO module (.mlir, .mlirbc) or an ONNX model (.onnx)",
                ));
            }
        }
    };
    let confined = Repository::open(&base)?;
    for f in &files {
        confined.confine(&base, f)?;
    }
    Ok(EntryDraft { name, config, base, files })
}

/// An ONNX model's file and the external data files its initializers name, relative to `base`
/// (the model's folder); the importer has refused any that leaves it.
fn onnx_files(real: &Path, base: &Path, file_name: &str) -> Result<Vec<String>> {
    use tpuport_model::WeightData;
    let model = tpuport_formats::open(real, &tpuport_formats::ImportOptions::default())
        .map_err(|e| ExecError::config(real, e.to_string()))?;
    let mut files = vec![file_name.to_owned()];
    for w in model.weights.iter() {
        let (WeightData::Mapped { path, .. } | WeightData::File { path, .. }) = &w.data else {
            continue;
        };
        let real_data = path.canonicalize().map_err(|e| ExecError::file(path.as_path(), e))?;
        if let Ok(rel) = real_data.strip_prefix(base) {
            let rel = rel.to_string_lossy().into_owned();
            if !files.contains(&rel) {
                files.push(rel);
            }
        }
    }
    Ok(files)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A drafted config reads back as the same source and buckets through the reader `tpuport
    /// serve` uses (every kind, with and without the optional fields).
    #[test]
    fn drafted_configs_read_back_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let sources = [
            (ModelSource::Lowered { path: "lin".into() }, vec![]),
            (ModelSource::Onnx { path: "m.onnx".into() }, vec![2, 4]),
            (
                ModelSource::Stablehlo {
                    path: Some("w.safetensors".into()),
                    modules: BTreeMap::from([("8".into(), "m.mlir".into())]),
                    args: vec!["weight:w".into(), "input:input0".into()],
                },
                vec![],
            ),
            (
                ModelSource::Stablehlo {
                    path: None,
                    modules: BTreeMap::from([("1".into(), "a b.mlir".into())]),
                    args: vec![],
                },
                vec![],
            ),
        ];
        for (model, buckets) in sources {
            let d = EntryDraft {
                name: "m".into(),
                config: ModelConfig::of_source(model, buckets),
                base: tmp.path().to_path_buf(),
                files: Vec::new(),
            };
            let text = d.config_toml(Path::new("src")).unwrap();
            let f = tmp.path().join("config.toml");
            std::fs::write(&f, &text).unwrap();
            let back = ModelConfig::read(&f).unwrap();
            assert_eq!(format!("{:?}", back.model), format!("{:?}", d.config.model), "{text}");
            assert_eq!(back.batching.buckets, d.config.batching.buckets, "{text}");
        }
    }
}
