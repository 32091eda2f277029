//! The text report of `tpuport lower`.

use std::fmt::Write as _;
use std::path::Path;

use tpuport_formats::lowered::{ArgSource, Manifest};

/// What was lowered into `out`: totals, one line per bucket, the most frequent ops, the
/// weights file.
#[must_use]
pub fn render(m: &Manifest, out: &Path) -> String {
    let n_ops: usize = m.ops.values().sum();
    let mut s = format!(
        "lowered {} ({} nodes, {} op types) to {} in {:.0} ms\n",
        m.source,
        n_ops,
        m.ops.len(),
        out.display(),
        m.total_ms
    );
    for b in &m.buckets {
        let w = b.args.iter().filter(|a| matches!(a.source, ArgSource::Weight(_))).count();
        let _ = writeln!(
            s,
            "  {:<18} {} inputs, {} weights, {} results, lowered in {:.0} ms",
            b.module,
            b.args.len() - w,
            w,
            b.results.len(),
            b.lower_ms
        );
    }
    let mut top: Vec<_> = m.ops.iter().collect();
    top.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let list: Vec<String> = top.iter().take(12).map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(s, "  ops: {}{}", list.join(", "), if top.len() > 12 { ", ..." } else { "" });
    if let Some(w) = &m.weights_file {
        let _ = writeln!(s, "  weights: {}", out.join(w).display());
    }
    s
}
