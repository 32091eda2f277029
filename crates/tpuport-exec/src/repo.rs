//! The model repository: one folder per model, each with a `config.toml`
//! ([`crate::config`]). Every path a config names is confined to the repository
//! ([`Repository::confine`]): no absolute paths, no `..`, no symlink that resolves outside it.
//! [`Repository::plan`] resolves a model's programs, argument bindings and weights into a
//! [`Plan`] that [`crate::Model::load`] compiles and uploads.

use std::path::{Component, Path, PathBuf};

use tpuport_formats::lowered;
use tpuport_model::DType;

use crate::config::{ModelConfig, ModelSource};
use crate::error::{ExecError, Result};

/// Largest StableHLO module read.
const MAX_MODULE_BYTES: u64 = 1 << 30;

/// Whether `name` can name a model: `[A-Za-z0-9_.-]+`, not starting with a dot.
#[must_use]
pub fn valid_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// The repository root, canonicalised.
#[derive(Clone, Debug)]
pub struct Repository {
    root: PathBuf,
}

impl Repository {
    /// Opens a repository folder.
    ///
    /// # Errors
    /// When the folder does not exist or cannot be read.
    pub fn open(path: &Path) -> Result<Repository> {
        let root = path.canonicalize().map_err(|e| ExecError::file(path, e))?;
        if !root.is_dir() {
            return Err(ExecError::config(path, "the model repository is not a folder"));
        }
        Ok(Repository { root })
    }

    /// The canonical root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Names of the model folders (those holding a `config.toml`), sorted.
    ///
    /// # Errors
    /// When the root cannot be listed.
    pub fn model_names(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let rd = std::fs::read_dir(&self.root).map_err(|e| ExecError::file(&self.root, e))?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if valid_model_name(&name) && crate::config::is_entry(&e.path()) {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    /// The folder of model `name`, confined.
    ///
    /// # Errors
    /// An invalid name, a missing folder, or one that resolves outside the repository.
    pub fn model_dir(&self, name: &str) -> Result<PathBuf> {
        if !valid_model_name(name) {
            return Err(ExecError::load(name, "not a valid model name ([A-Za-z0-9_.-]+)"));
        }
        self.confine(&self.root, name)
    }

    /// Resolves `rel` under `base` (itself inside the repository) and checks the result stays in
    /// the repository after following symlinks.
    ///
    /// # Errors
    /// An absolute path, a `..` component, a missing file, or a symlink escape.
    pub fn confine(&self, base: &Path, rel: &str) -> Result<PathBuf> {
        let p = Path::new(rel);
        if rel.is_empty()
            || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(ExecError::config(
                base,
                format!("path {rel:?} must be relative, inside the model repository, without `..`"),
            ));
        }
        let joined = base.join(p);
        let real = joined.canonicalize().map_err(|e| ExecError::file(&joined, e))?;
        if !real.starts_with(&self.root) {
            return Err(ExecError::config(
                &joined,
                "resolves outside the model repository (symlink escape)",
            ));
        }
        Ok(real)
    }
}

/// What one module argument is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ArgPlan {
    /// The request input of this name.
    Input(String),
    /// The weight of this name (uploaded once).
    Weight(String),
}

/// One module argument or result with its type.
#[derive(Clone, Debug)]
pub(crate) struct Typed<T> {
    pub(crate) what: T,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<u64>,
}

/// One program to compile.
#[derive(Debug)]
pub(crate) struct BucketPlan {
    /// Leading-dimension size; `None` for an unbatched model.
    pub(crate) size: Option<u64>,
    /// StableHLO text or bytecode.
    pub(crate) program: Vec<u8>,
    /// Where the program came from (for messages).
    pub(crate) origin: String,
    pub(crate) args: Vec<Typed<ArgPlan>>,
    pub(crate) results: Vec<Typed<String>>,
}

/// A weight's host bytes, until they are uploaded.
#[derive(Debug)]
pub(crate) struct WeightData {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<u64>,
    pub(crate) bytes: Vec<u8>,
}

/// A model resolved from its folder: programs, bindings, weights; [`crate::Model::load`]
/// turns it into executables and device buffers.
#[derive(Debug)]
pub struct Plan {
    pub(crate) name: String,
    pub(crate) cfg: ModelConfig,
    pub(crate) platform: &'static str,
    pub(crate) buckets: Vec<BucketPlan>,
    pub(crate) weights: Vec<WeightData>,
    /// Saved executables by bucket label (`"8"`, `"none"`), paths confined.
    pub(crate) saved: std::collections::BTreeMap<String, PathBuf>,
    /// `[executables] only`: never compile.
    pub(crate) saved_only: bool,
}

impl Plan {
    /// The model's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's config (as read, or as made up for a model opened from a path).
    #[must_use]
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Programs to compile (or load), one per bucket.
    #[must_use]
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }
}

impl BucketPlan {
    /// The bucket's label in metrics and in `[executables] files`.
    pub(crate) fn label(&self) -> String {
        self.size.map_or_else(|| "none".to_owned(), |s| s.to_string())
    }
}

impl Repository {
    /// Reads model `name`'s config and resolves its programs and weights.
    ///
    /// # Errors
    /// An invalid name or config, a path outside the repository, a module or weights file
    /// that cannot be read or does not fit the config (each names the file).
    pub fn plan(&self, name: &str) -> Result<Plan> {
        let dir = self.model_dir(name)?;
        let cfg_path = self.confine(&dir, crate::config::CONFIG_FILE)?;
        let cfg = ModelConfig::read(&cfg_path)?;
        self.plan_with(name, cfg, &dir)
    }

    /// Resolves `cfg`'s programs and weights, paths relative to `dir` (inside the repository).
    pub(crate) fn plan_with(&self, name: &str, cfg: ModelConfig, dir: &Path) -> Result<Plan> {
        let dir = dir.to_path_buf();
        let (platform, mut buckets, weights) = match &cfg.model {
            ModelSource::Lowered { path } => self.plan_lowered(&dir, path)?,
            ModelSource::Stablehlo { path, modules, args } => {
                self.plan_stablehlo(&dir, path.as_deref(), modules, args)?
            }
            ModelSource::Onnx { path } => plan_onnx(&self.confine(&dir, path)?, &cfg)?,
        };
        buckets.sort_by_key(|b| b.size);
        if !cfg.batching.buckets.is_empty() {
            let have: Vec<u64> = buckets.iter().filter_map(|b| b.size).collect();
            if have != cfg.batching.buckets {
                return Err(ExecError::load(
                    name,
                    format!(
                        "batching.buckets {:?} differ from the program's buckets {have:?}",
                        cfg.batching.buckets
                    ),
                ));
            }
        }
        let mut saved = std::collections::BTreeMap::new();
        let mut saved_only = false;
        if let Some(x) = &cfg.executables {
            let labels: Vec<String> = buckets.iter().map(BucketPlan::label).collect();
            for (k, file) in &x.files {
                if !labels.contains(k) {
                    return Err(ExecError::load(
                        name,
                        format!(
                            "executables.files: bucket {k:?} is not one of the model's buckets [{}]",
                            labels.join(", ")
                        ),
                    ));
                }
                saved.insert(k.clone(), self.confine(&dir, file)?);
            }
            if x.only
                && let Some(missing) = labels.iter().find(|l| !saved.contains_key(*l))
            {
                return Err(ExecError::load(
                    name,
                    format!(
                        "executables.only is set but bucket {missing} has no saved executable \
                         in executables.files"
                    ),
                ));
            }
            saved_only = x.only;
        }
        Ok(Plan { name: name.to_owned(), cfg, platform, buckets, weights, saved, saved_only })
    }

    fn plan_lowered(
        &self,
        dir: &Path,
        rel: &str,
    ) -> Result<(&'static str, Vec<BucketPlan>, Vec<WeightData>)> {
        let folder = self.confine(dir, rel)?;
        // The shared reader validates the manifest (schema, unique buckets, paths inside the
        // folder, types); `confine` below still resolves each path against the repository.
        let m = lowered::Artifact::open(&folder)?.manifest;
        let mut buckets = Vec::new();
        for b in m.buckets {
            let path = self.confine(&folder, &b.module)?;
            let args = b
                .args
                .into_iter()
                .map(|a| Typed {
                    what: match a.source {
                        lowered::ArgSource::Input(n) => ArgPlan::Input(n),
                        lowered::ArgSource::Weight(n) => ArgPlan::Weight(n),
                    },
                    dtype: a.dtype,
                    shape: a.shape,
                })
                .collect();
            let results = b
                .results
                .into_iter()
                .map(|r| Typed { what: r.name, dtype: r.dtype, shape: r.shape })
                .collect();
            buckets.push(BucketPlan {
                size: b.batch,
                program: read_module(&path)?,
                origin: b.module,
                args,
                results,
            });
        }
        let weights = match &m.weights_file {
            Some(w) => read_weights(&self.confine(&folder, w)?, &buckets)?,
            None => Vec::new(),
        };
        Ok(("tpuport_lowered", buckets, weights))
    }

    fn plan_stablehlo(
        &self,
        dir: &Path,
        weights_file: Option<&str>,
        modules: &std::collections::BTreeMap<String, String>,
        arg_spec: &[String],
    ) -> Result<(&'static str, Vec<BucketPlan>, Vec<WeightData>)> {
        // Without `model.args`, the argument roles bind each module (weights-first exports).
        let store = match weights_file {
            Some(w) if arg_spec.is_empty() => {
                let p = self.confine(dir, w)?;
                let m = tpuport_formats::safetensors::import_file(
                    &p,
                    &tpuport_formats::Limits::default(),
                )
                .map_err(|e| ExecError::config(&p, e.to_string()))?;
                Some((p, m))
            }
            _ => None,
        };
        let mut buckets = Vec::new();
        for (k, file) in modules {
            let size: u64 = k.parse().unwrap_or(0);
            let path = self.confine(dir, file)?;
            let model = tpuport_formats::open(&path, &tpuport_formats::ImportOptions::default())
                .map_err(|e| ExecError::config(&path, e.to_string()))?;
            let g = &model.graph;
            let sig = |id: tpuport_model::ValueId| -> Result<(DType, Vec<u64>)> {
                let v = g.value(id);
                let dt = v.ty.dtype.ok_or_else(|| {
                    ExecError::config(&path, format!("{}: no element type", v.name))
                })?;
                let sh = v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed).ok_or_else(
                    || ExecError::config(&path, format!("{}: shape is not static", v.name)),
                )?;
                Ok((dt, sh))
            };
            if g.inputs.is_empty() && g.outputs.is_empty() {
                return Err(ExecError::config(
                    &path,
                    "no signature could be read (bytecode): give the MLIR text",
                ));
            }
            let by_roles;
            let arg_spec: &[String] = if arg_spec.is_empty() {
                let w = store.as_ref().map(|(p, m)| (p.as_path(), &m.weights));
                by_roles = crate::open::args_by_roles(&path, &model, &[], w)?.args;
                &by_roles
            } else {
                arg_spec
            };
            if !arg_spec.is_empty() && arg_spec.len() != g.inputs.len() {
                return Err(ExecError::config(
                    &path,
                    format!(
                        "model.args lists {} arguments, the module takes {}",
                        arg_spec.len(),
                        g.inputs.len()
                    ),
                ));
            }
            let mut args = Vec::new();
            let mut n_in = 0;
            for (i, &id) in g.inputs.iter().enumerate() {
                let (dtype, shape) = sig(id)?;
                let what = match arg_spec.get(i) {
                    Some(s) if s.starts_with("weight:") => ArgPlan::Weight(s[7..].to_owned()),
                    Some(s) => ArgPlan::Input(s[6..].to_owned()),
                    None => {
                        n_in += 1;
                        ArgPlan::Input(format!("input{}", n_in - 1))
                    }
                };
                args.push(Typed { what, dtype, shape });
            }
            let mut results = Vec::new();
            for (i, &id) in g.outputs.iter().enumerate() {
                let (dtype, shape) = sig(id)?;
                results.push(Typed { what: format!("output{i}"), dtype, shape });
            }
            buckets.push(BucketPlan {
                size: Some(size),
                program: read_module(&path)?,
                origin: file.clone(),
                args,
                results,
            });
        }
        let weights = match weights_file {
            Some(w) => read_weights(&self.confine(dir, w)?, &buckets)?,
            None => Vec::new(),
        };
        Ok(("stablehlo", buckets, weights))
    }
}

fn read_module(path: &Path) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path).map_err(|e| ExecError::file(path, e))?.len();
    if len > MAX_MODULE_BYTES {
        return Err(ExecError::config(path, format!("{len} bytes is too large for a module")));
    }
    std::fs::read(path).map_err(|e| ExecError::file(path, e))
}

/// Reads the weights the buckets bind, checking dtype and shape against the modules.
fn read_weights(path: &Path, buckets: &[BucketPlan]) -> Result<Vec<WeightData>> {
    let model =
        tpuport_formats::safetensors::import_file(path, &tpuport_formats::Limits::default())
            .map_err(|e| ExecError::config(path, e.to_string()))?;
    weights_from(path, &model.weights, buckets)
}

fn weights_from(
    path: &Path,
    store: &tpuport_model::WeightStore,
    buckets: &[BucketPlan],
) -> Result<Vec<WeightData>> {
    let mut out: Vec<WeightData> = Vec::new();
    for b in buckets {
        for a in &b.args {
            let ArgPlan::Weight(name) = &a.what else { continue };
            if out.iter().any(|w| &w.name == name) {
                continue;
            }
            let w = store
                .by_name(name)
                .ok_or_else(|| ExecError::config(path, format!("no weight named `{name}`")))?;
            if w.dtype != a.dtype || w.shape != a.shape {
                return Err(ExecError::config(
                    path,
                    format!(
                        "weight `{name}` is {}{:?}, the module wants {}{:?}",
                        w.dtype, w.shape, a.dtype, a.shape
                    ),
                ));
            }
            let bytes = w.bytes().map_err(|e| ExecError::config(path, e.to_string()))?;
            out.push(WeightData {
                name: name.clone(),
                dtype: w.dtype,
                shape: w.shape.clone(),
                bytes: bytes.into_owned(),
            });
        }
    }
    Ok(out)
}

/// Lowers an ONNX model once per bucket (or once, unbatched).
fn plan_onnx(
    path: &Path,
    cfg: &ModelConfig,
) -> Result<(&'static str, Vec<BucketPlan>, Vec<WeightData>)> {
    use tpuport_lower::onnx::{ArgSource, LowerOptions, lower};
    let sizes: Vec<Option<u64>> = if cfg.batching.buckets.is_empty() {
        vec![None]
    } else {
        cfg.batching.buckets.iter().copied().map(Some).collect()
    };
    let mut buckets = Vec::new();
    let mut last = None;
    for size in sizes {
        let opts = tpuport_formats::ImportOptions { batch: size, ..Default::default() };
        let model = tpuport_formats::open(path, &opts)
            .map_err(|e| ExecError::config(path, e.to_string()))?;
        let low = lower(&model, &LowerOptions::default())
            .map_err(|e| ExecError::config(path, format!("lowering: {e}")))?;
        let args = low
            .args
            .into_iter()
            .map(|a| Typed {
                what: match a.source {
                    ArgSource::Input(n) => ArgPlan::Input(n),
                    ArgSource::Weight(n) => ArgPlan::Weight(n),
                },
                dtype: a.dtype,
                shape: a.shape,
            })
            .collect();
        let results = low
            .results
            .into_iter()
            .map(|r| Typed { what: r.name, dtype: r.dtype, shape: r.shape })
            .collect();
        buckets.push(BucketPlan {
            size,
            program: low.mlir.into_bytes(),
            origin: format!(
                "{} lowered{}",
                path.display(),
                size.map_or(String::new(), |s| format!(" at batch {s}"))
            ),
            args,
            results,
        });
        last = Some(model);
    }
    let weights = match &last {
        Some(m) => weights_from(path, &m.weights, &buckets)?,
        None => Vec::new(),
    };
    Ok(("onnx", buckets, weights))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_checked() {
        for ok in ["mlp", "resnet-50", "a.b_c"] {
            assert!(valid_model_name(ok), "{ok}");
        }
        for bad in ["", ".hidden", "../x", "a/b", "a b", "ü"] {
            assert!(!valid_model_name(bad), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn paths_stay_in_the_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join("m")).unwrap();
        std::fs::write(root.join("m/w.bin"), b"x").unwrap();
        std::fs::write(tmp.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("m/link")).unwrap();
        let repo = Repository::open(&root).unwrap();
        let dir = repo.model_dir("m").unwrap();
        assert!(repo.confine(&dir, "w.bin").is_ok());
        for bad in ["../secret", "/etc/passwd", "", "./../m/w.bin"] {
            assert!(repo.confine(&dir, bad).is_err(), "{bad}");
        }
        let e = repo.confine(&dir, "link").unwrap_err().to_string();
        assert!(e.contains("outside the model repository"), "{e}");
        assert!(repo.model_dir("..").is_err());
    }
}
