//! Ahead-of-time compilation for a TPU topology with the real libtpu, on a machine without a
//! TPU (`scripts/tools/libtpu_fetch.sh` / `make libtpu` installs it; without it each test says so
//! in one line and passes).
//!
//! Expected figures were written down before the first run, from `docs/tpu-aot.md` (the JAX
//! path through the same compiler): f32[512,512,3,3] is stored unpadded (9,437,184 bytes),
//! f32[1000,3] pads to 16,384 bytes, a v5e:2x4 topology has 8 devices of kind "TPU v5 lite",
//! and a row-sharded f32[16,4] argument over 8 chips is 2 rows per chip.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(
    unsafe_code,
    reason = "set_var inside a Once that every test passes before libtpu is loaded"
)]

mod common;

use tpuport_pjrt::{CompileOptions, NamedValue, Program, Topology, Value};

/// libtpu loaded with the offline environment, or `None` (the one-line note is written by the
/// testkit).
fn libtpu(test: &str) -> Option<&'static tpuport_pjrt::Plugin> {
    static ENV: std::sync::Once = std::sync::Once::new();
    let path = tpuport_testkit::libtpu(test)?;
    ENV.call_once(|| {
        if !tpuport_pjrt::tpu_hardware_present() {
            for (k, v) in tpuport_pjrt::libtpu_offline_env() {
                // SAFETY: every test reaches libtpu only through this Once, so no plugin code
                // runs yet; the harness's own threads read the environment through std's lock.
                unsafe { std::env::set_var(k, v) };
            }
        }
    });
    Some(tpuport_pjrt::load(&path).expect("libtpu loads"))
}

/// The create options JAX passes for `v5e-8` (MaxText's table).
fn v5e_8_options() -> Vec<NamedValue> {
    vec![
        NamedValue::string("chip_config_name", "default"),
        NamedValue { name: "chips_per_host_bounds".into(), value: Value::Int64List(vec![2, 2, 1]) },
        NamedValue::int64("num_slices", 1),
        NamedValue { name: "wrap".into(), value: Value::Int64List(vec![0, 0, 0]) },
    ]
}

const CONV_KERNEL: &str = r"module @m {
  func.func public @main(%a: tensor<512x512x3x3xf32>, %b: tensor<1000x3xf32>) -> (tensor<512x512x3x3xf32>, tensor<1000x3xf32>) {
    %c = stablehlo.constant dense<1.0> : tensor<f32>
    %ca = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<512x512x3x3xf32>
    %cb = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<1000x3xf32>
    %0 = stablehlo.add %a, %ca : tensor<512x512x3x3xf32>
    %1 = stablehlo.add %b, %cb : tensor<1000x3xf32>
    return %0, %1 : tensor<512x512x3x3xf32>, tensor<1000x3xf32>
  }
}
";

#[test]
fn v5e_topology_describes_eight_chips() {
    let Some(plugin) = libtpu("v5e_topology_describes_eight_chips") else { return };
    let t = std::time::Instant::now();
    let topo = Topology::create(plugin, "v5e:2x4", &v5e_8_options()).expect("topology");
    assert!(t.elapsed().as_secs() < 60, "topology took {:?}", t.elapsed());
    assert_eq!(topo.platform_name().unwrap(), "tpu");
    let devices = topo.devices().unwrap();
    assert_eq!(devices.len(), 8);
    assert!(devices.iter().all(|d| d.kind == "TPU v5 lite"), "{:?}", devices[0]);
    let v6e = Topology::create(plugin, "v6e:2x2", &[]).expect("v6e topology");
    assert_eq!(v6e.devices().unwrap().len(), 4);
}

#[test]
fn compiles_without_a_tpu_and_reports_the_compilers_layouts() {
    let Some(plugin) = libtpu("compiles_without_a_tpu_and_reports_the_compilers_layouts") else {
        return;
    };
    let topo = Topology::create(plugin, "v5e:2x4", &v5e_8_options()).expect("topology");
    let exe = topo
        .compile(&Program::mlir(CONV_KERNEL.as_bytes().to_vec()), &CompileOptions::default())
        .expect("compile");
    let m = exe.compiled_memory_stats().unwrap();
    assert_eq!(m.argument, 9_437_184 + 16_384, "{m:?}");
    // The output copy of f32[1000,3] gets another layout than the parameter: 16,896 bytes.
    assert_eq!(m.output, 9_437_184 + 16_896, "{m:?}");
    assert!(m.generated_code > 0, "{m:?}");
    let layouts = exe.parameter_layouts().unwrap();
    assert_eq!(layouts.len(), 2);
    assert!(layouts.iter().all(|l| l.contains("T(")), "tiled layouts: {layouts:?}");
    assert_eq!(exe.output_layouts().unwrap().len(), 2);
    let cost = exe.cost_analysis().unwrap();
    assert!(cost.iter().any(|v| v.name == "flops"), "{cost:?}");
    let bytes = exe.serialize().unwrap();
    assert!(bytes.len() > 1000, "{}", bytes.len());
}

#[test]
fn sharded_modules_compile_per_chip() {
    let Some(plugin) = libtpu("sharded_modules_compile_per_chip") else { return };
    let topo = Topology::create(plugin, "v5e:2x4", &v5e_8_options()).expect("topology");
    for name in ["dp_shardy.mlir", "dp_gspmd.mlir"] {
        let exe = topo
            .compile(
                &Program::mlir(common::data(name)),
                &CompileOptions::spmd(8, true).with_identity_assignment(),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(exe.num_partitions().unwrap(), 8, "{name}");
        let outs = exe.outputs().unwrap();
        assert_eq!(outs[0].dims, vec![2, 3], "{name}: per-chip output shard");
        let sh = exe.output_shardings().unwrap();
        assert_eq!(sh.len(), 1);
        assert_eq!(sh[0].tiles, vec![8, 1], "{name}: {:?}", sh[0]);
        let ps = exe.parameter_shardings().unwrap();
        assert!(ps[0].is_replicated(), "{name}: w replicated: {:?}", ps[0]);
    }
}

#[test]
fn an_uncompilable_module_is_an_error_not_a_crash() {
    let Some(plugin) = libtpu("an_uncompilable_module_is_an_error_not_a_crash") else { return };
    let topo = Topology::create(plugin, "v5e:1x1", &[]).expect("topology");
    let bad = b"module { func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { %0 = stablehlo.custom_call @no_such_target(%a) : (tensor<4xf32>) -> tensor<4xf32>\n return %0 : tensor<4xf32> } }".to_vec();
    let e = topo.compile(&Program::mlir(bad), &CompileOptions::default()).unwrap_err();
    assert!(e.to_string().contains("PJRT_Compile failed"), "{e}");
}
