//! What a shape rule sees of a node (input types, known input values, attributes) and what it
//! returns, plus the dimension helpers rules share.

use tpuport_model::{Attr, DType, Dim, Node, Shape, TensorType, WeightStore};

use crate::onnx::host::HostValue;

/// Largest weight read into a [`HostValue`] (elements): shape-relevant constants are tiny.
pub(crate) const LOAD_MAX: u64 = 4096;
/// Largest folded result kept (elements): causal masks of long sequences still fold.
pub(crate) const FOLD_MAX: u64 = 1 << 18;

/// Why a rule produced nothing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fail {
    /// No rule for this op.
    Unsupported,
    /// An input's type is unknown (a consequence of an earlier failure; not reported again).
    MissingType,
    /// An input's value is needed but not known (`Reshape` shape from an unfolded chain).
    NeedsValue(usize),
    /// The node is inconsistent (shapes that do not broadcast, axes out of range).
    Invalid(String),
}

/// Result of a rule.
pub(crate) type Res<T> = Result<T, Fail>;

/// An inferred output: its type and, when folded, its value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Out {
    pub(crate) ty: TensorType,
    pub(crate) value: Option<HostValue>,
}

impl Out {
    /// An output of known dtype and shape.
    pub(crate) fn new(dtype: Option<DType>, shape: Shape) -> Out {
        Out { ty: TensorType { dtype, shape: Some(shape) }, value: None }
    }

    /// An output whose value is known (type taken from the value).
    pub(crate) fn konst(c: HostValue) -> Out {
        Out { ty: TensorType::new(c.dtype, Shape::fixed(&c.shape)), value: Some(c) }
    }
}

/// One node as a rule sees it.
pub(crate) struct NodeCx<'a> {
    pub(crate) node: &'a Node,
    pub(crate) types: Vec<Option<&'a TensorType>>,
    pub(crate) values: Vec<Option<&'a HostValue>>,
    pub(crate) weights: &'a WeightStore,
}

impl<'a> NodeCx<'a> {
    /// Number of inputs (including omitted optional ones).
    pub(crate) fn n_inputs(&self) -> usize {
        self.types.len()
    }

    /// True when input `i` is present.
    pub(crate) fn has(&self, i: usize) -> bool {
        self.types.get(i).is_some_and(Option::is_some)
    }

    /// Input `i`'s shape (fails quietly when unknown).
    pub(crate) fn shape(&self, i: usize) -> Res<&'a Shape> {
        self.types.get(i).copied().flatten().and_then(|t| t.shape.as_ref()).ok_or(Fail::MissingType)
    }

    /// Input `i`'s dtype, if known.
    pub(crate) fn dtype(&self, i: usize) -> Option<DType> {
        self.types.get(i).copied().flatten().and_then(|t| t.dtype)
    }

    /// Input `i`'s value, if known.
    pub(crate) fn value(&self, i: usize) -> Option<&'a HostValue> {
        self.values.get(i).copied().flatten()
    }

    /// Input `i`'s value, required.
    pub(crate) fn need(&self, i: usize) -> Res<&'a HostValue> {
        if !self.has(i) {
            return Err(Fail::Invalid(format!("input {i} is missing")));
        }
        self.value(i).ok_or(Fail::NeedsValue(i))
    }

    /// Integer attribute with default.
    pub(crate) fn int(&self, name: &str, default: i64) -> i64 {
        self.node.attr(name).and_then(Attr::as_int).unwrap_or(default)
    }

    /// Integer-list attribute.
    pub(crate) fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.node.attr(name).and_then(Attr::as_ints).map(<[i64]>::to_vec)
    }

    /// String attribute.
    pub(crate) fn str(&self, name: &str) -> Option<&'a str> {
        self.node.attr(name).and_then(Attr::as_str)
    }

    /// A tensor attribute's value (`ConstantOfShape.value`, `Constant.value`).
    pub(crate) fn tensor_attr(&self, name: &str) -> Option<HostValue> {
        match self.node.attr(name) {
            Some(Attr::Weight(id)) => HostValue::from_weight(self.weights.get(*id), LOAD_MAX),
            _ => None,
        }
    }

    /// Integers from an attribute (older opsets) or else from input `i` (newer opsets).
    pub(crate) fn ints_attr_or_input(&self, name: &str, i: usize) -> Res<Option<Vec<i64>>> {
        if let Some(v) = self.ints(name) {
            return Ok(Some(v));
        }
        if self.has(i) {
            return Ok(Some(self.need(i)?.as_i64()));
        }
        Ok(None)
    }
}

/// Normalizes a possibly negative axis against `rank`.
pub(crate) fn axis(a: i64, rank: usize) -> Res<usize> {
    let r = i64::try_from(rank).unwrap_or(i64::MAX);
    let v = if a < 0 { a + r } else { a };
    if (0..r).contains(&v) {
        Ok(usize::try_from(v).unwrap_or(0))
    } else {
        Err(Fail::Invalid(format!("axis {a} out of range for rank {rank}")))
    }
}

/// Numpy-style broadcast of several shapes.
pub(crate) fn broadcast(shapes: &[&Shape]) -> Res<Shape> {
    let rank = shapes.iter().map(|s| s.rank()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(rank);
    for k in 0..rank {
        let mut d = Dim::Known(1);
        for s in shapes {
            let Some(idx) = (k + s.rank()).checked_sub(rank) else { continue };
            d = merge_broadcast(&d, &s.0[idx]).ok_or_else(|| {
                Fail::Invalid(format!(
                    "shapes {} do not broadcast",
                    shapes.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
                ))
            })?;
        }
        out.push(d);
    }
    Ok(Shape(out))
}

fn merge_broadcast(a: &Dim, b: &Dim) -> Option<Dim> {
    Some(match (a, b) {
        (Dim::Known(1), x) | (x, Dim::Known(1)) => x.clone(),
        (Dim::Known(x), Dim::Known(y)) if x == y => Dim::Known(*x),
        (Dim::Known(_), Dim::Known(_)) => return None,
        (Dim::Known(x), Dim::Sym(_)) | (Dim::Sym(_), Dim::Known(x)) => Dim::Known(*x),
        (Dim::Sym(x), Dim::Sym(y)) if x == y && x != "?" => a.clone(),
        _ => Dim::unknown(),
    })
}

/// Product of known dims, `None` if any is symbolic or it overflows.
pub(crate) fn known_product(dims: &[Dim]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(d.known()?))
}

/// A shape value (from a folded shape tensor) as dims: non-negative entries only.
pub(crate) fn to_u64(v: i64) -> Res<u64> {
    u64::try_from(v).map_err(|_| Fail::Invalid(format!("negative dimension {v}")))
}

/// Applies `f` to a known dim, or gives `?` for a symbolic one.
pub(crate) fn map_dim(d: &Dim, f: impl FnOnce(u64) -> Option<u64>) -> Dim {
    d.known().and_then(f).map_or_else(Dim::unknown, Dim::Known)
}
