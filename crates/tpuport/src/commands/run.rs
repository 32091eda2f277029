//! `tpuport run MODEL --input name=x.npy … --out DIR`: execute a StableHLO module (a bucket of a
//! `tpuport lower` folder, chosen by the inputs' shapes, or an ONNX model lowered first) on a
//! PJRT device and write its outputs as `.npy`. The pipeline is `tpuport_exec::run`.

use std::path::PathBuf;

use clap::Args;
use tpuport_exec::Target;

use crate::cli::GlobalArgs;
use crate::commands::pjrt_util::{RuntimeArgs, bind_inputs, input_entries};
use crate::commands::{StaticArgs, Status};
use crate::printer::Printer;

/// Arguments of `tpuport run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// StableHLO module: MLIR text (`.mlir`) or bytecode (`.mlirbc`, a `jax.export` artifact),
    /// a `tpuport lower` output folder (the bucket whose input shapes fit is run, with the
    /// folder's weights), or an ONNX model (lowered first, at the shapes --batch, --dim and
    /// --input-shape bind).
    pub(crate) model: PathBuf,
    /// An input as `NAME=FILE.npy` (NAME: the argument's name or `argN`) or `FILE.npy`
    /// (positional, in argument order). Repeat per argument.
    #[arg(long = "input", short = 'i', value_name = "[NAME=]FILE")]
    pub(crate) inputs: Vec<String>,
    /// Directory for the outputs (`out0.npy`, `out1.npy`, …).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    #[command(flatten)]
    pub(crate) statics: StaticArgs,
    #[command(flatten)]
    pub(crate) runtime: RuntimeArgs,
}

pub(crate) fn run(a: &RunArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let mut statics = a.statics.statics()?;
    if Target::is_onnx(&a.model) {
        // An ONNX model is lowered at the shapes of its named input files (as `validate
        // --inputs` does), unless --input-shape says otherwise, and a branch on one of them
        // takes its value from the file.
        statics.given = named_inputs(&a.inputs)?;
        for (name, t) in &statics.given {
            if !statics.input_shapes.iter().any(|(n, _)| n == name) {
                statics.input_shapes.push((name.clone(), tpuport_model::Shape::fixed(&t.shape)));
            }
        }
    }
    let targets = Target::resolve_with(&a.model, false, &statics, p)?;
    let Some(first) = targets.first() else {
        anyhow::bail!("{}: nothing to run", a.model.display());
    };
    let entries = input_entries(&a.inputs, first)?;
    // The first target (bucket) the inputs fit; the first one's problem when none does.
    let mut first_err = None;
    let mut chosen = None;
    for target in targets {
        match bind_inputs(&target, entries.clone()) {
            Ok(args) => {
                chosen = Some((target, args));
                break;
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let Some((target, args)) = chosen else {
        return Err(
            first_err.unwrap_or_else(|| anyhow::anyhow!("{}: nothing to run", a.model.display()))
        );
    };
    let rt = target.module.open_runtime(&a.runtime.options(), p)?;
    let report = tpuport_exec::run::run(&target, &args, &rt, &a.out, p)?;
    super::emit_report(p, g.format, &report, || tpuport_report::run::render(&report))?;
    Ok(Status::Success)
}

/// The `--input NAME=FILE` tensors, for an ONNX model whose lowering may branch on one of them
/// (`tpuport_exec::Statics::given`).
fn named_inputs(specs: &[String]) -> anyhow::Result<Vec<(String, tpuport_model::HostTensor)>> {
    specs
        .iter()
        .filter(|spec| !std::path::Path::new(spec).exists())
        .filter_map(|spec| spec.split_once('='))
        .map(|(name, file)| {
            let t = tpuport_formats::npy::read_npy(std::path::Path::new(file))?;
            Ok((name.to_owned(), t))
        })
        .collect()
}
