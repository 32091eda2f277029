//! A [`Module`] and where its arguments come from ([`Target`]): the caller for a plain module,
//! the caller and the folder's weights file for a bucket of a `tpuport lower` folder, the
//! caller and the `--input-value` tensors for an ONNX model lowered here ([`crate::Statics`]).
//! [`Target::resolve_with`] finds every target a path names (all buckets of a lowered folder,
//! or the sibling bucket files of a module with `sweep`).

use std::path::{Path, PathBuf};

use tpuport_formats::lowered::{self, Artifact, Bucket};
use tpuport_formats::tensors::{Entry, Role, Slot};
use tpuport_model::{HostTensor, WeightStore};
use tpuport_pjrt::Program;

use crate::error::{Context as _, Result, invalid};
use crate::{Module, Observer, Param};

/// A module and where its arguments come from: the caller for a plain module; the caller for
/// the graph inputs and the folder's weights file for a bucket of a `tpuport lower` folder.
#[derive(Debug)]
pub struct Target {
    /// The module.
    pub module: Module,
    /// The bucket's batch size (`None` for a plain module; see [`Target::batch`]).
    bucket_batch: Option<u64>,
    lowered: Option<(Bucket, WeightStore)>,
    /// Inputs given a value at lowering time (`--input-value`): fed when the caller does not
    /// give them.
    fixed: Vec<(String, HostTensor)>,
    /// Those of `fixed` bound from the caller's own input files: the caller feeds them too.
    from_given: Vec<String>,
}

impl Target {
    /// A plain module file.
    ///
    /// # Errors
    /// As [`Module::load`].
    pub fn module(path: &Path, obs: &dyn Observer) -> Result<Target> {
        Ok(Target {
            module: Module::load(path, obs)?,
            bucket_batch: None,
            lowered: None,
            fixed: Vec::new(),
            from_given: Vec::new(),
        })
    }

    /// An ONNX model lowered here to one static module: `statics` binds its dimensions and
    /// gives chosen inputs their value; the weights are the model's own.
    ///
    /// # Errors
    /// The model cannot be read, a binding is wrong, or the lowering refuses the model.
    pub fn onnx(path: &Path, statics: &crate::Statics, obs: &dyn Observer) -> Result<Target> {
        let started = std::time::Instant::now();
        let model = tpuport_formats::open(path, &statics.import_options())?;
        let crate::StaticLowering { lowered: low, fixed, from_given, notes } =
            statics.lower(path, &model, &tpuport_lower::onnx::LowerOptions::default())?;
        for n in &notes {
            obs.note(n);
        }
        let lower_ms = started.elapsed().as_secs_f64() * 1e3;
        obs.info(&format!("lowered {} in {lower_ms:.0} ms", path.display()));
        let text = tpuport_formats::stablehlo::parse_text(
            path,
            &low.mlir,
            &tpuport_formats::Limits::default(),
        )
        .context(|| "reading back the lowered module".to_owned())?;
        let mut module = Module::new(path, Program::mlir(low.mlir.into_bytes()));
        module.read_model(&text);
        // The batch of the run is the bound one (what `lower --batch` calls the bucket).
        let bucket = Bucket {
            batch: statics.batch,
            module: String::new(),
            args: low.args,
            results: low.results,
            lower_ms,
        };
        Ok(Target {
            module,
            bucket_batch: statics.batch,
            lowered: Some((bucket, model.weights)),
            fixed,
            from_given,
        })
    }

    /// Whether `path` names an ONNX model (by extension).
    #[must_use]
    pub fn is_onnx(path: &Path) -> bool {
        path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
    }

    /// The inputs given a value at lowering time, with their values.
    #[must_use]
    pub fn fixed_inputs(&self) -> &[(String, HostTensor)] {
        &self.fixed
    }

    /// One bucket of a lowered folder, with its weights.
    ///
    /// # Errors
    /// The module or the weights file cannot be read.
    pub fn bucket(art: &Artifact, bucket: &Bucket, obs: &dyn Observer) -> Result<Target> {
        let module = Module::load(&art.module_path(bucket), obs)?;
        let weights = art.weights(&tpuport_formats::Limits::default())?;
        Ok(Target {
            module,
            bucket_batch: bucket.batch,
            lowered: Some((bucket.clone(), weights)),
            fixed: Vec::new(),
            from_given: Vec::new(),
        })
    }

    /// Every target `path` names: a lowered folder (or its manifest) gives all its buckets; a
    /// module of a lowered folder gives its bucket, or all of them with `sweep`; a plain module
    /// gives itself, or with `sweep` the sibling files that differ only in the number after a
    /// `b` (`mlp_b1/jit.mlir` → `mlp_b8/jit.mlir`, ...).
    ///
    /// # Errors
    /// An invalid manifest, a module the manifest does not list, or one that cannot be read.
    pub fn resolve(path: &Path, sweep: bool, obs: &dyn Observer) -> Result<Vec<Target>> {
        Target::resolve_with(path, sweep, &crate::Statics::default(), obs)
    }

    /// As [`Target::resolve`], and an ONNX model is lowered with `statics` ([`Target::onnx`]);
    /// `statics` must be empty for anything else (a module's shapes are fixed).
    ///
    /// # Errors
    /// As [`Target::resolve`] and [`Target::onnx`]; bindings given for a non-ONNX model.
    pub fn resolve_with(
        path: &Path,
        sweep: bool,
        statics: &crate::Statics,
        obs: &dyn Observer,
    ) -> Result<Vec<Target>> {
        if Target::is_onnx(path) {
            if sweep {
                obs.warn("--batch-sweep: an ONNX model is lowered at one batch (use --batch)");
            }
            return Ok(vec![Target::onnx(path, statics, obs)?]);
        }
        if !statics.is_empty() {
            return Err(invalid(format!(
                "{}: --batch, --dim, --input-shape and --input-value apply to ONNX models; a \
                 StableHLO module's shapes are fixed (`tpuport lower` the ONNX model at other \
                 shapes)",
                path.display()
            )));
        }
        let whole = path.is_dir() || path.file_name().is_some_and(|n| n == lowered::MANIFEST);
        let parent = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !whole && !lowered::Manifest::is_in(parent) {
            let paths = if sweep { sweep_siblings(path) } else { vec![path.to_owned()] };
            return paths.iter().map(|p| Target::module(p, obs)).collect();
        }
        let art = Artifact::open(if whole { path } else { parent })?;
        let buckets: Vec<&Bucket> = if whole || sweep {
            art.manifest.buckets.iter().collect()
        } else {
            vec![art.bucket_of(path).ok_or_else(|| {
                invalid(format!(
                    "{}: not a module of the manifest in {}",
                    path.display(),
                    parent.display()
                ))
            })?]
        };
        buckets.into_iter().map(|b| Target::bucket(&art, b, obs)).collect()
    }

    /// Batch size of a run: the bucket's, else the module's data arguments' leading
    /// dimension ([`Module::data_batch`]).
    #[must_use]
    pub fn batch(&self) -> Option<u64> {
        if self.lowered.is_some() {
            return self.bucket_batch;
        }
        self.module.data_batch
    }

    /// What the caller provides, when known: the graph inputs of a bucket, the module's
    /// arguments otherwise.
    #[must_use]
    pub fn inputs(&self) -> Option<Vec<Slot>> {
        match &self.lowered {
            Some((b, _)) => Some(b.inputs()),
            None => self.module.args.as_ref().map(|a| a.iter().map(Param::slot).collect()),
        }
    }

    /// Binds the caller's tensors to [`Target::inputs`] (by `argN` or in order, unchecked, when
    /// the module has no readable signature) and completes the argument list with the weights; each
    /// argument comes with a label for messages (its source, or `weight NAME`).
    ///
    /// # Errors
    /// [`tpuport_formats::FormatError::Bind`] (for the set `set`) when the tensors do not fit.
    pub fn arguments(
        &self,
        mut entries: Vec<Entry>,
        set: &str,
    ) -> Result<Vec<(String, HostTensor)>> {
        let bind = |p| tpuport_formats::FormatError::bind(set, p);
        for (name, t) in &self.fixed {
            let given = entries.iter().find(|e| match &e.key {
                tpuport_formats::tensors::Key::Named(n)
                | tpuport_formats::tensors::Key::Hint(n) => n == name,
                tpuport_formats::tensors::Key::Position => false,
            });
            match given {
                // Bound from this very input at lowering time: the same value.
                Some(e) if self.from_given.contains(name) && e.tensor == *t => {}
                // The module is specialised to the fixed value: another value would run a
                // branch the module no longer has.
                Some(_) => {
                    return Err(invalid(format!(
                        "input `{name}` is given twice: --input-value fixes it at lowering time"
                    )));
                }
                None => entries.push(Entry {
                    key: tpuport_formats::tensors::Key::Named(name.clone()),
                    source: format!("--input-value {name}"),
                    tensor: t.clone(),
                }),
            }
        }
        let Some(slots) = self.inputs() else {
            // no signature (bytecode): `argN` names a position, the rest fill in order
            let names: Vec<String> = (0..entries.len()).map(|i| format!("arg{i}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let placed =
                tpuport_formats::tensors::assign(entries, &names, Role::Inputs).map_err(bind)?;
            return Ok(placed.slots.into_iter().flatten().map(|e| (e.source, e.tensor)).collect());
        };
        let bound = tpuport_formats::tensors::bind_entries(entries, &slots).map_err(bind)?;
        let Some((b, weights)) = &self.lowered else {
            return Ok(bound.into_iter().map(|e| (e.source, e.tensor)).collect());
        };
        let (labels, tensors): (Vec<String>, Vec<HostTensor>) =
            bound.into_iter().map(|e| (e.source, e.tensor)).unzip();
        let args = lowered::arguments(&b.args, tensors, weights).map_err(bind)?;
        let mut labels = labels.into_iter();
        Ok(b.args
            .iter()
            .zip(args)
            .map(|(a, t)| match &a.source {
                lowered::ArgSource::Input(_) => (labels.next().unwrap_or_default(), t),
                lowered::ArgSource::Weight(n) => (format!("weight {n}"), t),
            })
            .collect())
    }
}

/// Sibling batch buckets of `path`: the last `b<digits>` in the path replaced by every other
/// number for which a file exists (sorted by that number), else `path` alone.
#[must_use]
pub fn sweep_siblings(path: &Path) -> Vec<PathBuf> {
    let s = path.to_string_lossy().into_owned();
    let bytes = s.as_bytes();
    let mut at = None;
    for i in (0..bytes.len()).rev() {
        if bytes[i] == b'b'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        {
            at = Some(i + 1);
            break;
        }
    }
    let Some(start) = at else { return vec![path.to_owned()] };
    let end = start + bytes[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    let (prefix, suffix) = (&s[..start], &s[end..]);
    // The directory that holds the varying component.
    let comp_start = prefix.rfind('/').map_or(0, |i| i + 1);
    let parent =
        if comp_start == 0 { Path::new(".") } else { Path::new(&prefix[..comp_start - 1]) };
    let head = &prefix[comp_start..];
    let tail_end = suffix.find('/').unwrap_or(suffix.len());
    let (tail, rest) = suffix.split_at(tail_end);
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(parent) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(mid) = name.strip_prefix(head).and_then(|r| r.strip_suffix(tail)) else {
                continue;
            };
            let Ok(n) = mid.parse::<u64>() else { continue };
            let cand = PathBuf::from(format!("{}{name}{rest}", &prefix[..comp_start]));
            if cand.is_file() {
                found.push((n, cand));
            }
        }
    }
    found.sort();
    if found.is_empty() {
        vec![path.to_owned()]
    } else {
        found.into_iter().map(|(_, p)| p).collect()
    }
}
