//! Sharded execution on the host side: how a tensor is laid out over the devices of an
//! executable, read from the module's Shardy (`sdy.sharding`) or GSPMD (`mhlo.sharding`)
//! annotations, and the split of a global host tensor into per-device shards and the assembly
//! back ([`Layout`]); uploading arguments to every device of an executable and gathering its
//! results ([`upload`], [`download`]).
//!
//! The annotations are XLA's, not a model format's: the caller (which reads the module) hands
//! their text over as strings.

use tpuport_model::{DType, HostTensor};

use crate::buffer::Buffer;
use crate::client::Client;
use crate::error::{PjrtError, Result};
use crate::executable::LoadedExecutable;

/// How a tensor is laid out over the devices: a mesh of axis sizes, and for each tensor
/// dimension the mesh axes that split it (major to minor). Device `d` sits at the row-major
/// coordinates of `d` in the mesh. Dimensions past `dims` are not split; a mesh axis split
/// into no dimension replicates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Axis sizes.
    pub mesh: Vec<u64>,
    /// Per tensor dimension, the mesh axes splitting it.
    pub dims: Vec<Vec<usize>>,
}

/// A Shardy mesh: `sdy.mesh @name = <["x"=8, "y"=2]>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    /// Symbol name.
    pub name: String,
    /// Axis names and sizes.
    pub axes: Vec<(String, u64)>,
}

/// The meshes declared by `sdy.mesh` ops, pretty (`sdy.mesh @mesh = <[...]>`) or generic
/// (`"sdy.mesh"() <{mesh = #sdy.mesh<[...]>, sym_name = "mesh"}>`) form.
#[must_use]
pub fn parse_meshes(ops: &[&str]) -> Vec<Mesh> {
    let mut out = Vec::new();
    for op in ops {
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
        out.push(Mesh { name, axes });
    }
    out
}

impl Layout {
    /// `#sdy.sharding<@mesh, [{"x"}, {}]>` over one of `meshes`; `None` when the mesh is
    /// unknown or an axis is not one of its axes.
    #[must_use]
    pub fn from_shardy(s: &str, meshes: &[Mesh]) -> Option<Layout> {
        let at = s.find('@')?;
        let name: String =
            s[at + 1..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let axes = &meshes.iter().find(|m| m.name == name)?.axes;
        let open = s.find('[')?;
        let close = s.rfind(']')?;
        let mut dims = Vec::new();
        for group in s[open + 1..close].split('}') {
            let Some(b) = group.find('{') else { continue };
            let mut used = Vec::new();
            for tok in group[b + 1..].split(',') {
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

    /// GSPMD `{replicated}`, `{devices=[a,b]<=[n]}`, `{devices=[a,b]0,1,…}` (ids in order),
    /// with optional `last_tile_dim_replicate`, over `partitions` devices; `None` for device
    /// orders this does not handle (a transposed iota, a permuted id list).
    #[must_use]
    pub fn from_gspmd(s: &str, partitions: u32) -> Option<Layout> {
        let s = s.trim().trim_start_matches('{').trim_end_matches('}').trim();
        if s == "replicated" {
            return Some(Layout { mesh: vec![u64::from(partitions)], dims: Vec::new() });
        }
        let rest = s.strip_prefix("devices=[")?;
        let close = rest.find(']')?;
        let tiles: Vec<u64> =
            rest[..close].split(',').map(|t| t.trim().parse().ok()).collect::<Option<_>>()?;
        let after = rest[close + 1..].trim();
        let ids_in_order = if let Some(iota) = after.strip_prefix("<=[") {
            let end = iota.find(']')?;
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
        if !ids_in_order || tiles.is_empty() {
            return None;
        }
        let data_dims =
            if s.contains("last_tile_dim_replicate") { tiles.len() - 1 } else { tiles.len() };
        Some(Layout { mesh: tiles, dims: (0..data_dims).map(|d| vec![d]).collect() })
    }

    /// Number of devices the layout covers.
    #[must_use]
    pub fn devices(&self) -> u64 {
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
            coords[i] = rem % size.max(1);
            rem /= size.max(1);
        }
        (0..rank)
            .map(|k| {
                self.dims
                    .get(k)
                    .map_or(0, |axes| axes.iter().fold(0, |idx, &a| idx * self.mesh[a] + coords[a]))
            })
            .collect()
    }

    /// Splits a global tensor into one shard per device of `n`.
    ///
    /// # Errors
    /// A layout over another device count, a dimension that does not divide, or a sub-byte
    /// dtype; the message starts with `what`.
    pub fn split(&self, t: &HostTensor, n: u64, what: &str) -> Result<Vec<HostTensor>> {
        if self.devices() != n || self.dims.iter().flatten().any(|&a| a >= self.mesh.len()) {
            return Err(invalid(format!(
                "{what}: sharding covers {} devices, the executable runs on {n}",
                self.devices()
            )));
        }
        let rank = t.shape.len();
        let tiles = self.tiles(rank);
        let mut shard = Vec::with_capacity(rank);
        for (k, (&dim, &tile)) in t.shape.iter().zip(&tiles).enumerate() {
            if dim % tile != 0 {
                return Err(invalid(format!(
                    "{what}: dimension {k} of size {dim} does not split into {tile} shards"
                )));
            }
            shard.push(dim / tile);
        }
        (0..n)
            .map(|d| {
                let offsets: Vec<u64> =
                    self.tile_of(d, rank).iter().zip(&shard).map(|(i, s)| i * s).collect();
                copy_block(t, &shard, &offsets, what)
            })
            .collect()
    }

    /// Assembles per-device shards (in device order) into the global tensor.
    ///
    /// # Errors
    /// No shards, shards of different types, or a sub-byte dtype.
    pub fn assemble(&self, shards: &[HostTensor], what: &str) -> Result<HostTensor> {
        if self.dims.iter().flatten().any(|&a| a >= self.mesh.len()) {
            return Err(invalid(format!("{what}: sharding names a mesh axis it does not have")));
        }
        let first = shards.first().ok_or_else(|| invalid(format!("{what}: no shards")))?;
        if shards.iter().any(|s| s.dtype != first.dtype || s.shape != first.shape) {
            return Err(invalid(format!("{what}: shards differ in type")));
        }
        let rank = first.shape.len();
        let tiles = self.tiles(rank);
        let global: Vec<u64> = first.shape.iter().zip(&tiles).map(|(s, t)| s * t).collect();
        let esize = elem_size(first.dtype, what)?;
        let total = global.iter().try_fold(esize, |a, &d| a.checked_mul(d));
        let total = total
            .and_then(|t| usize::try_from(t).ok())
            .ok_or_else(|| invalid(format!("{what}: global shape {global:?} too large")))?;
        let mut data = vec![0u8; total];
        let row = usize::try_from(first.shape.last().copied().unwrap_or(1) * esize)
            .map_err(|_| invalid(format!("{what}: row too large")))?;
        for (d, s) in shards.iter().enumerate() {
            let offsets: Vec<u64> =
                self.tile_of(d as u64, rank).iter().zip(&first.shape).map(|(i, s)| i * s).collect();
            for_each_row(&first.shape, |idx| {
                let src = to_usize(flat(idx, &first.shape) * esize);
                let dst_idx: Vec<u64> = idx.iter().zip(&offsets).map(|(r, o)| r + o).collect();
                let dst = to_usize(flat(&dst_idx, &global) * esize);
                data[dst..dst + row].copy_from_slice(&s.data()[src..src + row]);
            });
        }
        HostTensor::new(first.dtype, global, data).map_err(|e| invalid(e.to_string()))
    }
}

fn invalid(m: String) -> PjrtError {
    PjrtError::InvalidArgument(m)
}

/// Offsets inside a tensor that exists in memory fit in `usize`.
#[allow(clippy::cast_possible_truncation, reason = "offsets of in-memory tensors")]
fn to_usize(v: u64) -> usize {
    v as usize
}

fn elem_size(d: DType, what: &str) -> Result<u64> {
    match d.bits() {
        Some(b) if b >= 8 => Ok(u64::from(b / 8)),
        _ => Err(invalid(format!("{what}: {d} tensors cannot be sharded on the host"))),
    }
}

fn copy_block(t: &HostTensor, shard: &[u64], offsets: &[u64], what: &str) -> Result<HostTensor> {
    let esize = elem_size(t.dtype, what)?;
    let len = to_usize(shard.last().copied().unwrap_or(1) * esize);
    let mut out = Vec::with_capacity(to_usize(shard.iter().product::<u64>() * esize));
    for_each_row(shard, |row| {
        let src_row: Vec<u64> = row.iter().zip(offsets).map(|(r, o)| r + o).collect();
        let start = to_usize(flat(&src_row, &t.shape) * esize);
        out.extend_from_slice(&t.data()[start..start + len]);
    });
    HostTensor::new(t.dtype, shard.to_vec(), out).map_err(|e| invalid(e.to_string()))
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

/// Uploads arguments to every device of `exe`: one copy when it runs on one device, else the
/// shards of each argument's layout (`layouts[i]`, required then). `inputs` pairs a label for
/// messages (a file, `weight w`) with each tensor; the result is `[device][argument]`.
///
/// # Errors
/// A missing or unusable layout, or the plugin's transfer error, naming the argument.
pub fn upload(
    client: &Client,
    exe: &LoadedExecutable,
    inputs: &[(String, HostTensor)],
    layouts: &[Option<Layout>],
) -> Result<Vec<Vec<Buffer>>> {
    let devices = exe.devices();
    let n = devices.len() as u64;
    let mut per_dev: Vec<Vec<Buffer>> = devices.iter().map(|_| Vec::new()).collect();
    for (i, (src, t)) in inputs.iter().enumerate() {
        let what = format!("input {src} (argument {i})");
        let shards = if n == 1 {
            vec![t.clone()]
        } else {
            let layout = layouts.get(i).and_then(Option::as_ref).ok_or_else(|| {
                invalid(format!("{what}: the module has no sharding for this argument"))
            })?;
            layout.split(t, n, &what)?
        };
        for ((dev, shard), list) in devices.iter().zip(&shards).zip(&mut per_dev) {
            let b = client.buffer_from_host(shard, dev).map_err(|e| match e {
                PjrtError::InvalidArgument(m) => invalid(format!("{what}: copy to device: {m}")),
                e => e,
            })?;
            list.push(b);
        }
    }
    Ok(per_dev)
}

/// Device results (`[device][result]`) to global host tensors: device 0's copy when there is
/// one device or no layout, else the shards assembled by `layouts[j]`.
///
/// # Errors
/// The plugin's transfer error, or shards that do not assemble.
pub fn download(outs: Vec<Vec<Buffer>>, layouts: &[Option<Layout>]) -> Result<Vec<HostTensor>> {
    if outs.len() == 1 {
        return outs.into_iter().flatten().map(|b| b.to_host()).collect();
    }
    let num = outs.first().map_or(0, Vec::len);
    let mut result = Vec::with_capacity(num);
    for j in 0..num {
        let what = format!("output {j}");
        let shards: Vec<HostTensor> = outs
            .iter()
            .map(|d| d.get(j).ok_or_else(|| invalid(format!("{what}: missing on a device"))))
            .map(|b| b.and_then(Buffer::to_host))
            .collect::<Result<_>>()?;
        result.push(match layouts.get(j).and_then(Option::as_ref) {
            Some(l) => l.assemble(&shards, &what)?,
            None => shards.into_iter().next().ok_or_else(|| invalid("no devices".into()))?,
        });
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn parses_shardings() {
        let l = |mesh: Vec<u64>, dims: Vec<Vec<usize>>| Some(Layout { mesh, dims });
        assert_eq!(Layout::from_gspmd("{replicated}", 8), l(vec![8], vec![]));
        assert_eq!(
            Layout::from_gspmd("{devices=[8,1]<=[8]}", 8),
            l(vec![8, 1], vec![vec![0], vec![1]])
        );
        assert_eq!(
            Layout::from_gspmd("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", 8),
            l(vec![1, 4, 2], vec![vec![0], vec![1]])
        );
        assert_eq!(Layout::from_gspmd("{devices=[2,4]<=[4,2]T(1,0)}", 8), None);
        assert_eq!(Layout::from_gspmd("{devices=[2]1,0}", 2), None);
        assert_eq!(Layout::from_gspmd("{devices=[]<=[1]}", 1), None);
        let want = vec![Mesh { name: "mesh".into(), axes: vec![("x".into(), 8)] }];
        let generic = parse_meshes(&[
            "\"sdy.mesh\"() <{mesh = #sdy.mesh<[\"x\"=8]>, sym_name = \"mesh\"}> : () -> ()",
        ]);
        assert_eq!(generic, want);
        let m = parse_meshes(&["sdy.mesh @mesh = <[\"x\"=8]>"]);
        assert_eq!(m, want);
        assert_eq!(
            Layout::from_shardy("#sdy.sharding<@mesh, [{\"x\"}, {}]>", &m),
            l(vec![8], vec![vec![0], vec![]])
        );
        assert_eq!(Layout::from_shardy("#sdy.sharding<@other, [{\"x\"}]>", &m), None);
        assert_eq!(Layout::from_shardy("#sdy.sharding<@mesh, [{\"z\"}]>", &m), None);
    }

    #[test]
    fn split_and_assemble_round_trip() {
        let vals: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let t = HostTensor::from_f32(vec![8, 8], &vals).unwrap();
        for layout in [
            Layout { mesh: vec![4], dims: vec![vec![0]] },
            Layout { mesh: vec![4], dims: vec![vec![], vec![0]] },
            Layout { mesh: vec![2, 2], dims: vec![vec![0], vec![1]] },
            Layout { mesh: vec![2, 2], dims: vec![vec![1, 0]] },
        ] {
            let parts = layout.split(&t, 4, "t").unwrap();
            assert_eq!(parts[0].elements(), 16);
            assert_eq!(layout.assemble(&parts, "t").unwrap(), t, "{layout:?}");
        }
        let rep = Layout { mesh: vec![4], dims: vec![] };
        let parts = rep.split(&t, 4, "t").unwrap();
        assert!(parts.iter().all(|p| *p == t));
        let e = Layout { mesh: vec![3], dims: vec![vec![0]] }.split(&t, 3, "t").unwrap_err();
        assert!(e.to_string().contains("does not split into 3 shards"), "{e}");
        // a layout naming a mesh axis it does not have is refused, not indexed
        assert!(Layout { mesh: vec![2], dims: vec![vec![1]] }.split(&t, 2, "t").is_err());
        assert!(rep.split(&t, 8, "t").is_err());
        assert!(rep.assemble(&[], "t").is_err());
    }
}
