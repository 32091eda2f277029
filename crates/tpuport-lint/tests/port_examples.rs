//! `port` on the realistic example scripts: snapshot the diff, the change list and the manual
//! steps; the output must parse with tpuport's parser and with CPython's `ast`.

#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, reason = "tests")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use tpuport_lint::port::{PortOptions, PortResult, Target, port_source_with};
use tpuport_lint::render::unified_diff;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p = repo().join(".venv/bin/python");
    assert!(
        p.exists(),
        "python venv missing at {}: create it (see scripts/requirements/base.txt)",
        p.display()
    );
    p
}

/// Parses `text` with CPython's own `ast` module.
fn assert_cpython_parses(name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    let out = Command::new(python())
        .arg("-c")
        .arg("import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: ported output does not parse with CPython: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn render(name: &str, input: &str, r: &PortResult) -> String {
    let mut s = unified_diff(input, &r.output, Path::new(name));
    s.push_str("\n# changes\n");
    for c in &r.changes {
        let _ = writeln!(s, "{name}:{}: {}", c.line, c.description);
    }
    s.push_str("\n# manual\n");
    for m in &r.manual {
        let _ = writeln!(s, "{name}:{}:{}: {} {}", m.line, m.column, m.code, m.message);
    }
    s
}

fn check(name: &str, target: Target, must_contain: &[&str], must_not_contain: &[&str]) -> String {
    check_with(name, target, PortOptions::default(), must_contain, must_not_contain)
}

fn check_with(
    name: &str,
    target: Target,
    options: PortOptions,
    must_contain: &[&str],
    must_not_contain: &[&str],
) -> String {
    let path = repo().join("examples/scripts").join(name);
    let input = std::fs::read_to_string(&path).unwrap();
    let r = port_source_with(&input, target, options).unwrap();
    tpuport_python::parse_module(&r.output)
        .unwrap_or_else(|e| panic!("{name}: ported output does not parse: {e}"));
    assert_cpython_parses(name, &r.output);
    for m in must_contain {
        assert!(r.output.contains(m), "{name}: expected `{m}` in the ported output:\n{}", r.output);
    }
    let code = r.output.split_once('\n').map_or("", |(_, rest)| rest); // skip the docstring line
    for m in must_not_contain {
        assert!(!code.contains(m), "{name}: `{m}` should be gone:\n{}", r.output);
    }
    // A second port changes nothing: the codemod is idempotent.
    let again = port_source_with(&r.output, target, options).unwrap();
    assert_eq!(again.output, r.output, "{name}: port is not idempotent");
    render(name, &input, &r)
}

#[test]
fn port_pytorch_resnet_ddp() {
    let out = check(
        "pytorch_resnet_ddp.py",
        Target::TorchXla,
        &[
            "import torch_xla\n",
            "torch_xla.device()",
            "pl.MpDeviceLoader(train_loader, device)",
            "torch.autocast(\"xla\", dtype=torch.bfloat16)",
            "dist.init_process_group(\"xla\", init_method=\"xla://\")",
            "init_method=\"xla://\"",
            "xm.save(",
            "drop_last=True",
            "loss.backward()",
            "optimizer.step()",
        ],
        &["GradScaler", ".cuda(", "nccl", "device_ids", "cudnn", "pin_memory", "set_device"],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn port_keras_mirrored() {
    // `steps_per_execution` comes from TPU605, a preview rule: only with `--preview`.
    let without = check_with(
        "keras_mirrored_mixed_float16.py",
        Target::TfTpu,
        PortOptions::default(),
        &["TPUStrategy(resolver)"],
        &["steps_per_execution"],
    );
    drop(without);
    let out = check_with(
        "keras_mirrored_mixed_float16.py",
        Target::TfTpu,
        PortOptions { preview: true },
        &[
            "TPUClusterResolver",
            "initialize_tpu_system",
            "TPUStrategy(resolver)",
            "with strategy.scope():",
            "mixed_bfloat16",
            "drop_remainder=True",
            "steps_per_execution",
            "prefetch(tf.data.AUTOTUNE)",
        ],
        &["MirroredStrategy", "mixed_float16", "LossScaleOptimizer"],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn port_flax_pmap() {
    let out = check(
        "flax_pmap_shard_map.py",
        Target::Jax,
        &[
            "jax.jit",
            "NamedSharding(data_mesh, P(\"batch\"))",
            "from jax import shard_map",
            "check_vma=False",
            "mesh=mesh",
            "donate_argnums=(0,)",
            "jax.device_put(",
        ],
        &["jax.pmap", "jax.experimental.shard_map", "check_rep", "jax_utils.replicate(", "pmean"],
    );
    insta::assert_snapshot!(out);
}
