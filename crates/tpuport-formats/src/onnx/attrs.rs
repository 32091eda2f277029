//! `AttributeProto` to [`Attr`]. Tensors become weights ([`Attr::Weight`]); subgraphs are
//! converted by the graph converter and only referenced here.
//!
//! Representation choices:
//! - `Constant` nodes keep one attribute, always named `value`, holding an [`Attr::Weight`]
//!   whatever form the file used (`value`, `value_float(s)`, `value_int(s)`, `value_string(s)`,
//!   `sparse_value`); the weight is named after the node's output.
//! - Other `TENSOR` attributes become weights named `<first output>:<attribute>`.
//! - `TENSORS` / `SPARSE_TENSORS` attributes become weights too and the attribute an
//!   [`Attr::Text`] listing their names (`tensors: a, b`).
//! - A function-body attribute that refers to the caller's (`ref_attr_name`) is
//!   [`Attr::Text`] `@<name>`.
//! - `TYPE_PROTO` is [`Attr::Type`], `TYPE_PROTOS` an [`Attr::Text`] of the printed types.

use std::sync::Arc;

use tpuport_model::{Attr, DType, Weight, WeightData};

use crate::FormatError;

use super::graph::Converter;
use super::proto::{AttributeProto, attribute_type as at};
use super::types::tensor_type;

/// True when the attribute holds a subgraph or a list of subgraphs.
pub(crate) fn is_graph(a: &AttributeProto) -> bool {
    match a.r#type {
        at::GRAPH | at::GRAPHS => true,
        at::UNDEFINED => a.g.is_some() || !a.graphs.is_empty(),
        _ => false,
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Converter {
    /// Converts a non-graph attribute of node `label` whose first output is `out`.
    pub(crate) fn attr(
        &mut self,
        a: &AttributeProto,
        label: &str,
        out: &str,
    ) -> Result<Attr, FormatError> {
        if !a.ref_attr_name.is_empty() {
            return Ok(Attr::Text(format!("@{}", a.ref_attr_name)));
        }
        let what = |k: &str| format!("attribute '{}' of node '{label}'{k}", a.name);
        let kind = if a.r#type == at::UNDEFINED { guess_type(a) } else { a.r#type };
        Ok(match kind {
            at::FLOAT => Attr::Float(f64::from(a.f)),
            at::INT => Attr::Int(a.i),
            at::STRING => Attr::Str(lossy(&a.s)),
            at::FLOATS => Attr::Floats(a.floats.iter().map(|f| f64::from(*f)).collect()),
            at::INTS => Attr::Ints(a.ints.clone()),
            at::STRINGS => Attr::Strs(a.strings.iter().map(|s| lossy(s)).collect()),
            at::TENSOR => {
                let t =
                    a.t.as_ref()
                        .ok_or_else(|| self.invalid(format!("{} has no tensor", what(""))))?;
                let w = self.reader.weight(t, format!("{out}:{}", a.name), &what(""))?;
                Attr::Weight(self.weights.push(w))
            }
            at::SPARSE_TENSOR => {
                let t = a
                    .sparse_tensor
                    .as_ref()
                    .ok_or_else(|| self.invalid(format!("{} has no tensor", what(""))))?;
                let mut w = self.reader.sparse(t, &what(""))?;
                w.name = format!("{out}:{}", a.name);
                Attr::Weight(self.weights.push(w))
            }
            at::TENSORS | at::SPARSE_TENSORS => {
                let mut names = Vec::new();
                for (i, t) in a.tensors.iter().enumerate() {
                    let w = self.reader.weight(
                        t,
                        format!("{out}:{}[{i}]", a.name),
                        &what(&format!(" [{i}]")),
                    )?;
                    names.push(w.name.clone());
                    self.weights.push(w);
                }
                for (i, t) in a.sparse_tensors.iter().enumerate() {
                    let mut w = self.reader.sparse(t, &what(&format!(" [{i}]")))?;
                    w.name = format!("{out}:{}[{i}]", a.name);
                    names.push(w.name.clone());
                    self.weights.push(w);
                }
                Attr::Text(format!("tensors: {}", names.join(", ")))
            }
            at::TYPE_PROTO => Attr::Type(tensor_type(a.tp.as_ref())),
            at::TYPE_PROTOS => Attr::Text(
                a.type_protos
                    .iter()
                    .map(|t| tensor_type(Some(t)).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            other => {
                return Err(self.invalid(format!("{} has unknown type code {other}", what(""))));
            }
        })
    }

    /// The single `value` attribute of a `Constant` node, as a weight named `out`.
    pub(crate) fn constant_value(
        &mut self,
        attrs: &[AttributeProto],
        label: &str,
        out: &str,
    ) -> Result<Attr, FormatError> {
        let what = format!("value of Constant node '{label}'");
        let Some(a) =
            attrs.iter().find(|a| a.name.starts_with("value") || a.name == "sparse_value")
        else {
            return Err(self.invalid(format!("Constant node '{label}' has no value attribute")));
        };
        let small = |dtype: DType, shape: Vec<u64>, bytes: Vec<u8>| Weight {
            name: out.to_owned(),
            dtype,
            shape,
            data: WeightData::Inline(Arc::from(bytes)),
        };
        let w = match a.name.as_str() {
            "value" => {
                let t =
                    a.t.as_ref().ok_or_else(|| self.invalid(format!("{what} has no tensor")))?;
                self.reader.weight(t, out.to_owned(), &what)?
            }
            "sparse_value" => {
                let t = a
                    .sparse_tensor
                    .as_ref()
                    .ok_or_else(|| self.invalid(format!("{what} has no tensor")))?;
                let mut w = self.reader.sparse(t, &what)?;
                out.clone_into(&mut w.name);
                w
            }
            "value_float" => small(DType::F32, vec![], a.f.to_le_bytes().to_vec()),
            "value_floats" => small(
                DType::F32,
                vec![a.floats.len() as u64],
                a.floats.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            "value_int" => small(DType::I64, vec![], a.i.to_le_bytes().to_vec()),
            "value_ints" => small(
                DType::I64,
                vec![a.ints.len() as u64],
                a.ints.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            "value_string" => {
                small(DType::String, vec![], string_bytes(std::slice::from_ref(&a.s)))
            }
            "value_strings" => {
                small(DType::String, vec![a.strings.len() as u64], string_bytes(&a.strings))
            }
            other => {
                return Err(self
                    .invalid(format!("Constant node '{label}' has unknown attribute '{other}'")));
            }
        };
        Ok(Attr::Weight(self.weights.push(w)))
    }
}

fn string_bytes(strings: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for s in strings {
        v.extend_from_slice(&(s.len() as u64).to_le_bytes());
        v.extend_from_slice(s);
    }
    v
}

/// IR-1 files carry no type code: guess from which field is set.
fn guess_type(a: &AttributeProto) -> i32 {
    if a.t.is_some() {
        at::TENSOR
    } else if a.sparse_tensor.is_some() {
        at::SPARSE_TENSOR
    } else if a.tp.is_some() {
        at::TYPE_PROTO
    } else if !a.floats.is_empty() {
        at::FLOATS
    } else if !a.ints.is_empty() {
        at::INTS
    } else if !a.strings.is_empty() {
        at::STRINGS
    } else if !a.tensors.is_empty() || !a.sparse_tensors.is_empty() {
        at::TENSORS
    } else if !a.s.is_empty() {
        at::STRING
    } else if a.f != 0.0 {
        at::FLOAT
    } else {
        at::INT
    }
}
