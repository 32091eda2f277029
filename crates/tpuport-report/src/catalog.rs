//! `tpuport catalog` as text: the chip list, one chip's figures with their sources, or one
//! slice's topology. Figures are held in base units and shown in the units a reader expects
//! (`tpuport_hw`'s formatters, the same as `docs/hardware.md`).

use tpuport_hw::{Catalog, Chip, Slice, format_bandwidth, format_bytes, format_tera};

use crate::style::{Paint, Style};
use crate::table::{Column, Table};

/// A missing figure.
const NONE: &str = "–";

fn dash(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| NONE.to_owned(), f)
}

/// Every chip of the catalog, one row each, with a legend.
#[must_use]
pub fn render_chips(cat: &Catalog, paint: Paint) -> String {
    let numbers = ["bf16", "HBM", "HBM BW", "ICI/NVLink", "MXU", "$/chip-h"];
    let mut t = Table::with_columns(
        [Column::left("id"), Column::left("name")].into_iter().chain(numbers.map(Column::right)),
    )
    .paint(paint)
    .header_style(Style::Bold);
    for c in cat.chips() {
        let price = c.price.on_demand.map_or_else(
            || NONE.to_owned(),
            |v| format!("{v:.2} ({})", c.price.confidence.map_or("?", |k| k.name())),
        );
        t.row([
            c.id.clone(),
            c.name.clone(),
            dash(c.peak.bf16, format_tera),
            dash(c.hbm_capacity, format_bytes),
            dash(c.hbm_bandwidth, format_bandwidth),
            dash(c.interconnect_bandwidth(), format_bandwidth),
            c.mxu_size.map_or_else(|| NONE.to_owned(), |m| format!("{m}x{m}")),
            price,
        ]);
    }
    let mut out = t.render();
    out.push_str(
        "\nbf16 in TFLOP/s (dense). Prices are list prices with the stated confidence; \
         override them with --catalog FILE.\n`tpuport catalog CHIP` shows every figure with its source.\n",
    );
    out
}

/// One chip: every figure with its source, then the slices it comes in.
#[must_use]
pub fn render_chip(cat: &Catalog, c: &Chip, paint: Paint) -> String {
    let mut out = format!("{}\n", paint.paint(&format!("{} ({})", c.name, c.id), Style::Bold));
    if !c.aliases.is_empty() {
        out.push_str(&format!("  aliases: {}\n", c.aliases.join(", ")));
    }
    out.push_str(&format!("\n{}\n", paint.paint("figures and sources", Style::Bold)));
    let doc = serde_json::to_value(c).unwrap_or_default();
    let mut t = Table::new(&[], &[]);
    for key in c.figure_keys() {
        let src = cat.cite(c, key).or_else(|| c.source(key).map(str::to_owned)).unwrap_or_default();
        let value = key.split('.').fold(&doc, |v, k| &v[k]);
        t.row([key.to_owned(), figure(key, value), src]);
    }
    out.push_str(&t.render());
    let slices: Vec<String> = cat.slices(c).iter().map(|s| s.accelerator_type.clone()).collect();
    if !slices.is_empty() {
        out.push_str(&format!(
            "\n{}\n  {}\n",
            paint.paint("slices", Style::Bold),
            slices.join(", ")
        ));
    }
    out
}

/// One slice: chip, topology, hosts, wraparound, ICI links.
#[must_use]
pub fn render_slice(slice: &Slice) -> String {
    let mut t = Table::new(&[], &[]);
    t.row(["accelerator type".to_owned(), slice.accelerator_type.clone()]);
    t.row(["chip".to_owned(), slice.chip.clone()]);
    t.row(["topology".to_owned(), slice.topology()]);
    t.row(["chips".to_owned(), slice.chips.to_string()]);
    if let Some(tc) = slice.tensorcores {
        t.row(["TensorCores".to_owned(), tc.to_string()]);
    }
    let hosts = format!(
        "{} ({} chips per host{})",
        slice.hosts,
        slice.chips_per_host,
        if slice.multi_host() { "; multi-host: needs a JobSet / LeaderWorkerSet" } else { "" }
    );
    t.row(["hosts".to_owned(), hosts]);
    let wraps = slice.wraps.as_ref().map_or_else(
        || "undocumented".to_owned(),
        |w| w.iter().map(|b| if *b { "wrap" } else { "mesh" }).collect::<Vec<_>>().join(" x "),
    );
    t.row(["wraparound".to_owned(), wraps]);
    t.row(["ICI links".to_owned(), slice.ici_links.to_string()]);
    t.render()
}

/// A figure in readable units, chosen by its key (values are held in base units).
fn figure(key: &str, v: &serde_json::Value) -> String {
    match v.as_f64() {
        Some(x) if key.contains("bandwidth") => format_bandwidth(x),
        Some(x) if key.starts_with("hbm") || key.contains("memory") || key.starts_with("vmem") => {
            format_bytes(x)
        }
        Some(x) if key.starts_with("peak.") => format!("{} T/s", format_tera(x)),
        Some(x) if key == "tdp" => format!("{x} W"),
        Some(x) if key.starts_with("price.") => format!("${x:.2}/h"),
        _ if key == "slices" => v.as_array().map_or_else(String::new, |a| {
            let names: Vec<String> = a
                .iter()
                .filter_map(|d| d.as_array())
                .map(|d| d.iter().map(ToString::to_string).collect::<Vec<_>>().join("x"))
                .collect();
            names.join(" ")
        }),
        _ => match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => NONE.to_owned(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::style::strip_ansi;

    #[test]
    fn the_builtin_catalog_renders() {
        let cat = Catalog::builtin();
        let chips = render_chips(&cat, Paint::PLAIN);
        let v5e = chips.lines().find(|l| l.trim_start().starts_with("v5e ")).unwrap();
        assert!(v5e.contains("197") && v5e.contains("16 GiB") && v5e.contains("128x128"), "{v5e}");
        let chip = render_chip(&cat, cat.chip("v5e").unwrap(), Paint::PLAIN);
        assert!(chip.starts_with("TPU v5e (v5e)\n"), "{chip}");
        assert!(chip.contains("\nslices\n  v5litepod-1,"), "{chip}");
        let coloured = render_chip(&cat, cat.chip("v5e").unwrap(), Paint::new(true));
        assert_eq!(strip_ansi(&coloured), chip);
        let slice = render_slice(&cat.slice("v5p-16").unwrap());
        assert!(slice.contains("accelerator type  v5p-16"), "{slice}");
        assert!(slice.contains("multi-host"), "{slice}");
    }
}
