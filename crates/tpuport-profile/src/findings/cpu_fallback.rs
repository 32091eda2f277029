//! PRF401: ops without an XLA lowering that ran on the CPU.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Ctx, Draft, Rule, Sink};
use crate::frames::Frame;

tpuport_codes::documented! {
    /// ## What it finds
    /// torch_xla ops that fell back to the CPU: `aten::<op>` counters in the metrics report
    /// (torch_xla names the counter after the op it hands to `at::native::cpu_fallback`) and
    /// the `pt-xla-profiler: Op(s) not lowered:` line. `aten::_local_scalar_dense` is a host
    /// read (PRF301), not a missing lowering.
    ///
    /// The line is taken from the unlowered-op summary that `PT_XLA_DEBUG=1` prints at exit,
    /// whose frame lines are matched to the op by the call on that line; without it, the user
    /// files named by the debug log's frames are searched for a call of the op
    /// (`torch.bincount(` / `.bincount(`).
    ///
    /// ## Why it hurts on TPU
    /// A fallback copies the inputs from the device to the host, runs the op on the CPU and
    /// copies the result back, every step; the graph is cut there, so it also means an extra
    /// compilation and execution. Ops with data-dependent output shapes (`nonzero`, `unique`)
    /// also make the next graph's shapes change.
    ///
    /// ## What to do
    /// Rewrite with ops XLA lowers (`bincount` as `scatter_add` / one-hot sum into a
    /// fixed-size tensor, `unique(size=…)`-style padding, `torch.where` instead of
    /// `nonzero`), move the op out of the step (pre-compute it in the data pipeline), or ask
    /// for a lowering in pytorch/xla.
    ///
    /// ## References
    /// - pytorch/xla `torch_xla/csrc/aten_fallback.cpp` (counter naming)
    /// - pytorch/xla `docs/source/learn/troubleshoot.md` (`aten::` counters)
    pub(crate) struct CpuFallback;
}

/// The Python name of an ATen op: `aten::median.dim_values` → `median`, `aten::_unique2` →
/// `unique`.
fn python_name(op: &str) -> String {
    let base = op.strip_prefix("aten::").unwrap_or(op);
    let base = base.split('.').next().unwrap_or(base);
    base.trim_start_matches('_').trim_end_matches(|c: char| c.is_ascii_digit()).to_owned()
}

/// Whether `line` calls `name` (`name(` or `.name(`), outside a comment.
fn calls(line: &str, name: &str) -> bool {
    let code = line.split('#').next().unwrap_or("");
    let pat = format!("{name}(");
    code.match_indices(&pat).any(|(i, _)| {
        i == 0 || !code.as_bytes()[i - 1].is_ascii_alphanumeric() && code.as_bytes()[i - 1] != b'_'
    })
}

fn rules_for(op: &str) -> Vec<&'static str> {
    match python_name(op).as_str() {
        "nonzero" => vec!["TPU105"],
        "masked_select" => vec!["TPU106"],
        "unique" => vec!["TPU109"],
        _ => Vec::new(),
    }
}

impl Rule for CpuFallback {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        // op → (count, evidence).
        let mut ops: BTreeMap<String, (Option<u64>, Vec<PathBuf>)> = BTreeMap::new();
        let mut steps = None;
        for (path, m) in &cx.ev.metrics {
            for c in m.fallbacks() {
                if c.name == "aten::_local_scalar_dense" {
                    continue;
                }
                let e = ops.entry(c.name.clone()).or_default();
                e.0 = Some(e.0.unwrap_or(0).max(c.value));
                e.1.push(path.clone());
            }
            steps = steps.or(m.counter("MarkStep"));
        }
        for (path, log) in &cx.ev.xla_debug {
            for op in &log.warnings.not_lowered {
                if op == "aten::_local_scalar_dense" {
                    continue;
                }
                ops.entry(op.clone()).or_default().1.push(path.clone());
            }
        }
        if ops.is_empty() {
            return;
        }
        // Candidate lines: the unlowered-op summary's frames, then every user line the debug
        // logs name (their files are searched).
        let summary: Vec<&Frame> = cx
            .ev
            .xla_debug
            .iter()
            .flat_map(|(_, l)| l.unlowered.iter())
            .filter_map(|s| s.frames.iter().find(|f| f.is_user()))
            .collect();
        let mut files: Vec<&str> = Vec::new();
        for (_, l) in &cx.ev.xla_debug {
            for f in l.analyses.iter().flat_map(|a| a.frames.iter()).chain(l.unlowered.iter().flat_map(|s| s.frames.iter())) {
                if f.is_user() && !files.contains(&f.file.as_str()) {
                    files.push(&f.file);
                }
            }
        }
        for (op, (count, mut evidence)) in ops {
            let name = python_name(&op);
            let site = summary
                .iter()
                .find(|f| cx.line_text(f).is_some_and(|t| calls(&t, &name)))
                .map(|f| (*f).clone())
                .or_else(|| {
                    files.iter().find_map(|file| {
                        let lines = cx.source(file)?;
                        let i = lines.iter().position(|l| calls(l, &name))?;
                        Some(Frame { file: (*file).to_owned(), line: u32::try_from(i + 1).ok()?, function: None })
                    })
                });
            evidence.sort();
            evidence.dedup();
            let per = match (count, steps) {
                #[allow(clippy::cast_precision_loss, reason = "counts")]
                (Some(c), Some(s)) if s > 0 => format!(" {c} times ({:.1} per step)", c as f64 / s as f64),
                (Some(c), _) => format!(" {c} times"),
                _ => String::new(),
            };
            sink.emit(Draft {
                title: format!("`{op}` ran on the CPU"),
                message: format!("`{op}` has no XLA lowering here and fell back to the CPU{per}: inputs go to the host and back each time"),
                location: site,
                evidence,
                check_rules: Some(rules_for(&op)),
                fix: Some(format!("replace `{name}` with ops XLA lowers, or move it out of the step")),
                ..Draft::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_calls() {
        assert_eq!(python_name("aten::bincount"), "bincount");
        assert_eq!(python_name("aten::_unique2"), "unique");
        assert_eq!(python_name("aten::median.dim_values"), "median");
        assert!(calls("counts = torch.bincount(y, minlength=4)", "bincount"));
        assert!(!calls("# torch.bincount(y)", "bincount"));
        assert!(!calls("my_bincount(y)", "bincount"));
    }
}
