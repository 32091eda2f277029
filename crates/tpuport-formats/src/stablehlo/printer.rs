//! Writes a [`Model`] as MLIR text in the generic op form:
//! `%v3 = "stablehlo.add"(%v1, %v2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`.
//!
//! Inherent attributes go in `<{...}>` (properties), the rest in `{...}`; regions are
//! `({ ^bb0(%a: T): ... })`; the module and functions are generic `builtin.module` /
//! `func.func` ops. Values are renamed (`%arg0`, `%v12`, `%v12#1`) so graphs from any source
//! print as valid SSA. Attributes named `tpuport.*` are importer annotations and are not
//! written (see [`super::build`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use tpuport_model::{Attr, Graph, Model, ModelFormat, Node, ValueId, ValueKind};

use super::consts;
use super::lexer::quote;
use super::pretty::arr;
use super::types::render;
use crate::FormatError;

/// Printing choices.
#[derive(Clone, Copy, Debug)]
pub struct PrintOptions {
    /// Write `loc(...)` after each op that has a location.
    pub locations: bool,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions { locations: true }
    }
}

/// Prints `model` with default options.
///
/// # Errors
/// [`FormatError::Unsupported`] when a value's type has no MLIR spelling (unknown dtype) or a
/// weight's bytes cannot be read.
pub fn print_model(model: &Model) -> Result<String, FormatError> {
    print_model_with(model, PrintOptions::default())
}

/// Prints `model`.
///
/// # Errors
/// As [`print_model`].
pub fn print_model_with(model: &Model, opts: PrintOptions) -> Result<String, FormatError> {
    let mut p = Printer { model, opts, out: String::new(), counter: 0 };
    p.module()?;
    Ok(p.out)
}

/// Attribute names that are properties of the StableHLO, CHLO, func and Shardy ops.
const INHERENT: &[&str] = &[
    "value",
    "iota_dimension",
    "broadcast_dimensions",
    "known_expanding_dimensions",
    "known_nonexpanding_dimensions",
    "permutation",
    "start_indices",
    "limit_indices",
    "strides",
    "slice_sizes",
    "dimension",
    "dimensions",
    "edge_padding_low",
    "edge_padding_high",
    "interior_padding",
    "comparison_direction",
    "compare_type",
    "dot_dimension_numbers",
    "precision_config",
    "algorithm",
    "dimension_numbers",
    "window_strides",
    "padding",
    "lhs_dilation",
    "rhs_dilation",
    "window_reversal",
    "feature_group_count",
    "batch_group_count",
    "window_dimensions",
    "base_dilations",
    "window_dilations",
    "indices_are_sorted",
    "unique_indices",
    "scatter_dimension_numbers",
    "call_target_name",
    "has_side_effect",
    "backend_config",
    "api_version",
    "called_computations",
    "operand_layouts",
    "result_layouts",
    "output_operand_aliases",
    "is_stable",
    "index",
    "rng_algorithm",
    "rng_distribution",
    "exponent_bits",
    "mantissa_bits",
    "fft_type",
    "fft_length",
    "lower",
    "left_side",
    "unit_diagonal",
    "transpose_a",
    "replica_groups",
    "channel_handle",
    "use_global_device_ids",
    "all_gather_dim",
    "scatter_dimension",
    "split_dimension",
    "concat_dimension",
    "split_count",
    "source_target_pairs",
    "epsilon",
    "feature_index",
    "infeed_config",
    "outfeed_config",
    "layout",
    "is_host_transfer",
    "name",
    "composite_attributes",
    "decomposition",
    "version",
    "broadcast_sizes",
    "result_accuracy",
    "einsum_config",
    "callee",
    "sharding",
    "mesh",
    "sym_name",
    "in_shardings",
    "out_shardings",
    "manual_axes",
    "function_type",
    "sym_visibility",
    "arg_attrs",
    "res_attrs",
    "no_inline",
];

/// True when `attr` is a property (inherent attribute) of `op`.
pub(crate) fn is_inherent(op: &str, attr: &str) -> bool {
    let dialect = op.split('.').next().unwrap_or("");
    !attr.contains('.')
        && matches!(dialect, "stablehlo" | "chlo" | "func" | "sdy" | "builtin")
        && INHERENT.contains(&attr)
}

/// `<{props}> {attrs}` for already-rendered entries; either part omitted when empty.
pub(crate) fn attr_groups(op: &str, entries: &[(String, String)]) -> (String, String) {
    let render = |e: &[&(String, String)]| {
        e.iter()
            .map(|(k, v)| {
                let k = if is_bare_name(k) { k.clone() } else { quote(k) };
                if v == "unit" { k } else { format!("{k} = {v}") }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    type Refs<'e> = Vec<&'e (String, String)>;
    let (props, rest): (Refs<'_>, Refs<'_>) = entries.iter().partition(|(k, _)| is_inherent(op, k));
    let props = if props.is_empty() { String::new() } else { format!(" <{{{}}}>", render(&props)) };
    let rest = if rest.is_empty() { String::new() } else { format!(" {{{}}}", render(&rest)) };
    (props, rest)
}

fn is_bare_name(k: &str) -> bool {
    let mut c = k.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && k.chars().all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '$'))
}

/// Per-graph printing scope: original value name to (printed name, type text).
type Names = HashMap<String, (String, String)>;

struct Printer<'m> {
    model: &'m Model,
    opts: PrintOptions,
    out: String,
    counter: usize,
}

fn unsupported(what: String) -> FormatError {
    FormatError::unsupported(Path::new("<printed model>"), what)
}

impl Printer<'_> {
    fn module(&mut self) -> Result<(), FormatError> {
        let props = &self.model.metadata.properties;
        let mut name = None;
        let mut attrs = Vec::new();
        let mut module_ops = Vec::new();
        for (k, v) in props {
            match k.as_str() {
                "sym_name" => name = Some(v.clone()),
                "mlir.alias" => {
                    self.out.push_str(v);
                    self.out.push('\n');
                }
                "mlir.module_op" => module_ops.push(v.clone()),
                _ if k.contains('.') && is_bare_name(k) && !k.starts_with("tpuport.") => {
                    attrs.push((k.clone(), v.clone()));
                }
                _ => {}
            }
        }
        self.out.push_str("\"builtin.module\"()");
        if let Some(n) = name {
            let _ = write!(self.out, " <{{sym_name = {}}}>", quote(&n));
        }
        self.out.push_str(" ({\n");
        for op in module_ops {
            let _ = writeln!(self.out, "  {op}");
        }
        let graphs: Vec<&Graph> = std::iter::once(&self.model.graph)
            .filter(|g| !g.name.is_empty() || !g.nodes.is_empty() || !g.inputs.is_empty())
            .chain(self.model.functions.iter())
            .collect();
        for g in graphs {
            self.func(g)?;
        }
        self.out.push_str("})");
        let (_, rest) = attr_groups("builtin.module", &attrs);
        self.out.push_str(&rest);
        self.out.push_str(" : () -> ()\n");
        Ok(())
    }

    fn func(&mut self, g: &Graph) -> Result<(), FormatError> {
        self.counter = 0;
        let mut names = Names::new();
        let mut local: HashMap<ValueId, (String, String)> = HashMap::new();
        let mut arg_types = Vec::new();
        for (i, &id) in g.inputs.iter().enumerate() {
            let ty = self.input_type(g, i, id)?;
            let n = format!("%arg{i}");
            arg_types.push(ty.clone());
            names.insert(g.value(id).name.clone(), (n.clone(), ty.clone()));
            local.insert(id, (n, ty));
        }
        let external = attr_str(&g.attrs, "tpuport.external").is_some();
        let mut res_types = Vec::new();
        let n_res = if external { count_indexed(&g.attrs, "res") } else { g.outputs.len() };
        for i in 0..n_res {
            if let Some(t) = attr_str(&g.attrs, &format!("res{i}:tpuport.type")) {
                res_types.push(t.to_owned());
            } else if let Some(&id) = g.outputs.get(i) {
                res_types.push(self.plain_type(g, id)?);
            }
        }
        let mut entries: Vec<(String, String)> = Vec::new();
        let fn_type = format!("({}) -> {}", arg_types.join(", "), result_list(&res_types));
        entries.push(("function_type".to_owned(), fn_type));
        entries.push(("sym_name".to_owned(), quote(&g.name)));
        if let Some(v) = attr_str(&g.attrs, "sym_visibility") {
            entries.push(("sym_visibility".to_owned(), quote(v)));
        }
        if let Some(a) = self.indexed_dicts(g, "arg", g.inputs.len())? {
            entries.push(("arg_attrs".to_owned(), a));
        }
        if let Some(a) = self.indexed_dicts(g, "res", n_res)? {
            entries.push(("res_attrs".to_owned(), a));
        }
        for (k, v) in &g.attrs {
            if k.contains(':') || k.starts_with("tpuport.") || k == "sym_visibility" {
                continue;
            }
            entries.push((k.clone(), self.attr_text(v)?));
        }
        let (props, rest) = attr_groups("func.func", &entries);
        let _ = writeln!(self.out, "  \"func.func\"(){props} ({{");
        if !external {
            let args: Vec<String> = g
                .inputs
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let (n, t) = &local[id];
                    format!("{n}: {t}{}", self.arg_loc(g, i))
                })
                .collect();
            let _ = writeln!(self.out, "  ^bb0({}):", args.join(", "));
            self.body(g, &[], names, &mut local, 2, "func.return")?;
        }
        let _ = writeln!(self.out, "  }}){rest} : () -> ()");
        Ok(())
    }

    /// `[{a = 1}, {}]` from `arg{i}:name` graph attributes, or `None` when all are empty.
    fn indexed_dicts(
        &self,
        g: &Graph,
        prefix: &str,
        n: usize,
    ) -> Result<Option<String>, FormatError> {
        let mut dicts = vec![Vec::new(); n];
        let mut any = false;
        for (k, v) in &g.attrs {
            let Some((head, name)) = k.split_once(':') else { continue };
            let Some(i) = head.strip_prefix(prefix).and_then(|i| i.parse::<usize>().ok()) else {
                continue;
            };
            if name.starts_with("tpuport.") || i >= n {
                continue;
            }
            let text = self.attr_text(v)?;
            let entry = if text == "unit" { name.to_owned() } else { format!("{name} = {text}") };
            dicts[i].push(entry);
            any = true;
        }
        Ok(any.then(|| {
            let parts: Vec<String> =
                dicts.iter().map(|d| format!("{{{}}}", d.join(", "))).collect();
            format!("[{}]", parts.join(", "))
        }))
    }

    fn input_type(&self, g: &Graph, i: usize, id: ValueId) -> Result<String, FormatError> {
        if let Some(t) = attr_str(&g.attrs, &format!("arg{i}:tpuport.type")) {
            return Ok(t.to_owned());
        }
        self.plain_type(g, id)
    }

    /// The type of a value from its own record (producer annotations, rendering).
    fn plain_type(&self, g: &Graph, id: ValueId) -> Result<String, FormatError> {
        let v = g.value(id);
        if let Some(node) = v.producer.map(|n| g.node(n))
            && let Some(Attr::Strs(ts)) = node.attr("tpuport.result_types")
            && let Some(t) = node.outputs.iter().position(|&o| o == id).and_then(|k| ts.get(k))
        {
            return Ok(t.clone());
        }
        if v.kind == ValueKind::Input
            && let Some(i) = g.inputs.iter().position(|&x| x == id)
            && let Some(t) = attr_str(&g.attrs, &format!("arg{i}:tpuport.type"))
        {
            return Ok(t.to_owned());
        }
        render(&v.ty).ok_or_else(|| {
            unsupported(format!(
                "value {} in `{}` has type {} with no MLIR spelling",
                v.name, g.name, v.ty
            ))
        })
    }

    fn fresh(&mut self) -> String {
        let n = self.counter;
        self.counter += 1;
        format!("%v{n}")
    }

    /// Prints a graph's nodes and its terminator.
    fn body(
        &mut self,
        g: &Graph,
        outer: &[&Names],
        mut names: Names,
        local: &mut HashMap<ValueId, (String, String)>,
        indent: usize,
        term: &str,
    ) -> Result<(), FormatError> {
        let resolve = |id: ValueId,
                       local: &mut HashMap<ValueId, (String, String)>,
                       names: &Names|
         -> Result<(String, String), FormatError> {
            if let Some(e) = local.get(&id) {
                return Ok(e.clone());
            }
            let v = g.value(id);
            let found = names
                .get(&v.name)
                .cloned()
                .or_else(|| outer.iter().rev().find_map(|s| s.get(&v.name).cloned()));
            let e = found.ok_or_else(|| {
                unsupported(format!("value {} in `{}` is used but never defined", v.name, g.name))
            })?;
            local.insert(id, e.clone());
            Ok(e)
        };
        let pad = "  ".repeat(indent);
        for node in &g.nodes {
            let mut ins = Vec::new();
            for id in node.inputs.iter().flatten() {
                ins.push(resolve(*id, local, &names)?);
            }
            let group = self.fresh();
            let mut outs = Vec::new();
            for (k, &id) in node.outputs.iter().enumerate() {
                let n =
                    if node.outputs.len() == 1 { group.clone() } else { format!("{group}#{k}") };
                let t = self.plain_type(g, id)?;
                names.insert(g.value(id).name.clone(), (n.clone(), t.clone()));
                local.insert(id, (n, t.clone()));
                outs.push(t);
            }
            self.out.push_str(&pad);
            match node.outputs.len() {
                0 => {}
                1 => {
                    let _ = write!(self.out, "{group} = ");
                }
                k => {
                    let _ = write!(self.out, "{group}:{k} = ");
                }
            }
            let mut entries = Vec::new();
            for (k, v) in &node.attrs {
                if k.starts_with("tpuport.") || matches!(v, Attr::Graph(_) | Attr::Graphs(_)) {
                    continue;
                }
                entries.push((k.clone(), self.attr_text(v)?));
            }
            let (props, rest) = attr_groups(&node.op, &entries);
            let operands: Vec<&str> = ins.iter().map(|(n, _)| n.as_str()).collect();
            let _ = write!(self.out, "{}({}){props}", quote(&node.op), operands.join(", "));
            if !node.subgraphs.is_empty() {
                self.out.push_str(" (");
                let inner_scopes: Vec<&Names> =
                    outer.iter().copied().chain(std::iter::once(&names)).collect();
                for (i, (_, sg)) in node.subgraphs.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.region(sg, &inner_scopes, indent)?;
                }
                self.out.push(')');
            }
            let in_types: Vec<&str> = ins.iter().map(|(_, t)| t.as_str()).collect();
            let _ =
                write!(self.out, "{rest} : ({}) -> {}", in_types.join(", "), result_list(&outs));
            self.loc(node);
            self.out.push('\n');
        }
        let mut rets = Vec::new();
        for &id in &g.outputs {
            rets.push(resolve(id, local, &names)?);
        }
        let term = attr_str(&g.attrs, "tpuport.terminator").unwrap_or(term);
        let ops: Vec<&str> = rets.iter().map(|(n, _)| n.as_str()).collect();
        let tys: Vec<&str> = rets.iter().map(|(_, t)| t.as_str()).collect();
        let _ = writeln!(
            self.out,
            "{pad}{}({}) : ({}) -> ()",
            quote(term),
            ops.join(", "),
            tys.join(", ")
        );
        Ok(())
    }

    fn region(&mut self, sg: &Graph, outer: &[&Names], indent: usize) -> Result<(), FormatError> {
        let mut local = HashMap::new();
        let mut names = Names::new();
        let mut args = Vec::new();
        for (i, &id) in sg.inputs.iter().enumerate() {
            let t = self.input_type(sg, i, id)?;
            let n = self.fresh();
            args.push(format!("{n}: {t}{}", self.arg_loc(sg, i)));
            names.insert(sg.value(id).name.clone(), (n.clone(), t.clone()));
            local.insert(id, (n, t));
        }
        let pad = "  ".repeat(indent);
        self.out.push_str("{\n");
        if !args.is_empty() {
            let _ = writeln!(self.out, "{pad}^bb0({}):", args.join(", "));
        }
        self.body(sg, outer, names, &mut local, indent + 1, "stablehlo.return")?;
        let _ = write!(self.out, "{pad}}}");
        Ok(())
    }

    fn loc(&mut self, node: &Node) {
        if let Some(l) = &node.location {
            let t = self.loc_text(l);
            self.out.push_str(&t);
        }
    }

    /// ` loc(...)` for argument `i` of `g`, or nothing.
    fn arg_loc(&self, g: &Graph, i: usize) -> String {
        attr_str(&g.attrs, &format!("arg{i}:tpuport.loc"))
            .map_or_else(String::new, |l| self.loc_text(l))
    }

    /// ` loc(...)` for a stored location: verbatim when it came from MLIR, quoted otherwise.
    fn loc_text(&self, l: &str) -> String {
        if !self.opts.locations {
            return String::new();
        }
        let from_mlir = matches!(
            self.model.format,
            ModelFormat::StablehloText | ModelFormat::StablehloBytecode
        );
        if from_mlir && looks_like_loc(l) {
            format!(" loc({l})")
        } else {
            format!(" loc({})", quote(l))
        }
    }

    /// An attribute's generic-form text.
    fn attr_text(&self, a: &Attr) -> Result<String, FormatError> {
        Ok(match a {
            Attr::Int(v) => format!("{v} : i64"),
            Attr::Float(v) => format!("{} : f64", float(*v)),
            Attr::Str(s) => quote(s),
            Attr::Ints(v) => arr(v),
            Attr::Floats(v) => {
                if v.is_empty() {
                    "array<f64>".to_owned()
                } else {
                    let f: Vec<String> = v.iter().map(|x| float(*x)).collect();
                    format!("array<f64: {}>", f.join(", "))
                }
            }
            Attr::Strs(v) => {
                let q: Vec<String> = v.iter().map(|s| quote(s)).collect();
                format!("[{}]", q.join(", "))
            }
            Attr::Text(t) => t.clone(),
            Attr::Type(t) => render(t)
                .ok_or_else(|| unsupported(format!("type attribute {t} has no MLIR spelling")))?,
            Attr::Weight(id) => {
                let w = self.model.weights.get(*id);
                let ty = tpuport_model::TensorType::new(w.dtype, w.shape());
                let ty = render(&ty).ok_or_else(|| {
                    unsupported(format!(
                        "weight `{}` has dtype {} with no MLIR spelling",
                        w.name, w.dtype
                    ))
                })?;
                let bytes =
                    w.bytes().map_err(|e| unsupported(format!("weight `{}`: {e}", w.name)))?;
                format!("dense<\"0x{}\"> : {ty}", consts::hex(&bytes))
            }
            Attr::Graph(_) | Attr::Graphs(_) => String::new(),
        })
    }
}

fn float(v: f64) -> String {
    if v.is_finite() { format!("{v:.17e}") } else { format!("0x{:016X}", v.to_bits()) }
}

fn result_list(ts: &[String]) -> String {
    if ts.len() == 1 { ts[0].clone() } else { format!("({})", ts.join(", ")) }
}

fn attr_str<'a>(attrs: &'a [(String, Attr)], name: &str) -> Option<&'a str> {
    attrs.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.as_str())
}

/// Highest `res{i}:` index + 1 among graph attributes.
fn count_indexed(attrs: &[(String, Attr)], prefix: &str) -> usize {
    attrs
        .iter()
        .filter_map(|(k, _)| k.split_once(':')?.0.strip_prefix(prefix)?.parse::<usize>().ok())
        .map(|i| i + 1)
        .max()
        .unwrap_or(0)
}

/// Whether a stored location is MLIR location syntax (from an MLIR import).
fn looks_like_loc(l: &str) -> bool {
    let starts = l.starts_with('"')
        || l.starts_with("callsite(")
        || l.starts_with("fused")
        || l == "unknown";
    let mut depth: i64 = 0;
    let mut in_str = false;
    let mut esc = false;
    for c in l.chars() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    starts && depth == 0 && !in_str
}
