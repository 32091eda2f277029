//! TPU slice names (accelerator types) and their topologies.
//!
//! Naming rules (`tpu-hardware.md` §5, §6, §15.7):
//! - `v4-N`, `v5p-N`, `tpu7x-N` count **TensorCores** (2 per chip): `v5p-8` = 2x2x1 = 4 chips,
//!   `v4-8` = 4 chips, `tpu7x-128` = 4x4x4 = 64 chips.
//! - `v5litepod-N` (also written `v5e-N`) and `v6e-N` count **chips**: `v5e-8` = 2x4.
//! - A topology can be named directly: `v6e-2x4`, `v5e-2x2`, `v4-2x2x1`, `tpu7x-2x2x2`.
//!
//! Only the topologies listed in the catalog are valid (from the Google docs and XPK, §6).
//! Hosts are `ceil(chips / chips_per_host)` with 4 chips per host on v4, v5p and TPU7x and 8 on
//! v5e and v6e (§4, §5). Wraparound follows the chip's [`Wraparound`] rule (§3): v5e/v6e wrap
//! only on axes of length 16; v4/v5p slices wrap on every axis once every dimension is a
//! multiple of 4 (full 4x4x4 cubes) and not at all below that; TPU7x is undocumented.

use serde::Serialize;

use crate::catalog::Catalog;
use crate::chip::{Chip, SliceNaming, Wraparound};
use crate::error::HwError;

/// A TPU slice: a topology of chips of one generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Slice {
    /// Catalog id of the chip (`v5e`).
    pub chip: String,
    /// The official accelerator type (`v5litepod-8`, `v5p-8`, `v6e-8`).
    pub accelerator_type: String,
    /// Topology dimensions in chips (`[2, 4]`, `[2, 2, 1]`).
    pub dims: Vec<u32>,
    /// Chips in the slice.
    pub chips: u32,
    /// TensorCores in the slice, where the chip's TensorCore count is known.
    pub tensorcores: Option<u32>,
    /// Chips per host for this generation.
    pub chips_per_host: u32,
    /// Hosts the slice spans (a 1-chip v5e slice is part of one host: 1).
    pub hosts: u32,
    /// Per axis, whether it has wraparound links; `None` where the rule is not documented.
    pub wraps: Option<Vec<bool>>,
    /// Chip-to-chip ICI links inside the slice (each link counted once). Where `wraps` is
    /// `None` this counts the mesh links only, a lower bound.
    pub ici_links: u64,
}

impl Slice {
    /// The topology as written in names and GKE labels (`2x4`, `2x2x1`).
    #[must_use]
    pub fn topology(&self) -> String {
        dims_name(&self.dims)
    }

    /// True when the slice spans more than one host (needs multi-host setup: JobSet, DCN…).
    #[must_use]
    pub fn multi_host(&self) -> bool {
        self.hosts > 1
    }

    fn build(chip: &Chip, dims: &[u32]) -> Slice {
        let chips: u32 = dims.iter().product();
        let per_host = chip.chips_per_host.unwrap_or(1).max(1);
        let tensorcores = chip.tensorcores.map(|t| t * chips);
        let count = name_count(chip, chips);
        let prefix = chip.slice_prefixes.first().map_or(chip.id.as_str(), String::as_str);
        let wraps = wraps(chip.wraparound.unwrap_or(Wraparound::Unknown), dims);
        let ici_links = ici_links(dims, wraps.as_deref());
        Slice {
            chip: chip.id.clone(),
            accelerator_type: format!("{prefix}-{count}"),
            dims: dims.to_vec(),
            chips,
            tensorcores,
            chips_per_host: per_host,
            hosts: chips.div_ceil(per_host),
            wraps,
            ici_links,
        }
    }
}

/// The number an accelerator-type name gives for a slice of `chips` chips.
fn name_count(chip: &Chip, chips: u32) -> u32 {
    match (chip.slice_naming, chip.tensorcores) {
        (Some(SliceNaming::TensorCores), Some(tc)) => chips * tc,
        _ => chips,
    }
}

/// `[2, 2, 1]` as `2x2x1`.
#[must_use]
pub fn dims_name(dims: &[u32]) -> String {
    dims.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
}

/// Parses `2x4` / `2x2x1` into dimensions (each positive); `None` if it is not that form.
#[must_use]
pub fn parse_dims(s: &str) -> Option<Vec<u32>> {
    let dims: Option<Vec<u32>> = s
        .split('x')
        .map(|d| d.parse::<u32>().ok().filter(|&n| n > 0 && d.bytes().all(|b| b.is_ascii_digit())))
        .collect();
    dims.filter(|d| d.len() >= 2 && d.iter().try_fold(1u32, |acc, &x| acc.checked_mul(x)).is_some())
}

fn wraps(rule: Wraparound, dims: &[u32]) -> Option<Vec<bool>> {
    Some(match rule {
        Wraparound::AxesOf16 => dims.iter().map(|&d| d == 16).collect(),
        Wraparound::AllAxesMultipleOf4 => {
            let cubes = dims.iter().all(|&d| d % 4 == 0);
            dims.iter().map(|_| cubes).collect()
        }
        Wraparound::All => dims.iter().map(|&d| d > 2).collect(),
        Wraparound::None => dims.iter().map(|_| false).collect(),
        Wraparound::Unknown => return None,
    })
}

/// Links along each axis: `chips / len` lines of `len - 1` links, plus one per line where the
/// axis wraps (and is longer than 2, else the wrap would join the same pair again).
fn ici_links(dims: &[u32], wraps: Option<&[bool]>) -> u64 {
    let chips: u64 = dims.iter().map(|&d| u64::from(d)).product();
    dims.iter()
        .enumerate()
        .map(|(axis, &len)| {
            let len = u64::from(len);
            let lines = chips / len;
            let wrap = wraps.is_some_and(|w| w[axis]) && len > 2;
            lines * if wrap { len } else { len.saturating_sub(1) }
        })
        .sum()
}

impl Catalog {
    /// Every valid slice of a chip, smallest first (empty for GPUs).
    #[must_use]
    pub fn slices(&self, chip: &Chip) -> Vec<Slice> {
        chip.slices.iter().map(|dims| Slice::build(chip, dims)).collect()
    }

    /// Parses a slice name: `v5e-8`, `v5litepod-16`, `v5p-8`, `v6e-2x4`, `v4-2x2x1`, `tpu7x-8`.
    ///
    /// # Errors
    /// [`HwError::UnknownSlice`], saying which names are valid.
    pub fn slice(&self, name: &str) -> Result<Slice, HwError> {
        let fail = |reason: String| HwError::UnknownSlice { name: name.to_owned(), reason };
        let lower = name.trim().to_ascii_lowercase();
        let Some((prefix, rest)) = lower.rsplit_once('-') else {
            return Err(fail("expected `<type>-<count>` or `<type>-<topology>`, e.g. `v5e-8`, `v5p-8` or `v6e-2x4`".to_owned()));
        };
        let chip = match self
            .chips()
            .iter()
            .find(|c| c.slice_prefixes.iter().any(|p| p.eq_ignore_ascii_case(prefix)))
        {
            Some(chip) => chip,
            None => return Err(fail(self.unknown_prefix(prefix))),
        };
        let all = self.slices(chip);
        if rest.contains('x') {
            let Some(dims) = parse_dims(rest) else {
                return Err(fail(format!("`{rest}` is not a topology like `2x4` or `2x2x1`")));
            };
            if let Some(s) = all.iter().find(|s| s.dims == dims) {
                return Ok(s.clone());
            }
            let mut sorted = dims.clone();
            sorted.sort_unstable();
            if let Some(s) = all.iter().find(|s| {
                let mut d = s.dims.clone();
                d.sort_unstable();
                d == sorted
            }) {
                return Err(fail(format!(
                    "{} topologies are written `{}`; did you mean `{prefix}-{}`?",
                    chip.name,
                    s.topology(),
                    s.topology()
                )));
            }
            let names: Vec<String> = all.iter().map(Slice::topology).collect();
            return Err(fail(format!("{} topologies are {}", chip.name, list(&names))));
        }
        let count: u32 = rest.parse().map_err(|_| {
            fail(format!(
                "`{rest}` is neither a count nor a topology; {} slices are named like `{}`",
                chip.name,
                all.first().map_or(String::new(), |s| s.accelerator_type.clone())
            ))
        })?;
        if let Some(s) = all.iter().find(|s| name_count(chip, s.chips) == count) {
            return Ok(s.clone());
        }
        let counts: Vec<String> =
            all.iter().map(|s| name_count(chip, s.chips).to_string()).collect();
        Err(fail(match (chip.slice_naming, chip.tensorcores) {
            (Some(SliceNaming::TensorCores), Some(tc)) => format!(
                "{} slice names count TensorCores ({tc} per chip, so `{prefix}-8` is {} chips); valid counts are {}",
                chip.name,
                8 / tc.max(1),
                list(&counts)
            ),
            _ => format!("{} slices are {} chips", chip.name, list(&counts)),
        }))
    }

    fn unknown_prefix(&self, prefix: &str) -> String {
        let prefixes: Vec<String> = self
            .chips()
            .iter()
            .flat_map(|c| c.slice_prefixes.iter().map(|p| format!("`{p}`")))
            .collect();
        match self.find(prefix) {
            Some(chip) if chip.slice_prefixes.is_empty() => {
                format!(
                    "`{}` has no slices; slice names start with {}",
                    chip.name,
                    prefixes.join(", ")
                )
            }
            Some(chip) => format!(
                "{} slices are named `{}-N`, not `{prefix}-N`",
                chip.name,
                chip.slice_prefixes.first().map_or("", String::as_str)
            ),
            None => format!(
                "unknown TPU type `{prefix}`; slice names start with {}",
                prefixes.join(", ")
            ),
        }
    }
}

/// `a, b, c, d` — long lists shortened to the first eight, `…`, and the last.
fn list(items: &[String]) -> String {
    if items.len() <= 10 {
        return items.join(", ");
    }
    format!("{}, …, {}", items[..8].join(", "), items[items.len() - 1])
}
