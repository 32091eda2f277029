//! Shared by `run` and `bench`: plugin and client setup, the module's signature and
//! shardings (from the StableHLO importer), input checks, host-side sharding.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use tpuport_model::{Attr, DType, HostTensor};
use tpuport_pjrt::{Client, ClientOptions, CompileOptions, ExecutableCache, PluginKind, Program};

use crate::printer::Printer;

/// Options shared by the verbs that execute on a PJRT device.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// PJRT plugin library (default: $TPUPORT_PJRT_PLUGIN, then libtpu, the CUDA plugin, the
    /// CPU plugin in the project's .venv).
    #[arg(long, value_name = "PATH")]
    pub(crate) plugin: Option<PathBuf>,
    /// Devices for the CPU plugin's client (default: the module's partition count, else 1).
    #[arg(long, value_name = "N")]
    pub(crate) devices: Option<u32>,
    /// Compile every time instead of using the executable cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
}

/// A client ready to run a module.
pub(crate) struct Runtime {
    pub(crate) client: Client,
    pub(crate) cache: ExecutableCache,
}

impl RuntimeArgs {
    /// Finds and loads the plugin and creates a client with enough devices for `module`.
    pub(crate) fn open(&self, module: &Module, p: &Printer) -> anyhow::Result<Runtime> {
        let found = tpuport_pjrt::find(self.plugin.as_deref())?;
        p.info(&format!("plugin: {} ({})", found.path.display(), found.source));
        let plugin = tpuport_pjrt::load(&found.path)?;
        let need = module.partitions.max(1);
        let devices = self.devices.unwrap_or(need);
        if devices < need {
            bail!("{} has {need} partitions but --devices is {devices}", module.path.display());
        }
        let opts = match found.kind {
            PluginKind::Cpu | PluginKind::Other => ClientOptions::cpu_devices(devices),
            PluginKind::Tpu | PluginKind::Cuda => ClientOptions::default(),
        };
        let client = tpuport_pjrt::Client::new(plugin, &opts)?;
        if let (Some(v), Some((_, cur))) = (&module.stablehlo_version, plugin.stablehlo_range())
            && newer(v, cur)
        {
            p.warn(&format!(
                "{} targets StableHLO {v}, newer than the plugin's {}.{}.{}; compilation may fail",
                module.path.display(),
                cur[0],
                cur[1],
                cur[2]
            ));
        }
        let cache = if self.no_cache {
            ExecutableCache::disabled()
        } else {
            ExecutableCache::default_location()
        };
        Ok(Runtime { client, cache })
    }
}

fn newer(v: &str, cur: [i64; 3]) -> bool {
    let parts: Vec<i64> = v.split('.').filter_map(|s| s.trim().parse().ok()).collect();
    parts.len() == 3 && [parts[0], parts[1], parts[2]] > cur
}

/// How a tensor is laid out over the devices: a mesh of axis sizes, and for each tensor
/// dimension the mesh axes that split it (major to minor). Device `d` sits at the row-major
/// coordinates of `d` in the mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) mesh: Vec<u64>,
    pub(crate) dims: Vec<Vec<usize>>,
}

/// One argument or result of `@main`.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    /// `None` for dimensions that are not static.
    pub(crate) dims: Vec<Option<u64>>,
    /// `None`: no sharding annotation.
    pub(crate) layout: Option<Layout>,
}

impl Param {
    pub(crate) fn type_string(&self) -> String {
        let d: Vec<String> =
            self.dims.iter().map(|d| d.map_or_else(|| "?".into(), |v| v.to_string())).collect();
        format!("{}[{}]", self.dtype, d.join(","))
    }
}

/// A module to run.
pub(crate) struct Module {
    pub(crate) path: PathBuf,
    pub(crate) program: Program,
    /// `None` when the importer could not read a signature (bytecode is read header-only).
    pub(crate) args: Option<Vec<Param>>,
    pub(crate) results: Option<Vec<Param>>,
    pub(crate) partitions: u32,
    pub(crate) shardy: bool,
    pub(crate) stablehlo_version: Option<String>,
}

impl Module {
    /// Reads the module and, through the StableHLO importer, its signature.
    pub(crate) fn load(path: &Path, p: &Printer) -> anyhow::Result<Module> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let program = Program::mlir(bytes);
        let mut m = Module {
            path: path.to_owned(),
            program,
            args: None,
            results: None,
            partitions: 1,
            shardy: false,
            stablehlo_version: None,
        };
        match tpuport_formats::open(path, &tpuport_formats::ImportOptions::default()) {
            Ok(model) => m.read_model(&model),
            Err(e) => p.warn(&format!(
                "no signature for {}: {e}; inputs are checked by the plugin only",
                path.display()
            )),
        }
        Ok(m)
    }

    fn read_model(&mut self, model: &tpuport_model::Model) {
        self.stablehlo_version.clone_from(&model.metadata.stablehlo_version);
        let prop = |k: &str| {
            model.metadata.properties.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
        };
        if let Some(v) = prop("mhlo.num_partitions") {
            self.partitions = v.split(':').next().and_then(|s| s.trim().parse().ok()).unwrap_or(1);
        }
        let mesh_text: Vec<&str> = model
            .metadata
            .properties
            .iter()
            .filter(|(k, v)| k == "mlir.module_op" && v.contains("sdy.mesh"))
            .map(|(_, v)| v.as_str())
            .collect();
        let meshes = parse_meshes(&mesh_text);
        self.shardy = !meshes.is_empty();
        let g = &model.graph;
        if g.inputs.is_empty() && g.outputs.is_empty() && g.nodes.is_empty() {
            return; // header-only read (bytecode)
        }
        let n = self.partitions;
        let param = |i: usize, id: tpuport_model::ValueId, is_arg: bool| {
            let v = g.value(id);
            let attr = |name: &str| {
                if is_arg {
                    tpuport_formats::stablehlo::arg_attr(g, i, name)
                } else {
                    tpuport_formats::stablehlo::result_attr(g, i, name)
                }
            };
            let text = |a: &Attr| match a {
                Attr::Str(s) | Attr::Text(s) => Some(s.clone()),
                _ => None,
            };
            let layout = attr("sdy.sharding")
                .and_then(text)
                .and_then(|s| parse_sdy(&s, &meshes))
                .or_else(|| attr("mhlo.sharding").and_then(text).and_then(|s| parse_gspmd(&s, n)));
            Some(Param {
                name: v.name.trim_start_matches('%').to_owned(),
                dtype: v.ty.dtype?,
                dims: v.ty.shape.as_ref()?.0.iter().map(tpuport_model::Dim::known).collect(),
                layout,
            })
        };
        self.args = g.inputs.iter().enumerate().map(|(i, &id)| param(i, id, true)).collect();
        self.results = g.outputs.iter().enumerate().map(|(i, &id)| param(i, id, false)).collect();
    }

    /// Compile options for this module.
    pub(crate) fn compile_options(&self) -> CompileOptions {
        if self.partitions > 1 {
            // The Shardy flag also handles GSPMD modules (the plugin falls back to GSPMD).
            CompileOptions::spmd(self.partitions, true)
        } else {
            CompileOptions::default()
        }
    }

    /// Checks host inputs against the signature: count, dtype, static dims. The error names
    /// the input, what was expected and what was given.
    pub(crate) fn check_inputs(&self, inputs: &[(String, HostTensor)]) -> anyhow::Result<()> {
        let Some(args) = &self.args else { return Ok(()) };
        if inputs.len() != args.len() {
            let want: Vec<String> =
                args.iter().map(|a| format!("{}: {}", a.name, a.type_string())).collect();
            bail!(
                "{} takes {} input(s) ({}), got {}",
                self.path.display(),
                args.len(),
                want.join(", "),
                inputs.len()
            );
        }
        for (i, ((src, t), a)) in inputs.iter().zip(args).enumerate() {
            let dims_ok = t.shape.len() == a.dims.len()
                && t.shape.iter().zip(&a.dims).all(|(g, w)| w.is_none_or(|w| w == *g));
            if t.dtype != a.dtype || !dims_ok {
                bail!(
                    "input {} (argument {i}): expected {}, got {}{:?} from {src}",
                    a.name,
                    a.type_string(),
                    t.dtype,
                    t.shape
                );
            }
        }
        Ok(())
    }
}

/// `sdy.mesh @name = <["x"=8, "y"=2]>` → (name, axes).
fn parse_meshes(ops: &[&str]) -> Vec<(String, Vec<(String, u64)>)> {
    let mut out = Vec::new();
    for op in ops {
        // Pretty form `sdy.mesh @mesh = <[...]>` or generic `"sdy.mesh"() <{mesh = ..., sym_name = "mesh"}>`.
        let name: String = if let Some(at) = op.find("sym_name = \"") {
            op[at + 12..].chars().take_while(|c| *c != '"').collect()
        } else if let Some(at) = op.find('@') {
            op[at + 1..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
        } else {
            continue;
        };
        let Some(lt) = op.find("<[") else { continue };
        let body = &op[lt + 2..op[lt..].find("]>").map_or(op.len(), |e| lt + e)];
        let axes = body
            .split(',')
            .filter_map(|a| {
                let (n, s) = a.split_once('=')?;
                Some((n.trim().trim_matches('"').to_owned(), s.trim().parse().ok()?))
            })
            .collect();
        out.push((name, axes));
    }
    out
}

/// `#sdy.sharding<@mesh, [{"x"}, {}]>` over a known mesh.
fn parse_sdy(s: &str, meshes: &[(String, Vec<(String, u64)>)]) -> Option<Layout> {
    let at = s.find('@')?;
    let name: String =
        s[at + 1..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    let (_, axes) = meshes.iter().find(|(n, _)| *n == name)?;
    let open = s.find('[')?;
    let close = s.rfind(']')?;
    let body = &s[open + 1..close];
    let mut dims = Vec::new();
    for group in body.split('}') {
        let Some(b) = group.find('{') else { continue };
        let inner = &group[b + 1..];
        let mut used = Vec::new();
        for tok in inner.split(',') {
            let t = tok.trim().trim_matches('"');
            if t.is_empty() || t == "?" {
                continue;
            }
            used.push(axes.iter().position(|(n, _)| n == t)?);
        }
        dims.push(used);
    }
    Some(Layout { mesh: axes.iter().map(|(_, n)| *n).collect(), dims })
}

/// GSPMD `{replicated}`, `{devices=[a,b]<=[n]}`, `{devices=[a,b]0,1,…}` (ids in order), with
/// optional `last_tile_dim_replicate`.
fn parse_gspmd(s: &str, n: u32) -> Option<Layout> {
    let s = s.trim().trim_start_matches('{').trim_end_matches('}').trim();
    if s == "replicated" {
        return Some(Layout { mesh: vec![u64::from(n)], dims: Vec::new() });
    }
    let rest = s.strip_prefix("devices=[")?;
    let close = rest.find(']')?;
    let tiles: Vec<u64> =
        rest[..close].split(',').map(|t| t.trim().parse().ok()).collect::<Option<_>>()?;
    let after = rest[close + 1..].trim();
    let ids_in_order = if let Some(iota) = after.strip_prefix("<=[") {
        let end = iota.find(']')?;
        // A transposed iota (`<=[2,4]T(1,0)`) reorders devices: not supported here.
        !iota[end + 1..].trim_start().starts_with('T') && iota[..end].split(',').count() == 1
    } else {
        let list: Vec<u64> = after
            .split_whitespace()
            .next()?
            .split(',')
            .map(|t| t.trim().parse().ok())
            .collect::<Option<_>>()?;
        list.iter().enumerate().all(|(i, &d)| d == i as u64)
    };
    if !ids_in_order {
        return None;
    }
    let replicate_last = s.contains("last_tile_dim_replicate");
    let data_dims = if replicate_last { tiles.len() - 1 } else { tiles.len() };
    Some(Layout { mesh: tiles.clone(), dims: (0..data_dims).map(|d| vec![d]).collect() })
}

impl Layout {
    fn devices(&self) -> u64 {
        self.mesh.iter().product()
    }

    /// Tiles along each of `rank` tensor dimensions.
    fn tiles(&self, rank: usize) -> Vec<u64> {
        (0..rank)
            .map(|k| {
                self.dims.get(k).map_or(1, |axes| axes.iter().map(|&a| self.mesh[a]).product())
            })
            .collect()
    }

    /// Tile index along each dimension for device `d`.
    fn tile_of(&self, d: u64, rank: usize) -> Vec<u64> {
        let mut coords = vec![0u64; self.mesh.len()];
        let mut rem = d;
        for (i, &size) in self.mesh.iter().enumerate().rev() {
            coords[i] = rem % size;
            rem /= size;
        }
        (0..rank)
            .map(|k| {
                self.dims
                    .get(k)
                    .map_or(0, |axes| axes.iter().fold(0, |idx, &a| idx * self.mesh[a] + coords[a]))
            })
            .collect()
    }
}

/// Splits a global tensor into one shard per device (`n` devices).
pub(crate) fn split(
    t: &HostTensor,
    layout: &Layout,
    n: u64,
    what: &str,
) -> anyhow::Result<Vec<HostTensor>> {
    if layout.devices() != n {
        bail!("{what}: sharding covers {} devices, the executable runs on {n}", layout.devices());
    }
    let rank = t.shape.len();
    let tiles = layout.tiles(rank);
    let mut shard = Vec::with_capacity(rank);
    for (k, (&dim, &tile)) in t.shape.iter().zip(&tiles).enumerate() {
        if dim % tile != 0 {
            bail!("{what}: dimension {k} of size {dim} does not split into {tile} shards");
        }
        shard.push(dim / tile);
    }
    (0..n)
        .map(|d| {
            let idx = layout.tile_of(d, rank);
            let offsets: Vec<u64> = idx.iter().zip(&shard).map(|(i, s)| i * s).collect();
            copy_block(t, &shard, &offsets, what)
        })
        .collect()
}

/// Assembles per-device shards into the global tensor.
pub(crate) fn assemble(
    shards: &[HostTensor],
    layout: &Layout,
    what: &str,
) -> anyhow::Result<HostTensor> {
    let first = shards.first().context("no shards")?;
    let rank = first.shape.len();
    let tiles = layout.tiles(rank);
    let global: Vec<u64> = first.shape.iter().zip(&tiles).map(|(s, t)| s * t).collect();
    let esize = elem_size(first.dtype, what)?;
    let total = global.iter().product::<u64>() * esize;
    let mut data = vec![0u8; usize::try_from(total)?];
    for (d, s) in shards.iter().enumerate() {
        let idx = layout.tile_of(d as u64, rank);
        let offsets: Vec<u64> = idx.iter().zip(&first.shape).map(|(i, s)| i * s).collect();
        for_each_row(&first.shape, |row| {
            let src = flat(row, &first.shape) * esize;
            let dst_row: Vec<u64> = row.iter().zip(&offsets).map(|(r, o)| r + o).collect();
            let dst = flat(&dst_row, &global) * esize;
            let len = first.shape.last().copied().unwrap_or(1) * esize;
            let (src, dst, len) = (src as usize, dst as usize, len as usize);
            data[dst..dst + len].copy_from_slice(&s.data()[src..src + len]);
        });
    }
    Ok(HostTensor::new(first.dtype, global, data)?)
}

fn elem_size(d: DType, what: &str) -> anyhow::Result<u64> {
    match d.bits() {
        Some(b) if b >= 8 => Ok(u64::from(b / 8)),
        _ => bail!("{what}: {d} tensors cannot be sharded on the host"),
    }
}

fn copy_block(
    t: &HostTensor,
    shard: &[u64],
    offsets: &[u64],
    what: &str,
) -> anyhow::Result<HostTensor> {
    let esize = elem_size(t.dtype, what)?;
    let mut out = Vec::with_capacity(usize::try_from(shard.iter().product::<u64>() * esize)?);
    for_each_row(shard, |row| {
        let src_row: Vec<u64> = row.iter().zip(offsets).map(|(r, o)| r + o).collect();
        let start = (flat(&src_row, &t.shape) * esize) as usize;
        let len = (shard.last().copied().unwrap_or(1) * esize) as usize;
        out.extend_from_slice(&t.data()[start..start + len]);
    });
    Ok(HostTensor::new(t.dtype, shard.to_vec(), out)?)
}

/// Calls `f` with the index of the first element of every innermost row of `shape`.
fn for_each_row(shape: &[u64], mut f: impl FnMut(&[u64])) {
    if shape.contains(&0) {
        return;
    }
    let rank = shape.len();
    let mut idx = vec![0u64; rank];
    loop {
        f(&idx);
        if rank <= 1 {
            return;
        }
        let mut k = rank - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

fn flat(idx: &[u64], shape: &[u64]) -> u64 {
    idx.iter().zip(shape).fold(0, |acc, (i, s)| acc * s + i)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_shardings() {
        assert_eq!(parse_gspmd("{replicated}", 8), Some(Layout { mesh: vec![8], dims: vec![] }));
        assert_eq!(
            parse_gspmd("{devices=[8,1]<=[8]}", 8),
            Some(Layout { mesh: vec![8, 1], dims: vec![vec![0], vec![1]] })
        );
        assert_eq!(
            parse_gspmd("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", 8),
            Some(Layout { mesh: vec![1, 4, 2], dims: vec![vec![0], vec![1]] })
        );
        assert_eq!(parse_gspmd("{devices=[2,4]<=[4,2]T(1,0)}", 8), None);
        let want = vec![("mesh".to_owned(), vec![("x".to_owned(), 8)])];
        let generic = parse_meshes(&[
            "\"sdy.mesh\"() <{mesh = #sdy.mesh<[\"x\"=8]>, sym_name = \"mesh\"}> : () -> ()",
        ]);
        assert_eq!(generic, want);
        let m = parse_meshes(&["sdy.mesh @mesh = <[\"x\"=8]>"]);
        assert_eq!(m, want);
        assert_eq!(
            parse_sdy("#sdy.sharding<@mesh, [{\"x\"}, {}]>", &m),
            Some(Layout { mesh: vec![8], dims: vec![vec![0], vec![]] })
        );
    }

    #[test]
    fn split_and_assemble_round_trip() {
        let vals: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let t = HostTensor::from_f32(vec![8, 8], &vals).unwrap();
        for layout in [
            Layout { mesh: vec![4], dims: vec![vec![0]] },
            Layout { mesh: vec![4], dims: vec![vec![], vec![0]] },
            Layout { mesh: vec![2, 2], dims: vec![vec![0], vec![1]] },
        ] {
            let parts = split(&t, &layout, 4, "t").unwrap();
            assert_eq!(parts[0].elements(), 16);
            assert_eq!(assemble(&parts, &layout, "t").unwrap(), t);
        }
        let rep = Layout { mesh: vec![4], dims: vec![] };
        let parts = split(&t, &rep, 4, "t").unwrap();
        assert!(parts.iter().all(|p| *p == t));
        assert!(split(&t, &Layout { mesh: vec![3], dims: vec![vec![0]] }, 3, "t").is_err());
    }
}
