//! What a language model's own configuration says about it (a Hugging Face `config.json`):
//! the facts the tensors cannot tell, such as the number of attention heads (a `[4096, 4096]`
//! query projection is 32 heads of 128 or 64 of 64), grouped-query attention's KV heads (which
//! bound tensor parallelism and size the KV cache), and mixture-of-experts routing.

use serde::Serialize;

/// A decoder's (or encoder's) configuration as its checkpoint folder states it. Every field is
/// optional: configs name things differently and leave things out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LlmConfig {
    /// The file it was read from.
    pub source: String,
    /// `architectures[0]` (`LlamaForCausalLM`).
    pub architecture: Option<String>,
    /// `model_type` (`llama`, `qwen3_moe`).
    pub model_type: Option<String>,
    /// Transformer layers.
    pub layers: Option<u64>,
    /// Hidden size.
    pub hidden: Option<u64>,
    /// Query heads.
    pub heads: Option<u64>,
    /// Key/value heads (grouped-query attention); equal to `heads` when the config says
    /// nothing (multi-head attention).
    pub kv_heads: Option<u64>,
    /// Per-head dimension: the config's `head_dim`, else hidden / heads.
    pub head_dim: Option<u64>,
    /// MLP width (per expert for a mixture of experts).
    pub intermediate: Option<u64>,
    /// Vocabulary.
    pub vocab: Option<u64>,
    /// The output projection reuses the token embedding.
    pub tied_embeddings: Option<bool>,
    /// Longest context the positions were trained for.
    pub max_positions: Option<u64>,
    /// RoPE scaling as written (`llama3 x8.0`), when any.
    pub rope_scaling: Option<String>,
    /// Experts per MoE layer.
    pub experts: Option<u64>,
    /// Experts each token is routed to.
    pub experts_per_token: Option<u64>,
    /// `torch_dtype` / `dtype` (`bfloat16`).
    pub dtype: Option<String>,
    /// `quantization_config.quant_method`, when quantized.
    pub quantization: Option<String>,
    /// Sliding-window attention width, when the config sets one.
    pub sliding_window: Option<u64>,
}

impl LlmConfig {
    /// Bytes of KV cache one token adds across all layers: layers x 2 (K and V) x KV heads x
    /// head dim x `bytes_per_element` (2 for bf16). `None` when the config lacks one of them.
    #[must_use]
    pub fn kv_bytes_per_token(&self, bytes_per_element: u64) -> Option<u64> {
        let per = self.layers?.checked_mul(2)?.checked_mul(self.kv_heads?)?;
        per.checked_mul(self.head_dim?)?.checked_mul(bytes_per_element)
    }

    /// `MHA`, `GQA (4 query heads per KV head)` or `MQA`, from the head counts.
    #[must_use]
    pub fn attention(&self) -> Option<String> {
        let (h, kv) = (self.heads?, self.kv_heads?);
        Some(match kv {
            0 => return None,
            1 if h > 1 => "MQA".to_owned(),
            _ if kv == h => "MHA".to_owned(),
            _ => format!("GQA ({} query heads per KV head)", h / kv),
        })
    }

    /// Bytes per element of the config's `torch_dtype`, when it names one tpuport knows.
    #[must_use]
    pub fn dtype_bytes(&self) -> Option<u64> {
        match self.dtype.as_deref()? {
            "bfloat16" | "float16" | "bf16" | "fp16" => Some(2),
            "float32" | "fp32" => Some(4),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_bytes_and_attention_kind_follow_the_head_counts() {
        // Llama-3.1-8B: 32 layers, 8 KV heads of 128 in bf16: 32 x 2 x 8 x 128 x 2 = 128 KiB.
        let c = LlmConfig {
            layers: Some(32),
            heads: Some(32),
            kv_heads: Some(8),
            head_dim: Some(128),
            ..LlmConfig::default()
        };
        assert_eq!(c.kv_bytes_per_token(2), Some(131_072));
        assert_eq!(c.attention().as_deref(), Some("GQA (4 query heads per KV head)"));
        let mha = LlmConfig { kv_heads: Some(32), ..c.clone() };
        assert_eq!(mha.attention().as_deref(), Some("MHA"));
        let mqa = LlmConfig { kv_heads: Some(1), ..c.clone() };
        assert_eq!(mqa.attention().as_deref(), Some("MQA"));
        assert_eq!(LlmConfig { layers: None, ..c }.kv_bytes_per_token(2), None);
    }
}
