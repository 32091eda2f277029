//! XLA/TPU layout tiling: how much memory a tensor really takes, and how full the MXU is.
//!
//! Rules (`tpu-hardware.md` §9, with its sources):
//! - **Tiles cover the two most-minor dimensions**; each pads to `ceil(d / t) * t`, major
//!   dimensions stay unpadded [XLA-tile].
//! - **Minor dimension (lanes): 128** on every generation [XLA-tile].
//! - **Second-minor dimension (rows) per element width** (`get_sublane_tiling` in
//!   [JAX-tpuinfo]): 32-bit 8; 16-bit 8 on v4–v6e (the `(8,128)(2,1)` bf16 packing of
//!   [XLA-tile]) and 16 on TPU7x ("XLA allows large 2nd minor tiling by default starting with
//!   TPU7x"); 8-bit 32; 4-bit 64. The per-chip values live in the catalog's `tiling` table.
//! - **Compact second-minor layout** in memory: a second-minor dimension of 1–2 uses a `2x128`
//!   tile, 3–4 a `4x128` tile [XLA-tile]. So `f32[1,1]` takes 2x128x4 B = 1 KiB of HBM.
//! - **Vector compute pads to the full tile**: "Adding two 1x1 arrays costs as much as adding two
//!   8x128 arrays" [JAX-pallas]. [`Placement::Vector`] applies this rule (no compact tile), so
//!   `f32[1,1]` occupies an 8x128 = 4 KiB vreg tile.
//! - **PRED (bool) takes 4 bytes** per element [XLA-tile].
//! - **MXU**: weights pad to at least 128 (256 on v6e and TPU7x); "smaller axes are padded to
//!   128" [SB-tpu]; the MXU takes the LHS in 8-row groups ("one `bf16[8,128] @ bf16[128,128]`
//!   every 8 cycles", [SB-tpu]).
//!
//! The byte formula is the reference's *derived planner formula*, an inference to be checked
//! against `compiled.memory_analysis()`. Rank-0/1 arrays, PRED tiling, 64-bit and complex types
//! have no documented layout; their results are marked with [`Padded::approximation`].

use serde::Serialize;
use tpuport_model::DType;

use crate::chip::{Chip, Tiling};
use crate::error::HwError;

/// Which padding rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// HBM/VMEM layout, with the compact 2x128 / 4x128 tiles for tiny second-minor dimensions.
    Memory,
    /// Vector-register computation, always in full tiles.
    Vector,
}

/// A shape after TPU tiling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Padded {
    /// The logical shape.
    pub shape: Vec<u64>,
    /// The shape after padding the two most-minor dimensions (rank 0 and 1 are viewed as
    /// `[1, n]` first, so this always has rank >= 2).
    pub padded: Vec<u64>,
    /// The tile used: `[rows, lanes]`.
    pub tile: [u64; 2],
    /// Storage bits per element on TPU (32 for bool).
    pub element_bits: u32,
    /// Bytes of the logical shape at TPU element size.
    pub logical_bytes: u64,
    /// Bytes after padding.
    pub padded_bytes: u64,
    /// Why the figure is an estimate beyond the derived formula, if it is.
    pub approximation: Option<&'static str>,
}

impl Padded {
    /// Fraction of the padded bytes that is padding (0 = none, 0.875 = 7/8 wasted).
    #[must_use]
    pub fn waste(&self) -> f64 {
        if self.padded_bytes == 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss, reason = "a ratio; exactness is not needed")]
        let w = 1.0 - self.logical_bytes as f64 / self.padded_bytes as f64;
        w
    }
}

/// A matmul `(m,k) x (k,n)` after MXU padding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatmulPadding {
    /// Logical `[m, k, n]`.
    pub logical: [u64; 3],
    /// Padded `[m, k, n]`: m to the 8-row LHS group, k and n to the MXU size.
    pub padded: [u64; 3],
    /// The chip's MXU size used for k and n.
    pub mxu_size: u64,
    /// Useful multiply-adds over padded multiply-adds, in [0, 1].
    pub utilization: f64,
}

fn tiling_of(chip: &Chip) -> Result<&Tiling, HwError> {
    chip.tiling.as_ref().ok_or_else(|| HwError::NoTiling { chip: chip.id.clone() })
}

/// Storage bits per element on TPU: the dtype's width, except bool (4 bytes, [XLA-tile]).
///
/// # Errors
/// [`HwError::UnsupportedDtype`] for strings.
pub fn element_bits(dtype: DType) -> Result<u32, HwError> {
    if dtype == DType::Bool {
        return Ok(32);
    }
    dtype.bits().ok_or_else(|| HwError::UnsupportedDtype { dtype: dtype.name().to_owned() })
}

/// The second-minor (row) tile for `dtype` on `chip`: 8 for 32-bit, 8 or 16 for 16-bit
/// (16 on TPU7x), 32 for 8-bit, 64 for 4-bit. 64-bit and complex types use the 32-bit tile.
///
/// # Errors
/// The chip has no tiling rules, or the dtype has no TPU layout.
pub fn row_tile(dtype: DType, chip: &Chip) -> Result<u32, HwError> {
    let t = tiling_of(chip)?;
    Ok(match element_bits(dtype)? {
        16 => t.rows_16bit,
        8 => t.rows_8bit,
        4 => t.rows_4bit,
        _ => t.rows_32bit,
    })
}

/// The tile `[rows, lanes]` for a tensor whose second-minor dimension is `second_minor`.
///
/// # Errors
/// As [`row_tile`].
pub fn tile(
    dtype: DType,
    chip: &Chip,
    second_minor: u64,
    placement: Placement,
) -> Result<[u64; 2], HwError> {
    let rows = u64::from(row_tile(dtype, chip)?);
    let lanes = u64::from(tiling_of(chip)?.lanes);
    let rows = match placement {
        Placement::Memory if second_minor <= 2 => rows.min(2),
        Placement::Memory if second_minor <= 4 => rows.min(4),
        _ => rows,
    };
    Ok([rows, lanes])
}

/// Pads `shape` of `dtype` on `chip` under `placement`.
///
/// # Errors
/// No tiling rules, a dtype without a TPU layout, or a size that overflows 64 bits.
pub fn pad(
    shape: &[u64],
    dtype: DType,
    chip: &Chip,
    placement: Placement,
) -> Result<Padded, HwError> {
    let bits = element_bits(dtype)?;
    let mut approximation = match dtype {
        DType::Bool => Some(
            "PRED takes 4 bytes per element; its tiling is not documented, 32-bit tiles assumed",
        ),
        d if d.is_complex() || bits == 64 => {
            Some("64-bit and complex layouts are not documented; 32-bit tiles assumed")
        }
        _ => None,
    };
    let mut view: Vec<u64> = shape.to_vec();
    if view.len() < 2 {
        approximation =
            Some("rank-0 and rank-1 arrays use special layouts; counted as a [1, n] matrix");
        while view.len() < 2 {
            view.insert(0, 1);
        }
    }
    let rank = view.len();
    let [rows, lanes] = tile(dtype, chip, view[rank - 2], placement)?;
    let overflow = || HwError::Overflow { shape: shape.to_vec() };
    let mut padded = view.clone();
    padded[rank - 2] = view[rank - 2].div_ceil(rows).checked_mul(rows).ok_or_else(overflow)?;
    padded[rank - 1] = view[rank - 1].div_ceil(lanes).checked_mul(lanes).ok_or_else(overflow)?;
    let bytes = |dims: &[u64]| -> Result<u64, HwError> {
        let elements =
            dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
        elements.checked_mul(u64::from(bits)).map(|b| b.div_ceil(8)).ok_or_else(overflow)
    };
    Ok(Padded {
        logical_bytes: bytes(shape)?,
        padded_bytes: bytes(&padded)?,
        shape: shape.to_vec(),
        padded,
        tile: [rows, lanes],
        element_bits: bits,
        approximation,
    })
}

/// The shape `shape` of `dtype` takes in TPU memory on `chip` ([`Placement::Memory`]).
///
/// `f32[1,1]` -> `[2, 128]` (compact tile); `bf16[32,100]` -> `[32, 128]`.
///
/// # Errors
/// As [`pad`].
pub fn padded_shape(shape: &[u64], dtype: DType, chip: &Chip) -> Result<Vec<u64>, HwError> {
    pad(shape, dtype, chip, Placement::Memory).map(|p| p.padded)
}

/// Bytes `shape` of `dtype` takes in TPU memory on `chip` after tiling.
///
/// `prod(dims[:-2]) * roundup(d[-2], S) * roundup(d[-1], 128) * itemsize` with `S` from
/// [`tile`].
///
/// # Errors
/// As [`pad`].
pub fn padded_bytes(shape: &[u64], dtype: DType, chip: &Chip) -> Result<u64, HwError> {
    pad(shape, dtype, chip, Placement::Memory).map(|p| p.padded_bytes)
}

/// MXU utilization of `(m,k) x (k,n)` on `chip` after padding: m to 8-row LHS groups, k and n
/// to the MXU size (128 up to v5p, 256 on v6e and TPU7x). A batch-1 matmul uses at most 1/8.
///
/// # Errors
/// The chip has no MXU size or tiling rules, or a padded size overflows. A zero dimension
/// gives utilization 0.
pub fn matmul_utilization(m: u64, k: u64, n: u64, chip: &Chip) -> Result<MatmulPadding, HwError> {
    let mxu = u64::from(chip.mxu_size.ok_or_else(|| HwError::NoTiling { chip: chip.id.clone() })?);
    let rows = u64::from(tiling_of(chip)?.rows_32bit);
    let overflow = || HwError::Overflow { shape: vec![m, k, n] };
    let round = |x: u64, t: u64| x.div_ceil(t).checked_mul(t).ok_or_else(overflow);
    let padded = [round(m, rows)?, round(k, mxu)?, round(n, mxu)?];
    #[allow(clippy::cast_precision_loss, reason = "a ratio; exactness is not needed")]
    let utilization = if m == 0 || k == 0 || n == 0 {
        0.0
    } else {
        (m as f64 / padded[0] as f64)
            * (k as f64 / padded[1] as f64)
            * (n as f64 / padded[2] as f64)
    };
    Ok(MatmulPadding { logical: [m, k, n], padded, mxu_size: mxu, utilization })
}

/// An array as the TPU compiler lays it out in HBM when it picks the layout itself (entry
/// parameters, and intermediates through layout assignment): the dimension order that pads
/// least, a row tile fitted to a small second-minor dimension, special tiles for vectors.
///
/// Rules, measured on libtpu 0.0.52 for v5e and v6e (`tests/data/libtpu_layouts.json`,
/// `docs/compile.md`):
/// - **Dimension order**: any two dimensions become the tiled (second-minor, minor) pair, the
///   others stay major in their logical order; the compiler takes the least padded choice, so
///   a conv kernel is unpadded in OIHW and HWIO alike (f32[512,512,3,3] → `{1,0,3,2:T(8,128)}`)
///   and f32[1000,3] is stored transposed.
/// - **Row tile** for a second-minor extent `s`: 1 when `s` is 1 (`T(1,128)`: f32[1,784],
///   f32[2048,1024,1,1]), 2 when `s` is 2, 4 when `s` is 3–4 (`T(4,128)`), else the chip's row
///   tile: 8 for 32-bit and 8-bit types (int8 uses a `(4,1)` sub-tile, not 32 rows), the chip's
///   16-bit row tile for 16-bit types (`T(8,128)(2,1)` on v5e/v6e).
/// - **Vectors and scalars**: one tile of the next power of two elements, at least 512 bytes'
///   worth (`T(128)` for f32[10], `T(512)` for int8[3] and f32[512], `T(1024)` for f32[768]);
///   longer vectors pad to a multiple of 1024 elements.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceLayout {
    /// Dimension numbers minor to major, as XLA writes a layout.
    pub minor_to_major: Vec<usize>,
    /// The first tile: `[rows, lanes]`, or `[lanes]` for a vector or scalar.
    pub tile: Vec<u64>,
    /// The array in physical (major-to-minor) order after padding.
    pub padded_physical: Vec<u64>,
    /// Bytes of the logical shape at TPU element size.
    pub logical_bytes: u64,
    /// Bytes in this layout.
    pub bytes: u64,
}

impl DeviceLayout {
    /// XLA's notation of the layout (`{1,0,3,2:T(8,128)}`), without sub-tiles.
    #[must_use]
    pub fn notation(&self) -> String {
        let dims: Vec<String> = self.minor_to_major.iter().map(usize::to_string).collect();
        let tile: Vec<String> = self.tile.iter().map(u64::to_string).collect();
        format!("{{{}:T({})}}", dims.join(","), tile.join(","))
    }
}

/// The layout the TPU compiler gives `shape` of `dtype` on `chip` (rules on [`DeviceLayout`]).
///
/// # Errors
/// No tiling rules, a dtype without a TPU layout, or a size that overflows 64 bits.
pub fn device_layout(shape: &[u64], dtype: DType, chip: &Chip) -> Result<DeviceLayout, HwError> {
    let t = tiling_of(chip)?;
    let bits = element_bits(dtype)?;
    let overflow = || HwError::Overflow { shape: shape.to_vec() };
    let bytes = |dims: &[u64]| -> Result<u64, HwError> {
        let elements =
            dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
        elements.checked_mul(u64::from(bits)).map(|b| b.div_ceil(8)).ok_or_else(overflow)
    };
    let logical_bytes = bytes(shape)?;
    let round = |x: u64, m: u64| x.div_ceil(m).checked_mul(m).ok_or_else(overflow);
    if shape.len() < 2 {
        let n = shape.first().copied().unwrap_or(1);
        let small = 4096 / u64::from(bits.max(1));
        let lanes = n.max(1).next_power_of_two().clamp(small, small.max(1024));
        let padded = round(n.max(1), lanes)?;
        return Ok(DeviceLayout {
            minor_to_major: (0..shape.len()).collect(),
            tile: vec![lanes],
            padded_physical: vec![padded],
            logical_bytes,
            bytes: bytes(&[padded])?,
        });
    }
    let lanes = u64::from(t.lanes);
    let full_rows = u64::from(if bits == 16 { t.rows_16bit } else { t.rows_32bit });
    let rows_for = |s: u64| match s {
        0 | 1 => 1,
        2 => 2.min(full_rows),
        3 | 4 => 4.min(full_rows),
        _ => full_rows,
    };
    let r = shape.len();
    // Candidates in order of preference: the logical order first, then every other pair; a
    // later one replaces the best only when it pads strictly less.
    let mut pairs = vec![(r - 2, r - 1)];
    for j in (0..r).rev() {
        for i in (0..r).rev() {
            if i != j && (i, j) != (r - 2, r - 1) {
                pairs.push((i, j));
            }
        }
    }
    let mut best: Option<DeviceLayout> = None;
    for (i, j) in pairs {
        let mut physical: Vec<u64> = Vec::with_capacity(r);
        let mut order: Vec<usize> = (0..r).filter(|&k| k != i && k != j).collect();
        order.extend([i, j]);
        for &k in &order {
            physical.push(shape[k]);
        }
        let rows = rows_for(shape[i]);
        physical[r - 2] = round(shape[i], rows)?;
        physical[r - 1] = round(shape[j], lanes)?;
        let b = bytes(&physical)?;
        if best.as_ref().is_none_or(|x| b < x.bytes) {
            best = Some(DeviceLayout {
                minor_to_major: order.iter().rev().copied().collect(),
                tile: vec![rows, lanes],
                padded_physical: physical,
                logical_bytes,
                bytes: b,
            });
        }
    }
    best.ok_or_else(overflow)
}

/// Bytes of an array already in physical (major-to-minor) order `physical`, tiled by the rules
/// of [`device_layout`] without reordering: the layout of a convolution activation, whose
/// feature dimension the compiler keeps minor (`[N, H, W, C]` for an ONNX `[N, C, H, W]`).
///
/// # Errors
/// As [`device_layout`].
pub fn device_bytes_in_order(physical: &[u64], dtype: DType, chip: &Chip) -> Result<u64, HwError> {
    if physical.len() < 2 {
        return device_bytes(physical, dtype, chip);
    }
    let t = tiling_of(chip)?;
    let bits = element_bits(dtype)?;
    let overflow = || HwError::Overflow { shape: physical.to_vec() };
    let full_rows = u64::from(if bits == 16 { t.rows_16bit } else { t.rows_32bit });
    let r = physical.len();
    let s = physical[r - 2];
    let rows = match s {
        0 | 1 => 1,
        2 => 2.min(full_rows),
        3 | 4 => 4.min(full_rows),
        _ => full_rows,
    };
    let mut dims = physical.to_vec();
    dims[r - 2] = s.div_ceil(rows).checked_mul(rows).ok_or_else(overflow)?;
    let lanes = u64::from(t.lanes);
    dims[r - 1] = dims[r - 1].div_ceil(lanes).checked_mul(lanes).ok_or_else(overflow)?;
    let elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
    elements.checked_mul(u64::from(bits)).map(|b| b.div_ceil(8)).ok_or_else(overflow)
}

/// Bytes of [`device_layout`].
///
/// # Errors
/// As [`device_layout`].
pub fn device_bytes(shape: &[u64], dtype: DType, chip: &Chip) -> Result<u64, HwError> {
    device_layout(shape, dtype, chip).map(|l| l.bytes)
}
