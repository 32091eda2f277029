//! `tpuport doctor --model FILE` judges a StableHLO module's version against the CPU plugin's
//! accepted range (its `stablehlo_minimum_version` .. `stablehlo_current_version` attributes,
//! read from the real plugin, not assumed here).
//!
//! The modules are the JAX fixture `mlp_b1`:
//! - `export.mlirbc` as jax.export wrote it (the version jax chose for it);
//! - the same module re-serialized by jaxlib's StableHLO bindings
//!   (`serialize_portable_artifact_str(module, target)`, what jax.export itself calls) for the
//!   plugin's current version (inside the range) and for the bindings' own current version
//!   (newer than the plugin's);
//! - a module older than the plugin's minimum: the bindings cannot target below StableHLO's
//!   own minimum, which is the plugin's minimum too, so the artifact serialized for that
//!   minimum has its version field edited. In MLIR bytecode the version of a portable artifact
//!   is the producer string: after the magic `ML\xEFR` and the bytecode-version varint, the
//!   NUL-terminated `StableHLO_vX.Y.Z`. Only those digits are rewritten (same length), nothing
//!   else in the file;
//! - the text `jit.mlir`, which carries no version.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
#![allow(unreachable_pub, reason = "the shared test helpers are pub")]

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

type V3 = [i64; 3];

fn parse(v: &str) -> V3 {
    let p: Vec<i64> = v.trim().split('.').map(|x| x.parse().unwrap()).collect();
    p.try_into().unwrap_or_else(|p| panic!("not X.Y.Z: {v:?} {p:?}"))
}

fn show(v: V3) -> String {
    format!("{}.{}.{}", v[0], v[1], v[2])
}

fn mlp() -> PathBuf {
    common::fixtures().join("jax/mlp_b1")
}

/// `tpuport --format json doctor --no-python [--model FILE]`: exit code, report, text-run stdout.
fn doctor(cache: &Path, model: Option<&Path>) -> (i32, Value) {
    let mut c = common::runtime_command(cache);
    c.args(["--format", "json", "doctor", "--no-python"]);
    if let Some(m) = model {
        c.arg("--model").arg(m);
    }
    let o = common::output(&mut c);
    let v: Value = serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: exit {} {}\n{}", o.code, o.stdout, o.stderr));
    (o.code, v)
}

/// The CPU plugin's path and StableHLO range, as the plugin reports them.
fn cpu_plugin(cache: &Path) -> (String, V3, V3) {
    assert!(tpuport_pjrt::find_cpu().is_some(), "CPU PJRT plugin not found: run `make venv`");
    let (_, v) = doctor(cache, None);
    let cpu = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "cpu")
        .unwrap_or_else(|| panic!("no cpu plugin: {v:#}"));
    let range = cpu["stablehlo"].as_str().unwrap_or_else(|| panic!("no StableHLO range: {cpu:#}"));
    let (lo, hi) = range.split_once(" .. ").unwrap();
    (cpu["path"].as_str().unwrap().to_owned(), parse(lo), parse(hi))
}

/// Re-serializes the fixture's portable artifact for each target version into `dir`
/// (`v<target>.mlirbc`); returns the bindings' current version.
fn serialize(dir: &Path, targets: &[String]) -> V3 {
    let code = r"
import sys
from jaxlib.mlir.dialects import stablehlo as s
src, out = sys.argv[1], sys.argv[2]
module = s.deserialize_portable_artifact_str(open(src, 'rb').read())
for t in sys.argv[3:]:
    open(f'{out}/v{t}.mlirbc', 'wb').write(s.serialize_portable_artifact_str(module, t))
print(s.get_current_version())
";
    let src = mlp().join("export.mlirbc");
    let mut args = vec![src.to_str().unwrap().to_owned(), dir.to_str().unwrap().to_owned()];
    args.extend_from_slice(targets);
    let o = tpuport_testkit::run_python(code, args.as_slice());
    parse(&String::from_utf8_lossy(&o.stdout))
}

/// The version in an artifact's header (`ML\xEFR`, varint, `StableHLO_vX.Y.Z\0`).
fn header_version(bytes: &[u8]) -> V3 {
    let tag = b"StableHLO_v";
    let at = bytes.windows(tag.len()).position(|w| w == tag).unwrap() + tag.len();
    assert!(at < 32, "producer string not in the header");
    let end = at + bytes[at..].iter().position(|&b| b == 0).unwrap();
    parse(std::str::from_utf8(&bytes[at..end]).unwrap())
}

/// The verdicts about the CPU plugin.
fn cpu_verdicts<'a>(v: &'a Value, cpu: &str) -> Vec<&'a Value> {
    v["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["message"].as_str().unwrap().starts_with(cpu))
        .collect()
}

fn notes(v: &Value) -> Vec<&str> {
    v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect()
}

#[test]
fn a_module_inside_the_plugins_range_is_judged_ok() {
    let tmp = tempfile::tempdir().unwrap();
    let (cpu, min, cur) = cpu_plugin(tmp.path());
    serialize(tmp.path(), &[show(cur)]);
    let file = tmp.path().join(format!("v{}.mlirbc", show(cur)));
    assert_eq!(header_version(&std::fs::read(&file).unwrap()), cur);
    let (code, v) = doctor(tmp.path(), Some(&file));
    assert_eq!(code, 0, "{v:#}");
    assert!(cpu_verdicts(&v, &cpu).is_empty(), "{v:#}");
    let fits = format!("{} (StableHLO {}) fits {cpu}", file.display(), show(cur));
    assert!(notes(&v).contains(&fits.as_str()), "{fits}\n{v:#}");
    assert!(min <= cur);
}

#[test]
fn the_jax_export_artifact_is_judged_by_the_version_jax_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let (cpu, min, cur) = cpu_plugin(tmp.path());
    let file = mlp().join("export.mlirbc");
    let ver = header_version(&std::fs::read(&file).unwrap());
    let (code, v) = doctor(tmp.path(), Some(&file));
    let verdicts = cpu_verdicts(&v, &cpu);
    if ver > cur {
        // jax.export targets a version some weeks old; a plugin older than that is warned about.
        assert_eq!(code, 0, "{v:#}");
        assert_eq!(verdicts.len(), 1, "{v:#}");
        assert_eq!(verdicts[0]["level"], "warning");
        assert!(verdicts[0]["message"].as_str().unwrap().contains(&format!(
            "targets StableHLO {}, newer than the plugin's {}",
            show(ver),
            show(cur)
        )));
    } else {
        assert!(ver >= min, "jax wrote {ver:?}, below the plugin's minimum {min:?}");
        assert_eq!(code, 0, "{v:#}");
        assert!(verdicts.is_empty(), "{v:#}");
    }
}

#[test]
fn a_newer_module_is_a_warning_with_rule_source_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let (cpu, min, cur) = cpu_plugin(tmp.path());
    let newest = serialize(tmp.path(), &[]);
    assert!(
        newest > cur,
        "jaxlib's StableHLO {} is not newer than the plugin's {}: no honest newer artifact",
        show(newest),
        show(cur)
    );
    serialize(tmp.path(), &[show(newest)]);
    let file = tmp.path().join(format!("v{}.mlirbc", show(newest)));
    assert_eq!(header_version(&std::fs::read(&file).unwrap()), newest);

    let (code, v) = doctor(tmp.path(), Some(&file));
    assert_eq!(code, 0, "a warning does not fail doctor: {v:#}");
    let verdicts = cpu_verdicts(&v, &cpu);
    assert_eq!(verdicts.len(), 1, "{v:#}");
    let w = verdicts[0];
    assert_eq!(w["level"], "warning");
    assert!(
        w["message"].as_str().unwrap().contains(&format!(
            "the module targets StableHLO {}, newer than the plugin's {}: StableHLO promises backward, not forward, compatibility",
            show(newest),
            show(cur)
        )),
        "{w:#}"
    );
    assert_eq!(w["rule"], format!("the plugin accepts StableHLO {} .. {}", show(min), show(cur)));
    assert!(w["source"].as_str().unwrap().contains("stablehlo_current_version"), "{w:#}");
    assert!(w["source"].as_str().unwrap().contains("compatibility.md"), "{w:#}");
    assert!(w["fix"].as_str().unwrap().starts_with("install a newer plugin"), "{w:#}");

    let o = common::output(common::runtime_command(tmp.path()).args([
        "doctor",
        "--no-python",
        "--model",
        file.to_str().unwrap(),
    ]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("note: warning: "), "{}", o.stdout);
    assert!(o.stdout.contains("[rule: the plugin accepts StableHLO"), "{}", o.stdout);
}

#[test]
fn an_older_module_is_an_error_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let (cpu, min, cur) = cpu_plugin(tmp.path());
    serialize(tmp.path(), &[show(min)]);
    let at_min = std::fs::read(tmp.path().join(format!("v{}.mlirbc", show(min)))).unwrap();
    assert_eq!(header_version(&at_min), min);
    // One step below the minimum, same digit count where possible.
    let older = match min {
        [a, b, c] if c > 0 => [a, b, c - 1],
        [a, b, _] if b > 0 => [a, b - 1, 0],
        [a, _, _] => {
            assert!(a > 0, "the plugin accepts every version");
            [a - 1, 0, 0]
        }
    };
    let (from, to) =
        (format!("StableHLO_v{}\0", show(min)), format!("StableHLO_v{}\0", show(older)));
    let pos = at_min.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
    let mut edited = at_min[..pos].to_vec();
    edited.extend_from_slice(to.as_bytes());
    edited.extend_from_slice(&at_min[pos + from.len()..]);
    let file = tmp.path().join("older.mlirbc");
    std::fs::write(&file, &edited).unwrap();
    assert_eq!(header_version(&edited), older);

    let (code, v) = doctor(tmp.path(), Some(&file));
    assert_eq!(code, 1, "an error-level mismatch fails doctor: {v:#}");
    let verdicts = cpu_verdicts(&v, &cpu);
    assert_eq!(verdicts.len(), 1, "{v:#}");
    let e = verdicts[0];
    assert_eq!(e["level"], "error");
    assert!(
        e["message"].as_str().unwrap().contains(&format!(
            "the module targets StableHLO {}, older than the plugin's minimum {}",
            show(older),
            show(min)
        )),
        "{e:#}"
    );
    assert_eq!(e["rule"], format!("the plugin accepts StableHLO {} .. {}", show(min), show(cur)));
    assert!(e["source"].as_str().unwrap().contains("stablehlo_minimum_version"), "{e:#}");
    assert!(e["fix"].as_str().unwrap().starts_with("re-export the module"), "{e:#}");

    let o = common::output(common::runtime_command(tmp.path()).args([
        "doctor",
        "--no-python",
        "--model",
        file.to_str().unwrap(),
    ]));
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stdout.contains("note: error: "), "{}", o.stdout);
    assert!(o.stdout.contains("fix: re-export the module"), "{}", o.stdout);
}

#[test]
fn a_text_module_cannot_be_judged_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let (cpu, _, _) = cpu_plugin(tmp.path());
    let file = mlp().join("jit.mlir");
    let (code, v) = doctor(tmp.path(), Some(&file));
    assert_eq!(code, 0, "{v:#}");
    assert!(cpu_verdicts(&v, &cpu).is_empty(), "{v:#}");
    let want = format!(
        "cannot judge {}'s StableHLO version: a StableHLO text module carries no version",
        file.display()
    );
    assert!(notes(&v).iter().any(|n| n.starts_with(&want)), "{want}\n{v:#}");
    assert!(notes(&v).iter().all(|n| !n.contains(" fits ")), "{v:#}");
}

#[test]
fn an_unreadable_model_is_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.mlirbc");
    let o = common::output(common::runtime_command(tmp.path()).args([
        "doctor",
        "--no-python",
        "--model",
        missing.to_str().unwrap(),
    ]));
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("nope.mlirbc"), "{}", o.stderr);
    assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    let bad = tmp.path().join("bad.mlirbc");
    std::fs::write(&bad, b"ML\xEFR\x0dStableHLO_v1.2").unwrap();
    let o = common::output(common::runtime_command(tmp.path()).args([
        "doctor",
        "--no-python",
        "--model",
        bad.to_str().unwrap(),
    ]));
    assert_eq!(o.code, 2, "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("bad.mlirbc") && o.stderr.contains("not terminated"), "{}", o.stderr);
}
