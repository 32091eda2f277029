//! The real libtpu (PyPI `libtpu` 0.0.52, PJRT API 0.117), when `make libtpu`
//! (`scripts/tools/libtpu_fetch.sh`) has fetched it into `.cache/libtpu/` (or `$TPUPORT_LIBTPU`
//! names one). Without it the test says so in one line and passes.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(
    unsafe_code,
    reason = "set_var before any thread of this one-test binary reads the environment"
)]

use tpuport_pjrt::{Client, ClientOptions, PjrtError};

#[test]
fn libtpu_loads_and_reports_its_version_or_no_tpu() {
    let Some(path) = tpuport_testkit::libtpu("libtpu_loads_and_reports_its_version_or_no_tpu")
    else {
        return;
    };
    let t = std::time::Instant::now();
    let plugin = tpuport_pjrt::load(&path).expect("libtpu loads");
    assert!(t.elapsed().as_secs() < 30, "loading took {:?}", t.elapsed());
    let (major, minor) = plugin.api_version();
    assert_eq!(major, 0);
    assert!(minor >= 100, "libtpu 0.0.52 has PJRT API 0.117, got 0.{minor}");
    let info = plugin.info();
    assert!(info.table_bytes > 1072, "newer than our header: {}", info.table_bytes);
    if !tpuport_pjrt::tpu_hardware_present() {
        // Without TPU hardware, Client::new refuses at once instead of letting libtpu retry the
        // GCE metadata server for minutes.
        let e = Client::new(plugin, &ClientOptions::default()).unwrap_err();
        assert!(
            matches!(e, PjrtError::NoDevices { .. }),
            "expected a clean no-TPU error, got: {e}"
        );
        assert!(e.to_string().starts_with("no TPU devices"), "{e}");
        assert!(t.elapsed().as_secs() < 30, "no-TPU answer took {:?}", t.elapsed());
        // The plugin's own answer: NOT_FOUND "No jellyfish device found", mapped the same way.
        for (k, v) in tpuport_pjrt::libtpu_offline_env() {
            // SAFETY: this binary holds one test; nothing else reads the environment
            // concurrently.
            unsafe { std::env::set_var(k, v) };
        }
        let opts = ClientOptions { skip_hardware_check: true, ..ClientOptions::default() };
        let e = Client::new(plugin, &opts).unwrap_err();
        assert!(
            matches!(e, PjrtError::NoDevices { .. }),
            "expected a clean no-TPU error, got: {e}"
        );
        assert!(e.to_string().contains("TPU initialization failed"), "{e}");
    }
}
