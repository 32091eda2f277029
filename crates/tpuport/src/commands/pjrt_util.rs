//! Shared by the verbs that execute on a PJRT device (`run`, `bench`, `validate`): the runtime
//! flags, `--input [NAME=]FILE` specs as binder entries, binding problems worded for those
//! flags, and the printer as the pipelines' observer.

use std::path::{Path, PathBuf};

use clap::Args;
use tpuport_exec::{ExecError, RuntimeOptions, Target};
use tpuport_formats::FormatError;
use tpuport_formats::tensors::{BindProblem, Entry, Key, Role, Slot};

use crate::printer::Printer;

/// Options shared by the verbs that execute on a PJRT device.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// PJRT plugin library (default: $TPUPORT_PJRT_PLUGIN, then libtpu, the CUDA plugin, the
    /// CPU plugin in the project's .venv).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Devices for the CPU plugin's client (default: the module's partition count, else 1).
    #[arg(long, value_name = "N")]
    pub(crate) devices: Option<u32>,
    /// Compile every time instead of using the executable cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
}

impl RuntimeArgs {
    pub(crate) fn options(&self) -> RuntimeOptions {
        RuntimeOptions {
            plugin: self.plugin.clone(),
            devices: self.devices,
            no_cache: self.no_cache,
        }
    }
}

impl tpuport_exec::Observer for Printer {
    fn info(&self, msg: &str) {
        Printer::info(self, msg);
    }

    fn note(&self, msg: &str) {
        Printer::note(self, &format!("note: {msg}"));
    }

    fn warn(&self, msg: &str) {
        Printer::warn(self, msg);
    }
}

/// `--input` values: `NAME=FILE` (NAME: an argument's name, `argN` or `N`) unless a file of
/// that whole name exists, else positional `FILE`; each `.npy` read once its name is known to
/// name an input of `target`.
pub(crate) fn input_entries(specs: &[String], target: &Target) -> anyhow::Result<Vec<Entry>> {
    let slots = target.inputs();
    specs
        .iter()
        .map(|spec| {
            let (key, file) = match spec.split_once('=') {
                Some((name, file)) if !Path::new(spec).exists() => {
                    (Key::Named(name.to_owned()), file)
                }
                _ => (Key::Position, spec.as_str()),
            };
            if let (Key::Named(name), Some(slots)) = (&key, &slots) {
                let names: Vec<&str> = slots.iter().map(|s| s.name.as_str()).collect();
                if tpuport_formats::tensors::resolve(&names, name, Role::Inputs).is_none() {
                    let p =
                        BindProblem::UnknownName { name: name.clone(), source: file.to_owned() };
                    anyhow::bail!(input_problem(target, &p));
                }
            }
            let tensor = tpuport_formats::npy::read_npy(Path::new(file))?;
            Ok(Entry { key, source: file.to_owned(), tensor })
        })
        .collect()
}

/// Binds `--input` entries to a target, wording binding problems for the flag.
pub(crate) fn bind_inputs(
    target: &Target,
    entries: Vec<Entry>,
) -> anyhow::Result<Vec<(String, tpuport_model::HostTensor)>> {
    target.arguments(entries, "--input").map_err(|e| match e {
        ExecError::Format(FormatError::Bind { problem, .. }) => {
            anyhow::anyhow!(input_problem(target, &problem))
        }
        e => e.into(),
    })
}

fn input_problem(target: &Target, p: &BindProblem) -> String {
    let module = target.module.path.display();
    let slots = target.inputs().unwrap_or_default();
    let label = |i: usize, s: &Slot| format!("{} (arg{i})", s.name);
    match p {
        BindProblem::UnknownName { name, source } => {
            let names: Vec<String> = slots.iter().enumerate().map(|(i, s)| label(i, s)).collect();
            format!(
                "--input {name}={source}: {module} has no argument named {name:?}; arguments: {}",
                names.join(", ")
            )
        }
        BindProblem::Twice { name, .. } => format!("--input: argument {name} given twice"),
        BindProblem::LeftOver { source, .. } => {
            format!("--input {source}: more inputs than {module} takes")
        }
        BindProblem::Missing(missing) => {
            let names: Vec<String> = missing.iter().map(|(i, s)| label(*i, s)).collect();
            format!("{module}: no --input for {}", names.join(", "))
        }
        BindProblem::Mismatch { source, index, slot, dtype, shape } => {
            let dims: Vec<String> =
                slot.dims.iter().map(|d| d.map_or_else(|| "?".into(), |v| v.to_string())).collect();
            format!(
                "input {} (argument {index}): expected {}[{}], got {dtype}{shape:?} from {source}",
                slot.name,
                slot.dtype,
                dims.join(",")
            )
        }
        p => format!("--input: {p}"),
    }
}
