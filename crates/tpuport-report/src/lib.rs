//! Renderers shared by the verbs. They build strings; the binary decides where they go.
//!
//! - [`Table`]: left/right aligned text columns, no borders, readable without colour.
//! - [`human`]: numbers with thousands separators, byte sizes in binary units, SI counts.
//! - [`validate`], [`bench`], [`run`], [`conformance`], [`lower`]: the text reports of those
//!   verbs, over the report types of `tpuport-validate` and `tpuport-formats`.

pub mod bench;
pub mod conformance;
pub mod human;
pub mod lower;
pub mod run;
mod table;
pub mod validate;

pub use table::{Align, Table};
