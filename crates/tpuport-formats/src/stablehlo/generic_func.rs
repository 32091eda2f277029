//! A `func.func` written in generic form (as [`super::printer`] writes it):
//! `"func.func"() <{function_type = ..., sym_name = "f", arg_attrs = [...]}> ({...}) : () -> ()`.

use super::ast::{Func, Op, Type};
use super::parser::Parser;

/// Builds a [`Func`] from a generic `func.func` op; the error says what is missing.
pub(crate) fn from_generic(op: Op, max_depth: usize, max_items: u64) -> Result<Func, String> {
    let mut f = Func { at: op.at, loc: op.loc.clone(), ..Func::default() };
    let mut fn_type: Option<(Vec<Type>, Vec<Type>)> = None;
    let mut arg_attrs: Vec<Vec<(String, String)>> = Vec::new();
    let mut res_attrs: Vec<Vec<(String, String)>> = Vec::new();
    for (k, v) in op.attrs {
        match k.as_str() {
            "sym_name" => f.name = super::parser::symbol_name(&format!("@{v}")),
            "sym_visibility" => f.visibility = Some(super::lexer::unescape(v.trim_matches('"'))),
            "function_type" => {
                let mut p = Parser::new(&v, max_depth, max_items);
                let t = p.fn_type().map_err(|e| format!("bad function_type `{v}`: {}", e.what))?;
                fn_type = Some(t);
            }
            "arg_attrs" => arg_attrs = dict_list(&v, max_depth, max_items)?,
            "res_attrs" => res_attrs = dict_list(&v, max_depth, max_items)?,
            _ => f.attrs.push((k, v)),
        }
    }
    let Some((ins, outs)) = fn_type else {
        return Err("generic `func.func` without `function_type`".to_owned());
    };
    if f.name.is_empty() {
        return Err("generic `func.func` without `sym_name`".to_owned());
    }
    let mut regions = op.regions.into_iter();
    match regions.next() {
        Some((_, body)) if !body.ops.is_empty() || !body.args.is_empty() => {
            if body.args.len() != ins.len() {
                return Err(format!(
                    "function @{} declares {} parameters but its entry block has {}",
                    f.name,
                    ins.len(),
                    body.args.len()
                ));
            }
            f.args = body.args.clone();
            f.body = body;
        }
        _ => {
            f.external = true;
            f.args = ins
                .iter()
                .enumerate()
                .map(|(i, t)| super::ast::Arg {
                    name: format!("%arg{i}"),
                    ty: t.clone(),
                    attrs: Vec::new(),
                    loc: None,
                })
                .collect();
        }
    }
    for (a, attrs) in f.args.iter_mut().zip(arg_attrs) {
        a.attrs = attrs;
    }
    let mut res_attrs = res_attrs.into_iter();
    f.results = outs.into_iter().map(|t| (t, res_attrs.next().unwrap_or_default())).collect();
    Ok(f)
}

/// `[{a = 1}, {}]` as a list of dictionaries.
fn dict_list(
    text: &str,
    max_depth: usize,
    max_items: u64,
) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut p = Parser::new(text, max_depth, max_items);
    let bad = |e: super::parser::PErr| format!("bad attribute list `{text}`: {}", e.what);
    p.expect("[", "to open the list").map_err(bad)?;
    let mut out = Vec::new();
    if p.eat("]").map_err(bad)? {
        return Ok(out);
    }
    loop {
        out.push(p.attr_dict_plain().map_err(bad)?);
        if p.eat(",").map_err(bad)? {
            continue;
        }
        p.expect("]", "to close the list").map_err(bad)?;
        return Ok(out);
    }
}
