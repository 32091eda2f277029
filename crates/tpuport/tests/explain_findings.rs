//! `tpuport explain` knows the audit finding codes (`AUDnnn`) next to the lint codes, and prints
//! the same page as `docs/findings/CODE.md`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

mod common;

#[test]
fn explain_audit_codes() {
    let o = common::tpuport(&["explain", "aud101"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let page =
        std::fs::read_to_string(tpuport_testkit::repo_root().join("docs/findings/AUD101.md"))
            .unwrap();
    assert_eq!(o.stdout.trim_end(), page.trim_end());
    assert!(o.stdout.contains("## Why it hurts on TPU"));

    let o = common::tpuport(&["--format", "json", "explain", "AUD402"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["registry"], "audit");
    assert_eq!(v["code"], "AUD402");

    let o = common::tpuport(&["explain", "--all"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for code in ["TPU101", "AUD101", "AUD305", "AUD501"] {
        assert!(o.stdout.lines().any(|l| l.starts_with(code)), "{code} missing from --all");
    }

    let o = common::tpuport(&["explain", "AUD999"]);
    assert_eq!(o.code, 2, "{}", o.stdout);
}
