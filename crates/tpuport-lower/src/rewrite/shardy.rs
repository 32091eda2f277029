//! Shardy → GSPMD: each `sdy.sharding_constraint` (JAX's default spelling of
//! `with_sharding_constraint` since 0.7) rewritten as the GSPMD `custom_call @Sharding` it
//! means, so a step's activation pins survive a compile with the GSPMD partitioner
//! (`tpuport shard --verify`). Constraints inside regions are rewritten too: JAX pins a
//! reduction's scalar body values (flax's `argmax` in a metric's update) inside the `reduce`.
//!
//! The caller translates each constraint's Shardy sharding to GSPMD text, as it knows the
//! module's meshes (`tpuport_analysis::shard::gspmd::from_shardy`); a constraint it cannot
//! translate (sub-axes, open dimensions, an unknown mesh) is left as it is, and then
//! [`super::place_shardings`] drops it with every other Shardy annotation.

use tpuport_model::{Attr, Model, Node};

/// Rewrites every `sdy.sharding_constraint` of `model` whose `sharding` `gspmd` translates
/// into a `stablehlo.custom_call @Sharding` carrying that `mhlo.sharding`.
pub fn shardy_constraints_to_gspmd(model: &mut Model, gspmd: &dyn Fn(&str) -> Option<String>) {
    let mut rewrite = |node: &mut Node| {
        if node.op != "sdy.sharding_constraint" {
            return;
        }
        let Some(sharding) = (match node.attr("sharding") {
            Some(Attr::Str(t) | Attr::Text(t)) => gspmd(t),
            _ => None,
        }) else {
            return;
        };
        "stablehlo.custom_call".clone_into(&mut node.op);
        "stablehlo".clone_into(&mut node.domain);
        node.attrs.retain(|(k, _)| k != "sharding");
        node.attrs.push(("call_target_name".into(), Attr::Str("Sharding".into())));
        node.attrs.push(("backend_config".into(), Attr::Str(String::new())));
        node.attrs.push(("mhlo.sharding".into(), Attr::Str(sharding)));
    };
    model.graph.for_each_node_mut(&mut rewrite);
    for f in &mut model.functions {
        f.for_each_node_mut(&mut rewrite);
    }
}
