//! The text report of `tpuport conformance`.

use std::fmt::Write as _;

use tpuport_validate::conformance::{Outcome, Summary, Tally};

/// The text report: a per-op table (cases, outcomes, first problem), every failing case when
/// `all_cases`, then the totals per suite.
#[must_use]
pub fn render(s: &Summary, all_cases: bool) -> String {
    let mut out = String::new();
    let w = s.ops.keys().map(String::len).max().unwrap_or(2).max(2);
    let _ = writeln!(
        out,
        "{:<w$} {:>5} {:>5} {:>5} {:>5} {:>5}  first problem",
        "op", "cases", "pass", "fail", "unsup", "error"
    );
    for (op, t) in &s.ops {
        let first = s
            .cases
            .iter()
            .find(|c| &c.op == op && c.outcome != Outcome::Pass)
            .map(|c| format!("{}: {} {}", c.name, c.stage, c.reason))
            .unwrap_or_default();
        let first: String = first.chars().take(110).collect();
        let _ = writeln!(
            out,
            "{op:<w$} {:>5} {:>5} {:>5} {:>5} {:>5}  {first}",
            t.total, t.pass, t.fail, t.unsupported, t.error
        );
    }
    if all_cases {
        out.push('\n');
        for c in s.cases.iter().filter(|c| c.outcome != Outcome::Pass) {
            let _ = writeln!(
                out,
                "{:<11} {}/{} [{}] {}: {}",
                format!("{:?}", c.outcome).to_lowercase(),
                c.suite,
                c.name,
                c.op,
                c.stage,
                c.reason
            );
        }
    }
    out.push('\n');
    let line = |name: &str, t: &Tally| {
        format!(
            "{name:<20} {:>5} cases: {:>5} pass ({:>5.1}%), {} fail, {} unsupported, {} error\n",
            t.total,
            t.pass,
            t.pct(),
            t.fail,
            t.unsupported,
            t.error
        )
    };
    for (suite, t) in &s.suites {
        out.push_str(&line(if suite.is_empty() { "(cases)" } else { suite }, t));
    }
    if !s.reference_ops.is_empty() {
        out.push_str(&line("node, reference ops", &s.node_reference_ops));
    }
    out.push_str(&line("total", &s.total));
    if s.pass_with_bound_inputs > 0 {
        let _ = writeln!(
            out,
            "{} of the passes bind shape-like graph inputs (axes, shapes, pads) as constants",
            s.pass_with_bound_inputs
        );
    }
    let _ = writeln!(out, "on {} in {:.1} s", s.platform, s.wall_s);
    out
}
