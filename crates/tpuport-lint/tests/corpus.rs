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

#[test]
fn check_precision_and_recall_on_the_corpus() {
    let files = manifest();
    let repos: BTreeSet<String> = std::fs::read_to_string(corpus().join("MANIFEST.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').nth(1).map(str::to_owned))
        .collect();
    assert!(files.len() >= 15, "the corpus holds {} scripts, at least 15 wanted", files.len());
    assert!(
        repos.len() >= 6,
        "the corpus comes from {} repositories, at least 6 wanted",
        repos.len()
    );
    let rules = RuleSet::all();
    let mut total = Score::default();
    let mut report = String::new();
    let mut table = String::from(
        "| Script | Repository | Expected | Found | Findings | True findings | Precision | Recall |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut notes = String::new();
    for (file, _) in &files {
        let source = std::fs::read_to_string(corpus().join(file)).unwrap();
        let expect = read_expectations(&corpus().join(file.replace(".py", ".expect")));
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
        report.push_str(&format!(
            "  {file:<40} findings {:>3}  true {:>3}  expected {:>3}  found {:>3}  precision {:>6}  recall {:>6}\n",
            s.findings,
            s.true_findings,
            s.expected,
            s.found,
            ratio(s.true_findings, s.findings),
            ratio(s.found, s.expected),
        ));
        table.push_str(&format!(
            "| `{file}` | {} | {} | {} | {} | {} | {} | {} |\n",
            repo_of(file),
            s.expected,
            s.found,
            s.findings,
            s.true_findings,
            ratio(s.true_findings, s.findings),
            ratio(s.found, s.expected),
        ));
        for m in misses {
            notes.push_str(&format!("- `{file}`: {}\n", m.trim()));
            report.push_str(&m);
            report.push('\n');
        }
        total.findings += s.findings;
        total.true_findings += s.true_findings;
        total.expected += s.expected;
        total.found += s.found;
    }
    let precision = total.true_findings as f64 / total.findings.max(1) as f64;
    let recall = total.found as f64 / total.expected.max(1) as f64;
    println!(
        "corpus: {} scripts from {} repositories\n{report}total: findings {}, true {}, expected {}, found {}: precision {:.1} %, recall {:.1} %",
        files.len(),
        repos.len(),
        total.findings,
        total.true_findings,
        total.expected,
        total.found,
        precision * 100.0,
        recall * 100.0
    );
    table.push_str(&format!(
        "| **total** ({} scripts, {} repositories) | | {} | {} | {} | {} | {:.1} % | {:.1} % |\n",
        files.len(),
        repos.len(),
        total.expected,
        total.found,
        total.findings,
        total.true_findings,
        precision * 100.0,
        recall * 100.0
    ));
    if notes.is_empty() {
        notes.push_str("- none\n");
    }
    let doc = format!("\n{table}\nMissed expectations and false alarms:\n\n{notes}\n");
    tpuport_testkit::docs::check_region(
        &tpuport_testkit::repo_root().join("docs/port.md"),
        "<!-- corpus-table:begin -->\n",
        "<!-- corpus-table:end -->",
        &doc,
        "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-lint --test corpus",
    );
    assert!(
        precision >= MIN_PRECISION && recall >= MIN_RECALL,
        "precision {:.1} % (min {:.0} %), recall {:.1} % (min {:.0} %)\n{report}",
        precision * 100.0,
        MIN_PRECISION * 100.0,
        recall * 100.0,
        MIN_RECALL * 100.0
    );
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
    for (file, target) in manifest() {
        let source = std::fs::read_to_string(corpus().join(&file)).unwrap();
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
