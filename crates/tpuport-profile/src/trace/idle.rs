//! Where the device idles inside each step, and what the host does meanwhile.
//!
//! The trace gives two timelines. The device's: XLA ops (`hlo_op` events, the `XLA Ops` and
//! `XLA Modules` lines of a `/device:TPU:N` or `/device:GPU:N` process), XLA:CPU program
//! executions (`ThunkExecutor::Execute…`), GPU kernels and copies; in a CPU-only PyTorch trace
//! the aten ops (`cpu_op`), the CPU being the device. The host's: the thread with the step
//! markers, its dispatch (calls that launch, execute or wait for device work, aten ops), and
//! its Python calls.
//!
//! Each instant of a step is given to the first of, as xprof's step breakdown gives it to the
//! event type of highest priority (device compute outranks waiting for input, which outranks
//! host work and unknown time): device busy; named data loading (DataLoader, tf.data,
//! infeed, host-to-device copies: `Step::input_us`); host work outside the step's device work
//! (`Step::host_us`); the rest (dispatch overhead, nothing traced) is not attributed.
//!
//! Host work is the time outside the step's dispatch envelope (from the first dispatch on the
//! step thread that starts inside the step to the end of the last) that, when the step thread
//! has Python frames, lies inside a Python call touching no dispatch (a loader, whatever its
//! name, a `queue.get`, a `time.sleep`), and otherwise is any such time. Python between two
//! dispatches of one step (an eager model's glue) is dispatch overhead, not host work.

use super::Step;
use super::intervals::{overlap, subtract, union};

/// The timelines of one trace.
pub(crate) struct Timelines<'a> {
    /// Device busy, sorted and disjoint; empty when the trace has no device timeline.
    pub(crate) device: &'a [(f64, f64)],
    /// Named data loading, sorted and disjoint.
    pub(crate) named: &'a [(f64, f64)],
    /// The step thread's dispatch, sorted and disjoint.
    pub(crate) dispatch: &'a [(f64, f64)],
    /// The step thread's Python calls that touch no dispatch, sorted and disjoint; `None`
    /// when that thread has no Python frames.
    pub(crate) evidence: Option<&'a [(f64, f64)]>,
    /// The steps are host step markers on the step thread (else host work is not attributed:
    /// device `Steps` lines say nothing of what the host did).
    pub(crate) host_steps: bool,
}

/// Fills each step's `device_us`, `input_us` and `host_us`; returns the host-work intervals.
pub(crate) fn account(steps: &mut [Step], t: &Timelines<'_>) -> Vec<(f64, f64)> {
    let mut host = Vec::new();
    if t.device.is_empty() {
        for s in steps {
            s.input_us = overlap(t.named, s.start_us, s.start_us + s.dur_us);
        }
        return host;
    }
    let claimed = union(t.device.iter().chain(t.named).copied().collect());
    let mut pieces = Vec::new();
    for s in steps {
        let (lo, hi) = (s.start_us, s.start_us + s.dur_us);
        s.device_us = Some(overlap(t.device, lo, hi));
        s.input_us = clipped(t.named, lo, hi).map(|(a, b)| b - a - overlap(t.device, a, b)).sum();
        if !t.host_steps {
            continue;
        }
        let first = t.dispatch.partition_point(|x| x.0 < lo);
        let inside = &t.dispatch[first..];
        let inside = &inside[..inside.partition_point(|x| x.0 < hi)];
        let envelope: Vec<(f64, f64)> = match (inside.first(), inside.last()) {
            (Some(f), Some(l)) => vec![(f.0, l.1)],
            _ => Vec::new(),
        };
        pieces.clear();
        match t.evidence {
            Some(ev) => {
                for (a, b) in clipped(ev, lo, hi) {
                    subtract(a, b, &envelope, &mut pieces);
                }
            }
            None => subtract(lo, hi, &envelope, &mut pieces),
        }
        let before = host.len();
        for &(a, b) in &pieces {
            subtract(a, b, &claimed, &mut host);
        }
        s.host_us = host[before..].iter().map(|(a, b)| b - a).sum();
    }
    host
}

/// Sorted disjoint intervals clipped to `[lo, hi)`.
fn clipped(iv: &[(f64, f64)], lo: f64, hi: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
    let start = iv.partition_point(|x| x.1 <= lo);
    iv[start..].iter().take_while(move |x| x.0 < hi).map(move |&(a, b)| (a.max(lo), b.min(hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(start: f64, dur: f64) -> Step {
        Step {
            num: None,
            start_us: start,
            dur_us: dur,
            input_us: 0.0,
            host_us: 0.0,
            device_us: None,
        }
    }

    #[test]
    fn each_instant_goes_to_one_cause() {
        // Two 100 µs steps. Step 0: dispatch 0-10, device 10-40, a loader call 50-90 of which
        // 60-70 is a named input span. Step 1: dispatch 100-110 and 150-160 (the envelope is
        // 100-160: the call at 120-140 inside it is glue), device 110-190.
        let mut steps = vec![step(0.0, 100.0), step(100.0, 100.0)];
        let t = Timelines {
            device: &[(10.0, 40.0), (110.0, 190.0)],
            named: &[(60.0, 70.0)],
            dispatch: &[(0.0, 10.0), (100.0, 110.0), (150.0, 160.0)],
            evidence: Some(&[(50.0, 90.0), (120.0, 140.0)]),
            host_steps: true,
        };
        let host = account(&mut steps, &t);
        assert_eq!(steps[0].device_us, Some(30.0));
        assert_eq!((steps[0].input_us, steps[0].host_us), (10.0, 30.0));
        assert_eq!((steps[1].input_us, steps[1].host_us), (0.0, 0.0));
        assert_eq!(host, vec![(50.0, 60.0), (70.0, 90.0)]);
        // Without Python frames everything outside the envelope and the device counts.
        let mut steps = vec![step(0.0, 100.0)];
        let bare = Timelines { evidence: None, ..t };
        account(&mut steps, &bare);
        assert_eq!(steps[0].host_us, 100.0 - 10.0 - 30.0 - 10.0);
        // No device timeline: named input as is, no host attribution.
        let mut steps = vec![step(0.0, 100.0)];
        account(&mut steps, &Timelines { device: &[], ..bare });
        assert_eq!((steps[0].input_us, steps[0].host_us, steps[0].device_us), (10.0, 0.0, None));
    }
}
