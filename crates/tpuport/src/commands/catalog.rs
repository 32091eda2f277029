//! `tpuport catalog [NAME]`: the accelerator catalog — every chip, one chip's figures with their
//! sources, or one slice's topology. `--catalog FILE` layers a user file on top (prices are low
//! confidence and meant to be overridden; see `docs/hardware.md`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use tpuport_hw::{Catalog, Chip, format_bandwidth, format_bytes, format_tera};
use tpuport_report::{Align, Table};

use crate::cli::{Format, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport catalog`.
#[derive(Debug, Args)]
pub(crate) struct CatalogArgs {
    /// A chip (`v5e`, `trillium`, `h100`) or a slice (`v5e-8`, `v5p-8`, `v6e-2x4`); omit to
    /// list every chip.
    pub(crate) name: Option<String>,
    /// A TOML file that overrides or extends the built-in catalog.
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: Option<PathBuf>,
}

/// The built-in catalog, with the user's file layered on top when given.
pub(crate) fn load(file: Option<&PathBuf>) -> anyhow::Result<Catalog> {
    Ok(match file {
        Some(f) => Catalog::from_file(f)?,
        None => Catalog::builtin(),
    })
}

pub(crate) fn run(a: &CatalogArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let cat = load(a.catalog.as_ref())?;
    let json = g.format == Format::Json;
    let Some(name) = &a.name else {
        if json {
            p.data(&to_json(&cat.chips())?);
        } else {
            p.data(&chips_table(&cat));
        }
        return Ok(Status::Success);
    };
    if let Some(chip) = cat.find(name) {
        if json {
            let slices: Vec<String> =
                cat.slices(chip).iter().map(|s| s.accelerator_type.clone()).collect();
            p.data(&to_json(&serde_json::json!({ "chip": chip, "slices": slices }))?);
        } else {
            p.data(&chip_text(&cat, chip));
        }
        return Ok(Status::Success);
    }
    let slice = cat.slice(name)?;
    if json {
        p.data(&to_json(&slice)?);
    } else {
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
        p.data(&t.render());
    }
    Ok(Status::Success)
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(v).context("serialising the catalog")?;
    s.push('\n');
    Ok(s)
}

fn dash(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_owned(), f)
}

fn chips_table(cat: &Catalog) -> String {
    let mut t = Table::new(
        &["id", "name", "bf16", "HBM", "HBM BW", "ICI/NVLink", "MXU", "$/chip-h"],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    );
    for c in cat.chips() {
        let price = c.price.on_demand.map_or_else(
            || "–".to_owned(),
            |v| format!("{v:.2} ({})", c.price.confidence.map_or("?", |k| k.name())),
        );
        t.row([
            c.id.clone(),
            c.name.clone(),
            dash(c.peak.bf16, format_tera),
            dash(c.hbm_capacity, format_bytes),
            dash(c.hbm_bandwidth, format_bandwidth),
            dash(c.interconnect_bandwidth(), format_bandwidth),
            c.mxu_size.map_or_else(|| "–".to_owned(), |m| format!("{m}x{m}")),
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

fn chip_text(cat: &Catalog, c: &Chip) -> String {
    let mut out = format!("{} ({})\n", c.name, c.id);
    if !c.aliases.is_empty() {
        out.push_str(&format!("  aliases: {}\n", c.aliases.join(", ")));
    }
    out.push_str("\nfigures and sources\n");
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
        out.push_str(&format!("\nslices\n  {}\n", slices.join(", ")));
    }
    out
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
            serde_json::Value::Null => "–".to_owned(),
            other => other.to_string(),
        },
    }
}
