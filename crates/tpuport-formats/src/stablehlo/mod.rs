//! StableHLO importer: MLIR text as JAX prints it (`jax.jit(f).lower(...).as_text()`,
//! `jax.export(...).mlir_module()`), in pretty or generic op form, and a header-only reading
//! of MLIR bytecode.
//!
//! Pipeline: [`lexer`] → [`parser`] (+ [`pretty`] op forms, [`types`]) → an AST in generic
//! shape → [`build`] → [`Model`]. [`printer`] writes a model back as generic-form MLIR that
//! the XLA PJRT plugins compile. Attribute and graph conventions are documented in [`build`].

pub mod build;
pub mod printer;

mod ast;
mod bytecode;
mod canon;
mod consts;
mod generic_func;
mod lexer;
mod loc;
mod parser;
mod pretty;
#[cfg(test)]
mod tests;
mod types;

use std::io::Read;
use std::path::Path;

use tpuport_model::{Attr, Framework, Model, ModelFormat};

pub use canon::{StructureOptions, structure};
pub use loc::short as short_location;
pub use printer::{PrintOptions, print_model, print_model_with};

use crate::{FormatError, ImportOptions, Importer, Limits};

/// Importer for StableHLO / MLIR text and bytecode.
#[derive(Debug)]
pub struct StablehloImporter;

impl Importer for StablehloImporter {
    fn name(&self) -> &'static str {
        "stablehlo"
    }

    fn sniff(&self, path: &Path, head: &[u8]) -> bool {
        if head.starts_with(bytecode::MAGIC) {
            return true;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        if matches!(ext.as_str(), "mlir" | "mlirbc" | "stablehlo") {
            return true;
        }
        looks_like_text(head)
    }

    fn import(&self, path: &Path, opts: &ImportOptions) -> Result<Model, FormatError> {
        let mut f = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
        let len = f.metadata().map_err(|e| FormatError::io(path, e))?.len();
        let mut magic = Vec::with_capacity(4);
        (&mut f).take(4).read_to_end(&mut magic).map_err(|e| FormatError::io(path, e))?;
        if magic == bytecode::MAGIC {
            return bytecode::import(path);
        }
        if len > opts.limits.max_inflated_bytes {
            return Err(FormatError::invalid(
                path,
                format!(
                    "MLIR text of {len} bytes exceeds Limits::max_inflated_bytes ({})",
                    opts.limits.max_inflated_bytes
                ),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            FormatError::invalid(
                path,
                format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
            )
        })?;
        parse_text(path, &text, &opts.limits)
    }
}

/// True when the first bytes look like MLIR text: after whitespace and `//` comments, one of
/// `module`, `func.func`, `#loc`, `"builtin.module"`, `"func.func"`.
fn looks_like_text(head: &[u8]) -> bool {
    let i = lexer::skip_trivia(head, 0);
    let rest = &head[i..];
    [&b"module"[..], b"func.func", b"#loc", b"\"builtin.module\"", b"\"func.func\""]
        .iter()
        .any(|p| rest.starts_with(p))
}

/// Parses MLIR text (already read) into a model; `path` names the source in errors.
///
/// # Errors
/// [`FormatError::Invalid`] with `line:col` and what was expected, for malformed text.
pub fn parse_text(path: &Path, text: &str, limits: &Limits) -> Result<Model, FormatError> {
    let mut p = parser::Parser::new(text, limits.max_nesting, limits.max_items);
    let module = p.parse_file().map_err(|e| {
        let (l, c) = lexer::line_col(text.as_bytes(), e.at);
        FormatError::invalid(path, format!("{l}:{c}: {}", e.what))
    })?;
    let mut model = Model::empty(ModelFormat::StablehloText);
    metadata(&module, &mut model);
    build::Builder::new(path, text, &module, model).run()
}

fn metadata(m: &ast::Module, model: &mut Model) {
    let md = &mut model.metadata;
    if let Some(n) = &m.name {
        md.properties.push(("sym_name".to_owned(), n.clone()));
    }
    for (k, v) in &m.attrs {
        md.properties.push((k.clone(), v.clone()));
    }
    for (k, v) in &m.aliases {
        md.properties.push(("mlir.alias".to_owned(), format!("{k} = {v}")));
    }
    for op in &m.others {
        let (props, rest) = printer::attr_groups(&op.name, &op.attrs);
        md.properties.push((
            "mlir.module_op".to_owned(),
            format!("{}(){props}{rest} : () -> ()", lexer::quote(&op.name)),
        ));
    }
    let jax_attr = m.attrs.iter().any(|(k, _)| {
        k.starts_with("jax.") || k == "mhlo.num_partitions" || k == "mhlo.num_replicas"
    });
    let result_info = m
        .funcs
        .iter()
        .any(|f| f.results.iter().any(|(_, a)| a.iter().any(|(k, _)| k == "jax.result_info")));
    let jit_name = m.name.as_deref().is_some_and(|n| n.starts_with("jit_"));
    if jax_attr || result_info || jit_name {
        md.framework = Framework::Jax;
        md.exporter = Some(
            if m.attrs.iter().any(|(k, _)| k == "jax.uses_shape_polymorphism") {
                "jax.export"
            } else {
                "jax.jit lower"
            }
            .to_owned(),
        );
    }
}

/// The attribute `name` of argument `i` of a function or region graph (`arg0:mhlo.sharding`).
#[must_use]
pub fn arg_attr<'g>(g: &'g tpuport_model::Graph, i: usize, name: &str) -> Option<&'g Attr> {
    let key = format!("arg{i}:{name}");
    g.attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The attribute `name` of result `i` of a function graph (`res0:jax.result_info`).
#[must_use]
pub fn result_attr<'g>(g: &'g tpuport_model::Graph, i: usize, name: &str) -> Option<&'g Attr> {
    let key = format!("res{i}:{name}");
    g.attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}
