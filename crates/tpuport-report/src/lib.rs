//! Renderers: every report tpuport writes is built here as a string; the binary only decides
//! where it goes (its `Printer`). Libraries return data, this crate turns data into text, JSON
//! and SARIF, and nothing here prints or reads the environment.
//!
//! The building blocks:
//! - [`Table`] and [`Column`]: aligned text columns with headers, width limits and styles; no
//!   borders, readable without colour.
//! - [`human`]: counts with thousands separators, SI counts and FLOPs, bytes in binary units,
//!   durations, percentages.
//! - [`style`]: optional colour; the caller says whether it is on ([`Paint`]).
//! - [`json`]: the one pretty-JSON emitter (trailing newline) behind every `--format json`.
//! - [`sarif`]: the SARIF 2.1.0 object model.
//!
//! One module per verb renders that verb's report: [`audit`], [`inspect`], [`catalog`],
//! [`doctor`], [`check`], [`validate`], [`bench`], [`run`], [`conformance`], [`lower`],
//! [`compile`], [`batch`] and the others, over the report types of the crates that produce
//! them (`tpuport-exec` for run and bench, `tpuport-validate`, `tpuport-compile`,
//! `tpuport-formats`; `tpuport-batch` without its `pipeline` feature, for the summary alone).
//! Those are result types: this crate compiles no server, dataset reader or image decoder.
//! The HTML report of `tpuport migrate` (inline SVG charts) will be a `html` module built on
//! the same data.

pub mod audit;
pub mod batch;
pub mod bench;
pub mod catalog;
pub mod check;
pub mod compile;
pub mod conformance;
pub mod doctor;
mod error;
pub mod human;
pub mod inspect;
pub mod json;
pub mod lower;
pub mod profile;
pub mod run;
pub mod sarif;
pub mod shard;
pub mod style;
mod table;
pub mod top;
pub mod validate;

pub use error::ReportError;
pub use style::{Paint, Style};
pub use table::{Align, Cell, Column, Table, Truncate, truncate};
