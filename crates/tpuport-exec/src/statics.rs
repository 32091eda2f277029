//! How an ONNX model with dynamic dimensions or data-dependent branches becomes one static
//! module before `run`, `bench` or `validate` execute it: symbolic dimensions bound (`--batch`,
//! `--dim`, `--input-shape`, as for `lower`), and chosen graph inputs given a value at lowering
//! time (`--input-value sr=16000`), so that a branch on that input is lowered as production
//! takes it. A bound input keeps its argument; the value is also what the run feeds it, unless
//! the caller gives that input explicitly.
//!
//! Inputs the caller gives as files (`validate --inputs x.npz`, `run --input sr=sr.npy`) are
//! [`Statics::given`]: when the lowering needs the value of a graph input to choose a branch
//! and the caller gave that input — a scalar or a small tensor — it is bound from there, as
//! `--input-value` would, and the lowering says so ([`StaticLowering::notes`]).

use std::collections::BTreeMap;
use std::path::Path;

use tpuport_formats::ImportOptions;
use tpuport_formats::onnx::host::HostValue;
use tpuport_model::{DType, HostTensor, Model, Shape};

use tpuport_lower::LowerError;
use tpuport_lower::onnx::{LowerOptions, Lowered, lower_with_values};

use crate::error::{Context as _, Result, invalid};

/// Largest number of values one `--input-value` may list.
const MAX_VALUES: usize = 65_536;

/// Largest given input (elements) bound from a file for a branch: a sample rate, a flag, a
/// mode index, a small shape tensor, never a batch of data.
const MAX_GIVEN: usize = 64;

/// The bindings; all empty means "the model as it is".
#[derive(Clone, Debug, Default)]
pub struct Statics {
    /// Leading dimension of every input whose first dimension is symbolic.
    pub batch: Option<u64>,
    /// Named symbolic dimensions.
    pub dims: Vec<(String, u64)>,
    /// Whole shapes of named inputs.
    pub input_shapes: Vec<(String, Shape)>,
    /// Values of named inputs, as typed: one number (filling the input's shape) or as many
    /// comma-separated numbers as the input has elements.
    pub values: Vec<(String, String)>,
    /// Inputs the caller gives as files, by graph input name: bound at lowering time when the
    /// graph branches on one of them (small ones only, see the module doc). Not a binding by
    /// itself: [`Statics::is_empty`] ignores it.
    pub given: Vec<(String, HostTensor)>,
}

/// An ONNX model lowered with its statics bound.
#[derive(Debug)]
pub struct StaticLowering {
    /// The lowering.
    pub lowered: Lowered,
    /// The inputs given a value at lowering time (`--input-value`, and those bound from
    /// [`Statics::given`]), fed when the caller does not give them.
    pub fixed: Vec<(String, HostTensor)>,
    /// The inputs of `fixed` bound from [`Statics::given`] (the caller feeds them too).
    pub from_given: Vec<String>,
    /// One line per input bound from the given inputs: its name, its value and why.
    pub notes: Vec<String>,
}

impl Statics {
    /// True when nothing is bound.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batch.is_none()
            && self.dims.is_empty()
            && self.input_shapes.is_empty()
            && self.values.is_empty()
    }

    /// The import options that bind the dimensions.
    #[must_use]
    pub fn import_options(&self) -> ImportOptions {
        ImportOptions {
            batch: self.batch,
            dims: self.dims.iter().cloned().collect(),
            input_shapes: self.input_shapes.iter().cloned().collect::<BTreeMap<_, _>>(),
            ..ImportOptions::default()
        }
    }

    /// The `--input-value` tensors for `model` (imported with [`Statics::import_options`]):
    /// each named input must exist, have a static shape and a numeric type, and the values must
    /// parse as that type and number one or the input's element count.
    ///
    /// # Errors
    /// One line naming the input and what is wrong.
    pub fn values_for(&self, model: &Model) -> Result<Vec<(String, HostTensor)>> {
        let g = &model.graph;
        let mut out: Vec<(String, HostTensor)> = Vec::new();
        for (name, text) in &self.values {
            if out.iter().any(|(n, _)| n == name) {
                return Err(invalid(format!("--input-value {name}: given twice")));
            }
            let Some(v) = g.inputs.iter().map(|&id| g.value(id)).find(|v| &v.name == name) else {
                let names: Vec<&str> =
                    g.inputs.iter().map(|&id| g.value(id).name.as_str()).collect();
                return Err(invalid(format!(
                    "--input-value {name}: the model has no input of that name (inputs: {})",
                    names.join(", ")
                )));
            };
            let dtype = v
                .ty
                .dtype
                .ok_or_else(|| invalid(format!("--input-value {name}: the input has no type")))?;
            let shape = v.ty.shape.as_ref().and_then(Shape::as_fixed).ok_or_else(|| {
                invalid(format!(
                    "--input-value {name}: the input's shape {} is not static; bind it with \
                     --input-shape {name}=DIMS",
                    v.ty
                ))
            })?;
            out.push((name.clone(), parse_values(name, text, dtype, shape)?));
        }
        Ok(out)
    }
}

impl Statics {
    /// Lowers `model` (read from `path` with [`Statics::import_options`]) with the
    /// `--input-value` tensors bound. When the lowering needs an input's value it does not
    /// have (an `If` on `sr`), the value is bound from [`Statics::given`] when the caller gave
    /// that input, and the lowering runs again; otherwise the error names the flag that gives
    /// it.
    ///
    /// # Errors
    /// A bad `--input-value`, or the lowering's error.
    pub fn lower(&self, path: &Path, model: &Model, opts: &LowerOptions) -> Result<StaticLowering> {
        let mut fixed = self.values_for(model)?;
        let mut notes = Vec::new();
        let mut from_given = Vec::new();
        loop {
            let e = match lower_with_values(model, opts, &fixed) {
                Ok(lowered) => return Ok(StaticLowering { lowered, fixed, from_given, notes }),
                Err(e) => e,
            };
            let inputs = match &e {
                LowerError::NeedsHostValue { value, .. } => inputs_behind(&model.graph, value),
                _ => Vec::new(),
            };
            let bindable: Vec<&(String, HostTensor)> = inputs
                .iter()
                .filter(|n| !fixed.iter().any(|(f, _)| f == *n))
                .filter_map(|n| self.given.iter().find(|(g, _)| g == n))
                .filter(|(_, t)| t.elements() <= MAX_GIVEN as u64)
                .collect();
            if !bindable.is_empty() {
                for (name, t) in bindable {
                    notes.push(format!(
                        "{name} = {} bound from the inputs given: the graph branches on it \
                         (as --input-value {name}=...)",
                        show_values(t)
                    ));
                    fixed.push((name.clone(), t.clone()));
                    from_given.push(name.clone());
                }
                continue;
            }
            return match inputs.as_slice() {
                [] => Err(e).context(|| format!("lowering {}", path.display())),
                names => {
                    let flags: Vec<String> =
                        names.iter().map(|n| format!("--input-value {n}=V")).collect();
                    Err(invalid(format!(
                        "lowering {}: {e}; it is computed from graph input(s): give {}",
                        path.display(),
                        flags.join(" ")
                    )))
                }
            };
        }
    }
}

/// A small tensor's values for a note: `16000`, or `[1, 2, 3]`.
fn show_values(t: &HostTensor) -> String {
    let vals: Vec<String> = t
        .to_f64()
        .unwrap_or_default()
        .iter()
        .map(|v| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") })
        .collect();
    if t.shape.is_empty() && vals.len() == 1 {
        vals[0].clone()
    } else {
        format!("[{}]", vals.join(", "))
    }
}

/// The graph inputs a value is computed from (weights and constants aside), in graph order.
fn inputs_behind(g: &tpuport_model::Graph, value: &str) -> Vec<String> {
    use tpuport_model::ValueKind;
    let Some(start) = g.values.iter().position(|v| v.name == value) else { return Vec::new() };
    let producer: std::collections::HashMap<usize, &tpuport_model::Node> =
        g.nodes.iter().flat_map(|n| n.outputs.iter().map(move |o| (o.0 as usize, n))).collect();
    let mut seen = vec![false; g.values.len()];
    let mut stack = vec![start];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        if let Some(n) = producer.get(&i) {
            stack.extend(n.inputs.iter().flatten().map(|v| v.0 as usize));
        }
    }
    g.inputs
        .iter()
        .filter(|&&i| seen[i.0 as usize] && g.value(i).kind == ValueKind::Input)
        .map(|&i| g.value(i).name.clone())
        .collect()
}

/// `text` as a tensor of `dtype` and `shape`.
fn parse_values(name: &str, text: &str, dtype: DType, shape: Vec<u64>) -> Result<HostTensor> {
    let bad = |what: String| invalid(format!("--input-value {name}={text}: {what}"));
    let n = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let n = n
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= MAX_VALUES)
        .ok_or_else(|| bad(format!("the input has shape {shape:?}, too large to give by value")))?;
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.len() > MAX_VALUES || (items.len() != 1 && items.len() != n) {
        return Err(bad(format!(
            "{} value(s) for an input of {n} element(s) (shape {shape:?}): give 1 or {n}",
            items.len()
        )));
    }
    let nums: Vec<f64> = items
        .iter()
        .map(|s| match *s {
            "true" | "True" => Ok(1.0),
            "false" | "False" => Ok(0.0),
            _ => s.parse::<f64>().map_err(|_| bad(format!("`{s}` is not a number"))),
        })
        .collect::<Result<_>>()?;
    let at = |i: usize| if nums.len() == 1 { nums[0] } else { nums[i] };
    let vals: Vec<f64> = (0..n).map(at).collect();
    let host_form = matches!(
        dtype,
        DType::F64
            | DType::F32
            | DType::F16
            | DType::BF16
            | DType::Bool
            | DType::I8
            | DType::I16
            | DType::I32
            | DType::I64
            | DType::U8
            | DType::U16
            | DType::U32
            | DType::U64
    );
    if !host_form {
        return Err(bad(format!("input `{name}` is {dtype}, which cannot be given by value")));
    }
    if !dtype.is_float() && vals.iter().any(|v| v.fract() != 0.0) {
        return Err(bad(format!("input `{name}` is {dtype}: give whole numbers")));
    }
    let h = HostValue::from_f64(dtype, shape.clone(), vals.clone());
    #[allow(clippy::cast_precision_loss, reason = "compared with the value as typed")]
    if !dtype.is_float() && (0..n).any(|i| h.get_i(i) as f64 != vals[i]) {
        return Err(bad(format!("out of range for {dtype}")));
    }
    HostTensor::new(dtype, shape, h.to_bytes()).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_scalar_fills_the_shape_and_lists_must_match() {
        let t = parse_values("sr", "16000", DType::I64, vec![]).unwrap();
        assert_eq!(t.to_f64().unwrap(), vec![16000.0]);
        let t = parse_values("x", "1.5", DType::F32, vec![2, 2]).unwrap();
        assert_eq!(t.to_f64().unwrap(), vec![1.5; 4]);
        let t = parse_values("x", "1,2,3", DType::I32, vec![3]).unwrap();
        assert_eq!(t.to_f64().unwrap(), vec![1.0, 2.0, 3.0]);
        let e = parse_values("x", "1,2", DType::I32, vec![3]).unwrap_err().to_string();
        assert!(e.contains("give 1 or 3"), "{e}");
        let e = parse_values("sr", "16k", DType::I64, vec![]).unwrap_err().to_string();
        assert!(e.contains("`16k` is not a number"), "{e}");
        let e = parse_values("sr", "1.5", DType::I64, vec![]).unwrap_err().to_string();
        assert!(e.contains("whole numbers"), "{e}");
        let e = parse_values("b", "300", DType::I8, vec![]).unwrap_err().to_string();
        assert!(e.contains("out of range for i8"), "{e}");
        let e = parse_values("x", "1", DType::F32, vec![1 << 20, 1 << 20]).unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
        let t = parse_values("flag", "true", DType::Bool, vec![]).unwrap();
        assert_eq!(t.to_f64().unwrap(), vec![1.0]);
    }
}
