//! `tpuport port`: rewrite Python scripts for torch_xla, TF `TPUStrategy` or JAX sharding.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tpuport_lint::files::{collect_python_files, read_source};
use tpuport_lint::port::{PortOptions, Target, port_source_with};
use tpuport_lint::render::{display_path, unified_diff};
use tpuport_lint::{error_chain, write_atomic};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Port target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum PortTarget {
    /// PyTorch → PyTorch/XLA.
    TorchXla,
    /// TensorFlow/Keras → TPUStrategy.
    TfTpu,
    /// JAX pmap / experimental APIs → jit with NamedSharding, jax.shard_map.
    Jax,
}

/// Arguments of `tpuport port`.
#[derive(Debug, Args)]
pub(crate) struct PortArgs {
    /// Files or folders to port.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Target stack.
    #[arg(long, value_enum)]
    pub(crate) to: PortTarget,
    /// Print a unified diff (the default).
    #[arg(long, conflicts_with = "write")]
    pub(crate) diff: bool,
    /// Rewrite the files in place (atomically).
    #[arg(long)]
    pub(crate) write: bool,
    /// Also apply the fixes of preview rules.
    #[arg(long)]
    pub(crate) preview: bool,
}

pub(crate) fn run(a: &PortArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let target = match a.to {
        PortTarget::TorchXla => Target::TorchXla,
        PortTarget::TfTpu => Target::TfTpu,
        PortTarget::Jax => Target::Jax,
    };
    let mut failed = false;
    let mut manual_total = 0usize;
    let mut json_files = Vec::new();
    for entry in collect_python_files(&a.paths) {
        let path = match entry {
            Ok(path) => path,
            Err(e) => {
                failed = true;
                p.warn(&error_chain(&e));
                continue;
            }
        };
        let name = display_path(&path);
        let source = match read_source(&path) {
            Ok(s) => s,
            Err(e) => {
                failed = true;
                p.warn(&error_chain(&e));
                continue;
            }
        };
        let result = match port_source_with(&source, target, PortOptions { preview: a.preview }) {
            Ok(r) => r,
            Err(e) => {
                failed = true;
                p.warn(&format!("{name}: cannot parse: {e}"));
                continue;
            }
        };
        manual_total += result.manual.len();
        let changed = result.output != source;
        if a.write
            && changed
            && let Err(e) = write_atomic(&path, &result.output)
        {
            failed = true;
            p.warn(&error_chain(&e));
            continue;
        }
        match g.format {
            Format::Json | Format::Sarif => json_files.push(serde_json::json!({
                "filename": name,
                "target": target.name(),
                "changed": changed,
                "written": a.write && changed,
                "changes": result.changes,
                "passes": result.passes,
                "manual": result.manual,
                "diff": if a.write { None } else { Some(unified_diff(&source, &result.output, &path)) },
            })),
            Format::Text => {
                if !a.write && changed {
                    p.data(&unified_diff(&source, &result.output, &path));
                }
                if a.write && changed {
                    p.info(&format!("{name}: {} change(s) written", result.changes.len()));
                }
                for c in &result.changes {
                    p.info(&format!("{name}:{}: {}", c.line, c.description));
                }
                for m in &result.manual {
                    p.warn(&format!("{name}:{}:{}: manual step: {} {}", m.line, m.column, m.code, m.message));
                }
            }
        }
    }
    if matches!(g.format, Format::Json | Format::Sarif) {
        let doc = serde_json::json!({ "version": 1, "tool": "tpuport", "files": json_files });
        p.json(&doc)?;
    }
    if failed {
        return Ok(Status::Failure);
    }
    Ok(if manual_total > 0 { Status::Findings } else { Status::Success })
}
