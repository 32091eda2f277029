//! `tpuport doctor`: the report (JSON schema `tpuport.doctor/1`) and its text form — the PJRT
//! plugins found and what each offers, then the Python framework versions and notes.

use std::fmt::Write as _;

use crate::style::{Paint, Style};

use tpuport_env::DoctorReport;

/// The text form. `packages` are the Python distributions listed, in order.
#[must_use]
pub fn render_text(r: &DoctorReport, packages: &[&str], paint: Paint) -> String {
    let mut s = String::new();
    let heading =
        format!("PJRT plugins (tpuport's declarations: PJRT API {}):", r.header_api_version);
    let _ = writeln!(s, "{}", paint.paint(&heading, Style::Bold));
    if r.plugins.is_empty() {
        let _ = writeln!(s, "  none found");
    }
    for pl in &r.plugins {
        let _ = writeln!(s, "  {} [{:?}, {}]", pl.path.display(), pl.kind, pl.source);
        if let Some(i) = &pl.info {
            let _ = writeln!(
                s,
                "    PJRT API {}.{} ({} functions, {} bytes table)",
                i.api_version.0, i.api_version.1, i.num_functions, i.table_bytes
            );
            if let Some(v) = &pl.stablehlo {
                let _ = writeln!(s, "    StableHLO {v}");
            }
            for a in &i.attributes {
                let _ = writeln!(s, "    attribute {} = {}", a.name, a.value);
            }
            if !i.extensions.is_empty() {
                let _ = writeln!(s, "    extensions: {}", i.extensions.join(", "));
            }
        }
        if let (Some(pf), Some(n)) = (&pl.platform, pl.devices) {
            let ver = pl.platform_version.as_deref().unwrap_or("");
            let _ = writeln!(
                s,
                "    platform {pf} {ver}: {n} device(s), kind {}",
                pl.device_kinds.join(", ")
            );
        }
        if let Some(e) = &pl.error {
            let _ = writeln!(s, "    {}: {e}", paint.paint("error", Style::Red));
        }
    }
    let _ = writeln!(s, "{}", paint.paint("Searched site-packages, in order:", Style::Bold));
    if r.searched.is_empty() {
        let _ = writeln!(s, "  none found");
    }
    for place in &r.searched {
        let _ = writeln!(s, "  {} ({})", place.path.display(), place.why);
    }
    if !r.libtpu_searched.is_empty() {
        let heading =
            "Searched for libtpu from `make libtpu` (<folder>/<version>/libtpu/libtpu.so), then:";
        let _ = writeln!(s, "{}", paint.paint(heading, Style::Bold));
    }
    for place in &r.libtpu_searched {
        let _ = writeln!(s, "  {} ({})", place.path.display(), place.why);
    }
    if let Some(py) = &r.python {
        let version = py.get("python").and_then(|v| v.as_str()).unwrap_or("?");
        let _ = writeln!(s, "{}", paint.paint(&format!("Python {version}:"), Style::Bold));
        for name in packages {
            let v = py.get(*name).and_then(|v| v.as_str()).unwrap_or("-");
            let _ = writeln!(s, "  {name:<16} {v}");
        }
    } else {
        let _ = writeln!(s, "{}", paint.paint("Python: not found", Style::Bold));
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

#[cfg(test)]
mod tests {
    use tpuport_env::{PluginReport, SCHEMA};
    use tpuport_pjrt::PluginKind;

    use super::*;
    use crate::style::strip_ansi;

    #[test]
    fn text_lists_plugins_errors_versions_and_notes() {
        let mut bad = PluginReport::new("/x/libtpu.so".into(), PluginKind::Tpu, "user site".into());
        bad.error = Some("no such file".into());
        let r = DoctorReport {
            schema: SCHEMA,
            header_api_version: "0.94".into(),
            plugins: vec![bad],
            searched: vec![tpuport_pjrt::Place {
                path: "/home/u/.local/lib/python3.11/site-packages".into(),
                why: "user site".into(),
            }],
            libtpu_searched: vec![tpuport_pjrt::Place {
                path: "/nonexistent/.cache/libtpu".into(),
                why: ".cache/libtpu in /nonexistent (make libtpu), not present".into(),
            }],
            python: Some(serde_json::json!({"python": "3.11.2", "jax": "0.7.0", "jaxlib": null})),
            versions: vec![],
            notes: vec!["a note".into()],
        };
        let text = render_text(&r, &["jax", "jaxlib"], Paint::PLAIN);
        assert_eq!(
            text,
            "PJRT plugins (tpuport's declarations: PJRT API 0.94):\n  /x/libtpu.so [Tpu, user site]\n    error: no such file\n\
             Searched site-packages, in order:\n  /home/u/.local/lib/python3.11/site-packages (user site)\n\
             Searched for libtpu from `make libtpu` (<folder>/<version>/libtpu/libtpu.so), then:\n  \
             /nonexistent/.cache/libtpu (.cache/libtpu in /nonexistent (make libtpu), not present)\n\
             Python 3.11.2:\n  jax              0.7.0\n  jaxlib           -\nnote: a note\n"
        );
        assert_eq!(strip_ansi(&render_text(&r, &["jax", "jaxlib"], Paint::new(true))), text);
        let none = DoctorReport {
            plugins: vec![],
            searched: vec![],
            libtpu_searched: vec![],
            python: None,
            notes: vec![],
            ..r
        };
        assert!(render_text(&none, &[], Paint::PLAIN).contains(
            "  none found\nSearched site-packages, in order:\n  none found\nPython: not found\n"
        ));
    }
}
