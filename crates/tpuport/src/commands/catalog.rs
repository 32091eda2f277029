//! `tpuport catalog [NAME]`: the accelerator catalog — every chip, one chip's figures with their
//! sources, or one slice's topology. `--catalog FILE` layers a user file on top (prices are low
//! confidence and meant to be overridden; see `docs/hardware.md`). The text forms are
//! `tpuport_report::catalog`.

use std::path::PathBuf;

use clap::Args;
use tpuport_hw::Catalog;
use tpuport_report::catalog;

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
            p.json(&cat.chips())?;
        } else {
            p.data(&catalog::render_chips(&cat, p.paint()));
        }
        return Ok(Status::Success);
    };
    if let Some(chip) = cat.find(name) {
        if json {
            let slices: Vec<String> =
                cat.slices(chip).iter().map(|s| s.accelerator_type.clone()).collect();
            p.json(&serde_json::json!({ "chip": chip, "slices": slices }))?;
        } else {
            p.data(&catalog::render_chip(&cat, chip, p.paint()));
        }
        return Ok(Status::Success);
    }
    let slice = cat.slice(name)?;
    if json {
        p.json(&slice)?;
    } else {
        p.data(&catalog::render_slice(&slice));
    }
    Ok(Status::Success)
}
