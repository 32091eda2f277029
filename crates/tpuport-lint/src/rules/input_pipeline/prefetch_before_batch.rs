//! TPU606: `tf.data` pipelines that prefetch before they batch.

use tpuport_python::Span;
use tpuport_python::ast::{Call, Expr, ExprKind};

use crate::checker::Checker;
use crate::fix::{Applicability, Edit, Fix};
use crate::rules::helpers::{method, method_span};
use crate::semantic::Framework;
use crate::violation::Violation;

tpuport_codes::documented! {
    /// ## What it does
    /// Checks for `tf.data` pipelines that call `.prefetch(...)` before `.batch(...)` /
    /// `.padded_batch(...)`: in one chain (`ds.prefetch(AUTOTUNE).batch(64)`, other dataset
    /// methods in between included) or through a variable (`ds = ds.prefetch(AUTOTUNE)`, then
    /// `ds.batch(64)` in the same scope).
    ///
    /// ## Why is this bad on TPU?
    /// `prefetch` overlaps the production of the *next element* with the consumer. Before
    /// `batch`, the elements are single examples and the consumer is the batching step on
    /// the host, not the training step: assembling each batch still happens while the TPU
    /// waits for it, and the buffer holds examples instead of ready batches. The prefetch
    /// belongs last in the pipeline, after `batch` (and any per-batch `map`).
    ///
    /// ## Example
    /// ```python
    /// ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE).batch(256, drop_remainder=True)
    /// ```
    ///
    /// ## Use instead
    /// ```python
    /// ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(256, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    /// ```
    ///
    /// ## Fix safety
    /// The fix is unsafe unless the buffer size is `AUTOTUNE`: it moves the `.prefetch(...)`
    /// call after the batch call (or only deletes it when the batch is already followed by a
    /// prefetch), so the elements are unchanged, but a fixed buffer size then counts batches
    /// instead of examples (more host memory). With `AUTOTUNE` the fix is safe. Only the
    /// one-chain form has a fix; the form through a variable has none.
    ///
    /// ## References
    /// - [TensorFlow: better performance with the tf.data API, prefetching](https://www.tensorflow.org/guide/data_performance#prefetching)
    /// - [TensorFlow API: `tf.data.Dataset.prefetch`](https://www.tensorflow.org/api_docs/python/tf/data/Dataset#prefetch)
    pub(crate) struct PrefetchBeforeBatch { method: String }
}

impl Violation for PrefetchBeforeBatch {
    fn message(&self) -> String {
        format!(
            "`.prefetch()` before `.{}()`: the pipeline prefetches single examples, not batches",
            self.method
        )
    }
    fn fix_title(&self) -> Option<String> {
        Some("Move `.prefetch(...)` after the batch call".to_owned())
    }
}

/// What a `tf.data` chain does last, looking inwards from its outermost call.
pub(crate) enum Scan<'e> {
    /// A `prefetch` call (this expression, the call) comes after the last batching step.
    Prefetch(&'e Expr, &'e Call),
    /// A batching step comes first (or nothing is known).
    Other,
    /// The chain starts at this name with no batching step or prefetch on the way.
    Root(&'e str),
}

const BATCHING: &[&str] = &[
    "batch",
    "padded_batch",
    "rebatch",
    "unbatch",
    "ragged_batch",
    "sparse_batch",
    "bucket_by_sequence_length",
    "group_by_window",
    "window",
];

/// Looks inwards from `expr` through chained method calls.
pub(crate) fn scan(expr: &Expr) -> Scan<'_> {
    let mut cur = expr;
    loop {
        match &cur.kind {
            ExprKind::Call(c) => {
                let Some((recv, m)) = method(c) else { return Scan::Other };
                if m == "prefetch" {
                    return Scan::Prefetch(cur, c);
                }
                if BATCHING.contains(&m) {
                    return Scan::Other;
                }
                cur = recv;
            }
            ExprKind::Name(n) => return Scan::Root(n),
            _ => return Scan::Other,
        }
    }
}

pub(crate) fn check(checker: &mut Checker, expr: &Expr, call: &Call) {
    if !checker.uses(Framework::TensorFlow) {
        return;
    }
    let Some((recv, m @ ("batch" | "padded_batch"))) = method(call) else { return };
    let Some(span) = method_span(call) else { return };
    match scan(recv) {
        Scan::Prefetch(pexpr, pcall) => {
            let Some((precv, _)) = method(pcall) else { return };
            let Some(pspan) = method_span(pcall) else { return };
            let moved = checker.text(pspan).to_owned();
            let auto = pcall
                .args
                .first()
                .or_else(|| pcall.keyword("buffer_size").map(|k| &k.value))
                .is_some_and(|a| checker.text(a.span).to_ascii_lowercase().ends_with("autotune"));
            let followed =
                checker.chained_calls(expr).first().is_some_and(|(m, _)| *m == "prefetch");
            // From the `.` of `.prefetch` on: a comment between the receiver and the dot (a
            // chain split over lines) stays where it is.
            let between = Span::new(precv.span.end, pspan.start).slice(checker.source);
            let dot = attribute_dot(between).map_or(precv.span.end, |i| precv.span.end + i);
            let Some(d) = checker.report(&PrefetchBeforeBatch { method: m.to_owned() }, span)
            else {
                return;
            };
            let mut edits = vec![Edit::delete(Span::new(dot, pexpr.span.end))];
            if !followed {
                edits.push(Edit::insert(expr.span.end, format!(".{moved}")));
            }
            let applicability = if auto { Applicability::Safe } else { Applicability::Unsafe };
            d.set_fix(Fix::new(edits, applicability));
        }
        Scan::Root(name) => {
            if checker.semantic.prefetched_at(name, call.func.span.start) {
                checker.report(&PrefetchBeforeBatch { method: m.to_owned() }, span);
            }
        }
        Scan::Other => {}
    }
}

/// Offset in `between` (the text from a receiver's end to its attribute name) of the attribute
/// dot: the last `.` outside a comment (nothing but spaces, comments and the dot sits there).
fn attribute_dot(between: &str) -> Option<u32> {
    let mut at = 0;
    let mut dot = None;
    for line in between.split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or("");
        if let Some(i) = code.rfind('.') {
            dot = Some(at + i);
        }
        at += line.len();
    }
    dot.and_then(|d| u32::try_from(d).ok())
}
