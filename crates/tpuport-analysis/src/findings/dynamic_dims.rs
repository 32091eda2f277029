//! AUD102: symbolic dims in the signature other than the batch.

use std::collections::BTreeMap;

use tpuport_model::Dim;

use super::{Ctx, Rule, Sink};

tpuport_codes::documented! {
    /// ## What it finds
    /// Symbolic (dynamic) dimensions of the model's inputs other than the leading batch
    /// dimension: sequence lengths, image sizes, anonymous `?` dims. The leading dimension of
    /// an input counts as the batch, which `--batch` binds. (Outputs whose size depends on the
    /// data are AUD101.)
    ///
    /// ## Why it hurts on TPU
    /// XLA compiles one program per concrete shape. Every new value of a free dimension (each
    /// new sequence length, each last partial batch) triggers a fresh compilation that can take
    /// seconds to minutes (Fairseq RoBERTa recompiled 429 times in 493 steps, pytorch/xla#3356).
    ///
    /// ## What to do
    /// Pick the sizes you will run with and bind them (`--dim NAME=N` for the audit, fixed
    /// shapes at export time), and pad inputs to a few buckets (e.g. sequence lengths 128 / 256
    /// / 512) so XLA compiles once per bucket; tokenizers: `padding="max_length"`.
    ///
    /// ## References
    /// - pytorch/xla#3356 (429 recompilations), pytorch/xla#1509 (variable-length inputs)
    /// - [JAX: shape polymorphism](https://docs.jax.dev/en/latest/export/shape_poly.html)
    pub(crate) struct DynamicDims;
}

impl Rule for DynamicDims {
    fn check(cx: &Ctx<'_>, sink: &mut Sink<'_>) {
        let g = &cx.model.graph;
        // Symbols at dim 0 of any input are the batch.
        let mut batch: Vec<String> = Vec::new();
        for i in &g.inputs {
            if let Some(Dim::Sym(s)) = g.value(*i).ty.shape.as_ref().and_then(|s| s.0.first()) {
                batch.push(s.clone());
            }
        }
        // symbol -> values using it at a non-batch position
        let mut free: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for v in &g.inputs {
            let val = g.value(*v);
            let Some(shape) = val.ty.shape.as_ref() else { continue };
            for (k, d) in shape.0.iter().enumerate() {
                let Dim::Sym(s) = d else { continue };
                let is_batch = k == 0 || (s != "?" && batch.contains(s));
                if is_batch {
                    continue;
                }
                let key = if s == "?" { format!("?({}[{k}])", val.name) } else { s.clone() };
                let users = free.entry(key).or_default();
                if !users.contains(&val.name) {
                    users.push(val.name.clone());
                }
            }
        }
        if free.is_empty() {
            return;
        }
        let syms: Vec<String> = free.keys().cloned().collect();
        let nodes: Vec<String> = free.values().flatten().cloned().collect();
        let batch_note = match (cx.opts.batch, batch.is_empty()) {
            (Some(b), false) => format!(" (the batch dim is bound to {b} by --batch)"),
            (None, false) => " (the leading batch dim is left to --batch)".to_owned(),
            _ => String::new(),
        };
        sink.emit(
            "Dynamic dimensions other than batch".to_owned(),
            format!(
                "the signature has {} free symbolic dim(s) besides the batch: {}{batch_note}; XLA compiles again for every new size",
                syms.len(),
                syms.join(", ")
            ),
            nodes,
            "bind each dim (--dim NAME=N, fixed shapes at export) and pad inputs to a few fixed buckets so XLA compiles once per bucket",
        );
    }
}
