//! JAX's compile logs: `jax_log_compiles` (`JAX_LOG_COMPILES=1`) and
//! `jax_explain_cache_misses` (`JAX_EXPLAIN_CACHE_MISSES=1`).
//!
//! The prefix depends on the logging setup (absl `W0610 23:50:26.227175 pxla.py:703] `, Python
//! logging, or none), so message bodies are matched anywhere in the line. A cache-miss
//! explanation spans several lines; only its first carries the prefix.
//!
//! | source | message |
//! |---|---|
//! | `pjit.py` | `Finished tracing {fun} for jit in {t} sec` |
//! | `pxla.py` | `Compiling {module} with global shapes and types {avals}. Argument mapping: …` |
//! | `pxla.py` | `Finished XLA compilation of {fun} in {t} sec` |
//! | `compiler.py` | `PERSISTENT COMPILATION CACHE MISS for '{m}' with key …` / `Persistent compilation cache hit for …` |
//! | `partial_eval.py` | `TRACING CACHE MISS at {callsite}:` + explanation lines |

use serde::Serialize;

use crate::frames::{self, Frame};

/// One `Compiling …` line with the times that follow it.
#[derive(Debug, Clone, Serialize)]
pub struct JaxCompile {
    /// The function (`step` for `jit(step)`).
    pub function: String,
    /// The avals text (`(ShapedArray(float32[16,4]), …)`).
    pub shapes: String,
    /// `Finished XLA compilation` time, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    /// Line in the log.
    pub line: usize,
}

/// Why the tracing cache missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MissReason {
    /// The first call of a function object.
    NeverSeen {
        /// JAX saw another function defined on the same line: the function is re-created (a
        /// `jax.jit` or a lambda inside the loop).
        redefined: bool,
    },
    /// `different input types:` (shapes or dtypes).
    InputTypes,
    /// `different input pytree:`.
    InputPytree,
    /// `Tracing context doesn't match` (config, context manager).
    Context,
    /// `Debug info doesn't match.`
    DebugInfo,
    /// Anything else JAX said (`cache miss explanation unavailable`, new wording).
    Other,
}

/// One `TRACING CACHE MISS` explanation.
#[derive(Debug, Clone, Serialize)]
pub struct CacheMiss {
    /// Where the jitted function was called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callsite: Option<Frame>,
    /// The function.
    pub function: String,
    /// Where it is defined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defined_at: Option<Frame>,
    /// Why.
    pub reason: MissReason,
    /// The `* at x, now f32[12,16] and before f32[8,16]` lines.
    pub details: Vec<String>,
    /// Line in the log.
    pub line: usize,
}

/// A parsed JAX log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct JaxLog {
    /// Every compilation.
    pub compiles: Vec<JaxCompile>,
    /// Every tracing-cache miss.
    pub misses: Vec<CacheMiss>,
    /// Persistent compilation cache (hits, misses).
    pub persistent_cache: (u64, u64),
    /// Total of `Finished tracing` times, seconds.
    pub tracing_s: f64,
    /// Total of `Finished jaxpr to MLIR module conversion` times, seconds.
    pub lowering_s: f64,
    /// Total of `Finished XLA compilation` times, seconds.
    pub compile_s: f64,
}

/// `jit(step)` → `step`; older JAX logs the bare name.
fn function_name(module: &str) -> String {
    let m = module.trim();
    m.strip_prefix("jit(")
        .or_else(|| m.strip_prefix("pjit("))
        .or_else(|| m.strip_prefix("pmap("))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(m)
        .to_owned()
}

fn seconds(s: &str) -> Option<f64> {
    s.trim().strip_suffix("sec").unwrap_or(s).trim().parse().ok()
}

/// Line-by-line parser state.
#[derive(Debug, Default)]
pub(crate) struct JaxLogParser {
    log: JaxLog,
    open: Option<CacheMiss>,
    seen: bool,
}

impl JaxLogParser {
    pub(crate) fn line(&mut self, line: &str, no: usize) {
        if let Some(m) = self.open.as_mut() {
            if line.starts_with("  ") {
                explain_line(m, line.trim());
                return;
            }
            if let Some(m) = self.open.take() {
                self.log.misses.push(m);
            }
        }
        if let Some(i) = line.find("TRACING CACHE MISS at ") {
            self.seen = true;
            let rest = line[i + "TRACING CACHE MISS at ".len()..].trim_end();
            // `…:27:12 (main):`, or `… (main) because:` before JAX 0.6.
            let site = rest.strip_suffix(':').unwrap_or(rest);
            let site = site.strip_suffix(" because").unwrap_or(site);
            self.open = Some(CacheMiss {
                callsite: frames::parse_callsite(site),
                function: String::new(),
                defined_at: None,
                reason: MissReason::Other,
                details: Vec::new(),
                line: no,
            });
            return;
        }
        if let Some(i) = line.find("Compiling ")
            && let Some(j) = line[i..].find(" with global shapes and types ")
        {
            self.seen = true;
            let module = &line[i + "Compiling ".len()..i + j];
            let rest = &line[i + j + " with global shapes and types ".len()..];
            let shapes =
                rest.split(". Argument mapping").next().unwrap_or(rest).trim_end_matches('.');
            self.log.compiles.push(JaxCompile {
                function: function_name(module),
                shapes: shapes.to_owned(),
                compile_s: None,
                line: no,
            });
            return;
        }
        if let Some(i) = line.find("Finished XLA compilation of ")
            && let Some((fun, t)) =
                line[i + "Finished XLA compilation of ".len()..].rsplit_once(" in ")
        {
            self.seen = true;
            let t = seconds(t);
            self.log.compile_s += t.unwrap_or(0.0);
            let fun = function_name(fun);
            if let Some(c) = self
                .log
                .compiles
                .iter_mut()
                .rev()
                .find(|c| c.function == fun && c.compile_s.is_none())
            {
                c.compile_s = t;
            }
            return;
        }
        if let Some(i) = line.find("Finished tracing ")
            && let Some((_, t)) = line[i..].rsplit_once(" for jit in ")
        {
            self.seen = true;
            self.log.tracing_s += seconds(t).unwrap_or(0.0);
            return;
        }
        if let Some(i) = line.find("Finished jaxpr to MLIR module conversion ")
            && let Some((_, t)) = line[i..].rsplit_once(" in ")
        {
            self.seen = true;
            self.log.lowering_s += seconds(t).unwrap_or(0.0);
            return;
        }
        if line.contains("Persistent compilation cache hit for ") {
            self.seen = true;
            self.log.persistent_cache.0 += 1;
        } else if line.contains("PERSISTENT COMPILATION CACHE MISS for ") {
            self.seen = true;
            self.log.persistent_cache.1 += 1;
        }
    }

    pub(crate) fn finish(mut self) -> Option<JaxLog> {
        if let Some(m) = self.open.take() {
            self.log.misses.push(m);
        }
        self.seen.then_some(self.log)
    }
}

/// One line of a cache-miss explanation.
fn explain_line(m: &mut CacheMiss, t: &str) {
    if t == "never seen function:" {
        m.reason = MissReason::NeverSeen { redefined: false };
    } else if t.starts_with("but seen another function defined on the same line") {
        m.reason = MissReason::NeverSeen { redefined: true };
    } else if let Some(rest) = t.strip_prefix("for ")
        && let Some((name, at)) = rest.split_once(" defined at ")
    {
        m.function = name.trim().to_owned();
        m.defined_at = frames::parse_callsite(at);
    } else if let Some((head, at)) = t.split_once(" defined at ")
        && m.function.is_empty()
    {
        // `step id=140493088442144 defined at /path/file.py:13`
        m.function = head.split(" id=").next().unwrap_or(head).trim().to_owned();
        m.defined_at = frames::parse_callsite(at);
    } else if t.starts_with("* at ") {
        if m.details.len() < 16 {
            m.details.push(t[2..].to_owned());
        }
    } else if t.contains("different input types") {
        // `different input types:`, or `* key with different input types:` when several
        // previous keys are closest.
        m.reason = MissReason::InputTypes;
    } else if t.contains("different input pytree") {
        m.reason = MissReason::InputPytree;
    } else if t.starts_with("Tracing context doesn't match")
        || t.contains("different tracing context")
    {
        if m.reason == MissReason::Other {
            m.reason = MissReason::Context;
        }
    } else if t.starts_with("Debug info doesn't match") && m.reason == MissReason::Other {
        m.reason = MissReason::DebugInfo;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn absl_prefix_and_redefinition() {
        let mut p = JaxLogParser::default();
        let text = "W0610 23:50:26.227175 1234 pxla.py:703] Compiling jit(f) with global shapes and types (ShapedArray(float32[3]),). Argument mapping: (UnspecifiedValue,).\n\
W0610 23:50:26.3 1234 pxla.py:1532] Finished XLA compilation of jit(f) in 0.25 sec\n\
W0610 23:50:27.1 1234 partial_eval.py:1933] TRACING CACHE MISS at /p/t.py:9 (loop):\n  never seen function:\n    f id=1 defined at /p/t.py:8\n  but seen another function defined on the same line; maybe the function is\n  being re-defined repeatedly, preventing caching?\nother\n";
        for (i, l) in text.lines().enumerate() {
            p.line(l, i + 1);
        }
        let log = p.finish().unwrap();
        assert_eq!(log.compiles.len(), 1);
        assert_eq!(log.compiles[0].function, "f");
        assert_eq!(log.compiles[0].compile_s, Some(0.25));
        let m = &log.misses[0];
        assert_eq!(m.reason, MissReason::NeverSeen { redefined: true });
        assert_eq!(m.function, "f");
        assert_eq!(m.callsite.as_ref().unwrap().line, 9);
        assert_eq!(m.defined_at.as_ref().unwrap().line, 8);
    }

    #[test]
    fn older_because_and_several_closest_keys() {
        let mut p = JaxLogParser::default();
        let text = "WARNING:2025-04-13 17:56:45,098:jax._src.pjit:1365: TRACING CACHE MISS at /t/a.py:46:8 (run) because:\n  for f defined at /t/a.py:40\n  all previously seen cache keys are different. Several previous keys are closest:\n  * key with different input types:\n      types now: x: f32[8]\n        * at x, now f32[8] and before f32[4]\n  * key with different tracing context, e.g. due to config or context manager.\n";
        for (i, l) in text.lines().enumerate() {
            p.line(l, i + 1);
        }
        let m = &p.finish().unwrap().misses[0];
        assert_eq!(
            m.callsite.as_ref().map(|f| (f.line, f.function.as_deref())),
            Some((46, Some("run")))
        );
        assert_eq!(m.reason, MissReason::InputTypes);
        assert_eq!(m.details, ["at x, now f32[8] and before f32[4]"]);
    }
}
