//! Plugin discovery where users install things, through `tpuport doctor`: a venv that is not
//! activated but whose `python3` is first on `PATH`, the environment the binary itself was
//! installed into (a wheel, `pip install --target`), `--python`, and an interpreter that has
//! to be asked for its site-packages (a pyenv shim). Each case runs in a scratch directory
//! with a clean environment, so the project's own `.venv` is not in reach.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const CPU_REL: &str = "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so";

/// The real CPU plugin (from the project venv), linked into fake layouts.
fn real_plugin() -> PathBuf {
    tpuport_pjrt::find_cpu().expect("CPU PJRT plugin not found: run `make venv`")
}

/// Puts a link to the real CPU plugin into `site`.
fn install_plugin(site: &Path) {
    let dst = site.join(CPU_REL);
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(real_plugin(), dst).unwrap();
}

/// An executable shell script.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A venv layout: `pyvenv.cfg`, `bin/python3` (never run: the layout is enough) and a
/// site-packages holding the CPU plugin. Returns the venv root.
fn fake_venv(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(root.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    script(&root.join("bin/python3"), "exit 3");
    install_plugin(&root.join("lib/python3.11/site-packages"));
    root.to_owned()
}

/// `tpuport doctor --no-python --format json` run by `exe` in `cwd` with only the given
/// environment (plus a HOME with nothing in it).
fn doctor(exe: &Path, cwd: &Path, env: &[(&str, String)], extra: &[&str]) -> serde_json::Value {
    let home = cwd.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(exe);
    c.env_clear().env("HOME", &home).env("NO_COLOR", "1").current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(["--format", "json", "doctor", "--no-python"]).args(extra);
    let o = common::output(&mut c);
    assert!(o.code == 0 || o.code == 1, "doctor failed ({}): {}", o.code, o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// The first plugin's source, and whether it opened a client with devices.
fn first(report: &serde_json::Value) -> (String, bool) {
    let p = &report["plugins"][0];
    (p["source"].as_str().unwrap_or("<none>").to_owned(), p["devices"].as_u64().unwrap_or(0) > 0)
}

/// The binary linked (or copied) into `<prefix>/bin/tpuport`, as a wheel installs it.
fn place_binary(prefix: &Path) -> PathBuf {
    let dst = prefix.join("bin/tpuport");
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let src = common::binary();
    if std::fs::hard_link(&src, &dst).is_err() {
        std::fs::copy(&src, &dst).unwrap();
    }
    dst
}

/// The binary placed in a prefix with no site-packages, so that "next to the binary" finds
/// nothing even when the binary under test came from a wheel whose environment has the plugin
/// (`make test-wheel`).
fn bare_binary(tmp: &Path) -> PathBuf {
    place_binary(&tmp.join("bare"))
}

#[test]
fn venv_not_activated_but_first_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let venv = fake_venv(&tmp.path().join("proj/venv"));
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let r = doctor(&bare_binary(tmp.path()), tmp.path(), &[("PATH", path)], &[]);
    let (source, usable) = first(&r);
    assert!(source.starts_with("python3 on PATH"), "source {source}; report {r:#}");
    assert!(usable, "the plugin found must open a client: {r:#}");
    let searched = r["searched"].as_array().unwrap();
    assert!(
        searched.iter().any(|s| s["why"].as_str().unwrap().starts_with("python3 on PATH")),
        "doctor must say where it looked: {r:#}"
    );
}

#[test]
fn environment_of_the_binary_comes_first() {
    let tmp = tempfile::tempdir().unwrap();
    // The binary's own environment has the plugin, and so does a venv on PATH: the binary's
    // environment wins.
    let env = tmp.path().join("env");
    install_plugin(&env.join("lib/python3.12/site-packages"));
    let exe = place_binary(&env);
    let other = fake_venv(&tmp.path().join("other"));
    let path = format!("{}:/usr/bin:/bin", other.join("bin").display());
    let (source, usable) = first(&doctor(&exe, tmp.path(), &[("PATH", path)], &[]));
    assert_eq!(source, "next to the binary");
    assert!(usable);
}

#[test]
fn pip_install_target_layout() {
    // `pip install --target DIR tpuport[cpu]`: DIR/bin/tpuport, DIR/tpuport/, DIR/xla_plugins/.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("target-dir");
    install_plugin(&dir);
    std::fs::create_dir_all(dir.join("tpuport")).unwrap();
    std::fs::write(dir.join("tpuport/__init__.py"), "").unwrap();
    let exe = place_binary(&dir);
    let (source, _) = first(&doctor(&exe, tmp.path(), &[("PATH", "/usr/bin:/bin".into())], &[]));
    assert_eq!(source, "next to the binary");
}

#[test]
fn python_option_and_asked_interpreter() {
    let tmp = tempfile::tempdir().unwrap();
    // A shim outside any prefix layout (like pyenv's): it must be asked, and answers with a
    // site-packages that holds the plugin.
    let site = tmp.path().join("somewhere/site-packages");
    install_plugin(&site);
    let shim = tmp.path().join("shims/python3");
    script(&shim, &format!("printf '%s\\n' '{}'", site.display()));
    let exe = bare_binary(tmp.path());
    let r = doctor(
        &exe,
        tmp.path(),
        &[("PATH", "/usr/bin:/bin".into())],
        &["--python", shim.to_str().unwrap()],
    );
    let (source, usable) = first(&r);
    assert!(source.starts_with("--python"), "source {source}; report {r:#}");
    assert!(usable);
    // The same shim first on PATH, without --python: found by asking it.
    let path = format!("{}:/usr/bin:/bin", shim.parent().unwrap().display());
    let (source, _) = first(&doctor(&exe, tmp.path(), &[("PATH", path)], &[]));
    assert!(source.starts_with("python3 on PATH"), "{source}");
}

#[test]
fn nothing_found_says_where_it_looked() {
    let tmp = tempfile::tempdir().unwrap();
    let shim = tmp.path().join("bin/python3");
    script(&shim, "exit 1");
    let model = tmp.path().join("m.mlir");
    std::fs::write(
        &model,
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n",
    )
    .unwrap();
    let mut c = Command::new(bare_binary(tmp.path()));
    c.env_clear()
        .env("HOME", tmp.path())
        .env("NO_COLOR", "1")
        .env("PATH", shim.parent().unwrap())
        .current_dir(tmp.path())
        .arg("bench")
        .arg(&model);
    let o = common::output(&mut c);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
    assert!(o.stderr.contains("no PJRT plugin found (looked in:"), "{}", o.stderr);
}

/// A fake libtpu (not a library: discovery goes by path) at `<dir>/<version>/libtpu/libtpu.so`.
fn unpacked_libtpu(dir: &Path, version: &str) -> PathBuf {
    let lib = dir.join(version).join("libtpu/libtpu.so");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    std::fs::write(&lib, b"not a library").unwrap();
    lib
}

#[test]
fn make_libtpu_folders_are_found_after_the_other_plugins() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    // A checkout where `make libtpu` ran: .cache/libtpu/<version>/, two versions (0.0.10 is
    // the newer, though it sorts first as text); tpuport runs in a folder below it, with a
    // venv holding the CPU plugin first on PATH.
    let proj = root.join("proj");
    let _old = unpacked_libtpu(&proj.join(".cache/libtpu"), "0.0.9");
    let new = unpacked_libtpu(&proj.join(".cache/libtpu"), "0.0.10");
    let venv = fake_venv(&root.join("venv"));
    let cwd = proj.join("src/deep");
    std::fs::create_dir_all(&cwd).unwrap();
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let exe = bare_binary(&root);
    let r = doctor(&exe, &cwd, &[("PATH", path.clone())], &[]);
    let plugins = r["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 2, "{r:#}");
    // The CPU plugin stays first (what `run` and `bench` take); libtpu is listed last.
    assert!(plugins[0]["source"].as_str().unwrap().starts_with("python3 on PATH"), "{r:#}");
    assert_eq!(plugins[1]["path"].as_str().unwrap(), new.to_str().unwrap(), "{r:#}");
    assert_eq!(plugins[1]["kind"], "tpu");
    let why = format!(".cache/libtpu in {} (make libtpu)", proj.display());
    assert_eq!(plugins[1]["source"].as_str().unwrap(), why, "{r:#}");
    let searched = r["libtpu_searched"].as_array().unwrap();
    assert_eq!(searched.len(), 2, "{r:#}");
    assert_eq!(searched[0]["why"].as_str().unwrap(), why);
    assert!(searched[1]["why"].as_str().unwrap().ends_with(", not present"), "{r:#}");

    // The user cache ($XDG_CACHE_HOME/tpuport/libtpu), where `make libtpu` unpacks it, from a
    // folder with no .cache/libtpu above it.
    let xdg = root.join("xdg");
    let cached = unpacked_libtpu(&xdg.join("tpuport/libtpu"), "0.0.52");
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let env = [("PATH", path), ("XDG_CACHE_HOME", xdg.to_str().unwrap().to_owned())];
    let r = doctor(&exe, &elsewhere, &env, &[]);
    let tpu: Vec<&serde_json::Value> =
        r["plugins"].as_array().unwrap().iter().filter(|p| p["kind"] == "tpu").collect();
    assert_eq!(tpu.len(), 1, "{r:#}");
    assert_eq!(tpu[0]["path"].as_str().unwrap(), cached.to_str().unwrap());
    assert_eq!(tpu[0]["source"], "tpuport's user cache (make libtpu)");

    // `compile` takes it without --plugin: this fake fails to load, and the one-line error
    // names the file discovery picked.
    let model = root.join("m.mlir");
    std::fs::write(
        &model,
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n",
    )
    .unwrap();
    let mut c = Command::new(&exe);
    c.env_clear().env("HOME", root.join("home")).env("NO_COLOR", "1").current_dir(&cwd);
    c.env("PATH", "/usr/bin:/bin").args(["compile", model.to_str().unwrap(), "--target", "v5e-1"]);
    let o = common::output(&mut c);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains(new.to_str().unwrap()), "{}", o.stderr);
}

/// A JAX user's venv on a machine without a TPU: `pip install jax[tpu]` put libtpu into
/// site-packages (found first), and the CPU plugin sits beside it. Every execution verb skips
/// libtpu with one line naming it and the plugin used, and runs on the CPU plugin; `--plugin`
/// still forces libtpu (and fails as libtpu does there); `doctor` lists both.
#[test]
fn a_jax_tpu_venv_without_a_tpu_runs_on_its_cpu_plugin() {
    let Some(libtpu) = tpuport_testkit::libtpu("a_jax_tpu_venv_without_a_tpu") else { return };
    if tpuport_pjrt::tpu_hardware_present() {
        eprintln!("a_jax_tpu_venv_without_a_tpu: this machine has a TPU; libtpu wins here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let venv = fake_venv(&root.join("venv"));
    let site = venv.join("lib/python3.11/site-packages");
    std::fs::create_dir_all(site.join("libtpu")).unwrap();
    std::os::unix::fs::symlink(&libtpu, site.join("libtpu/libtpu.so")).unwrap();
    let cpu = real_plugin().canonicalize().unwrap();
    let tpu = libtpu.canonicalize().unwrap();
    let exe = bare_binary(&root);
    let env = [("VIRTUAL_ENV", venv.to_str().unwrap().to_owned())];

    let r = doctor(&exe, &root, &env, &[]);
    let kinds: Vec<&str> =
        r["plugins"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tpu", "cpu"], "libtpu is found first, the CPU plugin after: {r:#}");

    let model = root.join("m.mlir");
    std::fs::write(
        &model,
        "func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n  \
         %0 = stablehlo.add %a, %a : tensor<2x3xf32>\n  return %0 : tensor<2x3xf32>\n}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut c = Command::new(&exe);
        c.env_clear().env("HOME", root.join("home")).env("NO_COLOR", "1").current_dir(&root);
        c.env("PATH", "/usr/bin:/bin").env("VIRTUAL_ENV", &venv);
        c.args(["bench", model.to_str().unwrap(), "--iters", "2", "--no-cache"]).args(extra);
        common::output(&mut c)
    };
    let o = run(&[]);
    assert_eq!(o.code, 0, "bench must run on the CPU plugin: {}", o.stderr);
    let notes: Vec<&str> = o.stderr.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(notes.len(), 1, "one line about the skipped plugin: {}", o.stderr);
    let note = notes[0];
    assert!(note.contains(tpu.to_str().unwrap()), "names libtpu: {note}");
    assert!(note.contains("no TPU devices"), "says why: {note}");
    assert!(note.ends_with(&format!("using {}", cpu.display())), "names the plugin used: {note}");

    // --plugin forces libtpu, which has no device here: the error of that plugin, exit 2.
    let o = run(&["--plugin", tpu.to_str().unwrap()]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("no TPU devices"), "{}", o.stderr);
    assert!(!o.stderr.contains("skipped"), "a forced plugin is not skipped: {}", o.stderr);
}
