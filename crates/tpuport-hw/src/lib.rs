//! tpuport-hw: what tpuport knows about accelerators.
//!
//! - [`Catalog`]: TPU v4, v5e, v5p, v6e, TPU7x and NVIDIA A100/H100/H200, read from an embedded
//!   data file (`data/catalog.toml`). Every figure carries a source ([`Chip::source`]), taken
//!   from the project's hardware reference (`tpu-hardware.md`) and the public pages it cites; a
//!   figure the reference lacks is `None`, never a guess. [`Catalog::from_file`] layers a user
//!   file on top (`--catalog FILE`): prices are low confidence and meant to be overridden.
//! - [`Slice`]: accelerator-type names (`v5e-8`, `v5litepod-16`, `v5p-8`, `v6e-2x4`,
//!   `v4-2x2x1`, `tpu7x-8`) and their chips, hosts, topology, wraparound and ICI links.
//! - [`CompileTarget`]: a slice as libtpu's topology description takes it (`v5e-8` →
//!   `v5e:2x4` with its create options), for ahead-of-time compilation without a TPU.
//! - [`XlaLayout`]: a layout as the TPU compiler reports it (`{1,0:T(8,128)}`) and the bytes
//!   an array takes under it.
//! - [`tiling`]: XLA/TPU layout padding ((8,128) tiles, per-dtype row tiles per generation,
//!   compact small tiles, MXU 128 vs 256) and MXU utilization of a padded matmul;
//!   [`device_layout`]: the layout the TPU compiler picks for an array (least padded dimension
//!   order, small row tiles, vector tiles), as measured on libtpu.
//!
//! ```
//! use tpuport_hw::{Catalog, padded_bytes};
//! use tpuport_model::DType;
//!
//! let catalog = Catalog::builtin();
//! let v6e = catalog.chip("trillium")?;
//! assert_eq!(v6e.mxu_size, Some(256));
//! assert!(v6e.source("peak.bf16").is_some());
//!
//! let slice = catalog.slice("v5p-8")?;
//! assert_eq!((slice.topology().as_str(), slice.chips, slice.hosts), ("2x2x1", 4, 1));
//!
//! // bf16[32,100] pads to [32,128]: 8 KiB.
//! assert_eq!(padded_bytes(&[32, 100], DType::BF16, v6e)?, 32 * 128 * 2);
//! # Ok::<(), tpuport_hw::HwError>(())
//! ```
//!
//! Design decisions:
//! - Figures are written with units in the data file (`"819 GB/s"`) and held in base units
//!   (bytes, bytes/s, operations/s, watts, USD/h) as `Option<f64>`.
//! - The catalog is read field by field rather than by serde derive, so an error names the file,
//!   the chip and the dotted field in one line.
//! - Nothing here prints.

mod catalog;
mod chip;
mod compile_target;
mod docs;
mod error;
mod reader;
mod slice;
pub mod tiling;
mod units;
mod xla_layout;

pub use catalog::{BUILTIN_ORIGIN, BUILTIN_TOML, Catalog, MAX_CATALOG_BYTES};
pub use chip::{
    Chip, ChipKind, Confidence, HBM_BUDGET_FRACTION, LibtpuNaming, Peak, Price, SliceNaming,
    Tiling, TopologyFamily, VmShape, Wraparound,
};
pub use compile_target::CompileTarget;
pub use docs::{catalog_markdown, format_bandwidth, format_bytes, format_tera};
pub use error::HwError;
pub use slice::{Slice, dims_name, parse_dims};
pub use tiling::{
    DeviceLayout, MatmulPadding, Padded, Placement, device_bytes, device_bytes_in_order,
    device_layout, matmul_utilization, padded_bytes, padded_shape,
};
pub use xla_layout::XlaLayout;
