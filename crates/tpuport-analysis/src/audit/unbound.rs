//! A partial count: ops the cost pass could not count because a shape is not static (unbound
//! symbolic dims). Then no step time, samples/s, bound or FLOP total is given from what was
//! counted; the Summary names the dims to bind, which inputs carry them, and the flags that bind
//! them, with the sizes the model's own hints give ([`super::hints`]) and `N` where it has none.

use serde::Serialize;
use tpuport_model::{Dim, Model, Shape};

use super::hints;
use crate::cost::{CostReport, CostStatus, Uncounted};

/// The placeholder for a size no hint gives.
const PLACEHOLDER: &str = "N";

/// Why the headline figures are withheld and how to bind what is missing (`summary.unbound`).
#[derive(Clone, Debug, Serialize)]
pub struct Unbound {
    /// Ops not counted because a shape is not static.
    pub ops_uncounted: u64,
    /// Ops in the model (call sites expanded).
    pub ops: u64,
    /// The symbolic dims left on the inputs, in the order the inputs give them. Empty when the
    /// unbound shapes come from values computed in the graph (no flag binds them).
    pub dims: Vec<UnboundDim>,
    /// The flags that bind them (`--dim height=640 --dim width=640`, `--input-shape
    /// x=8x3xNxN`), with the model's hinted sizes and `N` where there is none; `null` for a
    /// StableHLO module (its shapes cannot be bound here: re-export it) or without `dims`.
    pub flags: Option<String>,
    /// Where the hinted sizes come from (`metadata_props imgsz = [640, 640]`); `null` when
    /// the model records none.
    pub hint: Option<String>,
}

/// One unbound symbolic dim.
#[derive(Clone, Debug, Serialize)]
pub struct UnboundDim {
    /// The symbol (`?` for a dim the file leaves unnamed; each `?` is its own).
    pub name: String,
    /// The inputs and axes that carry it.
    pub at: Vec<DimAt>,
    /// The size the model's hints give it.
    pub hint: Option<u64>,
}

/// An input axis.
#[derive(Clone, Debug, Serialize)]
pub struct DimAt {
    /// Input name.
    pub input: String,
    /// Axis (0 is the leading one).
    pub axis: usize,
}

impl Unbound {
    /// Why the headline figures are withheld, in one line.
    #[must_use]
    pub fn reason(&self) -> String {
        format!(
            "{} of {} ops have unbound shapes and were not counted: a step time, samples/s, bound or FLOP total from the rest would be wrong",
            self.ops_uncounted, self.ops
        )
    }

    /// The dims as the Summary lists them: `height (images dim 2), width (images dim 3)`.
    #[must_use]
    pub fn dims_text(&self) -> String {
        let one = |d: &UnboundDim| {
            let at: Vec<String> =
                d.at.iter().map(|a| format!("{} dim {}", a.input, a.axis)).collect();
            format!("{} ({})", d.name, at.join(", "))
        };
        self.dims.iter().map(one).collect::<Vec<_>>().join(", ")
    }
}

/// The partial count, or `None` when every op with shapes was counted. `stablehlo`: the
/// module's shapes cannot be bound by flags.
pub(super) fn check(model: &Model, cost: &CostReport, stablehlo: bool) -> Option<Unbound> {
    let uncounted = cost
        .ops
        .iter()
        .filter(|o| o.status == CostStatus::Uncounted(Uncounted::ShapeNotStatic))
        .count() as u64;
    if uncounted == 0 {
        return None;
    }
    let g = &model.graph;
    let inputs: Vec<(String, Shape)> = g
        .inputs
        .iter()
        .filter_map(|i| {
            let v = g.value(*i);
            Some((v.name.clone(), v.ty.shape.clone()?))
        })
        .filter(|(_, s)| !s.is_static())
        .collect();
    let hints = hints::find(model, &inputs);
    let mut dims: Vec<UnboundDim> = Vec::new();
    for (i, (name, shape)) in inputs.iter().enumerate() {
        for (axis, d) in shape.0.iter().enumerate() {
            let Dim::Sym(sym) = d else { continue };
            let at = DimAt { input: name.clone(), axis };
            let hint = hints.size(i, axis);
            match dims.iter_mut().find(|u| u.name == *sym && sym != "?") {
                Some(u) => {
                    u.at.push(at);
                    u.hint = u.hint.or(hint);
                }
                None => dims.push(UnboundDim { name: sym.clone(), at: vec![at], hint }),
            }
        }
    }
    let flags = (!stablehlo && !dims.is_empty()).then(|| flags(&inputs, &dims, &hints));
    Some(Unbound {
        ops_uncounted: uncounted,
        ops: cost.ops.len() as u64,
        dims,
        flags,
        hint: (!hints.sources.is_empty()).then(|| hints.sources.join("; ")),
    })
}

/// The flags binding `dims`: `--input-shape` for an input with an unnamed (`?`) dim, else
/// `--batch` for symbols only at the leading axis and `--dim NAME=N` for the others.
fn flags(inputs: &[(String, Shape)], dims: &[UnboundDim], hints: &hints::Hints) -> String {
    let size = |h: Option<u64>| h.map_or_else(|| PLACEHOLDER.to_owned(), |n| n.to_string());
    let mut out: Vec<String> = Vec::new();
    let mut push = |f: String| {
        if !out.contains(&f) {
            out.push(f);
        }
    };
    for (i, (name, shape)) in inputs.iter().enumerate() {
        if !shape.symbols().contains(&"?") {
            continue;
        }
        let parts: Vec<String> = shape
            .0
            .iter()
            .enumerate()
            .map(|(axis, d)| match d {
                Dim::Known(n) => n.to_string(),
                Dim::Sym(s) => size(
                    hints
                        .size(i, axis)
                        .or_else(|| dims.iter().find(|u| u.name == *s && s != "?")?.hint),
                ),
            })
            .collect();
        push(format!("--input-shape {name}={}", parts.join("x")));
    }
    let by_shape: Vec<&str> = inputs
        .iter()
        .filter(|(_, s)| s.symbols().contains(&"?"))
        .map(|(n, _)| n.as_str())
        .collect();
    for d in dims.iter().filter(|d| d.name != "?") {
        if d.at.iter().all(|a| by_shape.contains(&a.input.as_str())) {
            continue;
        }
        if d.at.iter().all(|a| a.axis == 0) {
            push(format!("--batch {}", size(d.hint)));
        } else {
            push(format!("--dim {}={}", d.name, size(d.hint)));
        }
    }
    out.join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tpuport_model::{DType, ModelFormat, TensorType, Value, ValueKind};

    use super::*;
    use crate::cost::{OpClass, OpCost};

    fn op(status: CostStatus) -> OpCost {
        OpCost {
            node: "n".into(),
            op: "Conv".into(),
            class: OpClass::Conv,
            flops: 0,
            mxu_flops: 0,
            transcendentals: 0,
            bytes: 0,
            fused_bytes: 0,
            weight_bytes: 0,
            dtype: None,
            repeats: 1,
            matmul: None,
            status,
        }
    }

    fn model(inputs: &[(&str, &[&str])], props: &[(&str, &str)]) -> Model {
        let mut m = Model::empty(ModelFormat::Onnx);
        for (name, dims) in inputs {
            let shape = Shape(
                dims.iter()
                    .map(|d| {
                        d.parse::<u64>().map_or_else(|_| Dim::Sym((*d).to_owned()), Dim::Known)
                    })
                    .collect(),
            );
            let id = m.graph.add_value(Value {
                name: (*name).to_owned(),
                ty: TensorType { dtype: Some(DType::F32), shape: Some(shape) },
                kind: ValueKind::Input,
                producer: None,
            });
            m.graph.inputs.push(id);
        }
        m.metadata.properties =
            props.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        m
    }

    fn cost(counted: usize, unbound: usize) -> CostReport {
        let mut c = CostReport::default();
        c.ops.extend((0..counted).map(|_| op(CostStatus::Counted)));
        c.ops.extend((0..unbound).map(|_| op(CostStatus::Uncounted(Uncounted::ShapeNotStatic))));
        c
    }

    #[test]
    fn a_full_count_withholds_nothing() {
        let m = model(&[("x", &["8", "3", "h", "w"])], &[]);
        assert!(check(&m, &cost(3, 0), false).is_none());
        // Ops without a rule are not a partial count of shapes.
        let mut c = cost(3, 0);
        c.ops.push(op(CostStatus::Uncounted(Uncounted::NoRule)));
        assert!(check(&m, &c, false).is_none());
    }

    #[test]
    fn named_dims_without_a_hint_get_placeholders() {
        let m = model(
            &[("x", &["8", "3", "p2o.DynamicDimension.1", "p2o.DynamicDimension.2"])],
            &[("character", "a\nb")],
        );
        let u = check(&m, &cost(2, 5), false).unwrap();
        assert_eq!((u.ops_uncounted, u.ops), (5, 7));
        assert_eq!(
            u.dims_text(),
            "p2o.DynamicDimension.1 (x dim 2), p2o.DynamicDimension.2 (x dim 3)"
        );
        assert_eq!(
            u.flags.as_deref(),
            Some("--dim p2o.DynamicDimension.1=N --dim p2o.DynamicDimension.2=N")
        );
        assert_eq!(u.hint, None);
        assert!(u.reason().starts_with("5 of 7 ops have unbound shapes"));
    }

    #[test]
    fn ultralytics_metadata_fills_the_flags() {
        let m = model(
            &[("images", &["batch", "3", "height", "width"])],
            &[("batch", "1"), ("imgsz", "[640, 640]")],
        );
        let u = check(&m, &cost(0, 4), false).unwrap();
        assert_eq!(u.flags.as_deref(), Some("--batch 1 --dim height=640 --dim width=640"));
        assert_eq!(
            u.hint.as_deref(),
            Some("metadata_props imgsz = [640, 640]; metadata_props batch = 1")
        );
        assert_eq!(
            u.dims.iter().map(|d| d.hint).collect::<Vec<_>>(),
            [Some(1), Some(640), Some(640)]
        );
    }

    #[test]
    fn unnamed_dims_need_an_input_shape_and_modules_no_flags() {
        let m = model(&[("x", &["8", "3", "?", "?"]), ("scale", &["8", "s"])], &[]);
        let u = check(&m, &cost(1, 1), false).unwrap();
        assert_eq!(u.flags.as_deref(), Some("--input-shape x=8x3xNxN --dim s=N"));
        assert_eq!(u.dims.len(), 3, "each `?` is its own dim");
        assert_eq!(check(&m, &cost(1, 1), true).unwrap().flags, None);
        // Shapes that depend on computed values: no input carries a symbol.
        let m = model(&[("x", &["8", "3"])], &[]);
        let u = check(&m, &cost(1, 1), false).unwrap();
        assert!(u.dims.is_empty() && u.flags.is_none());
    }
}
