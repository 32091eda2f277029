//! The layout → bytes model (`XlaLayout::device_bytes`) against libtpu's own answers: for each
//! shape in `tests/data/libtpu_layouts.json` (measured by `scripts/proofs/libtpu_measure.py` with
//! libtpu 0.0.52: one parameter per program, compiled for one v5e and one v6e chip), the bytes
//! its reported layout takes must equal the argument bytes the compiler reported.
#![allow(clippy::unwrap_used, reason = "tests")]

use tpuport_hw::XlaLayout;
use tpuport_model::DType;

#[test]
fn layout_bytes_match_the_compilers_argument_bytes() {
    let text = include_str!("data/libtpu_layouts.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() >= 80, "{} rows", rows.len());
    for r in rows {
        let dtype = DType::from_name(r["dtype"].as_str().unwrap()).unwrap();
        let shape: Vec<u64> =
            r["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        let layout = XlaLayout::parse(r["layout"].as_str().unwrap()).unwrap();
        let want = r["argument_bytes"].as_u64().unwrap();
        assert_eq!(layout.device_bytes(&shape, dtype), Some(want), "{r}");
    }
}

/// The facts the padding model must follow (issue 12): conv kernels in either order are not
/// padded, small trailing dims are, embeddings barely.
#[test]
fn measured_padding_facts() {
    let text = include_str!("data/libtpu_layouts.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let ratio = |chip: &str, dtype: &str, shape: &[u64]| {
        let r = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["chip"] == chip
                    && r["dtype"] == dtype
                    && r["shape"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap())
                        .eq(shape.iter().copied())
            })
            .unwrap_or_else(|| panic!("{chip} {dtype}{shape:?} not measured"));
        #[allow(clippy::cast_precision_loss, reason = "ratio")]
        let x = r["argument_bytes"].as_u64().unwrap() as f64
            / r["logical_bytes"].as_u64().unwrap() as f64;
        x
    };
    for chip in ["v5e", "v6e"] {
        assert!((ratio(chip, "f32", &[512, 512, 3, 3]) - 1.0).abs() < 1e-9);
        assert!((ratio(chip, "f32", &[3, 3, 512, 512]) - 1.0).abs() < 1e-9);
        assert!((ratio(chip, "f32", &[2048, 1024, 1, 1]) - 1.0).abs() < 1e-9);
        assert!(ratio(chip, "f32", &[4, 7]) > 10.0);
        assert!(ratio(chip, "f32", &[50257, 768]) < 1.001);
    }
}

/// The layout model the audit uses (`tiling::device_layout`: least padded dimension order,
/// small row tiles, vector tiles) predicts libtpu's argument bytes for every measured shape,
/// on both chips.
#[test]
fn device_layout_predicts_the_compilers_bytes() {
    let catalog = tpuport_hw::Catalog::builtin();
    let text = include_str!("data/libtpu_layouts.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let mut checked = 0;
    for r in v["rows"].as_array().unwrap() {
        let chip = catalog.chip(r["chip"].as_str().unwrap()).unwrap();
        let dtype = DType::from_name(r["dtype"].as_str().unwrap()).unwrap();
        let shape: Vec<u64> =
            r["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        let want = r["argument_bytes"].as_u64().unwrap();
        let got = tpuport_hw::device_layout(&shape, dtype, chip).unwrap();
        assert_eq!(got.bytes, want, "{r}: predicted {}", got.notation());
        // The predicted layout takes the same bytes as the compiler's own under the layout
        // arithmetic of `XlaLayout`.
        let ours = XlaLayout::parse(&got.notation()).unwrap();
        assert_eq!(ours.device_bytes(&shape, dtype), Some(want), "{r}");
        checked += 1;
    }
    // docs/compile.md and docs/audit.md state this count: 45 shapes and dtypes, each on v5e
    // and v6e.
    assert_eq!(checked, 90, "{checked} rows");
}
