//! What production traffic drifts on, per model, with every counter made at load so that a
//! request only bumps counters:
//!
//! - `tpuport_input_refusals_total{model, reason}`: requests refused for their inputs (400 or
//!   413), by [`Refusal`]: a wrong dimension, a wrong datatype, a missing or unknown input, ...;
//! - `tpuport_input_shapes_total{model, input, shape}`: the shape each input arrives with,
//!   refused or not, the batch dimension written `N` (`Nx3x224x224`); at most
//!   [`MAX_SHAPES`] shapes per input, later ones counted as `other`;
//! - `tpuport_shape_drift_total{model, input, kind}`: `row_shape`, an input whose non-batch
//!   dimensions differ from the model's (refused: the images came in 200 wide for a model that
//!   takes 192), and `batch_over_max`, a batch above the largest bucket (split over several
//!   executions).
//!
//! A batch between two buckets is not drift: it is what dynamic batching is for, and its cost
//! is the padding `tpuport_padding_ratio` measures, with its own alarm in `tpuport top`.

use std::sync::{Arc, Mutex, PoisonError};

use tpuport_exec::Model;

use crate::error::{ErrorKind, InferError};
use crate::metrics::{Counter, Registry, names};

/// Shapes counted apart per input; more are counted as `other` (bounded label cardinality).
pub(crate) const MAX_SHAPES: usize = 8;

/// Why a request was refused for its inputs (the `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A dimension differs from the model's (or is negative, or the batch is 0).
    WrongShape,
    /// The datatype is not the model's.
    WrongDtype,
    /// A model input is not in the request.
    MissingInput,
    /// The request names an input the model does not have.
    UnknownInput,
    /// An input is given twice.
    DuplicateInput,
    /// Two inputs disagree on the batch size.
    BatchMismatch,
    /// The shape claims more bytes than the server takes.
    TooLarge,
    /// Anything else about the request (JSON, binary sizes, data, parameters).
    Malformed,
}

impl Refusal {
    const ALL: [Refusal; 8] = [
        Refusal::WrongShape,
        Refusal::WrongDtype,
        Refusal::MissingInput,
        Refusal::UnknownInput,
        Refusal::DuplicateInput,
        Refusal::BatchMismatch,
        Refusal::TooLarge,
        Refusal::Malformed,
    ];

    fn label(self) -> &'static str {
        match self {
            Refusal::WrongShape => "wrong_shape",
            Refusal::WrongDtype => "wrong_dtype",
            Refusal::MissingInput => "missing_input",
            Refusal::UnknownInput => "unknown_input",
            Refusal::DuplicateInput => "duplicate_input",
            Refusal::BatchMismatch => "batch_mismatch",
            Refusal::TooLarge => "too_large",
            Refusal::Malformed => "malformed",
        }
    }
}

/// One input's shapes seen so far, each with its counter.
type Seen = Mutex<Vec<(Vec<u64>, Arc<Counter>)>>;

/// A model's drift and refusal counters.
pub(crate) struct Drift {
    model: String,
    refusals: Vec<Arc<Counter>>,
    row_shape: Vec<Arc<Counter>>,
    over_max: Vec<Arc<Counter>>,
    seen: Vec<Seen>,
    other: Vec<Arc<Counter>>,
}

impl Drift {
    /// Every counter of `model`, registered (at 0) so that rates exist from the start.
    pub(crate) fn new(reg: &Registry, model: &Model) -> Drift {
        let name = model.name.as_str();
        let per_input = |kind: &str, family: &str| -> Vec<Arc<Counter>> {
            model.inputs.iter().map(|i| reg.counter(family, &[name, &i.name, kind])).collect()
        };
        Drift {
            model: name.to_owned(),
            refusals: Refusal::ALL
                .iter()
                .map(|r| reg.counter(names::INPUT_REFUSALS, &[name, r.label()]))
                .collect(),
            row_shape: per_input("row_shape", names::SHAPE_DRIFT),
            over_max: per_input("batch_over_max", names::SHAPE_DRIFT),
            seen: model.inputs.iter().map(|_| Mutex::new(Vec::new())).collect(),
            other: per_input("other", names::INPUT_SHAPES),
        }
    }

    /// Counts a failed infer request when it was refused for its inputs (400 or 413).
    pub(crate) fn refused(&self, e: &InferError) {
        let r = match e.kind {
            ErrorKind::InvalidArgument => e.refusal.unwrap_or(Refusal::Malformed),
            ErrorKind::TooLarge => Refusal::TooLarge,
            _ => return,
        };
        if let Some(c) = self.refusals.get(r as usize) {
            c.inc();
        }
    }

    /// Counts input `index` arriving with `dims` (the batch dimension first when `batched`).
    pub(crate) fn shape_seen(
        &self,
        reg: &Registry,
        index: usize,
        input: &str,
        dims: &[u64],
        batched: bool,
    ) {
        let Some(seen) = self.seen.get(index) else { return };
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, c)) = seen.iter().find(|(d, _)| d.as_slice() == dims_key(dims, batched)) {
            c.inc();
            return;
        }
        if seen.len() >= MAX_SHAPES {
            drop(seen);
            if let Some(c) = self.other.get(index) {
                c.inc();
            }
            return;
        }
        let c =
            reg.counter(names::INPUT_SHAPES, &[&self.model, input, &shape_label(dims, batched)]);
        c.inc();
        seen.push((dims_key(dims, batched).to_vec(), c));
    }

    /// Counts input `index`'s non-batch dimensions differing from the model's.
    pub(crate) fn row_shape(&self, index: usize) {
        if let Some(c) = self.row_shape.get(index) {
            c.inc();
        }
    }

    /// Counts a batch above the largest bucket (once per input, as before).
    pub(crate) fn over_max(&self) {
        self.over_max.iter().for_each(|c| c.inc());
    }
}

/// The dimensions that name a shape: all but the batch dimension when the model is batched.
fn dims_key(dims: &[u64], batched: bool) -> &[u64] {
    if batched { dims.get(1..).unwrap_or(&[]) } else { dims }
}

/// `Nx3x224x224` (batched), `16` or `scalar` (unbatched).
fn shape_label(dims: &[u64], batched: bool) -> String {
    let rest = dims_key(dims, batched).iter().map(u64::to_string);
    let parts: Vec<String> = if batched {
        std::iter::once("N".to_owned()).chain(rest).collect()
    } else {
        rest.collect()
    };
    if parts.is_empty() { "scalar".to_owned() } else { parts.join("x") }
}

#[cfg(test)]
mod tests {
    use super::shape_label;

    #[test]
    fn shape_labels_name_the_batch_dimension() {
        assert_eq!(shape_label(&[8, 3, 224, 224], true), "Nx3x224x224");
        assert_eq!(shape_label(&[5], true), "N");
        assert_eq!(shape_label(&[16], false), "16");
        assert_eq!(shape_label(&[], false), "scalar");
    }
}
