//! Markdown tables of a catalog, for `docs/hardware.md` (a test keeps that file in step).

use std::fmt::Write as _;

use crate::catalog::Catalog;
use crate::chip::{Chip, SliceNaming};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// A size in the unit a reader expects: `16 GiB`, `128 MiB`, `80 GB`.
#[must_use]
pub fn format_bytes(v: f64) -> String {
    let gib = v / GIB;
    if gib >= 1.0 && (gib * 100.0).fract() == 0.0 {
        return format!("{} GiB", trim(gib));
    }
    let mib = v / MIB;
    if mib >= 1.0 && mib.fract() == 0.0 {
        return format!("{} MiB", trim(mib));
    }
    format!("{} GB", trim(v / 1e9))
}

/// A bandwidth in GB/s.
#[must_use]
pub fn format_bandwidth(v: f64) -> String {
    format!("{} GB/s", trim(v / 1e9))
}

/// A compute rate in TFLOP/s (or TOP/s).
#[must_use]
pub fn format_tera(v: f64) -> String {
    trim(v / 1e12)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_owned(), f)
}

fn count(v: Option<u32>) -> String {
    v.map_or_else(|| "–".to_owned(), |n| n.to_string())
}

/// The generated part of `docs/hardware.md`: chips, slices, tiling, source tags.
#[must_use]
pub fn catalog_markdown(catalog: &Catalog) -> String {
    let mut out = String::new();
    out.push_str("### Chips\n\n");
    out.push_str("| id | name | aliases | bf16 TFLOP/s | int8 TOP/s | fp8 TFLOP/s | HBM | HBM BW | ICI / NVLink (bidi) | TCs | MXUs/TC | MXU | VMEM/TC | chips/host | $/chip-hr (confidence) |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in catalog.chips() {
        let price = c.price.on_demand.map_or_else(
            || "–".to_owned(),
            |p| format!("{p:.2} ({})", c.price.confidence.map_or("?", |c| c.name())),
        );
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.id,
            c.name,
            c.aliases.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "),
            opt(c.peak.bf16, format_tera),
            opt(c.peak.int8, format_tera),
            opt(c.peak.fp8, format_tera),
            opt(c.hbm_capacity, format_bytes),
            opt(c.hbm_bandwidth, format_bandwidth),
            opt(c.interconnect_bandwidth(), format_bandwidth),
            count(c.tensorcores),
            count(c.mxus_per_tensorcore),
            c.mxu_size.map_or_else(|| "–".to_owned(), |m| format!("{m}x{m}")),
            opt(c.vmem_per_tensorcore, format_bytes),
            count(c.chips_per_host),
            price,
        );
    }
    out.push_str("\n### Slices\n\n");
    out.push_str("| chip | names | N counts | topology family | slices (accelerator type = topology, hosts) |\n");
    out.push_str("|---|---|---|---|---|\n");
    for c in catalog.chips().iter().filter(|c| !c.slices.is_empty()) {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            c.id,
            c.slice_prefixes.iter().map(|p| format!("`{p}-N`")).collect::<Vec<_>>().join(", "),
            match c.slice_naming {
                Some(SliceNaming::TensorCores) => "TensorCores",
                _ => "chips",
            },
            c.topology.map_or("–", |t| t.name()),
            slice_list(catalog, c),
        );
    }
    out.push_str("\n### Tiling (rows x 128 lanes per element width)\n\n");
    out.push_str(
        "| chip | 32-bit | 16-bit | 8-bit | 4-bit | lanes | MXU |\n|---|---|---|---|---|---|---|\n",
    );
    for c in catalog.chips() {
        if let Some(t) = &c.tiling {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                c.id,
                t.rows_32bit,
                t.rows_16bit,
                t.rows_8bit,
                t.rows_4bit,
                t.lanes,
                count(c.mxu_size),
            );
        }
    }
    out.push_str("\n### Source tags\n\n| tag | source |\n|---|---|\n");
    for (tag, url) in catalog.references() {
        let _ = writeln!(out, "| `[{tag}]` | {url} |");
    }
    out
}

fn slice_list(catalog: &Catalog, chip: &Chip) -> String {
    let slices = catalog.slices(chip);
    let shown = if slices.len() > 12 { &slices[..12] } else { &slices[..] };
    let mut parts: Vec<String> = shown
        .iter()
        .map(|s| format!("`{}` = {} ({})", s.accelerator_type, s.topology(), s.hosts))
        .collect();
    if let Some(last) = slices.last().filter(|_| slices.len() > 12) {
        parts.push(format!(
            "… {} more, up to `{}` = {} ({})",
            slices.len() - 13,
            last.accelerator_type,
            last.topology(),
            last.hosts
        ));
    }
    parts.join(", ")
}
