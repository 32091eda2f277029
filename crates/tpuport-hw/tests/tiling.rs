//! Tiling and padding: the examples of `tpu-hardware.md` §9 and the MXU rules.
#![allow(clippy::unwrap_used, reason = "tests")]
#![allow(clippy::float_cmp, reason = "exact ratios of small integers")]

use tpuport_hw::tiling::{self, pad, row_tile};
use tpuport_hw::{Catalog, HwError, Placement, matmul_utilization, padded_bytes, padded_shape};
use tpuport_model::DType;

#[test]
fn f32_1x1_is_a_compact_tile_in_memory_and_a_full_tile_in_registers() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    // Memory: the compact 2nd-minor layout tiles a second-minor dim of 1-2 by 2x128 [XLA-tile].
    assert_eq!(padded_shape(&[1, 1], DType::F32, v5e).unwrap(), [2, 128]);
    assert_eq!(padded_bytes(&[1, 1], DType::F32, v5e).unwrap(), 1024);
    // Vector compute: "adding two 1x1 arrays costs as much as adding two 8x128 arrays".
    let v = pad(&[1, 1], DType::F32, v5e, Placement::Vector).unwrap();
    assert_eq!(v.padded, [8, 128]);
    assert_eq!(v.padded_bytes, 4096, "one 8x128 f32 tile is 4 KiB");
    assert_eq!(v.logical_bytes, 4);
}

#[test]
fn padding_examples() {
    let cat = Catalog::builtin();
    // chip, shape, dtype, padded shape, padded bytes
    type Case<'a> = (&'a str, &'a [u64], DType, &'a [u64], u64);
    let cases: &[Case<'_>] = &[
        ("v5e", &[32, 100], DType::BF16, &[32, 128], 32 * 128 * 2),
        ("tpu7x", &[32, 100], DType::BF16, &[32, 128], 32 * 128 * 2),
        ("v5e", &[8, 128], DType::BF16, &[8, 128], 8 * 128 * 2),
        ("tpu7x", &[8, 128], DType::BF16, &[16, 128], 16 * 128 * 2), // 16-row bf16 tiles on 7x
        ("v6e", &[9, 128], DType::BF16, &[16, 128], 16 * 128 * 2),
        ("v5e", &[9, 129], DType::F32, &[16, 256], 16 * 256 * 4),
        ("v5e", &[3, 5], DType::F32, &[4, 128], 4 * 128 * 4), // compact 4x128
        ("v5e", &[5, 5], DType::F32, &[8, 128], 8 * 128 * 4),
        ("v5p", &[40, 256], DType::I8, &[64, 256], 64 * 256),
        ("v5p", &[40, 256], DType::F8E4M3FN, &[64, 256], 64 * 256),
        ("v6e", &[65, 1], DType::I4, &[128, 128], 128 * 128 / 2),
        ("v4", &[2, 7, 9, 130], DType::F32, &[2, 7, 16, 256], 2 * 7 * 16 * 256 * 4),
        ("v5e", &[16, 128], DType::Bool, &[16, 128], 16 * 128 * 4), // PRED is 4 bytes
        ("v5e", &[0, 128], DType::F32, &[0, 128], 0),
    ];
    for &(chip, shape, dtype, want, bytes) in cases {
        let chip = cat.chip(chip).unwrap();
        let p = pad(shape, dtype, chip, Placement::Memory).unwrap();
        assert_eq!(p.padded, want, "{} {shape:?} {dtype}", chip.id);
        assert_eq!(p.padded_bytes, bytes, "{} {shape:?} {dtype}", chip.id);
    }
}

#[test]
fn row_tiles_per_generation() {
    let cat = Catalog::builtin();
    for chip in cat.chips().iter().filter(|c| c.is_tpu()) {
        let bf16 = row_tile(DType::BF16, chip).unwrap();
        assert_eq!(bf16, if chip.id == "tpu7x" { 16 } else { 8 }, "{}", chip.id);
        assert_eq!(row_tile(DType::F32, chip).unwrap(), 8);
        assert_eq!(row_tile(DType::I8, chip).unwrap(), 32);
        assert_eq!(row_tile(DType::U4, chip).unwrap(), 64);
        let mxu = chip.mxu_size.unwrap();
        assert_eq!(mxu, if chip.generation.unwrap() >= 6 { 256 } else { 128 }, "{}", chip.id);
    }
}

#[test]
fn batch_one_activation_waste() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    let mem = pad(&[1, 4096], DType::BF16, v5e, Placement::Memory).unwrap();
    assert_eq!(mem.padded, [2, 4096]);
    assert_eq!(mem.waste(), 0.5);
    let reg = pad(&[1, 4096], DType::BF16, v5e, Placement::Vector).unwrap();
    assert_eq!(reg.padded, [8, 4096]);
    assert_eq!(reg.waste(), 0.875);
    let mm = matmul_utilization(1, 4096, 4096, v5e).unwrap();
    assert_eq!(mm.padded, [8, 4096, 4096]);
    assert_eq!(mm.utilization, 0.125, "batch 1 fills one row of eight");
    let mm = matmul_utilization(128, 4096, 4096, v5e).unwrap();
    assert_eq!(mm.utilization, 1.0);
}

#[test]
fn mxu_256_needs_twice_the_dims() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    let v6e = cat.chip("v6e").unwrap();
    assert_eq!(matmul_utilization(128, 128, 128, v5e).unwrap().utilization, 1.0);
    let mm = matmul_utilization(128, 128, 128, v6e).unwrap();
    assert_eq!(mm.padded, [128, 256, 256]);
    assert_eq!(mm.utilization, 0.25);
    let mm = matmul_utilization(100, 100, 100, v6e).unwrap();
    assert_eq!(mm.padded, [104, 256, 256]);
    assert!((mm.utilization - (100.0 / 104.0) * (100.0 / 256.0) * (100.0 / 256.0)).abs() < 1e-12);
    assert_eq!(matmul_utilization(0, 8, 8, v6e).unwrap().utilization, 0.0);
}

#[test]
fn approximations_are_marked() {
    let cat = Catalog::builtin();
    let v5e = cat.chip("v5e").unwrap();
    let exact = pad(&[8, 128], DType::F32, v5e, Placement::Memory).unwrap();
    assert_eq!(exact.approximation, None);
    let rank1 = pad(&[1000], DType::F32, v5e, Placement::Memory).unwrap();
    assert_eq!(rank1.padded, [2, 1024]);
    assert!(rank1.approximation.unwrap().contains("rank-0 and rank-1"));
    let scalar = pad(&[], DType::F32, v5e, Placement::Vector).unwrap();
    assert_eq!(scalar.padded, [8, 128]);
    assert!(pad(&[8, 128], DType::F64, v5e, Placement::Memory).unwrap().approximation.is_some());
    assert!(pad(&[8, 128], DType::Bool, v5e, Placement::Memory).unwrap().approximation.is_some());
}

#[test]
fn errors() {
    let cat = Catalog::builtin();
    let h100 = cat.chip("h100").unwrap();
    let err = padded_shape(&[8, 128], DType::F32, h100).unwrap_err();
    assert_eq!(err.to_string(), "chip `h100` has no TPU tiling rules");
    assert!(matmul_utilization(8, 8, 8, h100).is_err());
    let v5e = cat.chip("v5e").unwrap();
    let err = padded_bytes(&[2, 2], DType::String, v5e).unwrap_err();
    assert!(matches!(err, HwError::UnsupportedDtype { .. }), "{err}");
    let err = padded_bytes(&[u64::MAX, 3, 200], DType::F32, v5e).unwrap_err();
    assert!(matches!(err, HwError::Overflow { .. }), "{err}");
    assert!(tiling::element_bits(DType::String).is_err());
}

/// A channels-first activation laid out feature-minor, as libtpu's buffer assignment for
/// ResNet-50 on v6e shows it: f32[8,64,112,112] as [8,112,112,64→128], 49 MiB.
#[test]
fn conv_activation_in_feature_minor_order() {
    let cat = Catalog::builtin();
    let v6e = cat.chip("v6e").unwrap();
    let b = tpuport_hw::device_bytes_in_order(&[8, 112, 112, 64], DType::F32, v6e).unwrap();
    assert_eq!(b, 49 << 20);
    // The least padded order would put 112 minor: 8 x 64 x 112 x 128 x 4 bytes.
    let best = tpuport_hw::device_bytes(&[8, 64, 112, 112], DType::F32, v6e).unwrap();
    assert_eq!(best, 8 * 64 * 112 * 128 * 4);
}
