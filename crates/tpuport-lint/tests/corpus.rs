//! Precision and recall of `check` on the corpus of real public training scripts
//! (`resources/corpus`, see its README): every rule (preview included) runs on each script and
//! its findings are scored against the script's `.expect` file. Prints one line per script,
//! keeps the per-script table in `docs/port.md` current (`TPUPORT_UPDATE_DOCS=1` rewrites it)
//! and fails below 95 % precision or 85 % recall over the whole corpus; also checks that `port`
//! on every script is idempotent.

#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout, reason = "tests")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tpuport_lint::port::{Target, port_source};
use tpuport_lint::{RuleSet, lint_source};

const MIN_PRECISION: f64 = 0.95;
const MIN_RECALL: f64 = 0.85;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("resources/corpus")
}

/// One expected finding: line, code or code prefix.
struct Expectation {
    line: u32,
    code: String,
}

fn read_expectations(path: &Path) -> Vec<Expectation> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(n), Some(code)) = (parts.next(), parts.next()) else {
            panic!("{}:{}: expected `LINE CODE why`", path.display(), i + 1);
        };
        let line = n
            .parse()
            .unwrap_or_else(|_| panic!("{}:{}: bad line number {n:?}", path.display(), i + 1));
        assert!(code.starts_with("TPU"), "{}:{}: bad code {code:?}", path.display(), i + 1);
        out.push(Expectation { line, code: code.to_owned() });
    }
    out
}

/// (file, port target) from MANIFEST.tsv.
fn manifest() -> Vec<(String, Target)> {
    let text = std::fs::read_to_string(corpus().join("MANIFEST.tsv")).unwrap();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 7, "MANIFEST.tsv: 7 columns expected in {l:?}");
            let target = match cols[6] {
                "torch-xla" => Target::TorchXla,
                "tf-tpu" => Target::TfTpu,
                "jax" => Target::Jax,
                other => panic!("MANIFEST.tsv: unknown target {other:?}"),
            };
            (cols[0].to_owned(), target)
        })
        .collect()
}

#[derive(Default)]
struct Score {
    findings: usize,
    true_findings: usize,
    expected: usize,
    found: usize,
}

impl Score {
    fn add(&mut self, o: &Score) {
        self.findings += o.findings;
        self.true_findings += o.true_findings;
        self.expected += o.expected;
        self.found += o.found;
    }
    fn precision(&self) -> f64 {
        self.true_findings as f64 / self.findings.max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.found as f64 / self.expected.max(1) as f64
    }
}

/// One corpus part scored: the totals, one console line per script (with its misses and
/// false alarms when `details`), the markdown table and the list of misses for the docs.
struct Scored {
    total: Score,
    report: String,
    table: String,
    notes: String,
}

/// Scores `check --preview` on `files` (paths relative to `dir`, repository of each) against
/// their `.expect` files.
fn score(dir: &Path, files: &[(String, String)], details: bool) -> Scored {
    let rules = RuleSet::all();
    let mut out = Scored {
        total: Score::default(),
        report: String::new(),
        table: String::from(
            "| Script | Repository | Expected | Found | Findings | True findings | Precision | Recall |\n\
             |---|---|---:|---:|---:|---:|---:|---:|\n",
        ),
        notes: String::new(),
    };
    for (file, repo) in files {
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        let expect = read_expectations(&dir.join(file.replace(".py", ".expect")));
        let result = lint_source(&source, &rules).unwrap();
        let index = tpuport_python::LineIndex::new(&source);
        let mut s = Score { expected: expect.len(), ..Score::default() };
        let mut matched = vec![false; expect.len()];
        let mut misses = Vec::new();
        for d in &result.diagnostics {
            let line = index.line_col(&source, d.span.start).line;
            let code = d.rule.code();
            s.findings += 1;
            let mut hit = false;
            for (i, e) in expect.iter().enumerate() {
                if e.line == line && code.starts_with(&e.code) {
                    matched[i] = true;
                    hit = true;
                }
            }
            if hit {
                s.true_findings += 1;
            } else {
                misses.push(format!("    false alarm {line} {code}: {}", d.message));
            }
        }
        for (e, m) in expect.iter().zip(&matched) {
            if *m {
                s.found += 1;
            } else {
                misses.push(format!("    missed {} {}", e.line, e.code));
            }
        }
        out.report.push_str(&format!(
            "  {file:<44} findings {:>3}  true {:>3}  expected {:>3}  found {:>3}  precision {:>6}  recall {:>6}\n",
            s.findings,
            s.true_findings,
            s.expected,
            s.found,
            ratio(s.true_findings, s.findings),
            ratio(s.found, s.expected),
        ));
        out.table.push_str(&format!(
            "| `{file}` | {repo} | {} | {} | {} | {} | {} | {} |\n",
            s.expected,
            s.found,
            s.findings,
            s.true_findings,
            ratio(s.true_findings, s.findings),
            ratio(s.found, s.expected),
        ));
        for m in misses {
            out.notes.push_str(&format!("- `{file}`: {}\n", m.trim()));
            if details {
                out.report.push_str(&m);
                out.report.push('\n');
            }
        }
        out.total.add(&s);
    }
    let n_repos = files.iter().map(|(_, r)| r).collect::<BTreeSet<_>>().len();
    out.table.push_str(&format!(
        "| **total** ({} scripts, {n_repos} repositories) | | {} | {} | {} | {} | {:.1} % | {:.1} % |\n",
        files.len(),
        out.total.expected,
        out.total.found,
        out.total.findings,
        out.total.true_findings,
        out.total.precision() * 100.0,
        out.total.recall() * 100.0
    ));
    if out.notes.is_empty() {
        out.notes.push_str("- none\n");
    }
    out
}

#[test]
fn check_precision_and_recall_on_the_corpus() {
    let files: Vec<(String, String)> = manifest()
        .into_iter()
        .map(|(f, _)| {
            let repo = repo_of(&f);
            (f, repo)
        })
        .collect();
    let repos: BTreeSet<&String> = files.iter().map(|(_, r)| r).collect();
    assert!(files.len() >= 15, "the corpus holds {} scripts, at least 15 wanted", files.len());
    assert!(
        repos.len() >= 6,
        "the corpus comes from {} repositories, at least 6 wanted",
        repos.len()
    );
    let s = score(&corpus(), &files, true);
    let (precision, recall) = (s.total.precision(), s.total.recall());
    println!(
        "corpus: {} scripts from {} repositories\n{}total: findings {}, true {}, expected {}, found {}: precision {:.1} %, recall {:.1} %",
        files.len(),
        repos.len(),
        s.report,
        s.total.findings,
        s.total.true_findings,
        s.total.expected,
        s.total.found,
        precision * 100.0,
        recall * 100.0
    );
    let doc = format!("\n{}\nMissed expectations and false alarms:\n\n{}\n", s.table, s.notes);
    tpuport_testkit::docs::check_region(
        &tpuport_testkit::repo_root().join("docs/port.md"),
        "<!-- corpus-table:begin -->\n",
        "<!-- corpus-table:end -->",
        &doc,
        "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint --test corpus",
    );
    assert!(
        precision >= MIN_PRECISION && recall >= MIN_RECALL,
        "precision {:.1} % (min {:.0} %), recall {:.1} % (min {:.0} %)\n{}",
        precision * 100.0,
        MIN_PRECISION * 100.0,
        recall * 100.0,
        MIN_RECALL * 100.0,
        s.report
    );
}

/// The second corpus (`resources/corpus-unseen`, issue 36): scripts from 30 repositories the
/// rules were not written against, split by repository (`SPLIT.tsv`) before any rule change.
/// The development half prints every miss and false alarm; the held-out half prints only its
/// totals (it is measured, never read while writing rules) and its per-script table goes to
/// `docs/port.md`. Fails when either half falls below the floor measured when the corpus came
/// in (a ratchet: raise it as the rules improve; the acceptance goal is 95 % / 85 % held out).
#[test]
fn check_on_scripts_the_rules_were_not_written_against() {
    // Measured when the corpus came in (2026-12-07, before any rule change): dev 79.9 % /
    // 62.7 %, held-out 55.8 % / 42.1 %. Raised to what the rules reach now (same day, after
    // the dev-only changes of this session): dev 88.8 % / 74.7 %, held-out 63.6 % / 46.6 %.
    const FLOORS: [(&str, f64, f64); 2] = [("dev", 0.88, 0.74), ("held-out", 0.63, 0.46)];
    let dir = unseen();
    let split = std::fs::read_to_string(dir.join("SPLIT.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = split.lines().skip(1).map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() >= 50, "{} scripts in SPLIT.tsv", rows.len());
    let mut doc = String::new();
    let mut failed = Vec::new();
    for (part, min_p, min_r) in FLOORS {
        let files: Vec<(String, String)> = rows
            .iter()
            .filter(|c| c[4] == part)
            .map(|c| (format!("{}/{}", c[1], c[0]), c[2].to_owned()))
            .collect();
        let s = score(&dir, &files, part == "dev");
        let (p, r) = (s.total.precision(), s.total.recall());
        println!(
            "{part}: {} scripts\n{}{part} total: findings {}, true {}, expected {}, found {}: precision {:.1} %, recall {:.1} %\n",
            files.len(),
            if part == "dev" { s.report.as_str() } else { "" },
            s.total.findings,
            s.total.true_findings,
            s.total.expected,
            s.total.found,
            p * 100.0,
            r * 100.0
        );
        doc.push_str(&format!("\n**{part}**\n\n{}", s.table));
        if p < min_p || r < min_r {
            failed.push(format!(
                "{part}: precision {:.1} % (floor {:.1} %), recall {:.1} % (floor {:.1} %)",
                p * 100.0,
                min_p * 100.0,
                r * 100.0,
                min_r * 100.0
            ));
        }
    }
    doc.push('\n');
    tpuport_testkit::docs::check_region(
        &tpuport_testkit::repo_root().join("docs/port.md"),
        "<!-- unseen-corpus-table:begin -->\n",
        "<!-- unseen-corpus-table:end -->",
        &doc,
        "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint --test corpus",
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

fn unseen() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("resources/corpus-unseen")
}

/// The repository column of MANIFEST.tsv for `file`.
fn repo_of(file: &str) -> String {
    std::fs::read_to_string(corpus().join("MANIFEST.tsv"))
        .unwrap()
        .lines()
        .find_map(|l| {
            let mut cols = l.split('\t');
            (cols.next() == Some(file)).then(|| cols.next().unwrap_or("").to_owned())
        })
        .unwrap_or_default()
}

fn ratio(a: usize, b: usize) -> String {
    if b == 0 { "-".to_owned() } else { format!("{:.0}%", a as f64 * 100.0 / b as f64) }
}

#[test]
fn port_of_every_corpus_script_is_idempotent() {
    // Both corpora, held-out half included: idempotence is a property of the codemods, not a
    // score to tune.
    let split = std::fs::read_to_string(unseen().join("SPLIT.tsv")).unwrap();
    let unseen_files = split.lines().skip(1).map(|l| {
        let c: Vec<&str> = l.split('\t').collect();
        let target = match c[3] {
            "pytorch" => Target::TorchXla,
            "tensorflow" => Target::TfTpu,
            _ => Target::Jax,
        };
        (unseen().join(c[1]).join(c[0]), target)
    });
    let files = manifest().into_iter().map(|(f, t)| (corpus().join(f), t)).chain(unseen_files);
    for (file, target) in files {
        let source = std::fs::read_to_string(&file).unwrap();
        let file = file.display();
        let once = port_source(&source, target).unwrap();
        let twice = port_source(&once.output, target).unwrap();
        assert_eq!(
            once.output,
            twice.output,
            "{file}: a second `port --to {}` changed the file",
            target.name()
        );
    }
}
