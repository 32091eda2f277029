//! Records the git commit the binary is built from (`tpuport --version`). Outside a git
//! checkout (a source distribution) it is `$TPUPORT_GIT_COMMIT` if set, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=TPUPORT_GIT_COMMIT");
    let commit = std::env::var("TPUPORT_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    // Rebuild when HEAD moves: the HEAD file (branch switches) and the branch's ref file
    // (commits), wherever git keeps them (worktrees have their own HEAD).
    for path in [git(&["rev-parse", "--git-path", "HEAD"]), head_ref_path()].into_iter().flatten() {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rustc-env=TPUPORT_GIT_COMMIT={commit}");
}

fn head_ref_path() -> Option<String> {
    let name = git(&["symbolic-ref", "-q", "HEAD"])?;
    git(&["rev-parse", "--git-path", &name])
}
