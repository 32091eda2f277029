//! Slice names: table-driven parsing, hosts and links, errors, and the per-generation lists.
#![allow(clippy::unwrap_used, reason = "tests")]

use tpuport_hw::Catalog;

#[test]
fn slice_names_parse() {
    let cat = Catalog::builtin();
    // name, accelerator type, topology, chips, TensorCores, hosts
    let cases: &[(&str, &str, &str, u32, u32, u32)] = &[
        ("v5e-8", "v5litepod-8", "2x4", 8, 8, 1),
        ("V5E-8", "v5litepod-8", "2x4", 8, 8, 1),
        ("v5litepod-16", "v5litepod-16", "4x4", 16, 16, 2),
        ("v5e-1", "v5litepod-1", "1x1", 1, 1, 1),
        ("v5e-2x2", "v5litepod-4", "2x2", 4, 4, 1),
        ("v5litepod-8x8", "v5litepod-64", "8x8", 64, 64, 8),
        ("v5e-256", "v5litepod-256", "16x16", 256, 256, 32),
        ("v6e-2x4", "v6e-8", "2x4", 8, 8, 1),
        ("v6e-1", "v6e-1", "1x1", 1, 1, 1),
        ("v6e-256", "v6e-256", "16x16", 256, 256, 32),
        ("v5p-8", "v5p-8", "2x2x1", 4, 8, 1),
        ("v5p-16", "v5p-16", "2x2x2", 8, 16, 2),
        ("v5p-2x4x4", "v5p-64", "2x4x4", 32, 64, 8),
        ("v5p-128", "v5p-128", "4x4x4", 64, 128, 16),
        ("v5p-12288", "v5p-12288", "16x16x24", 6144, 12288, 1536),
        ("v4-8", "v4-8", "2x2x1", 4, 8, 1),
        ("v4-2x2x1", "v4-8", "2x2x1", 4, 8, 1),
        ("v4-4096", "v4-4096", "8x16x16", 2048, 4096, 512),
        ("tpu7x-2", "tpu7x-2", "1x1x1", 1, 2, 1),
        ("tpu7x-8", "tpu7x-8", "2x2x1", 4, 8, 1),
        ("tpu7x-2x2x2", "tpu7x-16", "2x2x2", 8, 16, 2),
        ("tpu7x-128", "tpu7x-128", "4x4x4", 64, 128, 16),
    ];
    for &(name, accel, topo, chips, cores, hosts) in cases {
        let s = cat.slice(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.accelerator_type, accel, "{name}");
        assert_eq!(s.topology(), topo, "{name}");
        assert_eq!(s.chips, chips, "{name}");
        assert_eq!(s.tensorcores, Some(cores), "{name}");
        assert_eq!(s.hosts, hosts, "{name}");
        assert_eq!(s.multi_host(), hosts > 1, "{name}");
    }
}

#[test]
fn wraparound_and_links() {
    let cat = Catalog::builtin();
    // name, wraps, ICI links
    let cases: &[(&str, Option<&[bool]>, u64)] = &[
        ("v5e-1", Some(&[false, false]), 0),
        ("v5e-8", Some(&[false, false]), 10), // 2x4 mesh: 4*1 + 2*3
        ("v6e-8x16", Some(&[false, true]), 16 * 7 + 8 * 16),
        ("v5e-256", Some(&[true, true]), 2 * 16 * 16), // 4 ports per chip, all used
        ("v5p-8", Some(&[false, false, false]), 4),
        ("v5p-2x4x4", Some(&[false, false, false]), 16 + 24 + 24),
        ("v5p-128", Some(&[true, true, true]), 64 * 6 / 2), // full cube: 6 ports per chip
        ("v4-4x4x8", Some(&[true, true, true]), 128 * 6 / 2),
        ("tpu7x-8", None, 4), // TPU7x wraparound undocumented: mesh links only
    ];
    for &(name, wraps, links) in cases {
        let s = cat.slice(name).unwrap();
        assert_eq!(s.wraps.as_deref(), wraps, "{name}");
        assert_eq!(s.ici_links, links, "{name}");
    }
}

#[test]
fn bad_slice_names_say_what_is_valid() {
    let cat = Catalog::builtin();
    let cases = [
        ("v5e-7", "unknown slice `v5e-7`: TPU v5e slices are 1, 4, 8, 16, 32, 64, 128, 256 chips"),
        (
            "v5p-6",
            "unknown slice `v5p-6`: TPU v5p slice names count TensorCores (2 per chip, so `v5p-8` is 4 chips); valid counts are 8, 16, 32, 64, 128, 256, 384, 512, …, 12288",
        ),
        ("v5p-13824", "valid counts are 8, 16"),
        (
            "v5e-4x2",
            "unknown slice `v5e-4x2`: TPU v5e topologies are written `2x4`; did you mean `v5e-2x4`?",
        ),
        ("v5e-3x3", "TPU v5e topologies are 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
        ("v6e-2x2x1", "TPU v6e (Trillium) topologies are"),
        ("v5e-2x0", "`2x0` is not a topology"),
        ("v5e-abc", "`abc` is neither a count nor a topology"),
        (
            "v7-8",
            "unknown TPU type `v7`; slice names start with `v4`, `v5litepod`, `v5e`, `v5p`, `v6e`, `tpu7x`",
        ),
        ("trillium-8", "TPU v6e (Trillium) slices are named `v6e-N`, not `trillium-N`"),
        ("h100-8", "`NVIDIA H100 SXM5` has no slices"),
        ("v5e", "expected `<type>-<count>` or `<type>-<topology>`"),
        ("", "expected `<type>-<count>`"),
    ];
    for (name, want) in cases {
        let msg = cat.slice(name).unwrap_err().to_string();
        assert!(msg.contains(want), "for {name:?}\n  got:  {msg}\n  want: {want}");
        assert!(!msg.contains('\n'));
    }
}

#[test]
fn slice_lists_per_generation() {
    let cat = Catalog::builtin();
    for chip in cat.chips() {
        let slices = cat.slices(chip);
        if !chip.is_tpu() {
            assert!(slices.is_empty(), "{}", chip.id);
            continue;
        }
        assert!(!slices.is_empty(), "{}", chip.id);
        let mut last = 0;
        for s in &slices {
            assert!(s.chips > last, "{}: slices are listed smallest first", chip.id);
            last = s.chips;
            if let Some(max) = chip.max_slice_chips {
                assert!(s.chips <= max, "{} over the single-slice limit", s.accelerator_type);
            }
            assert!(s.hosts * s.chips_per_host >= s.chips);
            // Both spellings of every listed slice parse back to it.
            assert_eq!(&cat.slice(&s.accelerator_type).unwrap(), s);
            let by_topology = format!("{}-{}", chip.slice_prefixes[0], s.topology());
            assert_eq!(&cat.slice(&by_topology).unwrap(), s);
            if let (Some(wraps), Some(ports)) = (&s.wraps, chip.ici_ports) {
                // Links never exceed what the ports allow.
                assert!(
                    s.ici_links <= u64::from(s.chips) * u64::from(ports) / 2,
                    "{}",
                    s.accelerator_type
                );
                assert_eq!(wraps.len(), s.dims.len());
            }
        }
    }
    let v5e: Vec<String> =
        cat.slices(cat.chip("v5e").unwrap()).iter().map(|s| s.accelerator_type.clone()).collect();
    assert_eq!(
        v5e,
        [
            "v5litepod-1",
            "v5litepod-4",
            "v5litepod-8",
            "v5litepod-16",
            "v5litepod-32",
            "v5litepod-64",
            "v5litepod-128",
            "v5litepod-256"
        ]
    );
    let v4 = cat.slices(cat.chip("v4").unwrap());
    assert_eq!(v4.len(), 11);
    let v5p = cat.slices(cat.chip("v5p").unwrap());
    assert_eq!(v5p.first().unwrap().accelerator_type, "v5p-8");
    assert_eq!(v5p.last().unwrap().topology(), "16x16x24");
}

/// Slice names → libtpu topologies. Expected values from MaxText's `accelerator_to_spec_map.py`
/// (topology name, chip config, chips-per-host bounds, wrap) where it lists the slice; the
/// v5p prefix is `v5p` rather than MaxText's `v5` (libtpu 0.0.52 accepts both, same devices).
#[test]
fn compile_targets_follow_maxtext() {
    let cat = Catalog::builtin();
    // name, topology, chip config, bounds, wrap, devices
    type Row = (&'static str, &'static str, &'static str, [u32; 3], Option<[bool; 3]>, u32);
    let f = false;
    let t = true;
    let cases: &[Row] = &[
        ("v5e-8", "v5e:2x4", "default", [2, 2, 1], Some([f, f, f]), 8),
        ("v5e-4", "v5e:2x2", "default", [2, 2, 1], Some([f, f, f]), 4),
        ("v5e-1", "v5e:1x1", "default", [1, 1, 1], Some([f, f, f]), 1),
        ("v5e-128", "v5e:8x16", "default", [2, 2, 1], Some([f, t, f]), 128),
        ("v5e-256", "v5e:16x16", "default", [2, 2, 1], Some([t, t, f]), 256),
        ("v6e-1", "v6e:1x1", "default", [1, 1, 1], Some([f, f, f]), 1),
        ("v6e-8", "v6e:2x4", "default", [2, 2, 1], Some([f, f, f]), 8),
        ("v6e-256", "v6e:16x16", "default", [2, 2, 1], Some([t, t, f]), 256),
        // TensorCore-counting names: v4-8 and v5p-8 are 4 chips.
        ("v4-8", "v4:2x2x1", "megacore", [2, 2, 1], Some([f, f, f]), 4),
        ("v4-128", "v4:4x4x4", "megacore", [2, 2, 1], Some([t, t, t]), 64),
        ("v5p-8", "v5p:2x2x1", "megacore", [2, 2, 1], Some([f, f, f]), 4),
        ("v5p-16", "v5p:2x2x2", "megacore", [2, 2, 1], Some([f, f, f]), 8),
        // TPU7x: 2 devices per chip; wraparound undocumented, so left to libtpu.
        ("tpu7x-8", "tpu7x:2x2x1", "default", [2, 2, 1], None, 8),
    ];
    for &(name, topo, cfg, bounds, wrap, devices) in cases {
        let c = cat.compile_target(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.topology_name, topo, "{name}");
        assert_eq!(c.chip_config_name, cfg, "{name}");
        assert_eq!(c.chips_per_host_bounds, bounds, "{name}");
        assert_eq!(c.wrap, wrap, "{name}");
        assert_eq!(c.devices, devices, "{name}");
        assert_eq!(c.num_slices, 1, "{name}");
    }
    let v5e = cat.compile_target("v5e-8").unwrap();
    assert_eq!(v5e.hbm_per_device, Some(16.0 * (1u64 << 30) as f64));
    let x = cat.compile_target("tpu7x-8").unwrap();
    assert_eq!(x.hbm_per_device, Some(96.0 * (1u64 << 30) as f64));
}

#[test]
fn compile_target_errors_name_the_problem() {
    let cat = Catalog::builtin();
    let e = cat.compile_target("v5p-4").unwrap_err().to_string();
    assert!(e.contains("count TensorCores"), "{e}");
    let e = cat.compile_target("h100-8").unwrap_err().to_string();
    assert!(e.contains("h100"), "{e}");
}
