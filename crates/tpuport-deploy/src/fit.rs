//! Does the model fit the slice? The audit's memory figures (`tpuport audit --slice`), read
//! per chip: the whole state on every chip plus a share of the batch ("replicated"), or state
//! and batch both split over the chips ("sharded", FSDP / ZeRO-3).
//!
//! Serving and batch inference run the whole program on every chip's copy of the weights, so
//! they need the replicated fit; training also accepts the sharded one.

use serde::Serialize;
use tpuport_analysis::audit::{self, AuditOptions};
use tpuport_analysis::{Optimizer, Workload};
use tpuport_hw::{Catalog, Slice};
use tpuport_model::Model;

use crate::error::DeployError;

/// The audit's verdict for one slice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FitVerdict {
    /// The program checked.
    pub path: String,
    /// Chip id (`v5e`).
    pub chip: String,
    /// The slice asked for (`v5e-4`).
    pub slice: String,
    /// Chips in it.
    pub chips: u32,
    /// `replicated`, `sharded` or `no`.
    pub fit: String,
    /// Bytes every chip holds whole (weights; plus gradients and optimizer state in training).
    pub state_bytes: u64,
    /// Bytes that split with the batch.
    pub batch_bytes: u64,
    /// HBM per chip a program may use.
    pub hbm_budget: u64,
    /// Smallest slice of this generation with a replicated fit.
    pub smallest_replicated: Option<String>,
    /// Smallest slice of this generation with a sharded fit.
    pub smallest_sharded: Option<String>,
    /// The workload the figures are for.
    pub workload: Workload,
    /// The batch the figures are for.
    pub batch: u64,
}

/// Audits `model` for `slice` (named `name`) and returns the fit.
///
/// # Errors
/// [`DeployError::Unsupported`] when the audit has no memory figures for the chip.
pub fn check(
    model: &Model,
    path: &str,
    catalog: &Catalog,
    name: &str,
    slice: &Slice,
    workload: Workload,
    batch: Option<u64>,
) -> Result<FitVerdict, DeployError> {
    let opts = AuditOptions {
        workload,
        optimizer: Optimizer::default(),
        batch,
        slice: Some(slice.clone()),
        ..AuditOptions::default()
    };
    let report = audit::audit(path, model, catalog, &opts, Vec::new());
    let Some(f) = report.fits.iter().find(|f| f.chip == slice.chip) else {
        return Err(DeployError::Unsupported(format!(
            "{path}: the audit has no memory figures for {} (no HBM size or tiling in the catalog)",
            slice.chip
        )));
    };
    Ok(FitVerdict {
        path: path.to_owned(),
        chip: slice.chip.clone(),
        slice: name.to_owned(),
        chips: slice.chips,
        fit: report.summary.slice_fit.clone().unwrap_or_else(|| "no".to_owned()),
        state_bytes: f.state_bytes,
        batch_bytes: f.batch_bytes,
        hbm_budget: f.hbm_budget,
        smallest_replicated: f.replicated.clone(),
        smallest_sharded: f.sharded.clone(),
        workload,
        batch: report.batch,
    })
}

impl FitVerdict {
    /// Ok when the fit is good enough for the workload (`replicated`; training also
    /// `sharded`), else the refusal naming the smallest slice that fits.
    ///
    /// # Errors
    /// [`DeployError::DoesNotFit`].
    pub fn require(&self, path: &str) -> Result<(), DeployError> {
        let training = self.workload.is_training();
        let ok = self.fit == "replicated" || (training && self.fit == "sharded");
        if ok {
            return Ok(());
        }
        let smallest = if training {
            self.smallest_sharded.as_ref()
        } else {
            self.smallest_replicated.as_ref()
        };
        let need = if training {
            format!(
                "{} of state and {} of batch need {} per chip when split over {} chips",
                gib(self.state_bytes),
                gib(self.batch_bytes),
                gib((self.state_bytes + self.batch_bytes).div_ceil(u64::from(self.chips.max(1)))),
                self.chips
            )
        } else {
            format!(
                "every chip holds {} of weights plus {} of its batch share ({} in all)",
                gib(self.state_bytes),
                gib(self.batch_bytes.div_ceil(u64::from(self.chips.max(1)))),
                gib(self.state_bytes + self.batch_bytes.div_ceil(u64::from(self.chips.max(1))))
            )
        };
        let hint = match smallest {
            Some(s) => format!("the smallest {} slice that fits is {s}", self.chip),
            None => format!(
                "no {} slice fits{}",
                self.chip,
                if training { "" } else { " (the weights alone exceed one chip's HBM)" }
            ),
        };
        Err(DeployError::DoesNotFit(format!(
            "{path}: does not fit {} for {} at batch {}: {need}, {} of HBM per chip; {hint}",
            self.slice,
            self.workload,
            self.batch,
            gib(self.hbm_budget)
        )))
    }
}

/// Ok when the models of one repository fit together: they share every chip, so their
/// weights add up, next to the largest batch share of any of them. `path` and `slice` are
/// shown in the refusal.
///
/// # Errors
/// [`DeployError::DoesNotFit`].
pub fn require_together(fits: &[FitVerdict], path: &str, slice: &str) -> Result<(), DeployError> {
    let Some(first) = fits.first() else { return Ok(()) };
    if fits.len() < 2 {
        return Ok(());
    }
    let chips = u64::from(first.chips.max(1));
    let state: u64 = fits.iter().map(|f| f.state_bytes).sum();
    let share = fits.iter().map(|f| f.batch_bytes.div_ceil(chips)).max().unwrap_or(0);
    if state + share <= first.hbm_budget {
        return Ok(());
    }
    Err(DeployError::DoesNotFit(format!(
        "{path}: the {} models together do not fit {slice}: {} of weights on every chip plus up to {} of batch, {} of HBM per chip; serve fewer models per replica or deploy them separately",
        fits.len(),
        gib(state),
        gib(share),
        gib(first.hbm_budget)
    )))
}

#[allow(clippy::cast_precision_loss, reason = "display")]
fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30))
}
