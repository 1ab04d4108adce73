//! One hand-derived expectation per engine, regime, optimizer and parallelism term.
//!
//! Model facts used below (from the preset config files, counted exactly):
//! * Llama-3.2-1B: h 2048, 16 layers, 32 heads / 8 KV heads of 64, I 8192, V 128 256, tied.
//!   Per layer: q 2048x2048 = 4 194 304, k and v 512x2048 = 1 048 576 each, o 4 194 304,
//!   gate/up/down 2048x8192 = 16 777 216 each, two norms 2048 -> 60 821 504.
//!   Embedding 262 668 288, final norm 2048. P = 1 235 814 400.
//! * Llama-2-7B: P = 6 738 415 616, 32 layers of 202 383 360, embedding and LM head
//!   32000 x 4096 = 131 072 000 each.
//! * Mixtral-8x7B: per layer attention 41 943 040, router 8 x 4096 = 32 768, norms 8192,
//!   8 experts x 3 x 4096 x 14336 = 1 409 286 144; embedding and LM head 131 072 000 each.

mod common;
use common::*;

use calc_core::{Config, Estimate, estimate};
use serde_json::{Value, json};

const P_1B: u64 = 1_235_814_400;
const LAYER_1B: u64 = 60_821_504;
const EMBED_1B: u64 = 262_668_288;
const P_7B: u64 = 6_738_415_616;

// ---------------------------------------------------------------------------- FSDP

fn fsdp(strategy: &str, extra: Value) -> Estimate {
    let mut v = json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"seq_len": 1024, "optimizer_impl": "fused"},
        "engine": {"type": "fsdp", "fsdp_version": 1, "sharding_strategy": strategy},
        "hardware": {"num_gpus": 8}
    });
    if let Value::Object(m) = extra {
        for (k, x) in m {
            v["hardware"][k] = x;
        }
    }
    est(v)
}

#[test]
fn fsdp_full_shard() {
    // FULL_SHARD over 8: fp32 shards of weights and gradients (AMP keeps the FlatParameter
    // in fp32) 4P/8 each, AdamW states 8P/8.
    let e = fsdp("FULL_SHARD", json!({}));
    assert_eq!(c(&e, "optimizer_step", "weights"), (4 * P_1B).div_ceil(8));
    assert_eq!(c(&e, "optimizer_step", "gradients"), (4 * P_1B).div_ceil(8));
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), P_1B);
    // unsharded in bf16: the root unit (embedding 262 668 288 + final norm 2048) stays
    // gathered, plus the current and the prefetched layer: 2 x (262 670 336 + 2 x 60 821 504)
    let gathered = 2 * (EMBED_1B + 2048 + 2 * LAYER_1B);
    assert_eq!(c(&e, "forward", "gathered_parameters"), gathered); // 768 626 688
    // backward adds the unsharded bf16 gradients of the unit being reduce-scattered
    assert_eq!(
        c(&e, "backward", "gathered_parameters"),
        gathered + 2 * LAYER_1B
    );
}

#[test]
fn fsdp_other_strategies() {
    // SHARD_GRAD_OP keeps every unit unsharded between forward and backward: 2 B x P
    assert_eq!(
        c(
            &fsdp("SHARD_GRAD_OP", json!({})),
            "forward",
            "gathered_parameters"
        ),
        2 * P_1B
    );
    // NO_SHARD: whole fp32 weights, nothing gathered
    let e = fsdp("NO_SHARD", json!({}));
    assert_eq!(c(&e, "forward", "weights"), 4 * P_1B);
    assert_eq!(c(&e, "forward", "gathered_parameters"), 0);
    // HYBRID_SHARD with 4 GPUs per node: shards over the 4 GPUs of a node
    let e = fsdp("HYBRID_SHARD", json!({"gpus_per_node": 4}));
    assert_eq!(c(&e, "optimizer_step", "weights"), P_1B); // 4 B x P / 4
}

#[test]
fn fsdp2_shards_every_parameter_on_dim0_with_padding() {
    // Mixtral-8x7B under FSDP2 on 64 GPUs. torch.chunk gives each rank ceil(dim0 / 64) rows of
    // every parameter, padded on every rank (_fsdp_param.py _init_sharded_param). Per layer:
    // q, o 4096 rows -> 64 each; k, v 1024 -> 16 each; the router 8 -> 1 (of 4096 columns);
    // two norms of 4096 -> 64 elements each; the fused experts [8, 14336, 4096] (gate, up,
    // down) -> ceil(8 / 64) = 1 expert row each: 3 x 14336 x 4096 = 176 160 768, 8x the even
    // share. Per layer (64 + 16 + 16 + 64 + 1) x 4096 + 128 + 176 160 768 = 176 820 352; the
    // embedding and LM head 32000 -> 500 rows each, the final norm 64:
    // 32 x 176 820 352 + 2 x 500 x 4096 + 64 = 5 662 347 328 elements per GPU.
    let e = est(json!({
        "model": {"preset": "mixtral-8x7b-v0.1"},
        "training": {"seq_len": 1024, "activation_checkpointing": "full", "optimizer_impl": "fused"},
        "engine": {"type": "fsdp"},
        "hardware": {"num_gpus": 64}
    }));
    let shard = 5_662_347_328u64;
    // AMP: fp32 shards and sharded gradients, two fp32 AdamW states per element
    assert_eq!(c(&e, "optimizer_step", "weights"), 4 * shard);
    assert_eq!(c(&e, "optimizer_step", "gradients"), 4 * shard);
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), 8 * shard);
    // end of forward: the root unsharded (64 x (2 x 500 x 4096 + 64) = 262 148 096) and the
    // last layer's all-gather buffer (64 x 176 820 352 = 11 316 502 528, the experts padded
    // to 64 rows), both bf16 (MixedPrecisionPolicy param_dtype)
    assert_eq!(
        c(&e, "forward", "gathered_parameters"),
        2 * (262_148_096 + 11_316_502_528)
    );
    // the padding is reported with what to change
    assert!(
        e.warnings
            .iter()
            .any(|w| w.contains("ceil(8 / 64) = 1 expert rows")
                && w.contains("expert_parallel_size")),
        "{:?}",
        e.warnings
    );
    // expert parallelism 8 splits the experts whole (one per GPU), but FSDP2 then shards
    // each [1, 14336, 4096] tensor over the 64 / 8 = 8 expert-data-parallel ranks: still
    // one whole row per rank, the same bytes, and the same warning
    let ep = |gpus: u64| {
        est(json!({
            "model": {"preset": "mixtral-8x7b-v0.1"},
            "training": {"seq_len": 1024, "activation_checkpointing": "full", "optimizer_impl": "fused"},
            "parallelism": {"expert_parallel_size": 8},
            "engine": {"type": "fsdp"},
            "hardware": {"num_gpus": gpus}
        }))
    };
    let e64 = ep(64);
    assert_eq!(c(&e64, "optimizer_step", "weights"), 4 * shard);
    assert!(e64.warnings.iter().any(|w| w.contains("expert rows")));
    // on 8 GPUs (one expert-data-parallel rank) each GPU holds its expert whole and
    // ceil(rows / 8) of every other tensor (q, o 512 rows; k, v 128; the router 1; norms
    // 512 each; embedding and head 4000), and no padding to warn about
    let e8 = ep(8);
    let dense8 = 32 * ((512 + 128 + 128 + 512 + 1) * 4096 + 2 * 512) + 2 * 4000 * 4096 + 512;
    assert_eq!(
        c(&e8, "optimizer_step", "weights"),
        4 * (dense8 + 32 * 3 * 14336 * 4096)
    );
    assert!(!e8.warnings.iter().any(|w| w.contains("expert rows")));
}

#[test]
fn fsdp2_pipeline_stages_accumulate_unsharded_gradients() {
    // torchtitan's PP with FSDP2: every micro-batch but the last runs without gradient sync,
    // so the stage's gradients accumulate unsharded in reduce_dtype (fp32), beside its
    // unsharded bf16 parameters (reshard_after_forward defaults to false under PP).
    // Llama-3.2-1B on 8 GPUs as PP 2 x DP 4; the last stage is the most loaded: 8 layers
    // (486 572 032), the final norm (2 048) and the tied embedding as output layer
    // (262 668 288): 749 242 368 elements, all rows divisible by 4 (no padding).
    let e = est(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"seq_len": 1024, "gradient_accumulation_steps": 4},
        "parallelism": {"pipeline_parallel_size": 2},
        "engine": {"type": "fsdp"},
        "hardware": {"num_gpus": 8}
    }));
    let stage = 749_242_368u64;
    assert_eq!(c(&e, "optimizer_step", "weights"), 4 * stage / 4);
    // bf16: the root (262 670 336) and every layer kept after forward (486 572 032) plus
    // the last all-gather buffer (one layer, 60 821 504), and fp32 accumulated gradients
    assert_eq!(
        c(&e, "backward", "gathered_parameters"),
        2 * (262_670_336 + 8 * LAYER_1B + LAYER_1B) + 4 * stage
    );
}

#[test]
fn fsdp2_float8_all_gather_holds_linear_weights_in_one_byte() {
    // torchao's float8 all-gather (engine.float8_all_gather, torchao fsdp_utils.py
    // fsdp_pre_all_gather): the float8 linears' weight shards are cast to float8 before
    // FSDP2 gathers them, so the gathered and kept-unsharded weights take 1 B, not
    // param_dtype's 2. The case of the test above under precision fp8: Llama-3.2-1B, PP 2 x
    // DP 4, every layer kept unsharded after forward (reshard_after_forward false under PP).
    // Per layer the linear weights are q 4 194 304 + k, v 1 048 576 each + o 4 194 304 +
    // gate, up, down 16 777 216 each = 60 817 408 (every dimension divisible by 16), the
    // two norms 4 096 stay bf16; the root (tied embedding 262 668 288 + final norm 2 048)
    // has no float8 linear.
    let run = |preset: &str, float8_all_gather: bool| {
        est(json!({
            "model": {"preset": preset},
            "training": {"seq_len": 1024, "gradient_accumulation_steps": 4, "precision": "fp8"},
            "parallelism": {"pipeline_parallel_size": 2},
            "engine": {"type": "fsdp", "float8_all_gather": float8_all_gather},
            "hardware": {"num_gpus": 8}
        }))
    };
    let (bf16, float8) = (run("llama-3.2-1b", false), run("llama-3.2-1b", true));
    let stage = 749_242_368u64;
    let linear = 60_817_408u64;
    // bf16 gathers: the root, 8 kept layers and the prefetched layer's all-gather buffer,
    // and the fp32 gradients accumulated over micro-batches (as in the test above)
    assert_eq!(
        c(&bf16, "backward", "gathered_parameters"),
        2 * (262_670_336 + 9 * LAYER_1B) + 4 * stage
    );
    // float8: the 9 layers' linear weights in 1 B, their norms and the root in 2 B; the
    // gradients stay fp32 (Float8TrainingTensor keeps param_dtype as its dtype)
    assert_eq!(
        c(&float8, "backward", "gathered_parameters"),
        2 * (262_670_336 + 9 * (LAYER_1B - linear)) + 9 * linear + 4 * stage
    );
    // the sharded fp32 weights are the same
    assert_eq!(
        c(&float8, "optimizer_step", "weights"),
        c(&bf16, "optimizer_step", "weights")
    );
    // GPT-2's projections are transformers' Conv1D, which torchao does not convert (it
    // swaps nn.Linear modules): the option changes nothing there
    assert_eq!(
        c(&run("gpt2", true), "backward", "gathered_parameters"),
        c(&run("gpt2", false), "backward", "gathered_parameters")
    );
    // only FSDP2 under fp8 has it
    for (engine, precision) in [
        (
            json!({"type": "fsdp", "float8_all_gather": true}),
            "amp_bf16",
        ),
        (
            json!({"type": "fsdp", "fsdp_version": 1, "float8_all_gather": true}),
            "fp8",
        ),
    ] {
        let errs = errors_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"precision": precision},
            "engine": engine,
            "hardware": {"num_gpus": 8}
        }));
        assert!(
            errs.iter().any(|e| e.field == "engine.float8_all_gather"),
            "{errs:?}"
        );
    }
}

#[test]
fn pipeline_schedules_keep_sends_and_losses_of_in_flight_micro_batches() {
    // Llama-3.2-1B, PP 2 x DP 4, 4 micro-batches of 1 x 1024 tokens, FSDP2 (AMP bf16 ->
    // param_dtype bf16: activations and the residual stream in 2 B). On the last stage
    // 1F1B holds one micro-batch; GPipe holds all four, and torch.distributed.pipelining
    // also keeps (schedules.py ScheduleGPipe: backward sends waited after the last
    // micro-batch; _maybe_compute_loss right after each forward):
    // * 3 input gradients awaiting their sends: 3 x 1024 x 2048 x 2 B = 12 582 912
    // * 3 other micro-batches' logits (bf16) and fp32 log-softmax:
    //   3 x 1024 x 128 256 x (2 + 4) B = 2 364 014 592
    let run = |schedule: &str| {
        est(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"seq_len": 1024, "gradient_accumulation_steps": 4},
            "parallelism": {"pipeline_parallel_size": 2, "pipeline_schedule": schedule},
            "engine": {"type": "fsdp"},
            "hardware": {"num_gpus": 8}
        }))
    };
    let (gpipe, one) = (run("gpipe"), run("1f1b"));
    let per = c(&one, "forward", "activations");
    assert_eq!(
        c(&gpipe, "forward", "activations"),
        4 * per + 12_582_912 + 2_364_014_592
    );
}

#[test]
fn megatron_moe_parallel_folding() {
    // Mixtral-8x7B on 64 GPUs, TP 2 (SP), EP 8, expert TP 1, distributed optimizer.
    // Dense per GPU (TP 2): per layer q 8 388 608, k and v 2 097 152 each, o 8 388 608,
    // router 32 768 (replicated), norms 8 192 = 21 012 480, x 32 = 672 399 360; embedding
    // and head 16 000 x 4096 = 65 536 000 each, final norm 4096: 803 475 456.
    // Experts: 8 / EP 8 = 1 expert per GPU, whole (expert TP 1): 3 x 14336 x 4096 x 32 layers
    // = 5 637 144 576. bf16 weights 2 B x 6 440 620 032 = 12 881 240 064.
    let run = |gpus: u64, tp: u64| {
        est(json!({
            "model": {"preset": "mixtral-8x7b-v0.1"},
            "training": {"seq_len": 4096, "activation_checkpointing": "full"},
            "parallelism": {"tensor_parallel_size": tp, "expert_parallel_size": 8,
                            "expert_tensor_parallel_size": 1, "sequence_parallel": true},
            "engine": {"type": "megatron", "distributed_optimizer": true},
            "hardware": {"num_gpus": gpus}
        }))
    };
    let e = run(64, 2);
    assert_eq!(c(&e, "optimizer_step", "weights"), 12_881_240_064);
    // master weights: dense over DP 32, experts over the expert-data-parallel group
    // (parallel_state.py: TP x CP x DP = ETP x EP x EDP -> EDP = 2 x 32 / 8 = 8):
    // 4 B x (803 475 456 / 32 + 5 637 144 576 / 8) = 2 919 006 720
    assert_eq!(c(&e, "optimizer_step", "master_weights"), 2_919_006_720);
    // expert parallelism larger than data parallelism folds into the TP ranks: 16 GPUs as
    // TP 8 x DP 2 with EP 8 (ETP 1) is a valid Megatron-Core layout (EDP = 8 x 2 / 8 = 2)
    let f = run(16, 8);
    assert!(f.peak_allocated_bytes > 0);
    // a layout whose expert ranks do not fold is refused, naming the field
    let bad = calc_core::Config::from_value(json!({
        "model": {"preset": "mixtral-8x7b-v0.1"},
        "parallelism": {"tensor_parallel_size": 2, "expert_parallel_size": 8,
                        "expert_tensor_parallel_size": 4},
        "engine": {"type": "megatron"},
        "hardware": {"num_gpus": 8}
    }))
    .unwrap();
    let errs = calc_core::estimate(&bad).unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.field == "parallelism.expert_parallel_size"),
        "{errs:?}"
    );
}

#[test]
fn megatron_trains_deepseek_v3_mtp_on_the_last_stage() {
    // DeepSeek-V3's config.json has num_nextn_predict_layers 1; Megatron-Core trains the MTP
    // module on the last stage (multi_token_prediction.py): a decoder layer of the next
    // layer's kind (MoE), eh_proj 2h x h, enorm / hnorm / final layernorm, and the
    // embedding the last stage does not otherwise hold. h = 7168, TP 1, EP 64:
    // MLA attention 7168 x 1536 + 1536 + 1536 x 24576 + 7168 x 576 + 512 + 512 x 32768
    // + 16384 x 7168 = 187 107 328; MoE router 256 x 7168, shared expert 3 x 7168 x 2048,
    // 256 / 64 = 4 routed experts 4 x 3 x 7168 x 2048, 2 norms: 222 050 304;
    // eh_proj 102 760 448, 3 norms 21 504; embedding 129 280 x 7168 = 926 679 040.
    // Together 1 438 618 624 more parameters on the last stage.
    let run = |mtp: u64| {
        est(json!({
            "model": {"preset": "deepseek-v3", "num_nextn_predict_layers": mtp},
            "training": {"seq_len": 4096, "gradient_accumulation_steps": 16, "activation_checkpointing": "full"},
            "parallelism": {"pipeline_parallel_size": 16, "expert_parallel_size": 64,
                            "first_pipeline_stage_layers": 4, "last_pipeline_stage_layers": 1},
            "engine": {"type": "megatron", "distributed_optimizer": true},
            "hardware": {"num_gpus": 1024}
        }))
    };
    let last = |e: &Estimate| e.stages.last().unwrap().params_on_gpu;
    assert_eq!(last(&run(1)) - last(&run(0)), 1_438_618_624);
    // transformers drops the MTP layers: other engines leave them out
    let fsdp = |mtp: u64| {
        est(json!({
            "model": {"preset": "deepseek-v3", "num_nextn_predict_layers": mtp},
            "training": {"seq_len": 4096, "activation_checkpointing": "full"},
            "engine": {"type": "fsdp"},
            "hardware": {"num_gpus": 256}
        }))
    };
    assert_eq!(fsdp(1).peak_allocated_bytes, fsdp(0).peak_allocated_bytes);
}

// ---------------------------------------------------------------------------- ZeRO

fn zero(engine: Value, extra_training: Value) -> Estimate {
    let mut v = json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"seq_len": 1024, "activation_checkpointing": "full"},
        "engine": engine,
        "hardware": {"num_gpus": 8}
    });
    if let Value::Object(m) = extra_training {
        for (k, x) in m {
            v["training"][k] = x;
        }
    }
    est(v)
}

#[test]
fn zero_stages_0_1_2() {
    let p8 = P_7B / 8;
    // ZeRO-0 with bf16: BF16_Optimizer accumulates gradients in a full fp32 buffer
    // (DeepSpeed grad_accum_dtype default for bf16 without ZeRO): grads 2 + 4 B/param
    let e = zero(json!({"type": "deepspeed", "zero_stage": 0}), json!({}));
    assert_eq!(c(&e, "optimizer_step", "gradients"), 6 * P_7B);
    assert_eq!(c(&e, "optimizer_step", "master_weights"), 4 * P_7B);
    // ZeRO-1 shards master weights and states; weights whole. Its gradients stay whole
    // through backward (partition_gradients=False) and the step holds this rank's partition
    // (averaged_gradients), 2 B x P/8
    let e = zero(json!({"type": "deepspeed", "zero_stage": 1}), json!({}));
    assert_eq!(c(&e, "optimizer_step", "weights"), 2 * P_7B);
    assert_eq!(c(&e, "optimizer_step", "gradients"), 2 * p8);
    assert_eq!(c(&e, "optimizer_step", "master_weights"), 4 * p8);
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), 8 * p8);
    // the step flattens the partition (cat, 2 B) and upcasts it to fp32 (4 B:
    // stage_1_and_2.py single_grad_partition); DeepSpeed's FusedAdam needs no temporaries
    assert_eq!(c(&e, "optimizer_step", "optimizer_temporaries"), 6 * p8);
    assert_eq!(c(&e, "optimizer_step", "communication_buffers"), 0);
    // backward peaks in the epilogue (full recomputation leaves little activation): the
    // whole gradients, the 5e8-element bf16 reduce bucket (stage_1_and_2.py setup_buckets)
    // and the partition reduce_gradients allocates (2 B x P/8)
    assert_eq!(c(&e, "backward", "gradients"), 2 * P_7B);
    assert_eq!(
        c(&e, "backward", "communication_buffers"),
        1_000_000_000 + 2 * p8
    );
    // ZeRO-2 shards gradients too (grads_in_partition); the bucket at the end of backward
    let e = zero(json!({"type": "deepspeed", "zero_stage": 2}), json!({}));
    assert_eq!(c(&e, "optimizer_step", "gradients"), 2 * p8);
    assert_eq!(c(&e, "optimizer_step", "communication_buffers"), 0);
    assert_eq!(c(&e, "backward", "communication_buffers"), 1_000_000_000);
    // overlap_comm double-buffers it: 2 x 5e8 x 2 B
    let e = zero(
        json!({"type": "deepspeed", "zero_stage": 2, "overlap_comm": true}),
        json!({}),
    );
    assert_eq!(c(&e, "backward", "communication_buffers"), 2_000_000_000);
}

#[test]
fn zero_offload_cpu_and_nvme() {
    // ZeRO-3 + optimizer offload to CPU: master weights, states and fp32 gradients leave the
    // GPU; CPU per node = 16 B x P x 1.5 on one node (estimate_zero3_model_states_mem_needs,
    // zero_init) = 24 x 6 738 415 616
    let e = zero(
        json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu"}),
        json!({}),
    );
    assert_eq!(c(&e, "optimizer_step", "master_weights"), 0);
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), 0);
    assert_eq!(c(&e, "optimizer_step", "gradients"), 0);
    assert_eq!(e.cpu_memory_bytes, 24 * P_7B);
    assert_eq!(e.nvme_bytes, 0);
    // + parameter offload: only the persistent small tensors (65 norms of 4096) stay on the
    // GPU; CPU = 18 B x P x 1.5 = 27 P
    let e = zero(
        json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu"}),
        json!({}),
    );
    assert_eq!(c(&e, "optimizer_step", "weights"), 2 * 65 * 4096);
    assert_eq!(e.cpu_memory_bytes, 27 * P_7B);
    // NVMe: 16 B x P on NVMe; CPU holds 4 fp32 swap buffers of one sub-group per GPU
    // (partition P/8 = 842 301 952 < sub_group_size 1e9): 8 GPUs x 16 B x P/8
    let e = zero(
        json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "nvme"}),
        json!({}),
    );
    assert_eq!(e.nvme_bytes, 16 * P_7B);
    assert_eq!(e.cpu_memory_bytes, 8 * 16 * (P_7B / 8));
}

#[test]
fn zero3_sub_groups_hold_whole_parameters() {
    // Llama-3.1-8B (8 030 261 248 params, every tensor divisible by 8) under ZeRO-3 on 8
    // GPUs: a partition of 1 003 782 656 elements, more than sub_group_size 1e9. stage3.py
    // _create_fp16_sub_groups adds whole parameters' partitions until a sub-group holds
    // 1e9 or more: the embedding (128 256 x 4096 / 8 = 65 667 072) and the 32 layers
    // (32 x 218 112 000 / 8 = 872 448 000) and the final norm (512) are 938 115 584, so
    // the LM head (65 667 072) closes the only sub-group: the whole partition, not 1e9.
    // The step's flattened bf16 gradient and its fp32 copy are 2 + 4 B per element of it
    let llama8 = |sub_group_size: u64| {
        est(json!({
            "model": {"preset": "llama-3.1-8b"},
            "training": {"seq_len": 1024, "activation_checkpointing": "full"},
            "engine": {"type": "deepspeed", "zero_stage": 3, "sub_group_size": sub_group_size},
            "hardware": {"num_gpus": 8}
        }))
    };
    let partition = 1_003_782_656u64;
    assert_eq!(
        c(
            &llama8(1_000_000_000),
            "optimizer_step",
            "optimizer_temporaries"
        ),
        6 * partition
    );
    // sub_group_size 0: every parameter a sub-group of its own, the largest the embedding's
    // (or the LM head's) partition
    assert_eq!(
        c(&llama8(0), "optimizer_step", "optimizer_temporaries"),
        6 * 65_667_072
    );
    // a sub-group size above the partition: one sub-group
    assert_eq!(
        c(
            &llama8(2_000_000_000),
            "optimizer_step",
            "optimizer_temporaries"
        ),
        6 * partition
    );
    // 5e8: the embedding and 15 layers are 474 627 072; layer 15's norms (2 x 512, first in
    // the inventory's order), q (2 097 152), k and v (524 288 each), o (2 097 152), gate,
    // up and down (7 340 032 each) bring it to 501 891 072 >= 5e8, which closes the first
    // sub-group; the second, the rest to the LM head, is the largest: 501 891 584
    assert_eq!(
        c(
            &llama8(500_000_000),
            "optimizer_step",
            "optimizer_temporaries"
        ),
        6 * (partition - 501_891_072)
    );
}

// ---------------------------------------------------------------------------- optimizers

fn single_gpu_1b(training: Value) -> Estimate {
    let mut t = json!({"seq_len": 512, "optimizer_impl": "fused"});
    if let Value::Object(m) = training {
        for (k, x) in m {
            t[k] = x;
        }
    }
    est(json!({"model": {"preset": "llama-3.2-1b"}, "training": t}))
}

#[test]
fn adafactor_is_factored_by_matrix_shape() {
    // Adafactor keeps rows + cols fp32 values per matrix and a full vector per norm:
    // per layer q 4096, k 2560, v 2560, o 4096, gate/up/down 10 240 each, norms 2 x 2048
    // = 48 128; x 16 = 770 048; embedding 128 256 + 2048; final norm 2048 -> 902 400 x 4 B
    let e = single_gpu_1b(json!({"optimizer": "adafactor"}));
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), 902_400 * 4);
}

#[test]
fn adamw_8bit_blockwise() {
    // bitsandbytes AdamW8bit: 2 x n bytes + 2 x ceil(n/256) fp32 absmax per matrix; the
    // 2048-element norms (< min_8bit_size 4096) keep two fp32 states (16 384 B).
    // per layer: q, o 8 519 680 each; k, v 2 129 920 each; gate, up, down 34 078 720 each;
    // norms 32 768 -> 123 568 128 x 16 = 1 977 090 048; embedding 533 544 960; final norm
    // 16 384 -> 2 510 651 392
    let e = single_gpu_1b(json!({"optimizer": "adamw_8bit"}));
    assert_eq!(c(&e, "optimizer_step", "optimizer_states"), 2_510_651_392);
}

#[test]
fn sgd_momentum_and_lion_keep_one_state() {
    // one fp32 state per parameter under AMP
    for opt in ["sgd_momentum", "lion"] {
        assert_eq!(
            c(
                &single_gpu_1b(json!({"optimizer": opt})),
                "optimizer_step",
                "optimizer_states"
            ),
            4 * P_1B,
            "{opt}"
        );
    }
    assert_eq!(
        c(
            &single_gpu_1b(json!({"optimizer": "sgd"})),
            "optimizer_step",
            "optimizer_states"
        ),
        0
    );
    // AMSGrad keeps three
    assert_eq!(
        c(
            &single_gpu_1b(json!({"optimizer": "amsgrad"})),
            "optimizer_step",
            "optimizer_states"
        ),
        12 * P_1B
    );
}

#[test]
fn optimizer_in_backward_frees_gradients() {
    // pure bf16 with the step in backward: only the largest tensor's gradient exists,
    // the 262 668 288-element embedding in bf16
    let e = single_gpu_1b(json!({"precision": "bf16", "optimizer_in_backward": true}));
    assert_eq!(c(&e, "optimizer_step", "gradients"), 2 * EMBED_1B);
}

#[test]
fn foreach_temporaries_of_adamw() {
    // torch.optim.AdamW(foreach): exp_avg_sq_sqrt for every parameter, fp32 under AMP
    let e = single_gpu_1b(json!({"optimizer_impl": "foreach"}));
    assert_eq!(c(&e, "optimizer_step", "optimizer_temporaries"), 4 * P_1B);
    // for_loop: one tensor at a time, the largest (the embedding)
    let e = single_gpu_1b(json!({"optimizer_impl": "for_loop"}));
    assert_eq!(
        c(&e, "optimizer_step", "optimizer_temporaries"),
        4 * EMBED_1B
    );
}

// ---------------------------------------------------------------------------- regimes

fn megatron_7b(precision: &str) -> Estimate {
    est(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"seq_len": 1024, "precision": precision, "activation_checkpointing": "full"},
        "engine": {"type": "megatron"},
        "hardware": {"gpu": "h200-141gb"}
    }))
}

#[test]
fn megatron_regimes() {
    // bf16: 2 + 4 (main_grad) + 4 + 8 = 18 B/param
    let e = megatron_7b("amp_bf16");
    let s = &phase(&e, "optimizer_step").components;
    assert_eq!(
        s["weights"] + s["gradients"] + s["master_weights"] + s["optimizer_states"],
        18 * P_7B
    );
    // fp16: main_grad stays in fp16 -> 16 B/param
    let e = megatron_7b("amp_fp16");
    assert_eq!(c(&e, "optimizer_step", "gradients"), 2 * P_7B);
    // fp8 (Transformer Engine): bf16 weights plus a 1 B fp8 copy of every linear weight:
    // linear = 32 x (4 x 4096^2 + 3 x 4096 x 11008) + LM head 32000 x 4096 = 6 607 077 376
    let e = megatron_7b("fp8");
    assert_eq!(c(&e, "optimizer_step", "weights"), 2 * P_7B + 6_607_077_376);
    assert_eq!(c(&e, "optimizer_step", "gradients"), 4 * P_7B);
}

#[test]
fn autocast_keeps_half_copies_of_linear_weights() {
    // PyTorch AMP on a single GPU (fp32 weights): the bf16 casts of every linear weight are
    // saved for backward: 2 B x linear elements. Llama-3.2-1B is tied: its LM head is
    // nn.Linear over the embedding matrix, so autocast casts that too (128 256 x 2048):
    // 16 layers x (10 485 760 + 50 331 648) + 262 668 288
    let e = single_gpu_1b(json!({}));
    assert_eq!(
        c(&e, "forward", "autocast_weight_copies"),
        2 * (16 * (10_485_760 + 50_331_648) + 262_668_288)
    );
    // pure bf16 has no copies
    assert_eq!(
        c(
            &single_gpu_1b(json!({"precision": "bf16"})),
            "forward",
            "autocast_weight_copies"
        ),
        0
    );
}

// ---------------------------------------------------------------------------- parallelism

#[test]
fn context_parallel_halves_sequence_activations() {
    let run = |cp: u64| {
        est(json!({
            "model": {"preset": "llama-2-7b"},
            "training": {"seq_len": 4096, "attention": "flash"},
            "parallelism": {"context_parallel_size": cp},
            "engine": {"type": "megatron"},
            "hardware": {"num_gpus": cp, "gpu": "h200-141gb"}
        }))
    };
    // every saved tensor is linear in the local sequence (s / CP) with flash attention
    let (one, two) = (run(1), run(2));
    assert_eq!(
        2 * c(&two, "forward", "activations"),
        c(&one, "forward", "activations")
    );
    assert_eq!(
        2 * c(&two, "forward", "logits"),
        c(&one, "forward", "logits")
    );
}

#[test]
fn expert_parallel_divides_experts_only() {
    // Mixtral on 8 GPUs with EP 8: each GPU keeps 1 of the 8 experts per layer:
    // per layer 41 943 040 + 32 768 + 8192 + 176 160 768 = 218 144 768; x 32 + embedding
    // and LM head 262 144 000 + final norm 4096 = 7 242 780 672
    let e = est(json!({
        "model": {"preset": "mixtral-8x7b-v0.1"},
        "training": {"seq_len": 2048, "activation_checkpointing": "full", "attention": "flash"},
        "parallelism": {"expert_parallel_size": 8},
        "engine": {"type": "megatron", "distributed_optimizer": true},
        "hardware": {"num_gpus": 8, "gpu": "h200-141gb"}
    }));
    assert_eq!(e.params_on_gpu, 7_242_780_672);
    // the distributed optimizer shards dense parts over DP 8 and experts over the expert
    // data-parallel group (DP x CP / EP = 1): dense 1 605 636 096, experts 5 637 144 576
    let (dense, experts) = (1_605_636_096u64, 5_637_144_576u64);
    assert_eq!(
        c(&e, "optimizer_step", "master_weights"),
        (4 * dense).div_ceil(8) + 4 * experts
    );
}

#[test]
fn pipeline_in_flight_micro_batches_and_interleaving() {
    let run = |ga: u64, vpp: Option<u64>| {
        let mut par = json!({"pipeline_parallel_size": 4});
        if let Some(v) = vpp {
            par["virtual_pipeline_parallel_size"] = json!(v);
        }
        est(json!({
            "model": {"preset": "llama-2-7b"},
            "training": {"seq_len": 2048, "gradient_accumulation_steps": ga, "attention": "flash"},
            "parallelism": par,
            "engine": {"type": "megatron"},
            "hardware": {"num_gpus": 4, "gpu": "h200-141gb"}
        }))
    };
    // 1F1B: stage 0 holds min(PP, micro-batches) micro-batches
    let four = c(&run(8, None), "forward", "activations");
    let two = c(&run(2, None), "forward", "activations");
    assert_eq!(four, 2 * two);
    // interleaved with 2 virtual stages: x (1 + (PP - 1) / (PP x VPP)) = x 11/8
    let per_microbatch = four / 4;
    assert_eq!(
        c(&run(8, Some(2)), "forward", "activations"),
        per_microbatch * 11 / 2
    );
}

#[test]
fn tied_embedding_is_copied_to_the_last_stage() {
    // Gemma-2-9B (tied, 42 layers) on Megatron with PP 2: the last stage keeps a copy of the
    // word embedding for the output layer (256 000 x 3584 = 917 504 000)
    let e = est(json!({
        "model": {"preset": "gemma-2-9b-it"},
        "training": {"seq_len": 1024, "activation_checkpointing": "full"},
        "parallelism": {"pipeline_parallel_size": 2},
        "engine": {"type": "megatron"},
        "hardware": {"num_gpus": 2, "gpu": "h200-141gb"}
    }));
    let first = e.stages.iter().find(|s| s.stage == 0).unwrap();
    let last = e.stages.iter().find(|s| s.stage == 1).unwrap();
    // both stages hold 21 layers and the embedding; the last adds the final norm (3584)
    assert_eq!(last.params_on_gpu, first.params_on_gpu + 3584);
    assert_eq!(first.layers, 21);
}

#[test]
fn uneven_pipeline_split() {
    // 32 layers on 4 stages: 6 first, 6 last, the middle 20 split 10 + 10
    let e = est(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"seq_len": 1024, "gradient_accumulation_steps": 4},
        "parallelism": {"pipeline_parallel_size": 4, "first_pipeline_stage_layers": 6, "last_pipeline_stage_layers": 6},
        "engine": {"type": "megatron"},
        "hardware": {"num_gpus": 4, "gpu": "h200-141gb"}
    }));
    let layers: Vec<(u64, u64)> = e.stages.iter().map(|s| (s.stage, s.layers)).collect();
    assert_eq!(layers, vec![(0, 6), (1, 10), (3, 6)]);
    // stage 1: 10 layers x 202 383 360 and nothing else
    assert_eq!(e.stages[1].params_on_gpu, 10 * 202_383_360);
    // a split that does not add up is an error naming the field
    let bad = Config::from_value(json!({
        "model": {"preset": "llama-2-7b"},
        "parallelism": {"pipeline_parallel_size": 4, "first_pipeline_stage_layers": 7, "last_pipeline_stage_layers": 6},
        "engine": {"type": "megatron"}, "hardware": {"num_gpus": 4}
    }))
    .unwrap();
    let err = estimate(&bad).unwrap_err();
    assert_eq!(err[0].field, "parallelism.first_pipeline_stage_layers");
}

#[test]
fn uneven_pipeline_split_with_virtual_stages() {
    // Megatron-Core cuts each stage's layers into VPP equal model chunks, the uneven ends
    // too (first 6 = 2 x 3, middle 10 = 2 x 5, last 6 = 2 x 3 of Llama-2-7B's 32 layers)
    let run = |vpp: Option<u64>| {
        let mut par = json!({"pipeline_parallel_size": 4, "first_pipeline_stage_layers": 6, "last_pipeline_stage_layers": 6});
        if let Some(v) = vpp {
            par["virtual_pipeline_parallel_size"] = json!(v);
        }
        est(json!({
            "model": {"preset": "llama-2-7b"},
            "training": {"seq_len": 1024, "gradient_accumulation_steps": 8, "attention": "flash"},
            "parallelism": par,
            "engine": {"type": "megatron"},
            "hardware": {"num_gpus": 4, "gpu": "h200-141gb"}
        }))
    };
    let (plain, interleaved) = (run(None), run(Some(2)));
    let layers: Vec<(u64, u64)> = interleaved
        .stages
        .iter()
        .map(|s| (s.stage, s.layers))
        .collect();
    assert_eq!(layers, vec![(0, 6), (1, 10), (3, 6)]);
    assert_eq!(interleaved.stages[1].params_on_gpu, 10 * 202_383_360);
    // stage 1 is the most loaded in both. 1F1B: min(PP - 1, 8) = 3 micro-batches of its 10
    // layers = 30 layer activations. Interleaved: (PP - 1 - 1) x 2 + (VPP - 1) x PP + 1 = 9
    // chunks of 5 layers = 45, x 3/2
    assert_eq!(plain.most_loaded, "pipeline stage 1 of 4");
    assert_eq!(interleaved.most_loaded, "pipeline stage 1 of 4");
    assert_eq!(
        2 * c(&interleaved, "forward", "activations"),
        3 * c(&plain, "forward", "activations")
    );
    // an end that does not cut into whole chunks is an error naming the virtual size
    let bad = Config::from_value(json!({
        "model": {"preset": "llama-2-7b"},
        "parallelism": {"pipeline_parallel_size": 4, "virtual_pipeline_parallel_size": 2,
                        "first_pipeline_stage_layers": 7, "last_pipeline_stage_layers": 5},
        "engine": {"type": "megatron"}, "hardware": {"num_gpus": 4}
    }))
    .unwrap();
    let err = estimate(&bad).unwrap_err();
    assert_eq!(err[0].field, "parallelism.virtual_pipeline_parallel_size");
    assert!(
        err[0].message.contains("the first stage has 7"),
        "{}",
        err[0].message
    );
}

#[test]
fn virtual_stages_hold_non_contiguous_layers() {
    // DeepSeek-V2-Lite cut to 24 layers, the first 3 dense (first_k_dense_replace), on
    // PP 2 with 12 virtual stages: chunks of one layer, stage 0 holds the even layers
    // (0, 2 dense), stage 1 the odd ones (1 dense, 11 MoE), not layers 0-11 and 12-23.
    // Per layer (h 2048, 16 heads, MLA without q LoRA): q 2048 x 3072 = 6 291 456,
    // kv_a 2048 x 576 = 1 179 648, its norm 512, kv_b 512 x 4096 = 2 097 152,
    // o 2048 x 2048 = 4 194 304: attention 13 763 072; two norms 4096.
    // Dense MLP 3 x 2048 x 10 944 = 67 239 936: dense layer 81 007 104.
    // MoE: router 64 x 2048 = 131 072, 64 experts x 3 x 2048 x 1408 = 553 648 128, 2 shared
    // 3 x 2048 x 2816 = 17 301 504: MoE layer 584 847 872.
    // Stage 1 adds the final norm 2048 and the LM head 102 400 x 2048 = 209 715 200.
    let e = est(json!({
        "model": {"preset": "deepseek-v2-lite", "num_hidden_layers": 24, "first_k_dense_replace": 3},
        "training": {"seq_len": 1024, "gradient_accumulation_steps": 4, "attention": "flash"},
        "parallelism": {"pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 12},
        "engine": {"type": "megatron"},
        "hardware": {"num_gpus": 2, "gpu": "h200-141gb"}
    }));
    let (dense, moe) = (81_007_104u64, 584_847_872u64);
    let stage = |i: u64| e.stages.iter().find(|s| s.stage == i).unwrap();
    assert_eq!(
        stage(1).params_on_gpu,
        dense + 11 * moe + 2048 + 209_715_200
    );
    // stage 0: 2 dense, 10 MoE and the embedding 102 400 x 2048
    assert_eq!(stage(0).params_on_gpu, 2 * dense + 10 * moe + 209_715_200);
}

#[test]
fn overheads_are_apart_from_the_peak() {
    // 8 GPUs, DP only: one NCCL communicator of 4 MiB x 2 x 16 channels = 128 MiB; cuBLAS
    // workspace 32 MiB on Hopper; the H100 preset's context 911 MiB; reserve 5 % of the peak
    let e = est(json!({
        "model": {"preset": "llama-3.2-1b"},
        "engine": {"type": "deepspeed", "zero_stage": 2},
        "hardware": {"num_gpus": 8, "gpu": "h100-80gb"},
        "overheads": {"allocator_reserve_fraction": 0.05}
    }));
    let mib = 1u64 << 20;
    assert_eq!(e.overheads["nccl_buffers"], 128 * mib);
    assert_eq!(e.overheads["cublas_workspace"], 32 * mib);
    assert_eq!(e.overheads["cuda_context"], 911 * mib);
    assert_eq!(
        e.overheads["allocator_reserve"],
        (e.peak_allocated_bytes as f64 * 0.05) as u64
    );
    assert_eq!(
        e.total_bytes,
        e.peak_allocated_bytes + e.overheads.values().sum::<u64>()
    );
    // the peak is the largest phase
    assert_eq!(
        e.peak_allocated_bytes,
        e.phases.iter().map(|p| p.allocated_bytes).max().unwrap()
    );
}

#[test]
fn moe_presets_report_total_and_active_parameters() {
    for (id, total, active_min, active_max) in [
        // Mixtral 8x7B: 46.7B total, 12.9B active (Mistral AI)
        (
            "mixtral-8x7b-v0.1",
            46_702_792_704u64,
            12_800_000_000u64,
            13_000_000_000u64,
        ),
        // Qwen3-30B-A3B: 30.5B total, 3.3B activated (model card)
        (
            "qwen3-30b-a3b",
            30_532_122_624,
            3_200_000_000,
            3_400_000_000,
        ),
        // DeepSeek-V2-Lite: 15.7B total, 2.4B active (model card)
        (
            "deepseek-v2-lite",
            15_706_484_224,
            2_300_000_000,
            2_700_000_000,
        ),
    ] {
        let e = est(json!({
            "model": {"preset": id},
            "training": {"seq_len": 2048, "activation_checkpointing": "full"},
            "engine": {"type": "deepspeed", "zero_stage": 3},
            "hardware": {"num_gpus": 16}
        }));
        assert_eq!(e.params.total, total, "{id}");
        assert!(
            (active_min..=active_max).contains(&e.params.active_per_token),
            "{id}: {}",
            e.params.active_per_token
        );
        assert!(e.peak_allocated_bytes > 0);
    }
}

// ------------------------------------------------------------------- fixed in the refactor

#[test]
fn distributed_optimizer_shards_over_dp_times_cp_once() {
    // Megatron distributed optimizer, DP 4 x CP 2 = 8 GPUs, AMP bf16: master weights and
    // optimizer states are sharded over the 8 ranks of data_parallel_group_with_cp
    // (Megatron-Core), not over DP x CP^2 = 16. Llama-3.2-1B, P = 1 235 814 400:
    // master 4 B x P / 8 = 617 907 200; AdamW states 2 x 4 B x P / 8 = 1 235 814 400
    let e = est(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"seq_len": 4096, "attention": "flash"},
        "parallelism": {"data_parallel_size": 4, "context_parallel_size": 2},
        "engine": {"type": "megatron", "distributed_optimizer": true},
        "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
    }));
    assert_eq!(c(&e, "optimizer_step", "master_weights"), 4 * P_1B / 8);
    assert_eq!(
        c(&e, "optimizer_step", "optimizer_states"),
        2 * 4 * P_1B / 8
    );
    // and the formula says so
    let d = e
        .details
        .iter()
        .find(|d| d.name == "master_weights")
        .unwrap();
    assert_eq!(
        d.formula,
        "4 B × 1235814400 dense params / 8 data-parallel ranks"
    );
}

#[test]
fn zero3_lora_gathers_the_frozen_base_with_the_users_settings() {
    // LoRA on Llama-2-7B (bf16 base, 2 B x P_7B) under ZeRO-3 on 8 GPUs. The frozen base is
    // gathered as ZeRO-3 gathers weights: the largest module (the 32000 x 4096 embedding,
    // 131 072 000) plus stage3_prefetch_bucket_size, at most stage3_max_live_parameters but
    // never less than that module; in bytes 2 B per element of the bf16 base.
    let run = |engine: Value| {
        est(json!({
            "model": {"preset": "llama-2-7b"},
            "training": {"seq_len": 1024, "lora": {"rank": 8}},
            "engine": engine,
            "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
        }))
    };
    // defaults: the last modules of forward stay gathered into backward up to
    // stage3_max_reuse_distance (1e9 elements, within stage3_max_live_parameters 1e9)
    let e = run(json!({"type": "deepspeed", "zero_stage": 3}));
    assert_eq!(c(&e, "forward", "gathered_parameters"), 2 * 1_000_000_000);
    // reuse distance 0, prefetch 1e6, max live 2e7: max(min(132 072 000, 2e7), 131 072 000)
    let e = run(
        json!({"type": "deepspeed", "zero_stage": 3, "stage3_max_reuse_distance": 0,
        "stage3_prefetch_bucket_size": 1000000, "stage3_max_live_parameters": 20000000}),
    );
    assert_eq!(c(&e, "forward", "gathered_parameters"), 2 * 131_072_000);
    // reuse distance 0, prefetch 2e8 under the default max live: 331 072 000 elements
    let e = run(
        json!({"type": "deepspeed", "zero_stage": 3, "stage3_max_reuse_distance": 0,
        "stage3_prefetch_bucket_size": 200000000}),
    );
    assert_eq!(c(&e, "forward", "gathered_parameters"), 2 * 331_072_000);
}

#[test]
fn megatron_deepspeed_takes_deepspeeds_zero_options() {
    // Megatron-DeepSpeed runs DeepSpeed's ZeRO: the same options, the same defaults
    // (ZeroOptions::default(), written once). ZeRO-3 keeps tensors under
    // stage3_param_persistence_threshold (1e5) whole: Llama-2-7B's 65 norm weights of 4096.
    let e = est(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"seq_len": 1024, "activation_checkpointing": "full"},
        "engine": {"type": "megatron_deepspeed", "zero_stage": 3},
        "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
    }));
    let small = 65 * 4096;
    assert_eq!(
        c(&e, "optimizer_step", "weights"),
        2 * (P_7B - small) / 8 + 2 * small
    );
    // the default reduce bucket, 5e8 elements x 2 B (ZeRO-3 keeps one buffer, overlap_comm
    // or not: stage3.py IPGBucketZ3); ZeRO 1-2 allocate it in backward, two with
    // overlap_comm (stage_1_and_2.py setup_buckets)
    assert_eq!(
        c(&e, "optimizer_step", "communication_buffers"),
        1_000_000_000
    );
    let e = est(json!({
        "model": {"preset": "llama-2-7b"},
        "training": {"seq_len": 1024},
        "engine": {"type": "megatron_deepspeed", "zero_stage": 2, "overlap_comm": true, "reduce_bucket_size": 100000000},
        "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
    }));
    assert_eq!(
        c(&e, "backward", "communication_buffers"),
        2 * 2 * 100_000_000
    );
    assert_eq!(c(&e, "optimizer_step", "communication_buffers"), 0);
}

#[test]
fn defaults_are_written_once() {
    use calc_core::config::*;
    use serde::de::DeserializeOwned;
    // every section read from `{}` equals its Default (serde takes the container's
    // Default; no field carries a default of its own)
    fn same<T: DeserializeOwned + Default + PartialEq + std::fmt::Debug>() {
        let parsed: T = serde_json::from_value(json!({})).unwrap();
        assert_eq!(parsed, T::default());
    }
    same::<Training>();
    same::<Lora>();
    same::<Inference>();
    same::<Parallelism>();
    same::<ZeroOptions>();
    same::<DdpOptions>();
    same::<FsdpOptions>();
    same::<MegatronOptions>();
    same::<Hardware>();
    same::<Overheads>();
    same::<Config>();
    // and the values the documentation states
    let z = ZeroOptions::default();
    assert_eq!(
        (
            z.reduce_bucket_size,
            z.stage3_prefetch_bucket_size,
            z.stage3_max_live_parameters,
            z.stage3_param_persistence_threshold,
            z.sub_group_size
        ),
        (
            500_000_000,
            50_000_000,
            1_000_000_000,
            100_000,
            1_000_000_000
        )
    );
    let i = Inference::default();
    assert_eq!(
        (
            i.context_len,
            i.gpu_memory_utilization,
            i.max_num_batched_tokens,
            i.max_num_seqs,
            i.group_size
        ),
        (4096, 0.9, 8192, 1024, 128)
    );
}

#[test]
fn engines_reject_the_parallelism_they_do_not_model() {
    let errs = |engine: Value, par: Value| {
        errors_of(json!({
            "model": {"preset": "llama-2-7b"},
            "parallelism": par,
            "engine": engine,
            "hardware": {"num_gpus": 8}
        }))
    };
    // Megatron sequence parallelism under DeepSpeed (Hugging Face model code)
    let e = errs(
        json!({"type": "deepspeed", "zero_stage": 1}),
        json!({"tensor_parallel_size": 2, "sequence_parallel": true}),
    );
    assert_eq!(e[0].field, "parallelism.sequence_parallel");
    // DeepSpeed's pipeline engine has no interleaved schedule
    let e = errs(
        json!({"type": "deepspeed", "zero_stage": 1}),
        json!({"pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 2}),
    );
    assert_eq!(e[0].field, "parallelism.virtual_pipeline_parallel_size");
    // DDP is data parallel only
    let e = errs(json!({"type": "ddp"}), json!({"tensor_parallel_size": 2}));
    assert_eq!(e[0].field, "parallelism.tensor_parallel_size");
    // Megatron models all of them
    assert!(
        errs(
            json!({"type": "megatron"}),
            json!({"tensor_parallel_size": 2, "sequence_parallel": true, "pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 2})
        )
        .is_empty()
    );
}

#[test]
fn ring_attention_takes_two_chunks_per_context_parallel_rank() {
    let errs = |engine: Value, seq: u64| {
        error_fields(json!({
            "model": {"preset": "llama-2-7b"},
            "training": {"seq_len": seq},
            "parallelism": {"context_parallel_size": 4},
            "engine": engine,
            "hardware": {"num_gpus": 8}
        }))
    };
    // 4100 = 4 x 1025: one chunk per rank, not two (Megatron-Core get_batch_on_this_cp_rank
    // views the sequence as 2 cp chunks; torchtitan's seq_len_divisor is 2 cp)
    for ring in [json!({"type": "megatron"}), json!({"type": "fsdp"})] {
        assert_eq!(errs(ring.clone(), 4100), ["training.seq_len"], "{ring}");
        // 4104 = 8 x 513
        assert!(errs(ring.clone(), 4104).is_empty(), "{ring}");
    }
    // DeepSpeed-Ulysses gives each rank one chunk
    let megds = json!({"type": "megatron_deepspeed", "zero_stage": 1});
    assert!(errs(megds, 4100).is_empty());
    // 4098 is not a multiple of 4 at all
    assert_eq!(
        errs(json!({"type": "deepspeed", "zero_stage": 1}), 4098),
        ["training.seq_len"]
    );
}

#[test]
fn megatron_deepspeed_splits_uneven_layers_as_deepspeed() {
    // Llama-3.2-1B's 16 decoder layers on 6 stages (TP 1, 6 GPUs), 4 micro-batches per step:
    // GPTModelPipe is a PipelineModule with partition_method 'type:transformer', whose
    // partition_balanced gives 16 = 6 x 2 + 4 as 3 / 3 / 3 / 3 / 2 / 2 (the larger first)
    let doc = |engine: Value, par: Value| {
        json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"seq_len": 2048, "gradient_accumulation_steps": 4},
            "parallelism": par,
            "engine": engine,
            "hardware": {"num_gpus": 6}
        })
    };
    let megds = json!({"type": "megatron_deepspeed", "zero_stage": 1});
    let e = est(doc(megds.clone(), json!({"pipeline_parallel_size": 6})));
    let sl = e.layout.stage_layers;
    let layers: Vec<u64> = (0..6).map(|s| sl.range(s, 6)).map(|(a, b)| b - a).collect();
    assert_eq!(layers, [3, 3, 3, 3, 2, 2]);
    assert_eq!(
        e.layout.describe_model_parallel(),
        "PP 6 (3 / 3 x 3 / 2 / 2 layers)"
    );
    // the candidates: stage 0 (embedding, 4 micro-batches in flight), stage 1 (3 layers, 4
    // in flight: 1F1B holds min(6 - s, 4)) and the last (head); stage 0 holds the most
    let stages: Vec<(u64, u64)> = e.stages.iter().map(|s| (s.stage, s.layers)).collect();
    assert_eq!(stages, [(0, 3), (1, 3), (5, 2)]);
    assert_eq!(e.most_loaded, "pipeline stage 0 of 6");
    // a first or last stage size is not the engine's to take
    let fields = error_fields(doc(
        megds,
        json!({"pipeline_parallel_size": 6, "first_pipeline_stage_layers": 1,
               "last_pipeline_stage_layers": 3}),
    ));
    assert_eq!(
        fields,
        [
            "parallelism.first_pipeline_stage_layers",
            "parallelism.last_pipeline_stage_layers"
        ]
    );
    // Megatron-LM without a split still needs the stages to divide the layers
    let fields = error_fields(doc(
        json!({"type": "megatron"}),
        json!({"pipeline_parallel_size": 6}),
    ));
    assert_eq!(fields, ["parallelism.pipeline_parallel_size"]);
}

#[test]
fn megatron_deepspeed_keeps_repeated_keys_and_values() {
    // Llama-3.2-1B (16 layers, 32 query and 8 key/value heads of 64), one GPU, micro-batch
    // 1 of 2048 tokens, bf16, flash attention, no recomputation: Megatron-DeepSpeed's
    // ParallelAttention repeats K and V to the 32 heads before the kernel, which saves
    // them; Megatron-Core's Transformer Engine takes the 8 as they are
    let acts = |model: &str, engine: Value| {
        let e = est(json!({
            "model": {"preset": model},
            "training": {"seq_len": 2048, "precision": "bf16", "attention": "flash"},
            "engine": engine,
            "hardware": {"num_gpus": 1}
        }));
        c(&e, "forward", "activations")
    };
    let megds = || json!({"type": "megatron_deepspeed", "zero_stage": 0});
    let core = || json!({"type": "megatron"});
    // per layer (32 - 8) heads x 64 x 2 (K and V) x 2048 tokens x 2 B = 12 582 912 B
    assert_eq!(
        acts("llama-3.2-1b", megds()) - acts("llama-3.2-1b", core()),
        16 * 24 * 64 * 2 * 2048 * 2
    );
    // multi-head attention has nothing to repeat (Llama-2-7B: 32 and 32)
    assert_eq!(acts("llama-2-7b", megds()), acts("llama-2-7b", core()));
}

#[test]
fn megatron_deepspeed_runs_the_layouts_its_source_runs() {
    let errs = |model: &str, engine: Value, par: Value| {
        error_fields(json!({
            "model": {"preset": model},
            "training": {"seq_len": 4096},
            "parallelism": par,
            "engine": engine,
            "hardware": {"num_gpus": 8}
        }))
    };
    let megds = json!({"type": "megatron_deepspeed", "zero_stage": 1});
    // under --deepspeed, megatron/training.py hands model[0] alone to deepspeed.initialize:
    // DeepSpeed's pipeline engine, no interleaved schedule (Llama-2-7B: 32 layers, PP 2 x 2
    // virtual stages divide them, so this is the only error)
    assert_eq!(
        errs(
            "llama-2-7b",
            megds.clone(),
            json!({"pipeline_parallel_size": 2, "virtual_pipeline_parallel_size": 2})
        ),
        ["parallelism.virtual_pipeline_parallel_size"]
    );
    // Ulysses (context_parallel_size) beside Megatron's sequence parallelism: a RuntimeError
    // in megatron/initialize.py; either alone runs
    let tp_cp = |sp: bool| json!({"tensor_parallel_size": 2, "context_parallel_size": 2, "sequence_parallel": sp});
    assert_eq!(
        errs("llama-2-7b", megds.clone(), tp_cp(true)),
        ["parallelism.sequence_parallel"]
    );
    assert!(errs("llama-2-7b", megds.clone(), tp_cp(false)).is_empty());
    // Megatron-Core's ring attention takes both
    assert!(errs("llama-2-7b", json!({"type": "megatron"}), tp_cp(true)).is_empty());
    // Ulysses scatters one tensor-parallel rank's heads (the keys and values repeated to
    // them): Qwen2.5-0.5B's 14 heads over TP 2 leave 7, which CP 2 cannot split; Megatron's
    // ring attention splits the sequence, not the heads
    assert_eq!(
        errs("qwen2.5-0.5b", megds.clone(), tp_cp(false)),
        ["parallelism.context_parallel_size"]
    );
    assert!(errs("qwen2.5-0.5b", json!({"type": "megatron"}), tp_cp(false)).is_empty());
    // transformers under DeepSpeed (ALST, ulysses_sp.py): CP must divide the 40 query heads
    // of Qwen2.5-14B, and its 8 key/value heads must divide CP or be divided by it: CP 4
    // and 8 run, CP 5 and 10 divide the query heads but not the key/value heads' 8
    let zero1 = json!({"type": "deepspeed", "zero_stage": 1});
    let cp = |n: u64| json!({"context_parallel_size": n});
    let errs_n = |n: u64| {
        error_fields(json!({
            "model": {"preset": "qwen2.5-14b"},
            "training": {"seq_len": 4000},
            "parallelism": cp(n),
            "engine": zero1.clone(),
            "hardware": {"num_gpus": n}
        }))
    };
    for n in [4, 8] {
        assert!(errs_n(n).is_empty(), "CP {n}: {:?}", errs_n(n));
    }
    for n in [5, 10] {
        assert_eq!(errs_n(n), ["parallelism.context_parallel_size"], "CP {n}");
    }
}

// ---------------------------------------------------------------------------- LoRA targets

/// Trainable parameters of `target_modules` r 8 on a two-layer cut of `model`.
fn lora_trainable(model: Value, targets: Value) -> u64 {
    let mut m = model;
    m["num_hidden_layers"] = json!(2);
    est(json!({"model": m, "training": {"lora": {"rank": 8, "target_modules": targets}}}))
        .trainable_params
}

/// PEFT 0.21 on transformers 5.23, `LoraConfig(r=8, target_modules="all-linear")` on the
/// same two-layer models (counted with `get_peft_model` on the meta device).
#[test]
fn lora_all_linear_on_moe_follows_peft() {
    // Qwen1.5-MoE-A2.7B (qwen2_moe, not converted): only nn.Linear modules. Per layer
    // q, k, v, o 8 x (2048 + 2048) = 32 768 each; shared expert gate / up 8 x (2048 +
    // 5632) = 61 440 each, down the same; shared_expert_gate 8 x (2048 + 1) = 16 392;
    // the fused routed experts and the router module are not nn.Linear.
    // 2 x (4 x 32 768 + 3 x 61 440 + 16 392) = 663 568.
    let qwen15 = json!({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
        "num_experts_per_tok": 4, "num_attention_heads": 16, "num_key_value_heads": 16,
        "vocab_size": 151936});
    assert_eq!(
        lora_trainable(json!({"hf_config": qwen15}), json!("all-linear")),
        663_568
    );
    // DeepSeek-V2-Lite (converted through the qwen2_moe pattern): attention (q 8 x (2048 +
    // 3072), kv_a 8 x (2048 + 576), kv_b 8 x (512 + 4096), o 8 x (2048 + 2048)) on both
    // layers = 2 x 131 584; layer 1's 64 experts: gate_up fused at rank 16, 64 x 16 x
    // (2048 + 2816) = 4 980 736, down 64 x 8 x (1408 + 2048) = 1 769 472; router 8 x
    // (2048 + 64) = 16 896; no dense or shared-expert MLP adapters: 7 030 272.
    assert_eq!(
        lora_trainable(json!({"preset": "deepseek-v2-lite"}), json!("all-linear")),
        7_030_272
    );
    // Qwen3-30B-A3B and Mixtral-8x7B (converted): 20 760 576 and 11 239 552 in PEFT.
    assert_eq!(
        lora_trainable(json!({"preset": "qwen3-30b-a3b"}), json!("all-linear")),
        20_760_576
    );
    assert_eq!(
        lora_trainable(json!({"preset": "mixtral-8x7b-v0.1"}), json!("all-linear")),
        11_239_552
    );
    // an explicit attention list is unchanged by the conversion: Mixtral q, v on 2 layers,
    // 2 x (8 x (4096 + 4096) + 8 x (4096 + 1024)) = 212 992
    assert_eq!(
        lora_trainable(
            json!({"preset": "mixtral-8x7b-v0.1"}),
            json!(["q_proj", "v_proj"])
        ),
        212_992
    );
}

// ------------------------------------------------------------- per-op selective AC

/// torchtitan's per-op selective checkpointing on Llama-3.2-1B (bf16, SDPA, b2 s2048):
/// beside each layer's input it keeps the outputs of the 1st, 3rd, 5th and 7th `mm` (q
/// 2048, v 512, gate 8192, down 2048 columns: 12 800 x 2 B = 25 600 B per token), the SDPA
/// output (2048 x 2 B) and its fp32 logsumexp (32 heads x 4 B): 29 824 B per token per
/// layer, x 4096 tokens x 16 layers = 1 954 545 664 B over full recomputation (the probe
/// measures 1 954.6 MB, tests/reference sac/llama-3.2-1b/bf16/...).
#[test]
fn selective_op_keeps_every_other_matmul_output() {
    let run = |rc: &str| {
        est(json!({"model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 2, "seq_len": 2048, "precision": "bf16",
                         "activation_checkpointing": rc, "attention": "sdpa"}}))
    };
    let act = |e: &Estimate| phase(e, "forward").components["activations"];
    assert_eq!(act(&run("selective_op")) - act(&run("full")), 1_954_545_664);
    // Qwen2.5-0.5B: q, k, v carry a bias (addmm, not saved); eager attention runs bmm:
    // o (1st mm, 896) and up (3rd, 4864): 11 520 B per token per layer
    let q = |rc: &str| {
        est(json!({"model": {"preset": "qwen2.5-0.5b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "bf16",
                         "activation_checkpointing": rc, "attention": "eager"}}))
    };
    assert_eq!(
        act(&q("selective_op")) - act(&q("full")),
        24 * 1024 * 11_520
    );
    // LoRA and Megatron are refused with the field named
    let err = calc_core::estimate(&cfg(json!({"model": {"preset": "llama-3.2-1b"},
        "training": {"activation_checkpointing": "selective_op", "lora": {}}})))
    .unwrap_err();
    assert_eq!(err[0].field, "training.activation_checkpointing");
}

/// Activation offloading (save_on_cpu around each checkpointed layer): Llama-3.2-1B bf16,
/// b2 s2048, full recomputation: the 16 layer inputs, 16 x 4096 x 2048 x 2 B =
/// 268 435 456 B, move from the GPU's forward activations to pinned host memory (the
/// probe measures 268.4 MB less, tests/reference off/llama-3.2-1b/...).
#[test]
fn activation_offloading_moves_layer_inputs_to_the_host() {
    let run = |off: bool| {
        est(json!({"model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 2, "seq_len": 2048, "precision": "bf16",
                         "activation_checkpointing": "full", "attention": "sdpa",
                         "activation_offloading": off}}))
    };
    let (on, off) = (run(true), run(false));
    let act = |e: &Estimate| phase(e, "forward").components["activations"];
    assert_eq!(act(&off) - act(&on), 268_435_456);
    assert_eq!(on.cpu_memory_bytes - off.cpu_memory_bytes, 268_435_456);
    // without checkpointing there is nothing to offload: refused, with the field named
    let err = calc_core::estimate(&cfg(json!({"model": {"preset": "llama-3.2-1b"},
        "training": {"activation_offloading": true}})))
    .unwrap_err();
    assert_eq!(err[0].field, "training.activation_offloading");
}

/// `torch.compile` per decoder layer (inductor's min-cut partition), Llama-3.2-1B in bf16,
/// SDPA, b1 s1024. Per token per layer (h 2048, 32 query and 8 KV heads of 64, I 8192):
/// layer input 2h = 4 096, two rsqrt 8, the q/k/v input 4 096 (once), q and k after
/// rotary (32 + 8) x 64 x 2 = 5 120, v 1 024, the SDPA output 4 096 and logsumexp 128,
/// o_proj's output 4 096 (the next norm's input with the residual), the MLP input 4 096,
/// gate and up outputs and down's input 3 x 8 192 x 2 = 49 152: 75 912 B, of which the
/// input (4 096) is what full recomputation keeps: 16 layers x 1 024 tokens x 71 816 B =
/// 1 176 633 344 B. Eager keeps 108 680 B (each RMSNorm's fp32 input 4h, rsqrt and
/// normalized copy 2h: 12 292 twice, no separate input; act(gate) and the product:
/// 4 x 8 192 x 2 instead of 3): 16 x 1 024 x 32 768 = 536 870 912 B more, which is what
/// the probe measures between the eager and the compiled run (3 111 006 224 vs
/// 2 574 135 312 B). The probe measures 2 574 135 312 B of
/// forward activations for the compiled run; the estimate is 2 574 135 296
/// (tests/reference compile/llama-3.2-1b/bf16/none/b1-s1024).
#[test]
fn compile_keeps_the_min_cut_saved_set() {
    let run = |compile: bool, rc: &str| {
        est(json!({"model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "bf16",
                         "activation_checkpointing": rc, "attention": "sdpa",
                         "compile": compile}}))
    };
    let act = |e: &Estimate| phase(e, "forward").components["activations"];
    assert_eq!(
        act(&run(true, "none")) - act(&run(true, "full")),
        1_176_633_344
    );
    assert_eq!(
        act(&run(false, "none")) - act(&run(true, "none")),
        536_870_912
    );
    // refused where it is not modelled, with the field named
    for training in [
        json!({"compile": true, "attention": "eager"}),
        json!({"compile": true, "lora": {}}),
        json!({"compile": true, "activation_checkpointing": "selective_op"}),
    ] {
        let err = calc_core::estimate(&cfg(json!({"model": {"preset": "llama-3.2-1b"},
            "training": training})))
        .unwrap_err();
        assert_eq!(err[0].field, "training.compile", "{err:?}");
    }
    let moe = calc_core::estimate(&cfg(json!({"model": {"preset": "qwen3-30b-a3b"},
        "training": {"compile": true}})))
    .unwrap_err();
    assert_eq!(moe[0].field, "training.compile");
}

/// Under autocast with full recomputation, a compiled layer's weight casts are ops of its
/// graph, not autocast's cache: forward's peak holds only the head's half copy. Llama-2-7B
/// (AMP fp16): eager caches all 6 607 077 376 linear weights' copies (2 B each), compiled
/// only the head's 32 000 x 4 096 = 131 072 000 -> (6 607 077 376 - 131 072 000) x 2 B =
/// 12 952 010 752 B less (the probe's compiled run measures 3.96 GB of forward
/// activations with the copies, tests/reference draw/train-compile/llama-2-7b/...).
#[test]
fn compile_with_full_recompute_casts_weights_per_layer() {
    let run = |compile: bool| {
        est(json!({"model": {"preset": "llama-2-7b"},
            "training": {"micro_batch_size": 1, "seq_len": 512, "precision": "amp_fp16",
                         "activation_checkpointing": "full", "compile": compile}}))
    };
    let copies = |e: &Estimate| phase(e, "forward").components["autocast_weight_copies"];
    assert_eq!(copies(&run(false)) - copies(&run(true)), 12_952_010_752);
}

// ------------------------------------------------------------------------- gpt-oss

/// gpt-oss-20b: 24 layers of 32 experts. Per layer: q 2880 x 4096 + 4096, k and v
/// 2880 x 512 + 512 each, o 4096 x 2880 + 2880, 64 sinks, router 2880 x 32 + 32, experts
/// 32 x (2880 x 5760 + 5760 + 2880 x 2880 + 2880), two norms 2880 -> 823 186 976; plus
/// embedding and LM head 201 088 x 2880 each and the final norm: 20 914 757 184, what
/// transformers 5.23 counts on the meta device. SDPA is not a gpt-oss path in transformers
/// (attention sinks): asked for, it is estimated as eager with a warning.
#[test]
fn gpt_oss_counts_and_runs_eager() {
    let model = json!({"hf_config": {"model_type": "gpt_oss", "num_hidden_layers": 24,
        "num_local_experts": 32}});
    let sdpa = est(json!({"model": model, "training": {"attention": "sdpa", "precision": "bf16"}}));
    assert_eq!(sdpa.params.total, 20_914_757_184);
    assert!(
        sdpa.warnings.iter().any(|w| w.contains("no SDPA")),
        "{:?}",
        sdpa.warnings
    );
    let eager =
        est(json!({"model": model, "training": {"attention": "eager", "precision": "bf16"}}));
    assert_eq!(sdpa.peak_allocated_bytes, eager.peak_allocated_bytes);
}
