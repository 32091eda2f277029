//! What a parameter is, from its name and shape: embeddings, attention q/k/v/out, MLP
//! up/gate/down, norms, biases, convolution kernels, LM heads, optimizer-free state.
//!
//! Names are split into lower-case segments on every character that is not a letter, a digit or
//! `_` (`transformer.h.0.attn.c_attn.weight`, `params['trainable']['decoder_block_0/attention/
//! query/kernel']`, `state['blocks'][0]['up']['kernel'].value`). The leaf (`weight`, `kernel`,
//! `bias`, `scale`, `embedding`, `gamma`, …) says weight-or-bias; the segment before it (the
//! module) and its parents say which layer. The schemes were read from real key lists, kept
//! under `shard/keys/` (see the first line of each for its source):
//!
//! | scheme | attention | MLP | embedding / head | norms |
//! |---|---|---|---|---|
//! | HF Llama/Mistral/Gemma | `self_attn.{q,k,v,o}_proj` | `mlp.{gate,up,down}_proj` | `embed_tokens`, `lm_head` | `*layernorm`, `norm` |
//! | HF GPT-2 (`Conv1D`, `[in, out]`) | `attn.c_attn` (fused), `attn.c_proj` | `mlp.c_fc`, `mlp.c_proj` | `wte`, `wpe` | `ln_1`, `ln_f` |
//! | HF BERT | `attention.self.{query,key,value}`, `attention.output.dense` | `intermediate.dense`, `output.dense` | `word_embeddings`, … | `LayerNorm` |
//! | Flax/NNX | `attn.{query,key,value,out}` (`[D,H,Dh]`, `[H,Dh,D]`) | `up`, `down` | `embed.embedding` | `ln*.scale` |
//! | Gemma (Flax example) | `attn.{q,kv,qkv,attn_vec}_einsum` (`[N,D,Dh]`, `[2,K,D,Dh]`, `[3,N,D,Dh]`, `[N,Dh,D]`) | `mlp.{gate,up,down}_proj` | `embedder.embedding` (tied) | `pre_attention_norm.scale` |
//! | keras-hub | `attention/{query,key,value,attention_output}`, `self_attention/…` | `ffw_gating(_2)`, `ffw_linear`, `feedforward_{intermediate,output}_dense` | `token_embedding/embeddings` | `*_norm/scale`, `layer_norm/gamma` |
//! | torchvision ViT | `self_attention.in_proj_weight` (fused), `self_attention.out_proj` | `mlp.0`, `mlp.3` | `class_token`, `pos_embedding` | `ln_1`, `ln_2`, `ln` |
//!
//! A name no rule knows falls back to its shape: a matrix is sharded FSDP-style on its largest
//! dimension, a vector is replicated; such parameters are listed as not recognised.

use serde::Serialize;

/// What a parameter is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Token embedding table `[vocab, hidden]`.
    Embedding,
    /// Position / token-type embedding table (small, not vocabulary-sized).
    PositionEmbedding,
    /// Attention query projection.
    Query,
    /// Attention key projection.
    Key,
    /// Attention value projection.
    Value,
    /// Fused query/key/value projection.
    Qkv,
    /// Attention output projection.
    AttnOut,
    /// MLP up projection.
    MlpUp,
    /// MLP gate projection (gated MLPs).
    MlpGate,
    /// MLP down projection.
    MlpDown,
    /// Output projection onto the vocabulary.
    LmHead,
    /// Normalisation scale or shift.
    Norm,
    /// A bias vector.
    Bias,
    /// Convolution kernel.
    Conv,
    /// Not trained: batch statistics, seeds, counters.
    State,
    /// A matrix no name rule knew (sharded by shape).
    Matrix,
    /// A vector or scalar no name rule knew (replicated).
    Vector,
}

impl Kind {
    /// The report spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Embedding => "embedding",
            Kind::PositionEmbedding => "position-embedding",
            Kind::Query => "attn-q",
            Kind::Key => "attn-k",
            Kind::Value => "attn-v",
            Kind::Qkv => "attn-qkv",
            Kind::AttnOut => "attn-out",
            Kind::MlpUp => "mlp-up",
            Kind::MlpGate => "mlp-gate",
            Kind::MlpDown => "mlp-down",
            Kind::LmHead => "lm-head",
            Kind::Norm => "norm",
            Kind::Bias => "bias",
            Kind::Conv => "conv",
            Kind::State => "state",
            Kind::Matrix => "matrix",
            Kind::Vector => "vector",
        }
    }

    /// The Megatron split: column-parallel (q, k, v, up, gate), row-parallel (out, down).
    #[must_use]
    pub fn parallel(self) -> Parallel {
        match self {
            Kind::Query | Kind::Key | Kind::Value | Kind::Qkv | Kind::MlpUp | Kind::MlpGate => {
                Parallel::Column
            }
            Kind::AttnOut | Kind::MlpDown => Parallel::Row,
            Kind::Embedding | Kind::LmHead => Parallel::Vocab,
            Kind::PositionEmbedding | Kind::Conv | Kind::Matrix => Parallel::Fsdp,
            Kind::Norm | Kind::Bias | Kind::State | Kind::Vector => Parallel::Replicated,
        }
    }

    /// True for parameters the optimizer updates.
    #[must_use]
    pub fn trained(self) -> bool {
        self != Kind::State
    }
}

/// How a parameter is split across the tensor axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parallel {
    /// Split on the output features (Megatron `ColumnParallelLinear`).
    Column,
    /// Split on the input features (Megatron `RowParallelLinear`).
    Row,
    /// Split on the vocabulary.
    Vocab,
    /// No tensor split; FSDP only.
    Fsdp,
    /// Kept whole on every chip.
    Replicated,
}

/// How a matrix stores its two feature dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Orientation {
    /// PyTorch `nn.Linear.weight`: `[out, in]`.
    OutIn,
    /// Flax / Keras `kernel`, HF GPT-2 `Conv1D`: `[in, out]`.
    InOut,
}

/// How a parameter was recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recognised {
    /// A name rule.
    Name,
    /// Only the shape (the name is unknown).
    Shape,
}

/// A parameter's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ParamRole {
    /// What it is.
    pub kind: Kind,
    /// Feature order of a matrix.
    pub orientation: Orientation,
    /// By name or by shape.
    pub recognised: Recognised,
    /// Transformer layer index read from the name (`layers.3`, `h.3`, `decoder_block_3`).
    pub layer: Option<u32>,
}

const NORM_HINTS: &[&str] = &["norm", "layernorm", "ln", "bn", "batchnorm", "rmsnorm"];
const STATE_LEAVES: &[&str] = &[
    "moving_mean",
    "moving_variance",
    "running_mean",
    "running_var",
    "num_batches_tracked",
    "seed_generator_state",
    "mean",
    "var",
];

/// Lower-case segments of a name, without the empty ones and a trailing `value` (NNX).
fn segments(name: &str) -> Vec<String> {
    let mut segs: Vec<String> = name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    if segs.len() > 1 && segs.last().is_some_and(|s| s == "value") {
        segs.pop();
    }
    segs
}

/// A segment is a norm module (`ln_1`, `ln1`, `input_layernorm`, `pre_ffw_norm`, `LayerNorm`,
/// `conv1_bn`, `BatchNorm_0`).
fn is_norm(seg: &str) -> bool {
    let base = seg.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_');
    seg.split('_').any(|part| {
        let p = part.trim_end_matches(|c: char| c.is_ascii_digit());
        NORM_HINTS.contains(&p) || p.ends_with("norm")
    }) || base.ends_with("norm")
}

/// The layer index in `layers.3`, `h.3`, `layer.3`, `blocks][0`, `decoder_block_3`,
/// `transformer_layer_1`, `Block_2`.
fn layer_index(segs: &[String]) -> Option<u32> {
    for (i, s) in segs.iter().enumerate() {
        if let Ok(n) = s.parse::<u32>()
            && i > 0
        {
            return Some(n);
        }
        if let Some((head, tail)) = s.rsplit_once('_') {
            let h = head.to_ascii_lowercase();
            if (h.ends_with("block") || h.ends_with("layer") || h == "h")
                && !tail.is_empty()
                && tail.bytes().all(|b| b.is_ascii_digit())
            {
                return tail.parse().ok();
            }
        }
    }
    None
}

/// Whether any segment equals one of `names`.
fn has(segs: &[String], names: &[&str]) -> bool {
    segs.iter().any(|s| names.contains(&s.as_str()))
}

/// The module part of a Keras path segment (`decoder_block_0/attention/query/kernel` is one
/// string in the exporter's name but several here, as `/` splits too).
fn classify_module(module: &str, parents: &[String], rank: usize) -> Option<Kind> {
    let in_attn = parents.iter().any(|p| {
        p.contains("attn") || p.contains("attention") || p == "self" || p == "self_attention"
    });
    let in_mlp = parents.iter().any(|p| {
        p == "mlp" || p.contains("ffn") || p.contains("feed_forward") || p == "intermediate"
    });
    let k = match module {
        "q_proj" | "query" | "q" | "wq" | "to_q" | "q_lin" | "query_proj" | "q_einsum" => {
            Kind::Query
        }
        // Gemma's `kv_einsum` (`[2, K, D, Dh]`) holds the key and the value projections stacked:
        // planned as a key projection (split on its K heads, replicated when they are fewer
        // than the tensor axis).
        "k_proj" | "key" | "k" | "wk" | "to_k" | "k_lin" | "key_proj" | "kv_einsum" => Kind::Key,
        "v_proj" | "value" | "v" | "wv" | "to_v" | "v_lin" | "value_proj" => Kind::Value,
        // `nn.MultiheadAttention` stores its fused projection as `in_proj_weight`/`_bias`;
        // Gemma's `qkv_einsum` is `[3, N, D, Dh]`.
        "c_attn" | "qkv" | "qkv_proj" | "query_key_value" | "in_proj" | "wqkv" | "w_pack"
        | "in_proj_weight" | "in_proj_bias" | "qkv_einsum" => Kind::Qkv,
        "o_proj" | "out_proj" | "attention_output" | "out_lin" | "dense_out"
        | "attn_vec_einsum" => Kind::AttnOut,
        "up_proj"
        | "c_fc"
        | "fc1"
        | "fc_in"
        | "w3"
        | "wi"
        | "wi_1"
        | "dense_h_to_4h"
        | "feedforward_intermediate_dense"
        | "up"
        | "ffw_gating_2"
        | "gate_up_proj"
        | "lin1" => Kind::MlpUp,
        "gate_proj" | "w1" | "wi_0" | "ffw_gating" | "gate" => Kind::MlpGate,
        "down_proj"
        | "fc2"
        | "fc_out"
        | "w2"
        | "dense_4h_to_h"
        | "feedforward_output_dense"
        | "down"
        | "ffw_linear"
        | "lin2" => Kind::MlpDown,
        "lm_head" | "unembed" | "embed_out" | "output_projection" => Kind::LmHead,
        "wte" | "embed_tokens" | "word_embeddings" | "token_embedding" | "tok_embeddings"
        | "embed" | "embed_in" | "shared" | "token_embeddings" => Kind::Embedding,
        "wpe"
        | "position_embeddings"
        | "position_embedding"
        | "pos"
        | "pos_embed"
        | "token_type_embeddings"
        | "positional_embedding"
        | "pos_embedding"
        | "class_token"
        | "cls_token" => Kind::PositionEmbedding,
        // torchvision's `MLPBlock` is a Sequential: `mlp.0` the up projection, `mlp.3` down.
        m if parents.last().is_some_and(|p| p == "mlp")
            && !m.is_empty()
            && m.bytes().all(|b| b.is_ascii_digit()) =>
        {
            if m == "0" {
                Kind::MlpUp
            } else {
                Kind::MlpDown
            }
        }
        "c_proj" | "proj" | "out" | "wo" | "o" if in_attn => Kind::AttnOut,
        "c_proj" | "proj" | "wo" | "dense" if in_mlp => {
            if module == "dense" && parents.iter().any(|p| p == "intermediate") {
                Kind::MlpUp
            } else {
                Kind::MlpDown
            }
        }
        // BERT: `attention.output.dense` is the attention output, `layer.N.output.dense` the
        // MLP down projection, `intermediate.dense` the MLP up projection.
        "dense" if parents.last().is_some_and(|p| p == "output") => {
            if in_attn {
                Kind::AttnOut
            } else {
                Kind::MlpDown
            }
        }
        "dense" if parents.last().is_some_and(|p| p == "intermediate") => Kind::MlpUp,
        m if (m.starts_with("conv") || m.contains("_conv") || m.contains("depthwise"))
            && rank >= 3 =>
        {
            Kind::Conv
        }
        _ => return None,
    };
    Some(k)
}

/// The role of one parameter from its name and shape. `torch_like` says the file stores
/// PyTorch `nn.Linear` weights (`[out, in]`): true for state dicts, safetensors and ONNX
/// initializers; false for Flax/Keras exports (`kernel` leaves are `[in, out]` anyway).
#[must_use]
pub fn classify(name: &str, shape: &[u64]) -> ParamRole {
    let segs = segments(name);
    let layer = layer_index(&segs);
    let rank = shape.len();
    let leaf = segs.last().map_or("", String::as_str);
    let kernel_leaf = matches!(leaf, "kernel" | "embeddings" | "embedding");
    // HF GPT-2 Conv1D stores `[in, out]` under `weight`.
    let conv1d = has(&segs, &["c_attn", "c_fc", "c_proj"]) && leaf == "weight";
    let orientation = if kernel_leaf || conv1d { Orientation::InOut } else { Orientation::OutIn };
    let role = |kind, recognised| ParamRole { kind, orientation, recognised, layer };

    // The argument-role name rule knows the rest: batch statistics, caches, seeds, RNG
    // streams, optimizer state, metric accumulators (`train_metrics.loss.total`).
    if STATE_LEAVES.contains(&leaf)
        || crate::roles::rule_name(name) == Some(crate::roles::Role::State)
    {
        return role(Kind::State, Recognised::Name);
    }
    let module_idx = if matches!(
        leaf,
        "weight" | "kernel" | "bias" | "scale" | "gamma" | "beta" | "embedding" | "embeddings"
    ) && segs.len() > 1
    {
        segs.len() - 2
    } else {
        segs.len().saturating_sub(1)
    };
    let module = segs.get(module_idx).map_or("", String::as_str);
    let parents = &segs[..module_idx];
    if is_norm(module) || (rank <= 1 && matches!(leaf, "gamma" | "beta" | "scale")) {
        return role(Kind::Norm, Recognised::Name);
    }
    let known = classify_module(module, parents, rank);
    if matches!(leaf, "bias" | "beta") || (rank == 1 && known.is_some()) {
        return role(Kind::Bias, Recognised::Name);
    }
    if let Some(k) = known {
        return role(k, Recognised::Name);
    }
    // `embeddings` leaves without a known module (`embeddings.weight`), `lm_head`-like leaves.
    if matches!(leaf, "embedding" | "embeddings") && rank == 2 {
        return role(Kind::Embedding, Recognised::Name);
    }
    match rank {
        0 | 1 => role(Kind::Vector, Recognised::Shape),
        2 => role(Kind::Matrix, Recognised::Shape),
        _ if leaf == "kernel" || leaf == "weight" => role(Kind::Conv, Recognised::Shape),
        _ => role(Kind::Matrix, Recognised::Shape),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A key list: `(name, shape, dtype)` per line, `#` lines skipped.
    pub(crate) fn keys(text: &str) -> Vec<(String, Vec<u64>, String)> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let mut f = l.split('\t');
                let name = f.next().unwrap().to_owned();
                let shape = f.next().unwrap();
                let shape = if shape == "scalar" {
                    Vec::new()
                } else {
                    shape.split('x').map(|d| d.parse().unwrap()).collect()
                };
                (name, shape, f.next().unwrap().to_owned())
            })
            .collect()
    }

    /// Kind → count over a key list, and the names recognised only by shape.
    fn census(text: &str) -> (BTreeMap<&'static str, usize>, Vec<String>) {
        let mut m = BTreeMap::new();
        let mut unknown = Vec::new();
        // `tokens`, `data[0]`: the data arguments of the exports (roles decide them).
        for (name, shape, _) in keys(text).into_iter().filter(|(_, _, d)| !d.starts_with('i')) {
            let r = classify(&name, &shape);
            *m.entry(r.kind.as_str()).or_insert(0) += 1;
            if r.recognised == Recognised::Shape {
                unknown.push(name);
            }
        }
        (m, unknown)
    }

    fn of(pairs: &[(&'static str, usize)]) -> BTreeMap<&'static str, usize> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn torchvision_vit_b_16_state_dict() {
        let (m, unknown) = census(include_str!("keys/torchvision_vit_b_16.tsv"));
        // The classifier has no transformer role (the stem `conv_proj` is a convolution).
        assert_eq!(unknown, ["heads.head.weight"]);
        assert_eq!(
            m,
            of(&[
                ("attn-out", 12),
                ("attn-qkv", 12),
                ("bias", 50),
                ("matrix", 1),
                ("conv", 1),
                ("mlp-down", 12),
                ("mlp-up", 12),
                ("norm", 50),
                ("position-embedding", 2),
            ])
        );
    }

    #[test]
    fn llama_2_7b_state_dict() {
        let (m, unknown) = census(include_str!("keys/llama2_7b.tsv"));
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            m,
            of(&[
                ("attn-k", 32),
                ("attn-out", 32),
                ("attn-q", 32),
                ("attn-v", 32),
                ("embedding", 1),
                ("lm-head", 1),
                ("mlp-down", 32),
                ("mlp-gate", 32),
                ("mlp-up", 32),
                ("norm", 65),
            ])
        );
        let r = classify("model.layers.17.mlp.down_proj.weight", &[4096, 11008]);
        assert_eq!((r.orientation, r.layer), (Orientation::OutIn, Some(17)));
    }

    #[test]
    fn hf_gpt2_conv1d_is_in_out() {
        let (m, unknown) = census(include_str!("keys/hf_gpt2.tsv"));
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            m,
            of(&[
                ("attn-out", 12),
                ("attn-qkv", 12),
                ("bias", 48),
                ("embedding", 1),
                ("mlp-down", 12),
                ("mlp-up", 12),
                ("norm", 50),
                ("position-embedding", 1),
            ])
        );
        let r = classify("transformer.h.3.mlp.c_fc.weight", &[768, 3072]);
        assert_eq!((r.kind, r.orientation, r.layer), (Kind::MlpUp, Orientation::InOut, Some(3)));
        let r = classify("transformer.h.3.attn.c_proj.weight", &[768, 768]);
        assert_eq!(r.kind, Kind::AttnOut);
    }

    #[test]
    fn hf_bert() {
        let (m, unknown) = census(include_str!("keys/hf_bert_base.tsv"));
        // The pooler is a plain dense layer no scheme names: it falls back to its shape.
        assert_eq!(unknown, vec!["pooler.dense.weight"]);
        assert_eq!(
            m,
            of(&[
                ("attn-k", 12),
                ("attn-out", 12),
                ("attn-q", 12),
                ("attn-v", 12),
                ("bias", 73),
                ("embedding", 1),
                ("matrix", 1),
                ("mlp-down", 12),
                ("mlp-up", 12),
                ("norm", 50),
                ("position-embedding", 2),
            ])
        );
    }

    #[test]
    fn flax_nnx_transformer() {
        let (m, unknown) = census(include_str!("keys/nnx_transformer.tsv"));
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            m,
            of(&[
                ("attn-k", 2),
                ("attn-out", 2),
                ("attn-q", 2),
                ("attn-v", 2),
                ("bias", 12),
                ("embedding", 1),
                ("mlp-down", 2),
                ("mlp-up", 2),
                ("norm", 10),
                ("position-embedding", 1),
            ])
        );
        let r = classify("state['blocks'][1]['attn']['query']['kernel'].value", &[64, 4, 16]);
        assert_eq!((r.kind, r.orientation, r.layer), (Kind::Query, Orientation::InOut, Some(1)));
    }

    #[test]
    fn flax_gemma_example() {
        // A real training script's model (google/flax examples/gemma), 4 layers: every
        // parameter is recognised by name, the fused `kv_einsum` as the key projection.
        let (m, unknown) = census(include_str!("keys/flax_gemma_example.tsv"));
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(
            m,
            of(&[
                ("attn-k", 4),
                ("attn-out", 4),
                ("attn-q", 4),
                ("embedding", 1),
                ("mlp-down", 4),
                ("mlp-gate", 4),
                ("mlp-up", 4),
                ("norm", 9),
            ])
        );
        let r = classify("model.layers[3].attn.attn_vec_einsum.kernel.value", &[4, 128, 256]);
        assert_eq!((r.kind, r.layer), (Kind::AttnOut, Some(3)));
    }

    #[test]
    fn keras_hub_gemma_and_gpt2() {
        let (m, _) = census(include_str!("keys/kerashub_gemma.tsv"));
        assert_eq!(
            m,
            of(&[
                ("attn-k", 2),
                ("attn-out", 2),
                ("attn-q", 2),
                ("attn-v", 2),
                ("embedding", 1),
                ("mlp-down", 2),
                ("mlp-gate", 2),
                ("mlp-up", 2),
                ("norm", 5),
            ])
        );
        let (m, _) = census(include_str!("keys/kerashub_gpt2.tsv"));
        assert_eq!(m.get("state"), Some(&7));
        assert_eq!(m.get("attn-out"), Some(&2));
        assert_eq!(m.get("mlp-up"), Some(&2));
        assert_eq!(m.get("mlp-down"), Some(&2));
        assert_eq!(m.get("norm"), Some(&10));
        assert_eq!(m.get("position-embedding"), Some(&1));
    }

    #[test]
    fn cnns_conv_kernels_and_batch_stats() {
        let (m, _) = census(include_str!("keys/flax_resnet18.tsv"));
        assert_eq!(m.get("conv"), Some(&20));
        assert_eq!(m.get("state"), Some(&40));
        let (m, _) = census(include_str!("keys/keras_resnet50.tsv"));
        assert_eq!(m.get("conv"), Some(&53));
        assert_eq!(m.get("state"), Some(&106));
    }
}
