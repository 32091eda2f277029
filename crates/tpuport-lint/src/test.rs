//! Test harness: lint a fixture through the real renderer; fixes must converge and parse.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test harness")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tpuport_codes::StableCode;
use tpuport_python::{LineIndex, parse_module};

use crate::codes::Rule;
use crate::fix::{Applicability, apply_fixes};
use crate::linter::{lint_fix, lint_source};
use crate::render::{TextOptions, render_diagnostic};
use crate::settings::RuleSet;

pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `resources/test/fixtures/<family>/<CODE>.py`.
pub(crate) fn fixture_path(rule: Rule) -> PathBuf {
    let family = Path::new(rule.source())
        .parent()
        .and_then(Path::file_name)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    crate_dir().join("resources/test/fixtures").join(family).join(format!("{}.py", rule.code()))
}

/// Lints `source` with only `rule` and renders every finding with its frame and, for fixes,
/// the diff that fix alone makes. Panics if the fixed file does not parse or fixes do not
/// converge.
pub(crate) fn render_rule(rule: Rule, source: &str, name: &str) -> String {
    let rules = RuleSet::only(&[rule]);
    let result = lint_source(source, &rules)
        .unwrap_or_else(|e| panic!("{name}: fixture does not parse: {e}"));
    let lines = LineIndex::new(source);
    let mut out = String::new();
    let opts = TextOptions { threshold: Applicability::Unsafe, context: 1 };
    for d in &result.diagnostics {
        out.push_str(&render_diagnostic(name, source, &lines, d, opts));
        if let Some(fix) = &d.fix {
            let one = apply_fixes(source, std::slice::from_ref(d), Applicability::Unsafe);
            let _ = writeln!(out, "   fix ({:?}):", fix.applicability);
            if let Some(applied) = one {
                let diff = similar::TextDiff::from_lines(source, &applied.output);
                for hunk in diff.unified_diff().context_radius(1).iter_hunks() {
                    for line in hunk.to_string().lines() {
                        let _ = writeln!(out, "   {line}");
                    }
                }
            }
        }
        out.push('\n');
    }
    let fixed = lint_fix(source, &rules, Applicability::Unsafe).unwrap();
    assert!(fixed.syntax_error.is_none(), "{name}: fix introduced a syntax error");
    assert!(!fixed.did_not_converge, "{name}: fixes did not converge");
    parse_module(&fixed.output).unwrap();
    let _ = writeln!(
        out,
        "{} finding(s); after --fix --unsafe-fixes: {} left",
        result.diagnostics.len(),
        fixed.remaining.diagnostics.len()
    );
    out
}

pub(crate) fn check_fixture(rule: Rule) -> String {
    let path = fixture_path(rule);
    let source = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("missing fixture {}: {e}", path.display()));
    let name = format!("{}.py", rule.code());
    let out = render_rule(rule, &source, &name);
    assert!(out.contains(rule.code()), "{name}: the fixture must trigger {}", rule.code());
    assert!(
        source.contains("# ok") || source.contains("# negative"),
        "{name}: the fixture must hold negative cases marked `# ok`"
    );
    out
}

macro_rules! fixture_tests {
    ($($test:ident => $rule:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let rule = Rule::$rule;
                let out = check_fixture(rule);
                insta::with_settings!({ snapshot_path => "../resources/test/snapshots", prepend_module_to_snapshot => false }, {
                    insta::assert_snapshot!(rule.code(), out);
                });
            }
        )*

        #[test]
        fn every_rule_has_a_fixture_test() {
            let tested: Vec<Rule> = vec![$(Rule::$rule),*];
            for r in Rule::ALL {
                assert!(tested.contains(r), "{} has no fixture test", r.code());
                assert!(fixture_path(*r).exists(), "{} has no fixture", r.code());
            }
        }
    };
}

fixture_tests! {
    tpu101 => DataloaderWithoutDropLast,
    tpu102 => DistributedSamplerWithoutDropLast,
    tpu103 => TfBatchWithoutDropRemainder,
    tpu104 => DynamicPadding,
    tpu105 => NonzeroCall,
    tpu106 => MaskedSelectCall,
    tpu107 => BooleanMaskIndex,
    tpu108 => TensorControlFlow,
    tpu109 => UniqueWithoutSize,
    tpu110 => MakeCsvDatasetPartialBatch,
    tpu201 => ItemInStepLoop,
    tpu202 => CpuInStepLoop,
    tpu203 => NumpyInStepLoop,
    tpu204 => TolistInStepLoop,
    tpu205 => PrintTensorInStepLoop,
    tpu206 => ScalarConversionInStepLoop,
    tpu207 => BlockingWaitInStepLoop,
    tpu208 => HostMetricInStepLoop,
    tpu301 => CudaMethodCall,
    tpu302 => CudaDeviceString,
    tpu303 => TorchCudaApi,
    tpu304 => CudnnFlag,
    tpu305 => NcclBackend,
    tpu306 => PinMemory,
    tpu307 => CudaVisibleDevices,
    tpu401 => Fp16Autocast,
    tpu402 => GradScaler,
    tpu403 => KerasMixedFloat16,
    tpu404 => Float64Dtype,
    tpu405 => JaxEnableX64,
    tpu406 => XlaUseBf16Env,
    tpu407 => KerasLossScaleOptimizer,
    tpu408 => HalfCast,
    tpu501 => DdpDeviceIds,
    tpu502 => MultiprocessingSpawn,
    tpu503 => MirroredStrategy,
    tpu504 => PmapUsage,
    tpu505 => ExperimentalShardMap,
    tpu506 => ShardMapCheckRep,
    tpu507 => DevicePutReplicated,
    tpu508 => MasterAddrEnv,
    tpu509 => XlaBackendWithoutInitMethod,
    tpu601 => DataloaderNumWorkersZero,
    tpu602 => TfDataWithoutPrefetch,
    tpu603 => TfPyFunction,
    tpu604 => DataloaderWithoutDeviceLoader,
    tpu605 => KerasCompileWithoutStepsPerExecution,
    tpu606 => PrefetchBeforeBatch,
    tpu701 => JitInLoop,
    tpu702 => MissingDonateArgnums,
    tpu703 => HostArrayInStepLoop,
    tpu704 => RngSplitOutsideJit,
    tpu801 => TorchSaveOnXla,
    tpu802 => CheckpointEveryStep,
    tpu803 => KerasSaveLocalPath,
    tpu804 => FlaxLegacyCheckpoints,
}

#[test]
fn docs_are_current() {
    tpuport_testkit::docs::check_code_docs(&Rule::docs());
}

#[test]
fn every_doc_has_the_fixed_sections() {
    for r in Rule::ALL {
        let doc = r.doc();
        let mut last = 0;
        for h in [
            "## What it does",
            "## Why is this bad on TPU?",
            "## Example",
            "## Use instead",
            "## Fix safety",
            "## References",
        ] {
            let at = doc.find(h).unwrap_or_else(|| panic!("{}: missing `{h}`", r.code()));
            assert!(at >= last, "{}: `{h}` out of order", r.code());
            last = at;
        }
        let refs = doc.split("## References").nth(1).unwrap();
        assert!(refs.contains("https://"), "{}: references need links", r.code());
        assert!(!r.summary().is_empty(), "{}: empty summary", r.code());
    }
}

#[test]
fn codes_are_unique_and_grouped() {
    let mut seen = std::collections::HashSet::new();
    for r in Rule::ALL {
        assert!(seen.insert(r.code()), "duplicate {}", r.code());
        assert!(
            r.source().contains(&format!("/{}/", family_dir(*r))),
            "{} file is not in its family folder",
            r.code()
        );
    }
    assert!(Rule::ALL.len() >= 40);
}

fn family_dir(r: Rule) -> &'static str {
    match r.family() {
        crate::Family::Recompilation => "recompilation",
        crate::Family::HostSync => "host_sync",
        crate::Family::Cuda => "cuda",
        crate::Family::Precision => "precision",
        crate::Family::Distribution => "distribution",
        crate::Family::InputPipeline => "input_pipeline",
        crate::Family::Jax => "jax",
        crate::Family::Checkpointing => "checkpointing",
    }
}
