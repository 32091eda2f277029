//! Serving a language model the way vLLM's TPU engines do: weights split by tensor parallelism
//! over `tp` chips, replicas over the rest of the slice, and the rest of each chip's HBM (at a
//! memory-utilization fraction) given to the paged KV cache. Needs the model's config (heads,
//! KV heads, head dim, layers); the tensors give the weight bytes.
//!
//! Per tensor-parallel degree `tp` (a divisor of the slice's chips that divides the query
//! heads, and for which KV heads divide by `tp` or `tp` by KV heads, as vLLM requires: below
//! that the KV heads are replicated so each chip holds at least one):
//! - weights per chip = stored bytes / tp;
//! - KV bytes per token per chip = layers x 2 x max(1, KV heads / tp) x head dim x KV dtype;
//! - cache budget per chip = utilization x usable HBM - weights per chip (activations and the
//!   compiled program are not counted: vLLM measures them with a profiling run, here they are
//!   inside the 1 - utilization left over);
//! - tokens of cache = budget / KV per token per chip; sequences = tokens / context;
//! - decode, from the HBM roofline: each step reads the chip's weights and, per sequence, its
//!   cache of `context` tokens, so a step of `b` sequences takes (weights + b x context x KV) /
//!   bandwidth; tokens/s at batch 1 and at the most sequences that fit (per replica, and for
//!   the slice with its replicas);
//! - prefill of one sequence: 2 x parameters x context FLOPs over `tp` chips at bf16 peak
//!   (attention's own context-squared term left out).

use serde::Serialize;
use tpuport_hw::Chip;
use tpuport_model::LlmConfig;

/// vLLM's default `--gpu-memory-utilization` (also used by its TPU engines).
pub const DEFAULT_UTILIZATION: f64 = 0.9;

/// One tensor-parallel choice.
#[derive(Clone, Debug, Serialize)]
pub struct ServingRow {
    /// Tensor-parallel degree (`--tensor-parallel-size`).
    pub tp: u32,
    /// Engine replicas on the slice.
    pub replicas: u32,
    /// Weight bytes per chip.
    pub weights_per_chip: u64,
    /// KV-cache bytes one token takes on each chip.
    pub kv_per_token_per_chip: u64,
    /// Tokens of cache one replica holds.
    pub cache_tokens: u64,
    /// Sequences of the context length that fit at once, per replica.
    pub sequences: u64,
    /// Decode tokens/s of one sequence alone (HBM-bandwidth bound).
    pub decode_tokens_per_s_batch1: f64,
    /// Decode tokens/s of the whole slice with every replica full.
    pub decode_tokens_per_s_full: f64,
    /// Prefill time of one sequence of the context length, milliseconds.
    pub prefill_ms: f64,
    /// Weights plus at least one sequence's cache fit.
    pub fits: bool,
}

/// The serving plan of a slice.
#[derive(Clone, Debug, Serialize)]
pub struct Serving {
    /// Context length planned for (`--max-model-len`).
    pub context: u64,
    /// Fraction of HBM given to weights and cache.
    pub utilization: f64,
    /// KV dtype bytes (the config's dtype, 2 when it names none).
    pub kv_dtype_bytes: u64,
    /// One row per valid tensor-parallel degree, smallest first.
    pub rows: Vec<ServingRow>,
    /// The row with the most slice throughput among those that fit.
    pub best: Option<u32>,
    /// When no row fits: the smallest larger slice of the same chip where one does
    /// ([`crate::shard::ShardPlan::look_wider`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest: Option<Nearest>,
}

/// A larger slice that serves the model.
#[derive(Clone, Debug, Serialize)]
pub struct Nearest {
    /// Accelerator type (`v5litepod-16`).
    pub slice: String,
    /// Its chips.
    pub chips: u32,
    /// The tensor-parallel degree with the most throughput there.
    pub tp: u32,
}

/// The plan, or `None` when the config lacks heads, KV heads, head dim or layers, or the chip
/// lacks HBM figures.
#[must_use]
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "byte and rate estimates"
)]
pub fn plan(
    config: &LlmConfig,
    params: u64,
    weight_bytes: u64,
    chip: &Chip,
    chips: u32,
    context: u64,
    utilization: f64,
) -> Option<Serving> {
    let (heads, kv, dim, layers) =
        (config.heads?, config.kv_heads?, config.head_dim?, config.layers?);
    let hbm = chip.hbm_usable.or(chip.hbm_capacity)?;
    let bw = chip.hbm_bandwidth?;
    let peak = chip.peak.bf16.unwrap_or(0.0);
    let kv_bytes = config.dtype_bytes().unwrap_or(2);
    let mut rows = Vec::new();
    for tp in (1..=chips).filter(|t| chips.is_multiple_of(*t)) {
        let t = u64::from(tp);
        if !heads.is_multiple_of(t) || !(kv.is_multiple_of(t) || t.is_multiple_of(kv)) {
            continue;
        }
        let weights = weight_bytes.div_ceil(t);
        let kv_chip = layers * 2 * (kv / t).max(1) * dim * kv_bytes;
        let budget = (hbm * utilization - weights as f64).max(0.0);
        let cache_tokens = (budget / kv_chip as f64) as u64;
        let sequences = cache_tokens / context.max(1);
        let step = |b: u64| (weights as f64 + (b * context * kv_chip) as f64) / bw;
        let replicas = chips / tp;
        let full = if sequences == 0 {
            0.0
        } else {
            sequences as f64 / step(sequences) * f64::from(replicas)
        };
        let prefill_ms = if peak > 0.0 {
            2.0 * params as f64 * context as f64 / (peak * t as f64) * 1e3
        } else {
            0.0
        };
        rows.push(ServingRow {
            tp,
            replicas,
            weights_per_chip: weights,
            kv_per_token_per_chip: kv_chip,
            cache_tokens,
            sequences,
            decode_tokens_per_s_batch1: 1.0 / step(1),
            decode_tokens_per_s_full: full,
            prefill_ms,
            fits: sequences >= 1,
        });
    }
    let best = rows
        .iter()
        .filter(|r| r.fits)
        .max_by(|a, b| a.decode_tokens_per_s_full.total_cmp(&b.decode_tokens_per_s_full))
        .map(|r| r.tp);
    Some(Serving { context, utilization, kv_dtype_bytes: kv_bytes, rows, best, nearest: None })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Llama-3.1-8B in bf16 on a v6e-8, 8k context, by hand: 16.06 GB of weights; per chip at
    /// TP 8, 2.0 GB of weights and 32 x 2 x 1 x 128 x 2 = 16 KiB of cache per token.
    #[test]
    fn llama_3_1_8b_on_a_v6e_8_by_hand() {
        let catalog = tpuport_hw::Catalog::builtin();
        let chip = catalog.chip("v6e").unwrap();
        let c = LlmConfig {
            layers: Some(32),
            heads: Some(32),
            kv_heads: Some(8),
            head_dim: Some(128),
            dtype: Some("bfloat16".into()),
            ..LlmConfig::default()
        };
        let params = 8_030_261_248u64;
        let s = plan(&c, params, params * 2, chip, 8, 8192, DEFAULT_UTILIZATION).unwrap();
        let tps: Vec<u32> = s.rows.iter().map(|r| r.tp).collect();
        assert_eq!(tps, [1, 2, 4, 8]);
        let r8 = s.rows.iter().find(|r| r.tp == 8).unwrap();
        assert_eq!(r8.weights_per_chip, (params * 2).div_ceil(8));
        assert_eq!(r8.kv_per_token_per_chip, 16_384);
        let hbm = chip.hbm_usable.or(chip.hbm_capacity).unwrap();
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let want = ((hbm * 0.9 - r8.weights_per_chip as f64) / 16_384.0) as u64;
        assert_eq!(r8.cache_tokens, want);
        assert_eq!(r8.sequences, want / 8192);
        let r1 = s.rows.iter().find(|r| r.tp == 1).unwrap();
        assert_eq!(r1.kv_per_token_per_chip, 131_072);
        assert!(r1.fits, "16 GB of weights fit a 32 GB v6e chip with room for cache");
        assert!(s.best.is_some());
    }

    #[test]
    fn tensor_parallel_degrees_follow_the_head_counts() {
        let catalog = tpuport_hw::Catalog::builtin();
        let chip = catalog.chip("v5e").unwrap();
        // Qwen2.5-7B: 28 heads, 4 KV heads: TP 1, 2, 4 divide both; 8 does not divide 28.
        let c = LlmConfig {
            layers: Some(28),
            heads: Some(28),
            kv_heads: Some(4),
            head_dim: Some(128),
            ..LlmConfig::default()
        };
        let s = plan(&c, 7_615_616_512, 15_231_233_024, chip, 8, 4096, 0.9).unwrap();
        let tps: Vec<u32> = s.rows.iter().map(|r| r.tp).collect();
        assert_eq!(tps, [1, 2, 4]);
        // 15.2 GB of weights do not fit one 16 GB v5e chip at 0.9 with a 4k sequence.
        assert!(!s.rows[0].fits);
        assert!(s.rows[2].fits);
    }
}
