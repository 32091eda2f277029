//! `tpuport inspect MODEL`: what was read — format, producer, signature, op histogram,
//! parameters by dtype, largest tensors, duplicates, and why the file's parameter count may
//! differ from the framework's. JSON schema: `docs/inspect.md`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use tpuport_analysis::inventory::{self, Inventory, InventoryOptions};
use tpuport_formats::ImportOptions;
use tpuport_model::{NoteLevel, Shape};
use tpuport_report::human::{bytes, si, thousands};
use tpuport_report::{Align, Table};

use crate::cli::GlobalArgs;
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// Model, checkpoint or tensor file (.onnx, .mlir, .mlirbc, .safetensors, index.json, .pt,
    /// .npy, .npz).
    pub(crate) model: PathBuf,
    /// Full shape of a named input, e.g. `input_ids=1x128` (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = parse_input_shape)]
    pub(crate) input_shape: Vec<(String, Shape)>,
    /// Size of the leading (batch) dimension of every input whose first dimension is symbolic.
    #[arg(long)]
    pub(crate) batch: Option<u64>,
    /// Size of a named symbolic dimension, e.g. `sequence=128` (repeatable).
    #[arg(long = "dim", value_name = "NAME=N", value_parser = parse_dim)]
    pub(crate) dims: Vec<(String, u64)>,
    /// Number of largest tensors to list.
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// Skip the duplicate-tensor scan (it samples every weight of a graph format).
    #[arg(long)]
    pub(crate) no_dedup: bool,
    /// Print the time spent importing and analysing to stderr.
    #[arg(long)]
    pub(crate) timings: bool,
}

/// `--input-shape NAME=DIMS`, shared by the verbs that bind input shapes.
pub(crate) fn parse_input_shape(s: &str) -> Result<(String, Shape), String> {
    let (name, dims) = s.split_once('=').ok_or("expected NAME=DIMS, e.g. x=1x3x224x224")?;
    if name.is_empty() {
        return Err("empty input name".into());
    }
    Ok((name.to_owned(), Shape::parse_dims(dims)))
}

/// `--dim NAME=N`, shared by the verbs that bind symbolic dimensions.
pub(crate) fn parse_dim(s: &str) -> Result<(String, u64), String> {
    let (name, n) = s.split_once('=').ok_or("expected NAME=N, e.g. sequence=128")?;
    let n = n.parse::<u64>().map_err(|e| format!("`{n}`: {e}"))?;
    Ok((name.to_owned(), n))
}

pub(crate) fn run(a: &InspectArgs, g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    let opts = ImportOptions {
        dims: a.dims.iter().cloned().collect::<BTreeMap<_, _>>(),
        input_shapes: a.input_shape.iter().cloned().collect(),
        batch: a.batch,
        ..ImportOptions::default()
    };
    let t0 = Instant::now();
    let model = tpuport_formats::open(&a.model, &opts)?;
    let t1 = Instant::now();
    let inv = inventory::inventory(
        &a.model.display().to_string(),
        &model,
        &InventoryOptions { top: a.top, find_duplicates: !a.no_dedup },
    );
    if a.timings {
        super::note_timings(p, t0, t1);
    }
    super::emit_report(p, g.format, &inv, || render_text(&inv))?;
    for n in &inv.notes {
        if n.level >= NoteLevel::Warning {
            p.warn(&format!("{} [{}]", n.message, n.code));
        }
    }
    Ok(Status::Success)
}

/// The text report: summary first, then details.
pub(crate) fn render_text(inv: &Inventory) -> String {
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        out.push_str(s);
        out.push('\n');
    };
    push(&mut out, &format!("{}  ({})", inv.path, inv.format));
    let mut meta = Table::new(&[], &[]);
    if let Some(pr) = &inv.producer {
        meta.row(["producer", pr.as_str()]);
    }
    let fw = serde_json::to_value(inv.framework).ok().and_then(|v| v.as_str().map(str::to_owned));
    let fw = fw.unwrap_or_default();
    match &inv.exporter {
        Some(e) => meta.row(["framework".to_owned(), format!("{fw} (exporter: {e})")]),
        None => meta.row(["framework".to_owned(), fw]),
    }
    if let Some(ir) = inv.ir_version {
        meta.row(["ir version".to_owned(), ir.to_string()]);
    }
    if !inv.opsets.is_empty() {
        let o: Vec<String> = inv.opsets.iter().map(|(d, v)| format!("{d} {v}")).collect();
        meta.row(["opsets".to_owned(), o.join(", ")]);
    }
    if let Some(v) = &inv.stablehlo_version {
        meta.row(["stablehlo", v.as_str()]);
    }
    let pr = &inv.params;
    let mut count =
        format!("{} ({}, {})", thousands(pr.elements), si(pr.elements), bytes(pr.bytes));
    if pr.deduplicated_elements != pr.elements {
        count.push_str(&format!("; {} without duplicates", thousands(pr.deduplicated_elements)));
    }
    meta.row(["parameters".to_owned(), count]);
    if inv.nodes > 0 {
        meta.row([
            "graph".to_owned(),
            format!(
                "{} nodes, {} op kinds, {} functions, {} values with dynamic shape",
                thousands(inv.nodes),
                inv.ops.len(),
                inv.functions,
                inv.dynamic_values
            ),
        ]);
    }
    out.push_str(&meta.render());

    for (title, ports) in [("inputs", &inv.inputs), ("outputs", &inv.outputs)] {
        if ports.is_empty() {
            continue;
        }
        push(&mut out, &format!("\n{title}"));
        let mut t = Table::new(&[], &[]);
        for port in ports {
            t.row([port.name.as_str(), port.display.as_str()]);
        }
        out.push_str(&t.render());
    }

    if !pr.by_dtype.is_empty() {
        push(&mut out, "\nparameters by dtype");
        let mut t = Table::new(
            &["dtype", "tensors", "elements", "bytes"],
            &[Align::Left, Align::Right, Align::Right, Align::Right],
        );
        for (d, tot) in &pr.by_dtype {
            t.row([d.clone(), thousands(tot.tensors), thousands(tot.elements), bytes(tot.bytes)]);
        }
        out.push_str(&t.render());
        let mut extra = Vec::new();
        if pr.buffer_tensors > 0 {
            extra.push(format!(
                "{} buffers ({} elements)",
                pr.buffer_tensors,
                thousands(pr.buffer_elements)
            ));
        }
        if pr.scalar_constants > 0 {
            extra.push(format!("{} scalar constants", pr.scalar_constants));
        }
        if pr.constant_elements > 0 {
            extra.push(format!(
                "{} elements in {} constant tensors",
                thousands(pr.constant_elements),
                pr.constant_tensors
            ));
        }
        if pr.aliased_elements > 0 {
            extra.push(format!(
                "{} elements in tied (aliased) tensors",
                thousands(pr.aliased_elements)
            ));
        }
        if !extra.is_empty() {
            push(&mut out, &format!("  not counted / noted: {}", extra.join(", ")));
        }
    }

    if !inv.ops.is_empty() {
        push(&mut out, "\nops");
        let mut ops: Vec<(&String, &u64)> = inv.ops.iter().collect();
        ops.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let mut t = Table::new(&[], &[Align::Left, Align::Right]);
        for (op, n) in ops {
            t.row([op.clone(), thousands(*n)]);
        }
        out.push_str(&t.render());
    }

    if !inv.largest.is_empty() {
        push(&mut out, "\nlargest tensors");
        let mut t = Table::new(
            &["name", "dtype", "shape", "elements", "bytes"],
            &[Align::Left, Align::Left, Align::Left, Align::Right, Align::Right],
        );
        for e in &inv.largest {
            let shape: Vec<String> = e.shape.iter().map(u64::to_string).collect();
            t.row([
                e.name.clone(),
                e.dtype.clone(),
                format!("[{}]", shape.join(",")),
                thousands(e.elements),
                bytes(e.bytes),
            ]);
        }
        out.push_str(&t.render());
    }

    if !inv.duplicates.is_empty() {
        push(&mut out, "\nduplicate tensors");
        for d in &inv.duplicates {
            let how = if d.transposed { " (transposed copy)" } else { "" };
            push(
                &mut out,
                &format!("  {}: {} elements{how}", d.names.join(" = "), thousands(d.elements)),
            );
        }
    }

    if !inv.explanations.is_empty() {
        push(&mut out, "\nwhy this count may differ from the framework's");
        for e in &inv.explanations {
            push(&mut out, &format!("  [{}] {}", e.code, e.message));
        }
    }
    let notes: Vec<_> = inv.notes.iter().filter(|n| n.level == NoteLevel::Info).collect();
    if !notes.is_empty() {
        push(&mut out, "\nnotes");
        for n in notes {
            push(&mut out, &format!("  [{}] {}", n.code, n.message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use tpuport_model::{
        DType, Graph, Model, ModelFormat, Node, NoteLevel, Shape, TensorType, Value, ValueKind,
        Weight, WeightData,
    };

    use super::*;

    /// A small ONNX-shaped model: Conv (with bias, no BatchNorm) -> Relu -> MatMul, one
    /// symbolic batch dimension, a scalar initializer, a duplicated matrix.
    fn model() -> Model {
        let mut m = Model::empty(ModelFormat::Onnx);
        m.metadata.producer = Some("pytorch".into());
        m.metadata.producer_version = Some("2.15.0".into());
        m.metadata.framework = tpuport_model::Framework::PyTorch;
        m.metadata.exporter = Some("torch.onnx (TorchScript)".into());
        m.metadata.ir_version = Some(8);
        m.metadata.opsets = vec![(String::new(), 17)];
        let mut g = Graph { name: "main".into(), ..Graph::default() };
        let weight = |g: &mut Graph, m: &mut Model, name: &str, shape: Vec<u64>, fill: u8| {
            let n = usize::try_from(shape.iter().product::<u64>()).unwrap() * 4;
            let id = m.weights.push(Weight {
                name: name.into(),
                dtype: DType::F32,
                shape: shape.clone(),
                data: WeightData::Inline(vec![fill; n].into()),
            });
            g.add_value(Value {
                name: name.into(),
                ty: TensorType::new(DType::F32, Shape::fixed(&shape)),
                kind: ValueKind::Weight(id),
                producer: None,
            })
        };
        let w = weight(&mut g, &mut m, "conv.weight", vec![64, 3, 3, 3], 1);
        let b = weight(&mut g, &mut m, "conv.bias", vec![64], 2);
        let fc = weight(&mut g, &mut m, "fc.weight", vec![64, 32], 3);
        let _copy = weight(&mut g, &mut m, "fc.weight.copy", vec![64, 32], 3);
        let _s = weight(&mut g, &mut m, "scale", vec![], 4);
        let ty = |s: &str| TensorType::new(DType::F32, Shape::parse_dims(s));
        let val = |g: &mut Graph, name: &str, t: TensorType, kind| {
            g.add_value(Value { name: name.into(), ty: t, kind, producer: None })
        };
        let x = val(&mut g, "input", ty("batchx3x8x8"), ValueKind::Input);
        let c = val(&mut g, "conv_out", ty("batchx64x8x8"), ValueKind::Intermediate);
        let r = val(&mut g, "relu_out", ty("batchx64x8x8"), ValueKind::Intermediate);
        let y = val(&mut g, "logits", ty("batchx64x8x32"), ValueKind::Intermediate);
        g.inputs = vec![x];
        g.outputs = vec![y];
        let node = |name: &str, op: &str, ins: Vec<_>, out| Node {
            name: name.into(),
            op: op.into(),
            domain: String::new(),
            inputs: ins,
            outputs: vec![out],
            attrs: vec![],
            subgraphs: vec![],
            location: None,
        };
        g.add_node(node("conv", "Conv", vec![Some(x), Some(w), Some(b)], c));
        g.add_node(node("relu", "Relu", vec![Some(c)], r));
        g.add_node(node("fc", "MatMul", vec![Some(r), Some(fc)], y));
        m.graph = g;
        m.note(NoteLevel::Info, "example", "an informational importer note");
        m
    }

    #[test]
    fn text_report_snapshot() {
        let inv = inventory::inventory("model.onnx", &model(), &InventoryOptions::default());
        insta::assert_snapshot!(render_text(&inv));
    }

    #[test]
    fn json_report_snapshot() {
        let inv = inventory::inventory("model.onnx", &model(), &InventoryOptions::default());
        insta::assert_json_snapshot!(inv);
    }
}
