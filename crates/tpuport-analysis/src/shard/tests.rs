//! Planner tests. Every expected figure below was worked out by hand from the formulas in
//! `sharding-anchors.md` §7–§8 (the arithmetic is in the comments) before the first run.

use tpuport_hw::Catalog;
use tpuport_model::DType;

use super::names::tests::keys;
use super::*;
use crate::workload::{Optimizer, Workload};

fn params(text: &str) -> Vec<ParamInfo> {
    keys(text)
        .into_iter()
        .filter(|(_, _, d)| !d.starts_with('i'))
        .map(|(name, shape, d)| ParamInfo {
            name,
            shape,
            dtype: DType::from_name(&d).or_else(|| DType::from_mlir(&d)).unwrap(),
            graph_path: None,
            lookup_only: false,
        })
        .collect()
}

fn llama() -> Vec<ParamInfo> {
    params(include_str!("keys/llama2_7b.tsv"))
}

fn run(ps: &[ParamInfo], slice: &str, opts: &ShardOptions) -> Result<ShardPlan, ShardError> {
    let cat = Catalog::builtin();
    let s = cat.slice(slice).unwrap();
    let chip = cat.chip(&s.chip).unwrap();
    plan(ps, slice, &s, chip, opts)
}

fn spec_of(p: &ShardPlan, name: &str) -> Vec<Option<&'static str>> {
    let pp = p.params.iter().find(|q| q.name == name).unwrap();
    pp.spec.iter().map(|a| a.map(Axis::as_str)).collect()
}

fn train_7b(mesh: Option<&str>) -> ShardOptions {
    ShardOptions {
        workload: Workload::Train,
        optimizer: Optimizer::AdamW,
        batch: Some(8),
        seq: Some(2048),
        mesh: mesh.map(|m| Mesh::parse(m).unwrap()),
        heads: Some(32),
        ..ShardOptions::default()
    }
}

#[test]
fn llama_7b_fsdp8_train_adamw_memory_by_hand() {
    let p = run(&llama(), "v5e-8", &train_7b(Some("fsdp=8"))).unwrap();
    assert_eq!(p.model.params, 6_738_415_616);
    assert_eq!(
        (p.model.layers, p.model.hidden, p.model.vocab),
        (Some(32), Some(4096), Some(32000))
    );
    let m = &p.chosen.memory;
    // 65 norms of 4096 stay whole: 266_240; the rest (6_738_149_376) is split 8 ways:
    // 842_268_672 + 266_240 = 842_534_912 elements per chip.
    assert_eq!(m.weights, 4 * 842_534_912);
    assert_eq!(m.gradients, 4 * 842_534_912);
    assert_eq!(m.optimizer, 8 * 842_534_912);
    // 16 bytes per parameter (MaxText: f32 weights, grads, mu, nu), sharded: 13.48 GB.
    assert_eq!(m.weights + m.gradients + m.optimizer, 13_480_558_592);
    // Every shard is a multiple of the (8, 128) f32 tile: no padding.
    assert_eq!(m.padding, 0);
    // One layer, b = 1, s = 2048, h = 4096, a = 32, t = 1, bf16:
    // 2048·4096·(10 + 24 + 5·32·2048/4096) = 8_388_608·114 = 956_301_312.
    // Logits 1·2048·32000·2 = 131_072_000, four times when training.
    assert_eq!(m.activations, 32 * 956_301_312 + 4 * 131_072_000);
    // Full remat: 32 layer inputs 2048·4096·2 = 16_777_216 each, one layer's set, the logits.
    assert_eq!(m.activations_remat, 32 * 16_777_216 + 956_301_312 + 4 * 131_072_000);
    assert!(m.remat, "30.9 GB of activations cannot fit without remat");
    // FSDP working set: the embedding and the head (outside the layers, 2 · 131_072_000
    // elements) gathered in bf16 plus their whole f32 gradients, 6 bytes each, is more than
    // one layer's 202_375_168 · 6.
    assert_eq!(m.fsdp_gathered, 262_144_000 * 6);
    assert_eq!(m.total, 13_480_558_592 + 2_017_460_224 + 1_572_864_000);
    // 16 GiB · 0.97 = 16.66 GB: the 17.07 GB above does not fit.
    assert_eq!(m.budget, 16_664_473_108);
    assert!(!p.chosen.fits);
    // FSDP traffic: every split weight gathered twice in bf16, gradients reduce-scattered in f32.
    let c = &p.chosen.comms;
    assert_eq!(c.all_gather_bytes, 2 * 2 * 6_738_149_376);
    assert_eq!(c.reduce_scatter_bytes, 4 * 6_738_149_376);
    assert_eq!(c.all_reduce_bytes, 0);
    // fsdp=8 spans both axes of the 2x4 torus (W = 2·45e9·2), no wraparound (×2·7/8).
    let expect = 2.0 * 26_952_597_504.0 / 180e9 * 1.75;
    assert!((c.overlappable_s - expect).abs() < 1e-6, "{} vs {expect}", c.overlappable_s);
    // Compute: 8·P_matmul·tokens (remat) + 4 × attention 4·b·s²·h·L; P_matmul excludes the
    // embedding (131_072_000) and the norms: 6_607_077_376.
    let flops = 8.0 * 6_607_077_376.0 * 16384.0 + 4.0 * 4.0 * 8.0 * 2048f64.powi(2) * 4096.0 * 32.0;
    assert!((p.chosen.compute.time_s - flops / 8.0 / 197e12).abs() < 1e-9);
}

#[test]
fn llama_7b_v5e8_train_auto_verdicts() {
    // 8 x 2048 tokens: 13.48 GB of f32 weights, grads and AdamW state per chip leave too little
    // room for the activations and FSDP's working set on any mesh; the least memory is shown.
    let p = run(&llama(), "v5e-8", &train_7b(None)).unwrap();
    assert!(!p.chosen.fits);
    assert!(p.notes.iter().any(|n| n.starts_with("no mesh fits")), "{:?}", p.notes);
    assert_eq!(
        p.chosen.memory.weights + p.chosen.memory.gradients + p.chosen.memory.optimizer,
        13_480_558_592
    );
    // The nearest choice that fits: the largest smaller batch. It does fit, and the one above
    // it does not.
    let f = p.fits_at.as_ref().expect("a smaller batch fits");
    assert!(f.batch < 8 && f.bytes <= p.chosen.memory.budget, "{f:?}");
    let at =
        |b| run(&llama(), "v5e-8", &ShardOptions { batch: Some(b), ..train_7b(None) }).unwrap();
    assert!(at(f.batch).chosen.fits);
    assert_eq!(at(f.batch).chosen.memory.total, f.bytes);
    for b in f.batch + 1..8 {
        assert!(!at(b).chosen.fits, "batch {b} fits too");
    }
    assert!(p.notes.iter().any(|n| n.starts_with(&format!("global batch {} fits", f.batch))));
    // The miss is smaller than the activations counted, which libtpu keeps fewer of.
    assert!(p.notes.iter().any(|n| n.contains("may fit on the TPU")), "{:?}", p.notes);
    // On half the chips not even one sequence fits.
    let mut p = run(&llama(), "v5e-4", &train_7b(None)).unwrap();
    assert!(p.fits_at.is_none());
    assert!(p.notes.iter().any(|n| n.starts_with("no global batch fits")), "{:?}", p.notes);
    // The smallest larger slice that fits the same batch: not v5e-8 (above), but 16 chips.
    let cat = Catalog::builtin();
    let chip = cat.chip("v5e").unwrap();
    p.look_wider(&llama(), &cat.slices(chip), chip, &train_7b(None));
    let f = p.fits_on.as_ref().expect("a larger slice fits");
    assert_eq!((f.slice.as_str(), f.chips, f.plan.batch), ("v5litepod-16", 16, 8));
    let there = run(&llama(), "v5e-16", &train_7b(None)).unwrap();
    assert!(there.chosen.fits);
    assert_eq!(there.chosen.memory.total, f.plan.bytes);
    assert!(p.notes.iter().any(|n| n.starts_with("v5litepod-16 (16 chips) fits global batch 8")));
    // Half the sequence fits, and the fastest fitting mesh wins over its runners-up.
    let p = run(&llama(), "v5e-8", &ShardOptions { seq: Some(1024), ..train_7b(None) }).unwrap();
    assert!(p.chosen.fits, "{:?}", p.chosen);
    assert_ne!(p.chosen.strategy, "dp");
    assert_eq!(p.runners_up.len(), 3);
    for r in &p.runners_up {
        assert!(!r.fits || r.step_time_s >= p.chosen.step_time_s);
    }
}

#[test]
fn llama_7b_v5e4_infer_fits() {
    let opts = ShardOptions {
        batch: Some(4),
        seq: Some(2048),
        heads: Some(32),
        ..ShardOptions::default()
    };
    let p = run(&llama(), "v5e-4", &opts).unwrap();
    assert_eq!(p.param_dtype, "bf16");
    assert!(p.chosen.fits);
    // Replicated bf16 weights (13.48 GB) plus one layer's activations fit 16 GiB, and data
    // parallelism moves nothing over ICI: it wins.
    assert_eq!(p.chosen.strategy, "dp");
    assert_eq!(p.chosen.memory.weights, 6_738_415_616 * 2);
    assert_eq!(p.chosen.memory.gradients + p.chosen.memory.optimizer, 0);
    // FSDP over 4 chips: (6_738_149_376 / 4 + 266_240) · 2 bytes.
    let p = run(
        &llama(),
        "v5e-4",
        &ShardOptions { mesh: Some(Mesh::parse("fsdp=4").unwrap()), ..opts },
    )
    .unwrap();
    assert_eq!(p.chosen.memory.weights, (6_738_149_376 / 4 + 266_240) * 2);
    // Inference live set, b = 4 / 4 = 1, s = 2048, h = 4096, F = 11008, a = 32, t = 1, bf16:
    // 2048·(4096 + 3·4096 + 2·11008)·2 = 157_286_400, scores 32·2048²·2 = 268_435_456,
    // logits 2048·32000·2 = 131_072_000 once.
    assert_eq!(p.model.mlp, Some(11008));
    assert_eq!(p.chosen.memory.activations, 157_286_400 + 268_435_456 + 131_072_000);
    assert!(!p.chosen.memory.remat);
}

#[test]
fn megatron_column_row_vocab_specs() {
    let p = run(&llama(), "v5e-8", &train_7b(Some("fsdp=4,tensor=2"))).unwrap();
    assert_eq!(
        spec_of(&p, "model.layers.0.self_attn.q_proj.weight"),
        [Some("tensor"), Some("fsdp")]
    );
    assert_eq!(spec_of(&p, "model.layers.0.mlp.gate_proj.weight"), [Some("tensor"), Some("fsdp")]);
    assert_eq!(
        spec_of(&p, "model.layers.0.self_attn.o_proj.weight"),
        [Some("fsdp"), Some("tensor")]
    );
    assert_eq!(spec_of(&p, "model.layers.0.mlp.down_proj.weight"), [Some("fsdp"), Some("tensor")]);
    // Untied lookup table: tensor on the hidden dimension (a gather passes it through).
    assert_eq!(spec_of(&p, "model.embed_tokens.weight"), [Some("fsdp"), Some("tensor")]);
    assert_eq!(spec_of(&p, "lm_head.weight"), [Some("tensor"), Some("fsdp")]);
    assert_eq!(spec_of(&p, "model.norm.weight"), [None]);
    // Two all-reduces of [b, s, h] per layer forward and two backward, plus the embedding's
    // two: b = 8 / 4 = 2 (batch split over fsdp), bf16: 2·2048·4096·2 = 33_554_432 bytes.
    assert_eq!(p.chosen.comms.all_reduce_bytes, (32 * 4 + 2) * 33_554_432);

    // GPT-2 Conv1D is [in, out]; its vocabulary (50257) cannot be split by 2.
    let g = params(include_str!("keys/hf_gpt2.tsv"));
    let p = run(&g, "v5e-8", &train_7b(Some("fsdp=4,tensor=2"))).unwrap();
    assert_eq!(spec_of(&p, "transformer.h.0.attn.c_attn.weight"), [Some("fsdp"), Some("tensor")]);
    assert_eq!(spec_of(&p, "transformer.h.0.attn.c_proj.weight"), [Some("tensor"), Some("fsdp")]);
    assert_eq!(spec_of(&p, "transformer.h.0.mlp.c_fc.weight"), [Some("fsdp"), Some("tensor")]);
    assert_eq!(spec_of(&p, "transformer.wte.weight"), [None, Some("fsdp")]);
    assert!(p.notes.iter().any(|n| n.contains("50257")), "{:?}", p.notes);
    assert!(p.model.tied_head);

    // Flax NNX [D, H, Dh] / [H, Dh, D] and keras-hub Gemma [H, D, Dh] attention kernels.
    let n = params(include_str!("keys/nnx_transformer.tsv"));
    let p = run(&n, "v5e-8", &ShardOptions { heads: None, ..train_7b(Some("fsdp=2,tensor=4")) })
        .unwrap();
    assert_eq!(
        spec_of(&p, "state['blocks'][0]['attn']['query']['kernel'].value"),
        [Some("fsdp"), Some("tensor"), None]
    );
    assert_eq!(
        spec_of(&p, "state['blocks'][0]['attn']['out']['kernel'].value"),
        [Some("tensor"), None, Some("fsdp")]
    );
    assert_eq!(p.model.heads, Some(4));
    let k = params(include_str!("keys/kerashub_gemma.tsv"));
    let p = run(&k, "v5e-8", &train_7b(Some("fsdp=2,tensor=4"))).unwrap();
    assert_eq!(
        spec_of(&p, "params['trainable']['decoder_block_0/attention/query/kernel']"),
        [Some("tensor"), Some("fsdp"), None]
    );
    // One KV head (MQA): the key kernel [1, 64, 16] stays whole on the tensor axis.
    assert_eq!(
        spec_of(&p, "params['trainable']['decoder_block_0/attention/key/kernel']"),
        [None, Some("fsdp"), None]
    );
    assert!(p.notes.iter().any(|n| n.contains("MQA/GQA")), "{:?}", p.notes);
    // Flax's Gemma example: `[N, D, Dh]` queries and `[N, Dh, D]` outputs split on N; the
    // stacked `kv_einsum` `[2, K, D, Dh]` on K, not on the k/v index (K = 1 here: whole).
    let g = params(include_str!("keys/flax_gemma_example.tsv"));
    let p = run(&g, "v5e-8", &train_7b(Some("fsdp=2,tensor=4"))).unwrap();
    let layer = |m: &str| format!("model.layers[0].attn.{m}.kernel.value");
    assert_eq!(spec_of(&p, &layer("q_einsum")), [Some("tensor"), Some("fsdp"), None]);
    assert_eq!(spec_of(&p, &layer("kv_einsum")), [None, None, Some("fsdp"), None]);
    assert_eq!(spec_of(&p, &layer("attn_vec_einsum")), [Some("tensor"), None, Some("fsdp")]);
    assert_eq!(spec_of(&p, "model.embedder.embedding.value"), [Some("tensor"), Some("fsdp")]);
    assert!(p.notes.iter().any(|n| n.contains("MQA/GQA")), "{:?}", p.notes);
}

#[test]
fn errors_name_the_nearest_valid_choice() {
    let e = run(&llama(), "v5e-8", &train_7b(Some("data=2,fsdp=2,tensor=4"))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mesh data=2,fsdp=2,tensor=4 needs 16 chips but slice v5e-8 has 8: the axis sizes must multiply to 8"
    );
    // The NNX transformer has 4 heads: tensor=8 cannot split them.
    let n = params(include_str!("keys/nnx_transformer.tsv"));
    let e = run(&n, "v5e-8", &train_7b(Some("tensor=8"))).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("tensor=8 does not divide dimension 0 (4) of `state['blocks'][0]['attn']['out']['kernel'].value` (attn-out)"), "{msg}");
    assert!(
        msg.ends_with("tensor sizes that divide every tensor-parallel dimension: 1, 2, 4"),
        "{msg}"
    );
    let e = run(&llama(), "v5e-8", &ShardOptions { batch: Some(4), ..train_7b(Some("data=8")) })
        .unwrap_err();
    assert!(e.to_string().starts_with("--batch 4 is not divisible by data=8"));
    for bad in ["fsdp", "fsdp=0", "pipeline=2", "fsdp=2,fsdp=4", ""] {
        assert!(Mesh::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn emitted_code_carries_every_spec() {
    let p = run(&llama(), "v5e-8", &train_7b(Some("fsdp=4,tensor=2"))).unwrap();
    let j = emit::jax(&p);
    assert!(j.contains("MESH_SHAPE = (1, 4, 2)"));
    assert!(j.contains("\"model.layers.31.mlp.down_proj.weight\": P(\"fsdp\", \"tensor\"),"));
    assert!(j.contains("axis_types=(AxisType.Auto,)"));
    assert_eq!(j.matches(": P(").count(), p.params.len());
    let t = emit::torch_xla(&p);
    assert!(t.contains("\"model.norm.weight\": (None,),"));
    assert!(t.contains("xs.mark_sharding(param, mesh, spec)"));
    let js: serde_json::Value = serde_json::from_str(&emit::json(&p).unwrap()).unwrap();
    assert_eq!(js["mesh"]["shape"], serde_json::json!([1, 4, 2]));
    assert_eq!(js["params"].as_array().unwrap().len(), 291);
}

#[test]
fn logits_larger_than_vmem_at_inference_say_the_count_may_miss_a_copy() {
    // Llama-2-7B's head, vocabulary 32000, bf16 activations, data parallel on v5e-8 (128 MiB
    // VMEM): 4 sequences x 512 per chip = 4 * 512 * 32000 * 2 B = 131,072,000 B = 125 MiB of
    // logits (under VMEM); 8 x 512 per chip = 250 MiB (over).
    let at = |batch| {
        let o = ShardOptions {
            workload: Workload::Infer,
            batch: Some(batch),
            seq: Some(512),
            mesh: Some(Mesh::parse("data=8").unwrap()),
            heads: Some(32),
            ..ShardOptions::default()
        };
        run(&llama(), "v5e-8", &o).unwrap()
    };
    let small = at(32);
    assert_eq!(small.chosen.memory.logits, 131_072_000);
    assert!(!small.notes.iter().any(|n| n.contains("second copy")), "{:?}", small.notes);
    let large = at(64);
    assert_eq!(large.chosen.memory.logits, 262_144_000);
    assert!(large.notes.iter().any(|n| n.contains("second copy")), "{:?}", large.notes);
}
