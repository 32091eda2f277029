//! The parsed module as a [`Model`]: `@main` (or the public function) becomes the graph, other
//! functions go to `Model::functions`, regions become node subgraphs, large constants go to
//! the weight store.
//!
//! Conventions (shared with the printer):
//! - attributes keep their generic names; `array<i64: ..>` becomes [`Attr::Ints`], `N : i64`
//!   [`Attr::Int`], a plain string [`Attr::Str`], everything else verbatim [`Attr::Text`];
//! - attributes named `tpuport.*` are importer annotations, never written back as MLIR:
//!   `tpuport.result_types` (the MLIR spelling of result types the neutral type cannot hold,
//!   such as `!stablehlo.token`), `tpuport.unparsed` (raw text of an unknown pretty form),
//!   derived dimension numbers (`tpuport.lhs_contracting_dimensions`, ...);
//! - function and region graphs carry per-argument and per-result attributes as
//!   `arg{i}:{name}` / `res{i}:{name}` graph attributes (`res0:jax.result_info`,
//!   `arg1:mhlo.sharding`, `arg0:tpuport.type`, `arg0:tpuport.loc`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tpuport_model::{
    Attr, Graph, Model, Node, NoteLevel, TensorType, Value, ValueId, ValueKind, Weight, WeightData,
};

use super::ast::{Arg, Func, Module, Op, Region, Type};
use super::consts::{self, Dense};
use super::lexer;
use super::loc::Resolver;
use super::types::render;
use crate::FormatError;

/// Non-splat constants with at least this many elements become weights.
pub(crate) const WEIGHT_MIN_ELEMENTS: u64 = 64;

#[derive(Clone)]
struct Entry {
    id: ValueId,
    ty: TensorType,
    text: String,
}

type Scope = HashMap<String, Entry>;

/// Builds model graphs from a parsed module.
pub(crate) struct Builder<'a> {
    path: &'a Path,
    src: &'a str,
    module: &'a Module,
    locs: Resolver<'a>,
    model: Model,
    func: String,
    noted: Vec<String>,
}

impl<'a> Builder<'a> {
    /// A builder writing into `model`.
    pub(crate) fn new(
        path: &'a Path,
        src: &'a str,
        module: &'a Module,
        model: Model,
    ) -> Builder<'a> {
        Builder {
            path,
            src,
            module,
            locs: Resolver::new(&module.loc_aliases),
            model,
            func: String::new(),
            noted: Vec::new(),
        }
    }

    /// Builds every function; returns the model.
    pub(crate) fn run(mut self) -> Result<Model, FormatError> {
        let m = self.module;
        let main = pick_main(&m.funcs);
        for (i, f) in m.funcs.iter().enumerate() {
            let g = self.func(f)?;
            if Some(i) == main {
                self.model.graph = g;
            } else {
                self.model.functions.push(g);
            }
        }
        Ok(self.model)
    }

    fn invalid(&self, at: usize, what: impl std::fmt::Display) -> FormatError {
        let (l, c) = lexer::line_col(self.src.as_bytes(), at);
        FormatError::invalid(self.path, format!("{l}:{c}: {what}"))
    }

    fn note_once(&mut self, code: &str, key: &str, msg: String) {
        let k = format!("{code}:{key}");
        if !self.noted.contains(&k) {
            self.noted.push(k);
            self.model.note(NoteLevel::Warning, code, msg);
        }
    }

    fn func(&mut self, f: &Func) -> Result<Graph, FormatError> {
        self.func = f.name.clone();
        let mut g = Graph { name: f.name.clone(), ..Graph::default() };
        if let Some(v) = &f.visibility {
            g.attrs.push(("sym_visibility".to_owned(), Attr::Str(v.clone())));
        }
        for (k, v) in &f.attrs {
            g.attrs.push((k.clone(), to_attr(v)));
        }
        let mut scope = Scope::new();
        self.args(&mut g, &mut scope, &f.args);
        for (i, (ty, attrs)) in f.results.iter().enumerate() {
            if f.external || needs_text(ty) {
                g.attrs.push((format!("res{i}:tpuport.type"), Attr::Str(ty.text.clone())));
            }
            for (k, v) in attrs {
                g.attrs.push((format!("res{i}:{k}"), to_attr(v)));
            }
        }
        if f.external {
            g.attrs.push(("tpuport.external".to_owned(), Attr::Str("true".to_owned())));
            return Ok(g);
        }
        let mut scopes = vec![scope];
        g.outputs = self.block(&mut g, &f.body.ops, &mut scopes, "func.return")?;
        Ok(g)
    }

    fn args(&mut self, g: &mut Graph, scope: &mut Scope, args: &[Arg]) {
        for (i, a) in args.iter().enumerate() {
            let id = g.add_value(Value {
                name: a.name.clone(),
                ty: a.ty.tt.clone(),
                kind: ValueKind::Input,
                producer: None,
            });
            g.inputs.push(id);
            scope
                .insert(a.name.clone(), Entry { id, ty: a.ty.tt.clone(), text: a.ty.text.clone() });
            if needs_text(&a.ty) {
                g.attrs.push((format!("arg{i}:tpuport.type"), Attr::Str(a.ty.text.clone())));
            }
            for (k, v) in &a.attrs {
                g.attrs.push((format!("arg{i}:{k}"), to_attr(v)));
            }
            if let Some(l) = a.loc.as_deref().and_then(|l| self.locs.resolve(l)) {
                g.attrs.push((format!("arg{i}:tpuport.loc"), Attr::Str(l)));
            }
        }
    }

    /// Builds a block's ops into `g`; returns the terminator's operands.
    fn block(
        &mut self,
        g: &mut Graph,
        ops: &[Op],
        scopes: &mut Vec<Scope>,
        term: &str,
    ) -> Result<Vec<ValueId>, FormatError> {
        for (i, op) in ops.iter().enumerate() {
            let last = i + 1 == ops.len();
            if last && op.results.is_empty() && is_terminator(&op.name) {
                let mut outs = Vec::with_capacity(op.operands.len());
                for o in &op.operands {
                    outs.push(self.lookup(g, scopes, o, op.at)?);
                }
                if op.name != term {
                    g.attrs.push(("tpuport.terminator".to_owned(), Attr::Str(op.name.clone())));
                }
                return Ok(outs);
            }
            self.node(g, op, scopes)?;
        }
        Ok(Vec::new())
    }

    fn lookup(
        &self,
        g: &mut Graph,
        scopes: &mut [Scope],
        name: &str,
        at: usize,
    ) -> Result<ValueId, FormatError> {
        let alt = if name.contains('#') { None } else { Some(format!("{name}#0")) };
        for key in std::iter::once(name).chain(alt.as_deref()) {
            let (inner, outer) =
                scopes.split_last_mut().ok_or_else(|| self.invalid(at, "no scope"))?;
            if let Some(e) = inner.get(key) {
                return Ok(e.id);
            }
            if let Some(e) = outer.iter().rev().find_map(|s| s.get(key)) {
                let id = g.add_value(Value {
                    name: key.to_owned(),
                    ty: e.ty.clone(),
                    kind: ValueKind::Outer,
                    producer: None,
                });
                let entry = Entry { id, ty: e.ty.clone(), text: e.text.clone() };
                inner.insert(key.to_owned(), entry);
                return Ok(id);
            }
        }
        Err(self.invalid(at, format!("use of undefined value {name}")))
    }

    fn node(&mut self, g: &mut Graph, op: &Op, scopes: &mut Vec<Scope>) -> Result<(), FormatError> {
        let mut inputs = Vec::with_capacity(op.operands.len());
        for o in &op.operands {
            inputs.push(Some(self.lookup(g, scopes, o, op.at)?));
        }
        let mut attrs: Vec<(String, Attr)> = Vec::with_capacity(op.attrs.len());
        for (k, v) in &op.attrs {
            let a = if k == "value" && op.name == "stablehlo.constant" {
                self.constant(op, v)?
            } else {
                to_attr(v)
            };
            attrs.push((k.clone(), a));
        }
        derive(&op.name, &mut attrs);
        if op.types.iter().any(needs_text) {
            attrs.push((
                "tpuport.result_types".to_owned(),
                Attr::Strs(op.types.iter().map(|t| t.text.clone()).collect()),
            ));
        }
        if let Some(u) = &op.unparsed {
            attrs.push(("tpuport.unparsed".to_owned(), Attr::Str(u.clone())));
            self.note_once(
                "unparsed-op-syntax",
                &op.name,
                format!("`{}` is written in a form this importer does not read field by field; its attributes are kept as text", op.name),
            );
        }
        let mut subgraphs = Vec::with_capacity(op.regions.len());
        for (rname, region) in &op.regions {
            subgraphs.push((rname.clone(), self.region(rname, region, scopes)?));
        }
        let mut outputs = Vec::with_capacity(op.results.len());
        for (r, ty) in op.results.iter().zip(&op.types) {
            let id = g.add_value(Value {
                name: r.clone(),
                ty: ty.tt.clone(),
                kind: ValueKind::Intermediate,
                producer: None,
            });
            if let Some(s) = scopes.last_mut() {
                s.insert(r.clone(), Entry { id, ty: ty.tt.clone(), text: ty.text.clone() });
            }
            outputs.push(id);
        }
        let domain = op.name.split_once('.').map_or("", |(d, _)| d).to_owned();
        let location = op.loc.as_deref().and_then(|l| self.locs.resolve(l));
        g.add_node(Node {
            name: op.results.first().cloned().unwrap_or_default(),
            op: op.name.clone(),
            domain,
            inputs,
            outputs,
            attrs,
            subgraphs,
            location,
            scope: None,
        });
        Ok(())
    }

    fn region(
        &mut self,
        name: &str,
        r: &Region,
        scopes: &mut Vec<Scope>,
    ) -> Result<Graph, FormatError> {
        let mut g = Graph { name: name.to_owned(), ..Graph::default() };
        let mut scope = Scope::new();
        self.args(&mut g, &mut scope, &r.args);
        scopes.push(scope);
        let outs = self.block(&mut g, &r.ops, scopes, "stablehlo.return");
        scopes.pop();
        g.outputs = outs?;
        Ok(g)
    }

    /// A constant's `value`: a weight when large, dense and decodable; otherwise the text.
    fn constant(&mut self, op: &Op, text: &str) -> Result<Attr, FormatError> {
        let Some(ty) = op.types.first() else { return Ok(to_attr(text)) };
        let (Some(dtype), Some(shape)) = (ty.tt.dtype, ty.tt.shape.as_ref()) else {
            return Ok(to_attr(text));
        };
        let Ok(elements) = shape.elements() else { return Ok(to_attr(text)) };
        let Some(dims) = shape.as_fixed() else { return Ok(to_attr(text)) };
        let value = text.split_once(" : ").map_or(text, |(v, _)| v).trim();
        let data =
            if let Some(body) = value.strip_prefix("dense<").and_then(|b| b.strip_suffix('>')) {
                if elements < WEIGHT_MIN_ELEMENTS {
                    return Ok(to_attr(text));
                }
                match consts::decode(body, dtype, elements) {
                    Some(Dense::Full(b)) => b,
                    _ => return Ok(to_attr(text)),
                }
            } else if let Some(key) =
                value.strip_prefix("dense_resource<").and_then(|b| b.strip_suffix('>'))
            {
                let Some(hex) = self.module.resources.get(key.trim()) else {
                    self.note_once(
                        "elided-constant",
                        key,
                        format!(
                            "constant {} refers to resource `{key}` whose data is not in the file",
                            op.results.first().map_or("", String::as_str)
                        ),
                    );
                    return Ok(to_attr(text));
                };
                let need = dtype.storage_bytes(elements).unwrap_or(u64::MAX);
                let bytes = hex
                    .strip_prefix("0x")
                    .and_then(consts::unhex)
                    .filter(|b| b.len() as u64 == need + 4);
                let Some(bytes) = bytes.filter(|_| consts::decodable(dtype)) else {
                    return Err(self.invalid(
                        op.at,
                        format!("resource `{key}` does not hold {need} bytes for {}", ty.text),
                    ));
                };
                bytes[4..].to_vec()
            } else {
                return Ok(to_attr(text));
            };
        let base = format!("{}/{}", self.func, op.results.first().map_or("const", String::as_str));
        let mut name = base.clone();
        let mut k = 1;
        while self.model.weights.id_of(&name).is_some() {
            name = format!("{base}.{k}");
            k += 1;
        }
        let id = self.model.weights.push(Weight {
            name,
            dtype,
            shape: dims,
            data: WeightData::Inline(Arc::from(data)),
        });
        Ok(Attr::Weight(id))
    }
}

/// Index of the entry function: `@main`, else the only public one, else the first.
fn pick_main(funcs: &[Func]) -> Option<usize> {
    if let Some(i) = funcs.iter().position(|f| f.name == "main") {
        return Some(i);
    }
    if let Some(i) =
        funcs.iter().position(|f| f.visibility.as_deref() != Some("private") && !f.external)
    {
        return Some(i);
    }
    (!funcs.is_empty()).then_some(0)
}

fn is_terminator(name: &str) -> bool {
    name.ends_with(".return") || name.ends_with(".yield") || name == "func.return"
}

/// True when the neutral type cannot reproduce the MLIR spelling.
pub(crate) fn needs_text(t: &Type) -> bool {
    render(&t.tt).as_deref() != Some(t.text.as_str())
}

/// Attribute text to the neutral attribute (see the module docs).
pub(crate) fn to_attr(text: &str) -> Attr {
    let t = text.trim();
    if let Some(body) = t.strip_prefix("array<i64").and_then(|r| r.strip_suffix('>')) {
        let body = body.trim();
        if body.is_empty() {
            return Attr::Ints(Vec::new());
        }
        if let Some(list) = body.strip_prefix(':') {
            let v: Option<Vec<i64>> = list.split(',').map(|x| x.trim().parse().ok()).collect();
            if let Some(v) = v {
                return Attr::Ints(v);
            }
        }
    }
    if let Some(n) = t.strip_suffix(" : i64").and_then(|n| n.trim().parse::<i64>().ok()) {
        return Attr::Int(n);
    }
    if t.len() >= 2
        && t.starts_with('"')
        && t.ends_with('"')
        && lexer::lex(t.as_bytes(), 0)
            .is_ok_and(|tok| tok.kind == lexer::Kind::Str && tok.end == t.len())
    {
        return Attr::Str(lexer::unescape(&t[1..t.len() - 1]));
    }
    Attr::Text(t.to_owned())
}

/// Adds `tpuport.*` integer lists read from dimension-number attributes.
fn derive(op: &str, attrs: &mut Vec<(String, Attr)>) {
    let text = |name: &str| {
        attrs.iter().find(|(k, _)| k == name).and_then(|(_, a)| a.as_str().map(str::to_owned))
    };
    let mut extra: Vec<(String, Attr)> = Vec::new();
    if op == "stablehlo.dot_general"
        && let Some(t) = text("dot_dimension_numbers")
    {
        for f in [
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
        ] {
            extra.push((format!("tpuport.{f}"), Attr::Ints(field_ints(&t, f))));
        }
    } else if op == "stablehlo.convolution"
        && let Some(parts) = text("dimension_numbers").as_deref().and_then(conv_parts)
    {
        extra.extend(parts);
    }
    attrs.extend(extra);
}

/// `name = [1, 2]` inside a `#stablehlo.dot<...>`-style text.
fn field_ints(text: &str, name: &str) -> Vec<i64> {
    let Some(i) = text.find(&format!("{name} = [")) else { return Vec::new() };
    let rest = &text[i + name.len() + 4..];
    let Some(end) = rest.find(']') else { return Vec::new() };
    rest[..end].split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

/// `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>` as per-role dimension indices.
fn conv_parts(text: &str) -> Option<Vec<(String, Attr)>> {
    let inner = text.strip_prefix("#stablehlo.conv<")?.strip_suffix('>')?;
    let (lhs, rest) = inner.split_once("]x[")?;
    let (rhs, out) = rest.split_once("]->[")?;
    let list = |s: &str| -> Vec<String> {
        s.trim_matches(|c| c == '[' || c == ']').split(',').map(|x| x.trim().to_owned()).collect()
    };
    let (l, r, o) = (list(lhs), list(rhs), list(out));
    let pos = |v: &[String], key: &str| v.iter().position(|x| x == key).map(|p| p as i64);
    let spatial = |v: &[String]| -> Vec<i64> {
        let mut s: Vec<(u64, i64)> = v
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.parse::<u64>().ok().map(|n| (n, i as i64)))
            .collect();
        s.sort_unstable();
        s.into_iter().map(|(_, i)| i).collect()
    };
    let mut out_attrs = Vec::new();
    let mut one = |name: &str, v: Option<i64>| {
        if let Some(v) = v {
            out_attrs.push((format!("tpuport.{name}"), Attr::Int(v)));
        }
    };
    one("input_batch_dimension", pos(&l, "b"));
    one("input_feature_dimension", pos(&l, "f"));
    one("kernel_input_feature_dimension", pos(&r, "i"));
    one("kernel_output_feature_dimension", pos(&r, "o"));
    one("output_batch_dimension", pos(&o, "b"));
    one("output_feature_dimension", pos(&o, "f"));
    out_attrs.push(("tpuport.input_spatial_dimensions".to_owned(), Attr::Ints(spatial(&l))));
    out_attrs.push(("tpuport.kernel_spatial_dimensions".to_owned(), Attr::Ints(spatial(&r))));
    out_attrs.push(("tpuport.output_spatial_dimensions".to_owned(), Attr::Ints(spatial(&o))));
    Some(out_attrs)
}
