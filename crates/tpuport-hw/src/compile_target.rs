//! [`CompileTarget`]: what libtpu needs to describe a slice for ahead-of-time compilation.
//!
//! JAX builds a compile-only TPU topology with `get_topology_desc(topology_name="v5e:2x4",
//! chip_config_name="default", chips_per_host_bounds=(2, 2, 1), num_slices=1,
//! wrap=(False, False, False))`, which reaches libtpu as `PJRT_TopologyDescription_Create` with
//! those keyword arguments as create options. The name is the chip's libtpu prefix (catalog
//! field `libtpu.topology`) and the slice's dimensions; the slice itself comes from the name the
//! user types (`v5e-8`, `v5p-8`, `v4-8`), so the TensorCore-counting names of v4, v5p and TPU7x
//! resolve to their chips first (`v5p-8` is the 4-chip `v5p:2x2x1`).
//!
//! - `chips_per_host_bounds`: MaxText's table uses `(2, 2, 1)` for every slice of more than one
//!   chip and `(1, 1, 1)` for `v6e-1`: here each axis is the slice's own length capped at
//!   `(2, 2, 1)`.
//! - `wrap`: the slice's wraparound per axis, padded to three axes with `false` (MaxText:
//!   `v5e-128` = 8x16 wraps `(False, True, False)`, `v4-128` = 4x4x4 wraps on all three).
//!   Where the catalog does not know the rule (TPU7x) the option is left out and libtpu decides.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::error::HwError;
use crate::slice::Slice;

/// A slice as libtpu's topology description takes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompileTarget {
    /// The slice.
    pub slice: Slice,
    /// Chip display name (`TPU v5e`).
    pub chip_name: String,
    /// `v5e:2x4`.
    pub topology_name: String,
    /// `chip_config_name` create option (`default`, `megacore`).
    pub chip_config_name: String,
    /// `chips_per_host_bounds` create option (three axes).
    pub chips_per_host_bounds: [u32; 3],
    /// `wrap` create option (three axes); `None` where the catalog does not know the rule.
    pub wrap: Option<[bool; 3]>,
    /// `num_slices` create option.
    pub num_slices: u32,
    /// Devices the compiler sees: chips times devices per chip (2 on TPU7x).
    pub devices: u32,
    /// HBM one device can use, bytes: the chip's HBM budget (`Chip::hbm_budget`) split over
    /// its devices.
    pub hbm_budget_per_device: Option<f64>,
    /// Nominal HBM of one device, bytes.
    pub hbm_per_device: Option<f64>,
}

impl Catalog {
    /// The libtpu topology for a slice name (`v5e-8`, `v6e-2x4`, `v5p-8`, `v4-8`, `tpu7x-8`).
    ///
    /// # Errors
    /// [`HwError::UnknownSlice`] for a name that is not a slice, or a chip whose libtpu naming
    /// the catalog does not have.
    pub fn compile_target(&self, name: &str) -> Result<CompileTarget, HwError> {
        let slice = self.slice(name)?;
        let chip = self.chip(&slice.chip)?;
        let Some(naming) = &chip.libtpu else {
            return Err(HwError::UnknownSlice {
                name: name.to_owned(),
                reason: format!("the catalog has no libtpu topology name for {}", chip.name),
            });
        };
        let mut bounds = [1u32; 3];
        for (axis, cap) in [2u32, 2, 1].into_iter().enumerate() {
            bounds[axis] = slice.dims.get(axis).copied().unwrap_or(1).min(cap);
        }
        let wrap = slice.wraps.as_ref().map(|w| {
            let mut out = [false; 3];
            for (o, &v) in out.iter_mut().zip(w) {
                *o = v;
            }
            out
        });
        let per_chip = chip.devices_per_chip.unwrap_or(1).max(1);
        Ok(CompileTarget {
            topology_name: format!("{}:{}", naming.topology, slice.topology()),
            chip_name: chip.name.clone(),
            chip_config_name: naming.chip_config.clone(),
            chips_per_host_bounds: bounds,
            wrap,
            num_slices: 1,
            devices: slice.chips * per_chip,
            hbm_budget_per_device: chip.hbm_budget().map(|b| b / f64::from(per_chip)),
            hbm_per_device: chip.hbm_capacity.map(|b| b / f64::from(per_chip)),
            slice,
        })
    }
}
