//! Sharded → single-device: an automatically partitioned module (GSPMD `mhlo.sharding` or
//! Shardy `sdy.sharding` annotations, `mhlo.num_partitions > 1`) computes the same values on one
//! device once its annotations are dropped. Modules with manual partitioning (explicit
//! collectives, `shard_map` / `pmap` bodies) are refused: their ops only make sense per shard.

use tpuport_model::{Attr, Graph, Model};

use crate::LowerError;

/// Ops that only exist in per-shard (manually partitioned) programs.
const COLLECTIVES: &[&str] = &[
    "stablehlo.all_reduce",
    "stablehlo.all_gather",
    "stablehlo.all_to_all",
    "stablehlo.reduce_scatter",
    "stablehlo.collective_permute",
    "stablehlo.collective_broadcast",
    "stablehlo.partition_id",
    "stablehlo.replica_id",
    "sdy.manual_computation",
];

/// `custom_call` targets that annotate shardings; `Sharding` is an identity, the two shape
/// changing ones mark a manual region.
const SHARDING_TARGETS: &[&str] = &["Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"];

/// Drops every sharding annotation and sets the partition count to 1; returns how many
/// annotations were removed.
///
/// # Errors
/// [`LowerError::Unsupported`] naming the first op of a manually partitioned program.
pub fn unshard(model: &mut Model) -> Result<usize, LowerError> {
    let mut removed = 0;
    let props = &mut model.metadata.properties;
    let before = props.len();
    props.retain(|(k, v)| !(k == "mlir.module_op" && v.contains("sdy.mesh")));
    removed += before - props.len();
    for (k, v) in props.iter_mut() {
        if k == "mhlo.num_partitions" {
            "1 : i32".clone_into(v);
        }
    }
    removed += graph(&mut model.graph)?;
    for f in &mut model.functions {
        removed += graph(f)?;
    }
    Ok(removed)
}

pub(crate) fn is_sharding_key(k: &str) -> bool {
    k.ends_with(":mhlo.sharding")
        || k.ends_with(":sdy.sharding")
        || k == "mhlo.sharding"
        || k == "sdy.sharding"
        || k.ends_with(":mhlo.layout_mode")
}

fn graph(g: &mut Graph) -> Result<usize, LowerError> {
    let mut removed = 0;
    let before = g.attrs.len();
    g.attrs.retain(|(k, _)| !is_sharding_key(k));
    removed += before - g.attrs.len();
    for node in &mut g.nodes {
        let target = node
            .attr("call_target_name")
            .and_then(Attr::as_str)
            .map(|t| t.trim_matches('"').to_owned());
        let manual = COLLECTIVES.contains(&node.op.as_str())
            || (node.op == "stablehlo.custom_call"
                && target.as_deref().is_some_and(|t| t.starts_with("SPMD")));
        if manual {
            return Err(LowerError::Unsupported {
                node: node.name.clone(),
                op: target.map_or_else(|| node.op.clone(), |t| format!("custom_call @{t}")),
                opset: 0,
                what:
                    "a manually partitioned program (collectives, shard_map) cannot run unsharded"
                        .to_owned(),
            });
        }
        let identity = node.op == "sdy.sharding_constraint"
            || node.op == "sdy.reshard"
            || (node.op == "stablehlo.custom_call"
                && target.as_deref().is_some_and(|t| SHARDING_TARGETS.contains(&t)));
        if identity {
            // same operand and result type: a convert to the same type is the identity
            "stablehlo.convert".clone_into(&mut node.op);
            "stablehlo".clone_into(&mut node.domain);
            node.attrs.retain(|(k, _)| k.starts_with("tpuport."));
            node.inputs.truncate(1);
            removed += 1;
        }
        let before = node.attrs.len();
        node.attrs.retain(|(k, _)| !is_sharding_key(k));
        removed += before - node.attrs.len();
        for (_, sg) in &mut node.subgraphs {
            removed += graph(sg)?;
        }
    }
    Ok(removed)
}
