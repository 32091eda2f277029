//! Renderers shared by the verbs. They build strings; the binary decides where they go.
//!
//! - [`Table`]: left/right aligned text columns, no borders, readable without colour.
//! - [`human`]: numbers with thousands separators, byte sizes in binary units, SI counts.

pub mod human;
pub mod profile;
mod table;

pub use table::{Align, Table};
