//! StableHLO import against modules produced right now by the venv's JAX: pretty text
//! (`jax.jit(f).lower(..).as_text()`), export text with locations, and MLIR's own generic
//! print of the same module. Checks: the signature matches what JAX reports, pretty and
//! generic parse to the same graph, print → parse is stable, and the printed generic text is
//! parsed and verified by MLIR and, for single-device programs, compiled by XLA's CPU
//! backend and executed with outputs equal to `jax.jit(f)`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::path::{Path, PathBuf};
use std::process::Command;

use tpuport_formats::stablehlo::{StructureOptions, parse_text, print_model, structure};
use tpuport_formats::{Limits, open};
use tpuport_model::{DType, Model, ModelFormat, TensorType};

const SCRIPT: &str = r#"
import os, sys, json, glob
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np
import jax, jax.numpy as jnp
from jax import export
from jax.sharding import NamedSharding, PartitionSpec as P
from jax._src.lib import xla_client as xc

def programs():
    rng = np.random.default_rng(0)
    def f32(*s):
        return rng.standard_normal(s).astype(np.float32)
    big = f32(16, 16)
    def mlp(w1, b1, w2, b2, x):
        h = jnp.tanh(x @ w1 + b1)
        return jax.nn.softmax(h @ w2 + b2 + (jnp.asarray(big) @ jnp.ones((16,), jnp.float32))[:4], axis=-1)
    def cnn(w, x):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 0)), rhs_dilation=(1, 2),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.mean(y, axis=(1, 2)), jnp.transpose(y, (0, 3, 1, 2)), jnp.einsum("bhwc,c->bhw", y, w[0, 0, 0, :])
    def ctrl(x, i):
        a, n = jax.lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.5, c[1] + 1), (x, 0))
        b = jax.lax.cond(i > 0, lambda v: v + 1, lambda v: v - 1, a)
        idx = jnp.argsort(b)
        return (jnp.sort(b) + b[idx] + b.at[idx].add(1.0), jnp.argmax(jnp.outer(b, b), axis=0),
                x[1:3], jax.lax.dynamic_slice(x, (i,), (2,)), jnp.concatenate([x, x]),
                jnp.where(x > 0, x, -x), jnp.cumsum(x), jax.random.normal(jax.random.key(1), (4,)),
                jax.lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x), n)
    def misc(x):
        c = jax.lax.composite(lambda v: jnp.tanh(v) * 2, name="my.tanh2")
        return (c(x), jnp.fft.fft(x.astype(jnp.complex64)), x.astype(jnp.bfloat16),
                jax.lax.optimization_barrier(x), jnp.pad(x, ((1, 2),)), x[::2],
                jnp.linalg.cholesky(jnp.eye(4) * 2.0), x.astype(jnp.int8), jnp.uint32(7) + x.astype(jnp.uint32),
                jax.lax.rng_bit_generator(jnp.zeros((4,), jnp.uint32), (3,))[1], jnp.isfinite(x),
                jax.lax.reduce_precision(x, 5, 10), jnp.flip(x), jnp.clip(x, -0.5, 0.5))
    def sharded(w, x):
        mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        y = jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh, P("x", None)))
        z = jax.shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P())(y)
        return jax.nn.relu(y), z
    return [
        ("mlp", mlp, [f32(8, 16), f32(16), f32(16, 4), f32(4), f32(2, 8)], True),
        ("cnn", cnn, [f32(3, 3, 3, 4), f32(2, 8, 8, 3)], True),
        ("ctrl", ctrl, [f32(4), np.int32(1)], True),
        ("misc", misc, [f32(4)], True),
        ("sharded", sharded, [f32(16, 32), f32(8, 16)], False),
    ]

def plugin_client():
    """The OpenXLA CPU PJRT plugin (PyPI xla-cpu-pjrt), loaded beside jaxlib's own CPU client."""
    so = os.path.join(os.path.dirname(jax.__file__), "..", "xla_plugins", "xla_cpu_pjrt", "xla_cpu_pjrt.so")
    assert os.path.exists(so), f"xla-cpu-pjrt plugin missing at {so}"
    xc.load_pjrt_plugin_dynamically("xla_cpu_pjrt", so)
    return xc.make_c_api_client("xla_cpu_pjrt")

def plugin_compile(client, text):
    # JAX registers its LAPACK FFI handlers only in jaxlib's client, not in the plugin.
    if "lapack_" in text:
        return False
    client.compile_and_load(text, xc.DeviceList(tuple(client.devices()[:1])), xc.CompileOptions())
    return True

def sig(vals):
    return [[list(v.shape), str(v.dtype)] for v in vals]

def gen(out):
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir
    for name, fn, args, _ in programs():
        lowered = jax.jit(fn).lower(*args)
        text = lowered.as_text()
        open(f"{out}/{name}.jit.mlir", "w").write(text)
        open(f"{out}/{name}.export.mlir", "w").write(export.export(jax.jit(fn))(*args).mlir_module())
        with jmlir.make_ir_context():
            m = ir.Module.parse(text)
            open(f"{out}/{name}.generic.mlir", "w").write(m.operation.get_asm(print_generic_op_form=True, enable_debug_info=False))
        outs = jax.tree_util.tree_leaves(jax.eval_shape(fn, *args))
        json.dump({"args": sig(args), "outputs": sig(outs)}, open(f"{out}/{name}.meta.json", "w"))
    (b,) = export.symbolic_shape("b")
    poly = export.export(jax.jit(lambda x: jnp.sum(jnp.sin(x), axis=0)))(jax.ShapeDtypeStruct((b, 3), jnp.float32))
    open(f"{out}/poly.export.mlir", "w").write(poly.mlir_module())
    json.dump({"args": [[[-1, 3], "float32"]], "outputs": [[[3], "float32"]]}, open(f"{out}/poly.meta.json", "w"))

def check(out):
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir
    from jax._src import xla_bridge
    backend = xla_bridge.get_backend("cpu")
    plugin = plugin_client()
    progs = {name: (fn, args, run) for name, fn, args, run in programs()}
    failures = 0
    for path in sorted(glob.glob(f"{out}/*.printed.mlir")):
        label = os.path.basename(path)
        name = label.split(".")[0]
        text = open(path).read()
        try:
            with jmlir.make_ir_context():
                m = ir.Module.parse(text)
                assert m.operation.verify(), "verify failed"
            fn, args, run = progs.get(name, (None, None, False))
            if run:
                # Run JAX first: it initialises the LAPACK kernels behind `lapack_*_ffi` custom
                # calls, which an executable compiled from text alone would call uninitialised.
                want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
                exe = backend.compile_and_load(text, xc.DeviceList(tuple(backend.local_devices()[:1])), xc.CompileOptions())
                res = exe.execute_sharded([jax.device_put(a) for a in args]).disassemble_into_single_device_arrays()
                got = [np.asarray(r[0]) for r in res]
                assert len(got) == len(want), f"{len(got)} outputs, want {len(want)}"
                for k, (g, w) in enumerate(zip(got, want)):
                    assert g.shape == w.shape and g.dtype == w.dtype, f"output {k}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
                    np.testing.assert_allclose(g.astype(np.float64) if g.dtype != np.complex64 else g,
                                               w.astype(np.float64) if w.dtype != np.complex64 else w, rtol=1e-5, atol=1e-6)
                via = ", plugin-compiled" if plugin_compile(plugin, text) else ""
                print(f"OK {label} verified, compiled, executed{via}")
            else:
                print(f"OK {label} verified")
        except Exception as e:
            failures += 1
            print(f"FAIL {label}: {type(e).__name__}: {str(e)[:2000]}")
    sys.exit(1 if failures else 0)

{"gen": gen, "check": check}[sys.argv[1]](sys.argv[2])
"#;

fn venv_python() -> PathBuf {
    let root = std::env::var_os("TPUPORT_ROOT")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), PathBuf::from);
    let p = root.join(".venv/bin/python");
    assert!(p.exists(), "venv python missing at {}: run `make venv`", p.display());
    p
}

fn run_script(dir: &Path, mode: &str) -> String {
    let script = dir.join("jax_modules.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = Command::new(venv_python())
        .arg(&script)
        .arg(mode)
        .arg(dir)
        .output()
        .expect("running venv python");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "python {mode} failed:\n{text}");
    text
}

/// (shape with -1 for dynamic, dtype name) pairs.
fn meta_sig(v: &serde_json::Value) -> Vec<(Vec<i64>, DType)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let shape = e[0].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
            let dt = DType::from_name(e[1].as_str().unwrap())
                .unwrap_or_else(|| panic!("dtype {}", e[1]));
            (shape, dt)
        })
        .collect()
}

fn ty_sig(t: &TensorType) -> (Vec<i64>, DType) {
    let shape = t
        .shape
        .as_ref()
        .expect("ranked")
        .0
        .iter()
        .map(|d| d.known().map_or(-1, |n| n as i64))
        .collect();
    (shape, t.dtype.expect("dtype"))
}

type Sig = Vec<(Vec<i64>, DType)>;

fn graph_sig(m: &Model) -> (Sig, Sig) {
    let g = &m.graph;
    (
        g.inputs.iter().map(|&i| ty_sig(&g.value(i).ty)).collect(),
        g.outputs.iter().map(|&i| ty_sig(&g.value(i).ty)).collect(),
    )
}

#[test]
fn jax_modules_import_round_trip_and_compile() {
    let dir = tempfile::tempdir().unwrap();
    // STABLEHLO_TEST_KEEP=<dir> keeps the generated and printed modules for inspection.
    let keep = std::env::var_os("STABLEHLO_TEST_KEEP").map(PathBuf::from);
    let d = keep.as_deref().unwrap_or(dir.path());
    std::fs::create_dir_all(d).unwrap();
    run_script(d, "gen");
    let names = ["mlp", "cnn", "ctrl", "misc", "sharded"];
    let mut printed = 0;
    for name in names.iter().copied().chain(["poly"]) {
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(d.join(format!("{name}.meta.json"))).unwrap(),
        )
        .unwrap();
        for variant in ["jit", "export", "generic"] {
            let path = d.join(format!("{name}.{variant}.mlir"));
            if !path.exists() {
                continue;
            }
            let m = open(&path, &Default::default()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(m.format, ModelFormat::StablehloText);
            assert_eq!(m.graph.name, "main", "{name}.{variant}");
            if variant != "generic" {
                assert_eq!(m.metadata.framework, tpuport_model::Framework::Jax, "{name}.{variant}");
                let want = if variant == "export" { "jax.export" } else { "jax.jit lower" };
                assert_eq!(m.metadata.exporter.as_deref(), Some(want), "{name}.{variant}");
            }
            let (ins, outs) = graph_sig(&m);
            if name == "poly" {
                // jax.export adds the dimension variable's platform-index-free wrapper.
                assert_eq!(ins, meta_sig(&meta["args"]), "{name}.{variant} inputs");
            } else {
                assert_eq!(ins, meta_sig(&meta["args"]), "{name}.{variant} inputs");
                assert_eq!(outs, meta_sig(&meta["outputs"]), "{name}.{variant} outputs");
            }
            // print -> parse is stable, locations included
            let text = print_model(&m).unwrap();
            let out = d.join(format!("{name}.{variant}.printed.mlir"));
            std::fs::write(&out, &text).unwrap();
            let m2 = parse_text(&out, &text, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
            let opts = StructureOptions { locations: true };
            assert_eq!(
                structure(&m, opts),
                structure(&m2, opts),
                "{name}.{variant}: round trip differs"
            );
            printed += 1;
        }
        if names.contains(&name) {
            let a = open(&d.join(format!("{name}.jit.mlir")), &Default::default()).unwrap();
            let b = open(&d.join(format!("{name}.generic.mlir")), &Default::default()).unwrap();
            let o = StructureOptions::default();
            assert_eq!(
                structure(&a, o),
                structure(&b, o),
                "{name}: pretty and MLIR-generic text differ"
            );
        }
    }
    assert_eq!(printed, 16);
    // JAX-specific content survives: closure constants as weights, sharding attributes, mesh.
    let m = open(&d.join("mlp.jit.mlir"), &Default::default()).unwrap();
    let w =
        m.weights.iter().find(|w| w.shape == [16, 16]).expect("16x16 constant in the weight store");
    assert_eq!((w.dtype, w.bytes().unwrap().len()), (DType::F32, 16 * 16 * 4));
    let sh = open(&d.join("sharded.jit.mlir"), &Default::default()).unwrap();
    let all: Vec<&tpuport_model::Node> =
        std::iter::once(&sh.graph).chain(&sh.functions).flat_map(|g| g.walk_nodes()).collect();
    let sc = all.iter().find(|n| n.op == "sdy.sharding_constraint").expect("sharding constraint");
    assert_eq!(
        sc.attr("sharding").and_then(|a| a.as_str()),
        Some("#sdy.sharding<@mesh, [{\"x\"}, {}]>")
    );
    let mc = all.iter().find(|n| n.op == "sdy.manual_computation").expect("shard_map body");
    assert_eq!(mc.subgraphs[0].1.nodes[0].op, "stablehlo.all_reduce");
    assert!(
        sh.metadata.properties.iter().any(|(k, v)| k == "mlir.module_op" && v.contains("sdy.mesh"))
    );
    assert!(
        sh.metadata.properties.iter().any(|(k, v)| k == "mhlo.num_partitions" && v == "8 : i32")
    );
    let report = run_script(d, "check");
    let ok = report.lines().filter(|l| l.starts_with("OK ")).count();
    assert_eq!(ok, printed, "{report}");
    let compiled = report.lines().filter(|l| l.contains("executed")).count();
    assert_eq!(compiled, 12, "{report}");
    // All but `misc` (LAPACK custom calls are JAX's own) also compile on the xla-cpu-pjrt plugin.
    let plugin = report.lines().filter(|l| l.contains("plugin-compiled")).count();
    assert_eq!(plugin, 9, "{report}");
}
