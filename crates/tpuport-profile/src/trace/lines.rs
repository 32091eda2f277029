//! Per-thread state of the first pass for the host's work outside the device work: the
//! thread's dispatch, and its Python calls that touch no dispatch ([`idle`](super::idle)).
//!
//! The TSL writer puts each thread's events in time order, so a Python call (`$…` events) is
//! settled in the first pass: it is open until an event of its thread starts at or after its
//! end, and touches dispatch when a dispatch event of the thread starts while it is open or it
//! starts inside one. kineto writes the Python events after everything else; those, and a
//! thread whose events are out of order, are settled in the second pass instead.

/// A Python call outside the device work: a candidate for a step's host work.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostCall {
    pub(crate) start: f64,
    pub(crate) end: f64,
    /// The function's frame (interned).
    pub(crate) frame: Option<u32>,
    /// The calling line (kineto `CallFrom`, interned), when it is user code.
    pub(crate) caller: Option<u32>,
}

/// One thread.
#[derive(Debug, Default)]
pub(crate) struct Line {
    /// Index of the thread's last dispatch span in the analyzer's list.
    pub(crate) dispatch_last: Option<usize>,
    /// End of the latest dispatch seen.
    dispatch_end: f64,
    /// Python events seen.
    pub(crate) python: u64,
    /// Some were kineto `python_function` events (settled in the second pass).
    pub(crate) kineto_python: bool,
    /// An event started before one seen earlier: settle this thread in the second pass.
    pub(crate) unsorted: bool,
    last_start: f64,
    /// TSL calls still open, innermost last, with whether they touch dispatch.
    open: Vec<(HostCall, bool)>,
    /// Settled calls that touch no dispatch, outermost only, in time order.
    pub(crate) calls: Vec<HostCall>,
    /// `calls` reached its cap.
    pub(crate) capped: bool,
}

impl Line {
    /// Notes an event's start: settles the calls that ended before it.
    fn at(&mut self, ts: f64, cap: usize) {
        if ts < self.last_start {
            self.unsorted = true;
        }
        self.last_start = self.last_start.max(ts);
        self.settle(ts, cap);
    }

    /// A dispatch event `[ts, end)`: every open call touches it.
    pub(crate) fn dispatch(&mut self, ts: f64, end: f64, cap: usize) {
        self.at(ts, cap);
        for c in &mut self.open {
            c.1 = true;
        }
        self.dispatch_end = self.dispatch_end.max(end);
    }

    /// A TSL Python call (the profiler's own calls are passed as `None`: they only settle).
    pub(crate) fn python(&mut self, ts: f64, call: Option<HostCall>, cap: usize) {
        self.python += 1;
        self.at(ts, cap);
        if let Some(c) = call {
            let touched = c.start < self.dispatch_end;
            self.open.push((c, touched));
        }
    }

    /// Settles the open calls that ended at or before `ts` (`f64::INFINITY`: all of them).
    pub(crate) fn settle(&mut self, ts: f64, cap: usize) {
        while let Some(&(c, touched)) = self.open.last() {
            if c.end > ts {
                break;
            }
            self.open.pop();
            if touched {
                continue;
            }
            // Inner calls settle first: the outer one replaces them.
            while self.calls.last().is_some_and(|l| l.start >= c.start && l.end <= c.end) {
                self.calls.pop();
            }
            if self.calls.len() < cap {
                self.calls.push(c);
            } else {
                self.capped = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(start: f64, end: f64) -> Option<HostCall> {
        Some(HostCall { start, end, frame: None, caller: None })
    }

    #[test]
    fn calls_that_touch_no_dispatch_settle_outermost() {
        let mut l = Line::default();
        l.python(0.0, call(0.0, 100.0), 10); // `main`: encloses the dispatch below
        l.python(1.0, call(1.0, 20.0), 10); // a loader
        l.python(2.0, call(2.0, 10.0), 10); // inside it
        l.dispatch(30.0, 40.0, 10);
        l.python(35.0, call(35.0, 38.0), 10); // inside the dispatch
        l.python(50.0, call(50.0, 60.0), 10);
        l.settle(f64::INFINITY, 10);
        let got: Vec<(f64, f64)> = l.calls.iter().map(|c| (c.start, c.end)).collect();
        assert_eq!(got, vec![(1.0, 20.0), (50.0, 60.0)]);
        assert!(!l.unsorted);
        l.python(5.0, None, 10);
        assert!(l.unsorted);
    }
}
