//! Single-device → sharded: partition annotations (`mhlo.sharding`) placed on `@main`'s
//! arguments, and the partition count set, so the XLA SPMD partitioner splits the program
//! the way a sharding plan says (`tpuport shard --verify` compiles it with libtpu). The
//! partitioner propagates the argument shardings through the program. Sharding constraints
//! inside the program (GSPMD `custom_call @Sharding`, as `jax.lax.with_sharding_constraint`
//! writes them) are kept when they were written for the same number of devices: they pin
//! activations the way the user's step does.

use tpuport_model::{Attr, Model};

use super::unshard;
use crate::LowerError;

/// Drops the module's own sharding annotations ([`unshard`]; with `keep_body`, only those on
/// `@main`'s arguments and results), then gives argument `i` the sharding text `s` for every
/// `(i, s)` in `args` and result `i` the text `s` for every `(i, s)` in `results` (the others
/// are left to the partitioner), and sets `mhlo.num_partitions` to `partitions`. Returns how
/// many values were annotated.
///
/// `keep_body` is honoured only when the module already declares `partitions` partitions
/// (its constraints name devices of a mesh that size); otherwise every annotation goes.
///
/// # Errors
/// As [`unshard`]: a manually partitioned program (collectives, `shard_map`).
pub fn place_shardings(
    model: &mut Model,
    partitions: u32,
    args: &[(usize, String)],
    results: &[(usize, String)],
    keep_body: bool,
) -> Result<usize, LowerError> {
    let declared = model
        .metadata
        .properties
        .iter()
        .find(|(k, _)| k == "mhlo.num_partitions")
        .and_then(|(_, v)| v.split(':').next()?.trim().parse::<u32>().ok());
    // Shardy constraints (`sdy.*` ops) are not kept: the program compiles with GSPMD.
    let shardy = std::iter::once(&model.graph)
        .chain(&model.functions)
        .any(|g| g.nodes.iter().any(|n| n.op.starts_with("sdy.")));
    if keep_body && !shardy && declared == Some(partitions) && partitions > 1 {
        model.graph.attrs.retain(|(k, _)| !unshard::is_sharding_key(k));
        model
            .metadata
            .properties
            .retain(|(k, v)| !(k == "mlir.module_op" && v.contains("sdy.mesh")));
    } else {
        unshard(model)?;
    }
    let props = &mut model.metadata.properties;
    for (key, value) in [
        ("mhlo.num_partitions", format!("{partitions} : i32")),
        ("mhlo.num_replicas", "1 : i32".into()),
    ] {
        match props.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => props.push((key.to_owned(), value)),
        }
    }
    let g = &mut model.graph;
    for (i, s) in args {
        g.attrs.push((format!("arg{i}:mhlo.sharding"), Attr::Str(s.clone())));
    }
    for (i, s) in results {
        g.attrs.push((format!("res{i}:mhlo.sharding"), Attr::Str(s.clone())));
    }
    Ok(args.len() + results.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn annotations_replace_the_modules_own_and_print() {
        let text = r#"module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<16x4xf32>) -> (tensor<8x4xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"#;
        let mut m = tpuport_formats::stablehlo::parse_text(
            std::path::Path::new("f.mlir"),
            text,
            &tpuport_formats::Limits::default(),
        )
        .unwrap();
        let n = place_shardings(
            &mut m,
            8,
            &[(1, "{devices=[1,8]<=[8]}".into())],
            &[(0, "{devices=[8,1]<=[8]}".into())],
            false,
        )
        .unwrap();
        assert_eq!(n, 2);
        let out = tpuport_formats::stablehlo::print_model(&m).unwrap();
        assert!(out.contains("mhlo.num_partitions = 8 : i32"), "{out}");
        assert!(
            out.contains(r#"arg_attrs = [{}, {mhlo.sharding = "{devices=[1,8]<=[8]}"}]"#),
            "{out}"
        );
        assert!(out.contains(r#"res_attrs = [{mhlo.sharding = "{devices=[8,1]<=[8]}"}]"#), "{out}");
        assert!(!out.contains("{replicated}"), "{out}");
        // It reads back with the annotation on the second argument.
        let back = tpuport_formats::stablehlo::parse_text(
            std::path::Path::new("g.mlir"),
            &out,
            &tpuport_formats::Limits::default(),
        )
        .unwrap();
        assert_eq!(
            tpuport_formats::stablehlo::arg_attr(&back.graph, 1, "mhlo.sharding"),
            Some(&Attr::Str("{devices=[1,8]<=[8]}".into()))
        );
    }
}
