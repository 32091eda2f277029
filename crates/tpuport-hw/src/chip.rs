//! One accelerator of the catalog: its figures, each with a source.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::HwError;
use crate::reader::Reader;
use crate::units::Quantity;

/// Fraction of nominal HBM to plan with when no usable figure is known (§14.8).
pub const HBM_BUDGET_FRACTION: f64 = 0.97;

/// TPU or GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChipKind {
    /// A Cloud TPU chip.
    Tpu,
    /// An NVIDIA GPU (for GPU-to-TPU comparisons).
    Gpu,
}

/// How chips of a pod are wired together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyFamily {
    /// 2D torus of chips (v5e, v6e): slices are `AxB`.
    #[serde(rename = "2d-torus")]
    Torus2d,
    /// 3D mesh that becomes a torus from full 4x4x4 cubes (v4, v5p): slices are `AxBxC`.
    #[serde(rename = "3d-torus")]
    Torus3d,
    /// 3D slices (`AxBxC`) without a documented torus statement (TPU7x).
    #[serde(rename = "3d")]
    Mesh3d,
    /// GPUs joined by NVLink inside one node.
    NvlinkNode,
}

impl TopologyFamily {
    /// Number of topology dimensions of a slice (`None` for GPU nodes).
    #[must_use]
    pub const fn rank(self) -> Option<usize> {
        match self {
            TopologyFamily::Torus2d => Some(2),
            TopologyFamily::Torus3d | TopologyFamily::Mesh3d => Some(3),
            TopologyFamily::NvlinkNode => None,
        }
    }

    /// The spelling used in the catalog file.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            TopologyFamily::Torus2d => "2d-torus",
            TopologyFamily::Torus3d => "3d-torus",
            TopologyFamily::Mesh3d => "3d",
            TopologyFamily::NvlinkNode => "nvlink-node",
        }
    }
}

/// Which axes of a slice have wraparound ICI links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wraparound {
    /// Only axes of length 16 wrap (v5e, v6e; "wraparound only on axes of length 16").
    AxesOf16,
    /// Every axis wraps when every dimension is a multiple of 4, i.e. the slice is built from
    /// full 4x4x4 cubes; smaller slices have no wraparound (v4, v5p).
    AllAxesMultipleOf4,
    /// Every axis longer than 2 wraps.
    All,
    /// No axis wraps.
    None,
    /// Not documented (TPU7x).
    Unknown,
}

impl Wraparound {
    /// The spelling used in the catalog file.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Wraparound::AxesOf16 => "axes-of-16",
            Wraparound::AllAxesMultipleOf4 => "all-axes-multiple-of-4",
            Wraparound::All => "all",
            Wraparound::None => "none",
            Wraparound::Unknown => "unknown",
        }
    }
}

/// What the number in an accelerator-type name counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SliceNaming {
    /// `v5litepod-8`, `v6e-8`: eight chips.
    Chips,
    /// `v4-8`, `v5p-8`, `tpu7x-8`: eight TensorCores, i.e. four 2-core chips.
    TensorCores,
}

/// How much to trust a price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Third-party or dated figure.
    Low,
    /// Reported from an official announcement or an archived official page.
    Medium,
    /// Set by the user in a `--catalog` file.
    User,
}

impl Confidence {
    /// The spelling used in the catalog file.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::User => "user",
        }
    }
}

/// Dense peak compute per chip, in operations per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Peak {
    /// bf16 FLOP/s.
    pub bf16: Option<f64>,
    /// int8 OP/s.
    pub int8: Option<f64>,
    /// fp8 FLOP/s.
    pub fp8: Option<f64>,
    /// int4 OP/s.
    pub int4: Option<f64>,
    /// f32 FLOP/s (native, not bf16 passes).
    pub f32: Option<f64>,
}

/// XLA/TPU layout tiling of the two most-minor dimensions (`tpu-hardware.md` §9).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tiling {
    /// Minor-dimension tile (lanes): 128.
    pub lanes: u32,
    /// Second-minor tile (rows) for 32-bit elements: 8.
    pub rows_32bit: u32,
    /// Rows for 16-bit elements: 8 before TPU7x, 16 on TPU7x.
    pub rows_16bit: u32,
    /// Rows for 8-bit elements: 32.
    pub rows_8bit: u32,
    /// Rows for 4-bit elements: 64.
    pub rows_4bit: u32,
}

/// How libtpu names this chip's topologies for ahead-of-time compilation
/// (`PJRT_TopologyDescription_Create`): `<topology>:<dims>` plus a chip configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LibtpuNaming {
    /// Prefix of the topology name (`v5e` in `v5e:2x4`).
    pub topology: String,
    /// `chip_config_name` create option: `megacore` on the 2-TensorCore v4/v5p, else
    /// `default`.
    pub chip_config: String,
}

/// List price per chip-hour (or GPU-hour), in US dollars. Low confidence: override it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Price {
    /// On-demand price.
    pub on_demand: Option<f64>,
    /// With a 1-year commitment.
    pub commit_1yr: Option<f64>,
    /// With a 3-year commitment.
    pub commit_3yr: Option<f64>,
    /// How far to trust these figures.
    pub confidence: Option<Confidence>,
}

/// A VM (machine) type and its shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VmShape {
    /// GCE machine type, e.g. `ct5lp-hightpu-8t`.
    pub machine_type: String,
    /// Chips attached to one VM.
    pub chips: u32,
    /// vCPUs, where known.
    pub vcpus: Option<u32>,
    /// VM memory in bytes, where known.
    pub memory: Option<f64>,
    /// Where these figures come from.
    pub source: String,
}

/// One accelerator. Every `Some` figure has a source ([`Chip::source`]); figures the reference
/// does not give are `None`. Bytes, bytes per second, operations per second, watts, USD/hour.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chip {
    /// Catalog id (`v5e`, `tpu7x`, `h100`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Other names it is known by (`v5litepod`, `trillium`, JAX device kinds, GKE labels).
    pub aliases: Vec<String>,
    /// TPU or GPU.
    pub kind: ChipKind,
    /// TPU generation number (4, 5, 6, 7).
    pub generation: Option<u32>,
    /// Dense peak compute per chip.
    pub peak: Peak,
    /// HBM per chip, bytes.
    pub hbm_capacity: Option<f64>,
    /// HBM per chip a program can actually use, bytes (observed).
    pub hbm_usable: Option<f64>,
    /// HBM bandwidth per chip, bytes/s.
    pub hbm_bandwidth: Option<f64>,
    /// ICI bandwidth per chip, bidirectional total, bytes/s.
    pub ici_bandwidth: Option<f64>,
    /// ICI bandwidth of one link, one way, bytes/s.
    pub ici_link_bandwidth: Option<f64>,
    /// ICI ports per chip.
    pub ici_ports: Option<u32>,
    /// Data-center network bandwidth per chip, bytes/s.
    pub dcn_bandwidth: Option<f64>,
    /// NVLink bandwidth per GPU, bidirectional total, bytes/s.
    pub nvlink_bandwidth: Option<f64>,
    /// TensorCores per chip.
    pub tensorcores: Option<u32>,
    /// Framework (JAX) devices per chip.
    pub devices_per_chip: Option<u32>,
    /// MXUs per TensorCore.
    pub mxus_per_tensorcore: Option<u32>,
    /// MXU edge (128 or 256): matmul operands pad to multiples of it.
    pub mxu_size: Option<u32>,
    /// VMEM per TensorCore, bytes.
    pub vmem_per_tensorcore: Option<f64>,
    /// SparseCores per chip.
    pub sparsecores: Option<u32>,
    /// Board power, watts.
    pub tdp: Option<f64>,
    /// Chips (GPUs) per host.
    pub chips_per_host: Option<u32>,
    /// Host DRAM, bytes.
    pub host_memory: Option<f64>,
    /// VM types and shapes.
    pub vms: Vec<VmShape>,
    /// Interconnect topology family.
    pub topology: Option<TopologyFamily>,
    /// Wraparound rule for slices.
    pub wraparound: Option<Wraparound>,
    /// Chips in a full pod.
    pub pod_chips: Option<u32>,
    /// Most chips in one slice.
    pub max_slice_chips: Option<u32>,
    /// What the number in `v5p-8` counts.
    pub slice_naming: Option<SliceNaming>,
    /// Accelerator-type prefixes, the official one first (`v5litepod`, then `v5e`).
    pub slice_prefixes: Vec<String>,
    /// Valid slice topologies, smallest first (`[2, 4]` is `2x4`).
    pub slices: Vec<Vec<u32>>,
    /// Layout tiling rules.
    pub tiling: Option<Tiling>,
    /// libtpu's topology naming (TPUs whose naming is known).
    pub libtpu: Option<LibtpuNaming>,
    /// List price per chip-hour.
    pub price: Price,
    sources: BTreeMap<String, String>,
}

impl Chip {
    /// Where the figure `field` comes from (dotted key: `hbm_bandwidth`, `peak.bf16`).
    #[must_use]
    pub fn source(&self, field: &str) -> Option<&str> {
        self.sources.get(field).map(String::as_str)
    }

    /// Every `(field, source)` pair.
    pub fn sources(&self) -> impl Iterator<Item = (&str, &str)> {
        self.sources.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// True for TPUs.
    #[must_use]
    pub fn is_tpu(&self) -> bool {
        self.kind == ChipKind::Tpu
    }

    /// Chip-to-chip bandwidth per chip (ICI for TPUs, NVLink for GPUs), bidirectional, bytes/s.
    #[must_use]
    pub fn interconnect_bandwidth(&self) -> Option<f64> {
        self.ici_bandwidth.or(self.nvlink_bandwidth)
    }

    /// HBM a plan may use, bytes: the observed usable figure where the catalog has one (v6e:
    /// 31.25 GiB of 32), else 97% of nominal, the budget `tpu-hardware.md` §14.8 recommends
    /// because the runtime reserves some HBM.
    #[must_use]
    pub fn hbm_budget(&self) -> Option<f64> {
        self.hbm_usable.or(self.hbm_capacity.map(|c| c * HBM_BUDGET_FRACTION))
    }

    /// The keys of every figure present on this chip; each must have a source.
    #[must_use]
    pub fn figure_keys(&self) -> Vec<&'static str> {
        let counts = [
            ("generation", self.generation),
            ("ici_ports", self.ici_ports),
            ("tensorcores", self.tensorcores),
            ("devices_per_chip", self.devices_per_chip),
            ("mxus_per_tensorcore", self.mxus_per_tensorcore),
            ("mxu_size", self.mxu_size),
            ("sparsecores", self.sparsecores),
            ("chips_per_host", self.chips_per_host),
            ("pod_chips", self.pod_chips),
            ("max_slice_chips", self.max_slice_chips),
        ];
        let figures = [
            ("peak.bf16", self.peak.bf16),
            ("peak.int8", self.peak.int8),
            ("peak.fp8", self.peak.fp8),
            ("peak.int4", self.peak.int4),
            ("peak.f32", self.peak.f32),
            ("hbm_capacity", self.hbm_capacity),
            ("hbm_usable", self.hbm_usable),
            ("hbm_bandwidth", self.hbm_bandwidth),
            ("ici_bandwidth", self.ici_bandwidth),
            ("ici_link_bandwidth", self.ici_link_bandwidth),
            ("dcn_bandwidth", self.dcn_bandwidth),
            ("nvlink_bandwidth", self.nvlink_bandwidth),
            ("vmem_per_tensorcore", self.vmem_per_tensorcore),
            ("tdp", self.tdp),
            ("host_memory", self.host_memory),
            ("price.on_demand", self.price.on_demand),
            ("price.commit_1yr", self.price.commit_1yr),
            ("price.commit_3yr", self.price.commit_3yr),
        ];
        let facts = [
            ("topology", self.topology.is_some()),
            ("wraparound", self.wraparound.is_some()),
            ("slice_naming", self.slice_naming.is_some()),
            ("slices", !self.slices.is_empty()),
        ];
        let mut keys: Vec<&'static str> = Vec::new();
        keys.extend(counts.iter().filter(|(_, v)| v.is_some()).map(|(k, _)| *k));
        keys.extend(figures.iter().filter(|(_, v)| v.is_some()).map(|(k, _)| *k));
        keys.extend(facts.iter().filter(|(_, v)| *v).map(|(k, _)| *k));
        if self.libtpu.is_some() {
            keys.extend(["libtpu.topology", "libtpu.chip_config"]);
        }
        if self.tiling.is_some() {
            keys.extend([
                "tiling.lanes",
                "tiling.rows_32bit",
                "tiling.rows_16bit",
                "tiling.rows_8bit",
                "tiling.rows_4bit",
            ]);
        }
        keys
    }

    /// Every key a chip entry may give a source for, present or not.
    pub(crate) const SOURCE_KEYS: [&'static str; 39] = [
        "generation",
        "ici_ports",
        "tensorcores",
        "devices_per_chip",
        "mxus_per_tensorcore",
        "mxu_size",
        "sparsecores",
        "chips_per_host",
        "pod_chips",
        "max_slice_chips",
        "peak.bf16",
        "peak.int8",
        "peak.fp8",
        "peak.int4",
        "peak.f32",
        "hbm_capacity",
        "hbm_usable",
        "hbm_bandwidth",
        "ici_bandwidth",
        "ici_link_bandwidth",
        "dcn_bandwidth",
        "nvlink_bandwidth",
        "vmem_per_tensorcore",
        "tdp",
        "host_memory",
        "price.on_demand",
        "price.commit_1yr",
        "price.commit_3yr",
        "topology",
        "wraparound",
        "slice_naming",
        "slices",
        "tiling.lanes",
        "tiling.rows_32bit",
        "tiling.rows_16bit",
        "tiling.rows_8bit",
        "tiling.rows_4bit",
        "libtpu.topology",
        "libtpu.chip_config",
    ];

    /// Reads one `[[chip]]` table. `origin` names the file for errors.
    pub(crate) fn from_table(origin: &str, table: toml::Table) -> Result<Chip, HwError> {
        let id = match table.get("id") {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(HwError::field(
                    origin,
                    "?",
                    "id",
                    "every chip needs a non-empty string `id`",
                ));
            }
        };
        let mut r = Reader::new(origin, &id, "", table);
        let chip = read_chip(&mut r, &id)?;
        r.finish()?;
        chip.check(origin)?;
        Ok(chip)
    }

    fn check(&self, origin: &str) -> Result<(), HwError> {
        let err = |field: &str, m: String| HwError::field(origin, &self.id, field, m);
        for key in self.figure_keys() {
            if self.source(key).is_none() {
                return Err(err(key, format!("has no source; add `sources.\"{key}\" = \"…\"`")));
            }
        }
        for key in self.sources.keys() {
            if !Chip::SOURCE_KEYS.contains(&key.as_str()) {
                return Err(err(&format!("sources.{key}"), "names no field of a chip".to_owned()));
            }
        }
        if self.slices.is_empty() {
            return Ok(());
        }
        let rank = self.topology.and_then(TopologyFamily::rank).ok_or_else(|| {
            err("slices", "needs `topology = \"2d-torus\"`, `\"3d-torus\"` or `\"3d\"`".to_owned())
        })?;
        for (name, missing) in [
            ("slice_naming", self.slice_naming.is_none()),
            ("slice_prefixes", self.slice_prefixes.is_empty()),
            ("chips_per_host", self.chips_per_host.is_none()),
        ] {
            if missing {
                return Err(err(name, "is required when `slices` is given".to_owned()));
            }
        }
        if self.slice_naming == Some(SliceNaming::TensorCores) && self.tensorcores.is_none() {
            return Err(err(
                "tensorcores",
                "is required when `slice_naming = \"tensorcores\"`".to_owned(),
            ));
        }
        for dims in &self.slices {
            if dims.len() != rank {
                return Err(err(
                    "slices",
                    format!(
                        "`{}` has {} dimensions; a {} topology has {rank}",
                        crate::slice::dims_name(dims),
                        dims.len(),
                        self.topology.map_or("", TopologyFamily::name)
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn read_chip(r: &mut Reader<'_>, id: &str) -> Result<Chip, HwError> {
    r.string("id")?; // already read by the caller; taken so it is not an unknown key
    let id = id.to_owned();
    let name = r.required_string("name")?;
    let aliases = r.strings("aliases")?;
    let kind = r
        .choice("kind", &[("tpu", ChipKind::Tpu), ("gpu", ChipKind::Gpu)])?
        .ok_or_else(|| r.error("kind", "is required (`tpu` or `gpu`)"))?;
    let peak = match r.table("peak")? {
        None => Peak::default(),
        Some(mut p) => {
            let peak = Peak {
                bf16: p.figure("bf16", Quantity::Compute)?,
                int8: p.figure("int8", Quantity::Compute)?,
                fp8: p.figure("fp8", Quantity::Compute)?,
                int4: p.figure("int4", Quantity::Compute)?,
                f32: p.figure("f32", Quantity::Compute)?,
            };
            p.finish()?;
            peak
        }
    };
    let tiling = match r.table("tiling")? {
        None => None,
        Some(mut t) => {
            let need = |t: &mut Reader<'_>, key: &'static str| {
                t.count(key)?.ok_or_else(|| t.error(key, "is required in a `tiling` table"))
            };
            let tiling = Tiling {
                lanes: need(&mut t, "lanes")?,
                rows_32bit: need(&mut t, "rows_32bit")?,
                rows_16bit: need(&mut t, "rows_16bit")?,
                rows_8bit: need(&mut t, "rows_8bit")?,
                rows_4bit: need(&mut t, "rows_4bit")?,
            };
            t.finish()?;
            Some(tiling)
        }
    };
    let libtpu = match r.table("libtpu")? {
        None => None,
        Some(mut t) => {
            let naming = LibtpuNaming {
                topology: t.required_string("topology")?,
                chip_config: t.required_string("chip_config")?,
            };
            t.finish()?;
            Some(naming)
        }
    };
    let price = match r.table("price")? {
        None => Price::default(),
        Some(mut p) => {
            let price = Price {
                on_demand: p.figure("on_demand", Quantity::Price)?,
                commit_1yr: p.figure("commit_1yr", Quantity::Price)?,
                commit_3yr: p.figure("commit_3yr", Quantity::Price)?,
                confidence: p.choice(
                    "confidence",
                    &[
                        ("low", Confidence::Low),
                        ("medium", Confidence::Medium),
                        ("user", Confidence::User),
                    ],
                )?,
            };
            p.finish()?;
            price
        }
    };
    let mut vms = Vec::new();
    for mut v in r.tables("vm")? {
        vms.push(VmShape {
            machine_type: v.required_string("machine_type")?,
            chips: v.count("chips")?.ok_or_else(|| v.error("chips", "is required"))?,
            vcpus: v.count("vcpus")?,
            memory: v.figure("memory", Quantity::Bytes)?,
            source: v.required_string("source")?,
        });
        v.finish()?;
    }
    let mut slices = Vec::new();
    for s in r.strings("slices")? {
        let dims = crate::slice::parse_dims(&s).ok_or_else(|| {
            r.error("slices", format!("`{s}` is not a topology like `2x4` or `2x2x1`"))
        })?;
        slices.push(dims);
    }
    let sources = match r.table("sources")? {
        None => BTreeMap::new(),
        Some(s) => s.string_map()?.into_iter().collect(),
    };
    Ok(Chip {
        id,
        name,
        aliases,
        kind,
        generation: r.count("generation")?,
        peak,
        hbm_capacity: r.figure("hbm_capacity", Quantity::Bytes)?,
        hbm_usable: r.figure("hbm_usable", Quantity::Bytes)?,
        hbm_bandwidth: r.figure("hbm_bandwidth", Quantity::Bandwidth)?,
        ici_bandwidth: r.figure("ici_bandwidth", Quantity::Bandwidth)?,
        ici_link_bandwidth: r.figure("ici_link_bandwidth", Quantity::Bandwidth)?,
        ici_ports: r.count("ici_ports")?,
        dcn_bandwidth: r.figure("dcn_bandwidth", Quantity::Bandwidth)?,
        nvlink_bandwidth: r.figure("nvlink_bandwidth", Quantity::Bandwidth)?,
        tensorcores: r.count("tensorcores")?,
        devices_per_chip: r.count("devices_per_chip")?,
        mxus_per_tensorcore: r.count("mxus_per_tensorcore")?,
        mxu_size: r.count("mxu_size")?,
        vmem_per_tensorcore: r.figure("vmem_per_tensorcore", Quantity::Bytes)?,
        sparsecores: r.count("sparsecores")?,
        tdp: r.figure("tdp", Quantity::Power)?,
        chips_per_host: r.count("chips_per_host")?,
        host_memory: r.figure("host_memory", Quantity::Bytes)?,
        vms,
        topology: r.choice(
            "topology",
            &[
                ("2d-torus", TopologyFamily::Torus2d),
                ("3d-torus", TopologyFamily::Torus3d),
                ("3d", TopologyFamily::Mesh3d),
                ("nvlink-node", TopologyFamily::NvlinkNode),
            ],
        )?,
        wraparound: r.choice(
            "wraparound",
            &[
                ("axes-of-16", Wraparound::AxesOf16),
                ("all-axes-multiple-of-4", Wraparound::AllAxesMultipleOf4),
                ("all", Wraparound::All),
                ("none", Wraparound::None),
                ("unknown", Wraparound::Unknown),
            ],
        )?,
        pod_chips: r.count("pod_chips")?,
        max_slice_chips: r.count("max_slice_chips")?,
        slice_naming: r.choice(
            "slice_naming",
            &[("chips", SliceNaming::Chips), ("tensorcores", SliceNaming::TensorCores)],
        )?,
        slice_prefixes: r.strings("slice_prefixes")?,
        slices,
        tiling,
        libtpu,
        price,
        sources,
    })
}
