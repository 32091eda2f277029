//! Environment variables the PJRT layer reads, in one place.

/// Environment variables read by tpuport's runtime layer.
#[derive(Debug)]
pub struct EnvVars;

impl EnvVars {
    /// Path of the PJRT plugin to use when `--plugin` is not given (takes precedence over
    /// discovery).
    pub const TPUPORT_PJRT_PLUGIN: &'static str = "TPUPORT_PJRT_PLUGIN";
    /// Directory for compiled-executable cache entries (default
    /// `$XDG_CACHE_HOME/tpuport/executables`, else `~/.cache/tpuport/executables`).
    pub const TPUPORT_CACHE_DIR: &'static str = "TPUPORT_CACHE_DIR";
    /// Path of a libtpu for tests that load the real libtpu (else `.cache/libtpu/*/libtpu/libtpu.so`).
    pub const TPUPORT_LIBTPU: &'static str = "TPUPORT_LIBTPU";
    /// libtpu's own variable naming its library (honoured by JAX too); discovery checks it.
    pub const TPU_LIBRARY_PATH: &'static str = "TPU_LIBRARY_PATH";
    /// libtpu: skip querying the GCE metadata server (tests set it so that libtpu fails fast
    /// on a machine without a TPU).
    pub const TPU_SKIP_MDS_QUERY: &'static str = "TPU_SKIP_MDS_QUERY";
    /// The active Python virtual environment; its site-packages are searched for plugins.
    pub const VIRTUAL_ENV: &'static str = "VIRTUAL_ENV";
    /// XDG base directory for caches.
    pub const XDG_CACHE_HOME: &'static str = "XDG_CACHE_HOME";
    /// XLA/TSL log threshold read by the plugins (0 info, 1 warning, 2 error). The binary sets
    /// it to 1 unless the user set it or asked for `-v`, so plugin INFO lines stay off stderr.
    pub const TF_CPP_MIN_LOG_LEVEL: &'static str = "TF_CPP_MIN_LOG_LEVEL";
    /// A Python interpreter whose site-packages are searched for plugins before the others
    /// (the global `--python` option sets it), and which `doctor` asks for framework versions.
    pub const TPUPORT_PYTHON: &'static str = "TPUPORT_PYTHON";
    /// Searched for the first `python3` (or `python`), whose site-packages hold plugins when
    /// its environment is not activated.
    pub const PATH: &'static str = "PATH";
    /// Home directory (cache fallback, user site-packages).
    pub const HOME: &'static str = "HOME";
}
