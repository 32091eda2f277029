//! `tpuport port`: framework-level codemods for torch_xla, TF `TPUStrategy` and JAX sharding.
//!
//! A port is a sequence of passes. Each pass parses the current text, lets every recipe of the
//! target propose edits (the lint rules' fixes for that target, plus port-only recipes), applies
//! the non-overlapping ones in start order and re-parses; passes repeat until nothing changes.
//! A pass whose output would not parse is dropped. What is left for a person is reported as
//! [`ManualStep`]s: the findings the linter still has on the ported text, plus notes the
//! recipes leave where a rewrite would not be safe.

mod imports;
mod jax;
mod jax_outputs;
mod tf_tpu;
mod torch_xla;

use std::collections::HashSet;

use tpuport_python::{ParsedModule, Span, parse_module};

use crate::codes::{Rule, RuleStatus};
use crate::fix::{Applicability, Edit};
use crate::linter::{lint_parsed, lint_with_semantic};
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

    /// Lint rules whose fixes the port applies (preview rules only with `preview`).
    fn fix_rules(self, preview: bool) -> Vec<Rule> {
        self.all_fix_rules()
            .iter()
            .copied()
            .filter(|r| preview || r.status() == RuleStatus::Stable)
            .collect()
    }

    fn all_fix_rules(self) -> &'static [Rule] {
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
                Rule::MakeCsvDatasetPartialBatch,
                Rule::PrefetchBeforeBatch,
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
    /// Rewrite passes run (each parses, lints and applies the non-overlapping proposals).
    pub passes: usize,
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
    /// Top-level lines of `source` (trailing whitespace trimmed), to test for an import once.
    lines: HashSet<&'a str>,
    /// Where a new import goes.
    import_offset: u32,
}

impl<'a> Ctx<'a> {
    fn new(source: &'a str, parsed: &'a ParsedModule, semantic: &'a Semantic) -> Ctx<'a> {
        Ctx {
            source,
            parsed,
            semantic,
            lines: source.lines().map(str::trim_end).collect(),
            import_offset: crate::fix::edits::import_insertion_offset(source, parsed.module()),
        }
    }

    /// An edit adding the top-level import `line` when the file does not have it.
    pub(crate) fn add_import(&self, line: &str) -> Option<Edit> {
        if self.lines.contains(line) {
            return None;
        }
        let off = self.import_offset;
        let prefix =
            if off > 0 && !self.source[..off as usize].ends_with('\n') { "\n" } else { "" };
        Some(Edit::insert(off, format!("{prefix}{line}\n")))
    }
}

/// Port options.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortOptions {
    /// Also apply the fixes of preview rules.
    pub preview: bool,
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

/// Ports `source` to `target` with stable rules' fixes only.
///
/// # Errors
/// When `source` is not valid Python.
pub fn port_source(source: &str, target: Target) -> Result<PortResult, tpuport_python::ParseError> {
    port_source_with(source, target, PortOptions::default())
}

/// Ports `source` to `target`.
///
/// # Errors
/// When `source` is not valid Python.
pub fn port_source_with(
    source: &str,
    target: Target,
    options: PortOptions,
) -> Result<PortResult, tpuport_python::ParseError> {
    let mut current = source.to_owned();
    let mut parsed = parse_module(&current)?;
    // Offsets into `current`, moved forward through every later pass.
    let mut changes: Vec<(u32, String)> = Vec::new();
    let mut notes: Vec<Note> = Vec::new();
    let mut seen_notes: HashSet<String> = HashSet::new();
    let fix_rules = RuleSet::only(&target.fix_rules(options.preview));
    let mut passes = 0;
    // The semantic model of `current` when the last pass changed nothing: the final lint
    // reuses it.
    let mut settled: Option<Semantic> = None;
    for _ in 0..MAX_PASSES {
        passes += 1;
        let semantic = Semantic::build(parsed.module(), &current);
        let ctx = Ctx::new(&current, &parsed, &semantic);
        let mut proposals = Vec::new();
        let mut pass_notes = Vec::new();
        for r in recipes(target) {
            r(&ctx, &mut proposals, &mut pass_notes);
        }
        for d in lint_with_semantic(&current, &parsed, &semantic, &fix_rules).diagnostics {
            if let Some(f) = d.fix.filter(|f| f.applies(Applicability::Unsafe)) {
                let what = d.help.clone().unwrap_or_else(|| d.message.clone());
                proposals.push(Proposal {
                    edits: f.edits().to_vec(),
                    description: format!("{}: {what}", d.rule.code()),
                });
            }
        }
        for n in pass_notes {
            if seen_notes.insert(n.message.clone()) {
                notes.push(n);
            }
        }
        let Some((next, applied, taken)) = apply(&current, proposals) else {
            settled = Some(semantic);
            break;
        };
        let Ok(next_parsed) = parse_module(&next) else {
            settled = Some(semantic);
            break;
        };
        changes.extend(applied);
        let mut offsets: Vec<&mut u32> = changes
            .iter_mut()
            .map(|(at, _)| at)
            .chain(notes.iter_mut().map(|n| &mut n.at))
            .collect();
        shift_all(&mut offsets, &taken);
        current = next;
        parsed = next_parsed;
    }
    // Every name the rewrites use is imported (a recipe whose import edit lost a clash, or
    // that relies on another recipe's import, must not leave a NameError behind).
    if let Some((next, added)) = imports::ensure_imports(&current, &parsed, target)
        && let Ok(p) = parse_module(&next)
    {
        let at = imports::insertion_point(&current, &parsed);
        let delta = u32::try_from(next.len() - current.len()).unwrap_or(0);
        for (off, _) in &mut changes {
            if *off >= at {
                *off += delta;
            }
        }
        for n in &mut notes {
            if n.at >= at {
                n.at += delta;
            }
        }
        for line in added {
            changes.push((at, format!("`{line}` added (a rewrite uses it)")));
        }
        current = next;
        parsed = p;
        settled = None;
    }
    // What the linter still finds, plus recipe notes, is the manual list.
    let all = RuleSet::new(&[], &[], true);
    let lines = parsed.lines();
    let remaining = match &settled {
        Some(semantic) => lint_with_semantic(&current, &parsed, semantic, &all),
        None => lint_parsed(&current, &parsed, &all),
    };
    let mut manual: Vec<ManualStep> = remaining
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
    Ok(PortResult { output: current, changes, manual, passes })
}

/// Moves every offset to where it lands after `edits` (sorted, non-overlapping) are
/// applied: one sweep over both sorted sequences.
fn shift_all(offsets: &mut [&mut u32], edits: &[Edit]) {
    let mut order: Vec<usize> = (0..offsets.len()).collect();
    order.sort_by_key(|&i| *offsets[i]);
    let mut delta: i64 = 0;
    let mut e = 0;
    for i in order {
        let offset = *offsets[i];
        // Edits wholly before `offset` (an insertion exactly at `offset` stays after it).
        while e < edits.len()
            && edits[e].range.end <= offset
            && !(edits[e].range.is_empty() && edits[e].range.start == offset)
        {
            delta += edits[e].content.len() as i64 - i64::from(edits[e].range.len());
            e += 1;
        }
        let inside = edits[e..]
            .iter()
            .take_while(|x| x.range.start < offset)
            .find(|x| x.range.start < offset && offset < x.range.end);
        let moved = match inside {
            Some(x) => i64::from(x.range.start) + delta,
            None => i64::from(offset) + delta,
        };
        *offsets[i] = u32::try_from(moved).unwrap_or(0);
    }
}

type Applied = (String, Vec<(u32, String)>, Vec<Edit>);

/// Whether `e` inserts whole `import` / `from` lines (what [`Ctx::add_import`] proposes, at the
/// file's one import insertion point).
fn is_import_insertion(e: &Edit) -> bool {
    let lines = e.content.trim_start_matches('\n');
    e.range.is_empty()
        && lines.ends_with('\n')
        && lines.lines().all(|l| l.starts_with("import ") || l.starts_with("from "))
}

/// Whether the import insertion `merged` already adds every line of `e`.
fn imports_contain(merged: &Edit, e: &Edit) -> bool {
    e.content.lines().filter(|l| !l.is_empty()).all(|l| merged.content.lines().any(|m| m == l))
}

/// Applies non-overlapping proposals in start order; returns the new text,
/// `(offset, description)` of each applied proposal and the edits taken.
///
/// Insertions of import lines at the same offset do not clash: they are merged (each line
/// once, in the order the proposals come), so proposals that only share the import insertion
/// point all apply in one pass instead of one per pass.
fn apply(source: &str, mut proposals: Vec<Proposal>) -> Option<Applied> {
    use std::collections::BTreeMap;
    proposals.sort_by_key(|p| p.edits.iter().map(|e| e.range.start).min().unwrap_or(0));
    // Taken ranges by start (an insertion is an empty range); equal edits are shared.
    let mut taken: BTreeMap<(u32, u32), Edit> = BTreeMap::new();
    let mut applied = Vec::new();
    let shared = |taken: &BTreeMap<(u32, u32), Edit>, e: &Edit| {
        taken.get(&(e.range.start, e.range.end)).is_some_and(|t| {
            t == e || (is_import_insertion(e) && is_import_insertion(t) && imports_contain(t, e))
        })
    };
    let clashes = |taken: &BTreeMap<(u32, u32), Edit>, e: &Edit| {
        let (s, t) = (e.range.start, e.range.end);
        if s == t {
            // An insertion clashes with another at the same offset (but import lines merge)
            // or a range around it.
            taken.get(&(s, s)).is_some_and(|x| !(is_import_insertion(x) && is_import_insertion(e)))
                || taken.range(..(s, 0)).next_back().is_some_and(|((_, te), _)| *te > s)
        } else {
            // Taken ranges do not overlap: only the last one starting before `t` can reach in.
            taken.range(..(t, 0)).next_back().is_some_and(|((ts, te), _)| *ts < t && s < *te)
        }
    };
    for p in proposals {
        let fresh: Vec<Edit> = p.edits.iter().filter(|e| !shared(&taken, e)).cloned().collect();
        if fresh.is_empty() {
            continue;
        }
        let bad = fresh.iter().any(|e| e.range.end as usize > source.len());
        if bad || fresh.iter().any(|e| clashes(&taken, e)) {
            continue;
        }
        let at = p
            .edits
            .iter()
            .filter(|e| !e.content.starts_with("import ") && !e.content.starts_with("from "))
            .map(|e| e.range.start)
            .min();
        applied.push((at.unwrap_or_else(|| fresh[0].range.start), p.description));
        for e in fresh {
            match taken.get_mut(&(e.range.start, e.range.end)) {
                Some(merged) => {
                    for line in e.content.lines().filter(|l| !l.is_empty()) {
                        if !merged.content.lines().any(|m| m == line) {
                            merged.content.push_str(line);
                            merged.content.push('\n');
                        }
                    }
                }
                None => {
                    taken.insert((e.range.start, e.range.end), e);
                }
            }
        }
    }
    if taken.is_empty() {
        return None;
    }
    let taken: Vec<Edit> = taken.into_values().collect();
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::{Proposal, apply};
    use crate::fix::Edit;
    use tpuport_python::Span;

    fn proposal(edits: Vec<Edit>, description: &str) -> Proposal {
        Proposal { edits, description: description.to_owned() }
    }

    #[test]
    fn import_insertions_at_one_offset_merge_in_one_pass() {
        let src = "import torch\n\nx = a.cuda()\ny = b.cuda()\nz = c.cuda()\n";
        let at = 13; // after `import torch\n`
        let x = src.find("a.cuda()").unwrap() as u32;
        let y = src.find("b.cuda()").unwrap() as u32;
        let z = src.find("c.cuda()").unwrap() as u32;
        let proposals = vec![
            proposal(
                vec![
                    Edit::insert(at, "import torch_xla\n".to_owned()),
                    Edit::replace(Span::new(x, x + 8), "a".to_owned()),
                ],
                "x",
            ),
            proposal(
                vec![
                    Edit::insert(at, "import torch_xla.core.xla_model as xm\n".to_owned()),
                    Edit::replace(Span::new(y, y + 8), "b".to_owned()),
                ],
                "y",
            ),
            proposal(
                vec![
                    Edit::insert(at, "import torch_xla\n".to_owned()),
                    Edit::replace(Span::new(z, z + 8), "c".to_owned()),
                ],
                "z",
            ),
        ];
        let (out, applied, _) = apply(src, proposals).unwrap();
        assert_eq!(
            out,
            "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\nx = a\ny = b\nz = c\n"
        );
        assert_eq!(applied.len(), 3);
    }

    #[test]
    fn other_insertions_at_one_offset_still_clash() {
        let src = "f(a)\n";
        // Sorted by first edit: `third` (its import at 0) goes first and takes offset 3.
        let proposals = vec![
            proposal(vec![Edit::insert(3, ", drop_last=True")], "first"),
            proposal(vec![Edit::insert(3, ", pin_memory=False")], "second"),
            proposal(vec![Edit::insert(0, "import os\n"), Edit::insert(3, ", x=1")], "third"),
        ];
        let (out, applied, _) = apply(src, proposals).unwrap();
        assert_eq!(out, "import os\nf(a, x=1)\n");
        assert_eq!(applied.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>(), ["third"]);
    }
}
