//! A Hugging Face checkpoint folder's `config.json`, read beside its safetensors: the model's
//! own statement of heads, KV heads, layers, experts and dtype ([`LlmConfig`]), and a warning
//! note for each place where the tensors say otherwise.
//!
//! Key names differ between families; each field takes the first key present:
//! layers `num_hidden_layers` / `n_layer` / `num_layers`; hidden `hidden_size` / `n_embd` /
//! `d_model`; heads `num_attention_heads` / `n_head` / `num_heads`; KV heads
//! `num_key_value_heads` / `n_kv_heads` / `num_kv_heads` (`multi_query: true` is 1; absent is
//! `heads`); experts `num_local_experts` / `num_experts` / `n_routed_experts`; experts per token
//! `num_experts_per_tok` / `moe_top_k`; MLP width `moe_intermediate_size` for a mixture of
//! experts (the per-expert width), else `intermediate_size` / `n_inner` / `ffn_dim` / `d_ff`. A
//! multimodal config (Gemma 3, Llava) nests the language model under `text_config`, read
//! from there.

use std::path::Path;

use serde_json::{Map, Value};
use tpuport_model::{LlmConfig, Model, NoteLevel};

use crate::FormatError;

/// Larger than any real config (Llama's is under 1 KiB, a multimodal one a few KiB).
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Reads `dir/config.json` when there is one and it is a `transformers` config (it names
/// `model_type` or `architectures`; a diffusers or other config beside the weights is not read).
/// A file that is not a JSON object or is larger than 4 MiB is an error naming it; a count that
/// is not a positive integer is left unset and returned as a problem (`(config, problems)`),
/// since the weights are still readable. A folder without one is `None`.
///
/// # Errors
/// [`FormatError`] naming `config.json` and what is wrong with it.
pub fn read(dir: &Path) -> Result<Option<(LlmConfig, Vec<String>)>, FormatError> {
    let path = dir.join("config.json");
    let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(FormatError::invalid(
            &path,
            format!(
                "{} bytes, larger than any model config ({MAX_CONFIG_BYTES} allowed)",
                meta.len()
            ),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| FormatError::io(&path, e))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| FormatError::invalid(&path, format!("not JSON: {e}")))?;
    let Value::Object(top) = &v else {
        return Err(FormatError::invalid(&path, "not a JSON object"));
    };
    if !top.contains_key("model_type") && !top.contains_key("architectures") {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let config = parse(&path, top, &mut problems);
    Ok(Some((config, problems)))
}

fn parse(path: &Path, top: &Map<String, Value>, problems: &mut Vec<String>) -> LlmConfig {
    // The language model's own block of a multimodal config.
    let text = match top.get("text_config") {
        Some(Value::Object(t)) if !has_any(top, LAYERS) => t,
        _ => top,
    };
    let bad = std::cell::RefCell::new(Vec::new());
    let count = |keys: &[&str]| -> Option<u64> {
        for k in keys {
            match text.get(*k) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_u64().is_some_and(|x| x > 0) => return n.as_u64(),
                Some(other) => {
                    bad.borrow_mut().push(format!("`{k}` is {other}, not a positive integer"));
                    return None;
                }
            }
        }
        None
    };
    let string =
        |k: &str| text.get(k).or_else(|| top.get(k)).and_then(Value::as_str).map(str::to_owned);
    let layers = count(LAYERS);
    let hidden = count(&["hidden_size", "n_embd", "d_model"]);
    let heads = count(&["num_attention_heads", "n_head", "num_heads"]);
    let multi_query = text.get("multi_query").and_then(Value::as_bool) == Some(true);
    let kv_heads = match count(&["num_key_value_heads", "n_kv_heads", "num_kv_heads"]) {
        Some(k) => Some(k),
        None if multi_query => Some(1),
        None => heads,
    };
    let head_dim = match count(&["head_dim"]) {
        Some(d) => Some(d),
        None => hidden.zip(heads).map(|(h, n)| h / n),
    };
    let experts = count(&["num_local_experts", "num_experts", "n_routed_experts"]);
    let intermediate = experts
        .and_then(|_| count(&["moe_intermediate_size"]))
        .or_else(|| count(&["intermediate_size", "n_inner", "ffn_dim", "d_ff"]));
    let rope_scaling = text.get("rope_scaling").and_then(Value::as_object).map(|r| {
        let kind = r.get("rope_type").or_else(|| r.get("type")).and_then(Value::as_str);
        let factor = r.get("factor").and_then(Value::as_f64);
        match (kind, factor) {
            (Some(k), Some(f)) => format!("{k} x{f}"),
            (Some(k), None) => k.to_owned(),
            (None, Some(f)) => format!("x{f}"),
            (None, None) => "set".to_owned(),
        }
    });
    let config = LlmConfig {
        source: path.display().to_string(),
        architecture: top
            .get("architectures")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_owned),
        model_type: string("model_type"),
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab: count(&["vocab_size"]),
        tied_embeddings: text
            .get("tie_word_embeddings")
            .or_else(|| top.get("tie_word_embeddings"))
            .and_then(Value::as_bool),
        max_positions: count(&["max_position_embeddings", "n_positions", "n_ctx"]),
        rope_scaling,
        experts,
        experts_per_token: count(&["num_experts_per_tok", "num_experts_per_token", "moe_top_k"]),
        dtype: string("torch_dtype").or_else(|| string("dtype")),
        quantization: top
            .get("quantization_config")
            .and_then(|q| q.get("quant_method"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        sliding_window: count(&["sliding_window"]),
    };
    problems.extend(bad.into_inner().into_iter().map(|p| format!("{}: {p}", path.display())));
    config
}

const LAYERS: &[&str] = &["num_hidden_layers", "n_layer", "num_layers"];

fn has_any(m: &Map<String, Value>, keys: &[&str]) -> bool {
    keys.iter().any(|k| m.contains_key(*k))
}

/// Attaches `config` to `model` and adds a warning note for each place where the tensors
/// disagree with it: the token embedding's `[vocab, hidden]`, the number of layers the names
/// count, and the first layer's query and key projections' output rows (heads x head dim,
/// KV heads x head dim).
pub fn attach(model: &mut Model, config: LlmConfig, problems: Vec<String>) {
    for p in problems {
        model.note(NoteLevel::Warning, "config-field", p);
    }
    let mut notes = Vec::new();
    let shape_of = |suffixes: &[&str]| {
        model
            .weights
            .iter()
            .find(|w| suffixes.iter().any(|s| w.name.ends_with(s)))
            .map(|w| w.shape.clone())
    };
    if let Some(s) = shape_of(&["embed_tokens.weight", "wte.weight", "word_embeddings.weight"])
        && let [rows, cols] = s.as_slice()
    {
        if let Some(v) = config.vocab
            && v != *rows
        {
            notes.push(format!("vocab_size {v}, but the token embedding has {rows} rows"));
        }
        if let Some(h) = config.hidden
            && h != *cols
        {
            notes.push(format!("hidden_size {h}, but the token embedding is {cols} wide"));
        }
    }
    let layers = model.weights.iter().filter_map(|w| layer_index(&w.name)).max().map(|l| l + 1);
    if let (Some(c), Some(t)) = (config.layers, layers)
        && c != t
    {
        notes.push(format!("{c} layers in the config, {t} in the tensor names"));
    }
    let rows = |proj: &str| {
        model
            .weights
            .iter()
            .find(|w| {
                layer_index(&w.name) == Some(0) && w.name.ends_with(&format!("{proj}.weight"))
            })
            .and_then(|w| w.shape.first().copied())
    };
    if let (Some(h), Some(d), Some(r)) = (config.heads, config.head_dim, rows("q_proj"))
        && h * d != r
    {
        notes.push(format!("{h} heads x head_dim {d} = {}, but q_proj has {r} output rows", h * d));
    }
    if let (Some(k), Some(d), Some(r)) = (config.kv_heads, config.head_dim, rows("k_proj"))
        && k * d != r
    {
        notes.push(format!(
            "{k} KV heads x head_dim {d} = {}, but k_proj has {r} output rows",
            k * d
        ));
    }
    for n in notes {
        model.note(NoteLevel::Warning, "config-tensor-mismatch", format!("config.json: {n}"));
    }
    model.metadata.llm = Some(config);
}

/// The layer index in a tensor name (`model.layers.12.mlp...` → 12, `h.3.attn` → 3).
fn layer_index(name: &str) -> Option<u64> {
    let parts: Vec<&str> = name.split('.').collect();
    parts.windows(2).find_map(|w| {
        matches!(w[0], "layers" | "h" | "layer" | "blocks").then(|| w[1].parse().ok()).flatten()
    })
}
