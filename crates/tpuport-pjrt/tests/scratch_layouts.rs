#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr, unsafe_code)]
use tpuport_pjrt::{CompileOptions, Program, Topology};
#[test]
fn dump() {
    for (k, v) in tpuport_pjrt::libtpu_offline_env() { unsafe { std::env::set_var(k, v) }; }
    let plugin = tpuport_pjrt::load(&tpuport_testkit::libtpu("x").unwrap()).unwrap();
    for topo_name in ["v5e:1x1", "v6e:1x1"] {
    let topo = Topology::create(plugin, topo_name, &[]).unwrap();
    for ty in ["512x512x3x3xf32","3x3x512x512xf32","2048x1024x1x1xf32","64x64x3x3xf32","1000x3xf32","4x7xf32","8x3x224x224xf32","8x224x224x3xf32","50257x768xf32","7xf32","1000xf32","4x7xbf16","1000x3xbf16","3x5x7xbf16","f32","3xi8","33x65xi8","17x300xbf16","5x1xf32"] {
        let m = format!("module @m {{ func.func public @main(%a: tensor<{ty}>) -> tensor<{ty}> {{ %0 = stablehlo.add %a, %a : tensor<{ty}>\n return %0 : tensor<{ty}> }} }}");
        let exe = topo.compile(&Program::mlir(m.into_bytes()), &CompileOptions::default()).unwrap();
        let s = exe.compiled_memory_stats().unwrap();
        eprintln!("{topo_name} {ty}: arg {} out {} pl {:?} ol {:?}", s.argument, s.output, exe.parameter_layouts().unwrap(), exe.output_layouts().unwrap());
    }}
}
