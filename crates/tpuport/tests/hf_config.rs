//! A Hugging Face checkpoint folder (`config.json` beside its safetensors) read by `inspect`
//! and `shard` (issue 37, item 1).
//!
//! Each folder is written here: the model's published `config.json` fields (typed from the
//! checkpoints' own config files) and a safetensors file whose header has every tensor of the
//! architecture with its real name and shape. The data section is a sparse hole of the right
//! length, so the folder takes no disk space and nothing reads the values.
//!
//! Expectations, written before the first run:
//! - the parameter count equals the published figure (the tensor template and the config are
//!   checked together against a number from elsewhere);
//! - heads and KV heads equal the config's;
//! - KV-cache bytes per token equal layers x 2 x KV heads x head dim x 2 (bf16/fp16), worked
//!   out by hand in each row's comment;
//! - shard takes Llama-2-7B's 32 heads from the config (it guessed 64 from hidden / 64);
//! - a config that disagrees with the tensors gets a warning, and a config.json that is not
//!   JSON is a one-line error naming it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use common::tpuport;
use serde_json::{Value, json};

/// A decoder in the Llama layout (`model.layers.N.self_attn.q_proj.weight`, ...).
struct Arch {
    hidden: u64,
    inter: u64,
    layers: u64,
    heads: u64,
    kv: u64,
    head_dim: u64,
    vocab: u64,
    tied: bool,
    qkv_bias: bool,
    experts: u64,
    moe_inter: u64,
    /// Mixtral's `block_sparse_moe.experts.E.w1` names instead of Qwen's `mlp.experts.E.gate_proj`.
    mixtral_names: bool,
    qk_norm: bool,
    gemma_norms: bool,
}

const BASE: Arch = Arch {
    hidden: 0,
    inter: 0,
    layers: 0,
    heads: 0,
    kv: 0,
    head_dim: 0,
    vocab: 0,
    tied: false,
    qkv_bias: false,
    experts: 0,
    moe_inter: 0,
    mixtral_names: false,
    qk_norm: false,
    gemma_norms: false,
};

fn tensors(a: &Arch) -> Vec<(String, Vec<u64>)> {
    let (h, d) = (a.hidden, a.head_dim);
    let mut t = vec![("model.embed_tokens.weight".to_owned(), vec![a.vocab, h])];
    for l in 0..a.layers {
        let p = format!("model.layers.{l}");
        let mut add = |n: &str, s: Vec<u64>| t.push((format!("{p}.{n}"), s));
        add("self_attn.q_proj.weight", vec![a.heads * d, h]);
        add("self_attn.k_proj.weight", vec![a.kv * d, h]);
        add("self_attn.v_proj.weight", vec![a.kv * d, h]);
        add("self_attn.o_proj.weight", vec![h, a.heads * d]);
        if a.qkv_bias {
            add("self_attn.q_proj.bias", vec![a.heads * d]);
            add("self_attn.k_proj.bias", vec![a.kv * d]);
            add("self_attn.v_proj.bias", vec![a.kv * d]);
        }
        if a.qk_norm {
            add("self_attn.q_norm.weight", vec![d]);
            add("self_attn.k_norm.weight", vec![d]);
        }
        add("input_layernorm.weight", vec![h]);
        add("post_attention_layernorm.weight", vec![h]);
        if a.gemma_norms {
            add("pre_feedforward_layernorm.weight", vec![h]);
            add("post_feedforward_layernorm.weight", vec![h]);
        }
        if a.experts == 0 {
            add("mlp.gate_proj.weight", vec![a.inter, h]);
            add("mlp.up_proj.weight", vec![a.inter, h]);
            add("mlp.down_proj.weight", vec![h, a.inter]);
        } else if a.mixtral_names {
            add("block_sparse_moe.gate.weight", vec![a.experts, h]);
            for e in 0..a.experts {
                add(&format!("block_sparse_moe.experts.{e}.w1.weight"), vec![a.moe_inter, h]);
                add(&format!("block_sparse_moe.experts.{e}.w2.weight"), vec![h, a.moe_inter]);
                add(&format!("block_sparse_moe.experts.{e}.w3.weight"), vec![a.moe_inter, h]);
            }
        } else {
            add("mlp.gate.weight", vec![a.experts, h]);
            for e in 0..a.experts {
                add(&format!("mlp.experts.{e}.gate_proj.weight"), vec![a.moe_inter, h]);
                add(&format!("mlp.experts.{e}.up_proj.weight"), vec![a.moe_inter, h]);
                add(&format!("mlp.experts.{e}.down_proj.weight"), vec![h, a.moe_inter]);
            }
        }
    }
    t.push(("model.norm.weight".to_owned(), vec![h]));
    if !a.tied {
        t.push(("lm_head.weight".to_owned(), vec![a.vocab, h]));
    }
    t
}

/// Writes a bf16 safetensors file with `tensors` in its header and a sparse data section.
fn write_sparse(path: &Path, tensors: &[(String, Vec<u64>)]) {
    let mut header = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut at = 0u64;
    for (name, shape) in tensors {
        let bytes = shape.iter().product::<u64>() * 2;
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        let _ = write!(
            header,
            ",\"{name}\":{{\"dtype\":\"BF16\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            dims.join(","),
            at + bytes
        );
        at += bytes;
    }
    header.push('}');
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    f.set_len(8 + header.len() as u64 + at).unwrap();
}

fn folder(name: &str, config: &Value, arch: &Arch) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tpuport-hf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), serde_json::to_string_pretty(config).unwrap()).unwrap();
    write_sparse(&dir.join("model.safetensors"), &tensors(arch));
    dir
}

fn inspect(dir: &Path) -> Value {
    let o = tpuport(&["--format", "json", "inspect", dir.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

struct Case {
    name: &'static str,
    config: Value,
    arch: Arch,
    /// The published parameter count.
    params: u64,
    /// KV-cache bytes per token, by hand.
    kv_bytes: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            // meta-llama/Llama-2-7b-hf
            name: "llama-2-7b",
            config: json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000,
                "max_position_embeddings": 4096, "tie_word_embeddings": false,
                "torch_dtype": "float16", "rope_scaling": null}),
            arch: Arch {
                hidden: 4096,
                inter: 11008,
                layers: 32,
                heads: 32,
                kv: 32,
                head_dim: 128,
                vocab: 32000,
                ..BASE
            },
            params: 6_738_415_616,
            kv_bytes: 32 * 2 * 32 * 128 * 2, // 524,288: 512 KiB per token
        },
        Case {
            // meta-llama/Llama-3.1-8B
            name: "llama-3.1-8b",
            config: json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                "max_position_embeddings": 131072, "tie_word_embeddings": false,
                "torch_dtype": "bfloat16", "rope_scaling": {"factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192, "rope_type": "llama3"}}),
            arch: Arch {
                hidden: 4096,
                inter: 14336,
                layers: 32,
                heads: 32,
                kv: 8,
                head_dim: 128,
                vocab: 128256,
                ..BASE
            },
            params: 8_030_261_248,
            kv_bytes: 32 * 2 * 8 * 128 * 2, // 131,072: 128 KiB
        },
        Case {
            // meta-llama/Llama-3.1-70B
            name: "llama-3.1-70b",
            config: json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
                "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256,
                "max_position_embeddings": 131072, "tie_word_embeddings": false,
                "torch_dtype": "bfloat16"}),
            arch: Arch {
                hidden: 8192,
                inter: 28672,
                layers: 80,
                heads: 64,
                kv: 8,
                head_dim: 128,
                vocab: 128256,
                ..BASE
            },
            params: 70_553_706_496,
            kv_bytes: 80 * 2 * 8 * 128 * 2, // 327,680: 320 KiB
        },
        Case {
            // mistralai/Mistral-7B-v0.1
            name: "mistral-7b",
            config: json!({"architectures": ["MistralForCausalLM"], "model_type": "mistral",
                "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
                "max_position_embeddings": 32768, "sliding_window": 4096,
                "tie_word_embeddings": false, "torch_dtype": "bfloat16"}),
            arch: Arch {
                hidden: 4096,
                inter: 14336,
                layers: 32,
                heads: 32,
                kv: 8,
                head_dim: 128,
                vocab: 32000,
                ..BASE
            },
            params: 7_241_732_096,
            kv_bytes: 32 * 2 * 8 * 128 * 2, // 131,072
        },
        Case {
            // Qwen/Qwen2.5-7B (q/k/v projections carry biases)
            name: "qwen2.5-7b",
            config: json!({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
                "max_position_embeddings": 131072, "tie_word_embeddings": false,
                "torch_dtype": "bfloat16", "sliding_window": 131072}),
            arch: Arch {
                hidden: 3584,
                inter: 18944,
                layers: 28,
                heads: 28,
                kv: 4,
                head_dim: 128,
                vocab: 152064,
                qkv_bias: true,
                ..BASE
            },
            params: 7_615_616_512,
            kv_bytes: 28 * 2 * 4 * 128 * 2, // 57,344: 56 KiB
        },
        Case {
            // google/gemma-2-9b (head_dim 256 is not hidden / heads; tied embedding). The config
            // is the `Gemma2Config` a public notebook printed for that checkpoint under
            // transformers 4.45.2, copied whole (not typed from memory).
            name: "gemma-2-9b",
            config: json!({"_name_or_path": "google/gemma-2-9b",
                "architectures": ["Gemma2ForCausalLM"], "attention_bias": false,
                "attention_dropout": 0.0, "attn_logit_softcapping": 50.0, "bos_token_id": 2,
                "cache_implementation": "hybrid", "eos_token_id": 1,
                "final_logit_softcapping": 30.0, "head_dim": 256,
                "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
                "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 14336,
                "max_position_embeddings": 8192, "model_type": "gemma2",
                "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
                "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
                "rope_theta": 10000.0, "sliding_window": 4096, "sliding_window_size": 4096,
                "torch_dtype": "bfloat16", "transformers_version": "4.45.2", "use_cache": true,
                "vocab_size": 256000}),
            arch: Arch {
                hidden: 3584,
                inter: 14336,
                layers: 42,
                heads: 16,
                kv: 8,
                head_dim: 256,
                vocab: 256000,
                tied: true,
                gemma_norms: true,
                ..BASE
            },
            params: 9_241_705_984,
            kv_bytes: 42 * 2 * 8 * 256 * 2, // 344,064: 336 KiB
        },
        Case {
            // mistralai/Mixtral-8x7B-v0.1
            name: "mixtral-8x7b",
            config: json!({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
                "num_local_experts": 8, "num_experts_per_tok": 2,
                "max_position_embeddings": 32768, "tie_word_embeddings": false,
                "torch_dtype": "bfloat16"}),
            arch: Arch {
                hidden: 4096,
                layers: 32,
                heads: 32,
                kv: 8,
                head_dim: 128,
                vocab: 32000,
                experts: 8,
                moe_inter: 14336,
                mixtral_names: true,
                ..BASE
            },
            params: 46_702_792_704,
            kv_bytes: 32 * 2 * 8 * 128 * 2, // 131,072
        },
        Case {
            // Qwen/Qwen3-30B-A3B (per-expert width moe_intermediate_size; q/k norms)
            name: "qwen3-30b-a3b",
            config: json!({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
                "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                "head_dim": 128, "vocab_size": 151936, "num_experts": 128,
                "num_experts_per_tok": 8, "max_position_embeddings": 40960,
                "tie_word_embeddings": false, "torch_dtype": "bfloat16"}),
            arch: Arch {
                hidden: 2048,
                layers: 48,
                heads: 32,
                kv: 4,
                head_dim: 128,
                vocab: 151936,
                experts: 128,
                moe_inter: 768,
                qk_norm: true,
                ..BASE
            },
            params: 30_532_122_624,
            kv_bytes: 48 * 2 * 4 * 128 * 2, // 98,304: 96 KiB
        },
    ]
}

#[test]
fn published_configs_give_their_heads_kv_heads_parameters_and_kv_bytes() {
    for c in cases() {
        let dir = folder(c.name, &c.config, &c.arch);
        let inv = inspect(&dir);
        let llm = &inv["llm"];
        let what = format!("{}: {llm}", c.name);
        assert_eq!(llm["heads"], c.arch.heads, "{what}");
        assert_eq!(llm["kv_heads"], c.arch.kv, "{what}");
        assert_eq!(llm["head_dim"], c.arch.head_dim, "{what}");
        assert_eq!(llm["layers"], c.arch.layers, "{what}");
        assert_eq!(inv["params"]["elements"], c.params, "{}: parameters", c.name);
        assert_eq!(inv["kv_bytes_per_token"], c.kv_bytes, "{what}");
        if c.arch.experts > 0 {
            assert_eq!(llm["experts"], c.arch.experts, "{what}");
            assert_eq!(llm["intermediate"], c.arch.moe_inter, "{what}");
        }
        // Nothing disagrees: the tensors were made from the same published figures.
        let notes = inv["notes"].as_array().unwrap();
        assert!(
            !notes.iter().any(|n| n["code"] == "config-tensor-mismatch"),
            "{}: {notes:?}",
            c.name
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_text_report_names_attention_kind_and_kv_cache() {
    let c = cases().into_iter().find(|c| c.name == "llama-3.1-8b").unwrap();
    let dir = folder("text", &c.config, &c.arch);
    let o = tpuport(&["inspect", dir.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for want in [
        "32 heads, 8 KV heads of 128: GQA (4 query heads per KV head)",
        "LlamaForCausalLM, llama",
        "rope scaling llama3 x8",
        "128.0 KiB per token (bfloat16",
    ] {
        assert!(o.stdout.contains(want), "missing {want:?} in\n{}", o.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shard_takes_the_heads_from_the_config() {
    let c = cases().into_iter().find(|c| c.name == "llama-2-7b").unwrap();
    let dir = folder("shard", &c.config, &c.arch);
    let o = tpuport(&["--format", "json", "shard", dir.to_str().unwrap(), "--slice", "v5e-8"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let p: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(p["model"]["heads"], 32, "{}", p["model"]);
    assert_eq!(p["model"]["heads_from"], "config.json", "{}", p["model"]);
    // Without the config the heads are guessed as hidden / 64 and the plan says so.
    std::fs::remove_file(dir.join("config.json")).unwrap();
    let o = tpuport(&["--format", "json", "shard", dir.to_str().unwrap(), "--slice", "v5e-8"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let p: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(p["model"]["heads"], 64);
    assert!(p["model"]["heads_from"].as_str().unwrap().starts_with("assumed"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_config_that_disagrees_with_the_tensors_is_reported() {
    let c = cases().into_iter().find(|c| c.name == "mistral-7b").unwrap();
    let mut config = c.config.clone();
    config["num_key_value_heads"] = json!(32); // the tensors have 8 KV heads
    config["num_hidden_layers"] = json!(30);
    let dir = folder("mismatch", &config, &c.arch);
    let inv = inspect(&dir);
    let notes: Vec<String> = inv["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "config-tensor-mismatch")
        .map(|n| n["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(notes.iter().any(|n| n.contains("30 layers in the config, 32 in the tensor names")));
    assert!(
        notes.iter().any(|n| n.contains("32 KV heads x head_dim 128 = 4096, but k_proj has 1024"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_config_is_one_line_naming_it() {
    let c = cases().into_iter().find(|c| c.name == "llama-2-7b").unwrap();
    let dir = folder("broken", &c.config, &c.arch);
    std::fs::write(dir.join("config.json"), "{\"model_type\": \"llama\", ").unwrap();
    let o = tpuport(&["inspect", dir.to_str().unwrap()]);
    assert_ne!(o.code, 0);
    let err = o.stderr.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("config.json") && err.contains("not JSON"), "{err}");
    // A count of the wrong type is a warning; the weights still read.
    let mut config = c.config.clone();
    config["num_attention_heads"] = json!("32");
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let inv = inspect(&dir);
    assert!(inv["llm"]["heads"].is_null());
    assert!(
        inv["notes"].as_array().unwrap().iter().any(|n| n["code"] == "config-field"
            && n["message"].as_str().unwrap().contains("`num_attention_heads` is \"32\"")),
        "{}",
        inv["notes"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `shard --seq` on a published folder; exit 1 is a plan that does not fit.
fn serving(case: &str, slice: &str, seq: &str, code: i32) -> (Value, String) {
    let c = cases().into_iter().find(|c| c.name == case).unwrap();
    let dir = folder(&format!("serve-{case}-{slice}"), &c.config, &c.arch);
    let d = dir.to_str().unwrap();
    let o = tpuport(&["--format", "json", "shard", d, "--slice", slice, "--seq", seq]);
    assert_eq!(o.code, code, "{}", o.stderr);
    let text = tpuport(&["shard", d, "--slice", slice, "--seq", seq]);
    let _ = std::fs::remove_dir_all(&dir);
    (serde_json::from_str::<Value>(&o.stdout).unwrap()["serving"].clone(), text.stdout)
}

/// Published vLLM TPU set-ups are feasible; a 70B model on one v5e chip is not.
#[test]
fn serving_plans_for_published_set_ups() {
    // Llama-3.1-8B on a v6e-8 at 8k context: every TP degree of 1..8 fits (16 GB of bf16
    // weights on a 32 GB chip), and TP 8 holds 16 KiB of cache per token per chip.
    let (s, text) = serving("llama-3.1-8b", "v6e-8", "8192", 0);
    let rows = s["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{s}");
    assert!(rows.iter().all(|r| r["fits"] == true), "{s}");
    assert_eq!(rows[3]["tp"], 8);
    assert_eq!(rows[3]["kv_per_token_per_chip"], 16_384);
    assert!(text.contains("Serving (vLLM-style: context 8192"), "{text}");
    // Qwen3-30B-A3B at TP 8 on one 8-chip v6e host: 4 KV heads, so each chip keeps one.
    let (s, _) = serving("qwen3-30b-a3b", "v6e-8", "4096", 0);
    let r8 = s["rows"].as_array().unwrap().iter().find(|r| r["tp"] == 8).unwrap().clone();
    assert_eq!(r8["fits"], true, "{s}");
    assert_eq!(r8["kv_per_token_per_chip"], 48 * 2 * 128 * 2);
    // Llama-3.1-70B: 141 GB of weights do not fit one 16 GB v5e chip.
    let (s, text) = serving("llama-3.1-70b", "v5e-1", "4096", 1);
    assert!(s["best"].is_null(), "{s}");
    assert!(text.contains("no tensor-parallel degree fits"), "{text}");
    // 141 GB over TP 16 is 8.8 GB a chip, with room for 40 KiB-a-token cache: v5e-16 is the
    // smallest v5e slice that serves it (TP 8 would need 17.6 GB of a 16 GB chip).
    assert_eq!(s["nearest"]["chips"], 16, "{s}");
    assert_eq!(s["nearest"]["tp"], 16, "{s}");
    assert!(text.contains("(16 chips) does, at TP 16"), "{text}");
}
