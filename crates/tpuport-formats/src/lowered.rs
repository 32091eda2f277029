//! The lowered-artifact folder `tpuport lower` writes and `bench`, `run` (and next `serve` and
//! `batch`) read: `manifest.json` (schema [`SCHEMA`]), one StableHLO module per batch bucket,
//! and `weights.safetensors` holding each weight argument once.
//!
//! The manifest binds every module argument to a graph input (by ONNX name) or a weight (by
//! name in the weights file), and names every result. [`Artifact::open`] reads and validates
//! it: schema and version, at least one bucket, batch sizes unique (or one bucket without a
//! batch), every path a plain relative name inside the folder that exists there, types that
//! have a host form and a byte size that fits in 64 bits, and the same graph inputs in every
//! bucket. [`arguments`] assembles a module's argument list from the caller's inputs and the
//! weights.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use tpuport_model::{DType, HostTensor, WeightStore};

use crate::tensors::{BindProblem, Slot};
use crate::{FormatError, Limits};

/// Schema tag of the manifest this version writes and reads.
pub const SCHEMA: &str = "tpuport.lower/1";

/// File name of the manifest in an artifact folder.
pub const MANIFEST: &str = "manifest.json";

/// Largest manifest read (a hostile size must not be read into memory).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Where a module argument's data comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum ArgSource {
    /// A graph input the caller provides, by ONNX name.
    Input(String),
    /// An initializer (or Constant-held weight) from the model's weight store, by name.
    Weight(String),
}

/// One module argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgBinding {
    /// Where the data comes from.
    pub source: ArgSource,
    /// Element type the module expects (after any `--dtype` cast).
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
}

/// One module result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultBinding {
    /// ONNX value name (a graph output, or an exposed intermediate).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
}

/// One batch bucket: a module and its signature.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bucket {
    /// Leading-dimension size of the batched inputs (`None`: the model's own shapes).
    pub batch: Option<u64>,
    /// Module file name, relative to the folder.
    pub module: String,
    /// Module arguments in order.
    pub args: Vec<ArgBinding>,
    /// Module results in order.
    pub results: Vec<ResultBinding>,
    /// Time the lowering took, milliseconds.
    pub lower_ms: f64,
}

impl Bucket {
    /// The arguments the caller provides (graph inputs), in module order.
    #[must_use]
    pub fn inputs(&self) -> Vec<Slot> {
        input_slots(&self.args)
    }
}

/// `manifest.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// [`SCHEMA`].
    pub schema: String,
    /// The ONNX model lowered (as given on the command line).
    pub source: String,
    /// Compute dtype (`f32`, `bf16`).
    pub dtype: String,
    /// Weights embedded in the modules as constants (no weight arguments).
    pub weights_as_constants: bool,
    /// Weights file name, relative to the folder.
    pub weights_file: Option<String>,
    /// Node count per op type of the source graph.
    pub ops: BTreeMap<String, usize>,
    /// The buckets, in the order lowered.
    pub buckets: Vec<Bucket>,
    /// Time the whole lowering took, milliseconds.
    pub total_ms: f64,
}

impl Manifest {
    /// Pretty JSON with a trailing newline, as written to `manifest.json`.
    ///
    /// # Errors
    /// Never in practice (every field serialises); the serialiser's error otherwise.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|s| s + "\n")
    }

    /// Whether `dir` holds a manifest of any `tpuport.lower/` version (a folder `tpuport lower`
    /// may replace).
    #[must_use]
    pub fn is_in(dir: &Path) -> bool {
        let Ok(f) = std::fs::File::open(dir.join(MANIFEST)) else { return false };
        let mut text = String::new();
        use std::io::Read as _;
        if f.take(MAX_MANIFEST_BYTES).read_to_string(&mut text).is_err() {
            return false;
        }
        serde_json::from_str::<serde_json::Value>(&text).ok().is_some_and(|v| {
            v.get("schema")
                .and_then(|s| s.as_str())
                .is_some_and(|s| s.starts_with("tpuport.lower/"))
        })
    }
}

/// A lowered-artifact folder with its validated manifest.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl Artifact {
    /// Opens an artifact folder (or its `manifest.json`) and validates the manifest.
    ///
    /// # Errors
    /// [`FormatError::Io`] when the manifest cannot be read, [`FormatError::Invalid`] naming
    /// the field that is wrong, [`FormatError::Unsupported`] for another schema version.
    pub fn open(path: &Path) -> Result<Artifact, FormatError> {
        let (dir, file) = if path.is_dir() {
            (path.to_owned(), path.join(MANIFEST))
        } else {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            (dir.to_owned(), path.to_owned())
        };
        let len = std::fs::metadata(&file).map_err(|e| FormatError::io(&file, e))?.len();
        if len > MAX_MANIFEST_BYTES {
            return Err(FormatError::invalid(
                &file,
                format!("{len} bytes: larger than the {MAX_MANIFEST_BYTES}-byte manifest limit"),
            ));
        }
        let text = std::fs::read_to_string(&file).map_err(|e| FormatError::io(&file, e))?;
        let schema = serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| FormatError::invalid(&file, format!("not JSON: {e}")))?
            .get("schema")
            .and_then(|s| s.as_str().map(str::to_owned));
        match schema.as_deref() {
            Some(SCHEMA) => {}
            Some(s) if s.starts_with("tpuport.lower/") => {
                return Err(FormatError::unsupported(
                    &file,
                    format!("manifest schema {s}; this tpuport reads {SCHEMA}"),
                ));
            }
            _ => {
                return Err(FormatError::invalid(
                    &file,
                    format!("`schema` is not {SCHEMA}: not a tpuport lower manifest"),
                ));
            }
        }
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| FormatError::invalid(&file, format!("manifest: {e}")))?;
        check(&dir, &manifest).map_err(|what| FormatError::invalid(&file, what))?;
        Ok(Artifact { dir, manifest })
    }

    /// Path of a bucket's module.
    #[must_use]
    pub fn module_path(&self, b: &Bucket) -> PathBuf {
        self.dir.join(&b.module)
    }

    /// The bucket of a batch size.
    #[must_use]
    pub fn bucket(&self, batch: u64) -> Option<&Bucket> {
        self.manifest.buckets.iter().find(|b| b.batch == Some(batch))
    }

    /// The bucket whose module is `file` (compared by file name).
    #[must_use]
    pub fn bucket_of(&self, file: &Path) -> Option<&Bucket> {
        let name = file.file_name()?;
        self.manifest.buckets.iter().find(|b| Path::new(&b.module).file_name() == Some(name))
    }

    /// The weights file's tensors (an empty store when the artifact has none).
    ///
    /// # Errors
    /// The safetensors reader's error.
    pub fn weights(&self, limits: &Limits) -> Result<WeightStore, FormatError> {
        match &self.manifest.weights_file {
            Some(f) => Ok(crate::safetensors::import_file(&self.dir.join(f), limits)?.weights),
            None => Ok(WeightStore::default()),
        }
    }
}

/// The graph-input arguments of a module signature, in module order.
#[must_use]
pub fn input_slots(args: &[ArgBinding]) -> Vec<Slot> {
    args.iter()
        .filter_map(|a| match &a.source {
            ArgSource::Input(n) => Some(Slot::fixed(n.clone(), a.dtype, &a.shape)),
            ArgSource::Weight(_) => None,
        })
        .collect()
}

/// A module's argument list: `inputs` (bound to [`input_slots`], in that order) where the
/// binding says input, weights from `weights` where it says weight. Every tensor is checked
/// against its binding's dtype and shape.
///
/// # Errors
/// [`BindProblem::Missing`] when there are fewer inputs than input arguments,
/// [`BindProblem::LeftOver`] when more, [`BindProblem::Weight`] for a weight that is not in the
/// store or cannot be read, [`BindProblem::Mismatch`] for a tensor that does not fit.
pub fn arguments(
    args: &[ArgBinding],
    inputs: Vec<HostTensor>,
    weights: &WeightStore,
) -> Result<Vec<HostTensor>, BindProblem> {
    let takes = input_slots(args).len();
    let mut inputs = inputs.into_iter();
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let slot = |name: &str| Slot::fixed(name, a.dtype, &a.shape);
        let (source, t) = match &a.source {
            ArgSource::Input(n) => match inputs.next() {
                Some(t) => (n.clone(), t),
                None => return Err(BindProblem::Missing(vec![(i, slot(n))])),
            },
            ArgSource::Weight(n) => {
                let w = weights.by_name(n).ok_or_else(|| BindProblem::Weight {
                    name: n.clone(),
                    why: "not in the weights".to_owned(),
                })?;
                let t = w
                    .to_host()
                    .map_err(|e| BindProblem::Weight { name: n.clone(), why: e.to_string() })?;
                (n.clone(), t)
            }
        };
        if t.dtype != a.dtype || t.shape != a.shape {
            return Err(BindProblem::Mismatch {
                slot: slot(&source),
                source,
                index: i,
                dtype: t.dtype,
                shape: t.shape,
            });
        }
        out.push(t);
    }
    if inputs.next().is_some() {
        return Err(BindProblem::LeftOver { source: format!("input {takes}"), takes });
    }
    Ok(out)
}

/// A relative path that stays inside `dir` and names an existing file there.
fn confined(dir: &Path, rel: &str, field: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!("{field} {rel:?} is not a plain relative path inside the folder"));
    }
    let full = dir.join(p);
    if !full.is_file() {
        return Err(format!("{field} {rel:?}: no such file in {}", dir.display()));
    }
    // a symbolic link may still point outside
    let (Ok(root), Ok(real)) = (dir.canonicalize(), full.canonicalize()) else {
        return Err(format!("{field} {rel:?}: cannot be resolved"));
    };
    if !real.starts_with(&root) {
        return Err(format!("{field} {rel:?} resolves outside the folder"));
    }
    Ok(full)
}

fn check_types<'a>(
    what: &str,
    items: impl Iterator<Item = (&'a DType, &'a [u64])>,
) -> Result<(), String> {
    for (k, (dtype, shape)) in items.enumerate() {
        let n = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        if *dtype == DType::String || n.and_then(|n| dtype.storage_bytes(n)).is_none() {
            return Err(format!("{what} {k}: {dtype}{shape:?} has no host byte size"));
        }
    }
    Ok(())
}

/// Validates a manifest against its folder.
fn check(dir: &Path, m: &Manifest) -> Result<(), String> {
    if m.buckets.is_empty() {
        return Err("`buckets` is empty".to_owned());
    }
    let unbatched = m.buckets.iter().filter(|b| b.batch.is_none()).count();
    if unbatched > 0 && m.buckets.len() > 1 {
        return Err("a bucket without `batch` must be the only one".to_owned());
    }
    let mut seen_batch = Vec::new();
    let mut seen_module = Vec::new();
    let first_inputs: Vec<String> = m.buckets[0].inputs().into_iter().map(|s| s.name).collect();
    for (i, b) in m.buckets.iter().enumerate() {
        let at = format!("bucket {i}");
        if let Some(n) = b.batch {
            if n == 0 {
                return Err(format!("{at}: batch 0"));
            }
            if seen_batch.contains(&n) {
                return Err(format!("{at}: batch {n} appears twice"));
            }
            seen_batch.push(n);
        }
        if seen_module.contains(&&b.module) {
            return Err(format!("{at}: module {:?} appears twice", b.module));
        }
        seen_module.push(&b.module);
        confined(dir, &b.module, &format!("{at}: module"))?;
        check_types(
            &format!("{at}: argument"),
            b.args.iter().map(|a| (&a.dtype, a.shape.as_slice())),
        )?;
        check_types(
            &format!("{at}: result"),
            b.results.iter().map(|r| (&r.dtype, r.shape.as_slice())),
        )?;
        if b.results.is_empty() {
            return Err(format!("{at}: no results"));
        }
        let inputs: Vec<String> = b.inputs().into_iter().map(|s| s.name).collect();
        if inputs != first_inputs {
            return Err(format!(
                "{at}: graph inputs {inputs:?} differ from bucket 0's {first_inputs:?}"
            ));
        }
        let weight_args = b.args.iter().any(|a| matches!(a.source, ArgSource::Weight(_)));
        if m.weights_as_constants && weight_args {
            return Err(format!("{at}: weight arguments, but `weights_as_constants` is true"));
        }
    }
    if let Some(w) = &m.weights_file {
        confined(dir, w, "weights_file")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn manifest() -> Manifest {
        let bucket = |b: u64| Bucket {
            batch: Some(b),
            module: format!("model_b{b}.mlir"),
            args: vec![
                ArgBinding {
                    source: ArgSource::Input("x".into()),
                    dtype: DType::F32,
                    shape: vec![b, 2],
                },
                ArgBinding {
                    source: ArgSource::Weight("w".into()),
                    dtype: DType::F32,
                    shape: vec![2],
                },
            ],
            results: vec![ResultBinding { name: "y".into(), dtype: DType::F32, shape: vec![b, 2] }],
            lower_ms: 1.0,
        };
        Manifest {
            schema: SCHEMA.into(),
            source: "m.onnx".into(),
            dtype: "f32".into(),
            weights_as_constants: false,
            weights_file: Some("weights.safetensors".into()),
            ops: BTreeMap::new(),
            buckets: vec![bucket(1), bucket(8)],
            total_ms: 2.0,
        }
    }

    fn folder(m: &Manifest) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in ["model_b1.mlir", "model_b8.mlir", "weights.safetensors"] {
            std::fs::write(d.path().join(f), b"").unwrap();
        }
        std::fs::write(d.path().join(MANIFEST), m.to_json().unwrap()).unwrap();
        d
    }

    #[test]
    fn round_trips_and_finds_buckets() {
        let d = folder(&manifest());
        let a = Artifact::open(d.path()).unwrap();
        assert_eq!(a.manifest.buckets.len(), 2);
        assert_eq!(a.bucket(8).unwrap().module, "model_b8.mlir");
        assert!(a.bucket(2).is_none());
        assert_eq!(a.bucket_of(&d.path().join("model_b1.mlir")).unwrap().batch, Some(1));
        assert_eq!(a.bucket(1).unwrap().inputs(), [Slot::fixed("x", DType::F32, &[1, 2])]);
        assert!(Manifest::is_in(d.path()));
        // the manifest file itself opens too
        assert!(Artifact::open(&d.path().join(MANIFEST)).is_ok());
    }

    #[test]
    fn hostile_manifests_are_refused_with_the_field_named() {
        type Edit = Box<dyn Fn(&mut Manifest)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|m| m.buckets[0].module = "../x.mlir".into()), "not a plain relative path"),
            (Box::new(|m| m.buckets[0].module = "/etc/passwd".into()), "not a plain relative path"),
            (Box::new(|m| m.buckets[1].module = "gone.mlir".into()), "no such file"),
            (Box::new(|m| m.weights_file = Some("../w".into())), "weights_file"),
            (Box::new(|m| m.buckets[1].batch = Some(1)), "batch 1 appears twice"),
            (Box::new(|m| m.buckets[1].batch = None), "must be the only one"),
            (Box::new(|m| m.buckets.clear()), "`buckets` is empty"),
            (Box::new(|m| m.buckets[0].args[0].shape = vec![u64::MAX, 4]), "no host byte size"),
            (Box::new(|m| m.weights_as_constants = true), "weights_as_constants"),
            (
                Box::new(|m| m.buckets[1].args[0].source = ArgSource::Input("z".into())),
                "differ from bucket 0",
            ),
            (Box::new(|m| m.schema = "tpuport.lower/9".into()), "unsupported: manifest schema"),
            (Box::new(|m| m.schema = "other".into()), "not a tpuport lower manifest"),
        ];
        for (edit, want) in cases {
            let mut m = manifest();
            edit(&mut m);
            let d = folder(&m);
            let e = Artifact::open(d.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
            assert!(e.contains("manifest.json"), "{e}");
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(MANIFEST),
            "{\"schema\": \"tpuport.lower/1\", \"buckets\": 3}",
        )
        .unwrap();
        let e = Artifact::open(d.path()).unwrap_err().to_string();
        assert!(e.contains("manifest: invalid type"), "{e}");
        assert!(Artifact::open(&d.path().join("nope")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_folder_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.mlir"), b"").unwrap();
        let m = manifest();
        let d = folder(&m);
        std::fs::remove_file(d.path().join("model_b8.mlir")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.mlir"),
            d.path().join("model_b8.mlir"),
        )
        .unwrap();
        let e = Artifact::open(d.path()).unwrap_err().to_string();
        assert!(e.contains("resolves outside the folder"), "{e}");
    }

    #[test]
    fn arguments_take_inputs_and_weights_in_module_order() {
        let m = manifest();
        let mut store = WeightStore::default();
        store.push(tpuport_model::Weight {
            name: "w".into(),
            dtype: DType::F32,
            shape: vec![2],
            data: tpuport_model::WeightData::Inline(std::sync::Arc::from(&[0u8; 8][..])),
        });
        let x = HostTensor::from_f32(vec![1, 2], &[1.0, 2.0]).unwrap();
        let args = arguments(&m.buckets[0].args, vec![x.clone()], &store).unwrap();
        assert_eq!(args.len(), 2);
        assert_eq!(args[0], x);
        let e = arguments(&m.buckets[1].args, vec![x.clone()], &store).unwrap_err();
        assert!(e.to_string().contains("the model expects f32[8, 2]"), "{e}");
        let e = arguments(&m.buckets[0].args, vec![x], &WeightStore::default()).unwrap_err();
        assert!(matches!(e, BindProblem::Weight { .. }), "{e}");
        assert!(arguments(&m.buckets[0].args, vec![], &store).is_err());
    }
}
