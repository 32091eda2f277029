//! `tpuport inspect` as text: format and producer, signature, parameters by dtype, op histogram,
//! largest and duplicate tensors, and why the file's count may differ from the framework's. The
//! JSON form is the [`Inventory`] itself (`docs/inspect.md`).

use tpuport_analysis::inventory::Inventory;
use tpuport_model::NoteLevel;

use crate::human::{bytes, si, thousands};
use crate::style::{Paint, Style};
use crate::table::{Align, Table};

/// The text report: summary first, then details.
#[must_use]
pub fn render_text(inv: &Inventory, paint: Paint) -> String {
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        out.push_str(s);
        out.push('\n');
    };
    let title = |out: &mut String, t: &str| {
        out.push('\n');
        out.push_str(&paint.paint(t, Style::Bold));
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
    if let Some(c) = &inv.llm {
        llm_rows(&mut meta, c, inv.kv_bytes_per_token);
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

    if let Some(roles) = &inv.roles {
        title(&mut out, "argument roles");
        let mut text = String::new();
        crate::audit::arguments(&mut text, roles);
        out.push_str(&text);
    }
    for (title_text, ports) in [("inputs", &inv.inputs), ("outputs", &inv.outputs)] {
        if ports.is_empty() {
            continue;
        }
        title(&mut out, title_text);
        let mut t = Table::new(&[], &[]);
        let mut weights = 0usize;
        for (i, port) in ports.iter().enumerate() {
            // With argument roles, the weight arguments are counted above, not listed.
            let role =
                inv.roles.as_ref().filter(|_| title_text == "inputs").and_then(|r| r.args.get(i));
            match role {
                Some(a) if a.role == tpuport_analysis::roles::Role::Weight => weights += 1,
                Some(a) => {
                    let label = a.name.as_ref().map_or_else(
                        || format!("{} {}", a.role, port.name),
                        |n| format!("{} {} `{n}`", a.role, port.name),
                    );
                    t.row([label, port.display.clone()]);
                }
                None => t.row([port.name.clone(), port.display.clone()]),
            }
        }
        out.push_str(&t.render());
        if weights > 0 {
            push(&mut out, &format!("  and {weights} weight arguments (counted as parameters)"));
        }
    }

    if !pr.by_dtype.is_empty() {
        title(&mut out, "parameters by dtype");
        let mut t = Table::new(
            &["dtype", "tensors", "elements", "bytes"],
            &[Align::Left, Align::Right, Align::Right, Align::Right],
        )
        .paint(paint)
        .header_style(Style::Bold);
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
        title(&mut out, "ops");
        let mut ops: Vec<(&String, &u64)> = inv.ops.iter().collect();
        ops.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let mut t = Table::new(&[], &[Align::Left, Align::Right]);
        for (op, n) in ops {
            t.row([op.clone(), thousands(*n)]);
        }
        out.push_str(&t.render());
    }

    if !inv.largest.is_empty() {
        title(&mut out, "largest tensors");
        let mut t = Table::new(
            &["name", "dtype", "shape", "elements", "bytes"],
            &[Align::Left, Align::Left, Align::Left, Align::Right, Align::Right],
        )
        .paint(paint)
        .header_style(Style::Bold);
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
        title(&mut out, "duplicate tensors");
        for d in &inv.duplicates {
            let how = if d.transposed { " (transposed copy)" } else { "" };
            push(
                &mut out,
                &format!("  {}: {} elements{how}", d.names.join(" = "), thousands(d.elements)),
            );
        }
    }

    if !inv.explanations.is_empty() {
        title(&mut out, "why this count may differ from the framework's");
        for e in &inv.explanations {
            push(&mut out, &format!("  [{}] {}", e.code, e.message));
        }
    }
    let notes: Vec<_> = inv.notes.iter().filter(|n| n.level == NoteLevel::Info).collect();
    if !notes.is_empty() {
        title(&mut out, "notes");
        for n in notes {
            push(&mut out, &format!("  [{}] {}", n.code, n.message));
        }
    }
    out
}

/// The config's facts: architecture, the shape of the stack, attention, experts, KV cache.
fn llm_rows(meta: &mut Table, c: &tpuport_model::LlmConfig, kv: Option<u64>) {
    let arch = [c.architecture.as_deref(), c.model_type.as_deref()];
    let arch: Vec<&str> = arch.into_iter().flatten().collect();
    meta.row(["config".to_owned(), format!("{} ({})", c.source, arch.join(", "))]);
    let mut shape = Vec::new();
    let mut put = |v: Option<u64>, what: &str| {
        if let Some(v) = v {
            shape.push(format!("{what} {v}"));
        }
    };
    put(c.layers, "layers");
    put(c.hidden, "hidden");
    put(c.intermediate, if c.experts.is_some() { "MLP per expert" } else { "MLP" });
    put(c.vocab, "vocab");
    put(c.max_positions, "max positions");
    meta.row(["stack".to_owned(), shape.join(", ")]);
    if let (Some(h), Some(k)) = (c.heads, c.kv_heads) {
        let d = c.head_dim.map(|d| format!(" of {d}")).unwrap_or_default();
        let kind = c.attention().map(|a| format!(": {a}")).unwrap_or_default();
        meta.row(["attention".to_owned(), format!("{h} heads, {k} KV heads{d}{kind}")]);
    }
    if let (Some(e), Some(t)) = (c.experts, c.experts_per_token) {
        meta.row(["experts".to_owned(), format!("{e}, {t} per token")]);
    }
    let mut other = Vec::new();
    if let Some(d) = &c.dtype {
        other.push(d.clone());
    }
    if let Some(t) = c.tied_embeddings {
        other.push(if t { "tied embeddings".into() } else { "untied embeddings".into() });
    }
    if let Some(r) = &c.rope_scaling {
        other.push(format!("rope scaling {r}"));
    }
    if let Some(w) = c.sliding_window {
        other.push(format!("sliding window {w}"));
    }
    if let Some(q) = &c.quantization {
        other.push(format!("quantized ({q})"));
    }
    if !other.is_empty() {
        meta.row(["config notes".to_owned(), other.join(", ")]);
    }
    if let Some(b) = kv {
        let dt = c.dtype.as_deref().filter(|_| c.dtype_bytes().is_some()).unwrap_or("bf16");
        meta.row([
            "KV cache".to_owned(),
            format!("{} per token ({dt}; layers x 2 x KV heads x head dim x bytes)", bytes(b)),
        ]);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use tpuport_analysis::inventory::{self, InventoryOptions};
    use tpuport_model::{
        DType, Graph, Model, ModelFormat, NoteLevel, Shape, TensorType, ValueKind,
    };
    use tpuport_testkit::graph::{f32_weight, node, value};

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
        let w = f32_weight(&mut m, &mut g, "conv.weight", &[64, 3, 3, 3], 1);
        let b = f32_weight(&mut m, &mut g, "conv.bias", &[64], 2);
        let fc = f32_weight(&mut m, &mut g, "fc.weight", &[64, 32], 3);
        let _copy = f32_weight(&mut m, &mut g, "fc.weight.copy", &[64, 32], 3);
        let _s = f32_weight(&mut m, &mut g, "scale", &[], 4);
        let ty = |s: &str| TensorType::new(DType::F32, Shape::parse_dims(s));
        let x = value(&mut g, "input", ty("batchx3x8x8"), ValueKind::Input);
        let c = value(&mut g, "conv_out", ty("batchx64x8x8"), ValueKind::Intermediate);
        let r = value(&mut g, "relu_out", ty("batchx64x8x8"), ValueKind::Intermediate);
        let y = value(&mut g, "logits", ty("batchx64x8x32"), ValueKind::Intermediate);
        g.inputs = vec![x];
        g.outputs = vec![y];
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
        insta::assert_snapshot!(render_text(&inv, Paint::PLAIN));
    }

    #[test]
    fn json_report_snapshot() {
        let inv = inventory::inventory("model.onnx", &model(), &InventoryOptions::default());
        insta::assert_json_snapshot!(inv);
    }
}
