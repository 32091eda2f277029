//! The kernel of tpuport's stable codes — lint rules `TPUxxx`, audit findings `AUDxxx`, profile
//! findings `PRFxxx`: what a code is, how a rule registers it, and how its documentation is
//! extracted, looked up (`tpuport explain CODE`) and generated (`docs/rules`, `docs/findings`,
//! `docs/profile`).
//!
//! - [`Severity`]: how bad a finding is (audit and profile findings; lint rules have a status
//!   instead).
//! - [`documented!`] declares a rule's struct and captures its doc comment as
//!   [`Documented::DOC`]: the doc comment is the user documentation, written once, above the
//!   struct.
//! - [`StableCode`] is what `explain` and the docs generation read from a code (its code, name,
//!   source file, doc and the registry's per-code [`Fact`]s); its provided methods do the rest:
//!   [`StableCode::lookup`], [`StableCode::summary`], [`StableCode::page`], [`StableCode::docs`].
//!   A [`Registry`] describes one set of codes (families, index page, where the files go).
//! - [`CodeInfo`] is a code's row for registries whose codes are table rows with a default
//!   severity (audit, profile): [`code_table!`] declares the rule modules and the rows from one
//!   table, and [`Table`] is the little the registry adds (its [`Registry`], its facts). Lint's
//!   codes are an enum (`tpuport_lint::Rule`, used by selectors and diagnostics) that implements
//!   [`StableCode`] itself.
//!
//! What a rule *checks* differs per domain — a model graph, profiler evidence, a Python AST — and
//! so does what it reports (a finding with nodes, a finding with source frames, a diagnostic with
//! a byte-range fix). The kernel does not abstract over that: each domain keeps its own check
//! trait, context and sink, and [`code_table!`] only names the check of each row (`CHECKS`, in
//! row order; [`enabled`] pairs them with their rows, less the ignored codes). A generic check
//! trait would buy one line per domain and cost every rule a pair of associated types. Lint's
//! fix model (edits, applicability) stays in lint.

mod pages;
mod register;
mod severity;

pub use pages::{CodeDocs, CodePage, Fact, Registry, StableCode, clean, summary};
pub use register::{CodeInfo, Documented, Table, enabled};
pub use severity::Severity;
