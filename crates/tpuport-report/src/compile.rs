//! `tpuport compile`'s report (JSON schema `tpuport.compile/1`) as text.
//!
//! [`tpuport_compile`] fills a [`CompileReport`] from libtpu's answers; this module
//! only shapes them for reading: summary first (target, outcome, per-chip memory and fit), then
//! cost, then the parameters and outputs with the layout and sharding the compiler chose.

pub use tpuport_compile::{
    CompileReport, CompilerInfo, Cost, Operand, Outcome, PerDevice, SCHEMA, Saved,
};

use crate::human::{bytes, si, thousands};
use crate::{Align, Table};

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "display only")]
fn count(x: f64) -> String {
    si(x.max(0.0).round() as u64)
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "-".to_owned(), bytes)
}

/// The text report.
#[must_use]
pub fn render_text(r: &CompileReport) -> String {
    let mut s = String::new();
    let devices = if r.program_devices == 1 {
        "1 device".to_owned()
    } else {
        format!("{} devices", r.program_devices)
    };
    s.push_str(&format!(
        "{} for {} ({}, topology {}, {} x {}): {} on {devices} in {:.0} ms\n",
        r.model,
        r.target,
        r.chip,
        r.topology,
        r.slice_devices,
        r.device_kind,
        match r.outcome {
            Outcome::Compiled => "compiled",
            Outcome::OutOfMemory => "DOES NOT FIT",
        },
        r.compile_ms
    ));
    if r.target == tpuport_compile::CPU_TARGET {
        s.push_str(&format!(
            "  compiler: PJRT CPU plugin {} (PJRT API {}; {})\n",
            r.compiler.path, r.compiler.pjrt_api, r.compiler.build
        ));
    } else {
        s.push_str(&format!(
            "  compiler: libtpu {} (PJRT API {}; {})\n",
            r.compiler.version.as_deref().unwrap_or("(version unknown)"),
            r.compiler.pjrt_api,
            r.compiler.build
        ));
    }
    let d = &r.per_device;
    s.push_str("\nmemory per device\n");
    let mut t = Table::new(&["", "bytes", ""], &[Align::Left, Align::Right, Align::Right]);
    let mut row = |name: &str, v: Option<u64>| {
        if let Some(v) = v {
            t.row([name.to_owned(), thousands(v), bytes(v)]);
        }
    };
    row("arguments", d.arguments);
    row("outputs", d.outputs);
    row("aliased", d.aliased.filter(|&a| a > 0));
    row("temporaries", d.temporaries);
    row("generated code", d.generated_code);
    row("peak live buffers (HBM + VMEM)", d.peak.filter(|&p| p > 0));
    row("HBM total (buffers + code)", d.total);
    row("HBM available (compiler)", d.compiler_hbm_limit);
    row("HBM per device", d.hbm);
    s.push_str(&t.render());
    let verdict = match (d.fits, d.total, d.hbm) {
        (true, Some(total), Some(hbm)) => {
            #[allow(clippy::cast_precision_loss, reason = "display only")]
            let pct = total as f64 / hbm as f64 * 100.0;
            let mut v = format!("  fits: yes, {pct:.1} % of HBM");
            if d.hbm_budget.is_some_and(|b| total > b) {
                v.push_str(&format!(
                    " (above tpuport's planning budget of {})",
                    opt_bytes(d.hbm_budget)
                ));
            }
            v
        }
        (true, ..) => "  fits: yes".to_owned(),
        (false, ..) => "  fits: no".to_owned(),
    };
    s.push_str(&verdict);
    s.push('\n');
    if let Some(m) = &r.compiler_message {
        s.push_str(&format!("  compiler message: {m}\n"));
    }
    if let Some(c) = &r.cost {
        s.push_str("\ncost per device (compiler)\n");
        let mut t = Table::new(&[], &[]);
        if let Some(f) = c.flops {
            t.row(["flops".to_owned(), count(f)]);
        }
        if let Some(b) = c.bytes_accessed {
            t.row(["bytes accessed".to_owned(), count(b)]);
        }
        if let Some(x) = c.transcendentals {
            t.row(["transcendentals".to_owned(), count(x)]);
        }
        if let Some(o) = c.optimal_seconds {
            t.row(["optimal time".to_owned(), format!("{:.3} ms", o * 1e3)]);
        }
        s.push_str(&t.render());
    }
    for (title, ops) in [("parameters", &r.parameters), ("outputs", &r.outputs)] {
        if ops.is_empty() {
            continue;
        }
        s.push_str(&format!("\n{title} ({})\n", ops.len()));
        let sharded = ops.iter().any(|o| o.sharding.is_some());
        let mut head = vec!["#", "name", "type", "layout", "device bytes", "padding"];
        let mut align =
            vec![Align::Right, Align::Left, Align::Left, Align::Left, Align::Right, Align::Right];
        if sharded {
            head.insert(3, "sharding");
            align.insert(3, Align::Left);
        }
        let mut t = Table::new(&head, &align);
        for o in ops {
            let padding = match (o.device_bytes, o.logical_bytes) {
                (Some(dev), Some(log)) if log > 0 => {
                    #[allow(clippy::cast_precision_loss, reason = "display only")]
                    let r = dev as f64 / log as f64;
                    format!("x{r:.2}")
                }
                _ => String::new(),
            };
            let mut cells = vec![
                o.index.to_string(),
                o.name.clone(),
                o.ty.clone().unwrap_or_default(),
                o.layout.clone().unwrap_or_default(),
                o.device_bytes.map(thousands).unwrap_or_default(),
                padding,
            ];
            if sharded {
                cells.insert(3, o.sharding.clone().unwrap_or_default());
            }
            t.row(cells);
        }
        s.push_str(&t.render());
    }
    if let Some(sv) = &r.saved {
        s.push_str(&format!(
            "\nsaved {} ({}) and {}\n",
            sv.executable,
            bytes(sv.bytes),
            sv.manifest
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CompileReport {
        let op = |index: usize, name: &str, ty: &str, layout: &str, dev: u64, log: u64| Operand {
            index,
            name: name.into(),
            ty: Some(ty.into()),
            shard: None,
            layout: Some(layout.into()),
            device_bytes: Some(dev),
            logical_bytes: Some(log),
            sharding: None,
        };
        CompileReport {
            schema: SCHEMA,
            model: "conv.mlir".into(),
            model_sha256: "00".into(),
            source: "stablehlo".into(),
            target: "v5e-8".into(),
            topology: "v5e:2x4".into(),
            chip: "TPU v5e".into(),
            device_kind: "TPU v5 lite".into(),
            slice_devices: 8,
            program_devices: 1,
            compiler: CompilerInfo {
                path: "libtpu.so".into(),
                version: Some("0.0.52".into()),
                build: "TFRT TPU v5 lite".into(),
                pjrt_api: "0.117".into(),
            },
            setup_ms: 150.0,
            compile_ms: 812.0,
            outcome: Outcome::Compiled,
            per_device: PerDevice {
                arguments: Some(9_453_568),
                outputs: Some(9_454_080),
                aliased: Some(0),
                temporaries: Some(0),
                generated_code: Some(1_154_048),
                peak: Some(18_907_648),
                total: Some(20_061_696),
                compiler_hbm_limit: None,
                hbm: Some(17_179_869_184),
                hbm_budget: Some(16_664_473_108),
                fits: true,
            },
            compiler_message: None,
            cost: Some(Cost {
                flops: Some(2_362_296.0),
                bytes_accessed: Some(18_907_648.0),
                transcendentals: None,
                optimal_seconds: Some(2.4e-5),
            }),
            parameters: vec![
                op(0, "a", "f32[512,512,3,3]", "{1,0,3,2:T(8,128)}", 9_437_184, 9_437_184),
                op(1, "b", "f32[1000,3]", "{0,1:T(4,128)}", 16_384, 12_000),
            ],
            outputs: vec![op(0, "result0", "f32[1000,3]", "{0,1:T(8,128)}", 32_768, 12_000)],
            saved: None,
        }
    }

    #[test]
    fn text_report_snapshot() {
        insta::assert_snapshot!(render_text(&sample()));
    }

    #[test]
    fn out_of_memory_text_report_snapshot() {
        let mut r = sample();
        r.outcome = Outcome::OutOfMemory;
        r.per_device = PerDevice {
            total: Some(20_218_962_739),
            compiler_hbm_limit: Some(16_911_433_728),
            hbm: Some(17_179_869_184),
            ..PerDevice::default()
        };
        r.cost = None;
        r.compiler_message =
            Some("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM".into());
        insta::assert_snapshot!(render_text(&r));
    }
}
