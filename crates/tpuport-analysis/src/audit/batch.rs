//! The batch the audit's figures are for, and the `--dim` bindings a static module cannot take.
//!
//! When a model takes its weights as arguments (StableHLO, or a graph without stored weights
//! that is not ONNX), the argument roles say which arguments are data, and the data arguments'
//! leading dimension is the batch the module's shapes hold. Otherwise `--batch` bound a
//! symbolic leading dimension at import, or the first static input gives it.

use std::collections::HashSet;

use tpuport_model::{Dim, Model, ModelFormat, ValueId, ValueKind};

use super::{AuditOptions, DimNotApplied};
use crate::roles::{ArgRoles, Role};

/// How a model holds its weights.
#[derive(Clone, Copy, Debug)]
pub(super) struct Holding {
    /// A StableHLO module.
    pub(super) stablehlo: bool,
    /// An ONNX graph.
    pub(super) onnx: bool,
    /// Weights passed as arguments: StableHLO, or a graph without stored weights that is not
    /// ONNX (an ONNX model without initializers keeps its coefficients in attributes:
    /// LinearClassifier, TreeEnsemble; its inputs are data all the same).
    pub(super) by_args: bool,
}

impl Holding {
    pub(super) fn of(model: &Model) -> Holding {
        let stablehlo =
            matches!(model.format, ModelFormat::StablehloText | ModelFormat::StablehloBytecode);
        let onnx = model.format == ModelFormat::Onnx;
        let by_args = stablehlo
            || (!onnx
                && !model.graph.values.iter().any(|v| matches!(v.kind, ValueKind::Weight(_))));
        Holding { stablehlo, onnx, by_args }
    }

    /// The arguments that stay resident on the device (weights and state passed as arguments).
    pub(super) fn resident(self, roles: &ArgRoles) -> HashSet<ValueId> {
        if self.by_args {
            roles.args.iter().filter(|a| a.role != Role::Data).map(|a| a.id).collect()
        } else {
            HashSet::new()
        }
    }
}

/// The batch the shapes hold: the data arguments' leading dim when weights are arguments.
pub(super) fn module_batch(
    model: &Model,
    opts: &AuditOptions,
    roles: &ArgRoles,
    holding: Holding,
    param_names: &[String],
) -> u64 {
    if holding.by_args {
        return roles.batch.unwrap_or(1).max(1);
    }
    // `--batch` binds a symbolic leading dim at import; an input static at another batch
    // keeps its own (the figures are then scaled, and the note says so). Other dims may
    // stay symbolic (a sequence not bound).
    let leading: Vec<Option<u64>> = model
        .graph
        .inputs
        .iter()
        .filter_map(|i| model.graph.value(*i).ty.shape.as_ref()?.0.first().map(Dim::known))
        .collect();
    match opts.batch {
        Some(b) if leading.contains(&Some(b)) || leading.iter().all(Option::is_none) => b,
        Some(_) => leading.iter().flatten().next().copied().unwrap_or(1).max(1),
        None => detect_batch(model, param_names),
    }
}

/// Names `--dim` may give the sequence length of token inputs.
const SEQUENCE_NAMES: &[&str] =
    &["sequence", "seq", "seq_len", "seqlen", "sequence_length", "seq_length", "tokens"];

/// The `--dim` bindings of a StableHLO module (whose shapes are static) with the note for each:
/// the sequence is known from the roles (dim 1 of the token ids) but cannot be re-lowered, and
/// is not scaled (attention grows faster than linearly with it); other names bind nothing.
pub(super) fn static_dims(
    dims: &[(String, u64)],
    roles: &ArgRoles,
) -> (Vec<DimNotApplied>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (name, value) in dims {
        let is_seq = SEQUENCE_NAMES.contains(&name.to_ascii_lowercase().as_str());
        let module = if is_seq { roles.sequence } else { None };
        if module == Some(*value) {
            continue; // what the module already holds
        }
        notes.push(match module {
            Some(s) => format!(
                "--dim {name}={value} not applied: the module's shapes are static at sequence {s} (dim 1 of the token ids) and cannot be re-lowered here; every figure is at sequence {s}, none is scaled (attention cost grows faster than the sequence): re-export the module at sequence {value}"
            ),
            None if is_seq => format!(
                "--dim {name}={value} not applied: the module's shapes are static and no token-id argument gives its sequence; every figure is at the module's own shapes: re-export it at the shape you want"
            ),
            None => format!(
                "--dim {name}={value} not applied: a StableHLO module's shapes are static (no symbolic dimension to bind); every figure is at the module's own shapes: re-export it at the shape you want"
            ),
        });
        out.push(DimNotApplied { name: name.clone(), value: *value, module });
    }
    (out, notes)
}

/// The leading dimension of the first input with a static shape (the batch the model was bound
/// with), or 1.
fn detect_batch(model: &Model, params: &[String]) -> u64 {
    let g = &model.graph;
    g.inputs
        .iter()
        .filter(|i| !params.contains(&g.value(**i).name))
        .filter_map(|i| g.value(*i).ty.shape.as_ref()?.as_fixed())
        .find(|s| !s.is_empty())
        .map_or(1, |s| s[0].max(1))
}
