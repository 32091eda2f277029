//! `tpuport inspect MODEL`: what was read — format, producer, signature, op histogram,
//! parameters by dtype, largest tensors, duplicates, and why the file's parameter count may
//! differ from the framework's. JSON schema: `docs/inspect.md`; the text form is
//! `tpuport_report::inspect`.

use std::path::PathBuf;

use clap::Args;
use tpuport_analysis::inventory::{self, InventoryOptions};
use tpuport_model::{NoteLevel, Shape};

use crate::cli::GlobalArgs;
use crate::commands::{ImportArgs, RoleArgs, Status};
use crate::printer::Printer;

/// Arguments of `tpuport inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// Model, checkpoint or tensor file (.onnx, .mlir, .mlirbc, .safetensors, index.json, .pt,
    /// .npy, .npz).
    pub(crate) model: PathBuf,
    #[command(flatten)]
    pub(crate) import: ImportArgs,
    #[command(flatten)]
    pub(crate) roles: RoleArgs,
    /// Number of largest tensors to list.
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// Skip the duplicate-tensor scan (it samples every weight of a graph format).
    #[arg(long)]
    pub(crate) no_dedup: bool,
}

/// `--input-shape NAME=DIMS`, shared by the verbs that bind input shapes.
pub(crate) fn parse_input_shape(s: &str) -> Result<(String, Shape), String> {
    let (name, dims) = s.split_once('=').ok_or("expected NAME=DIMS, e.g. x=1x3x224x224")?;
    if name.is_empty() {
        return Err("empty input name".into());
    }
    Ok((name.to_owned(), Shape::parse_dims(dims)))
}

/// `--dim NAME=N`, shared by the verbs that bind symbolic dimensions.
pub(crate) fn parse_dim(s: &str) -> Result<(String, u64), String> {
    let (name, n) = s.split_once('=').ok_or("expected NAME=N, e.g. sequence=128")?;
    let n = n.parse::<u64>().map_err(|e| format!("`{n}`: {e}"))?;
    Ok((name.to_owned(), n))
}

pub(crate) fn run(a: &InspectArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let imported = a.import.open(&a.model)?;
    let roles = if a.roles.data_args.is_empty() {
        None
    } else {
        Some(a.roles.roles(&a.model, &imported.model)?)
    };
    let inv = inventory::inventory(
        &a.model.display().to_string(),
        &imported.model,
        &InventoryOptions { top: a.top, find_duplicates: !a.no_dedup, roles },
    );
    a.import
        .finish(p, g, &imported, &inv, || tpuport_report::inspect::render_text(&inv, p.paint()))?;
    // A StableHLO module's shapes are static: nothing binds `--batch` / `--dim` (audit
    // scales `--batch` and reports `--dim`; inspect reads the module as it is).
    if matches!(
        imported.model.format,
        tpuport_model::ModelFormat::StablehloText | tpuport_model::ModelFormat::StablehloBytecode
    ) {
        let given: Vec<String> = a
            .import
            .shapes
            .batch
            .map(|b| format!("--batch {b}"))
            .into_iter()
            .chain(a.import.shapes.dims.iter().map(|(n, v)| format!("--dim {n}={v}")))
            .collect();
        if !given.is_empty() {
            p.warn(&format!(
                "{}: {} not applied: a StableHLO module's shapes are static (re-export it at the shape you want)",
                a.model.display(),
                given.join(", ")
            ));
        }
    }
    for n in &inv.notes {
        if n.level >= NoteLevel::Warning {
            p.warn(&format!("{} [{}]", n.message, n.code));
        }
    }
    Ok(Status::Success)
}
