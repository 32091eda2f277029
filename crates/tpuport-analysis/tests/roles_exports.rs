//! Acceptance of issue 21 on StableHLO exported by frameworks tpuport did not write (Keras 3
//! applications, keras-hub causal LMs, Flax linen and NNX; `make stablehlo-exports`, script
//! `scripts/testdata/stablehlo_exports.py`): argument roles, batch and sequence, the parameter
//! count against the framework's own, tied embeddings, FLOPs against XLA's cost analysis and
//! physically possible samples/s. Each model is read twice: the `jax.export` module (argument
//! names in `loc(...)`) and the plain `jax.jit(f).lower(..).as_text()` (no names: only the ops
//! and the positions tell).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::PathBuf;

use tpuport_analysis::audit::{self, AuditOptions};
use tpuport_analysis::roles::{self, ArgSelector, Role, RoleOptions, Rule};
use tpuport_analysis::{Workload, cost};

fn exports() -> Vec<(String, PathBuf, serde_json::Value)> {
    let root = tpuport_testkit::generated(
        "TPUPORT_STABLEHLO_EXPORTS",
        "stablehlo-exports-",
        ".done",
        "stablehlo-exports",
    );
    let mut out = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if !p.join("meta.json").is_file() {
            continue;
        }
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("meta.json")).unwrap()).unwrap();
        out.push((p.file_name().unwrap().to_string_lossy().into_owned(), p, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 9, "nine exports expected under {}", root.display());
    out
}

fn open(p: &std::path::Path) -> tpuport_model::Model {
    tpuport_formats::open(p, &tpuport_formats::ImportOptions::default()).unwrap()
}

fn u(meta: &serde_json::Value, k: &str) -> u64 {
    meta[k].as_u64().unwrap_or_else(|| panic!("meta.json lacks {k}"))
}

#[test]
fn data_arguments_batch_and_sequence() {
    let mut failures = Vec::new();
    for (name, dir, meta) in exports() {
        let want_data: Vec<usize> = meta["data_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        for file in ["export.mlir", "jit.mlir"] {
            let m = open(&dir.join(file));
            assert_eq!(m.graph.inputs.len() as u64, u(&meta, "arguments"), "{name}/{file}");
            let r = roles::assign(&m, &RoleOptions::default()).unwrap();
            let data: Vec<usize> = r.with(Role::Data).map(|a| a.index).collect();
            println!(
                "{name}/{file}: data {data:?} batch {:?} seq {:?} weights {} state {} rules {:?} ({})",
                r.batch,
                r.sequence,
                r.weights.elements,
                r.state.elements,
                r.decided_by,
                r.batch_from.as_deref().unwrap_or("-")
            );
            // Usage or names decide every argument of these exports; position is a fallback.
            if let Some(a) = r.args.iter().find(|a| a.rule == Rule::Position) {
                failures.push(format!("{name}/{file}: argument {} decided by position", a.index));
            }
            if data != want_data {
                failures.push(format!("{name}/{file}: data args {data:?}, want {want_data:?}"));
            }
            if r.batch != Some(u(&meta, "batch")) {
                failures
                    .push(format!("{name}/{file}: batch {:?}, want {}", r.batch, meta["batch"]));
            }
            if r.sequence != meta["sequence"].as_u64() {
                failures.push(format!(
                    "{name}/{file}: sequence {:?}, want {}",
                    r.sequence, meta["sequence"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn parameters_match_the_framework() {
    let mut failures = Vec::new();
    for (name, dir, meta) in exports() {
        let (params, state) = (u(&meta, "params"), u(&meta, "state"));
        // With names (jax.export): trainable weights and state apart, as the framework counts.
        let r = roles::assign(&open(&dir.join("export.mlir")), &RoleOptions::default()).unwrap();
        if r.weights.elements != params || r.state.elements != state {
            failures.push(format!(
                "{name}/export.mlir: weights {} state {}, framework {params} + {state}",
                r.weights.elements, r.state.elements
            ));
        }
        // Without names, batch statistics read like scales: every weight and state element is
        // still counted once, none is taken for data.
        let r = roles::assign(&open(&dir.join("jit.mlir")), &RoleOptions::default()).unwrap();
        if r.weights.elements + r.state.elements != params + state || r.weights.elements < params {
            failures.push(format!(
                "{name}/jit.mlir: weights {} + state {}, framework {params} + {state}",
                r.weights.elements, r.state.elements
            ));
        }
        // Stored bytes at the stored type: bf16 as 2 bytes.
        let per = if meta["dtype"] == "bf16" { 2 } else { 4 };
        let r = roles::assign(&open(&dir.join("export.mlir")), &RoleOptions::default()).unwrap();
        let float_elems: u64 = r
            .with(Role::Weight)
            .filter(|a| a.dtype == "f32" || a.dtype == "bf16")
            .map(roles::ArgRole::elements)
            .sum();
        if float_elems != r.weights.elements || r.weights.bytes != per * float_elems {
            failures.push(format!(
                "{name}: weight bytes {} for {float_elems} elements",
                r.weights.bytes
            ));
        }
        // The framework's own total (Keras count_params() includes non-trainable weights, not
        // the dropout seed generators' state).
        if let Some(total) = meta["count_params"].as_u64() {
            let ours = r.weights.elements + r.state.elements - u(&meta, "untracked_state");
            if total != ours {
                failures.push(format!("{name}: count_params {total}, tpuport {ours}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn tied_embedding_is_one_table_said_to_be_tied() {
    for (name, dir, meta) in exports() {
        for file in ["export.mlir", "jit.mlir"] {
            let r = roles::assign(&open(&dir.join(file)), &RoleOptions::default()).unwrap();
            let tied: Vec<_> = r.tied().collect();
            if meta["tied"].as_bool().unwrap() {
                assert_eq!(tied.len(), 1, "{name}/{file}: one tied table expected, got {tied:?}");
                assert_eq!(tied[0].role, Role::Weight);
                assert!(tied[0].gather_read);
            } else {
                assert!(tied.is_empty(), "{name}/{file}: {tied:?}");
            }
        }
    }
}

#[test]
fn flops_still_match_xla() {
    let mut failures = Vec::new();
    for (name, dir, meta) in exports() {
        let c = cost::analyze(&open(&dir.join("jit.mlir")));
        // XLA:CPU wraps bf16 arithmetic in f32 converts (see audit_jax.rs): compare a bf16
        // module with XLA's count before the CPU passes.
        let key = if meta["dtype"] == "bf16" { "xla_lowered_flops" } else { "xla_flops" };
        let xla = meta[key].as_f64().unwrap();
        let err = (c.totals.flops as f64 - xla).abs() / xla;
        println!("{name}: tpuport {} xla {xla:.0} err {:.3}%", c.totals.flops, err * 100.0);
        if err > 0.02 {
            failures.push(format!("{name}: {} vs {xla} ({:.2}%)", c.totals.flops, err * 100.0));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn audit_reports_the_batch_the_params_and_possible_throughput() {
    let catalog = tpuport_hw::Catalog::builtin();
    for (name, dir, meta) in exports() {
        let m = open(&dir.join("jit.mlir"));
        let opts = AuditOptions { workload: Workload::Infer, ..AuditOptions::default() };
        let r = audit::audit(&name, &m, &catalog, &opts, Vec::new());
        assert_eq!(r.batch, u(&meta, "batch"), "{name}");
        assert!(r.model.params >= u(&meta, "params"), "{name}: {}", r.model.params);
        let per_sample = r.cost.totals.flops as f64 / r.batch as f64;
        assert!(per_sample > 0.0, "{name}");
        for c in &r.roofline.chips {
            let implied = c.samples_per_s * per_sample;
            println!(
                "{name} {}: {:.0} samples/s, {implied:.3e} FLOP/s of {:.3e}",
                c.chip, c.samples_per_s, c.peak_flops
            );
            assert!(
                implied <= c.peak_flops * 1.000_001,
                "{name} on {}: {implied} > {}",
                c.chip,
                c.peak_flops
            );
        }
        let head = r.summary.samples_per_s.unwrap();
        assert!(head * per_sample <= r.roofline.chips[0].peak_flops.max(1.0) * 10.0, "{name}");
        // With names the params are the framework's trainable count exactly.
        let m = open(&dir.join("export.mlir"));
        let r = audit::audit(&name, &m, &catalog, &opts, Vec::new());
        assert_eq!(r.model.params, u(&meta, "params"), "{name}");
    }
}

#[test]
fn user_override_decides() {
    let (name, dir, meta) = exports().into_iter().find(|e| e.0 == "kerashub_gpt2").unwrap();
    let m = open(&dir.join("jit.mlir"));
    let tokens = meta["data_args"][0].as_u64().unwrap() as usize;
    // Only the token ids: the padding mask becomes state, the batch stays.
    let r =
        roles::assign(&m, &RoleOptions { data_args: vec![ArgSelector::Index(tokens)] }).unwrap();
    let data: Vec<_> = r.with(Role::Data).map(|a| (a.index, a.rule)).collect();
    assert_eq!(data, vec![(tokens, Rule::User)], "{name}");
    assert_eq!(r.batch, Some(2));
    // By value name.
    let by_name = format!("%arg{tokens}");
    let r =
        roles::assign(&m, &RoleOptions { data_args: vec![ArgSelector::Name(by_name)] }).unwrap();
    assert_eq!(r.with(Role::Data).count(), 1);
    // An argument that does not exist is an error naming it.
    let e =
        roles::assign(&m, &RoleOptions { data_args: vec![ArgSelector::Index(999)] }).unwrap_err();
    assert!(e.to_string().contains("`999`"), "{e}");
}

/// The JAX fixtures of `make fixtures` (`f(*weights, x)`, data last; batch 1, batch 128,
/// data- and tensor-parallel sharded modules): `x` is the only data argument and carries the
/// batch, in the plain and the exported module alike.
#[test]
fn jax_fixtures_data_is_x() {
    let dir = tpuport_testkit::fixtures("jax");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let meta = tpuport_testkit::meta(&p);
        let Some(names) = meta["arg_names"].as_array() else { continue };
        let x = names.iter().position(|n| n == "x").unwrap();
        let Some(batch) = meta["args"][x][0][0].as_u64() else { continue };
        for file in ["jit.mlir", "export.mlir"] {
            if !p.join(file).is_file() {
                continue;
            }
            let r = roles::assign(&open(&p.join(file)), &RoleOptions::default()).unwrap();
            let data: Vec<usize> = r.with(Role::Data).map(|a| a.index).collect();
            assert_eq!(data, vec![x], "{}/{file}: {:?}", p.display(), r.decided_by);
            assert_eq!(r.batch, Some(batch), "{}/{file}", p.display());
            seen += 1;
        }
    }
    assert!(seen >= 12, "expected the JAX fixtures in {}", dir.display());
}

/// A Flax training step donating parameters, batch statistics and Adam state: without names,
/// `tf.aliasing_output` tells the state (statistics, moments, step count) from the parameters
/// (used as kernels or broadcast onto the activations), to the element.
#[test]
fn training_step_state_from_aliasing() {
    let (name, dir, meta) = exports().into_iter().find(|e| e.0 == "flax_resnet18_train").unwrap();
    let r = roles::assign(&open(&dir.join("jit.mlir")), &RoleOptions::default()).unwrap();
    assert_eq!(r.weights.elements, u(&meta, "params"), "{name}");
    assert_eq!(r.state.elements, u(&meta, "state"), "{name}");
    assert!(
        r.args.iter().filter(|a| a.role != Role::Data).all(|a| a.rule == Rule::Aliasing),
        "{name}"
    );
    assert_eq!(r.batch, Some(u(&meta, "batch")));
}
