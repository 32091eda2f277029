//! Findings on the torch reference models (ResNet-50, MobileNetV2, ViT-B/16, BERT-base, GPT-2;
//! ONNX from both exporters): the codes per model are snapshotted, and the two exports of one
//! model must raise the same codes at the same severities.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use tpuport_analysis::findings::{self, FindingOptions};
use tpuport_formats::ImportOptions;

const MODELS: [&str; 5] = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2"];

/// `CODE severity` per finding, for the model as exported (`unbound`) and with batch 1 and
/// sequence 128 bound (`bound`).
fn codes(model: &str, exporter: &str) -> BTreeMap<&'static str, Vec<String>> {
    let p = tpuport_testkit::fixtures("torch").join(model).join(format!("{exporter}.onnx"));
    let mut out = BTreeMap::new();
    let mut dims = BTreeMap::new();
    dims.insert("sequence".to_owned(), 128);
    let bound = ImportOptions { batch: Some(1), dims, ..ImportOptions::default() };
    for (key, io, batch) in [("unbound", ImportOptions::default(), None), ("bound", bound, Some(1))]
    {
        let m = tpuport_formats::open(&p, &io).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let opts = FindingOptions { batch, ..FindingOptions::default() };
        let f = findings::check(&m, &opts);
        for x in &f {
            assert!(!x.nodes.is_empty() && x.fix.is_some(), "{model} {exporter}: {x:?}");
        }
        out.insert(key, f.iter().map(|x| format!("{} {}", x.code, x.severity)).collect());
    }
    out
}

#[test]
fn torch_reference_models_findings() {
    let all: BTreeMap<&str, _> = std::thread::scope(|s| {
        let hs: Vec<_> = MODELS
            .iter()
            .map(|m| s.spawn(move || (*m, codes(m, "legacy"), codes(m, "dynamo"))))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .map(|(m, legacy, dynamo)| {
                assert_eq!(legacy, dynamo, "{m}: the legacy and dynamo exports disagree");
                (m, legacy)
            })
            .collect()
    });
    insta::assert_json_snapshot!("torch_findings", all);
}
