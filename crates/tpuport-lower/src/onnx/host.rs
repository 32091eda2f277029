//! Values known at lowering time (shape tensors, small constants), evaluated on the host so
//! Reshape/Expand/Slice/... get static operands.

use tpuport_model::DType;

/// Host data: integers (and bools as 0/1) or floats.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum HD {
    I(Vec<i64>),
    F(Vec<f64>),
}

/// A host-known tensor.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HostVal {
    pub(crate) dt: DType,
    pub(crate) shape: Vec<u64>,
    pub(crate) data: HD,
}

/// Largest host-evaluated tensor (elements).
pub(crate) const HOST_MAX: u64 = 1 << 16;

impl HostVal {
    pub(crate) fn ints(dt: DType, shape: Vec<u64>, v: Vec<i64>) -> HostVal {
        HostVal { dt, shape, data: HD::I(v) }
    }

    pub(crate) fn floats(dt: DType, shape: Vec<u64>, v: Vec<f64>) -> HostVal {
        HostVal { dt, shape, data: HD::F(v) }
    }

    /// Builds from `dt` with values given as f64 (ints truncated).
    pub(crate) fn from_f64(dt: DType, shape: Vec<u64>, v: Vec<f64>) -> HostVal {
        if dt.is_float() {
            HostVal::floats(dt, shape, v)
        } else {
            HostVal::ints(dt, shape, v.into_iter().map(|x| x as i64).collect())
        }
    }

    pub(crate) fn scalar_f(dt: DType, v: f64) -> HostVal {
        HostVal::from_f64(dt, vec![], vec![v])
    }

    pub(crate) fn len(&self) -> usize {
        match &self.data {
            HD::I(v) => v.len(),
            HD::F(v) => v.len(),
        }
    }

    pub(crate) fn is_float(&self) -> bool {
        matches!(self.data, HD::F(_))
    }

    pub(crate) fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            HD::I(v) => v.clone(),
            HD::F(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }

    pub(crate) fn as_f64(&self) -> Vec<f64> {
        match &self.data {
            HD::I(v) => v.iter().map(|&x| x as f64).collect(),
            HD::F(v) => v.clone(),
        }
    }

    pub(crate) fn is_splat(&self) -> bool {
        match &self.data {
            HD::I(v) => v.windows(2).all(|w| w[0] == w[1]),
            HD::F(v) => v.windows(2).all(|w| w[0].to_bits() == w[1].to_bits()),
        }
    }

    /// Element `i` as f64.
    pub(crate) fn get_f(&self, i: usize) -> f64 {
        match &self.data {
            HD::I(v) => v[i] as f64,
            HD::F(v) => v[i],
        }
    }

    /// Same data, another shape.
    pub(crate) fn with_shape(&self, shape: Vec<u64>) -> HostVal {
        HostVal { dt: self.dt, shape, data: self.data.clone() }
    }

    /// Picks elements by flat index.
    pub(crate) fn pick(&self, shape: Vec<u64>, idx: &[usize]) -> HostVal {
        let data = match &self.data {
            HD::I(v) => HD::I(idx.iter().map(|&i| v[i]).collect()),
            HD::F(v) => HD::F(idx.iter().map(|&i| v[i]).collect()),
        };
        HostVal { dt: self.dt, shape, data }
    }

    /// Converts to `dt` (ONNX Cast semantics for the supported types).
    pub(crate) fn cast(&self, dt: DType) -> HostVal {
        if dt == DType::Bool {
            let v = self.as_f64().into_iter().map(|x| i64::from(x != 0.0)).collect();
            return HostVal::ints(dt, self.shape.clone(), v);
        }
        if dt.is_float() {
            let v = self.as_f64().into_iter().map(|x| round_to(dt, x)).collect();
            HostVal::floats(dt, self.shape.clone(), v)
        } else {
            HostVal::ints(dt, self.shape.clone(), wrap_ints(dt, self.as_i64()))
        }
    }

    /// Little-endian bytes of the first element.
    pub(crate) fn to_bytes_one(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.len() > 0 {
            push_elem(&mut out, self.dt, self.get_f(0), self.first_i());
        }
        out
    }

    fn first_i(&self) -> i64 {
        match &self.data {
            HD::I(v) => v.first().copied().unwrap_or(0),
            HD::F(v) => v.first().map_or(0, |&x| x as i64),
        }
    }

    /// Little-endian bytes of all elements in `dt`.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * 8);
        match &self.data {
            HD::I(v) => {
                for &x in v {
                    push_elem(&mut out, self.dt, x as f64, x);
                }
            }
            HD::F(v) => {
                for &x in v {
                    push_elem(&mut out, self.dt, x, x as i64);
                }
            }
        }
        out
    }

    /// Reads raw little-endian bytes of `dt`.
    pub(crate) fn from_bytes(dt: DType, shape: Vec<u64>, b: &[u8]) -> Option<HostVal> {
        let n: u64 = shape.iter().product();
        let n = usize::try_from(n).ok()?;
        let w = (dt.bits()? / 8) as usize;
        if w == 0 || b.len() < n * w {
            return None;
        }
        let chunk = |i: usize| &b[i * w..(i + 1) * w];
        let data = match dt {
            DType::F32 => {
                HD::F((0..n).map(|i| f64::from(f32::from_le_bytes(arr4(chunk(i))))).collect())
            }
            DType::F64 => HD::F((0..n).map(|i| f64::from_le_bytes(arr8(chunk(i)))).collect()),
            DType::F16 => {
                HD::F((0..n).map(|i| f16_to_f64(u16::from_le_bytes(arr2(chunk(i))))).collect())
            }
            DType::BF16 => HD::F(
                (0..n)
                    .map(|i| {
                        f64::from(f32::from_bits(
                            u32::from(u16::from_le_bytes(arr2(chunk(i)))) << 16,
                        ))
                    })
                    .collect(),
            ),
            DType::I64 => HD::I((0..n).map(|i| i64::from_le_bytes(arr8(chunk(i)))).collect()),
            DType::U64 => {
                HD::I((0..n).map(|i| u64::from_le_bytes(arr8(chunk(i))) as i64).collect())
            }
            DType::I32 => {
                HD::I((0..n).map(|i| i64::from(i32::from_le_bytes(arr4(chunk(i))))).collect())
            }
            DType::U32 => {
                HD::I((0..n).map(|i| i64::from(u32::from_le_bytes(arr4(chunk(i))))).collect())
            }
            DType::I16 => {
                HD::I((0..n).map(|i| i64::from(i16::from_le_bytes(arr2(chunk(i))))).collect())
            }
            DType::U16 => {
                HD::I((0..n).map(|i| i64::from(u16::from_le_bytes(arr2(chunk(i))))).collect())
            }
            DType::I8 => HD::I((0..n).map(|i| i64::from(b[i] as i8)).collect()),
            DType::U8 | DType::Bool => HD::I((0..n).map(|i| i64::from(b[i])).collect()),
            _ => return None,
        };
        Some(HostVal { dt, shape, data })
    }
}

fn arr2(b: &[u8]) -> [u8; 2] {
    [b[0], b[1]]
}
fn arr4(b: &[u8]) -> [u8; 4] {
    [b[0], b[1], b[2], b[3]]
}
fn arr8(b: &[u8]) -> [u8; 8] {
    [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn round_to(dt: DType, x: f64) -> f64 {
    match dt {
        DType::F32 => f64::from(x as f32),
        DType::BF16 => f64::from(f32::from_bits(u32::from(bf16_bits(x as f32)) << 16)),
        DType::F16 => f16_to_f64(f16_bits(x as f32)),
        _ => x,
    }
}

fn wrap_ints(dt: DType, v: Vec<i64>) -> Vec<i64> {
    let f = |x: i64| -> i64 {
        match dt {
            DType::I32 => i64::from(x as i32),
            DType::I16 => i64::from(x as i16),
            DType::I8 => i64::from(x as i8),
            DType::U32 => i64::from(x as u32),
            DType::U16 => i64::from(x as u16),
            DType::U8 => i64::from(x as u8),
            _ => x,
        }
    };
    v.into_iter().map(f).collect()
}

fn push_elem(out: &mut Vec<u8>, dt: DType, f: f64, i: i64) {
    match dt {
        DType::F32 => out.extend_from_slice(&(f as f32).to_le_bytes()),
        DType::F64 => out.extend_from_slice(&f.to_le_bytes()),
        DType::F16 => out.extend_from_slice(&f16_bits(f as f32).to_le_bytes()),
        DType::BF16 => out.extend_from_slice(&bf16_bits(f as f32).to_le_bytes()),
        DType::I64 | DType::U64 => out.extend_from_slice(&i.to_le_bytes()),
        DType::I32 | DType::U32 => out.extend_from_slice(&(i as i32).to_le_bytes()),
        DType::I16 | DType::U16 => out.extend_from_slice(&(i as i16).to_le_bytes()),
        DType::I8 | DType::U8 => out.push(i as u8),
        DType::Bool => out.push(u8::from(i != 0)),
        _ => out.extend_from_slice(&(f as f32).to_le_bytes()),
    }
}

/// Round-to-nearest-even f32 → bf16 bits.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// f32 → IEEE half bits (round to nearest even).
pub(crate) fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && (r & 1) == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && (r & 1) == 1) {
        r += 1;
    }
    sign | r as u16
}

pub(crate) fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    if exp == 0 {
        sign * man * 2f64.powi(-24)
    } else if exp == 0x1f {
        if man == 0.0 { sign * f64::INFINITY } else { f64::NAN }
    } else {
        sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15)
    }
}

/// Row-major strides.
pub(crate) fn strides(shape: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as usize;
    }
    s
}

/// Numpy broadcast of two shapes.
pub(crate) fn broadcast_shapes(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i + a.len() >= r { a[i + a.len() - r] } else { 1 };
        let db = if i + b.len() >= r { b[i + b.len() - r] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// Flat source indices of broadcasting `shape` to `to`.
pub(crate) fn bcast_index(shape: &[u64], to: &[u64]) -> Vec<usize> {
    let n: u64 = to.iter().product();
    let off = to.len() - shape.len();
    let st = strides(shape);
    let tst = strides(to);
    (0..n as usize)
        .map(|flat| {
            let mut src = 0;
            for (i, &t) in tst.iter().enumerate() {
                let c = (flat / t) % to[i] as usize;
                if i >= off && shape[i - off] != 1 {
                    src += c * st[i - off];
                }
            }
            src
        })
        .collect()
}
