//! `docs/hardware.md` carries tables generated from the built-in catalog; they must match.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;

use tpuport_hw::{Catalog, catalog_markdown};

const BEGIN: &str = "<!-- BEGIN GENERATED: tpuport-hw catalog -->\n";
const END: &str = "<!-- END GENERATED: tpuport-hw catalog -->";
const REGENERATE: &str = "TPUPORT_UPDATE_DOCS=1 cargo test -p tpuport-hw --test docs";

#[test]
fn hardware_doc_tables_match_the_catalog() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/hardware.md");
    let want = catalog_markdown(&Catalog::builtin());
    tpuport_testkit::docs::check_region(&path, BEGIN, END, &want, REGENERATE);
}

#[test]
fn generated_tables_show_the_figures() {
    let md = catalog_markdown(&Catalog::builtin());
    assert!(md.contains("| `v5e` | TPU v5e |"), "{md}");
    assert!(md.contains("| 197 | 393 | – | 16 GiB | 819 GB/s | 400 GB/s |"), "{md}");
    assert!(md.contains("`v5litepod-8` = 2x4 (1)"), "{md}");
    assert!(md.contains("`v5p-8` = 2x2x1 (1)"), "{md}");
    assert!(md.contains("| `tpu7x` | 8 | 16 | 32 | 64 | 128 | 256 |"), "{md}");
    assert!(md.contains("2.70 (medium)"), "{md}");
}

#[test]
fn the_override_example_in_the_doc_loads() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/hardware.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("```toml\n# my-catalog.toml\n").expect("override example") + 8;
    let len = text[start..].find("```").unwrap();
    let cat =
        Catalog::builtin().with_overrides(&text[start..start + len], "my-catalog.toml").unwrap();
    let v6e = cat.chip("v6e").unwrap();
    assert_eq!(v6e.price.on_demand, Some(2.10));
    assert_eq!(v6e.source("price.on_demand"), Some("contract 2026-03"));
    assert_eq!(v6e.source("price.commit_1yr"), Some("user catalog `my-catalog.toml`"));
    assert_eq!(cat.chip("v9x").unwrap().peak.bf16, Some(5000e12));
}
