//! The text report of `tpuport validate`: the setup, the tolerance, one block per output
//! (metrics, worst element, non-finite counts, last-axis agreement, verdict) and the bisection
//! chart of relative error growth on a log scale.

use std::fmt::Write as _;

use tpuport_numerics::{Atol, Bisection, Verdict};
use tpuport_validate::validate::{Emulate, Report};

/// The text report; the bisection chart shows at most `chart_rows` rows (plus the divergence
/// point and its neighbours).
#[must_use]
pub fn render(r: &Report, chart_rows: usize) -> String {
    let mut s = String::new();
    let reference = match &r.reference.path {
        Some(p) => format!("files {}", p.display()),
        None => r.reference.kind.to_owned(),
    };
    let _ = writeln!(
        s,
        "validate {} on {}: candidate {}, reference {reference}, {} sample(s)",
        r.model.display(),
        r.platform,
        match r.emulate {
            Emulate::None => "as is".to_owned(),
            e => format!("--emulate {}", e.name()),
        },
        r.samples
    );
    if r.partitions > 1 {
        let _ = writeln!(
            s,
            "sharded over {} partitions: run unsharded on one device (same values, collective \
             reduction order aside)",
            r.partitions
        );
    }
    if let Some(e) = &r.emulation {
        let _ = writeln!(
            s,
            "emulated matmuls: {} DEFAULT, {} HIGH, {} HIGHEST ({} raised by precision_config), {} skipped",
            e.default,
            e.high,
            e.highest,
            e.raised_by_precision_config,
            e.skipped.len()
        );
    }
    let t = &r.policy.tolerance;
    let atol = match t.atol {
        Atol::Absolute(v) => format!("{v:.1e}"),
        Atol::RelativeToMax(f) => format!("{f:.1e}·max|ref|"),
    };
    let _ = writeln!(
        s,
        "tolerance ({}): rtol {:.2e}, atol {atol}, at most {}% of elements outside",
        r.policy.precision.name(),
        t.rtol,
        t.max_fraction_outside * 100.0
    );
    s.push('\n');
    for o in &r.outputs {
        let ty = match (&o.dtype, &o.shape) {
            (Some(d), Some(sh)) => format!("{d}{sh:?}"),
            _ => String::new(),
        };
        let _ = writeln!(s, "{} {} {ty}", o.verdict.word().to_uppercase(), o.name);
        if let Some(m) = &o.metrics {
            let _ = writeln!(
                s,
                "  max abs {:.3e}  max rel {:.3e}  rmse {:.3e} (rel {:.3e})  cosine {}",
                m.max_abs,
                m.max_rel,
                m.rmse,
                m.rel_rmse,
                m.cosine.map_or_else(|| "n/a".to_owned(), |c| format!("{c:.8}"))
            );
            let _ = writeln!(
                s,
                "  bf16 ulps: median {:.2}, max {:.3e}  outside tolerance: {} of {} ({:.4}%)",
                m.bf16_ulp_median,
                m.bf16_ulp_max,
                m.outside,
                m.elements,
                m.fraction_outside * 100.0
            );
            if m.atol_floored {
                let _ = writeln!(
                    s,
                    "  atol {:.3e}: the precision's floor (the tensor's scale {:.3e} is below \
                     what its unit-scale intermediates resolve)",
                    m.atol_applied, m.reference_max_abs
                );
            }
            if let (Some(i), Some(r0), Some(c0), Some(sh)) =
                (m.worst_index, m.worst_reference, m.worst_candidate, &o.shape)
                && m.max_abs > 0.0
            {
                let _ = writeln!(
                    s,
                    "  worst element {:?}: reference {r0:.6e}, candidate {c0:.6e}",
                    unravel(i, sh)
                );
            }
            let nf = &m.non_finite;
            if nf.reference_nan + nf.reference_inf + nf.candidate_nan + nf.candidate_inf > 0 {
                let _ = writeln!(
                    s,
                    "  non-finite: reference {} NaN / {} Inf, candidate {} NaN / {} Inf, {} mismatched",
                    nf.reference_nan,
                    nf.reference_inf,
                    nf.candidate_nan,
                    nf.candidate_inf,
                    nf.mismatched
                );
            }
            if let Some(why) = m.classes_skipped {
                let _ = writeln!(s, "  no last-axis (class) metrics: {why}");
            }
            if let Some(c) = &m.classes {
                let _ = writeln!(
                    s,
                    "  last axis as {} ({} rows x {}): top-1 agreement {:.2}%{}  KL mean {:.3e} max {:.3e}",
                    c.interpreted_as,
                    c.rows,
                    c.classes,
                    c.top1_agreement * 100.0,
                    c.top5_agreement
                        .map_or_else(String::new, |t| format!(", top-5 {:.2}%", t * 100.0)),
                    c.kl_mean,
                    c.kl_max
                );
                if c.rows_non_finite > 0 {
                    let _ = writeln!(
                        s,
                        "  ({} row(s) with NaN/Inf left out of the last-axis metrics)",
                        c.rows_non_finite
                    );
                }
            }
        }
        match &o.verdict {
            Verdict::Fail { reasons } => {
                for reason in reasons {
                    let _ = writeln!(s, "  fail: {reason}");
                }
            }
            Verdict::Error { reason } => {
                let _ = writeln!(s, "  error: {reason}");
            }
            Verdict::Pass => {}
        }
    }
    if let Some(b) = &r.bisect {
        s.push('\n');
        render_bisect(&mut s, b, chart_rows, r.passed);
    }
    let failed = r.outputs.iter().filter(|o| !o.verdict.passed()).count();
    let _ = writeln!(
        s,
        "\n{}: {} of {} output(s) within tolerance",
        if r.passed { "PASS" } else { "FAIL" },
        r.outputs.len() - failed,
        r.outputs.len()
    );
    s
}

/// Flat index → multi-index in row-major order.
fn unravel(mut i: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

fn render_bisect(s: &mut String, b: &Bisection, rows: usize, outputs_passed: bool) {
    let _ = writeln!(
        s,
        "bisect: {} intermediate(s) compared with the f32 reference run",
        b.steps.len()
    );
    match b.first() {
        Some(st) => {
            let _ = writeln!(
                s,
                "first divergent op: #{} {} = {}{} (rel rmse {:.3e}, {:.3}% outside)",
                st.index,
                st.probe.name,
                st.probe.op,
                st.probe.location.as_deref().map_or_else(String::new, |l| format!(" at {l}")),
                st.rel_rmse,
                st.fraction_outside * 100.0
            );
            if outputs_passed {
                let _ = writeln!(
                    s,
                    "  (every output is within tolerance: this error does not reach the outputs)"
                );
            }
        }
        None => {
            let _ = writeln!(s, "no intermediate crosses the tolerance");
        }
    }
    // rows to show: evenly spaced, plus the divergence point and its neighbours
    let n = b.steps.len();
    let mut show: Vec<usize> = if n <= rows.max(1) {
        (0..n).collect()
    } else {
        (0..rows).map(|k| k * (n - 1) / (rows - 1).max(1)).collect()
    };
    if let Some(f) = b.first_divergent {
        show.extend(f.saturating_sub(1)..(f + 2).min(n));
    }
    show.sort_unstable();
    show.dedup();
    let _ = writeln!(s, "error growth (relative RMSE, log scale 1e-8 .. 1):");
    let mut prev = None;
    for i in show {
        if let Some(p) = prev
            && i > p + 1
        {
            let _ = writeln!(s, "  {:>5}", "…");
        }
        prev = Some(i);
        let st = &b.steps[i];
        let width = 32.0;
        let x = if st.rel_rmse > 0.0 {
            ((st.rel_rmse.log10() + 8.0) / 8.0).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let bar = "#".repeat((x * width).round() as usize);
        let mark = match (&st.verdict, Some(i) == b.first_divergent) {
            (_, true) => "<- first divergent",
            (Verdict::Fail { .. }, _) => "x",
            (Verdict::Error { .. }, _) => "?",
            (Verdict::Pass, _) => "",
        };
        let loc = st.probe.location.as_deref().map_or_else(String::new, |l| {
            // `jit(f)/dot_general @ m.py:3` → `dot_general @ m.py:3`
            let l =
                if l.starts_with("jit(") { l.split_once(")/").map_or(l, |(_, r)| r) } else { l };
            format!(" [{l}]")
        });
        // long value names (ONNX) add nothing to the node name in the location
        let name = if st.probe.name.len() > 12 && !loc.is_empty() { "" } else { &st.probe.name };
        let label = format!("{name} {}{loc}", st.probe.op.trim_start_matches("stablehlo."));
        let label: String = label.trim_start().chars().take(64).collect();
        let _ = writeln!(
            s,
            "  {:>5} {label:<64} {:>9.2e} |{bar:<32}| {mark}",
            format!("#{i}"),
            st.rel_rmse
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use tpuport_lower::rewrite::EmulationStats;
    use tpuport_model::{DType, HostTensor};
    use tpuport_numerics::{Policy, Precision, Probe};
    use tpuport_validate::validate::{OutputReport, ReferenceReport, SCHEMA};

    use super::*;

    fn t(shape: &[u64], v: &[f32]) -> HostTensor {
        HostTensor::from_f32(shape.to_vec(), v).unwrap()
    }

    /// A report over hand-made tensors: one passing output with logits, one failing with a
    /// NaN, one missing from the reference, and a bisection.
    fn report() -> Report {
        let policy = Policy::new(Precision::TpuDefault);
        let tol = &policy.tolerance;
        let logits_ref = t(&[2, 5], &[2.0, 1.0, 0.5, -1.0, 0.0, 0.1, 0.2, 3.0, -2.0, 1.0]);
        let logits = t(&[2, 5], &[2.01, 1.0, 0.5, -1.0, 0.0, 0.1, 0.2, 2.99, -2.0, 1.0]);
        let m0 = tpuport_numerics::compare(&logits_ref, &logits, tol).unwrap();
        let m1 = tpuport_numerics::compare(
            &t(&[4], &[1.0, 2.0, 3.0, 4.0]),
            &t(&[4], &[1.0, 2.5, f32::NAN, 4.0]),
            tol,
        )
        .unwrap();
        let probes: Vec<Probe> = ["%0", "%1", "%2"]
            .iter()
            .zip(["stablehlo.dot_general", "stablehlo.reduce", "stablehlo.divide"])
            .map(|(n, op)| Probe {
                name: (*n).to_owned(),
                op: op.to_owned(),
                location: Some(format!(
                    "jit(f)/{} @ model.py:7",
                    op.trim_start_matches("stablehlo.")
                )),
            })
            .collect();
        let r = vec![t(&[2], &[1.0, 2.0]), t(&[2], &[10.0, 20.0]), t(&[2], &[0.1, 0.1])];
        let c = vec![t(&[2], &[1.001, 2.0]), t(&[2], &[12.0, 20.0]), t(&[2], &[0.12, 0.1])];
        let bisect = tpuport_numerics::bisect(&probes, &r, &c, &policy);
        let outputs = vec![
            OutputReport {
                index: 0,
                name: "out0 (logits)".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![2, 5]),
                verdict: policy.verdict(&m0),
                metrics: Some(m0),
            },
            OutputReport {
                index: 1,
                name: "out1".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![4]),
                verdict: policy.verdict(&m1),
                metrics: Some(m1),
            },
            OutputReport {
                index: 2,
                name: "out2".to_owned(),
                dtype: Some(DType::F32),
                shape: Some(vec![3]),
                verdict: Verdict::Error {
                    reason: "output 2 (`out2`) is missing from the reference".to_owned(),
                },
                metrics: None,
            },
        ];
        Report {
            schema: SCHEMA,
            model: PathBuf::from("model.mlir"),
            platform: "cpu".to_owned(),
            reference: ReferenceReport { kind: "f32", path: None },
            emulate: Emulate::TpuDefault,
            emulation: Some(EmulationStats {
                default: 3,
                high: 0,
                highest: 1,
                raised_by_precision_config: 1,
                skipped: vec![],
            }),
            policy,
            samples: 1,
            partitions: 1,
            passed: false,
            outputs,
            bisect: Some(bisect),
        }
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render(&report(), 40));
    }

    #[test]
    fn json_report_snapshot() {
        insta::assert_json_snapshot!(report());
    }
}
