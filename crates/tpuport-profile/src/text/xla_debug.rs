//! torch_xla's `PT_XLA_DEBUG_LEVEL` output (`torch_xla/csrc/debug_util.cpp`): compilation and
//! execution analysis blocks, post-compilation memory, the `pt-xla-profiler:` auto-analysis
//! lines (`runtime/metrics_analysis.cpp`) and the unlowered-op summary printed at exit.
//!
//! ```text
//! Compilation Analysis: ================================================================================
//! Compilation Analysis: Compilation Cause
//! Compilation Analysis:   most likely user code trying to access tensor value before torch_xla.sync
//! Compilation Analysis: Graph Info:
//! Compilation Analysis:   Graph Hash: c74c3b91b855b2b123f833b0d5f86943
//! Compilation Analysis:   Number of Graph Inputs: 35
//! Compilation Analysis:   Number of Graph Outputs: 107
//! Compilation Analysis: Python Frame Triggered Execution:
//! Compilation Analysis:   train_loop_fn (/path/train.py:48)
//! Compilation Analysis: --------------------------------------------------------------------------------
//! ```
//!
//! Cause strings changed on 2025-05-15 (`mark_step` became `torch_xla.sync`); the docs quote
//! them in backticks with `()`. All spellings normalise to one [`Cause`].

use serde::Serialize;

use crate::frames::{self, Frame};

/// Why a graph was compiled or executed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// `most likely user code trying to access tensor value before torch_xla.sync`.
    TensorValueAccess,
    /// `user torch_xla.sync` (`user mark_step`).
    UserSync,
    /// `torch_xla.sync in parallel loader at step end`.
    ParallelLoaderStepEnd,
    /// `torch_xla.sync when exiting a profiler StepTrace region`.
    StepTraceExit,
    /// `torch_xla.sync when dynamo processing input graphs`.
    DynamoInputs,
    /// `dynamo is compiling a FX graph to HLO`.
    DynamoCompiling,
    /// `dynamo is executing a compiled program`.
    DynamoExecuting,
    /// `torch_xla.compile` (and its `clear the pending graph` variant).
    TorchXlaCompile,
    /// Anything else, as written.
    Other(String),
}

impl Cause {
    /// Reads a cause line in any documented spelling.
    #[must_use]
    pub fn parse(s: &str) -> Cause {
        let norm =
            s.trim().replace('`', "").replace("()", "").replace("mark_step", "torch_xla.sync");
        let n = norm.as_str();
        if n.starts_with("most likely user code trying to access tensor value") {
            Cause::TensorValueAccess
        } else if n == "user torch_xla.sync" {
            Cause::UserSync
        } else if n.starts_with("torch_xla.sync in parallel loader") {
            Cause::ParallelLoaderStepEnd
        } else if n.starts_with("torch_xla.sync when exiting a profiler StepTrace") {
            Cause::StepTraceExit
        } else if n.starts_with("torch_xla.sync when dynamo processing input") {
            Cause::DynamoInputs
        } else if n.starts_with("dynamo is compiling") {
            Cause::DynamoCompiling
        } else if n.starts_with("dynamo is executing") {
            Cause::DynamoExecuting
        } else if n.starts_with("torch_xla.compile") {
            Cause::TorchXlaCompile
        } else {
            Cause::Other(norm.trim().to_owned())
        }
    }

    /// The current spelling.
    #[must_use]
    pub fn text(&self) -> &str {
        match self {
            Cause::TensorValueAccess => {
                "most likely user code trying to access tensor value before torch_xla.sync"
            }
            Cause::UserSync => "user torch_xla.sync",
            Cause::ParallelLoaderStepEnd => "torch_xla.sync in parallel loader at step end",
            Cause::StepTraceExit => "torch_xla.sync when exiting a profiler StepTrace region",
            Cause::DynamoInputs => "torch_xla.sync when dynamo processing input graphs",
            Cause::DynamoCompiling => "dynamo is compiling a FX graph to HLO",
            Cause::DynamoExecuting => "dynamo is executing a compiled program",
            Cause::TorchXlaCompile => "torch_xla.compile",
            Cause::Other(s) => s,
        }
    }
}

/// Which analysis a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnalysisKind {
    /// `Compilation Analysis:`.
    Compilation,
    /// `Execution Analysis:`.
    Execution,
    /// `Unexpected Execution Analysis:` (inside a compiled function).
    Unexpected,
}

/// One analysis block.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Compilation or execution.
    pub kind: AnalysisKind,
    /// Why.
    pub cause: Cause,
    /// `Graph Name`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_name: Option<String>,
    /// `Graph Hash`.
    pub graph_hash: String,
    /// `Number of Graph Inputs`.
    pub inputs: Option<u64>,
    /// `Number of Graph Outputs`.
    pub outputs: Option<u64>,
    /// Python frames, innermost first.
    pub frames: Vec<Frame>,
    /// Line of the block's first line in the file.
    pub line: usize,
}

impl Analysis {
    /// The innermost frame in the user's code.
    #[must_use]
    pub fn user_frame(&self) -> Option<&Frame> {
        self.frames.iter().find(|f| f.is_user())
    }
}

/// One `FRAME (count=N):` entry of the unlowered-op summary.
#[derive(Debug, Clone, Serialize)]
pub struct UnloweredSite {
    /// How many fallback calls came from here.
    pub count: u64,
    /// The frames (innermost first); empty for the `Unlowered Op: "…"` entries.
    pub frames: Vec<Frame>,
}

/// What torch_xla's own auto-analysis said (the last line of each kind).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfilerWarnings {
    /// `CompileTime too frequent: N counts during M steps`: (N, M).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile_too_frequent: Option<(u64, u64)>,
    /// `TransferFromDeviceTime too frequent: N counts during M steps`: (N, M).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_too_frequent: Option<(u64, u64)>,
    /// `CompileTime too slow: longest instance took …`: the duration text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile_too_slow: Option<String>,
    /// `ExecuteTime too slow: …`: the duration text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute_too_slow: Option<String>,
    /// `Op(s) not lowered: aten::a, aten::b, …`.
    pub not_lowered: Vec<String>,
}

/// A parsed `PT_XLA_DEBUG` log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct XlaDebugLog {
    /// Analysis blocks in file order.
    pub analyses: Vec<Analysis>,
    /// `Computation hash` of each compilation followed by a post-compilation block.
    pub compiled_hashes: Vec<String>,
    /// The auto-analysis lines.
    pub warnings: ProfilerWarnings,
    /// The unlowered-op summary.
    pub unlowered: Vec<UnloweredSite>,
}

const PREFIXES: [(&str, Option<AnalysisKind>); 4] = [
    ("Post Compilation Analysis: ", None),
    ("Unexpected Execution Analysis: ", Some(AnalysisKind::Unexpected)),
    ("Compilation Analysis: ", Some(AnalysisKind::Compilation)),
    ("Execution Analysis: ", Some(AnalysisKind::Execution)),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Section {
    Head,
    Cause,
    Graph,
    Frames,
}

#[derive(Debug)]
struct Open {
    a: Analysis,
    section: Section,
}

/// Line-by-line parser state.
#[derive(Debug, Default)]
pub(crate) struct XlaDebugParser {
    log: XlaDebugLog,
    open: Option<Open>,
    in_summary: bool,
    seen: bool,
}

impl XlaDebugParser {
    pub(crate) fn line(&mut self, line: &str, no: usize) {
        if let Some(i) = line.find("pt-xla-profiler: ") {
            self.profiler_line(&line[i + "pt-xla-profiler: ".len()..]);
            self.seen = true;
            return;
        }
        if line.starts_with("Unlowered Op usage summary") {
            self.in_summary = true;
            self.seen = true;
            return;
        }
        if self.in_summary {
            self.summary_line(line);
            return;
        }
        if let Some(h) = line.strip_prefix("Computation hash: ") {
            self.log.compiled_hashes.push(h.trim().to_owned());
            return;
        }
        for (prefix, kind) in PREFIXES {
            if let Some(i) = line.find(prefix) {
                self.seen = true;
                if let Some(kind) = kind {
                    self.block_line(kind, line[i + prefix.len()..].trim_end(), no);
                }
                return;
            }
        }
    }

    fn block_line(&mut self, kind: AnalysisKind, body: &str, no: usize) {
        if body.starts_with("====") {
            if self.open.as_ref().is_some_and(|o| o.a.kind != kind) {
                self.close();
            }
            return;
        }
        if body.starts_with("----") {
            self.close();
            return;
        }
        let open = self.open.get_or_insert_with(|| Open {
            a: Analysis {
                kind,
                cause: Cause::Other(String::new()),
                graph_name: None,
                graph_hash: String::new(),
                inputs: None,
                outputs: None,
                frames: Vec::new(),
                line: no,
            },
            section: Section::Head,
        });
        let trimmed = body.trim();
        if trimmed.ends_with(" Cause") && !body.starts_with(' ') {
            open.section = Section::Cause;
        } else if trimmed == "Graph Info:" {
            open.section = Section::Graph;
        } else if trimmed == "Python Frame Triggered Execution:" {
            open.section = Section::Frames;
        } else {
            match open.section {
                Section::Cause => open.a.cause = Cause::parse(trimmed),
                Section::Graph => {
                    if let Some((k, v)) = trimmed.split_once(": ") {
                        match k {
                            "Graph Name" => open.a.graph_name = Some(v.to_owned()),
                            "Graph Hash" => open.a.graph_hash = v.to_owned(),
                            // Singular before late 2023 (pytorch/xla#5947's first version).
                            "Number of Graph Inputs" | "Number of Graph Input" => {
                                open.a.inputs = v.parse().ok()
                            }
                            "Number of Graph Outputs" | "Number of Graph Output" => {
                                open.a.outputs = v.parse().ok()
                            }
                            _ => {}
                        }
                    }
                }
                Section::Frames => {
                    if let Some(f) = frames::parse_paren_frame(trimmed) {
                        open.a.frames.push(f);
                    }
                }
                Section::Head => {}
            }
        }
    }

    fn close(&mut self) {
        if let Some(o) = self.open.take()
            && !o.a.graph_hash.is_empty()
        {
            self.log.analyses.push(o.a);
        }
    }

    fn profiler_line(&mut self, body: &str) {
        let w = &mut self.log.warnings;
        let counts = |rest: &str| -> Option<(u64, u64)> {
            let (n, m) = rest.split_once(" counts during ")?;
            Some((n.trim().parse().ok()?, m.trim().trim_end_matches(" steps").parse().ok()?))
        };
        if let Some(rest) = body.strip_prefix("CompileTime too frequent: ") {
            w.compile_too_frequent = counts(rest).or(w.compile_too_frequent);
        } else if let Some(rest) = body.strip_prefix("TransferFromDeviceTime too frequent: ") {
            w.transfer_too_frequent = counts(rest).or(w.transfer_too_frequent);
        } else if let Some(rest) = body.strip_prefix("CompileTime too slow: longest instance took ")
        {
            w.compile_too_slow =
                Some(rest.split(". ").next().unwrap_or(rest).trim_end_matches('.').to_owned());
        } else if let Some(rest) = body.strip_prefix("ExecuteTime too slow: longest instance took ")
        {
            w.execute_too_slow =
                Some(rest.split(". ").next().unwrap_or(rest).trim_end_matches('.').to_owned());
        } else if let Some(rest) = body.strip_prefix("Op(s) not lowered: ") {
            let list = rest.split("Please open").next().unwrap_or(rest);
            for op in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if !w.not_lowered.iter().any(|o| o == op) {
                    w.not_lowered.push(op.to_owned());
                }
            }
        }
    }

    fn summary_line(&mut self, line: &str) {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("FRAME (count=") {
            let count = rest.trim_end_matches("):").parse().unwrap_or(0);
            self.log.unlowered.push(UnloweredSite { count, frames: Vec::new() });
        } else if t.starts_with("====") && !self.log.unlowered.is_empty() {
            self.in_summary = false;
        } else if let Some(f) = frames::parse_paren_frame(t)
            && let Some(site) = self.log.unlowered.last_mut()
        {
            site.frames.push(f);
        }
    }

    pub(crate) fn finish(mut self) -> Option<XlaDebugLog> {
        self.close();
        self.seen.then_some(self.log)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn causes_in_every_spelling() {
        for s in [
            "most likely user code trying to access tensor value before torch_xla.sync",
            "most likely user code trying to access tensor value before mark_step",
            "most likely user code trying to access tensor value before `torch_xla.sync()`",
        ] {
            assert_eq!(Cause::parse(s), Cause::TensorValueAccess, "{s}");
        }
        assert_eq!(Cause::parse("user mark_step"), Cause::UserSync);
        assert_eq!(
            Cause::parse("mark_step in parallel loader at step end"),
            Cause::ParallelLoaderStepEnd
        );
        assert_eq!(
            Cause::parse("`torch_xla.sync()` in parallel loader at step end"),
            Cause::ParallelLoaderStepEnd
        );
        assert_eq!(
            Cause::parse("mark_step when exiting a profiler StepTrace region"),
            Cause::StepTraceExit
        );
        assert_eq!(
            Cause::parse(
                "torch_xla.compile clear the pending graph prior calling the target function"
            ),
            Cause::TorchXlaCompile
        );
        assert_eq!(Cause::parse("something new"), Cause::Other("something new".to_owned()));
    }

    #[test]
    fn profiler_lines() {
        let mut p = XlaDebugParser::default();
        p.line("pt-xla-profiler: CompileTime too frequent: 8 counts during 11 steps", 1);
        p.line("pt-xla-profiler: Op(s) not lowered: aten::bincount, aten::_unique2,  Please open a GitHub issue with the above op lowering requests.", 2);
        p.line("pt-xla-profiler: CompileTime too slow: longest instance took 05m01s. Please open a GitHub issue with the graph dump for our team to optimize.", 3);
        let w = p.finish().unwrap().warnings;
        assert_eq!(w.compile_too_frequent, Some((8, 11)));
        assert_eq!(w.not_lowered, ["aten::bincount", "aten::_unique2"]);
        assert_eq!(w.compile_too_slow.as_deref(), Some("05m01s"));
    }
}
