//! A partition spec as the `mhlo.sharding` attribute the XLA SPMD partitioner reads, so a plan
//! can be placed on a StableHLO program's arguments and compiled (`tpuport shard --verify`).
//!
//! The mesh's devices are numbered row-major over `data × fsdp × tensor`, as the emitted JAX
//! (`np.asarray(jax.devices()).reshape(MESH_SHAPE)`) and torch_xla (`np.arange(n)`) code lay
//! them, with the identity device assignment. The attribute uses the iota form JAX writes,
//! `{devices=[t0,t1,...]<=[mesh]T(perm)}`: one tile count per tensor dimension (the product of
//! the sizes of the axes that split it), then, when some mesh axis splits no dimension, one more
//! count for the copies over those axes (`last_tile_dim_replicate`); the tile-to-device table
//! is the device numbers laid out as the mesh (axes of size 1 left out), transposed so the axes
//! come in the order the tiles use them (the form JAX prints; `tpuport shard --verify` compiles
//! it with the GSPMD partitioner, docs/shard.md says why).

use super::spec::{Axis, Mesh};

const AXES: [Axis; 3] = [Axis::Data, Axis::Fsdp, Axis::Tensor];

/// The `mhlo.sharding` text of a tensor whose dimension `i` is split over the mesh axes
/// `dims[i]` (outermost first; empty: whole). An axis named twice, or of size 1, counts once
/// or not at all. `{replicated}` when nothing is split.
#[must_use]
pub fn hlo_sharding(dims: &[Vec<Axis>], mesh: &Mesh) -> String {
    let sizes: Vec<u64> = AXES.iter().map(|&a| u64::from(mesh.size(a))).collect();
    let index = |a: &Axis| AXES.iter().position(|x| x == a).unwrap_or(0);
    let dims: Vec<Vec<usize>> = dims.iter().map(|d| d.iter().map(index).collect()).collect();
    iota_sharding(&dims, &sizes)
}

/// [`hlo_sharding`] over any mesh: axis `k` has `sizes[k]` devices, devices numbered
/// row-major over the axes in order (a Shardy `sdy.mesh`'s order), and dimension `i` is
/// split over the axes `dims[i]` (indices into `sizes`, outermost first).
#[must_use]
pub fn iota_sharding(dims: &[Vec<usize>], sizes: &[u64]) -> String {
    let size = |a: usize| sizes.get(a).copied().unwrap_or(1);
    let mut used = Vec::new();
    let groups_of_dims: Vec<Vec<usize>> = dims
        .iter()
        .map(|axes| {
            let mut mine = Vec::new();
            for &a in axes {
                if size(a) > 1 && !used.contains(&a) {
                    used.push(a);
                    mine.push(a);
                }
            }
            mine
        })
        .collect();
    if used.is_empty() {
        return "{replicated}".into();
    }
    // Tile dimensions: each tensor dimension's axes, then the replicated axes together.
    let rest: Vec<usize> =
        (0..sizes.len()).filter(|&a| size(a) > 1 && !used.contains(&a)).collect();
    let replicate = !rest.is_empty();
    let mut groups = groups_of_dims;
    if replicate {
        groups.push(rest);
    }
    let counts: Vec<String> =
        groups.iter().map(|g| g.iter().map(|&a| size(a)).product::<u64>().to_string()).collect();
    // The mesh's axes of size > 1, and the order in which the tiles walk them.
    let mesh_axes: Vec<usize> = (0..sizes.len()).filter(|&a| size(a) > 1).collect();
    let order: Vec<usize> =
        groups.iter().flatten().filter_map(|a| mesh_axes.iter().position(|m| m == a)).collect();
    let devices: u64 = mesh_axes.iter().map(|&a| size(a)).product();
    let identity = order.iter().enumerate().all(|(i, &p)| i == p);
    let table = if identity {
        format!("<=[{devices}]")
    } else {
        let dims: Vec<String> = mesh_axes.iter().map(|&a| size(a).to_string()).collect();
        let perm: Vec<String> = order.iter().map(usize::to_string).collect();
        format!("<=[{}]T({})", dims.join(","), perm.join(","))
    };
    format!(
        "{{devices=[{}]{table}{}}}",
        counts.join(","),
        if replicate { " last_tile_dim_replicate" } else { "" }
    )
}

/// The GSPMD text of a Shardy sharding (`#sdy.sharding<@mesh, [{"data"}, {}, {}]>`) over the
/// one of `meshes` it names, when every dimension is a closed list of whole axes; `None` for
/// anything else (sub-axes, open dimensions, an unknown mesh). The mesh's devices must be in
/// row-major order (a mesh with its own `device_ids` is not the iota this writes).
#[must_use]
pub fn from_shardy(sharding: &str, meshes: &[crate::memory::SdyMesh]) -> Option<String> {
    let (mesh, dims) = crate::memory::sdy_sharding_dims(sharding)?;
    let axes = &meshes.iter().find(|m| m.name == mesh)?.axes;
    let dims = dims
        .iter()
        .map(|d| {
            d.iter()
                .map(|e| {
                    let name = e.strip_prefix('"')?.strip_suffix('"')?;
                    axes.iter().position(|(n, _)| n == name)
                })
                .collect::<Option<Vec<usize>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    let sizes: Vec<u64> = axes.iter().map(|(_, n)| *n).collect();
    Some(iota_sharding(&dims, &sizes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Mesh = Mesh { data: 2, fsdp: 2, tensor: 2 };

    #[test]
    fn nothing_split_is_replicated() {
        assert_eq!(hlo_sharding(&[vec![], vec![]], &M), "{replicated}");
        // Axes of size 1 split nothing.
        let one = Mesh { data: 8, fsdp: 1, tensor: 1 };
        assert_eq!(hlo_sharding(&[vec![Axis::Tensor], vec![]], &one), "{replicated}");
    }

    #[test]
    fn every_axis_used_lists_the_mesh_in_order() {
        // [data+fsdp, tensor]: the row-major mesh itself.
        let s = hlo_sharding(&[vec![Axis::Data, Axis::Fsdp], vec![Axis::Tensor]], &M);
        assert_eq!(s, "{devices=[4,2]<=[8]}");
    }

    #[test]
    fn a_transposed_use_permutes_devices() {
        // [tensor, fsdp] with data replicated: tile (i, j, k) sits at tensor=i, fsdp=j,
        // data=k, device (k*2 + j)*2 + i: the [data, fsdp, tensor] iota transposed (2,1,0).
        let s = hlo_sharding(&[vec![Axis::Tensor], vec![Axis::Fsdp]], &M);
        assert_eq!(s, "{devices=[2,2,2]<=[2,2,2]T(2,1,0) last_tile_dim_replicate}");
    }

    #[test]
    fn any_named_mesh_as_shardy_lays_it_out() {
        // sdy.mesh ["x"=2, "y"=4]: [{"y"}, {}] walks y then the replicated x.
        assert_eq!(
            iota_sharding(&[vec![1], vec![]], &[2, 4]),
            "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
        );
        assert_eq!(iota_sharding(&[vec![0, 1], vec![]], &[2, 4]), "{devices=[8,1]<=[8]}");
        assert_eq!(iota_sharding(&[vec![], vec![]], &[2, 4]), "{replicated}");
    }

    #[test]
    fn a_column_split_on_tensor_only() {
        let tp = Mesh { data: 1, fsdp: 1, tensor: 8 };
        assert_eq!(hlo_sharding(&[vec![], vec![Axis::Tensor]], &tp), "{devices=[1,8]<=[8]}");
        let s = hlo_sharding(&[vec![Axis::Fsdp], vec![]], &Mesh { data: 1, fsdp: 4, tensor: 2 });
        assert_eq!(s, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}");
        // Split on tensor with fsdp replicated: tiles walk tensor first, then fsdp.
        let s = hlo_sharding(&[vec![Axis::Tensor], vec![]], &Mesh { data: 1, fsdp: 4, tensor: 2 });
        assert_eq!(s, "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}");
    }

    #[test]
    fn a_shardy_sharding_over_whole_axes_reads_as_gspmd() {
        let mesh = crate::memory::SdyMesh {
            name: "mesh".into(),
            axes: vec![("data".into(), 2), ("fsdp".into(), 1), ("tensor".into(), 4)],
            device_ids: false,
        };
        let meshes = [mesh];
        let batch = r#"#sdy.sharding<@mesh, [{"data"}, {}]>"#;
        let s = from_shardy(batch, &meshes);
        assert_eq!(s.as_deref(), Some("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
        // Another mesh, a sub-axis: not read.
        assert_eq!(from_shardy(r#"#sdy.sharding<@other, [{"data"}, {}]>"#, &meshes), None);
        assert_eq!(from_shardy(r#"#sdy.sharding<@mesh, [{"data":(1)2}, {}]>"#, &meshes), None);
    }
}
