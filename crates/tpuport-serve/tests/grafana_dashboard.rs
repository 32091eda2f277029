//! The Grafana dashboard in deploy/grafana loads, its panels are well-formed, and every metric
//! its queries name is one the server exports (checked against the real registry's rendering).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

#[test]
fn dashboard_queries_name_only_exported_metrics() {
    let path = tpuport_testkit::repo_root().join("deploy/grafana/tpuport-serve.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["uid"], "tpuport-serve");
    let panels = d["panels"].as_array().unwrap();
    assert!(panels.len() >= 10);
    let exported = tpuport_serve::metrics::Registry::new().render();
    let families: BTreeSet<&str> = exported
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let mut ids = BTreeSet::new();
    let mut used = BTreeSet::new();
    for p in panels {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "duplicate panel id");
        assert!(!p["title"].as_str().unwrap().is_empty());
        let g = &p["gridPos"];
        assert!(
            g["w"].as_u64().unwrap() > 0
                && g["x"].as_u64().unwrap() + g["w"].as_u64().unwrap() <= 24
        );
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{}", p["title"]);
        for t in targets {
            let e = t["expr"].as_str().unwrap();
            assert_eq!(e.matches('(').count(), e.matches(')').count(), "{e}");
            let mut rest = e;
            while let Some(i) = rest.find("tpuport_") {
                let name: String = rest[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                rest = &rest[i + name.len()..];
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s).filter(|b| families.contains(b)))
                    .map_or(name.clone(), str::to_owned);
                assert!(families.contains(base.as_str()), "{base} (in {e}) is not exported");
                used.insert(base);
            }
        }
    }
    // Every family the server exports has a panel.
    let unused: Vec<_> = families.iter().filter(|f| !used.contains(**f)).collect();
    assert!(unused.is_empty(), "exported but not on the dashboard: {unused:?}");
}
