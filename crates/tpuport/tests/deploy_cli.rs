//! `tpuport deploy`: golden manifests for every mode (insta), each validated offline against
//! the Kubernetes OpenAPI schemas (`kubernetes-validate`) and the JobSet / LeaderWorkerSet /
//! PodMonitoring CRD schemas; the fit refusal names the smallest slice that fits and writes
//! nothing; `--format json` lists exactly the files written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

/// A one-model repository around the ONNX fixture `serve_cli` also serves (Y = X @ W + B).
fn repo(root: &Path) -> PathBuf {
    common::onnx_repo(&root.join("repo"), "")
}

fn deploy(args: &[&str]) -> common::Out {
    let mut a = vec!["--format", "json", "deploy"];
    a.extend_from_slice(args);
    common::tpuport(&a)
}

#[test]
fn golden_manifests_for_every_mode_validate_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path());
    let repo = repo.to_str().unwrap();
    let jax = common::fixtures().join("jax/mlp_b1/jit.mlir");
    let jax = jax.to_str().unwrap();
    // (case, model, flags): the slices of the acceptance list.
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        ("serve-v5e-1", repo, vec!["--serve", "--slice", "v5e-1"]),
        ("serve-v5e-4", repo, vec!["--serve", "--slice", "v5e-4"]),
        ("serve-v5e-8", repo, vec!["--serve", "--slice", "v5e-8", "--max-replicas", "8"]),
        ("serve-v5e-16", repo, vec!["--serve", "--slice", "v5e-16"]),
        (
            "train-v5p-8",
            jax,
            vec!["--train", "--slice", "v5p-8", "--train-command", "python3 train.py --steps 1000"],
        ),
        (
            "batch-v5e-4",
            repo,
            vec!["--batch", "--slice", "v5e-4", "--shards", "8", "--parallelism", "4"],
        ),
    ];
    let mut all = Vec::new();
    for (case, model, flags) in &cases {
        let out_dir = tmp.path().join(case);
        let mut args = vec![*model, "--gke", "--name", "lin", "-o", out_dir.to_str().unwrap()];
        args.extend(flags.iter().copied());
        let o = deploy(&args);
        assert_eq!(o.code, 0, "{case}: {}", o.stderr);
        let report: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(report["schema"], "tpuport.deploy/1");
        // The JSON lists exactly the files in the folder.
        let mut listed: Vec<String> = report["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect();
        listed.sort();
        let mut on_disk: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
        on_disk.sort();
        assert_eq!(listed, on_disk, "{case}");
        for f in &on_disk {
            let text = std::fs::read_to_string(f).unwrap();
            let file = Path::new(f).file_name().unwrap().to_str().unwrap();
            insta::assert_snapshot!(format!("{case}__{file}"), text);
            all.push(f.clone());
        }
    }
    // Multi-host serving is a LeaderWorkerSet of 4 four-chip hosts; the single-host ones are
    // Deployments with every chip of the slice on one pod.
    let lws =
        std::fs::read_to_string(tmp.path().join("serve-v5e-16/leaderworkerset.yaml")).unwrap();
    assert!(lws.contains("size: 4") && lws.contains("google.com/tpu: \"4\""), "{lws}");
    let d8 = std::fs::read_to_string(tmp.path().join("serve-v5e-8/deployment.yaml")).unwrap();
    assert!(
        d8.contains("google.com/tpu: \"8\"") && d8.contains("gke-tpu-topology: \"2x4\""),
        "{d8}"
    );
    // The LeaderWorkerSet pods' shell line gives libtpu every host of the group, from the
    // variables LWS sets (leader `lin-0.lin.ns`, workers `lin-0-1.lin.ns`, …).
    let hosts = tpuport_testkit::run_python(
        "import sys, yaml, subprocess\nd = yaml.safe_load(open(sys.argv[1]))\ncmd = d['spec']['leaderWorkerTemplate']['workerTemplate']['spec']['containers'][0]['command']\nline = cmd[2].replace('exec tpuport', 'echo $TPU_WORKER_HOSTNAMES; : ')\nenv = {'LWS_LEADER_ADDRESS': 'lin-0.lin.ns', 'LWS_GROUP_SIZE': '4', 'PATH': '/usr/bin:/bin'}\nprint(cmd[0], subprocess.run([cmd[0], cmd[1], line], env=env, capture_output=True, text=True, check=True).stdout.strip())",
        &[tmp.path().join("serve-v5e-16/leaderworkerset.yaml")],
    );
    assert_eq!(
        String::from_utf8_lossy(&hosts.stdout).trim(),
        "/bin/sh lin-0.lin.ns,lin-0-1.lin.ns,lin-0-2.lin.ns,lin-0-3.lin.ns"
    );
    let crds = tpuport_testkit::repo_root().join("crates/tpuport-deploy/tests/data/crd");
    let script = tpuport_testkit::repo_root().join("scripts/tools/validate_manifests.py");
    let out = std::process::Command::new(tpuport_testkit::python())
        .arg(&script)
        .arg("--crd-dir")
        .arg(&crds)
        .args(&all)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}\n(kubernetes-validate comes from `make deploy-venv`)",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("{} documents, 0 failed", all.len())), "{text}");
    for kind in ["LeaderWorkerSet", "JobSet", "PodMonitoring"] {
        assert!(
            text.lines().any(|l| l.starts_with("ok ")
                && l.contains(&format!(": {kind} "))
                && l.contains("(crd ")),
            "{kind} not checked against its CRD: {text}"
        );
    }
}

#[test]
fn the_validator_rejects_a_broken_manifest() {
    // The same check on a manifest with a misspelt field and a wrong type must fail: the
    // golden test above cannot pass by a validator that accepts everything.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\nspec:\n  complettions: 2\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: a\n        image: b\n---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: y\nspec:\n  replicatedJobs:\n  - name: s\n    replicas: \"two\"\n    template:\n      spec:\n        template:\n          spec:\n            containers: []\n",
    )
    .unwrap();
    let out = std::process::Command::new(tpuport_testkit::python())
        .arg(tpuport_testkit::repo_root().join("scripts/tools/validate_manifests.py"))
        .arg("--crd-dir")
        .arg(tpuport_testkit::repo_root().join("crates/tpuport-deploy/tests/data/crd"))
        .arg(&bad)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("complettions") && text.contains("2 documents, 2 failed"), "{text}");
}

#[test]
fn a_model_that_does_not_fit_is_refused_with_the_smallest_slice_that_fits() {
    // ResNet-50 at batch 4096 (batch inference): ~33 GiB of activations per copy, more than a
    // v5e chip's HBM; split over four chips it fits.
    let model = common::fixtures().join("torch/resnet50/dynamo.onnx");
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let args = [
        model.to_str().unwrap(),
        "--gke",
        "--batch",
        "--slice",
        "v5e-1",
        "--batch-size",
        "4096",
        "-o",
        out_dir.to_str().unwrap(),
    ];
    let o = deploy(&args);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("does not fit v5e-1"), "{}", o.stderr);
    assert!(o.stderr.contains("the smallest v5e slice that fits is v5litepod-4"), "{}", o.stderr);
    assert!(!out_dir.exists(), "nothing may be written when the fit is refused");
    // The slice it names does fit.
    let mut ok = args.to_vec();
    ok[4] = "v5e-4";
    let o = deploy(&ok);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let report: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(report["fit"][0]["fit"], "replicated");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path());
    let out = tmp.path().join("o");
    for (args, want) in [
        (vec!["--serve", "--slice", "v5e-3"], "v5e-3"),
        (vec!["--serve", "--slice", "v5e-8", "--name", "Bad_Name"], "--name"),
        (
            vec!["--serve", "--slice", "v5e-8", "--min-replicas", "5", "--max-replicas", "2"],
            "--min-replicas",
        ),
        (vec!["--batch", "--slice", "v5e-16"], "one host"),
        (vec!["--serve", "--slice", "v5e-8", "--name", "x"], "model repository"),
    ] {
        // The last case names the model folder, not the repository.
        let entry = repo.join("lin");
        let model = if want == "model repository" {
            entry.to_str().unwrap()
        } else {
            repo.to_str().unwrap()
        };
        let mut a = vec![model, "--gke", "-o", out.to_str().unwrap()];
        a.extend(args);
        let o = deploy(&a);
        assert_eq!(o.code, 2, "{a:?}: {}", o.stderr);
        assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.contains(want), "{a:?}: {}", o.stderr);
    }
    assert!(!out.exists());
}

#[cfg(unix)]
#[test]
fn a_model_path_that_leaves_the_repository_is_refused() {
    // The model file as a symlink to a copy outside the repository: refused as `tpuport serve`
    // refuses it (exec's confinement), one line, nothing written.
    let tmp = tempfile::tempdir().unwrap();
    let repo = repo(tmp.path());
    let model = repo.join("lin/external_data.onnx");
    let outside = tmp.path().join("outside.onnx");
    std::fs::rename(&model, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &model).unwrap();
    let out = tmp.path().join("o");
    for target in [repo.clone(), repo.join("lin")] {
        let o = deploy(&[
            target.to_str().unwrap(),
            "--gke",
            "--batch",
            "--slice",
            "v5e-1",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.code, 2, "{}", o.stderr);
        assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
        assert!(o.stderr.contains("outside the model repository"), "{}", o.stderr);
    }
    assert!(!out.exists());
}

/// The files under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_model_outside_a_repository_is_deployed_with_the_entry_written_for_it() {
    // An ONNX file with external data, --serve: the entry holds the model, its data file and a
    // config.toml that `tpuport serve` loads at the buckets asked for.
    let tmp = tempfile::tempdir().unwrap();
    let fx = common::fixtures().join("onnx_small");
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for f in ["external_data.onnx", "external_data.bin"] {
        std::fs::copy(fx.join(f), src.join(f)).unwrap();
    }
    let onnx = src.join("external_data.onnx");
    let out = tmp.path().join("o");
    let o = deploy(&[
        onnx.to_str().unwrap(),
        "--gke",
        "--serve",
        "--slice",
        "v5e-1",
        "--buckets",
        "2,4",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let report: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(report["repository"]["model"], "external_data");
    let entry = out.join("repository/external_data");
    assert_eq!(tree(&entry), ["config.toml", "external_data.bin", "external_data.onnx"]);
    assert_eq!(report["repository"]["files"].as_array().unwrap().len(), 3);
    // The autoscaler reads the queue depth of that model.
    let hpa = std::fs::read_to_string(out.join("horizontalpodautoscaler.yaml")).unwrap();
    assert!(hpa.contains("external_data"), "{hpa}");
    let mut child = common::command()
        .args(["serve", out.join("repository").to_str().unwrap(), "--port", "0", "--no-cache"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, lines, _err) = common::wait_ready(&mut child);
    let (st, meta) = common::http(&addr, "GET", "/v2/models/external_data", "");
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("model external_data loaded") && l.contains("buckets [2, 4]")),
        "{lines:?}"
    );
    assert_eq!(st, 200, "{meta}");

    // A `tpuport lower` folder, --batch: a `kind = "lowered"` entry with the manifest, every
    // bucket's module and the weights; the Job runs that model.
    let lowered = tmp.path().join("lin_lowered");
    let o = common::tpuport(&[
        "lower",
        onnx.to_str().unwrap(),
        "--input-shape",
        "X=Bx16",
        "--batch",
        "1,8",
        "-o",
        lowered.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let out = tmp.path().join("o2");
    let o = deploy(&[
        lowered.to_str().unwrap(),
        "--gke",
        "--batch",
        "--slice",
        "v5e-1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let entry = out.join("repository/lin_lowered");
    let mut want: Vec<String> = tree(&lowered).iter().map(|f| format!("lin_lowered/{f}")).collect();
    want.push("config.toml".to_owned());
    want.sort();
    assert_eq!(tree(&entry), want);
    let cfg = std::fs::read_to_string(entry.join("config.toml")).unwrap();
    assert!(cfg.contains("kind = \"lowered\"") && cfg.contains("path = \"lin_lowered\""), "{cfg}");
    let job = std::fs::read_to_string(out.join("job.yaml")).unwrap();
    assert!(job.contains("/lin_lowered"), "{job}");

    // A file that is no model: one line, exit 2, nothing written.
    let bad = src.join("notes.txt");
    std::fs::write(&bad, "x").unwrap();
    let out = tmp.path().join("o3");
    let o = deploy(&[
        bad.to_str().unwrap(),
        "--gke",
        "--serve",
        "--slice",
        "v5e-1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("notes.txt") && o.stderr.contains("not a model"), "{}", o.stderr);
    assert!(!out.exists());
}
