//! CLI tests for `tpuport check`, `port` and `explain`: exit codes, formats, fixes, noqa.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn repo() -> PathBuf {
    tpuport_testkit::repo_root()
}

fn run(args: &[&str], cwd: &Path) -> Output {
    common::command().args(args).current_dir(cwd).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TRAIN: &str = r#"import torch
from torch.utils.data import DataLoader

loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True, drop_last=True)
model = Net().cuda()
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(loss.item())
print(loss.item())
"#;

fn temp_with(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

#[test]
fn clean_file_exits_0_findings_exit_1() {
    let (dir, _) = temp_with("clean.py", "import torch\nx = torch.zeros(3)\n");
    let o = run(&["check", "clean.py"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("All checks passed!"));

    let (dir, _) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("train.py:5:15: TPU301 "), "{out}");
    assert!(out.contains("train.py:10:16: TPU201 "), "{out}");
    assert!(!out.contains("train.py:11:"), "an .item() after the loop is fine:\n{out}");
    assert!(out.contains("^^^^^^ TPU301"), "{out}");
    assert!(out.contains("= help: "), "{out}");
    assert!(out.contains("TPU306 [*] "), "safe fix marked:\n{out}");
}

#[test]
fn parse_error_is_reported_run_continues_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.py"), "def f(:\n").unwrap();
    std::fs::write(dir.path().join("good.py"), TRAIN).unwrap();
    let o = run(&["check", "."], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.py: cannot parse: syntax error at 1:"), "{}", stderr(&o));
    assert!(stdout(&o).contains("good.py:5:15: TPU301"), "the other file is still checked");
    let o = run(&["check", "missing.py"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read missing.py"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("All checks passed!"), "{}", stdout(&o));
    assert!(stdout(&o).contains("1 file could not be checked"), "{}", stdout(&o));
    let o = run(&["check", "bad.py"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(!stdout(&o).contains("All checks passed!"), "a file that does not parse did not pass");
}

#[test]
fn gitignore_is_respected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".gitignore"), "vendored/\n").unwrap();
    std::fs::create_dir(dir.path().join("vendored")).unwrap();
    std::fs::write(dir.path().join("vendored/x.py"), TRAIN).unwrap();
    std::fs::write(dir.path().join("ok.py"), "x = 1\n").unwrap();
    let o = run(&["check", "."], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn json_output() {
    let (dir, _) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py", "--format", "json"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["version"], 1);
    let f = v["findings"].as_array().unwrap();
    let cuda = f.iter().find(|x| x["code"] == "TPU301").unwrap();
    assert_eq!(cuda["location"]["row"], 5);
    assert_eq!(cuda["location"]["column"], 15);
    assert_eq!(cuda["fix"]["applicability"], "unsafe");
    assert_eq!(cuda["filename"], "train.py");
    assert!(cuda["url"].as_str().unwrap().ends_with("/TPU301.md"));
}

#[test]
fn sarif_output_has_the_required_structure() {
    let (dir, _) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py", "--format", "sarif"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    assert_eq!(v["version"], "2.1.0");
    let run0 = &v["runs"][0];
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.len() >= 40);
    for r in rules {
        assert!(r["id"].as_str().unwrap().starts_with("TPU"));
        assert!(!r["shortDescription"]["text"].as_str().unwrap().is_empty());
        assert!(r["helpUri"].as_str().unwrap().starts_with("https://"));
    }
    let results = run0["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for res in results {
        let id = res["ruleId"].as_str().unwrap();
        let idx = usize::try_from(res["ruleIndex"].as_u64().unwrap()).unwrap();
        assert_eq!(rules[idx]["id"], id, "ruleIndex points at the rule");
        assert!(["warning", "error", "note", "none"].contains(&res["level"].as_str().unwrap()));
        assert!(!res["message"]["text"].as_str().unwrap().is_empty());
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "train.py");
        let reg = &loc["region"];
        for k in ["startLine", "startColumn", "endLine", "endColumn"] {
            assert!(reg[k].as_u64().unwrap() >= 1, "{k}");
        }
        assert!(reg["endLine"].as_u64() >= reg["startLine"].as_u64());
    }
}

#[test]
fn select_and_ignore() {
    let (dir, _) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py", "--select", "TPU2", "--format", "json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let codes: Vec<&str> =
        v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["TPU201"]);
    let o = run(&["check", "train.py", "--ignore", "TPU2,TPU3,TPU6"], dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run(&["check", "train.py", "--select", "XYZ9"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown rule selector `XYZ9`"), "{}", stderr(&o));
}

#[test]
fn noqa_codes_and_bare() {
    let src = TRAIN
        .replace("model = Net().cuda()\n", "model = Net().cuda()  # noqa: TPU301\n")
        .replace("    print(loss.item())\n", "    print(loss.item())  # noqa\n")
        .replace(
            "pin_memory=True, drop_last=True)\n",
            "pin_memory=True, drop_last=True)  # noqa: TPU999\n",
        );
    let (dir, _) = temp_with("train.py", &src);
    let o = run(&["check", "train.py", "--format", "json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let codes: Vec<&str> =
        v["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["TPU306"], "only the finding whose noqa names another code is left");
}

#[test]
fn fix_applies_safe_fixes_and_unsafe_on_request() {
    let (dir, path) = temp_with("train.py", TRAIN);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o754)).unwrap();
    }
    let o = run(&["check", "train.py", "--fix"], dir.path());
    assert_eq!(o.status.code(), Some(1), "findings without safe fixes remain");
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(!fixed.contains("pin_memory"), "{fixed}");
    assert!(fixed.contains(".cuda()"), "unsafe fix not applied without --unsafe-fixes");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o754,
            "permissions kept"
        );
    }
    let o = run(&["check", "train.py", "--fix", "--unsafe-fixes"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(fixed.contains("model = Net().to(torch_xla.device())"), "{fixed}");
    assert!(fixed.contains("import torch_xla\n"), "{fixed}");
    assert!(
        fixed.contains("for x, y in pl.MpDeviceLoader(loader, torch_xla.device()):")
            || !fixed.contains("pl."),
        "{fixed}"
    );
    assert!(stdout(&o).contains("TPU201"), "unfixable finding still reported");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files left");
}

#[test]
fn diff_prints_and_writes_nothing() {
    let (dir, path) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py", "--diff", "--unsafe-fixes"], dir.path());
    let out = stdout(&o);
    assert!(out.contains("--- a/train.py"), "{out}");
    assert!(out.contains("-model = Net().cuda()"), "{out}");
    assert!(out.contains("+model = Net().to(torch_xla.device())"), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), TRAIN);
}

#[test]
fn statistics() {
    let (dir, _) = temp_with("train.py", TRAIN);
    let o = run(&["check", "train.py", "--statistics"], dir.path());
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.starts_with("1\tTPU301\t")), "{out}");
    assert!(out.lines().any(|l| l.contains("TPU306\t[*] pin-memory")), "{out}");
}

#[test]
fn explain_known_and_unknown() {
    let o = run(&["explain", "tpu201"], &repo());
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("## Why is this bad on TPU?"));
    let o = run(&["explain", "TPU000"], &repo());
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["explain", "--all"], &repo());
    assert!(stdout(&o).lines().count() >= 40);
}

#[test]
fn port_diff_and_write() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("examples/scripts/pytorch_resnet_ddp.py");
    let dst = dir.path().join("train.py");
    std::fs::copy(&src, &dst).unwrap();
    let original = std::fs::read_to_string(&dst).unwrap();
    let o = run(&["port", "train.py", "--to", "torch-xla"], dir.path());
    assert_eq!(o.status.code(), Some(1), "manual steps remain: {}", stderr(&o));
    assert!(
        stdout(&o).contains("+    dist.init_process_group(\"xla\", init_method=\"xla://\")"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("train.py:"), "manual steps name file:line");
    assert!(stderr(&o).contains("manual step: TPU201"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&dst).unwrap(), original, "--diff writes nothing");
    let o =
        run(&["port", "train.py", "--to", "torch-xla", "--write", "--format", "json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["written"], true);
    let ported = std::fs::read_to_string(&dst).unwrap();
    assert!(ported.contains("pl.MpDeviceLoader(train_loader, device)"));
    // The written file checks clean of the automatic rewrites.
    let o = run(
        &["check", "train.py", "--select", "TPU301,TPU305,TPU402", "--format", "json"],
        dir.path(),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["findings"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn port_applies_preview_fixes_only_with_preview() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("examples/scripts/keras_mirrored_mixed_float16.py");
    std::fs::copy(&src, dir.path().join("train.py")).unwrap();
    let o = run(&["port", "train.py", "--to", "tf-tpu"], dir.path());
    assert!(
        !stdout(&o).contains("steps_per_execution"),
        "TPU605 is a preview rule:\n{}",
        stdout(&o)
    );
    let o = run(&["port", "train.py", "--to", "tf-tpu", "--preview"], dir.path());
    assert!(stdout(&o).contains("steps_per_execution=32"), "{}", stdout(&o));
}

#[test]
fn ported_device_choice_is_unconditional() {
    let text = "import torch\n\nuse_cuda = torch.cuda.is_available()\n\
                if use_cuda:\n    device = torch.device(\"cuda\")\nelse:\n    device = torch.device(\"cpu\")\n\n\
                def train(model, loader, opt):\n    for x, y in loader:\n        \
                loss = model(x.to(device)).sum()\n        loss.backward()\n        opt.step()\n";
    let (dir, _) = temp_with("train.py", text);
    let o = run(&["port", "train.py", "--to", "torch-xla", "--write"], dir.path());
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    let out = std::fs::read_to_string(dir.path().join("train.py")).unwrap();
    assert!(out.contains("\ndevice = torch_xla.device()\n"), "{out}");
    assert!(!out.contains("if use_cuda:"), "the CUDA branch is replaced, not nested into:\n{out}");
    assert!(out.contains("import torch_xla\n"), "{out}");
    assert!(out.contains("pl.MpDeviceLoader(loader, device)"), "{out}");
    assert!(out.contains("import torch_xla.distributed.parallel_loader as pl\n"), "{out}");
}

/// Every corpus script (real public training scripts, `crates/tpuport-lint/resources/corpus`)
/// ported twice through the CLI with `--write`, with and without `--preview`: the second port
/// reports no change and leaves the file byte for byte as the first wrote it.
#[test]
fn port_write_twice_changes_nothing_on_the_corpus() {
    let corpus = repo().join("crates/tpuport-lint/resources/corpus");
    let manifest = std::fs::read_to_string(corpus.join("MANIFEST.tsv")).unwrap();
    let rows: Vec<(String, String)> = manifest
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            (cols[0].to_owned(), cols[6].to_owned())
        })
        .collect();
    assert!(rows.len() >= 15, "{} corpus scripts", rows.len());
    let mut ported = 0;
    for (file, target) in &rows {
        for preview in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(file);
            std::fs::copy(corpus.join(file), &path).unwrap();
            let mut args = vec!["port", file.as_str(), "--to", target.as_str(), "--write"];
            if preview {
                args.push("--preview");
            }
            let o = run(&args, dir.path());
            assert!(o.status.code().is_some_and(|c| c <= 1), "{file}: {}", stderr(&o));
            let once = std::fs::read_to_string(&path).unwrap();
            ported += usize::from(once != std::fs::read_to_string(corpus.join(file)).unwrap());
            args.extend(["--format", "json"]);
            let o = run(&args, dir.path());
            assert!(o.status.code().is_some_and(|c| c <= 1), "{file}: {}", stderr(&o));
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let twice = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                once, twice,
                "{file}: a second `port --to {target} --write` (preview {preview}) changed the file"
            );
            assert_eq!(v["files"][0]["changed"], false, "{file} (preview {preview}): {v}");
            assert!(
                v["files"][0]["changes"].as_array().unwrap().is_empty(),
                "{file} (preview {preview}): {v}"
            );
        }
    }
    // The first port did rewrite: this is not a test of files the port leaves alone.
    assert!(ported >= rows.len(), "only {ported} of {} ports changed a file", 2 * rows.len());
}
