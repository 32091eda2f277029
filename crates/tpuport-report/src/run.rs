//! The text report of `tpuport run`.

use std::fmt::Write as _;

use tpuport_exec::run::Report;
use tpuport_pjrt::CacheStatus;

/// One line for the execution, one per output file.
#[must_use]
pub fn render(r: &Report) -> String {
    let mut s = format!(
        "ran {} on {} ({} device(s)); compile {:.1} ms ({}), execute {:.2} ms\n",
        r.model.display(),
        r.platform,
        r.devices,
        r.compile_ms,
        cache_word(&r.cache),
        r.execute_ms
    );
    for o in &r.outputs {
        let _ = writeln!(s, "  {} {}{:?}", o.path.display(), o.dtype, o.shape);
    }
    s
}

/// How an executable was obtained, in words.
#[must_use]
pub fn cache_word(s: &CacheStatus) -> &'static str {
    match s {
        CacheStatus::Hit => "cached",
        CacheStatus::Miss => "compiled, cached",
        CacheStatus::Disabled => "compiled, cache off",
        CacheStatus::WriteFailed(_) => "compiled, cache write failed",
    }
}
