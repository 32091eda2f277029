//! The built-in catalog: every chip loads, every figure has a source, aliases resolve, and user
//! override files work or fail with a one-line error naming the field.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::io::Write as _;

use tpuport_hw::{Catalog, ChipKind, Confidence, HwError, TopologyFamily};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[test]
fn every_chip_loads() {
    let cat = Catalog::builtin();
    let ids: Vec<&str> = cat.chips().iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["v4", "v5e", "v5p", "v6e", "tpu7x", "a100", "h100", "h200"]);
    for chip in cat.chips() {
        assert!(chip.peak.bf16.is_some(), "{} has a bf16 peak", chip.id);
        assert!(chip.hbm_capacity.is_some() && chip.hbm_bandwidth.is_some(), "{}", chip.id);
        assert!(chip.interconnect_bandwidth().is_some() || chip.id == "v4", "{}", chip.id);
    }
}

#[test]
fn every_figure_has_a_source_and_every_tag_resolves() {
    let cat = Catalog::builtin();
    for chip in cat.chips() {
        let keys = chip.figure_keys();
        assert!(keys.len() >= 8, "{} has few figures: {keys:?}", chip.id);
        for key in keys {
            let source =
                chip.source(key).unwrap_or_else(|| panic!("{}: `{key}` has no source", chip.id));
            assert!(
                source.contains('§'),
                "{}: `{key}` source names no section of tpu-hardware.md: {source}",
                chip.id
            );
        }
        let vm_sources = chip.vms.iter().map(|v| v.source.as_str());
        for source in chip.sources().map(|(_, s)| s).chain(vm_sources) {
            for tag in tags(source) {
                assert!(
                    cat.reference(tag).is_some(),
                    "{}: source tag [{tag}] not in [references]",
                    chip.id
                );
            }
        }
    }
}

/// `[G-v5e]`-style tags in a source string.
fn tags(source: &str) -> Vec<&str> {
    source
        .split('[')
        .skip(1)
        .filter_map(|s| s.split_once(']').map(|(t, _)| t))
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        .collect()
}

#[test]
fn figures_match_the_reference() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    assert_eq!(v5e.peak.bf16, Some(197e12));
    assert_eq!(v5e.peak.fp8, None, "v5e has no native fp8 (§1)");
    assert_eq!(v5e.hbm_capacity, Some(16.0 * GIB));
    assert_eq!(v5e.hbm_bandwidth, Some(819e9));
    assert_eq!(v5e.chips_per_host, Some(8));
    assert_eq!(v5e.vms.len(), 3);
    let v5p = cat.chip("v5p").unwrap();
    assert_eq!(v5p.hbm_capacity, Some(95.0 * GIB));
    assert_eq!(v5p.hbm_bandwidth, Some(2765e9));
    assert_eq!(v5p.max_slice_chips, Some(6144));
    let v6e = cat.chip("v6e").unwrap();
    assert_eq!(v6e.mxu_size, Some(256));
    assert_eq!(v6e.hbm_usable, Some(31.25 * GIB));
    assert_eq!(v6e.price.on_demand, Some(2.70));
    let x7 = cat.chip("tpu7x").unwrap();
    assert_eq!(x7.peak.fp8, Some(4614e12));
    assert_eq!(x7.peak.int8, None, "TPU7x int8 is not listed (§14.6)");
    assert_eq!(x7.mxus_per_tensorcore, None, "TPU7x MXU count is not documented");
    assert_eq!(x7.price.on_demand, None);
    assert_eq!(x7.devices_per_chip, Some(2));
    assert_eq!(x7.topology, Some(TopologyFamily::Mesh3d));
    let h200 = cat.chip("h200").unwrap();
    assert_eq!(h200.kind, ChipKind::Gpu);
    assert_eq!(h200.hbm_capacity, Some(141e9));
    assert_eq!(h200.tiling, None);
    assert!(
        cat.chips()
            .iter()
            .filter(|c| c.price.on_demand.is_some())
            .all(|c| c.price.confidence.is_some())
    );
}

#[test]
fn builtin_text_is_a_complete_catalog() {
    let cat = Catalog::from_toml_str(tpuport_hw::BUILTIN_TOML, "built-in")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cat.chips().len(), Catalog::builtin().chips().len());
}

#[test]
fn citations_expand_tags_and_budgets_follow_the_reference() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    let cite = cat.cite(v5e, "peak.bf16").unwrap();
    assert_eq!(cite, "§1 [G-v5e] (https://docs.cloud.google.com/tpu/docs/v5e)");
    assert_eq!(cat.cite(v5e, "peak.fp8"), None);
    assert_eq!(v5e.hbm_budget(), Some(16.0 * GIB * 0.97));
    assert_eq!(cat.chip("v6e").unwrap().hbm_budget(), Some(31.25 * GIB));
}

#[test]
fn aliases_resolve() {
    let cat = Catalog::builtin();
    for (name, id) in [
        ("v5litepod", "v5e"),
        ("TPU v5 lite", "v5e"),
        ("trillium", "v6e"),
        ("Trillium", "v6e"),
        ("TPU v6 lite", "v6e"),
        ("ironwood", "tpu7x"),
        ("7x", "tpu7x"),
        ("TPU v5", "v5p"),
        ("tpu-v4-podslice", "v4"),
        ("H100-SXM", "h100"),
        ("nvidia-h200-141gb", "h200"),
        ("  v6e ", "v6e"),
    ] {
        assert_eq!(cat.chip(name).unwrap().id, id, "{name}");
    }
    let err = cat.chip("v9").unwrap_err().to_string();
    assert_eq!(err, "unknown chip `v9`; known chips: v4, v5e, v5p, v6e, tpu7x, a100, h100, h200");
}

fn write(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn override_changes_a_price_and_adds_a_chip() {
    let f = write(
        r#"
[[chip]]
id = "trillium"          # an alias names the chip to change
price.on_demand = "2.10 USD/h"

[[chip]]
id = "v5e"
price.on_demand = "0.95 USD/h"
price.confidence = "medium"
sources."price.on_demand" = "our negotiated rate, 2026"

[[chip]]
id = "v9x"
name = "TPU v9x (test)"
kind = "tpu"
peak.bf16 = "5000 TFLOP/s"
hbm_capacity = "256 GiB"
"#,
    );
    let cat = Catalog::from_file(f.path()).unwrap();
    let v6e = cat.chip("v6e").unwrap();
    assert_eq!(v6e.price.on_demand, Some(2.10));
    assert_eq!(v6e.price.confidence, Some(Confidence::User));
    assert!(v6e.source("price.on_demand").unwrap().starts_with("user catalog `"));
    assert_eq!(v6e.price.commit_1yr, Some(1.89), "untouched fields stay");
    assert_eq!(v6e.peak.bf16, Some(918e12));
    let v5e = cat.chip("v5litepod").unwrap();
    assert_eq!(v5e.price.on_demand, Some(0.95));
    assert_eq!(v5e.price.confidence, Some(Confidence::Medium));
    assert_eq!(v5e.source("price.on_demand"), Some("our negotiated rate, 2026"));
    let v9 = cat.chip("v9x").unwrap();
    assert_eq!(v9.hbm_capacity, Some(256.0 * GIB));
    assert!(v9.source("peak.bf16").is_some());
    assert_eq!(cat.chips().len(), 9);
    assert_eq!(cat.origins().len(), 2);
    // The built-in catalog itself is unchanged.
    assert_eq!(Catalog::builtin().chip("v6e").unwrap().price.on_demand, Some(2.70));
}

fn override_error(text: &str) -> String {
    let f = write(text);
    let err = Catalog::from_file(f.path()).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    let name = f.path().display().to_string();
    assert!(msg.contains(&name), "names the file: {msg}");
    msg
}

#[test]
fn bad_override_files_name_the_field() {
    let cases = [
        (
            "[[chip]]\nid = \"v5e\"\nhbm_capacty = \"16 GiB\"\n",
            "chip `v5e`: field `hbm_capacty`: unknown field; did you mean `hbm_capacity`?",
        ),
        (
            "[[chip]]\nid = \"v5e\"\nprice.on_demand = \"cheap\"\n",
            "chip `v5e`: field `price.on_demand`: `cheap` does not start with a number",
        ),
        (
            "[[chip]]\nid = \"v5e\"\nhbm_bandwidth = \"819 GBps\"\n",
            "field `hbm_bandwidth`: unknown unit `GBps`",
        ),
        (
            "[[chip]]\nid = \"v5e\"\nchips_per_host = -8\n",
            "field `chips_per_host`: `-8` must be a positive integer",
        ),
        ("[[chip]]\nid = \"v5e\"\ntopology = \"ring\"\n", "field `topology`: `ring` is not one of"),
        (
            "[[chip]]\nid = \"v5e\"\nsources.\"peak.bf61\" = \"x\"\n",
            "field `sources.peak.bf61`: names no field",
        ),
        ("[[chip]]\nid = \"new\"\nname = \"New\"\n", "chip `new`: field `kind`: is required"),
        (
            "[[chip]]\nid = \"new\"\nname = \"New\"\nkind = \"tpu\"\naliases = [\"trillium\"]\n",
            "chip `new`: field `aliases`: `trillium` is already a name of chip `v6e`",
        ),
        ("[[chip]]\nname = \"no id\"\n", "field `id`"),
        (
            "[[chip]]\nid = \"v5e\"\nslices = [\"2x2x2\"]\n",
            "field `slices`: `2x2x2` has 3 dimensions",
        ),
        (
            "[[chip]]\nid = \"new\"\nname = \"N\"\nkind = \"tpu\"\n[chip.tiling]\nlanes = 128\n",
            "chip `new`: field `tiling.rows_32bit`: is required",
        ),
        (
            "[[chip]]\nid = \"v5e\"\n[[chip.vm]]\nmachine_type = \"x\"\n",
            "field `vm[0].chips`: is required",
        ),
        ("[[chip]]\nid = \"v5e\"\nprice = 3\n", "field `price`: expected a table"),
        (
            "[[chip]]\nid = \"v5e\"\npeak.bf17 = 1\n",
            "field `peak.bf17`: unknown field; did you mean `peak.bf16`?",
        ),
        ("[[chip]]\nid = \"v5e\"\nzzzzzzzzzz = 1\n", "known fields here: `id`, `name`"),
        ("chips = []\n", "unknown top-level key `chips`"),
        ("schema = 2\n", "`schema = 2` is not supported"),
        ("[[chip]]\nid = \"v5e\"\nname = \n", "line 3"),
    ];
    for (text, want) in cases {
        let msg = override_error(text);
        assert!(msg.contains(want), "for {text:?}\n  got:  {msg}\n  want: {want}");
    }
}

#[test]
fn missing_and_oversized_files_are_errors() {
    let err = Catalog::from_file("/nonexistent/catalog.toml").unwrap_err();
    assert!(matches!(err, HwError::Io { .. }));
    assert_eq!(err.to_string(), "cannot read catalog `/nonexistent/catalog.toml`");
    let big = write(&"#".repeat(usize::try_from(tpuport_hw::MAX_CATALOG_BYTES).unwrap() + 1));
    let err = Catalog::from_file(big.path()).unwrap_err();
    assert!(matches!(err, HwError::TooLarge { .. }), "{err}");
}

#[test]
fn a_standalone_catalog_needs_sources() {
    let text = "[[chip]]\nid = \"x\"\nname = \"X\"\nkind = \"gpu\"\ntdp = \"300 W\"\n";
    let err = Catalog::from_toml_str(text, "mine.toml").unwrap_err().to_string();
    assert_eq!(
        err,
        "catalog `mine.toml`: chip `x`: field `tdp`: has no source; add `sources.\"tdp\" = \"…\"`"
    );
    let ok = format!("{text}sources.tdp = \"datasheet\"\n");
    let cat = Catalog::from_toml_str(&ok, "mine.toml").unwrap();
    assert_eq!(cat.chip("x").unwrap().tdp, Some(300.0));
}
