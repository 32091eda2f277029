//! Small known tensor values used for constant folding of shape computations.

use tpuport_model::{DType, Weight};

/// Largest weight read into a [`Const`] (elements): shape-relevant constants are tiny.
pub(crate) const LOAD_MAX: u64 = 4096;
/// Largest folded result kept (elements): causal masks of long sequences still fold.
pub(crate) const FOLD_MAX: u64 = 1 << 18;

/// True when a result of these dims is small enough to fold (checked product).
pub(crate) fn fits(dims: &[u64]) -> bool {
    dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d)).is_some_and(|n| n <= FOLD_MAX)
}

/// Element storage: integers (and bools as 0/1) or floats.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    /// Integer and bool elements.
    I(Vec<i64>),
    /// Floating-point elements.
    F(Vec<f64>),
}

/// A known tensor value: dtype, static shape, row-major elements.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Const {
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<u64>,
    pub(crate) data: Data,
}

fn arr<const N: usize>(c: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(c);
    a
}

impl Const {
    /// An integer-valued constant (dtype should be an int or bool type).
    pub(crate) fn ints(dtype: DType, shape: Vec<u64>, v: Vec<i64>) -> Const {
        Const { dtype, shape, data: Data::I(v) }
    }

    /// A 1-D int64 constant.
    pub(crate) fn i64_vec(v: Vec<i64>) -> Const {
        Const { dtype: DType::I64, shape: vec![v.len() as u64], data: Data::I(v) }
    }

    /// Builds a constant of `dtype` from float values (rounded for int dtypes).
    #[allow(clippy::cast_possible_truncation, reason = "cast semantics: float to int truncates")]
    pub(crate) fn from_f64(dtype: DType, shape: Vec<u64>, v: Vec<f64>) -> Const {
        if dtype.is_float() {
            Const { dtype, shape, data: Data::F(v) }
        } else if dtype == DType::Bool {
            Const {
                dtype,
                shape,
                data: Data::I(v.into_iter().map(|x| i64::from(x != 0.0)).collect()),
            }
        } else {
            Const { dtype, shape, data: Data::I(v.into_iter().map(|x| x as i64).collect()) }
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match &self.data {
            Data::I(v) => v.len(),
            Data::F(v) => v.len(),
        }
    }

    /// Elements as integers (floats truncated).
    #[allow(clippy::cast_possible_truncation, reason = "shape values are integers")]
    pub(crate) fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            Data::I(v) => v.clone(),
            Data::F(v) => v.iter().map(|x| *x as i64).collect(),
        }
    }

    /// Elements as floats.
    #[allow(clippy::cast_precision_loss, reason = "value folding of small tensors")]
    pub(crate) fn as_f64(&self) -> Vec<f64> {
        match &self.data {
            Data::I(v) => v.iter().map(|x| *x as f64).collect(),
            Data::F(v) => v.clone(),
        }
    }

    /// Element `i` as f64.
    #[allow(clippy::cast_precision_loss, reason = "value folding of small tensors")]
    pub(crate) fn f(&self, i: usize) -> f64 {
        match &self.data {
            Data::I(v) => v[i] as f64,
            Data::F(v) => v[i],
        }
    }

    /// Element `i` as i64.
    #[allow(clippy::cast_possible_truncation, reason = "value folding of small tensors")]
    pub(crate) fn i(&self, i: usize) -> i64 {
        match &self.data {
            Data::I(v) => v[i],
            Data::F(v) => v[i] as i64,
        }
    }

    /// The value converted to `to` (ONNX `Cast`).
    pub(crate) fn cast(&self, to: DType) -> Option<Const> {
        if !(to.is_float() || to.is_int() || to == DType::Bool) {
            return None;
        }
        Some(if to.is_float() {
            Const { dtype: to, shape: self.shape.clone(), data: Data::F(self.as_f64()) }
        } else if to == DType::Bool {
            Const::from_f64(to, self.shape.clone(), self.as_f64())
        } else {
            Const { dtype: to, shape: self.shape.clone(), data: Data::I(self.as_i64()) }
        })
    }

    /// Picks elements by flat index into a new shape (`None` if an index is out of range).
    pub(crate) fn gather_flat(&self, shape: Vec<u64>, idx: &[usize]) -> Option<Const> {
        let data = match &self.data {
            Data::I(v) => Data::I(idx.iter().map(|&i| v.get(i).copied()).collect::<Option<_>>()?),
            Data::F(v) => Data::F(idx.iter().map(|&i| v.get(i).copied()).collect::<Option<_>>()?),
        };
        Some(Const { dtype: self.dtype, shape, data })
    }

    /// Reads a small numeric weight.
    pub(crate) fn from_weight(w: &Weight) -> Option<Const> {
        if w.elements() > LOAD_MAX {
            return None;
        }
        let b = w.bytes().ok()?;
        let data = match w.dtype {
            DType::F32 => {
                Data::F(b.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(arr(c)))).collect())
            }
            DType::F64 => Data::F(b.chunks_exact(8).map(|c| f64::from_le_bytes(arr(c))).collect()),
            DType::F16 => Data::F(
                b.chunks_exact(2)
                    .map(|c| f64::from(half::f16::from_le_bytes(arr(c)).to_f32()))
                    .collect(),
            ),
            DType::BF16 => Data::F(
                b.chunks_exact(2)
                    .map(|c| f64::from(half::bf16::from_le_bytes(arr(c)).to_f32()))
                    .collect(),
            ),
            DType::I64 => Data::I(b.chunks_exact(8).map(|c| i64::from_le_bytes(arr(c))).collect()),
            DType::U64 => Data::I(
                b.chunks_exact(8).map(|c| u64::from_le_bytes(arr(c)).cast_signed()).collect(),
            ),
            DType::I32 => {
                Data::I(b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes(arr(c)))).collect())
            }
            DType::U32 => {
                Data::I(b.chunks_exact(4).map(|c| i64::from(u32::from_le_bytes(arr(c)))).collect())
            }
            DType::I16 => {
                Data::I(b.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes(arr(c)))).collect())
            }
            DType::U16 => {
                Data::I(b.chunks_exact(2).map(|c| i64::from(u16::from_le_bytes(arr(c)))).collect())
            }
            DType::I8 => Data::I(b.iter().map(|&x| i64::from(x.cast_signed())).collect()),
            DType::U8 | DType::Bool => Data::I(b.iter().map(|&x| i64::from(x)).collect()),
            _ => return None,
        };
        let c = Const { dtype: w.dtype, shape: w.shape.clone(), data };
        (c.len() as u64 == w.elements()).then_some(c)
    }
}
