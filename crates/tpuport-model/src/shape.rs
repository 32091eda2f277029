use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{DType, ModelError};

/// One dimension of a shape: a known size or a symbol (`batch`, `unk__523`, `?`).
///
/// A dimension that the file leaves completely unnamed (ONNX `dim` with neither value nor
/// param, MLIR `?`) is `Sym("?")`; every `?` is distinct in meaning even though the spelling is
/// shared.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    /// A concrete size.
    Known(u64),
    /// A symbolic size, by name.
    Sym(String),
}

impl Dim {
    /// The concrete size, if known.
    #[must_use]
    pub fn known(&self) -> Option<u64> {
        match self {
            Dim::Known(n) => Some(*n),
            Dim::Sym(_) => None,
        }
    }

    /// An anonymous dynamic dimension.
    #[must_use]
    pub fn unknown() -> Dim {
        Dim::Sym("?".to_owned())
    }
}

impl From<u64> for Dim {
    fn from(n: u64) -> Self {
        Dim::Known(n)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(n) => write!(f, "{n}"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

/// A tensor shape of known rank whose dimensions may be symbolic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Shape(pub Vec<Dim>);

impl Shape {
    /// A fully static shape.
    #[must_use]
    pub fn fixed(dims: &[u64]) -> Shape {
        Shape(dims.iter().copied().map(Dim::Known).collect())
    }

    /// A scalar (rank 0).
    #[must_use]
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    /// Number of dimensions.
    #[must_use]
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// All dimensions as concrete sizes, or `None` if any is symbolic.
    #[must_use]
    pub fn as_fixed(&self) -> Option<Vec<u64>> {
        self.0.iter().map(Dim::known).collect()
    }

    /// True when every dimension is known.
    #[must_use]
    pub fn is_static(&self) -> bool {
        self.0.iter().all(|d| d.known().is_some())
    }

    /// The symbols used, in order of first appearance.
    #[must_use]
    pub fn symbols(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in &self.0 {
            if let Dim::Sym(s) = d
                && !out.contains(&s.as_str())
            {
                out.push(s);
            }
        }
        out
    }

    /// Element count when static. Errors name the shape on overflow.
    ///
    /// # Errors
    /// [`ModelError::Unbound`] for a symbolic dimension, [`ModelError::Overflow`] when the
    /// product does not fit in `u64`.
    pub fn elements(&self) -> Result<u64, ModelError> {
        let mut n: u64 = 1;
        for d in &self.0 {
            let k = match d {
                Dim::Known(k) => *k,
                Dim::Sym(s) => return Err(ModelError::Unbound { dim: s.clone() }),
            };
            n = n.checked_mul(k).ok_or_else(|| ModelError::Overflow { shape: self.to_string() })?;
        }
        Ok(n)
    }

    /// Replaces symbols found in `bindings` by their sizes; other symbols stay.
    #[must_use]
    pub fn bind(&self, bindings: &BTreeMap<String, u64>) -> Shape {
        Shape(
            self.0
                .iter()
                .map(|d| match d {
                    Dim::Sym(s) => bindings.get(s).map_or_else(|| d.clone(), |n| Dim::Known(*n)),
                    Dim::Known(_) => d.clone(),
                })
                .collect(),
        )
    }

    /// Parses `1x3x224x224` (also `1,3,224,224`); a non-numeric part becomes a symbol, an empty
    /// string or `scalar` a rank-0 shape.
    #[must_use]
    pub fn parse_dims(s: &str) -> Shape {
        let s = s.trim();
        if s.is_empty() || s == "scalar" {
            return Shape::scalar();
        }
        Shape(
            s.split(['x', ',', '×'])
                .map(str::trim)
                .map(|p| p.parse::<u64>().map_or_else(|_| Dim::Sym(p.to_owned()), Dim::Known))
                .collect(),
        )
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// The type of a value: element type and shape, either of which may be unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorType {
    /// Element type, when the file states it or inference found it.
    pub dtype: Option<DType>,
    /// Shape, when the rank is known.
    pub shape: Option<Shape>,
}

impl TensorType {
    /// A type with known dtype and shape.
    #[must_use]
    pub fn new(dtype: DType, shape: Shape) -> TensorType {
        TensorType { dtype: Some(dtype), shape: Some(shape) }
    }

    /// Bytes of one value of this type when dtype and shape are known and static.
    #[must_use]
    pub fn byte_size(&self) -> Option<u64> {
        let n = self.shape.as_ref()?.elements().ok()?;
        self.dtype?.storage_bytes(n)
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dtype {
            Some(d) => write!(f, "{d}")?,
            None => f.write_str("?")?,
        }
        match &self.shape {
            Some(s) => write!(f, "{s}"),
            None => f.write_str("[*]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_and_count() {
        let s = Shape(vec![Dim::Sym("batch".into()), Dim::Known(3), Dim::Known(224)]);
        assert!(s.elements().is_err());
        let mut b = BTreeMap::new();
        b.insert("batch".to_owned(), 8);
        assert_eq!(s.bind(&b).elements().ok(), Some(8 * 3 * 224));
        assert_eq!(s.to_string(), "[batch,3,224]");
    }

    #[test]
    fn overflow_is_an_error() {
        let s = Shape::fixed(&[u64::MAX, 2]);
        assert!(matches!(s.elements(), Err(ModelError::Overflow { .. })));
    }

    #[test]
    fn parse_dims_forms() {
        assert_eq!(Shape::parse_dims("1x3x224x224"), Shape::fixed(&[1, 3, 224, 224]));
        assert_eq!(Shape::parse_dims("8,128"), Shape::fixed(&[8, 128]));
        assert_eq!(Shape::parse_dims("").rank(), 0);
        assert_eq!(Shape::parse_dims("bx4").symbols(), vec!["b"]);
    }
}
