//! A sharding plan placed on a program's arguments before it compiles ([`Placement`]), as
//! `tpuport shard --verify` asks: partition specs on the parameters, the batch split on the
//! data arguments, donated results sharded as their arguments.

use std::path::Path;

use tpuport_exec::error::{Context as _, Result};

/// A sharding plan to place on a program's arguments before it compiles: each parameter
/// the plan names gets its partition spec, each data argument whose leading dimension is the
/// plan's batch is split there, everything else stays replicated (the SPMD partitioner
/// propagates the rest). A result an argument is donated to takes the argument's sharding.
/// The module's own annotations on its arguments and results are dropped first; constraints
/// inside it stay when the module was written for the mesh's device count
/// (`tpuport_lower::rewrite::place_shardings`).
#[derive(Clone, Debug)]
pub struct Placement {
    /// The mesh (`data × fsdp × tensor`, devices row-major).
    pub mesh: tpuport_analysis::shard::Mesh,
    /// Partition spec per parameter name, one entry per dimension (`None`: whole).
    pub params: std::collections::BTreeMap<String, Vec<Option<tpuport_analysis::shard::Axis>>>,
    /// The global batch.
    pub batch: u64,
    /// The axes a data argument's leading dimension is split over.
    pub batch_axes: Vec<tpuport_analysis::shard::Axis>,
    /// A StableHLO module's data arguments as the user named them (`--data-args`); empty:
    /// the argument-role rules decide.
    pub data_args: Vec<tpuport_analysis::roles::ArgSelector>,
}

impl Placement {
    /// The `mhlo.sharding` text for an argument, `None` for one left replicated.
    fn sharding(&self, name: &str, shape: &[u64], data: bool) -> Option<String> {
        use tpuport_analysis::shard::gspmd::hlo_sharding;
        let dims: Vec<Vec<tpuport_analysis::shard::Axis>> = if data {
            let split: u64 =
                self.batch_axes.iter().map(|&a| u64::from(self.mesh.size(a))).product();
            if shape.first() != Some(&self.batch) || split <= 1 || !self.batch.is_multiple_of(split)
            {
                return None;
            }
            std::iter::once(self.batch_axes.clone())
                .chain(std::iter::repeat_n(Vec::new(), shape.len() - 1))
                .collect()
        } else {
            let spec = self.params.get(name)?;
            if spec.len() != shape.len() {
                return None;
            }
            spec.iter()
                .zip(shape)
                .map(|(a, &n)| match a {
                    Some(a) if n.is_multiple_of(u64::from(self.mesh.size(*a))) => vec![*a],
                    _ => Vec::new(),
                })
                .collect()
        };
        let s = hlo_sharding(&dims, &self.mesh);
        (s != "{replicated}").then_some(s)
    }

    /// Places the shardings on `text` (a StableHLO text module) whose `@main` arguments are
    /// `args`: (name, shape, is data) in order.
    pub(crate) fn apply(
        &self,
        path: &Path,
        text: &str,
        args: &[(String, Vec<u64>, bool)],
    ) -> Result<String> {
        let mut model = tpuport_formats::stablehlo::parse_text(
            path,
            text,
            &tpuport_formats::Limits::default(),
        )?;
        let placed: Vec<(usize, String)> = args
            .iter()
            .enumerate()
            .filter_map(|(i, (name, shape, data))| Some((i, self.sharding(name, shape, *data)?)))
            .collect();
        // A result an argument is donated to (a training step's new parameters and optimizer
        // state) keeps that argument's sharding, so the buffer can be updated in place.
        // Results with the batch leading are split as the data arguments are (an inference
        // step's logits stay where they were computed instead of being gathered whole).
        let g = &model.graph;
        let aliased = donated_results(g, &placed);
        let results: Vec<(usize, String)> = g
            .outputs
            .iter()
            .enumerate()
            .filter_map(|(i, &v)| {
                if let Some(s) = aliased.get(&i) {
                    return Some((i, s.clone()));
                }
                let shape: Vec<u64> = g
                    .value(v)
                    .ty
                    .shape
                    .as_ref()?
                    .0
                    .iter()
                    .map(tpuport_model::Dim::known)
                    .collect::<Option<_>>()?;
                Some((i, self.sharding("", &shape, true)?))
            })
            .collect();
        let partitions = u32::try_from(self.mesh.devices()).unwrap_or(u32::MAX);
        // A step's activation pins written for Shardy survive the GSPMD compile `--verify`
        // uses. A mesh with its own device order is not the row-major iota GSPMD text is
        // written for: its constraints are left alone (and then dropped by the placement).
        let meshes: Vec<_> = tpuport_analysis::memory::sdy_meshes(&model)
            .into_iter()
            .filter(|m| !m.device_ids)
            .collect();
        tpuport_lower::rewrite::shardy_constraints_to_gspmd(&mut model, &|s| {
            tpuport_analysis::shard::gspmd::from_shardy(s, &meshes)
        });
        tpuport_lower::rewrite::place_shardings(&mut model, partitions, &placed, &results, true)
            .context(|| format!("placing the plan's shardings on {}", path.display()))?;
        Ok(tpuport_formats::stablehlo::print_model(&model)?)
    }
}

/// Result index → sharding for the results that placed arguments are donated to: an explicit
/// `tf.aliasing_output = k`, else for each `jax.buffer_donor` argument (in order) the first
/// result not yet taken with the same type, the way JAX pairs donated buffers with outputs.
fn donated_results(
    g: &tpuport_model::Graph,
    placed: &[(usize, String)],
) -> std::collections::HashMap<usize, String> {
    use tpuport_model::Attr;
    // `tf.aliasing_output = 0 : i32` and `jax.buffer_donor = true` read back as text.
    let attr = |i: usize, key: &str| -> Option<String> {
        let key = format!("arg{i}:{key}");
        match &g.attrs.iter().find(|(k, _)| *k == key)?.1 {
            Attr::Int(n) => Some(n.to_string()),
            Attr::Str(t) | Attr::Text(t) => Some(t.split(':').next()?.trim().to_owned()),
            _ => None,
        }
    };
    let sharding: std::collections::HashMap<usize, &String> =
        placed.iter().map(|(i, s)| (*i, s)).collect();
    // Result index → the argument given to it.
    let mut taken: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for i in 0..g.inputs.len() {
        if let Some(k) = attr(i, "tf.aliasing_output").and_then(|k| k.parse().ok()) {
            taken.insert(k, i);
        }
    }
    for (i, &arg) in g.inputs.iter().enumerate() {
        if attr(i, "jax.buffer_donor").as_deref() != Some("true") || taken.values().any(|&a| a == i)
        {
            continue;
        }
        let ty = &g.value(arg).ty;
        if let Some(k) = (0..g.outputs.len())
            .find(|k| !taken.contains_key(k) && g.value(g.outputs[*k]).ty == *ty)
        {
            taken.insert(k, i);
        }
    }
    taken.into_iter().filter_map(|(k, i)| Some((k, sharding.get(&i)?.to_string()))).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// A training step as JAX 0.10 prints `jax.jit(step, donate_argnums=(0, 1)).lower(p, mu,
    /// x).as_text(debug_info=True)` with a `with_sharding_constraint` inside (Shardy): the
    /// moment takes its parameter's spec, the donated results take their arguments', and the
    /// constraint becomes the GSPMD annotation it means.
    const STEP: &str = r#"module @jit_step attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "fsdp"=1, "tensor"=4]>
  func.func public @main(%arg0: tensor<16x8xf32> {jax.buffer_donor = true} loc("p['w']"), %arg1: tensor<16x8xf32> {jax.buffer_donor = true} loc("mu['w']"), %arg2: tensor<4x16xf32> loc("x")) -> (tensor<16x8xf32> {jax.result_info = "result[0]['w']"}, tensor<16x8xf32> {jax.result_info = "result[1]['w']"}, tensor<4x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"data"}, {}]> : tensor<4x8xf32>
    %2 = stablehlo.add %arg1, %arg0 : tensor<16x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%1 init: %cst) across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%arg3: tensor<f32>, %arg4: tensor<f32>)  {
      %5 = sdy.sharding_constraint %arg3 <@mesh, []> : tensor<f32>
      %6 = stablehlo.add %5, %arg4 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }
    return %arg0, %2, %1 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>
  }
}
"#;

    #[test]
    fn a_training_step_places_moments_donations_and_constraints() {
        use tpuport_analysis::shard::{Axis, Mesh};
        let spec = vec![None, Some(Axis::Tensor)];
        let p = Placement {
            mesh: Mesh { data: 2, fsdp: 1, tensor: 4 },
            params: [("p['w']".to_owned(), spec.clone()), ("mu['w']".to_owned(), spec)]
                .into_iter()
                .collect(),
            batch: 4,
            batch_axes: vec![Axis::Data],
            data_args: Vec::new(),
        };
        let args = vec![
            ("p['w']".to_owned(), vec![16, 8], false),
            ("mu['w']".to_owned(), vec![16, 8], false),
            ("x".to_owned(), vec![4, 16], true),
        ];
        let out = p.apply(Path::new("step.mlir"), STEP, &args).unwrap();
        let col = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}";
        let batch = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}";
        // Both weight-like arguments and both donated results: the column split.
        assert_eq!(out.matches(col).count(), 4, "{out}");
        // The data argument, the batch-leading result, and the constraint: the batch split.
        assert_eq!(out.matches(batch).count(), 3, "{out}");
        assert!(out.contains(r#"call_target_name = "Sharding""#), "{out}");
        // The constraint in the reduction's body too (the mesh it named is gone).
        assert!(out.contains(r#"mhlo.sharding = "{replicated}""#), "{out}");
        assert!(!out.contains("sdy."), "{out}");
        assert!(out.contains("jax.buffer_donor = true"), "{out}");
        assert!(out.contains("mhlo.num_partitions = 8"), "{out}");
    }
}
