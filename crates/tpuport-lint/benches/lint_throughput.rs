//! Lint throughput (lines/s) on the example scripts concatenated N times.
//!
//! `cargo bench -p tpuport-lint --bench lint_throughput`

#![allow(clippy::unwrap_used, reason = "bench")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tpuport_lint::{RuleSet, lint_source};

fn corpus(copies: usize) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    let one: String = files.iter().map(|p| std::fs::read_to_string(p).unwrap() + "\n").collect();
    one.repeat(copies)
}

fn bench(c: &mut Criterion) {
    let source = corpus(50);
    let lines = source.lines().count() as u64;
    let rules = RuleSet::new(&[], &[], true);
    let mut g = c.benchmark_group("lint");
    g.throughput(Throughput::Elements(lines));
    g.bench_function(format!("examples_x50 ({lines} lines)"), |b| {
        b.iter(|| lint_source(&source, &rules).unwrap())
    });
    g.bench_function("parse only", |b| b.iter(|| tpuport_python::parse_module(&source).unwrap()));
    let none = RuleSet::only(&[]);
    g.bench_function("parse + semantic + walk, no rules", |b| {
        b.iter(|| lint_source(&source, &none).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
