//! `tpuport audit` on trained detectors whose spatial dims are symbolic (issue 34, item 7):
//! a partial count gives no step time, samples/s, bound or FLOP total in the Summary; it names
//! the unbound dims, the inputs that carry them and the flags that bind them, with the model's
//! own size hint when it has one. The models come from a PyPI wheel (`make wheel-models`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::PathBuf;

use common::{audit_json, tpuport};

/// `make wheel-models`' folder (`$TPUPORT_WHEEL_MODELS`, else the newest cached one).
fn models() -> PathBuf {
    tpuport_testkit::generated("TPUPORT_WHEEL_MODELS", "wheel-models-", "meta.json", "wheel-models")
}

fn audit(args: &[&str]) -> String {
    let mut all = vec!["audit"];
    all.extend_from_slice(args);
    let o = tpuport(&all);
    assert_eq!(o.code, 0, "audit {args:?}: {}", o.stderr);
    o.stdout
}

/// The text between a section's title and the next one.
fn section<'a>(text: &'a str, title: &str) -> &'a str {
    let start = text.find(&format!("\n{title}")).unwrap_or_else(|| panic!("no {title}: {text}"));
    let rest = &text[start + 1..];
    let end = rest[1..].find("\n\n").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// The figures a partial count must not give, as the Summary would spell them.
const FIGURES: &[&str] =
    &["per step", "samples/s per", "FLOPs per step", "memory-bound", "compute-bound"];

#[test]
fn a_detector_with_symbolic_height_and_width_gets_no_figures_but_the_dims_to_bind() {
    let det = models().join("ocr_det.onnx");
    let det = det.to_str().unwrap();
    let args = [det, "--batch", "8", "--slice", "v5e-8", "--compiler", "none"];
    let text = audit(&args);
    let summary = section(&text, "Summary");
    for f in FIGURES {
        assert!(!summary.contains(f), "`{f}` in a partial count's Summary:\n{summary}");
    }
    for needle in [
        "no step time, samples/s, bound or FLOP total: ",
        "ops have unbound shapes and were not counted",
        "unbound dims: p2o.DynamicDimension.1 (x dim 2), p2o.DynamicDimension.2 (x dim 3)",
        "bind them: --dim p2o.DynamicDimension.1=N --dim p2o.DynamicDimension.2=N",
        "no size hint found in the model's metadata or doc strings",
    ] {
        assert!(summary.contains(needle), "`{needle}` missing:\n{summary}");
    }
    // The detail sections say what was counted is partial; the roofline gives no figure.
    assert!(section(&text, "Cost").contains("partial count: "), "{text}");
    let roofline = section(&text, "Roofline");
    assert_eq!(roofline.lines().count(), 2, "{roofline}");
    assert!(roofline.lines().nth(1).unwrap().starts_with("  not estimated: "), "{roofline}");

    // JSON: the withheld figures are null, each with its reason; the dims and flags are there.
    let r = audit_json(&args);
    let s = &r["summary"];
    assert!(s["step_s"].is_null() && s["samples_per_s"].is_null(), "{s}");
    let why = s["withheld"].as_str().unwrap();
    assert!(why.contains("unbound shapes"), "{why}");
    assert_eq!(s["samples_per_s_refused"], s["withheld"]);
    assert_eq!(r["cost"]["partial"], s["withheld"]);
    assert_eq!(r["roofline"]["withheld"], s["withheld"]);
    assert!(s["top_fixes"].as_array().unwrap().iter().all(|f| f["source"] != "roofline"), "{s}");
    let u = &s["unbound"];
    let names: Vec<&str> =
        u["dims"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["p2o.DynamicDimension.1", "p2o.DynamicDimension.2"]);
    assert_eq!(u["dims"][0]["at"][0]["input"], "x");
    assert_eq!(u["dims"][0]["at"][0]["axis"], 2);
    assert!(u["hint"].is_null());
    let flags = u["flags"].as_str().unwrap();
    assert!(u["ops_uncounted"].as_u64().unwrap() > 0);

    // The flags it offers, with a size for N, bind every dim: a full count with its figures.
    let mut bound: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    bound.extend(flags.replace("=N", "=640").split(' ').map(str::to_owned));
    let bound: Vec<&str> = bound.iter().map(String::as_str).collect();
    let r = audit_json(&bound);
    let s = &r["summary"];
    assert!(s["withheld"].is_null() && s["unbound"].is_null(), "{s}");
    assert!(s["step_s"].as_f64().unwrap() > 0.0 && s["samples_per_s"].as_f64().unwrap() > 0.0);
    assert!(r["cost"]["partial"].is_null() && r["roofline"]["withheld"].is_null());
    let summary = section(&audit(&bound), "Summary").to_owned();
    assert!(
        summary.contains("FLOPs per step") && summary.contains("samples/s per v5e chip"),
        "{summary}"
    );
}

#[test]
fn unnamed_dims_are_bound_with_an_input_shape() {
    let cls = models().join("ocr_cls.onnx");
    let cls = cls.to_str().unwrap();
    let args = [cls, "--batch", "8", "--slice", "v5e-8", "--compiler", "none"];
    let summary = section(&audit(&args), "Summary").to_owned();
    assert!(summary.contains("unbound dims: ? (x dim 2), ? (x dim 3)"), "{summary}");
    assert!(summary.contains("bind them: --input-shape x=8x3xNxN"), "{summary}");
    let r = audit_json(&[
        cls,
        "--batch",
        "8",
        "--slice",
        "v5e-8",
        "--compiler",
        "none",
        "--input-shape",
        "x=8x3x48x192",
    ]);
    assert!(r["summary"]["withheld"].is_null(), "{}", r["summary"]);
}

/// Appends `metadata_props` entries to an ONNX file's bytes (protobuf: repeated field 14 of
/// `ModelProto`, each a `StringStringEntryProto` {1: key, 2: value}; appended fields merge).
fn with_metadata(onnx: &[u8], props: &[(&str, &str)]) -> Vec<u8> {
    fn varint(mut n: usize, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    let mut out = onnx.to_vec();
    for (k, v) in props {
        let mut entry = Vec::new();
        for (tag, s) in [(0x0a_u8, k), (0x12, v)] {
            entry.push(tag);
            varint(s.len(), &mut entry);
            entry.extend_from_slice(s.as_bytes());
        }
        out.push(0x72); // field 14, length-delimited
        varint(entry.len(), &mut out);
        out.extend_from_slice(&entry);
    }
    out
}

/// The sizes an exporter records are offered as the flags: here the keys and values
/// Ultralytics' ONNX export writes (`imgsz` as `str([H, W])`, `batch`), added to the real
/// detector.
#[test]
fn an_exporters_recorded_image_size_is_offered_as_the_dim() {
    let det = std::fs::read(models().join("ocr_det.onnx")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("det_imgsz.onnx");
    std::fs::write(&path, with_metadata(&det, &[("batch", "1"), ("imgsz", "[736, 1280]")]))
        .unwrap();
    let p = path.to_str().unwrap();
    let summary = section(&audit(&[p, "--batch", "8", "--compiler", "none"]), "Summary").to_owned();
    assert!(
        summary.contains(
            "bind them: --dim p2o.DynamicDimension.1=736 --dim p2o.DynamicDimension.2=1280  (sizes from the model's metadata_props imgsz = [736, 1280])"
        ),
        "{summary}"
    );
    let r = audit_json(&[p, "--batch", "8", "--compiler", "none"]);
    let dims = r["summary"]["unbound"]["dims"].as_array().unwrap();
    assert_eq!((dims[0]["hint"].as_u64(), dims[1]["hint"].as_u64()), (Some(736), Some(1280)));
}
