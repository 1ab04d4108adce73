//! Hand-derived expected bytes per engine and component, a reproduction of Megatron-LM's
//! own memory formulas, properties, and every preset and example.

mod common;
use common::*;

use calc_core::{Config, estimate};
use serde_json::{Value, json};

/// Llama-2-7B: P = 6 738 415 616 parameters (transformers' count).
const LLAMA2_7B: u64 = 6_738_415_616;

#[test]
fn zero3_llama2_7b_8_gpus_model_states() {
    // DeepSpeed ZeRO-3, 8 GPUs, AMP (DeepSpeed bf16), AdamW: 16 B x P / 8 of model states
    // (ZeRO paper Sec. 3.1: 2 + 2 + 12 bytes per parameter), except that ZeRO-3 keeps
    // tensors under stage3_param_persistence_threshold (1e5 elements) whole: the 65 norm
    // weights of 4096 elements (2 per layer x 32 + final) = 266 240 elements.
    let e = estimate(&cfg(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "activation_checkpointing": "full"},
        "engine": {"type": "deepspeed", "zero_stage": 3},
        "hardware": {"num_gpus": 8, "gpu": "a100-80gb"}
    })))
    .unwrap();
    let p8 = LLAMA2_7B / 8; // 842 301 952
    let small = 65 * 4096;
    let step = phase(&e, "optimizer_step");
    // weights: 2 B x (P - small) / 8 + 2 B x small
    assert_eq!(
        step.components["weights"],
        2 * (LLAMA2_7B - small).div_ceil(8) + 2 * small
    );
    assert_eq!(step.components["gradients"], 2 * p8); // 1 684 603 904
    assert_eq!(step.components["master_weights"], 4 * p8); // 3 369 207 808
    assert_eq!(step.components["optimizer_states"], 8 * p8); // 6 738 415 616
    // the step flattens (2 B) and upcasts to fp32 (4 B) one sub-group (1e9 elements) of
    // the gradient partition (stage3.py _prepare_fp32_grad_for_sub_group)
    assert_eq!(
        step.components["optimizer_temporaries"],
        6 * p8.min(1_000_000_000)
    );
    // ZeRO-3 keeps the last modules of forward gathered into backward, up to
    // stage3_max_reuse_distance (1e9 elements)
    assert_eq!(step.components["gathered_parameters"], 0);
    assert_eq!(
        phase(&e, "forward").components["gathered_parameters"],
        2 * 1_000_000_000
    );
    // reduce bucket: 5e8 elements x 2 B
    assert_eq!(step.components["communication_buffers"], 1_000_000_000);
    assert!(e.fits);
}

#[test]
fn ddp_single_gpu_fp32_llama_3_2_1b() {
    // one GPU, fp32, AdamW (foreach): 4 B weights + 4 B gradients + 8 B states, plus the
    // foreach temporary exp_avg_sq_sqrt (4 B) at the step. P = 1 235 814 400 (tied embedding).
    let p = 1_235_814_400u64;
    let e = estimate(&cfg(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"precision": "fp32", "seq_len": 1024},
        "hardware": {"gpu": "h100-80gb"}
    })))
    .unwrap();
    let step = phase(&e, "optimizer_step");
    assert_eq!(step.components["weights"], 4 * p);
    assert_eq!(step.components["gradients"], 4 * p);
    assert_eq!(step.components["optimizer_states"], 8 * p);
    assert_eq!(step.components["optimizer_temporaries"], 4 * p);
    // a single GPU has no DDP buckets and no NCCL communicators
    assert_eq!(step.components["communication_buffers"], 0);
    assert_eq!(e.overheads["nccl_buffers"], 0);
    // the fused implementation has no temporaries
    let fused = estimate(&cfg(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"precision": "fp32", "seq_len": 1024, "optimizer_impl": "fused"}
    })))
    .unwrap();
    assert_eq!(
        phase(&fused, "optimizer_step").components["optimizer_temporaries"],
        0
    );
}

#[test]
fn ddp_buckets_copy_gradients_unless_bucket_view() {
    // PyTorch DDP (gradient_as_bucket_view=False) keeps flat buckets of all gradients:
    // a second 4 B x P under AMP with fp32 weights.
    let p = 1_235_814_400u64;
    let base = json!({"model": {"preset": "llama-3.2-1b"}, "hardware": {"num_gpus": 4}});
    let e = estimate(&cfg(base.clone())).unwrap();
    assert_eq!(
        phase(&e, "forward").components["communication_buffers"],
        4 * p
    );
    let mut view = base;
    view["engine"] = json!({"type": "ddp", "gradient_as_bucket_view": true});
    let e = estimate(&cfg(view)).unwrap();
    assert_eq!(phase(&e, "forward").components["communication_buffers"], 0);
}

#[test]
fn pure_bf16_is_8_bytes_per_parameter() {
    // torchtune-style pure bf16 with AdamW: 2 + 2 + 2 x 2 = 8 B/param (fused step)
    let p = 1_235_814_400u64;
    let e = estimate(&cfg(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"precision": "bf16", "optimizer_impl": "fused"}
    })))
    .unwrap();
    let s = &phase(&e, "optimizer_step").components;
    assert_eq!(
        s["weights"] + s["gradients"] + s["master_weights"] + s["optimizer_states"],
        8 * p
    );
}

#[test]
fn torchao_float8_saves_the_linear_inputs_in_bf16() {
    // torchao float8 (precision fp8 under PyTorch) casts each linear's input to float8 for
    // the matmul but saves the bf16 input for backward (float8_linear.py
    // matmul_with_hp_or_float8_args: save_for_backward(input_hp, weight_hp_t)), so its
    // layers keep what pure bf16's keep (bf16 activations, no autocast copies).
    // Llama-3.2-1B on one GPU, b 1, s 1024, no recomputation: 1 797 664 768 B of
    // activations either way; with 1 B linear inputs (torchao's tensorwise recipe before
    // 2025-01) the estimate read 1 594 241 024.
    let run = |precision: &str| {
        est(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": precision}
        }))
    };
    let (fp8, bf16) = (run("fp8"), run("bf16"));
    assert_eq!(c(&fp8, "forward", "activations"), 1_797_664_768);
    assert_eq!(c(&bf16, "forward", "activations"), 1_797_664_768);
}

#[test]
fn megatron_distributed_optimizer_is_6_plus_12_over_dp() {
    // Llama-2-7B, TP 2, PP 2, DP 4 (16 GPUs). Per TP rank and layer: q, k, v column-parallel
    // and o row-parallel 4 x 4096 x 2048 = 33 554 432; gate/up column and down row
    // 3 x 4096 x 5504 = 67 633 152; two RMSNorms 8192 (replicated) -> 101 195 776 x 16
    // layers = 1 619 132 416. Stage 0 adds the vocab-parallel embedding 16000 x 4096 =
    // 65 536 000 -> 1 684 668 416; the last stage the final norm 4096 and the LM head
    // 16000 x 4096 -> 1 684 672 512. Bytes: 2 (bf16) + 4 (fp32 main_grad) + 12/4 (master
    // and Adam states sharded over DP 4) = 9 B/param (Megatron theoretical_memory_usage.py).
    let e = estimate(&cfg(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "gradient_accumulation_steps": 8, "activation_checkpointing": "selective", "attention": "flash"},
        "parallelism": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "sequence_parallel": true},
        "engine": {"type": "megatron", "distributed_optimizer": true},
        "hardware": {"num_gpus": 16, "gpu": "h100-80gb"}
    })))
    .unwrap();
    assert_eq!(e.layout.data_parallel_size, 4);
    // stage 0 holds 2 in-flight micro-batches and is the most loaded
    assert_eq!(e.most_loaded, "pipeline stage 0 of 2");
    let n = 1_684_668_416u64;
    assert_eq!(e.params_on_gpu, n);
    let s = &phase(&e, "optimizer_step").components;
    assert_eq!(s["weights"], 2 * n);
    assert_eq!(s["gradients"], 4 * n);
    assert_eq!(s["master_weights"], (4 * n).div_ceil(4));
    assert_eq!(s["optimizer_states"], (8 * n).div_ceil(4));
}

/// Megatron-LM `theoretical_memory_usage.py` on a model that satisfies its assumptions
/// (MHA, LayerNorm, GELU MLP with ffn = 4h, no linear biases, untied embedding, dropout
/// 0.1, sequence parallelism + selective recomputation): our Megatron numbers agree with
/// its formulas up to two documented differences:
/// * it divides every parameter by TP; the LayerNorm weights and biases are in fact
///   replicated on each TP rank (we count them whole);
/// * it divides the input ids (8 B per token) by TP; each TP rank holds them whole.
#[test]
fn reproduces_megatron_theoretical_memory_usage() {
    let (h, layers, heads, ffn, v) = (2048u64, 4u64, 16u64, 8192u64, 51200u64);
    let (s, b, tp) = (2048u64, 2u64, 2u64);
    // a Falcon-family config: LayerNorm, GELU MLP without biases, fused QKV, untied
    let model = json!({
        "model_type": "falcon", "hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": heads,
        "ffn_hidden_size": ffn, "vocab_size": v, "bias": false, "parallel_attn": false,
        "new_decoder_architecture": false, "multi_query": false, "tie_word_embeddings": false,
        "hidden_dropout": 0.1, "attention_dropout": 0.1
    });
    let e = estimate(&cfg(json!({
        "model": {"hf_config": model},
        "training": {"micro_batch_size": b, "seq_len": s, "precision": "amp_bf16", "optimizer": "adam",
                     "activation_checkpointing": "selective", "attention": "eager"},
        "parallelism": {"tensor_parallel_size": tp, "sequence_parallel": true},
        "engine": {"type": "megatron"},
        "hardware": {"num_gpus": 2}
    })))
    .unwrap();

    // --- Megatron's compute_weight_and_optimizer_memory -------------------------------
    let norm_size = 2; // LayerNorm
    let layer_params = 2 * h * (ffn + norm_size) + 2 * h * h * 2; // MLP + norms + attention
    let block = layer_params * layers + norm_size * h; // + final layernorm
    let embedding = h * v;
    let most_loaded = (block + embedding) / tp + embedding / tp; // untied, pp == 1
    let megatron_weights_and_optimizer = most_loaded * 18;
    // our count keeps the 2 x L + 1 LayerNorms (weight + bias) whole on each TP rank
    let replicated_norm_params = (2 * layers + 1) * norm_size * h;
    let ours = |name: &str| phase(&e, "forward").components[name];
    let ours_states =
        ours("weights") + ours("gradients") + ours("master_weights") + ours("optimizer_states");
    assert_eq!(
        ours_states,
        megatron_weights_and_optimizer + 18 * replicated_norm_params * (tp - 1) / tp
    );

    // --- Megatron's compute_activation_memory (SP + selective) ---------------------------
    let per_layer = s * b * h * (18 + 4 * ffn / h);
    let mut act = per_layer * layers;
    act += 8 * s * b; // input ids (pp = 1 micro-batch in flight)
    act += s * b * h; // embedding dropout mask
    act += s * b * h * 4 * (1 + v / h); // inputs to the output layer and CE loss (fp32 logits)
    let megatron_activations = act / tp;
    let input_ids_difference = 8 * s * b - 8 * s * b / tp;
    assert_eq!(
        ours("activations") + ours("logits"),
        megatron_activations + input_ids_difference
    );
}

#[test]
fn every_preset_and_engine_is_consistent() {
    // the estimate's own arithmetic, for every preset under every engine: phases sum their
    // components, the peak is the largest phase of the most loaded stage, the total adds
    // the overheads, and a sharding engine never holds more model states than DDP
    let engines = [
        json!({"type": "ddp"}),
        json!({"type": "deepspeed", "zero_stage": 1}),
        json!({"type": "deepspeed", "zero_stage": 2}),
        json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu"}),
        json!({"type": "fsdp", "fsdp_version": 1, "sharding_strategy": "FULL_SHARD"}),
        json!({"type": "fsdp", "fsdp_version": 1, "sharding_strategy": "HYBRID_SHARD"}),
        json!({"type": "megatron", "distributed_optimizer": true}),
        json!({"type": "megatron_deepspeed", "zero_stage": 1}),
    ];
    let states = |e: &calc_core::Estimate| {
        let step = phase(e, "optimizer_step");
        ["weights", "gradients", "master_weights", "optimizer_states"]
            .iter()
            .map(|c| step.components[*c])
            .sum::<u64>()
    };
    for p in calc_core::presets::model_presets() {
        let mut ddp_states = 0;
        for eng in &engines {
            let e = estimate(&cfg(json!({
                "model": {"preset": p.id},
                "training": {"seq_len": 2048},
                "engine": eng,
                "hardware": {"num_gpus": 16}
            })))
            .unwrap_or_else(|err| panic!("{} {eng}: {err:?}", p.id));
            let at = format!("{} {eng}", p.id);
            for ph in &e.phases {
                assert_eq!(
                    ph.allocated_bytes,
                    ph.components.values().sum::<u64>(),
                    "{at}"
                );
            }
            let max = e.phases.iter().map(|p| p.allocated_bytes).max().unwrap();
            assert_eq!(e.peak_allocated_bytes, max, "{at}");
            assert_eq!(
                phase(&e, e.peak_phase.as_str()).allocated_bytes,
                max,
                "{at}"
            );
            assert_eq!(
                &phase(&e, e.peak_phase.as_str()).components,
                &e.components,
                "{at}"
            );
            assert_eq!(
                e.total_bytes,
                e.peak_allocated_bytes + e.overheads.values().sum::<u64>(),
                "{at}"
            );
            assert_eq!(e.fits, e.total_bytes <= e.gpu_memory_bytes, "{at}");
            assert_eq!(
                e.headroom_bytes,
                e.gpu_memory_bytes as i64 - e.total_bytes as i64,
                "{at}"
            );
            // the reported stage is the most loaded one
            let most = e
                .stages
                .iter()
                .map(|s| s.peak_allocated_bytes)
                .max()
                .unwrap();
            assert_eq!(most, e.peak_allocated_bytes, "{at}");
            if eng["type"] == "ddp" {
                ddp_states = states(&e);
            } else if eng["type"] != "megatron" && eng["type"] != "megatron_deepspeed" {
                assert!(
                    states(&e) <= ddp_states,
                    "{at}: {} > DDP {ddp_states}",
                    states(&e)
                );
            }
        }
    }
}

#[test]
fn every_example_config_computes() {
    for (name, text) in calc_core::presets::example_configs() {
        let c = Config::from_json_str(text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let e = estimate(&c).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(e.peak_allocated_bytes > 0, "{name}");
    }
}

// ------------------------------------------------------------------------------------
// properties

mod properties {
    use super::*;
    use proptest::prelude::*;

    const MODELS: &[&str] = &[
        "llama-3.2-1b",
        "llama-2-7b",
        "qwen2.5-7b",
        "mixtral-8x7b-v0.1",
        "gpt2-xl",
        "deepseek-v2-lite",
        "phi-2",
        "gemma-2-9b-it",
    ];

    fn base(model: &str, engine: Value, gpus: u64, mbs: u64, seq: u64, recompute: &str) -> Value {
        json!({
            "model": {"preset": model},
            "training": {"micro_batch_size": mbs, "seq_len": seq, "activation_checkpointing": recompute},
            "engine": engine,
            "hardware": {"num_gpus": gpus}
        })
    }

    fn peak(v: Value) -> u64 {
        estimate(&cfg(v)).unwrap().peak_allocated_bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn more_zero3_ranks_never_raise_per_gpu_bytes(m in 0..MODELS.len(), k in 0u32..6, mbs in 1u64..4, seq in 6u32..13) {
            let seq = 1u64 << seq;
            let gpus = 1u64 << k;
            let z3 = json!({"type": "deepspeed", "zero_stage": 3});
            prop_assert!(peak(base(MODELS[m], z3.clone(), gpus * 2, mbs, seq, "full")) <= peak(base(MODELS[m], z3, gpus, mbs, seq, "full")));
        }

        #[test]
        fn monotone_in_micro_batch_and_sequence(m in 0..MODELS.len(), mbs in 1u64..6, seq in 6u32..13, e in 0usize..3) {
            let seq = 1u64 << seq;
            let engine = [json!({"type": "ddp"}), json!({"type": "deepspeed", "zero_stage": 2}), json!({"type": "fsdp"})][e].clone();
            let p = peak(base(MODELS[m], engine.clone(), 4, mbs, seq, "none"));
            prop_assert!(peak(base(MODELS[m], engine.clone(), 4, mbs + 1, seq, "none")) >= p);
            prop_assert!(peak(base(MODELS[m], engine, 4, mbs, seq * 2, "none")) >= p);
        }

        #[test]
        fn zero_stage_never_raises_model_states(m in 0..MODELS.len(), gpus in 2u64..17, stage in 0u8..3) {
            let states = |st: u8| {
                let e = estimate(&cfg(base(MODELS[m], json!({"type": "deepspeed", "zero_stage": st}), gpus, 1, 512, "full"))).unwrap();
                let c = &phase(&e, "optimizer_step").components;
                c["weights"] + c["gradients"] + c["master_weights"] + c["optimizer_states"]
            };
            prop_assert!(states(stage + 1) <= states(stage));
        }

        #[test]
        fn full_recompute_never_above_none(m in 0..MODELS.len(), mbs in 1u64..5, seq in 7u32..13, attn in 0usize..3) {
            let seq = 1u64 << seq;
            let attention = ["eager", "sdpa", "flash"][attn];
            let with = |r: &str| {
                let mut v = base(MODELS[m], json!({"type": "deepspeed", "zero_stage": 3}), 8, mbs, seq, r);
                v["training"]["attention"] = json!(attention);
                peak(v)
            };
            prop_assert!(with("full") <= with("none"));
            prop_assert!(with("selective") <= with("none"));
        }
    }
}

// ------------------------------------------------------------------------------------
// bad input: field errors, never a panic

fn error_at(v: Value, field: &str) -> calc_core::FieldError {
    let errs = errors_of(v);
    errs.iter()
        .find(|e| e.field == field)
        .cloned()
        .unwrap_or_else(|| panic!("no error at {field}: {errs:?}"))
}

#[test]
fn zero_and_negative_values() {
    let e = error_at(
        json!({"training": {"micro_batch_size": 0}}),
        "training.micro_batch_size",
    );
    assert_eq!(e.value, "0");
    assert!(e.message.contains("from 1 to"), "{e}");
    let e = error_at(json!({"training": {"seq_len": -5}}), "training.seq_len");
    assert_eq!(e.value, "-5");
    assert!(e.message.contains("negative"), "{e}");
    let e = error_at(
        json!({"hardware": {"gpu_memory_gb": -80}}),
        "hardware.gpu_memory_gb",
    );
    assert!(e.message.contains("negative"), "{e}");
    error_at(
        json!({"training": {"micro_batch_size": 1.5}}),
        "training.micro_batch_size",
    );
    error_at(
        json!({"training": {"micro_batch_size": "lots"}}),
        "training.micro_batch_size",
    );
    // a whole number written with an exponent is read as one: 4e3 is 4000 tokens; one too
    // large for any count says so (not "not a whole number"; the form names the field's
    // range, core/tests/fields.rs)
    let c = cfg(json!({"model": {"preset": "llama-3.1-8b"}, "training": {"seq_len": 4e3}}));
    assert_eq!(c.training.seq_len, 4000);
    let e = error_at(json!({"training": {"seq_len": 1e30}}), "training.seq_len");
    assert_eq!(e.value, "1e+30");
    assert!(e.message.contains("is too large"), "{e}");
    // a count read by the model reader saturates and fails the field's range
    let e = error_at(
        json!({"model": {"hf_config": {"model_type": "llama", "hidden_size": 1e30}}}),
        "model.hf_config.hidden_size",
    );
    assert!(e.message.contains("from"), "{e}");
}

#[test]
fn nan_and_infinity_never_pass() {
    // JSON has no NaN; through the Rust API a NaN or infinite float is a field error
    let mut c = cfg(json!({"model": {"preset": "llama-3.1-8b"}}));
    c.overheads.allocator_reserve_fraction = f64::NAN;
    let e = calc_core::validate(&c).unwrap_err();
    assert_eq!(e[0].field, "overheads.allocator_reserve_fraction");
    c.overheads.allocator_reserve_fraction = f64::INFINITY;
    assert!(calc_core::validate(&c).is_err());
    // a number too large for JSON
    assert!(Config::from_json_str(r#"{"training": {"seq_len": 1e400}}"#).is_err());
}

#[test]
fn absurd_model_sizes() {
    // 10^20 parameters
    let e = error_at(
        json!({"model": {"num_parameters": "1e20"}}),
        "model.num_parameters",
    );
    assert!(e.message.contains("from 1 to"), "{e}");
    // an architecture with ~2 x 10^20 parameters
    let e = errors_of(
        json!({"model": {"hidden_size": 1_000_000, "num_hidden_layers": 10_000, "num_attention_heads": 1000,
                                        "intermediate_size": 16_000_000, "vocab_size": 32000}}),
    );
    assert!(
        e.iter()
            .any(|e| e.field == "model" && e.message.contains("10^15")),
        "{e:?}"
    );
    // 10^9 layers
    error_at(
        json!({"model": {"preset": "llama-2-7b", "num_hidden_layers": 1_000_000_000u64}}),
        "model.num_hidden_layers",
    );
}

#[test]
fn heads_must_divide_hidden_size() {
    let e = error_at(
        json!({"model": {"hidden_size": 4000, "num_hidden_layers": 2, "num_attention_heads": 3, "vocab_size": 1000}}),
        "model.num_attention_heads",
    );
    assert!(e.message.contains("divide hidden_size"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-3.1-8b", "num_key_value_heads": 5}}),
        "model.num_key_value_heads",
    );
    assert!(e.message.contains("divide num_attention_heads"), "{e}");
}

#[test]
fn unknown_keys_are_named() {
    let e = error_at(
        json!({"training": {"micro_batch": 4}}),
        "training.micro_batch",
    );
    assert!(e.message.contains("unknown key `micro_batch`"), "{e}");
    let e = error_at(json!({"trainning": {}}), "trainning");
    assert!(e.message.contains("unknown key"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b", "hidden_sise": 4096}}),
        "model.hidden_sise",
    );
    assert!(e.message.contains("unknown key"), "{e}");
    let e = error_at(
        json!({"engine": {"type": "deepspeed", "zero_stag": 3}}),
        "engine.zero_stag",
    );
    assert!(e.message.contains("unknown key"), "{e}");
    let e = error_at(json!({"model": {"preset": "llama-9"}}), "model.preset");
    assert!(e.message.contains("llama-2-7b"), "{e}");
}

#[test]
fn parallel_layout_errors() {
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "parallelism": {"data_parallel_size": 3}, "hardware": {"num_gpus": 8}}),
        "parallelism.data_parallel_size",
    );
    assert!(e.message.contains("must equal hardware.num_gpus"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-3.1-8b"}, "parallelism": {"tensor_parallel_size": 16}, "engine": {"type": "megatron"}}),
        "parallelism.tensor_parallel_size",
    );
    assert!(e.message.contains("num_key_value_heads"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "parallelism": {"pipeline_parallel_size": 5}, "engine": {"type": "megatron"}}),
        "parallelism.pipeline_parallel_size",
    );
    assert!(e.message.contains("divide num_hidden_layers"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "mixtral-8x7b-v0.1"}, "parallelism": {"expert_parallel_size": 3}, "engine": {"type": "megatron"}, "hardware": {"num_gpus": 6}}),
        "parallelism.expert_parallel_size",
    );
    assert!(e.message.contains("experts"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "parallelism": {"tensor_parallel_size": 2}, "engine": {"type": "deepspeed", "zero_stage": 3}, "hardware": {"num_gpus": 8}}),
        "parallelism.tensor_parallel_size",
    );
    assert!(e.message.contains("ZeRO-3"), "{e}");
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "parallelism": {"tensor_parallel_size": 2}, "hardware": {"num_gpus": 8}}),
        "parallelism.tensor_parallel_size",
    );
    assert!(e.message.contains("ddp"), "{e}");
}

#[test]
fn out_of_range_parallel_sizes_never_overflow_the_layout_checks() {
    // found by core/tests/properties.rs: an expert-tensor parallel size past the bounds
    // (2^62) times the expert parallel size (4) was multiplied in the MoE folding check
    // (2^64: a panic in a debug build, a wrapped product in release); now a range error
    let e = error_at(
        json!({"model": {"preset": "deepseek-v2-lite"}, "engine": {"type": "megatron"},
               "parallelism": {"expert_parallel_size": 4, "expert_tensor_parallel_size": 1u64 << 62}}),
        "parallelism.expert_tensor_parallel_size",
    );
    assert!(e.message.contains("1 to 1048576"), "{e}");
    // and a virtual pipeline size of 2^63 times the pipeline size (2) in the layer check
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "engine": {"type": "megatron"}, "hardware": {"num_gpus": 2},
               "parallelism": {"pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 1u64 << 63}}),
        "parallelism.virtual_pipeline_parallel_size",
    );
    assert!(e.message.contains("from 1 to 10000"), "{e}");
    // and first + last stage layers of 2^63 each in the uneven split (found reading the
    // bounds table: the stage sizes had no range of their own)
    let e = error_at(
        json!({"model": {"preset": "llama-2-7b"}, "engine": {"type": "megatron"}, "hardware": {"num_gpus": 4},
               "parallelism": {"pipeline_parallel_size": 4, "first_pipeline_stage_layers": 1u64 << 63,
                               "last_pipeline_stage_layers": 1u64 << 63}}),
        "parallelism.first_pipeline_stage_layers",
    );
    assert!(e.message.contains("from 1 to 10000"), "{e}");
}

#[test]
fn an_override_of_a_wrapped_model_is_reported_where_it_was_given() {
    // found by the properties once the generator overrode model keys: the section's keys
    // go into LLaVA's text_config, and the error named model.text_config.num_attention_heads
    let e = error_at(
        json!({"model": {"preset": "llava-1.5-7b", "num_attention_heads": 8192}}),
        "model.num_attention_heads",
    );
    assert!(e.message.contains("must divide hidden_size (4096)"), "{e}");
}

#[test]
fn out_of_range_model_keys_never_overflow_the_parameter_counts() {
    // found reading the bounds table: keys without a range overflowed while the model was
    // read (a panic in a debug build, a wrapped count in release); each is now a range
    // error at the key (limits::MODEL_KEYS)
    let e = error_at(
        json!({"model": {"model_type": "llava", "vision_config": {"num_channels": u64::MAX}}}),
        "model.vision_config.num_channels",
    );
    assert!(e.message.contains("from 1 to 32"), "{e}");
    // MLA: qk_nope_head_dim + qk_rope_head_dim, reported once each and not as a head_dim
    let errors = errors_of(json!({"model": {"model_type": "deepseek_v3",
        "qk_nope_head_dim": u64::MAX, "qk_rope_head_dim": u64::MAX}}));
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["model.qk_nope_head_dim", "model.qk_rope_head_dim"]);
    assert!(errors[0].message.contains("from 1 to 65536"), "{errors:?}");
}

#[test]
fn invalid_json_is_a_document_error() {
    let e = Config::from_json_str("{\"training\": ").unwrap_err();
    assert_eq!(e[0].field, "");
    assert!(e[0].message.contains("invalid JSON"));
    let e = Config::from_json_str("[1, 2]").unwrap_err();
    assert!(e[0].message.contains("JSON object"));
}
