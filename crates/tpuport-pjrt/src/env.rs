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
    /// When set (non-empty), CPU-plugin compiles take text modules as given, without the
    /// registered rewrite (depthwise convolutions unrolled): for comparing the two.
    pub const TPUPORT_NO_CPU_REWRITE: &'static str = "TPUPORT_NO_CPU_REWRITE";
    /// Path of a libtpu for tests that load the real libtpu (else `.cache/libtpu/*/libtpu/libtpu.so`).
    pub const TPUPORT_LIBTPU: &'static str = "TPUPORT_LIBTPU";
    /// libtpu's own variable naming its library (honoured by JAX too); discovery checks it.
    pub const TPU_LIBRARY_PATH: &'static str = "TPU_LIBRARY_PATH";
    /// libtpu: skip querying the GCE metadata server (tests set it so that libtpu fails fast
    /// on a machine without a TPU).
    pub const TPU_SKIP_MDS_QUERY: &'static str = "TPU_SKIP_MDS_QUERY";
    /// libtpu: hostnames of the slice's workers. Without a TPU (and without the metadata
    /// server) libtpu logs an error unless it is set; `localhost` silences it.
    pub const TPU_WORKER_HOSTNAMES: &'static str = "TPU_WORKER_HOSTNAMES";
    /// libtpu: the accelerator type of this machine (`v5litepod-8`). Without a TPU libtpu
    /// prints a warning unless it is set; ahead-of-time compilation takes its target from the
    /// topology instead, so any valid type silences it without changing results.
    pub const TPU_ACCELERATOR_TYPE: &'static str = "TPU_ACCELERATOR_TYPE";
    /// libtpu: skip its one-process-per-machine lock file (`/tmp/libtpu_lockfile`). Without a
    /// TPU there is no device to share, and two `tpuport compile` runs at once must not fail.
    pub const ALLOW_MULTIPLE_LIBTPU_LOAD: &'static str = "ALLOW_MULTIPLE_LIBTPU_LOAD";
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

/// Variables libtpu needs on a machine without a TPU so that initialisation neither retries
/// the GCE metadata server (about ten minutes), nor logs errors about the missing slice, nor
/// refuses because another process holds libtpu's lock file:
/// `(name, value)` pairs to set **before** libtpu is initialised, each only when the user has
/// not set it. Setting the environment is the caller's job (the binary does it first thing
/// in `main`, before any thread exists): a library cannot change it safely once threads run.
#[must_use]
pub fn libtpu_offline_env() -> Vec<(&'static str, &'static str)> {
    [
        (EnvVars::TPU_SKIP_MDS_QUERY, "1"),
        (EnvVars::TPU_WORKER_HOSTNAMES, "localhost"),
        (EnvVars::TPU_ACCELERATOR_TYPE, "v5litepod-8"),
        (EnvVars::ALLOW_MULTIPLE_LIBTPU_LOAD, "1"),
    ]
    .into_iter()
    .filter(|(k, _)| std::env::var_os(k).is_none())
    .collect()
}
