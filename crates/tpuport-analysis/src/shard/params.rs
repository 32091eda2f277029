//! What the planner shards: a model's parameters, and for a StableHLO training step the
//! optimizer-state arguments that belong to each (placed like their parameter, not counted as
//! parameters).
//!
//! - A StableHLO module with its weights as arguments: the weight and state arguments by the
//!   argument-role rules ([`crate::roles`]); for a training step the optimizer's moments are
//!   told apart by [`super::step::split`]. The module's shapes are fixed, so its data
//!   arguments also give the plan's batch and sequence.
//! - Anything else (ONNX, safetensors, a checkpoint): the stored float tensors that are not
//!   scalars. Tied tensors (a `.pt` state dict names GPT-2's `lm_head.weight` and
//!   `wte.weight` over one storage) are one parameter: the first name is kept.

use std::collections::HashSet;

use tpuport_model::{DType, Model, ModelFormat, WeightData};

use super::{ParamInfo, StateOf, graph_paths, step};
use crate::roles::{self, Role, RoleOptions, UnknownArgument};
use crate::workload::{Optimizer, Workload};

/// A model's parameters, with a training step's optimizer state.
#[derive(Clone, Debug, Default)]
pub struct ModelParams {
    /// The parameters to shard.
    pub params: Vec<ParamInfo>,
    /// A training step's optimizer-state arguments, each with its parameter.
    pub state: Vec<StateOf>,
    /// How the state was told apart (`names`, `repetition`).
    pub state_by: Option<&'static str>,
    /// A StableHLO module's batch, read off its data arguments.
    pub fixed_batch: Option<u64>,
    /// A StableHLO module's sequence length, read off its data arguments.
    pub fixed_seq: Option<u64>,
}

/// Whether `model` is a StableHLO module carrying its weights as arguments (its parameters
/// come from the argument roles).
#[must_use]
pub fn weights_are_arguments(model: &Model) -> bool {
    matches!(model.format, ModelFormat::StablehloText | ModelFormat::StablehloBytecode)
        && model.weights.is_empty()
}

/// The parameters of `model` for a `workload` trained with `optimizer`.
///
/// # Errors
/// A `roles.data_args` entry that names no argument of the module.
pub fn model_params(
    model: &Model,
    roles: &RoleOptions,
    workload: Workload,
    optimizer: Optimizer,
) -> Result<ModelParams, UnknownArgument> {
    if weights_are_arguments(model) {
        return argument_params(model, roles, workload, optimizer);
    }
    let mut seen = HashSet::new();
    let mut paths = graph_paths::graph_paths(model);
    let lookups = graph_paths::lookup_only(model);
    let params = model
        .weights
        .iter()
        .filter(|w| w.dtype.is_float())
        // Scalars are constants, not parameters to shard. (torch.onnx's dynamo `val_N`
        // initializers are kept: some are transposed Linear weights; they are placed by shape.)
        .filter(|w| !w.shape.is_empty())
        .filter(|w| match &w.data {
            WeightData::Mapped { path, offset, len, .. }
            | WeightData::File { path, offset, len } => {
                seen.insert((path.clone(), *offset, *len, w.shape.clone()))
            }
            _ => true,
        })
        .map(|w| ParamInfo {
            name: w.name.clone(),
            shape: w.shape.clone(),
            dtype: w.dtype,
            graph_path: paths.remove(&w.name),
            lookup_only: lookups.contains(&w.name),
        })
        .collect();
    Ok(ModelParams { params, ..ModelParams::default() })
}

/// A StableHLO module's weight and state arguments; for a training step, less the
/// optimizer's moments.
fn argument_params(
    model: &Model,
    roles: &RoleOptions,
    workload: Workload,
    optimizer: Optimizer,
) -> Result<ModelParams, UnknownArgument> {
    let roles = roles::assign(model, roles)?;
    let args: Vec<ParamInfo> = roles
        .args
        .iter()
        .filter(|r| r.role != Role::Data)
        .filter_map(|r| {
            let dtype = DType::from_mlir(&r.dtype).or_else(|| DType::from_name(&r.dtype))?;
            Some(ParamInfo {
                name: r.label().to_owned(),
                shape: r.shape.clone()?,
                dtype,
                graph_path: None,
                lookup_only: false,
            })
        })
        .collect();
    let fixed = ModelParams {
        fixed_batch: roles.batch,
        fixed_seq: roles.sequence,
        ..ModelParams::default()
    };
    if !workload.is_training() {
        return Ok(ModelParams { params: args, ..fixed });
    }
    let named: Vec<(String, Vec<u64>)> =
        args.iter().map(|p| (p.name.clone(), p.shape.clone())).collect();
    let copies = usize::try_from(optimizer.full_state_slots()).unwrap_or(0);
    let split = step::split(&named, copies);
    let state = split
        .state
        .iter()
        .map(|&(s, p)| StateOf { name: args[s].name.clone(), param: args[p].name.clone() })
        .collect();
    let params = split.params.iter().map(|&i| args[i].clone()).collect();
    Ok(ModelParams { params, state, state_by: split.by, ..fixed })
}
