//! Intermediate values of `@main` returned as extra results.

use serde::Serialize;
use tpuport_model::{DType, Model};

use crate::LowerError;

/// One exposed value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exposed {
    /// Index of the module result that carries it.
    pub result: usize,
    /// Value name as the source spells it (`%5`, `%cst_0`).
    pub name: String,
    /// Producing op.
    pub op: String,
    /// Source location (resolved MLIR `loc(...)` text), when the module has one.
    pub location: Option<String>,
    /// Element type.
    pub dtype: DType,
    /// Static shape.
    pub shape: Vec<u64>,
}

/// Appends results of `@main`'s top-level ops to its results, in graph order, and returns
/// them. `only`: value names to expose (with or without the leading `%`); `None` exposes
/// every float result with a static shape except constants. Ops inside regions and called
/// functions are reached through the op that holds them (`stablehlo.reduce`, `func.call`).
///
/// # Errors
/// [`LowerError::Invalid`] naming a requested value that is not a float op result with a
/// static shape in `@main`.
pub fn expose(model: &mut Model, only: Option<&[String]>) -> Result<Vec<Exposed>, LowerError> {
    let g = &mut model.graph;
    let mut out = Vec::new();
    let mut found = vec![false; only.map_or(0, <[String]>::len)];
    let mut results = Vec::new();
    for node in &g.nodes {
        if node.op == "stablehlo.constant" {
            continue;
        }
        for &id in &node.outputs {
            let v = g.value(id);
            let wanted = match only {
                None => true,
                Some(names) => {
                    let bare = v.name.trim_start_matches('%');
                    let hit = names.iter().position(|n| n.trim_start_matches('%') == bare);
                    if let Some(i) = hit {
                        found[i] = true;
                    }
                    hit.is_some()
                }
            };
            let (Some(dtype), Some(shape)) =
                (v.ty.dtype, v.ty.shape.as_ref().and_then(tpuport_model::Shape::as_fixed))
            else {
                continue;
            };
            if !wanted || !dtype.is_float() {
                continue;
            }
            results.push(id);
            out.push(Exposed {
                result: g.outputs.len() + out.len(),
                name: v.name.clone(),
                op: node.op.clone(),
                location: node.location.clone(),
                dtype,
                shape,
            });
        }
    }
    if let Some(names) = only
        && let Some(i) = found.iter().position(|f| !f)
    {
        return Err(LowerError::Invalid(format!(
            "no float op result named `{}` with a static shape in `{}`",
            names[i], g.name
        )));
    }
    g.outputs.extend(results);
    Ok(out)
}
