//! `tpuport deploy MODEL_OR_REPO --gke --slice S --serve|--batch|--train -o DIR`: Kubernetes
//! manifests for a GKE TPU slice, after the audit says the model fits it. Parses flags, finds
//! the programs to check, calls `tpuport-deploy`, writes the files atomically. A model that is
//! not in a repository (a `tpuport lower` folder, a StableHLO module with its weights, an ONNX
//! file) gets the repository entry it is deployed as, written under `DIR/repository/`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tpuport_analysis::Workload as AuditWorkload;
use tpuport_deploy::fit::{self, FitVerdict};
use tpuport_deploy::gke::{self, Placement};
use tpuport_deploy::manifest::{self, BatchSpec, DeploySpec, ServeSpec, TrainSpec, Workload};
use tpuport_exec::config::{self, CONFIG_FILE, ModelConfig, ModelSource};
use tpuport_exec::{EntryDraft, OpenOptions, Repository};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// JSON schema id of `--format json`.
const SCHEMA: &str = "tpuport.deploy/1";

/// Arguments of `tpuport deploy`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["serve", "batch", "train"])))]
pub(crate) struct DeployArgs {
    /// A model repository (`tpuport serve`'s layout), one model folder with `config.toml`, a
    /// `tpuport lower` folder, or a model file (ONNX, StableHLO with its weights next to it).
    /// For `--serve` (and `--batch` of a lower folder) a model not in a repository gets its
    /// repository entry written under `OUTPUT/repository/`.
    pub(crate) model: PathBuf,
    /// Emit Kubernetes manifests for Google Kubernetes Engine (the only target so far).
    #[arg(long, required = true)]
    pub(crate) gke: bool,
    /// TPU slice, e.g. `v5e-1`, `v5e-8`, `v5e-16`, `v5p-8`, `v6e-2x4`.
    #[arg(long)]
    pub(crate) slice: String,
    /// Serve the repository with `tpuport serve` (Deployment or LeaderWorkerSet, Service,
    /// PodDisruptionBudget, PodMonitoring, HorizontalPodAutoscaler).
    #[arg(long)]
    pub(crate) serve: bool,
    /// Run `tpuport batch` over a dataset as an Indexed Job, one shard per completion index.
    #[arg(long)]
    pub(crate) batch: bool,
    /// Run a training command on every host of the slice (JobSet).
    #[arg(long)]
    pub(crate) train: bool,
    /// Output folder for the manifests (created).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub(crate) output: PathBuf,
    /// Resource name (default: from the model's file or folder name).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Namespace written into the manifests.
    #[arg(long)]
    pub(crate) namespace: Option<String>,
    /// Container image with `tpuport` on PATH and libtpu installed.
    #[arg(long, default_value = concat!("tpuport:", env!("CARGO_PKG_VERSION")))]
    pub(crate) image: String,
    /// PersistentVolumeClaim holding the model repository or model (default: NAME-models).
    #[arg(long, value_name = "PVC")]
    pub(crate) models_pvc: Option<String>,
    /// Batch size the fit is checked at (default: the largest bucket, else the model's own).
    #[arg(long, value_name = "N")]
    pub(crate) batch_size: Option<u64>,
    /// Buckets of the entry written for an ONNX file (default 8).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub(crate) buckets: Vec<u64>,
    /// Serve: replicas (slices) at least.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) min_replicas: u32,
    /// Serve: replicas at most.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub(crate) max_replicas: u32,
    /// Serve: queued requests per replica the autoscaler aims for (`tpuport_queue_depth`).
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub(crate) queue_target: u32,
    /// Serve: port for REST, gRPC and /metrics.
    #[arg(long, default_value_t = 8000)]
    pub(crate) port: u16,
    /// Serve: seconds queued requests get after SIGTERM (serve's --drain-timeout); the pods'
    /// termination grace period is this plus 15 s.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) drain_timeout: u64,
    /// Batch: input inside the data volume.
    #[arg(long, value_name = "PATH", default_value = "input")]
    pub(crate) input: String,
    /// Batch: output folder inside the data volume.
    #[arg(long = "batch-output", value_name = "PATH", default_value = "output")]
    pub(crate) batch_output: String,
    /// Batch: PersistentVolumeClaim with the dataset (default: NAME-data).
    #[arg(long, value_name = "PVC")]
    pub(crate) data_pvc: Option<String>,
    /// Batch: shards (Job completions).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) shards: u32,
    /// Batch: shards running at once (default: all).
    #[arg(long, value_name = "N")]
    pub(crate) parallelism: Option<u32>,
    /// Train: the command every host runs, split on spaces.
    #[arg(long, default_value = "python3 train.py", value_name = "CMD")]
    pub(crate) train_command: String,
    /// Train: slices (more than one is multislice over DCN).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) slices: u32,
}

/// One file written.
#[derive(Debug, Serialize)]
struct Written {
    path: String,
    #[serde(flatten)]
    manifest: manifest::Manifest,
}

/// `--format json`.
#[derive(Debug, Serialize)]
struct Report {
    schema: &'static str,
    mode: &'static str,
    placement: Placement,
    fit: Vec<FitVerdict>,
    files: Vec<Written>,
    /// The repository entry written for a model that was not in one.
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<EntryWritten>,
}

/// `DIR/repository/MODEL/`: the entry written, and its files.
#[derive(Debug, Serialize)]
struct EntryWritten {
    path: String,
    model: String,
    files: Vec<String>,
}

/// A program to check for fit: the file, and the batch its figures are for.
struct Program {
    path: PathBuf,
    batch: Option<u64>,
    /// The model's name in a repository.
    model: Option<String>,
}

pub(crate) fn run(a: &DeployArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let catalog = crate::commands::catalog::load(None)?;
    let slice = catalog.slice(&a.slice)?;
    let placement = gke::placement(&a.slice, &slice)?;
    let (mode, workload) = if a.serve {
        ("serve", AuditWorkload::Infer)
    } else if a.batch {
        ("batch", AuditWorkload::Infer)
    } else {
        ("train", AuditWorkload::Train)
    };
    if a.serve && config::is_entry(&a.model) {
        bail!(
            "{}: --serve needs a model repository (a folder of model folders, each with a config.toml), as `tpuport serve` does",
            a.model.display()
        );
    }
    let draft = drafted(a)?;
    let programs = match &draft {
        Some(d) => {
            vec![program_of(&d.config, a.batch_size, Some(&d.name), &|r| Ok(d.base.join(r)))?]
        }
        None => programs(&a.model, a.batch_size)?,
    };
    let mut fits = Vec::new();
    for prog in &programs {
        let model = tpuport_formats::open(
            &prog.path,
            &tpuport_formats::ImportOptions {
                batch: prog.batch,
                ..tpuport_formats::ImportOptions::default()
            },
        )
        .with_context(|| format!("checking the fit of {}", prog.path.display()))?;
        let shown = prog.path.display().to_string();
        let verdict = fit::check(&model, &shown, &catalog, &a.slice, &slice, workload, prog.batch)?;
        verdict.require(&shown)?;
        fits.push(verdict);
    }
    // Models of one repository share every chip: their weights add up.
    fit::require_together(&fits, &a.model.display().to_string(), &a.slice)?;
    let name = match &a.name {
        Some(n) => n.clone(),
        None => {
            let stem = if a.model.is_file() { a.model.file_stem() } else { a.model.file_name() };
            manifest::name_from(&stem.map(|s| s.to_string_lossy()).unwrap_or_default())
        }
    };
    let spec = DeploySpec {
        models_pvc: a.models_pvc.clone().unwrap_or_else(|| format!("{name}-models")),
        name: name.clone(),
        namespace: a.namespace.clone(),
        image: a.image.clone(),
        placement: placement.clone(),
        workload: if a.serve {
            let models: Vec<String> = Vec::new();
            let named: Vec<&String> = programs.iter().filter_map(|p| p.model.as_ref()).collect();
            Workload::Serve(ServeSpec {
                models,
                port: a.port,
                drain_timeout_s: a.drain_timeout,
                min_replicas: a.min_replicas,
                max_replicas: a.max_replicas,
                queue_target: a.queue_target,
                hpa_model: if named.len() == 1 {
                    named.first().map(|s| (*s).clone())
                } else {
                    None
                },
            })
        } else if a.batch {
            Workload::Batch(BatchSpec {
                model: match &draft {
                    Some(d) => d.name.clone(),
                    None => batch_model_path(&a.model, &programs)?,
                },
                input: a.input.clone(),
                output: a.batch_output.clone(),
                data_pvc: a.data_pvc.clone().unwrap_or_else(|| format!("{name}-data")),
                shards: a.shards,
                parallelism: a.parallelism.unwrap_or(a.shards),
                retries_per_shard: 2,
            })
        } else {
            Workload::Train(TrainSpec {
                command: a.train_command.split_whitespace().map(str::to_owned).collect(),
                slices: a.slices,
            })
        },
    };
    let docs = manifest::manifests(&spec)?;
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let mut files = Vec::new();
    for m in docs {
        let path = a.output.join(&m.file);
        tpuport_model::fs::write_atomic_bytes(&path, m.yaml().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        files.push(Written { path: path.display().to_string(), manifest: m });
    }
    let repository = match &draft {
        Some(d) => {
            let dir = a.output.join("repository").join(&d.name);
            let written = d.write(&dir, &a.model)?;
            let files = written.iter().map(|f| f.display().to_string()).collect();
            Some(EntryWritten { path: dir.display().to_string(), model: d.name.clone(), files })
        }
        None => None,
    };
    let report = Report { schema: SCHEMA, mode, placement, fit: fits, files, repository };
    match g.format {
        Format::Json => p.json(&report)?,
        Format::Text => {
            let mut s = String::new();
            for f in &report.fit {
                s.push_str(&format!(
                    "fit: {} for {} on {} at batch {}: {}\n",
                    f.path, f.workload, f.slice, f.batch, f.fit
                ));
            }
            for w in &report.files {
                s.push_str(&format!(
                    "wrote {} ({} {})\n",
                    w.path, w.manifest.kind, w.manifest.name
                ));
            }
            if let Some(r) = &report.repository {
                s.push_str(&format!(
                    "wrote {} (model-repository entry `{}`, {} files): copy {} into the volume {}\n",
                    r.path,
                    r.model,
                    r.files.len(),
                    a.output.join("repository").display(),
                    spec.models_pvc
                ));
            }
            p.data(&s);
        }
        Format::Sarif => bail!("--format sarif is only supported by `tpuport check`"),
    }
    Ok(Status::Success)
}

/// The programs whose fit decides: every model of a repository (its largest bucket), one
/// model folder, or one file. A model folder's paths are confined as `tpuport serve` confines
/// them ([`Repository::confine`]); a lone model folder is its own repository, as it is the
/// volume's root in the manifests.
fn programs(path: &Path, batch: Option<u64>) -> anyhow::Result<Vec<Program>> {
    if path.is_file() {
        return Ok(vec![Program { path: path.to_path_buf(), batch, model: None }]);
    }
    if !path.is_dir() {
        bail!("{}: no such file or folder", path.display());
    }
    let repo = Repository::open(path)?;
    if config::is_entry(path) {
        return Ok(vec![entry(&repo, repo.root(), path, batch)?]);
    }
    let names = repo.model_names()?;
    if names.is_empty() {
        bail!(
            "{}: neither a model file nor a model repository (no folder with a config.toml)",
            path.display()
        );
    }
    names.iter().map(|n| entry(&repo, &repo.model_dir(n)?, &path.join(n), batch)).collect()
}

/// One repository entry (`dir`: as the user named it, shown; `real`: confined).
fn entry(
    repo: &Repository,
    real: &Path,
    dir: &Path,
    batch: Option<u64>,
) -> anyhow::Result<Program> {
    repo.confine(real, CONFIG_FILE)?;
    let cfg = ModelConfig::read(&dir.join(CONFIG_FILE))?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    program_of(&cfg, batch, name.as_ref(), &|rel| {
        repo.confine(real, &rel.to_string_lossy())?;
        Ok(dir.join(rel))
    })
}

/// The program whose fit decides for a model config: the module of its largest bucket (or the
/// ONNX file at that batch). `inside` resolves a path the config names (confined).
fn program_of(
    cfg: &ModelConfig,
    batch: Option<u64>,
    name: Option<&String>,
    inside: &dyn Fn(&Path) -> anyhow::Result<PathBuf>,
) -> anyhow::Result<Program> {
    let largest = cfg.batching.buckets.iter().copied().max();
    let (path, bucket) = match &cfg.model {
        ModelSource::Onnx { path } => (inside(Path::new(path))?, batch.or(largest)),
        ModelSource::Stablehlo { modules, .. } => {
            let (size, module) = modules
                .iter()
                .filter_map(|(k, v)| k.parse::<u64>().ok().map(|n| (n, v)))
                .max_by_key(|(n, _)| *n)
                .context("no module")?;
            (inside(Path::new(module))?, batch.or(Some(size)))
        }
        ModelSource::Lowered { path } => {
            let folder = inside(Path::new(path))?;
            let art = tpuport_formats::lowered::Artifact::open(&folder)?;
            let b = art
                .manifest
                .buckets
                .iter()
                .max_by_key(|b| b.batch)
                .with_context(|| format!("{}: no bucket", folder.display()))?;
            (inside(&Path::new(path).join(&b.module))?, batch.or(b.batch))
        }
    };
    // A StableHLO module's shapes are fixed: its batch is what the file says.
    let fixed = !matches!(cfg.model, ModelSource::Onnx { .. });
    Ok(Program { path, batch: if fixed { batch } else { bucket }, model: name.cloned() })
}

/// The repository entry to write for `--serve` of a model that is not in a repository and
/// `--batch` of a `tpuport lower` folder (`--batch` runs a file as it is).
fn drafted(a: &DeployArgs) -> anyhow::Result<Option<EntryDraft>> {
    let lowered = !config::is_entry(&a.model) && a.model.join("manifest.json").is_file();
    if !((a.serve && (a.model.is_file() || lowered)) || (a.batch && lowered)) {
        return Ok(None);
    }
    let opts = OpenOptions { buckets: a.buckets.clone(), ..OpenOptions::default() };
    Ok(Some(tpuport_exec::draft_entry(&a.model, &opts)?))
}

/// For `--batch`: the model inside the models volume, which holds what MODEL names: a
/// repository with one model (its folder), one model folder (the volume root), or a file.
fn batch_model_path(model: &Path, programs: &[Program]) -> anyhow::Result<String> {
    if model.is_file() {
        return model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .context("the model path has no file name");
    }
    if config::is_entry(model) {
        return Ok(".".to_owned());
    }
    match programs {
        [one] => one.model.clone().context("no model name"),
        _ => bail!(
            "{}: --batch runs one model; this repository has {} (name the model's folder)",
            model.display(),
            programs.len()
        ),
    }
}
