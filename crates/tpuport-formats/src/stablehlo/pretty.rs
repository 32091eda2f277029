//! Pretty (custom assembly) forms of the ops JAX prints, turned into the generic shape: the
//! attribute names and spellings are those of the generic form (`dims = [0, 1]` becomes
//! `broadcast_dimensions = array<i64: 0, 1>`), so the printer can write every op generically.
//!
//! An op whose pretty form is not known here is read as `operands [, kw = value]* [{attrs}] :
//! types`; if even that fails, its operands and types are recovered from the raw text and the
//! text itself is kept (`Op::unparsed`), never an import failure.

use super::ast::{Arg, Op, Region};
use super::lexer::{self, Kind};
use super::parser::{PResult, Parser};

/// Parses the rest of a pretty op whose name is already in `op.name`.
pub(crate) fn parse(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    match op.name.as_str() {
        "return" => op.name = "func.return".to_owned(),
        "call" => op.name = "func.call".to_owned(),
        _ => {}
    }
    let name = op.name.clone();
    match name.as_str() {
        "stablehlo.constant" => constant(p, op),
        "stablehlo.iota" => iota(p, op),
        "stablehlo.compare" => compare(p, op),
        "stablehlo.dot_general" | "stablehlo.dot" => keyword_form(p, op),
        "stablehlo.convolution" => convolution(p, op),
        "stablehlo.reduce" => reduce(p, op),
        "stablehlo.while" => while_op(p, op),
        "stablehlo.custom_call" => custom_call(p, op),
        "stablehlo.composite" => composite(p, op),
        "func.call" => call(p, op),
        "stablehlo.slice" => slice(p, op),
        "stablehlo.get_tuple_element" => tuple_element(p, op),
        "sdy.sharding_constraint" | "sdy.reshard" => sdy_sharding(p, op),
        "sdy.manual_computation" => manual_computation(p, op),
        "sdy.mesh" => sdy_mesh(p, op),
        _ => {
            let save = (p.pos, op.attrs.len());
            match keyword_form(p, op) {
                Ok(()) if at_op_end(p)? => Ok(()),
                _ => {
                    p.pos = save.0;
                    op.attrs.truncate(save.1);
                    op.operands.clear();
                    op.types.clear();
                    raw(p, op)
                }
            }
        }
    }
}

/// True when the op ended cleanly: what follows starts a new line, a `loc(`, or closes a region.
fn at_op_end(p: &Parser<'_>) -> PResult<bool> {
    let t = p.peek()?;
    if t.kind == Kind::Eof || p.is_p(t, "}") || p.is_kw(t, "loc") {
        return Ok(true);
    }
    Ok(p.src[p.pos..t.start].contains(&b'\n'))
}

/// `[1, -2, 3]` as integers.
pub(crate) fn int_list(p: &mut Parser<'_>) -> PResult<Vec<i64>> {
    p.expect("[", "to open an integer list")?;
    let mut out = Vec::new();
    if p.eat("]")? {
        return Ok(out);
    }
    loop {
        out.push(int(p)?);
        if p.eat(",")? {
            continue;
        }
        p.expect("]", "to close the integer list")?;
        return Ok(out);
    }
}

/// One signed integer (also `true`/`false` as 1/0).
fn int(p: &mut Parser<'_>) -> PResult<i64> {
    let neg = p.eat("-")?;
    let t = p.bump()?;
    if p.is_kw(t, "true") || p.is_kw(t, "false") {
        return Ok(i64::from(p.is_kw(t, "true")));
    }
    if t.kind != Kind::Int {
        return p.err(t.start, format!("expected an integer, found {}", p.describe(t)));
    }
    let s = p.tx(t);
    let v = if let Some(h) = s.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse::<i64>().ok()
    };
    let Some(v) = v else {
        return p.err(t.start, format!("integer {s} does not fit in 64 bits"));
    };
    Ok(if neg { -v } else { v })
}

/// `array<i64: 1, 2>` (or `array<i64>` when empty).
pub(crate) fn arr(v: &[i64]) -> String {
    if v.is_empty() {
        return "array<i64>".to_owned();
    }
    format!("array<i64: {}>", join(v))
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

fn enum_attr(kind: &str, v: &str) -> String {
    format!("#stablehlo<{kind} {v}>")
}

fn opt_attrs(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    if p.is_p(p.peek()?, "{") {
        op.attrs.extend(p.attr_dict_plain()?);
    }
    Ok(())
}

/// `: (T, ...) -> R`, `: T -> R` or `: T, T` (the trailing type list of a pretty op).
fn types(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    if !p.eat(":")? {
        return Ok(());
    }
    if p.is_p(p.peek()?, "(") {
        let (_, outs) = p.fn_type()?;
        op.types = outs;
        return Ok(());
    }
    let mut list = vec![p.parse_type()?];
    while p.eat(",")? {
        list.push(p.parse_type()?);
    }
    if p.eat("->")? {
        op.types = if p.eat("(")? { p.type_list_until(")")? } else { vec![p.parse_type()?] };
        return Ok(());
    }
    let r = op.results.len();
    op.types = if r == 0 {
        Vec::new()
    } else if list.len() == 1 {
        vec![list[0].clone(); r]
    } else if list.len() >= r {
        list.split_off(list.len() - r)
    } else {
        return p
            .err(p.pos, format!("`{}` has {r} results but only {} types", op.name, list.len()));
    };
    Ok(())
}

fn constant(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    opt_attrs(p, op)?;
    let at = p.peek()?.start;
    let (text, ty) = p.attr_value(true)?;
    let Some(ty) = ty else {
        return p.err(at, "expected `: type` after the constant's value");
    };
    op.attrs.insert(0, ("value".to_owned(), text));
    op.types = vec![ty];
    Ok(())
}

fn iota(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    p.expect_kw("dim", "in `stablehlo.iota`")?;
    p.expect("=", "after `dim`")?;
    let d = int(p)?;
    op.attrs.push(("iota_dimension".to_owned(), format!("{d} : i64")));
    opt_attrs(p, op)?;
    types(p, op)
}

fn compare(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let dir = p.expect_kind(Kind::Ident, "a comparison direction such as `GT`")?;
    op.attrs
        .push(("comparison_direction".to_owned(), enum_attr("comparison_direction", p.tx(dir))));
    p.expect(",", "after the comparison direction")?;
    op.operands = p.value_list()?;
    if p.eat(",")? {
        let ty = p.expect_kind(Kind::Ident, "a comparison type such as `FLOAT`")?;
        op.attrs.insert(0, ("compare_type".to_owned(), enum_attr("comparison_type", p.tx(ty))));
    }
    opt_attrs(p, op)?;
    types(p, op)
}

/// How a pretty keyword's value becomes a generic attribute.
enum Conv {
    Arr,
    I64,
    Enum(&'static str),
    Precision,
    F32,
    Raw,
}

fn keyword(op: &str, kw: &str) -> Option<(&'static str, Conv)> {
    let short = op.strip_prefix("stablehlo.")?;
    Some(match (short, kw) {
        ("broadcast_in_dim" | "dynamic_broadcast_in_dim", "dims") => {
            ("broadcast_dimensions", Conv::Arr)
        }
        ("dynamic_broadcast_in_dim", "known_expanding_dimensions") => {
            ("known_expanding_dimensions", Conv::Arr)
        }
        ("dynamic_broadcast_in_dim", "known_nonexpanding_dimensions") => {
            ("known_nonexpanding_dimensions", Conv::Arr)
        }
        ("transpose", "dims") => ("permutation", Conv::Arr),
        ("reverse", "dims") => ("dimensions", Conv::Arr),
        ("broadcast", "sizes") => ("broadcast_sizes", Conv::Arr),
        ("dynamic_slice", "sizes") => ("slice_sizes", Conv::Arr),
        ("concatenate" | "get_dimension_size" | "set_dimension_size", "dim") => {
            ("dimension", Conv::I64)
        }
        ("dynamic_iota", "dim") => ("iota_dimension", Conv::I64),
        ("pad", "low") => ("edge_padding_low", Conv::Arr),
        ("pad", "high") => ("edge_padding_high", Conv::Arr),
        ("pad", "interior") => ("interior_padding", Conv::Arr),
        ("fft", "type") => ("fft_type", Conv::Enum("fft_type")),
        ("fft", "length") => ("fft_length", Conv::Arr),
        ("rng_bit_generator", "algorithm") => ("rng_algorithm", Conv::Enum("rng_algorithm")),
        ("rng", "distribution") => ("rng_distribution", Conv::Enum("rng_distribution")),
        ("dot" | "dot_general", "precision") => ("precision_config", Conv::Precision),
        (_, "epsilon") => ("epsilon", Conv::F32),
        (_, "feature_index") => ("feature_index", Conv::I64),
        ("einsum", "config") => ("einsum_config", Conv::Raw),
        _ => return None,
    })
}

/// `operands [, kw = value]* [{attrs}] : types`, with the keyword table above and the
/// special keywords of `dot_general` and `reduce_precision`.
fn keyword_form(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    op.operands = p.value_list()?;
    let mut dot: Vec<(&str, Vec<i64>)> = Vec::new();
    let mut is_dot = false;
    while p.eat(",")? {
        let kw = p.expect_kind(Kind::Ident, "a keyword such as `dims`")?;
        let kw = p.tx(kw);
        p.expect("=", &format!("after `{kw}`"))?;
        match (op.name.as_str(), kw) {
            ("stablehlo.dot_general", "batching_dims" | "contracting_dims") => {
                is_dot = true;
                let l = int_list(p)?;
                p.expect_kw("x", &format!("between the two lists of `{kw}`"))?;
                let r = int_list(p)?;
                let (a, b) = if kw == "batching_dims" {
                    ("lhs_batching_dimensions", "rhs_batching_dimensions")
                } else {
                    ("lhs_contracting_dimensions", "rhs_contracting_dimensions")
                };
                dot.push((a, l));
                dot.push((b, r));
                continue;
            }
            ("stablehlo.dot_general", "algorithm") => {
                let (v, _) = p.attr_value(false)?;
                op.attrs.push(("algorithm".to_owned(), format!("#stablehlo.dot_algorithm{v}")));
                continue;
            }
            ("stablehlo.reduce_precision", "format") => {
                let t = p.expect_kind(Kind::Ident, "a format such as `e8m10`")?;
                let f = p.tx(t);
                let parsed = f.strip_prefix('e').and_then(|r| r.split_once('m'));
                let Some((e, m)) = parsed
                    .and_then(|(e, m)| Some((e.parse::<u32>().ok()?, m.parse::<u32>().ok()?)))
                else {
                    return p.err(t.start, format!("bad reduce_precision format `{f}`"));
                };
                op.attrs.push(("exponent_bits".to_owned(), format!("{e} : i32")));
                op.attrs.push(("mantissa_bits".to_owned(), format!("{m} : i32")));
                continue;
            }
            _ => {}
        }
        match keyword(&op.name, kw) {
            Some((name, Conv::Arr)) => {
                let v = int_list(p)?;
                op.attrs.push((name.to_owned(), arr(&v)));
            }
            Some((name, Conv::I64)) => {
                let v = int(p)?;
                op.attrs.push((name.to_owned(), format!("{v} : i64")));
            }
            Some((name, Conv::Enum(kind))) => {
                let t = p.expect_kind(Kind::Ident, "an enum value")?;
                op.attrs.push((name.to_owned(), enum_attr(kind, p.tx(t))));
            }
            Some((name, Conv::Precision)) => {
                let v = enum_list(p)?;
                let items: Vec<String> = v.iter().map(|s| enum_attr("precision", s)).collect();
                op.attrs.push((name.to_owned(), format!("[{}]", items.join(", "))));
            }
            Some((name, Conv::F32)) => {
                let (v, _) = p.attr_value(false)?;
                op.attrs.push((name.to_owned(), format!("{v} : f32")));
            }
            Some((name, Conv::Raw)) => {
                let (v, _) = p.attr_value(false)?;
                op.attrs.push((name.to_owned(), v));
            }
            None => {
                let (v, _) = p.attr_value(false)?;
                op.attrs.push((kw.to_owned(), v));
                op.unparsed = Some(format!("{kw} = ..."));
            }
        }
    }
    if is_dot {
        let order = [
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
        ];
        let fields: Vec<String> = order
            .iter()
            .filter_map(|k| dot.iter().find(|(n, v)| n == k && !v.is_empty()))
            .map(|(n, v)| format!("{n} = [{}]", join(v)))
            .collect();
        op.attrs.insert(
            0,
            ("dot_dimension_numbers".to_owned(), format!("#stablehlo.dot<{}>", fields.join(", "))),
        );
    }
    opt_attrs(p, op)?;
    types(p, op)
}

fn enum_list(p: &mut Parser<'_>) -> PResult<Vec<String>> {
    p.expect("[", "to open a list")?;
    let mut out = Vec::new();
    if p.eat("]")? {
        return Ok(out);
    }
    loop {
        let t = p.expect_kind(Kind::Ident, "an enum value")?;
        out.push(p.tx(t).to_owned());
        if p.eat(",")? {
            continue;
        }
        p.expect("]", "to close the list")?;
        return Ok(out);
    }
}

fn convolution(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    op.operands = p.paren_values()?;
    p.expect_kw("dim_numbers", "in `stablehlo.convolution`")?;
    p.expect("=", "after `dim_numbers`")?;
    let start = p.peek()?.start;
    for i in 0..3 {
        let open = p.expect("[", "in the convolution dimension numbers")?;
        p.skip_group(open)?;
        if i == 0 {
            p.expect_kw("x", "between input and kernel dimension numbers")?;
        } else if i == 1 {
            p.expect("->", "before the output dimension numbers")?;
        }
    }
    let dn: String = p.text[start..p.pos].split_whitespace().collect::<Vec<_>>().join(" ");
    op.attrs.push(("dimension_numbers".to_owned(), format!("#stablehlo.conv<{dn}>")));
    if p.eat(",")? {
        p.expect_kw("window", "after the dimension numbers")?;
        p.expect("=", "after `window`")?;
        p.expect("{", "to open the window")?;
        if !p.eat("}")? {
            loop {
                let kw = p.expect_kind(Kind::Ident, "a window field such as `stride`")?;
                let kw = p.tx(kw);
                p.expect("=", &format!("after `{kw}`"))?;
                match kw {
                    "pad" => {
                        p.expect("[", "to open the padding")?;
                        let mut rows: Vec<Vec<i64>> = Vec::new();
                        if !p.eat("]")? {
                            loop {
                                rows.push(int_list(p)?);
                                if p.eat(",")? {
                                    continue;
                                }
                                p.expect("]", "to close the padding")?;
                                break;
                            }
                        }
                        op.attrs.push(("padding".to_owned(), padding_attr(&rows)));
                    }
                    "reverse" => {
                        let v = int_list(p)?;
                        let b: Vec<&str> =
                            v.iter().map(|&x| if x == 0 { "false" } else { "true" }).collect();
                        let t = if b.is_empty() {
                            "array<i1>".to_owned()
                        } else {
                            format!("array<i1: {}>", b.join(", "))
                        };
                        op.attrs.push(("window_reversal".to_owned(), t));
                    }
                    _ => {
                        let name = match kw {
                            "stride" => "window_strides",
                            "lhs_dilate" => "lhs_dilation",
                            "rhs_dilate" => "rhs_dilation",
                            other => other,
                        };
                        let v = int_list(p)?;
                        op.attrs.push((name.to_owned(), arr(&v)));
                    }
                }
                if p.eat(",")? {
                    continue;
                }
                p.expect("}", "to close the window")?;
                break;
            }
        }
    }
    opt_attrs(p, op)?;
    types(p, op)
}

/// `dense<1> : tensor<2x2xi64>` (splat) or `dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>`.
pub(crate) fn padding_attr(rows: &[Vec<i64>]) -> String {
    let n = rows.len();
    let all: Vec<i64> = rows.iter().flatten().copied().collect();
    if n == 0 {
        return "dense<> : tensor<0x2xi64>".to_owned();
    }
    if all.iter().all(|&v| v == all[0]) && all.len() == 2 * n {
        return format!("dense<{}> : tensor<{n}x2xi64>", all[0]);
    }
    let r: Vec<String> = rows.iter().map(|r| format!("[{}]", join(r))).collect();
    format!("dense<[{}]> : tensor<{n}x2xi64>", r.join(", "))
}

fn reduce(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let mut inputs = Vec::new();
    let mut inits = Vec::new();
    loop {
        p.expect("(", "to open a reduce operand")?;
        let v = p.expect_kind(Kind::Value, "the reduced value")?;
        inputs.push(p.tx(v).to_owned());
        p.expect_kw("init", "in a reduce operand")?;
        p.expect(":", "after `init`")?;
        let i = p.expect_kind(Kind::Value, "the initial value")?;
        inits.push(p.tx(i).to_owned());
        p.expect(")", "to close a reduce operand")?;
        if !p.eat(",")? {
            break;
        }
    }
    op.operands = inputs.iter().chain(&inits).cloned().collect();
    let mut applied = None;
    let at = p.peek()?.start;
    if p.eat_kw("applies")? {
        let t = p.expect_kind(Kind::Ident, "the applied op such as `stablehlo.add`")?;
        applied = Some(p.tx(t).to_owned());
    }
    p.expect_kw("across", "in `stablehlo.reduce`")?;
    p.expect_kw("dimensions", "after `across`")?;
    p.expect("=", "after `dimensions`")?;
    let dims = int_list(p)?;
    op.attrs.push(("dimensions".to_owned(), arr(&dims)));
    opt_attrs(p, op)?;
    types(p, op)?;
    let region = if let Some(body_op) = applied {
        if inits.len() != 1 {
            return p.err(at, "`applies` with more than one reduced value is not supported");
        }
        let ty = p.types.get(&inits[0]).cloned().unwrap_or_else(|| op.types[0].clone());
        let (a, b, r) = (p.fresh_name("lhs"), p.fresh_name("rhs"), p.fresh_name("acc"));
        let arg =
            |n: &str| Arg { name: n.to_owned(), ty: ty.clone(), attrs: Vec::new(), loc: None };
        let inner = Op {
            results: vec![r.clone()],
            name: body_op,
            operands: vec![a.clone(), b.clone()],
            types: vec![ty.clone()],
            at,
            ..Op::default()
        };
        let ret =
            Op { name: "stablehlo.return".to_owned(), operands: vec![r], at, ..Op::default() };
        Region { args: vec![arg(&a), arg(&b)], ops: vec![inner, ret] }
    } else {
        p.expect_kw("reducer", "(the reduction body) after the types")?;
        let mut firsts = Vec::new();
        let mut seconds = Vec::new();
        while p.is_p(p.peek()?, "(") {
            p.bump()?;
            for slot in 0..2 {
                let v = p.expect_kind(Kind::Value, "a reducer argument")?;
                p.expect(":", "after the reducer argument")?;
                let ty = p.parse_type()?;
                let loc = p.opt_loc()?;
                let a = Arg { name: p.tx(v).to_owned(), ty, attrs: Vec::new(), loc };
                if slot == 0 {
                    firsts.push(a);
                    p.expect(",", "between the reducer arguments")?;
                } else {
                    seconds.push(a);
                }
            }
            p.expect(")", "to close the reducer arguments")?;
        }
        firsts.extend(seconds);
        p.region(firsts)?
    };
    op.regions.push(("reducer".to_owned(), region));
    Ok(())
}

fn while_op(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    p.expect("(", "to open the loop-carried values")?;
    let mut names = Vec::new();
    if !p.eat(")")? {
        loop {
            let a = p.expect_kind(Kind::Value, "an iteration argument such as `%iterArg`")?;
            p.expect("=", "after the iteration argument")?;
            let v = p.expect_kind(Kind::Value, "the initial value")?;
            names.push(p.tx(a).to_owned());
            op.operands.push(p.tx(v).to_owned());
            if p.eat(",")? {
                continue;
            }
            p.expect(")", "to close the loop-carried values")?;
            break;
        }
    }
    let mut tys = Vec::new();
    if p.eat(":")? {
        tys.push(p.parse_type()?);
        while p.eat(",")? {
            tys.push(p.parse_type()?);
        }
    }
    if tys.len() != names.len() {
        return p.err(
            op.at,
            format!("`stablehlo.while` has {} values but {} types", names.len(), tys.len()),
        );
    }
    if p.eat_kw("attributes")? {
        op.attrs.extend(p.attr_dict_plain()?);
    }
    let args: Vec<Arg> = names
        .iter()
        .zip(&tys)
        .map(|(n, t)| Arg { name: n.clone(), ty: t.clone(), attrs: Vec::new(), loc: None })
        .collect();
    p.expect_kw("cond", "to start the loop condition")?;
    let cond = p.region(args.clone())?;
    p.expect_kw("do", "to start the loop body")?;
    let body = p.region(args)?;
    op.regions.push(("cond".to_owned(), cond));
    op.regions.push(("body".to_owned(), body));
    op.types = tys;
    Ok(())
}

fn custom_call(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let t = p.expect_kind(Kind::Symbol, "the call target such as `@foo`")?;
    let target = super::parser::symbol_name(p.tx(t));
    op.attrs.push(("call_target_name".to_owned(), lexer::quote(&target)));
    op.operands = p.paren_values()?;
    opt_attrs(p, op)?;
    types(p, op)
}

fn composite(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let t = p.expect_kind(Kind::Str, "the composite's name")?;
    op.attrs.push(("name".to_owned(), p.tx(t).to_owned()));
    op.operands = p.value_list()?;
    opt_attrs(p, op)?;
    types(p, op)
}

fn call(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let t = p.expect_kind(Kind::Symbol, "the callee such as `@f`")?;
    op.attrs.push(("callee".to_owned(), p.tx(t).to_owned()));
    op.operands = p.paren_values()?;
    opt_attrs(p, op)?;
    types(p, op)
}

fn slice(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let v = p.expect_kind(Kind::Value, "the sliced value")?;
    op.operands.push(p.tx(v).to_owned());
    p.expect("[", "to open the slice ranges")?;
    let (mut start, mut limit, mut strides) = (Vec::new(), Vec::new(), Vec::new());
    if !p.eat("]")? {
        loop {
            start.push(int(p)?);
            p.expect(":", "between slice start and limit")?;
            limit.push(int(p)?);
            strides.push(if p.eat(":")? { int(p)? } else { 1 });
            if p.eat(",")? {
                continue;
            }
            p.expect("]", "to close the slice ranges")?;
            break;
        }
    }
    op.attrs.push(("limit_indices".to_owned(), arr(&limit)));
    op.attrs.push(("start_indices".to_owned(), arr(&start)));
    op.attrs.push(("strides".to_owned(), arr(&strides)));
    opt_attrs(p, op)?;
    types(p, op)
}

fn tuple_element(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let v = p.expect_kind(Kind::Value, "the tuple")?;
    op.operands.push(p.tx(v).to_owned());
    p.expect("[", "before the tuple index")?;
    let i = int(p)?;
    p.expect("]", "after the tuple index")?;
    op.attrs.push(("index".to_owned(), format!("{i} : i32")));
    opt_attrs(p, op)?;
    types(p, op)
}

fn sdy_sharding(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let v = p.expect_kind(Kind::Value, "the sharded value")?;
    op.operands.push(p.tx(v).to_owned());
    let (s, _) = p.attr_value(false)?;
    let s = if s.starts_with('<') { format!("#sdy.sharding{s}") } else { s };
    op.attrs.push(("sharding".to_owned(), s));
    opt_attrs(p, op)?;
    types(p, op)
}

fn manual_computation(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    op.operands = p.paren_values()?;
    for (kw, name) in [("in_shardings", "in_shardings"), ("out_shardings", "out_shardings")] {
        p.expect_kw(kw, "in `sdy.manual_computation`")?;
        p.expect("=", &format!("after `{kw}`"))?;
        let (v, _) = p.attr_value(false)?;
        op.attrs.push((name.to_owned(), format!("#sdy.sharding_per_value<{v}>")));
    }
    p.expect_kw("manual_axes", "in `sdy.manual_computation`")?;
    p.expect("=", "after `manual_axes`")?;
    let (v, _) = p.attr_value(false)?;
    op.attrs.push(("manual_axes".to_owned(), format!("#sdy<manual_axes{v}>")));
    p.expect("(", "to open the body arguments")?;
    let mut args = Vec::new();
    if !p.eat(")")? {
        loop {
            let a = p.expect_kind(Kind::Value, "a body argument")?;
            p.expect(":", "after the body argument")?;
            let ty = p.parse_type()?;
            let loc = p.opt_loc()?;
            args.push(Arg { name: p.tx(a).to_owned(), ty, attrs: Vec::new(), loc });
            if p.eat(",")? {
                continue;
            }
            p.expect(")", "to close the body arguments")?;
            break;
        }
    }
    let body = p.region(args)?;
    op.regions.push(("body".to_owned(), body));
    opt_attrs(p, op)?;
    types(p, op)
}

fn sdy_mesh(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let t = p.expect_kind(Kind::Symbol, "the mesh name")?;
    let name = super::parser::symbol_name(p.tx(t));
    p.expect("=", "after the mesh name")?;
    let (v, _) = p.attr_value(false)?;
    let v = if v.starts_with('<') { format!("#sdy.mesh{v}") } else { v };
    op.attrs.push(("mesh".to_owned(), v));
    op.attrs.push(("sym_name".to_owned(), lexer::quote(&name)));
    opt_attrs(p, op)
}

/// Last resort for an unknown syntax: keep the text to the end of the line (or the balanced
/// end of what starts on it), take the value uses before the `:` as operands and read the
/// types after it when possible.
fn raw(p: &mut Parser<'_>, op: &mut Op) -> PResult<()> {
    let start = p.pos;
    let mut depth = 0usize;
    let mut colon: Option<usize> = None;
    let mut last_end = start;
    loop {
        let t = p.peek()?;
        if t.kind == Kind::Eof {
            break;
        }
        if depth == 0
            && (p.src[last_end..t.start].contains(&b'\n')
                || p.is_p(t, "}")
                || (p.is_kw(t, "loc") && p.src.get(t.end) == Some(&b'(')))
        {
            break;
        }
        p.bump()?;
        last_end = t.end;
        if t.kind == Kind::Punct {
            match p.tx(t) {
                "(" | "[" | "{" | "<" => {
                    depth += 1;
                    if depth > p.max_nesting() {
                        return p.err(
                            t.start,
                            format!(
                                "nesting deeper than {} levels (Limits::max_nesting)",
                                p.max_nesting()
                            ),
                        );
                    }
                }
                ")" | "]" | "}" | ">" => depth = depth.saturating_sub(1),
                ":" if depth == 0 && colon.is_none() => colon = Some(t.start),
                _ => {}
            }
        }
        if t.kind == Kind::Value && colon.is_none() {
            op.operands.push(p.tx(t).to_owned());
        }
    }
    let end = last_end;
    op.unparsed = Some(p.text[start..end].trim().to_owned());
    if let Some(c) = colon {
        let save = p.pos;
        p.pos = c;
        let ok = types(p, op).is_ok()
            && lexer::skip_trivia(p.src, p.pos) >= lexer::skip_trivia(p.src, end);
        if !ok {
            op.types.clear();
        }
        p.pos = save;
    }
    Ok(())
}
