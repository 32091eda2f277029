//! `tpuport port`: framework-level codemods for torch_xla, TF `TPUStrategy` and JAX sharding.
//!
//! A port is a sequence of passes. Each pass parses the current text, lets every recipe of the
//! target propose edits (the lint rules' fixes for that target, plus port-only recipes), applies
//! the non-overlapping ones in start order and re-parses; passes repeat until nothing changes.
//! A pass whose output would not parse is dropped. What is left for a person is reported as
//! [`ManualStep`]s: the findings the linter still has on the ported text, plus notes the
//! recipes leave where a rewrite would not be safe.

mod jax;
mod jax_outputs;
mod tf_tpu;
mod torch_xla;

use tpuport_python::{ParsedModule, Span, parse_module};

use crate::codes::Rule;
use crate::fix::{Applicability, Edit};
use crate::linter::lint_parsed;
use crate::semantic::Semantic;
use crate::settings::RuleSet;

/// Port target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// PyTorch → PyTorch/XLA.
    TorchXla,
    /// TensorFlow/Keras → `TPUStrategy`.
    TfTpu,
    /// JAX `pmap` / experimental APIs → `jit` + sharding.
    Jax,
}

impl Target {
    /// The CLI name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Target::TorchXla => "torch-xla",
            Target::TfTpu => "tf-tpu",
            Target::Jax => "jax",
        }
    }

    /// Lint rules whose fixes the port applies.
    fn fix_rules(self) -> &'static [Rule] {
        match self {
            Target::TorchXla => &[
                Rule::DataloaderWithoutDropLast,
                Rule::DistributedSamplerWithoutDropLast,
                Rule::CudaMethodCall,
                Rule::CudaDeviceString,
                Rule::TorchCudaApi,
                Rule::CudnnFlag,
                Rule::NcclBackend,
                Rule::PinMemory,
                Rule::Fp16Autocast,
                Rule::GradScaler,
                Rule::DdpDeviceIds,
                Rule::XlaBackendWithoutInitMethod,
                Rule::DataloaderWithoutDeviceLoader,
                Rule::TorchSaveOnXla,
            ],
            Target::TfTpu => &[
                Rule::TfBatchWithoutDropRemainder,
                Rule::KerasMixedFloat16,
                Rule::KerasLossScaleOptimizer,
                Rule::TfDataWithoutPrefetch,
                Rule::KerasCompileWithoutStepsPerExecution,
            ],
            Target::Jax => &[Rule::ExperimentalShardMap, Rule::ShardMapCheckRep],
        }
    }
}

/// One automatic change.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// 1-based line in the ported text where the change is.
    pub line: u32,
    /// What was done.
    pub description: String,
}

/// Something the port could not rewrite safely.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ManualStep {
    /// 1-based line in the ported text.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// Rule code, or `PORT` for a recipe note.
    pub code: String,
    /// What to do.
    pub message: String,
}

/// The result of porting one text.
#[derive(Clone, Debug)]
pub struct PortResult {
    /// The ported text.
    pub output: String,
    /// Automatic changes, in order.
    pub changes: Vec<Change>,
    /// What remains for a person.
    pub manual: Vec<ManualStep>,
}

/// A proposed edit with its description, from a port recipe.
pub(crate) struct Proposal {
    pub(crate) edits: Vec<Edit>,
    pub(crate) description: String,
}

/// A note a recipe leaves for the manual list (position in the current text).
pub(crate) struct Note {
    pub(crate) at: u32,
    pub(crate) message: String,
}

/// What recipes see.
pub(crate) struct Ctx<'a> {
    pub(crate) source: &'a str,
    pub(crate) parsed: &'a ParsedModule,
    pub(crate) semantic: &'a Semantic,
}

type Recipe = fn(&Ctx<'_>, &mut Vec<Proposal>, &mut Vec<Note>);

fn recipes(target: Target) -> &'static [Recipe] {
    match target {
        Target::TorchXla => torch_xla::RECIPES,
        Target::TfTpu => tf_tpu::RECIPES,
        Target::Jax => jax::RECIPES,
    }
}

/// Most passes before the port stops.
const MAX_PASSES: usize = 30;

/// Ports `source` to `target`.
///
/// # Errors
/// When `source` is not valid Python.
pub fn port_source(source: &str, target: Target) -> Result<PortResult, tpuport_python::ParseError> {
    let mut current = source.to_owned();
    let mut parsed = parse_module(&current)?;
    // Offsets into `current`, moved forward through every later pass.
    let mut changes: Vec<(u32, String)> = Vec::new();
    let mut notes: Vec<Note> = Vec::new();
    let fix_rules = RuleSet::only(target.fix_rules());
    for _ in 0..MAX_PASSES {
        let semantic = Semantic::build(parsed.module(), &current);
        let ctx = Ctx { source: &current, parsed: &parsed, semantic: &semantic };
        let mut proposals = Vec::new();
        let mut pass_notes = Vec::new();
        for r in recipes(target) {
            r(&ctx, &mut proposals, &mut pass_notes);
        }
        for d in lint_parsed(&current, &parsed, &fix_rules).diagnostics {
            if let Some(f) = d.fix.filter(|f| f.applies(Applicability::Unsafe)) {
                let what = d.help.clone().unwrap_or_else(|| d.message.clone());
                proposals.push(Proposal {
                    edits: f.edits().to_vec(),
                    description: format!("{}: {what}", d.rule.code()),
                });
            }
        }
        for n in pass_notes {
            if !notes.iter().any(|m| m.message == n.message) {
                notes.push(n);
            }
        }
        let Some((next, applied, taken)) = apply(&current, proposals) else { break };
        if parse_module(&next).is_err() {
            break;
        }
        changes.extend(applied);
        for (at, _) in &mut changes {
            *at = shift(*at, &taken);
        }
        for n in &mut notes {
            n.at = shift(n.at, &taken);
        }
        current = next;
        parsed = parse_module(&current)?;
    }
    // What the linter still finds, plus recipe notes, is the manual list.
    let all = RuleSet::new(&[], &[], true);
    let lines = parsed.lines();
    let mut manual: Vec<ManualStep> = lint_parsed(&current, &parsed, &all)
        .diagnostics
        .into_iter()
        .map(|d| {
            let lc = lines.line_col(&current, d.span.start);
            let help = d.help.map(|h| format!(" — {h}")).unwrap_or_default();
            ManualStep {
                line: lc.line,
                column: lc.column,
                code: d.rule.code().to_owned(),
                message: format!("{}{help}", d.message),
            }
        })
        .collect();
    for note in notes {
        let lc = lines.line_col(&current, note.at.min(u32::try_from(current.len()).unwrap_or(0)));
        manual.push(ManualStep {
            line: lc.line,
            column: lc.column,
            code: "PORT".to_owned(),
            message: note.message,
        });
    }
    let mut changes: Vec<Change> = changes
        .into_iter()
        .map(|(at, description)| Change { line: lines.line_col(&current, at).line, description })
        .collect();
    changes.sort_by_key(|c| c.line);
    manual.sort_by(|a, b| (a.line, a.column, &a.code).cmp(&(b.line, b.column, &b.code)));
    manual.dedup();
    Ok(PortResult { output: current, changes, manual })
}

/// Where `offset` moves to after `edits` (sorted, non-overlapping) are applied.
fn shift(offset: u32, edits: &[Edit]) -> u32 {
    let mut delta: i64 = 0;
    for e in edits {
        if e.range.end <= offset && !(e.range.is_empty() && e.range.start == offset) {
            delta += e.content.len() as i64 - i64::from(e.range.len());
        } else if e.range.start < offset {
            // Inside a replaced range: move to its start.
            return u32::try_from(i64::from(e.range.start) + delta).unwrap_or(0);
        }
    }
    u32::try_from(i64::from(offset) + delta).unwrap_or(0)
}

type Applied = (String, Vec<(u32, String)>, Vec<Edit>);

/// Applies non-overlapping proposals in start order; returns the new text,
/// `(offset, description)` of each applied proposal and the edits taken.
fn apply(source: &str, mut proposals: Vec<Proposal>) -> Option<Applied> {
    proposals.sort_by_key(|p| p.edits.iter().map(|e| e.range.start).min().unwrap_or(0));
    let mut taken: Vec<Edit> = Vec::new();
    let mut applied = Vec::new();
    for p in proposals {
        let fresh: Vec<Edit> = p.edits.iter().filter(|e| !taken.contains(e)).cloned().collect();
        if fresh.is_empty() {
            continue;
        }
        let clash = fresh.iter().any(|e| {
            taken.iter().any(|t| {
                (t.range.start < e.range.end && e.range.start < t.range.end)
                    || (t.range.is_empty() && e.range.is_empty() && t.range.start == e.range.start)
            })
        });
        let bad = fresh.iter().any(|e| e.range.end as usize > source.len());
        if clash || bad {
            continue;
        }
        let at = p
            .edits
            .iter()
            .filter(|e| !e.content.starts_with("import ") && !e.content.starts_with("from "))
            .map(|e| e.range.start)
            .min();
        applied.push((at.unwrap_or_else(|| fresh[0].range.start), p.description));
        taken.extend(fresh);
    }
    if taken.is_empty() {
        return None;
    }
    taken.sort();
    let mut out = String::with_capacity(source.len() + 256);
    let mut last = 0usize;
    for e in &taken {
        out.push_str(&source[last..e.range.start as usize]);
        out.push_str(&e.content);
        last = e.range.end as usize;
    }
    out.push_str(&source[last..]);
    (out != source).then_some((out, applied, taken))
}

/// Full span of a call expression `func(...)`.
pub(crate) fn call_span(call: &tpuport_python::ast::Call) -> Span {
    Span::new(call.func.span.start, call.arguments_span.end)
}
