//! Inference, serving, LoRA/QLoRA and the inverse solvers: hand-derived bytes, the
//! published vLLM measurements, and solver answers checked against brute force.

mod common;
use common::*;

use calc_core::solve::{Target, solve};
use calc_core::{Config, Estimate, estimate};
use serde_json::{Value, json};

fn infer(model: &str, inference: Value) -> Estimate {
    est(
        json!({"mode": "inference", "model": {"preset": model}, "inference": inference, "hardware": {"gpu": "h200-141gb"}}),
    )
}

const GIB: f64 = (1u64 << 30) as f64;

// ------------------------------------------------------------------------- KV cache

#[test]
fn kv_cache_llama_3_1_8b_gqa() {
    // GQA 8 KV heads of 128: 2 x 8 x 128 x 2 B = 4096 B per token per layer, x 32 layers
    // = 131 072 B per token; 8192 tokens -> 1 073 741 824 B (8x less than 32-head MHA)
    let e = infer("llama-3.1-8b", json!({"context_len": 8192}));
    assert_eq!(c(&e, "decode", "kv_cache"), 8192 * 131_072);
    // the prefill has written the prompt only (the whole context here)
    assert_eq!(c(&e, "prefill", "kv_cache"), 8192 * 131_072);
    // fp8 and int8 caches: 1 B per element (+ fp16 scale and zero per token and head for int8)
    let e = infer(
        "llama-3.1-8b",
        json!({"context_len": 8192, "kv_cache_dtype": "fp8"}),
    );
    assert_eq!(c(&e, "decode", "kv_cache"), 8192 * 65_536);
    let e = infer(
        "llama-3.1-8b",
        json!({"context_len": 8192, "kv_cache_dtype": "int8"}),
    );
    assert_eq!(
        c(&e, "decode", "kv_cache"),
        8192 * 32 * (2 * 8 * 128 + 2 * 8 * 4)
    );
}

#[test]
fn kv_cache_mistral_sliding_window() {
    // Mistral-7B-v0.1: sliding_window 4096 on every layer: at 8192 tokens each of the 32
    // layers keeps 4096 tokens x 2 x 8 x 128 x 2 B
    let e = infer("mistral-7b-v0.1", json!({"context_len": 8192}));
    assert_eq!(c(&e, "decode", "kv_cache"), 32 * 4096 * 4096);
    // below the window nothing is capped
    let e = infer("mistral-7b-v0.1", json!({"context_len": 2048}));
    assert_eq!(c(&e, "decode", "kv_cache"), 32 * 2048 * 4096);
}

#[test]
fn kv_cache_deepseek_mla() {
    // DeepSeek-V2-Lite, 27 layers. vLLM caches the latent: (kv_lora_rank 512 +
    // qk_rope_head_dim 64) x 2 B = 1152 B per token per layer
    let e = infer(
        "deepseek-v2-lite",
        json!({"context_len": 4096, "engine": "vllm"}),
    );
    assert_eq!(e.serving.as_ref().unwrap().kv_bytes_per_token, 27 * 1152);
    // transformers 5 caches the same latent (as two single-head tensors, 512 and 64 wide)
    // and expands it with kv_b_proj at every step
    let e = infer("deepseek-v2-lite", json!({"context_len": 4096}));
    assert_eq!(c(&e, "decode", "kv_cache"), 4096 * 27 * 1152);
}

#[test]
fn kv_cache_gemma2_interleaved() {
    // Gemma-2-9B: 42 layers, 8 KV heads of 256 (8192 B per token per layer); even layers
    // slide over 4096 tokens. At 8192: 21 x 8192 + 21 x 4096 token-layers
    let e = infer("gemma-2-9b-it", json!({"context_len": 8192}));
    assert_eq!(c(&e, "decode", "kv_cache"), 8192 * (21 * 8192 + 21 * 4096));
}

#[test]
fn kv_cache_tensor_parallel_splits_heads() {
    // TP 4 over 8 KV heads: 2 heads per GPU; TP 16 over 8: vLLM replicates, 1 head per GPU
    let run = |tp: u64| {
        est(json!({"mode": "inference", "model": {"preset": "llama-3.1-70b"},
                   "inference": {"context_len": 1024, "engine": "vllm"},
                   "parallelism": {"tensor_parallel_size": tp}, "hardware": {"num_gpus": tp, "gpu": "h200-141gb"}}))
        .serving
        .unwrap()
        .kv_bytes_per_token
    };
    assert_eq!(run(4), 80 * 2 * 2 * 128 * 2);
    assert_eq!(run(16), 80 * 2 * 128 * 2);
}

// ------------------------------------------------------------------------- weights

#[test]
fn gptq_int4_g128_llama2_7b() {
    // per layer (GPTQ: 4-bit weights + fp16 scale and 4-bit zero per 128 inputs and output
    // + int32 g_idx per input):
    //   q, k, v, o 4096x4096: 8 388 608 + 262 144 + 65 536 + 16 384 = 8 732 672 each
    //   gate, up (out 11008, in 4096): 22 544 384 + 704 512 + 176 128 + 16 384 = 23 441 408
    //   down (out 4096, in 11008, 86 groups): 22 544 384 + 704 512 + 176 128 + 44 032 = 23 469 056
    //   norms 2 x 4096 x 2 B = 16 384       -> 105 298 944 per layer, x 32 = 3 369 566 208
    // embedding + LM head in bf16 2 x 262 144 000, final norm 8192 -> 3 893 862 400 B
    let e = infer(
        "llama-2-7b",
        json!({"context_len": 128, "weight_format": "int4", "group_size": 128}),
    );
    assert_eq!(c(&e, "decode", "weights"), 3_893_862_400);
}

#[test]
fn nf4_double_quant_llama2_7b() {
    // bitsandbytes NF4 with double quantization: 4 bits + 1 B absmax per 64 + 4 B per 256
    // blocks + 1092 B of tables per matrix:
    //   4096x4096: 8 388 608 + 262 144 + 4096 + 1092 = 8 655 940
    //   11008x4096: 22 544 384 + 704 512 + 11 008 + 1092 = 23 260 996
    //   per layer 4 x 8 655 940 + 3 x 23 260 996 + 16 384 = 104 423 132; x 32 = 3 341 540 224
    // + embedding, LM head, final norm in bf16 524 296 192 = 3 865 836 416 B
    let e = infer(
        "llama-2-7b",
        json!({"context_len": 128, "weight_format": "nf4"}),
    );
    assert_eq!(c(&e, "decode", "weights"), 3_865_836_416);
}

// ------------------------------------------------------------------------- vLLM

/// vLLM as the llm-d empirical results ran it (published cases GT-45/49/51, an earlier
/// vLLM with the sort-based dummy sampler: `vllm_version` "legacy").
fn vllm(model: &str, format: &str, tp: u64, max_model_len: u64) -> calc_core::ServingEstimate {
    est(json!({"mode": "inference", "model": {"preset": model},
               "inference": {"engine": "vllm", "weight_format": format, "context_len": max_model_len, "gpu_memory_utilization": 0.9, "vllm_version": "legacy"},
               "parallelism": {"tensor_parallel_size": tp}, "hardware": {"num_gpus": tp, "gpu": "h100-80gb"}}))
    .serving
    .unwrap()
}

#[test]
fn vllm_published_cases() {
    // published case GT-45 (tests/reference/published_cases.json): Llama-3.1-8B bf16, H100 (79.18 GiB), util 0.9, max-model-len
    // 16000: weights 14.99 GiB, KV cache 51.38 GiB
    let s = vllm("llama-3.1-8b", "bf16", 1, 16_000);
    assert!(
        (s.weights_bytes as f64 / GIB - 14.99).abs() < 0.01,
        "{}",
        s.weights_bytes as f64 / GIB
    );
    let kv = s.kv_cache_bytes as f64 / GIB;
    assert!((kv - 51.38).abs() / 51.38 < 0.05, "KV {kv:.2} GiB vs 51.38");
    assert!(s.fits);
    // GT-49: Llama-3.3-70B FP8-dynamic (the Llama-3.1-70B architecture), TP 2:
    // weights 33.88 GiB per GPU, KV 32.0 GiB
    let s = vllm("llama-3.1-70b", "fp8", 2, 16_000);
    assert!(
        (s.weights_bytes as f64 / GIB - 33.88).abs() < 0.01,
        "{}",
        s.weights_bytes as f64 / GIB
    );
    let kv = s.kv_cache_bytes as f64 / GIB;
    assert!((kv - 32.0).abs() / 32.0 < 0.06, "KV {kv:.2} GiB vs 32.0");
    // GT-51: a 32B dense model (Qwen3-32B in the log; Qwen2.5-32B has the same KV layout,
    // 64 layers x 8 KV heads x 128, and 61.06 vs 61.03 GiB of weights) fits at 16 000 and,
    // as vLLM reported, not at 32 000
    assert!(vllm("qwen2.5-32b", "bf16", 1, 16_000).fits);
    let s = vllm("qwen2.5-32b", "bf16", 1, 32_000);
    assert!(!s.fits);
    assert!(
        s.message
            .contains("larger than the available KV cache memory"),
        "{}",
        s.message
    );
}

#[test]
fn vllm_0_19_profile() {
    // GT-65, vLLM 0.19 on an H100 (79.19 GiB), util 0.95, max_model_len 8192: the profiling
    // run's sampler over 1024 rows of 128 256 logits keeps 2 + 4 + 4 + 4 B per logit
    // (1 838 678 016 B) beside the batch's hidden states (8192 x 4096 x 2) and two row
    // copies (2 x 1024 x 4096 x 2): 1 922 564 096 B; the log says 1.89 GiB (-5.3 %).
    let e = est(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "vllm", "context_len": 8192, "gpu_memory_utilization": 0.95},
        "hardware": {"gpu": "h100-80gb"}}),
    );
    let s = e.serving.unwrap();
    assert_eq!(s.peak_activation_bytes, 1_922_564_096);
    // KV 58.11 GiB and 476 016 tokens in the log: within 0.2 %
    let kv = s.kv_cache_bytes as f64 / GIB;
    assert!((kv - 58.11).abs() / 58.11 < 0.005, "KV {kv:.2} GiB");
    assert!((s.kv_cache_tokens as f64 - 476_016.0).abs() / 476_016.0 < 0.005);
}

#[test]
fn vllm_pipeline_stages_hold_the_fewest_blocks() {
    // GT-69: Llama-3.1-8B, vLLM 0.19, PP 4 on H100s (85 018 877 624 B), util 0.95: budget
    // floor(85018877624 x 0.95) = 80 767 933 742 B; non-torch 7 hundredths of a GiB =
    // 75 161 926 B; 8 layers per stage, 8 x 4096 = 32 768 B of KV per token.
    let e = est(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "vllm", "context_len": 8192, "max_model_len": 8192,
            "gpu_memory_utilization": 0.95, "max_num_batched_tokens": 8192, "max_num_seqs": 1024},
        "parallelism": {"pipeline_parallel_size": 4}, "hardware": {"num_gpus": 4, "gpu": "h100-80gb"}}),
    );
    // the last stage has the least room: 8 layers + norm + LM head = 2 270 236 672 params
    // x 2 B + the rotary cache 131072 x 128 x 2 B = 4 574 027 776 B; its profiling run is
    // the sampler's (1 922 564 096 B, as at TP 1 in vllm_0_19_profile) plus the received
    // intermediate_tensors, hidden_states and residual of 8192 x 4096 x 2 B: 134 217 728 B
    assert_eq!(e.most_loaded, "pipeline stage 3 of 4");
    let s = e.serving.as_ref().unwrap();
    assert_eq!(s.weights_bytes, 4_574_027_776);
    assert_eq!(s.peak_activation_bytes, 1_922_564_096 + 134_217_728);
    // room 80767933742 - 4574027776 - 2056781824 - 75161926 = 74 061 962 216 B:
    // floor(74061962216 / 32768) = 2 260 191 tokens (the log: 2 257 264, +0.13 %)
    assert_eq!(s.kv_cache_bytes, 74_061_962_216);
    assert_eq!(s.kv_cache_tokens, 2_260_191);
    assert_eq!(c(&e, "serving", "kv_cache"), 2_260_191 * 32_768);
    // the first stage (embedding instead of norm + head, no sampler, no received tensors)
    // has room for 75 212 782 568 / 32768 = 2 295 311 tokens but holds the last stage's
    // 2 260 191: its peak is lower by the rooms' difference, rounded to whole tokens
    let first = e.stages.iter().find(|st| st.stage == 0).unwrap();
    assert_eq!(
        first.peak_allocated_bytes,
        4_574_019_584 + 905_969_664 + 2_260_191 * 32_768
    );
}

#[test]
fn serving_runtimes_split_uneven_pipelines_themselves() {
    // DeepSeek-V3's 61 layers over PP 2: vLLM gives the extra layer to the stage before the
    // last (get_pp_indices: 31 / 30), SGLang to the last (30 / 31)
    let doc = |engine: &str, pp: u64| {
        json!({"mode": "inference", "model": {"preset": "deepseek-v3"},
            "inference": {"engine": engine, "weight_format": "fp8", "context_len": 4096},
            "parallelism": {"tensor_parallel_size": 8, "pipeline_parallel_size": pp},
            "hardware": {"num_gpus": 8 * pp, "gpu": "h200-141gb"}})
    };
    let layers = |e: &Estimate| {
        e.stages
            .iter()
            .map(|s| (s.stage, s.layers))
            .collect::<Vec<_>>()
    };
    assert_eq!(layers(&est(doc("vllm", 2))), [(0, 31), (1, 30)]);
    assert_eq!(layers(&est(doc("sglang", 2))), [(0, 30), (1, 31)]);
    // PP 4: SGLang's 15 / 15 / 15 / 16 (the candidates: first, fullest middle, last);
    // vLLM's 15 / 15 / 16 / 15, whose third stage holds one layer more than the second and
    // is a candidate of its own
    assert_eq!(layers(&est(doc("sglang", 4))), [(0, 15), (1, 15), (3, 16)]);
    let v4 = est(doc("vllm", 4));
    assert_eq!(layers(&v4), [(0, 15), (1, 15), (2, 16), (3, 15)]);
    assert_eq!(
        v4.layout.describe_model_parallel(),
        "TP 8, PP 4 (15 / 15 / 16 / 15 layers)"
    );
    // Llama-3.1-70B's 80 layers over PP 6 in vLLM: 13 / 13 / 13 / 14 / 14 / 13. A decoder
    // layer: q and o 8192 x 8192, k and v 8192 x 1024, gate, up and down 8192 x 28672, two
    // norms of 8192: 2 x 67 108 864 + 2 x 8 388 608 + 3 x 234 881 024 + 16 384 =
    // 855 654 400 params; stage 1 holds 13 of them, stage 3 14
    let mut l70 = json!({"mode": "inference", "model": {"preset": "llama-3.1-70b"},
        "inference": {"engine": "vllm", "context_len": 4096},
        "parallelism": {"pipeline_parallel_size": 6},
        "hardware": {"num_gpus": 6, "gpu": "h100-80gb"}});
    let e = est(l70.clone());
    assert_eq!(layers(&e), [(0, 13), (1, 13), (3, 14), (5, 13)]);
    assert_eq!(e.stages[1].params_on_gpu, 13 * 855_654_400);
    assert_eq!(e.stages[2].params_on_gpu, 14 * 855_654_400);
    assert_eq!(
        e.layout.describe_model_parallel(),
        "PP 6 (13 / 13 x 2 / 14 x 2 / 13 layers)"
    );
    // SGLang: 13 / 13 / 13 / 13 / 14 / 14, the last middle stage and the last heavier
    l70["inference"]["engine"] = json!("sglang");
    assert_eq!(layers(&est(l70)), [(0, 13), (1, 13), (4, 14), (5, 14)]);
    // transformers generate has no split of its own: the layers must divide
    let mut hf = doc("hf", 2);
    hf["inference"] = json!({"engine": "hf", "context_len": 4096, "weight_format": "fp8"});
    assert!(
        errors_of(hf)[0]
            .message
            .contains("must divide num_hidden_layers (61)")
    );
}

#[test]
fn vllm_no_room_for_weights() {
    // 70B in bf16 on one H100: the weights alone exceed the budget
    let s = vllm("llama-3.1-70b", "bf16", 1, 4096);
    assert!(s.kv_cache_bytes < 0 && !s.fits);
    assert!(
        s.message
            .starts_with("No available memory for the cache blocks"),
        "{}",
        s.message
    );
}

// ------------------------------------------------------------------------- LoRA / QLoRA

fn lora(model: &str, lora: Value, training: Value) -> Estimate {
    let mut t =
        json!({"seq_len": 1024, "precision": "bf16", "optimizer_impl": "fused", "lora": lora});
    if let Value::Object(m) = training {
        for (k, v) in m {
            t[k] = v;
        }
    }
    est(json!({"model": {"preset": model}, "training": t, "hardware": {"gpu": "h100-80gb"}}))
}

#[test]
fn lora_parameter_counts() {
    // Llama-3.1-8B, r = 16 on q, k, v, o: per layer q 16 x (4096 + 4096) = 131 072,
    // k and v 16 x (4096 + 1024) = 81 920 each, o 131 072 -> 425 984 x 32 = 13 631 488
    let e = lora(
        "llama-3.1-8b",
        json!({"rank": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}),
        json!({}),
    );
    assert_eq!(e.trainable_params, 13_631_488);
    // fp32 adapters: 4 B weights and gradients, AdamW 8 B states
    let s = e
        .phases
        .iter()
        .find(|p| p.phase == "optimizer_step")
        .unwrap();
    assert_eq!(s.components["gradients"], 4 * 13_631_488);
    assert_eq!(s.components["optimizer_states"], 8 * 13_631_488);
    // frozen bf16 base: 8 030 261 248 x 2 B; the fp32 adapters apart: 13 631 488 x 4 B
    assert_eq!(s.components["weights"], 2 * 8_030_261_248);
    assert_eq!(s.components["adapter_weights"], 4 * 13_631_488);
    // all-linear adds gate, up, down: 16 x (4096 + 14336) x 3 per layer
    let e = lora(
        "llama-3.1-8b",
        json!({"rank": 16, "target_modules": "all-linear"}),
        json!({}),
    );
    assert_eq!(
        e.trainable_params,
        13_631_488 + 32 * 3 * 16 * (4096 + 14336)
    );
}

#[test]
fn lora_on_moe_experts_counts_each_expert() {
    // Mixtral on transformers 5: w1 and w3 of the 8 experts are one fused gate_up_proj,
    // which PEFT targets with one adapter of rank 2r per expert: 8 x 32 x (4096 + 2 x 14336)
    // per layer, 32 layers = 268 435 456
    let e = lora(
        "mixtral-8x7b-v0.1",
        json!({"rank": 16, "target_modules": ["w1", "w3"]}),
        json!({}),
    );
    assert_eq!(e.trainable_params, 32 * 8 * 32 * (4096 + 2 * 14336));
    // w2 (down): 8 x 16 x (14336 + 4096) per layer
    let e = lora(
        "mixtral-8x7b-v0.1",
        json!({"rank": 16, "target_modules": ["w2"]}),
        json!({}),
    );
    assert_eq!(e.trainable_params, 32 * 8 * 16 * (14336 + 4096));
    // one of the fused pair alone is refused, as PEFT refuses it
    let err = estimate(&cfg(json!({"model": {"preset": "mixtral-8x7b-v0.1"},
        "training": {"lora": {"target_modules": ["w1"]}}})))
    .unwrap_err();
    assert_eq!(err[0].field, "training.lora.target_modules");
    assert!(
        err[0].message.contains("gate_up_proj"),
        "{}",
        err[0].message
    );
}

#[test]
fn qlora_base_in_nf4_with_dequantization_buffer() {
    // QLoRA: the frozen base in NF4 (linear layers) and bf16 (embeddings, head, norms),
    // bitsandbytes dequantizes one linear weight at a time: the largest, 14336 x 4096 x 2 B
    let e = lora(
        "llama-3.1-8b",
        json!({"rank": 16, "base_weight_format": "nf4", "target_modules": "all-linear"}),
        json!({}),
    );
    let f = e.phases.iter().find(|p| p.phase == "forward").unwrap();
    assert_eq!(f.components["dequantization_buffers"], 2 * 14336 * 4096);
    let bf16 = lora(
        "llama-3.1-8b",
        json!({"rank": 16, "target_modules": "all-linear"}),
        json!({}),
    );
    let w = |e: &Estimate| {
        e.phases
            .iter()
            .find(|p| p.phase == "optimizer_step")
            .unwrap()
            .components["weights"]
    };
    // NF4 keeps ~0.516 B per linear weight instead of 2
    assert!(w(&e) < w(&bf16) * 2 / 5, "{} vs {}", w(&e), w(&bf16));
}

#[test]
fn lora_activations_drop_frozen_inputs() {
    // frozen layers keep no inputs: LoRA on q, v only keeps less than full training
    let full = est(
        json!({"model": {"preset": "llama-3.2-1b"}, "training": {"seq_len": 1024, "precision": "bf16"}}),
    );
    let l = lora("llama-3.2-1b", json!({"rank": 8}), json!({}));
    let act = |e: &Estimate| {
        e.phases
            .iter()
            .find(|p| p.phase == "forward")
            .unwrap()
            .components["activations"]
    };
    assert!(act(&l) < act(&full), "{} vs {}", act(&l), act(&full));
}

// ------------------------------------------------------------------------- solvers

fn fits(v: &Value) -> bool {
    estimate(&Config::from_value(v.clone()).unwrap())
        .unwrap()
        .fits
}

/// Every parallel layout of `n` GPUs as a `parallelism` section: tensor x pipeline x
/// context parallel sizes (tensor inside an 8-GPU node) dividing `n`, expert parallel
/// dividing the experts, and, where the pipeline does not divide the layers, the uneven
/// split the solvers use (middle stages ceil(L / pp), the first and last share the rest,
/// the first the smaller half). Layouts the config validation rejects are left out by the
/// callers (an estimate error).
fn layouts(n: u64, layers: u64, experts: u64) -> Vec<Value> {
    let div = |x: u64| (1..=x).filter(move |d| x.is_multiple_of(*d));
    let mut v = Vec::new();
    for tp in div(n).filter(|t| *t <= 8) {
        for pp in div(n / tp).filter(|p| *p <= layers) {
            for cp in div(n / tp / pp) {
                for ep in div(experts) {
                    let mut p = json!({"tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                                       "context_parallel_size": cp, "expert_parallel_size": ep,
                                       "sequence_parallel": tp > 1});
                    if !layers.is_multiple_of(pp) {
                        let middle = layers.div_ceil(pp);
                        let ends = layers - (pp - 2) * middle;
                        p["first_pipeline_stage_layers"] = json!(ends / 2);
                        p["last_pipeline_stage_layers"] = json!(ends - ends / 2);
                    }
                    v.push(p);
                }
            }
        }
    }
    v
}

/// Whether `base` with `parallelism` on `n` GPUs and `edit` applied fits; `None` when the
/// config does not validate (the layout is not one the engine runs).
fn fits_with(base: &Value, parallelism: &Value, n: u64, edit: impl Fn(&mut Value)) -> Option<bool> {
    let mut c = base.clone();
    c["parallelism"] = parallelism.clone();
    c["hardware"]["num_gpus"] = json!(n);
    edit(&mut c);
    let c = Config::from_value(c).ok()?;
    estimate(&c).ok().map(|e| e.fits)
}

#[test]
fn max_micro_batch_matches_brute_force() {
    for (model, seq, engine, layers) in [
        (
            "llama-3.1-8b",
            2048,
            json!({"type": "deepspeed", "zero_stage": 3}),
            32,
        ),
        ("qwen2.5-7b", 4096, json!({"type": "fsdp"}), 28),
        ("gpt2-xl", 1024, json!({"type": "ddp"}), 48),
        (
            "llama-3.1-8b",
            8192,
            json!({"type": "megatron", "distributed_optimizer": true}),
            32,
        ),
    ] {
        let base = json!({"model": {"preset": model}, "training": {"seq_len": seq, "activation_checkpointing": "none"},
                          "engine": engine, "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}});
        let s = solve(
            &Config::from_value(base.clone()).unwrap(),
            Target::MaxMicroBatch,
        )
        .unwrap();
        // the config's own layout: every micro-batch up to its answer fits, one more does not
        let own = s.value_with_config_layout.unwrap_or(0);
        for b in 1..=own + 1 {
            let mut c = base.clone();
            c["training"]["micro_batch_size"] = json!(b);
            assert_eq!(fits(&c), b <= own, "{model}: micro-batch {b}, solver {own}");
        }
        // over the layouts: the answer's document fits at its value on the same 8 GPUs, and
        // no layout of 8 GPUs fits one more
        let v = s.value.unwrap();
        assert!(v >= own);
        let doc = serde_json::to_value(s.config.as_ref().unwrap()).unwrap();
        assert!(fits(&doc), "{model}: {}", s.message);
        assert_eq!(doc["training"]["micro_batch_size"], json!(v));
        assert_eq!(s.layout.unwrap().num_gpus, 8);
        let mut tried = 0;
        for p in layouts(8, layers, 1) {
            if let Some(f) = fits_with(&base, &p, 8, |c| {
                c["training"]["micro_batch_size"] = json!(v + 1)
            }) {
                tried += 1;
                assert!(
                    !f,
                    "{model}: {p} fits micro-batch {}, solver {}",
                    v + 1,
                    s.message
                );
            }
        }
        assert!(tried >= 1, "{model}");
        assert!(s.evaluations <= 400, "{}", s.evaluations);
    }
}

#[test]
fn max_sequence_is_exact_to_one_step() {
    let base = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"activation_checkpointing": "full"},
                      "parallelism": {"context_parallel_size": 2}, "engine": {"type": "megatron", "distributed_optimizer": true},
                      "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}});
    let s = solve(
        &Config::from_value(base.clone()).unwrap(),
        Target::MaxSequence,
    )
    .unwrap();
    let own = s.value_with_config_layout.unwrap();
    // Megatron-Core's load-balanced ring splits the sequence into 2 chunks per CP rank
    assert_eq!(own % 4, 0, "divisible by 2 x the context-parallel size");
    let at = |seq: u64| {
        let mut c = base.clone();
        c["training"]["seq_len"] = json!(seq);
        fits(&c)
    };
    assert!(at(own) && !at(own + 4), "{own}");
    // over the layouts of 8 GPUs: nothing fits the next sequence length each layout could
    // take (a multiple of 2 x its context-parallel size)
    let v = s.value.unwrap();
    assert!(v >= own);
    let doc = serde_json::to_value(s.config.as_ref().unwrap()).unwrap();
    assert!(
        fits(&doc) && doc["training"]["seq_len"] == json!(v),
        "{}",
        s.message
    );
    // (a sequence never goes past the model's 131 072 positions: Llama-3.1-8B reaches them
    // at TP 4, where the search stops)
    assert!(v <= 131_072, "{}", s.message);
    assert_eq!(s.at_limit, v == 131_072, "{}", s.message);
    for p in layouts(8, 32, 1) {
        let cp = p["context_parallel_size"].as_u64().unwrap();
        let m = if cp > 1 { 2 * cp } else { 1 };
        let next = (v / m + 1) * m;
        if next > 131_072 {
            continue;
        }
        if let Some(f) = fits_with(&base, &p, 8, |c| c["training"]["seq_len"] = json!(next)) {
            assert!(!f, "{p} fits {next}, solver {}", s.message);
        }
    }
}

#[test]
fn min_gpus_matches_brute_force() {
    for (model, engine, gpu, layers) in [
        ("llama-2-70b", json!({"type": "fsdp"}), "a100-80gb", 80),
        (
            "llama-3.1-8b",
            json!({"type": "deepspeed", "zero_stage": 3}),
            "rtx4090-24gb",
            32,
        ),
        (
            "qwen2.5-14b",
            json!({"type": "deepspeed", "zero_stage": 2}),
            "a100-40gb",
            48,
        ),
        (
            "llama-3.1-8b",
            json!({"type": "megatron", "distributed_optimizer": false}),
            "rtx4090-24gb",
            32,
        ),
    ] {
        let base = json!({"model": {"preset": model}, "training": {"seq_len": 2048, "activation_checkpointing": "full", "attention": "flash"},
                          "engine": engine, "hardware": {"gpu": gpu}});
        let s = solve(&Config::from_value(base.clone()).unwrap(), Target::MinGpus).unwrap();
        // the config's own (data-parallel) layout scaled
        let brute = (1..=128u64).find(|&n| {
            let mut c = base.clone();
            c["hardware"]["num_gpus"] = json!(n);
            fits(&c)
        });
        assert_eq!(s.value_with_config_layout, brute, "{model} on {gpu}");
        // over the layouts: the answer fits on its GPUs and no layout of fewer GPUs does
        let v = s.value.unwrap();
        assert!(brute.is_none_or(|b| v <= b));
        let doc = serde_json::to_value(s.config.as_ref().unwrap()).unwrap();
        assert!(
            fits(&doc) && doc["hardware"]["num_gpus"] == json!(v),
            "{}",
            s.message
        );
        for n in 1..v {
            for p in layouts(n, layers, 1) {
                if let Some(f) = fits_with(&base, &p, n, |_| {}) {
                    assert!(
                        !f,
                        "{model} on {gpu}: {p} fits {n} GPUs, solver {}",
                        s.message
                    );
                }
            }
        }
    }
}

#[test]
fn vllm_fewest_gpus_searches_tensor_parallelism() {
    // Llama-3.1-70B in bf16 (141 GB of weights) at a 32k context set to TP 2: two 80 GB
    // GPUs at gpu_memory_utilization 0.9 hold 2 x 72 GB, not the weights and a 32k
    // sequence's KV cache; the DP-only answer was "no GPU count fits". Three GPUs do, as
    // pipeline stages (64 heads do not split 3 ways): 80 layers as 26 + 27 + 27.
    let base = json!({"mode": "inference", "model": {"preset": "llama-3.1-70b"},
                      "inference": {"engine": "vllm", "context_len": 32768},
                      "parallelism": {"tensor_parallel_size": 2}, "hardware": {"gpu": "h100-80gb", "num_gpus": 2}});
    let s = solve(&Config::from_value(base.clone()).unwrap(), Target::MinGpus).unwrap();
    assert_eq!(s.value_with_config_layout, None);
    assert_eq!(s.value, Some(3), "{}", s.message);
    let l = s.layout.unwrap();
    assert_eq!((l.tensor_parallel_size, l.pipeline_parallel_size), (1, 3));
    assert!(s.message.contains("PP 3"), "{}", s.message);
    // brute force: no tensor x pipeline layout of 1 or 2 GPUs serves it
    for n in 1..3u64 {
        for p in layouts(n, 80, 1) {
            if let Some(f) = fits_with(&base, &p, n, |_| {}) {
                assert!(!f, "{p} serves on {n} GPUs");
            }
        }
    }
    // held to tensor parallelism within the node (pipeline 1), the answer is TP 4
    let tp4 = fits_with(&base, &json!({"tensor_parallel_size": 4}), 4, |_| {});
    assert_eq!(tp4, Some(true));
}

#[test]
fn inference_concurrency_and_context() {
    let base = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"}, "inference": {"context_len": 8192},
                      "hardware": {"gpu": "rtx4090-24gb"}});
    let s = solve(
        &Config::from_value(base.clone()).unwrap(),
        Target::MaxConcurrency,
    )
    .unwrap();
    let v = s.value.unwrap();
    let at = |b: u64| {
        let mut c = base.clone();
        c["inference"]["batch_size"] = json!(b);
        fits(&c)
    };
    assert!(at(v) && !at(v + 1), "{v}");
    let s = solve(
        &Config::from_value(base.clone()).unwrap(),
        Target::MaxSequence,
    )
    .unwrap();
    let ctx = s.value.unwrap();
    let at = |n: u64| {
        let mut c = base.clone();
        c["inference"]["context_len"] = json!(n);
        fits(&c)
    };
    assert!(at(ctx) && !at(ctx + 1), "{ctx}");
    // vLLM concurrency is the KV capacity divided by the per-sequence need
    let vl = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
                    "inference": {"engine": "vllm", "context_len": 16000}, "hardware": {"gpu": "h100-80gb"}});
    let s = solve(
        &Config::from_value(vl.clone()).unwrap(),
        Target::MaxConcurrency,
    )
    .unwrap();
    let serving = estimate(&Config::from_value(vl).unwrap())
        .unwrap()
        .serving
        .unwrap();
    assert_eq!(s.value, Some(serving.kv_cache_tokens / 16000));
}

#[test]
fn solver_on_a_wrong_mode_is_an_error() {
    let c = Config::from_value(json!({"model": {"preset": "gpt2"}})).unwrap();
    assert!(solve(&c, Target::MaxConcurrency).is_err());
}

// ------------------------------------------------------------------------- bad input

#[test]
fn bad_inference_and_lora_inputs() {
    let e =
        errors_of(json!({"model": {"preset": "llama-2-7b"}, "training": {"lora": {"rank": 0}}}));
    assert_eq!(e[0].field, "training.lora.rank");
    let e = errors_of(
        json!({"model": {"preset": "llama-2-7b"}, "training": {"lora": {"target_modules": ["qkv"]}}}),
    );
    assert!(
        e[0].message.contains("matches no linear layer") && e[0].message.contains("q_proj"),
        "{e:?}"
    );
    let e = errors_of(
        json!({"mode": "inference", "model": {"preset": "llama-2-7b"}, "inference": {"weight_format": "int4", "group_size": 100}}),
    );
    assert_eq!(e[0].field, "inference.group_size");
    assert!(e[0].message.contains("4096"), "{}", e[0]);
    let e = errors_of(
        json!({"mode": "inference", "model": {"preset": "llama-2-7b"}, "inference": {"gpu_memory_utilization": 1.5}}),
    );
    assert_eq!(e[0].field, "inference.gpu_memory_utilization");
    let e = errors_of(
        json!({"mode": "inference", "model": {"preset": "llama-2-7b"}, "inference": {"context_len": 100, "prompt_len": 200}}),
    );
    assert_eq!(e[0].field, "inference.prompt_len");
    // a context beyond max_position_embeddings is a warning, not a silent pass
    let e = infer("llama-2-7b", json!({"context_len": 8192}));
    assert!(
        e.warnings
            .iter()
            .any(|w| w.contains("max_position_embeddings (4096)")),
        "{:?}",
        e.warnings
    );
}

// ------------------------------------------------------------------- logits_to_keep

#[test]
fn prefill_with_every_logit_kept() {
    // Llama-3.2-1B (V 128 256, h 2048), batch 2, a 1000-token prompt, logits_to_keep 0:
    // the prefill's logits are 2 x 1000 x 128 256 x 2 B, plus generate's fp32 copy of the
    // last position 2 x 128 256 x 4 B: 2 x 128 256 x (2000 + 4) = 514 050 048 B.
    let e = infer(
        "llama-3.2-1b",
        json!({"batch_size": 2, "context_len": 1004, "prompt_len": 1000, "logits_to_keep": 0}),
    );
    assert_eq!(c(&e, "prefill", "logits"), 514_050_048);
    // the layer loop's workspace is freed before the LM head: beside these logits only
    // the final hidden states 2 x 1000 x 2048 x 2 B = 8 192 000 B are alive
    assert_eq!(c(&e, "prefill", "activations"), 8_192_000);
    // logits_to_keep 1 (generate's default): 2 x 128 256 x (2 + 4) = 1 539 072 B, and the
    // layer loop is the larger moment
    let one = infer(
        "llama-3.2-1b",
        json!({"batch_size": 2, "context_len": 1004, "prompt_len": 1000}),
    );
    assert_eq!(c(&one, "prefill", "logits"), 1_539_072);
    assert!(c(&one, "prefill", "activations") > 8_192_000);
    // 0 is accepted, a count beyond the context is not
    let err = estimate(&cfg(
        json!({"mode": "inference", "model": {"preset": "llama-3.2-1b"},
        "inference": {"context_len": 100, "logits_to_keep": 101}}),
    ))
    .unwrap_err();
    assert_eq!(err[0].field, "inference.logits_to_keep");
}

#[test]
fn gpt_oss_mxfp4_experts_only() {
    // gpt-oss-20b as its checkpoint stores it: the 24 x 32 experts' matrices in MXFP4
    // (19 110 297 600 elements: 4 bits + one E8M0 scale byte per 32 = 0.53125 B each,
    // 10 152 345 600 B), their biases (6 635 520) and everything else (1 797 824 064: attention,
    // sinks, routers, norms, embeddings, head) in bf16: 13 761 264 768 B
    let e = est(json!({"mode": "inference",
        "model": {"hf_config": {"model_type": "gpt_oss", "num_hidden_layers": 24, "num_local_experts": 32}},
        "inference": {"weight_format": "mxfp4", "quantized_modules": "experts", "attention": "eager"},
        "hardware": {"gpu": "h100-80gb"}}));
    assert_eq!(c(&e, "decode", "weights"), 13_761_264_768);
    // all linear layers in MXFP4 (attention too) is smaller
    let all = est(json!({"mode": "inference",
        "model": {"hf_config": {"model_type": "gpt_oss", "num_hidden_layers": 24, "num_local_experts": 32}},
        "inference": {"weight_format": "mxfp4", "attention": "eager"},
        "hardware": {"gpu": "h100-80gb"}}));
    assert!(c(&all, "decode", "weights") < 13_761_264_768);
}

// ------------------------------------------------------------------------- SGLang

#[test]
fn sglang_static_pool() {
    // Llama-3.1-8B in bf16 on one H100 (CUDA total 85 018 877 624 B), mem_fraction_static
    // 0.85 (model_runner.py profile_max_num_token: rest = fraction x free before loading -
    // weights). Free before loading: the capacity less the 911 MiB CUDA context (no process
    // group on one GPU) = 84 063 624 888 B; budget floor(0.85 x that) = 71 454 081 154 B.
    // Weights: 8 030 261 248 params x 2 B + the rotary cache 131 072 positions x 128 x 2 B
    // = 16 094 076 928 B. KV = 55 360 004 226 B; a token holds 32 layers x 2 x 8 heads x
    // 128 x 2 B = 131 072 B, so the pool is 422 363 tokens.
    let e = est(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "sglang", "context_len": 8192, "mem_fraction_static": 0.85},
        "hardware": {"gpu": "h100-80gb"}}),
    );
    let s = e.serving.unwrap();
    assert_eq!(s.budget_bytes, 71_454_081_154);
    assert_eq!(s.weights_bytes, 16_094_076_928);
    assert_eq!(s.kv_cache_bytes, 55_360_004_226);
    assert_eq!(s.kv_bytes_per_token, 131_072);
    assert_eq!(s.kv_cache_tokens, 422_363);
    assert!(s.fits);
    // the pool is whole tokens; the prefill chunk (SGLang's default 8192 tokens on an H100)
    // sits beside it outside the static budget
    let kv_term = e.components["kv_cache"];
    assert_eq!(kv_term, 422_363 * 131_072);
    assert_eq!(
        e.components["weights"] + kv_term + s.peak_activation_bytes,
        e.peak_allocated_bytes
    );
}

#[test]
fn sglang_pipeline_stages_share_the_world_minimum() {
    // Llama-3.1-8B on SGLang, PP 3 split 10 / 11 / 11, mem_fraction_static 0.85, H100s
    // (85 018 877 624 B). Free before loading: less the 911 MiB CUDA context and the pipeline
    // communicator's 128 MiB = 83 929 407 160 B; static budget floor(0.85 x that) =
    // 71 339 996 086 B on every rank. Weights per stage (218 112 000 params per layer, the
    // embedding and the LM head 128 256 x 4096 = 525 336 576 each, the final norm 4096, the
    // rotary cache 131 072 x 128 x 2 B = 33 554 432 B):
    //   first  (10 layers + embedding):        2 706 456 576 x 2 B + cache = 5 446 467 584 B
    //   middle (11 layers):                    2 399 232 000 x 2 B + cache = 4 832 018 432 B
    //   last   (11 layers + norm + LM head):   2 924 572 672 x 2 B + cache = 5 882 699 776 B
    // SGLang takes the least free memory after loading over the world group (the last
    // stage's), so every rank's room is 71 339 996 086 - 5 882 699 776 = 65 457 296 310 B;
    // a token holds 4 096 B per layer: 45 056 B on 11 layers (1 452 798 tokens), 40 960 B on
    // 10 (1 598 078), and the pool is the minimum over the world, 1 452 798 tokens on every
    // stage. (Each stage's own room, as before, gave the middle one 1 476 118 tokens.)
    let e = est(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "sglang", "context_len": 8192, "mem_fraction_static": 0.85},
        "parallelism": {"pipeline_parallel_size": 3, "first_pipeline_stage_layers": 10,
            "last_pipeline_stage_layers": 11},
        "hardware": {"num_gpus": 3, "gpu": "h100-80gb"}}),
    );
    let s = e.serving.as_ref().unwrap();
    assert_eq!(s.budget_bytes, 71_339_996_086);
    assert_eq!(s.kv_cache_bytes, 65_457_296_310);
    assert_eq!(s.kv_bytes_per_token, 45_056);
    assert_eq!(s.kv_cache_tokens, 1_452_798);
    assert!(
        s.message
            .contains("the fewest any pipeline stage has room for"),
        "{}",
        s.message
    );
    // the prefill chunk (8 192 tokens) takes 905 969 664 B beside the pool on each stage
    let prefill = 905_969_664;
    assert_eq!(s.peak_activation_bytes, prefill);
    assert_eq!(e.most_loaded, "pipeline stage 2 of 3");
    let peak = |i: u64| {
        e.stages
            .iter()
            .find(|st| st.stage == i)
            .unwrap()
            .peak_allocated_bytes
    };
    assert_eq!(peak(0), 5_446_467_584 + 1_452_798 * 40_960 + prefill);
    assert_eq!(peak(1), 4_832_018_432 + 1_452_798 * 45_056 + prefill);
    assert_eq!(peak(2), 5_882_699_776 + 1_452_798 * 45_056 + prefill);
}

#[test]
fn sglang_default_fraction_and_errors() {
    // SGLang's default on an H100 (81 080 MiB CUDA total; server_args.py): chunked prefill
    // 8192 and cuda_graph_max_bs 256 at TP1, reserved 512 + 1.5 x 8192 + 2 x 256 + 1/8 x
    // 1024 = 13 440 MiB: round((81 080 - 13 440) / 81 080, 3) = 0.834. At TP 4: graph
    // batch 512 and 4/8 x 1024, reserved 14 336 MiB: 0.823.
    let s = |tp: u64| {
        est(
            json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
            "inference": {"engine": "sglang", "context_len": 8192},
            "parallelism": {"tensor_parallel_size": tp},
            "hardware": {"gpu": "h100-80gb", "num_gpus": tp}}),
        )
        .serving
        .unwrap()
    };
    assert_eq!(s(1).gpu_memory_utilization, 0.834);
    assert_eq!(s(4).gpu_memory_utilization, 0.823);
    // a fraction too small for the weights says so
    let e = est(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "sglang", "context_len": 8192, "mem_fraction_static": 0.1},
        "hardware": {"gpu": "h100-80gb"}}),
    );
    let sv = e.serving.unwrap();
    assert!(!sv.fits && sv.kv_cache_tokens == 0);
    assert!(
        sv.message.starts_with("Not enough memory"),
        "{}",
        sv.message
    );
    // out of range
    let c: Config = serde_json::from_value(
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "inference": {"engine": "sglang", "mem_fraction_static": 1.5}}),
    )
    .unwrap();
    let errs = estimate(&c).unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.field == "inference.mem_fraction_static"),
        "{errs:?}"
    );
}

#[test]
fn vllm_0_19_fused_moe_workspace() {
    // GT-75: Qwen3-30B-A3B on one H100, util 0.95, 8192 batched tokens, 1024 sequences.
    // The persistent fused-MoE workspace (TritonExperts): workspace13 = 8192 tokens x 8
    // experts x max(768, 2048) = 134 217 728 elements (more than the 8192 x 2048 output it
    // shares), workspace2 = 8192 x 8 x max(1536, 2048) = 134 217 728: 536 870 912 B in bf16.
    // The sampler moment: hidden states 8192 x 2048 x 2 = 33 554 432, two row copies
    // 2 x 1024 x 2048 x 2 = 8 388 608, 1024 x 151 936 logits x 14 B = 2 178 154 496; with
    // the workspace 2 756 968 448 B (the log: 2.68 GiB = 2 877 628 088 B, -4.2 %).
    let e = est(
        json!({"mode": "inference", "model": {"preset": "qwen3-30b-a3b"},
        "inference": {"engine": "vllm", "context_len": 8192, "gpu_memory_utilization": 0.95},
        "hardware": {"gpu": "h100-80gb"}}),
    );
    assert_eq!(e.serving.unwrap().peak_activation_bytes, 2_756_968_448);
}

#[test]
fn serving_solvers_agree_with_the_headline_and_the_models_limits() {
    // vLLM, Llama-3.1-8B bf16 on one H100, max_model_len 16 384 and a context_len of 8 192
    // that vLLM does not read: the headline's "maximum concurrency" is kv_cache_tokens /
    // max_model_len, and the solver answers its whole part (not kv_cache_tokens / 8 192)
    let doc = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
                     "inference": {"engine": "vllm", "context_len": 8192, "max_model_len": 16384},
                     "hardware": {"num_gpus": 1, "gpu": "h100-80gb"}});
    let c = Config::from_value(doc).unwrap();
    let sv = estimate(&c).unwrap().serving.unwrap();
    let s = solve(&c, Target::MaxConcurrency).unwrap();
    assert_eq!(s.value, Some(sv.kv_cache_tokens / 16_384));
    assert_eq!(s.value, Some(sv.max_concurrency.floor() as u64));
    assert!(
        s.message.contains("of 16384 tokens each (max_model_len)"),
        "{}",
        s.message
    );
    // the longest context: the KV cache holds over 400 000 tokens, but the model has
    // 131 072 positions, and vLLM refuses a longer max_model_len
    assert!(sv.kv_cache_tokens > 400_000, "{}", sv.kv_cache_tokens);
    let s = solve(&c, Target::MaxSequence).unwrap();
    assert_eq!(s.value, Some(131_072));
    assert!(s.at_limit);
    assert!(
        s.message.contains("max_position_embeddings"),
        "{}",
        s.message
    );
    let inf = s.config.unwrap().inference.unwrap();
    assert_eq!(inf.max_model_len, Some(131_072));
    // SGLang's length is max_model_len too (its context_length)
    let mut g = c.clone();
    g.inference.as_mut().unwrap().engine = calc_core::config::InferenceEngine::Sglang;
    g.inference.as_mut().unwrap().max_model_len = None;
    let s = solve(&g, Target::MaxSequence).unwrap();
    assert_eq!(s.config.unwrap().inference.unwrap().max_model_len, s.value);
}

#[test]
fn a_serving_runtime_has_one_length_field() {
    use calc_core::fields::without_hidden;
    // the form hides context_len for vLLM and SGLang; the length it stood for is kept as
    // max_model_len, so the estimate is unchanged
    let doc = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
                     "inference": {"engine": "vllm", "context_len": 16000},
                     "hardware": {"num_gpus": 1, "gpu": "h100-80gb"}});
    let form = without_hidden(&doc);
    assert_eq!(form["inference"].get("context_len"), None);
    assert_eq!(form["inference"]["max_model_len"], json!(16000));
    let (a, b) = (
        estimate(&Config::from_value(doc.clone()).unwrap()).unwrap(),
        estimate(&Config::from_value(form).unwrap()).unwrap(),
    );
    assert_eq!(a.total_bytes, b.total_bytes);
    assert_eq!(a.serving.unwrap().max_model_len, 16000);
    // neither given: the default length (4096) written out; an explicit max_model_len kept
    let bare = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"}, "inference": {"engine": "sglang"}});
    assert_eq!(
        without_hidden(&bare)["inference"]["max_model_len"],
        json!(4096)
    );
    let mut both = doc.clone();
    both["inference"]["max_model_len"] = json!(8192);
    assert_eq!(
        without_hidden(&both)["inference"]["max_model_len"],
        json!(8192)
    );
    // transformers generate keeps its context length and has no max_model_len
    let mut hf = doc;
    hf["inference"]["engine"] = json!("hf");
    let hf = without_hidden(&hf);
    assert_eq!(hf["inference"]["context_len"], json!(16000));
    assert_eq!(hf["inference"].get("max_model_len"), None);
}
