//! Where libtpu is ([`find_libtpu`]), which version it is, and the topology options that
//! describe a slice to it as JAX describes it.

use std::path::{Path, PathBuf};

use tpuport_hw::CompileTarget;
use tpuport_pjrt::{NamedValue, PluginKind, Value};

use tpuport_exec::error::{Result, invalid};

/// libtpu: the explicit path, else the first libtpu plugin [`tpuport_pjrt::discover`] finds:
/// `$TPUPORT_PJRT_PLUGIN` / `$TPU_LIBRARY_PATH` when they name libtpu, `libtpu/libtpu.so` in a
/// searched site-packages (`pip install libtpu`), `/usr/lib`, `/usr/local/lib` or `/lib`, then
/// the newest version `make libtpu` unpacked: `.cache/libtpu/<version>/` in the current
/// directory or its nearest parent that has one, else `tpuport/libtpu/<version>/` in the user
/// cache (`$XDG_CACHE_HOME`, else `~/.cache`); see [`tpuport_pjrt::libtpu_places`].
///
/// # Errors
/// The explicit path is not a file, or no libtpu was found (one line saying how to get it).
pub fn find_libtpu(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(invalid(format!("--plugin {}: no such file", p.display())));
        }
        return Ok(p.to_owned());
    }
    tpuport_pjrt::discover(None)
        .into_iter()
        .find(|f| f.kind == PluginKind::Tpu && f.path.is_file())
        .map(|f| f.path)
        .ok_or_else(|| {
            invalid(
                "libtpu not found: `pip install libtpu` into the project's virtual environment \
                 (or run `make libtpu` in a tpuport checkout), set TPU_LIBRARY_PATH, or pass \
                 --plugin PATH/libtpu.so (`tpuport doctor` lists where it looked)",
            )
        })
}

/// libtpu's package version: the `libtpu-X.dist-info` next to the `libtpu` package in a
/// site-packages, else a version-named folder above it (`.cache/libtpu/0.0.52/libtpu/`).
pub(crate) fn libtpu_version(lib: &Path) -> Option<String> {
    let lib = lib.canonicalize().unwrap_or_else(|_| lib.to_owned());
    let above = lib.parent()?.parent()?;
    let from_dist_info = std::fs::read_dir(above).ok().and_then(|rd| {
        rd.filter_map(std::result::Result::ok).find_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("libtpu-").and_then(|v| v.strip_suffix(".dist-info")).map(str::to_owned)
        })
    });
    from_dist_info.or_else(|| {
        let name = above.file_name()?.to_string_lossy().into_owned();
        name.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then_some(name)
    })
}

/// The create options JAX passes for the same slice.
pub(crate) fn topology_options(t: &CompileTarget) -> Vec<NamedValue> {
    let ints = |v: &[i64]| Value::Int64List(v.to_vec());
    let b = t.chips_per_host_bounds.map(i64::from);
    let mut o = vec![
        NamedValue::string("chip_config_name", &t.chip_config_name),
        NamedValue { name: "chips_per_host_bounds".into(), value: ints(&b) },
        NamedValue::int64("num_slices", i64::from(t.num_slices)),
    ];
    if let Some(w) = t.wrap {
        o.push(NamedValue { name: "wrap".into(), value: ints(&w.map(i64::from)) });
    }
    o
}
