//! Step time (core/src/steptime.rs) against hand-derived terms and published throughput,
//! and the plan search (core/src/plan.rs): exactness of the pruned search, a case listed
//! layout by layout, a case only TP x PP fits, a case where ZeRO-3 beats TP, more GPUs.

use calc_core::config::{Config, Recompute};
use calc_core::plan::{PlanRequest, PlanResult, plan, plan_exhaustive};
use calc_core::steptime::{StepTime, TimeAssumptions, step_time_of};
use serde_json::{Value, json};

fn config(v: Value) -> Config {
    Config::from_json_str(&v.to_string()).unwrap()
}

fn time_of(v: Value) -> StepTime {
    let r = calc_core::resolve::resolve(&config(v)).unwrap();
    step_time_of(&r, TimeAssumptions::default()).unwrap()
}

fn term(t: &StepTime, name: &str) -> f64 {
    t.terms.iter().find(|x| x.name == name).unwrap().seconds
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

#[test]
fn tensor_parallel_and_pipeline_terms_by_hand() {
    // Llama-3.2-1B (16 layers, hidden 2048), Megatron TP 2 x PP 2 on 4 A100-80GB (one node),
    // micro-batch 1 x 4 accumulation, s 2048, AMP bf16 (2 B activations), no recomputation.
    let t = time_of(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "gradient_accumulation_steps": 4, "seq_len": 2048},
        "parallelism": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2},
        "engine": {"type": "megatron"},
        "hardware": {"gpu": "a100-80gb", "num_gpus": 4}
    }));
    // TP: per layer 4 all-reduces of b s h x 2 B = 2048 x 2048 x 2 = 8 388 608 B, each
    // 2 (tp-1)/tp x bytes / 300e9 B/s (NVLink each way) plus NCCL's latency of a ring
    // all-reduce over 2 ranks in a node, 8.4 + 2 x 3.4 = 15.2 us (a tree: 8.4 + 2 x 4.0 =
    // 16.4 us); 8 layers on a stage; 4 micro-batches
    let tp = 4.0 * 8.0 * 4.0 * (2.0 * 0.5 * 8_388_608.0 / 300e9 + 15.2e-6);
    assert!(close(term(&t, "tensor_parallel"), tp), "{t:?}");
    // pipeline: (pp - 1) / v = 1 micro-batch time of the slowest stage; p2p 2 x m x v
    // transfers of b s h x 2 B (no sequence parallelism) over NVLink
    let p2p = 2.0 * 4.0 * 8_388_608.0 / 300e9;
    assert!(close(term(&t, "pipeline_p2p"), p2p), "{t:?}");
    let per_mb =
        (term(&t, "compute") + term(&t, "elementwise") + term(&t, "tensor_parallel")) / 4.0;
    assert!(close(term(&t, "pipeline_bubble"), per_mb), "{t:?}");
    // Megatron without the distributed optimizer all-reduces over DP 1: nothing
    assert_eq!(term(&t, "data_parallel"), 0.0);
    // every term adds up; tokens/s = 4 x 2048 tokens / seconds / 4 GPUs
    let sum: f64 = t.terms.iter().map(|x| x.seconds).sum();
    assert!(close(t.seconds, sum));
    assert!(close(
        t.tokens_per_second_per_gpu,
        4.0 * 2048.0 / t.seconds / 4.0
    ));
}

#[test]
fn partitioned_pipeline_sends_by_hand() {
    // Llama-3.2-1B (hidden 2048) at TP 8 x PP 2 on 16 A100-80GB: each stage fills a node, so
    // its sends cross the nodes' network (25e9 B/s per GPU). Micro-batch 1 x 4
    // accumulation, s 2048, AMP bf16: one activation or gradient is b s h x 2 B =
    // 8 388 608 B, 2 x 4 of them per step.
    let time = |engine: Value, sp: bool| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "gradient_accumulation_steps": 4, "seq_len": 2048},
            "parallelism": {"tensor_parallel_size": 8, "pipeline_parallel_size": 2,
                            "sequence_parallel": sp},
            "engine": engine,
            "hardware": {"gpu": "a100-80gb", "num_gpus": 16}
        }))
    };
    let message = 8_388_608.0;
    // Megatron-Core: every tensor-parallel rank sends the whole tensor
    let core = time(json!({"type": "megatron"}), false);
    assert!(
        close(term(&core, "pipeline_p2p"), 8.0 * message / 25e9),
        "{core:?}"
    );
    // Megatron-LM's scatter/gather: an eighth over the network, then an all-gather of the
    // whole over NVLink (7/8 x bytes / 300e9 B/s) with NCCL's ring latency over 8 ranks in
    // a node, 8.4 + 7 x 3.4 = 32.2 us
    let one = message / 8.0 / 25e9 + 0.875 * message / 300e9 + 32.2e-6;
    let sg = time(
        json!({"type": "megatron", "scatter_gather_tensors_in_pipeline": true}),
        false,
    );
    assert!(close(term(&sg, "pipeline_p2p"), 8.0 * one), "{sg:?}");
    // DeepSpeed's PipelineEngine under Megatron-DeepSpeed partitions them the same way
    let ds = time(
        json!({"type": "megatron_deepspeed", "zero_stage": 1}),
        false,
    );
    assert!(close(term(&ds, "pipeline_p2p"), 8.0 * one), "{ds:?}");
    // everything else is the same
    for name in ["compute", "tensor_parallel", "pipeline_bubble"] {
        assert_eq!(term(&sg, name), term(&core, name), "{name}");
    }
    // under sequence parallelism the stage's output is already a sequence shard: b s h / 8
    // whichever the engine, no all-gather
    let shard = 8.0 * message / 8.0 / 25e9;
    for engine in [
        json!({"type": "megatron"}),
        json!({"type": "megatron", "scatter_gather_tensors_in_pipeline": true}),
    ] {
        let t = time(engine, true);
        assert!(close(term(&t, "pipeline_p2p"), shard), "{t:?}");
    }
}

#[test]
fn blocking_zero3_fetch_slows_only_its_gathers() {
    // engine.stage3_blocking_fetch (DeepSpeed before 0.6): each sub-module's gather hides
    // only behind the compute launched after it was issued (its timeline by hand:
    // steptime's blocking_fetch_timeline_by_hand); Llama-3.2-1B under Megatron-DeepSpeed
    // ZeRO-3 on 16 A100-80GB (two nodes: the gathers cross the 25e9 B/s NICs)
    let time = |stage: u8, gpus: u64, recompute: &str, blocking: bool| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 4, "gradient_accumulation_steps": 2, "seq_len": 2048,
                         "activation_checkpointing": recompute},
            "engine": {"type": "megatron_deepspeed", "zero_stage": stage,
                       "stage3_blocking_fetch": blocking},
            "hardware": {"gpu": "a100-80gb", "num_gpus": gpus}
        }))
    };
    for recompute in ["none", "full", "selective"] {
        let (new, old) = (time(3, 16, recompute, false), time(3, 16, recompute, true));
        // the data-parallel term grows; compute, elementwise and recomputation do not move
        assert!(
            term(&old, "data_parallel") > term(&new, "data_parallel"),
            "{recompute}: {old:?} {new:?}"
        );
        for x in &new.terms {
            if x.name != "data_parallel" {
                assert_eq!(term(&old, &x.name), x.seconds, "{recompute} {}", x.name);
            }
        }
    }
    // nothing to gather below stage 3 or on one GPU
    for (stage, gpus) in [(2, 16), (3, 1)] {
        assert_eq!(
            time(stage, gpus, "full", true).seconds,
            time(stage, gpus, "full", false).seconds
        );
    }
}

#[test]
fn ulysses_all_to_alls_by_hand() {
    // Llama-3.2-1B (16 layers, 32 query and 8 key/value heads of 64) on 4 A100-80GB (one
    // node), context parallel 4, micro-batch 1, one step, s 8192: 2048 tokens per GPU, AMP
    // bf16 (2 B activations)
    let cfg = |engine: &str, recompute: &str| {
        json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 8192,
                         "activation_checkpointing": recompute},
            "parallelism": {"context_parallel_size": 4},
            "engine": {"type": engine, "zero_stage": 1},
            "hardware": {"gpu": "a100-80gb", "num_gpus": 4}
        })
    };
    // an all-to-all sends 3/4 of its tensor over NVLink (300e9 B/s each way); 16 layers
    let per_token = |elems: f64| 16.0 * 2048.0 * elems * 0.75 * 2.0 / 300e9;
    // Megatron-DeepSpeed: query, key, value (repeated to the 32 heads) and output, 32 x 64
    // elements per token each; forward and backward
    let megds = per_token(4.0 * 32.0 * 64.0);
    let t = time_of(cfg("megatron_deepspeed", "none"));
    assert!(close(term(&t, "context_parallel"), 2.0 * megds), "{t:?}");
    // full recomputation runs the forward's all-to-alls again
    let t = time_of(cfg("megatron_deepspeed", "full"));
    assert!(close(term(&t, "context_parallel"), 3.0 * megds), "{t:?}");
    // transformers under DeepSpeed (ALST): the 8 key/value heads exchanged as they are
    // (32 + 8 + 8 + 32 heads of 64)
    let t = time_of(cfg("deepspeed", "none"));
    let alst = per_token(80.0 * 64.0);
    assert!(close(term(&t, "context_parallel"), 2.0 * alst), "{t:?}");
}

#[test]
fn elementwise_kernels_by_hand() {
    // Llama-3.2-1B (16 layers, h 2048, 32 heads and 8 KV heads of 64, intermediate 8192,
    // vocabulary 128 256) on one H100 (3.35e12 B/s), b 1, s 2048, pure bf16 (e = 2 B).
    let time = |compile: bool| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 2048, "precision": "bf16", "compile": compile},
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        }))
    };
    // eager transformers modules, bytes per token of one layer:
    //   2 RMSNorms x h: forward 20 + 2e + 2 (e + 4) = 36, backward 36 + 4e + 12 = 56
    //   2 residual adds x h: 3e = 6 each way
    //   rotary on (32 + 8) x 64 = 2560 query and key elements: forward 10e, backward 8e
    //   the attention output's copy, 32 x 64 = 2048 elements: 2e each way
    //   SiLU(gate) * up on 8192: forward 5e, backward 9e
    // forward 2048 x (72 + 12) + 2560 x 20 + 2048 x 4 + 8192 x 10 = 313 344,
    // backward 2048 x (112 + 12) + 2560 x 16 + 2048 x 4 + 8192 x 18 = 450 560;
    // the loss on 128 256 logits: forward e + 12 = 14, backward 20 + e = 22 bytes each
    let loss = 128_256.0 * (14.0 + 22.0);
    let eager = 16.0 * (313_344.0 + 450_560.0) + loss;
    let t = time(false);
    assert!(
        close(term(&t, "elementwise"), 2048.0 * eager / 3350e9),
        "{t:?}"
    );
    // torch.compile fuses each chain: norms 2e forward and 3e backward, rotary 2e each way,
    // SiLU(gate) * up 3e and 5e; the adds and the output copy as before:
    // forward 2048 x (8 + 12) + 2560 x 4 + 2048 x 4 + 8192 x 6 = 108 544,
    // backward 2048 x (12 + 12) + 2560 x 4 + 2048 x 4 + 8192 x 10 = 149 504; the loss
    // stays eager (each decoder layer is compiled)
    let fused = 16.0 * (108_544.0 + 149_504.0) + loss;
    let t = time(true);
    assert!(
        close(term(&t, "elementwise"), 2048.0 * fused / 3350e9),
        "{t:?}"
    );
}

#[test]
fn nccl_latency_by_hand() {
    use calc_core::steptime::{CollectiveKind::*, nccl_latency};
    // NCCL src/graph/tuning.cc, Simple protocol: base 8.4 us; a ring step 3.4 us inside a
    // node, 14 us across nodes; a tree step 4.0 us inside a node, 14 us across
    let us = |x: f64| x * 1e-6;
    assert_eq!(nccl_latency(AllGather, 1, 1), 0.0);
    // 8 ranks in a node: all-gather 7 steps; all-reduce 14 (ring) or 2 x 7 tree steps
    assert!(close(nccl_latency(AllGather, 8, 1), us(8.4 + 7.0 * 3.4)));
    assert!(close(nccl_latency(AllReduce, 8, 1), us(8.4 + 14.0 * 3.4)));
    // 384 ranks on 48 nodes: 383 steps, 47 of them across nodes
    assert!(close(
        nccl_latency(AllGather, 384, 48),
        us(8.4 + 336.0 * 3.4 + 47.0 * 14.0)
    ));
    // 1024 ranks on 128 nodes: the ring's 2046 steps (254 across) lose to the tree,
    // 2 x (7 x 4.0 + log2(128) x 14)
    assert!(close(
        nccl_latency(AllReduce, 1024, 128),
        us(8.4 + 2.0 * (7.0 * 4.0 + 7.0 * 14.0))
    ));
    // 384 ranks on 48 nodes: NCCL's log2i rounds log2(48) down to 5 (ring: 8.4 + 672 x 3.4
    // + 94 x 14 = 3609.2 us)
    assert!(close(
        nccl_latency(AllReduce, 384, 48),
        us(8.4 + 2.0 * (7.0 * 4.0 + 5.0 * 14.0))
    ));
}

#[test]
fn zero1_without_overlap_adds_its_collectives() {
    // DeepSpeed ZeRO-1 (overlap_comm off below stage 3) on 8 H100 in a node, Llama-3.2-1B:
    // reduce-scatter of the gradients (bf16, 2 B) and all-gather of the updated bf16
    // parameters once per step, each 7/8 x P x 2 B / 450e9 B/s. P = 1 235 814 400 (the
    // preset's exact count; tied embeddings counted once).
    let t = time_of(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "gradient_accumulation_steps": 2, "seq_len": 1024},
        "engine": {"type": "deepspeed", "zero_stage": 1},
        "hardware": {"gpu": "h100-80gb", "num_gpus": 8}
    }));
    let p = 1_235_814_400.0;
    let one = 7.0 / 8.0 * p * 2.0 / 450e9;
    // the reduce-scatter in ceil(P / 5e8) = 3 buckets (reduce_bucket_size), the all-gather
    // as one collective per optimizer parameter group (2: all_gather_into_tensor_dp_groups),
    // each with NCCL's ring latency over 8 ranks in a node: 8.4 + 7 x 3.4 = 32.2 us
    let latency = (3.0 + 2.0) * 32.2e-6;
    assert!(
        close(term(&t, "data_parallel"), 2.0 * one + latency),
        "{t:?}"
    );
    // the step reads bf16 weights + grads + fp32 master + 2 fp32 states, writes all but the
    // gradients, over its 1/8 shard of the states at 3.35e12 B/s... and the bf16 weights it
    // rewrites are counted on the shard as well
    let step = p / 8.0 * ((2 + 2 + 4 + 8) as f64 + (2 + 4 + 8) as f64) / 3350e9;
    assert!(close(term(&t, "optimizer_step"), step), "{t:?}");
}

#[test]
fn the_ends_of_a_micro_batch_stay_exposed() {
    // Llama-3.2-1B on 8 H100 in a node, b 1, s 4096, AMP bf16: the traffic between the ends
    // hides behind the compute (FSDP: 7/8 x P x (2 + 2 + 4) B / 450e9 = 19 ms under about
    // 60 ms of compute); what no compute can hide stays. Parameters: the tied embedding
    // E = 128 256 x 2048 = 262 668 288 (the FSDP root; no separate head), the first layer
    // L = attention 2048 x (2048 + 512 + 512 + 2048) + MLP 3 x 2048 x 8192 + its share of
    // the norms (16 x 2 x 2048 + the final 2048) / 16 = 10 485 760 + 50 331 648 + 4 224.
    let e = 262_668_288.0;
    let layer = 10_485_760.0 + 50_331_648.0 + 4_224.0;
    let base = json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "seq_len": 4096, "precision": "amp_bf16"},
        "hardware": {"gpu": "h100-80gb", "num_gpus": 8}
    });
    let with_engine = |engine: Value| {
        let mut v = base.clone();
        v["engine"] = engine;
        time_of(v)
    };
    // FSDP2: the root and the first layer all-gathered in bf16 (2 B) before any forward
    // compute, the first layer's and the root's gradients reduce-scattered in fp32 (4 B)
    // after the last backward computation
    // (two all-gathers and two reduce-scatters, one per unit, each with NCCL's ring latency
    // over 8 ranks in a node: 8.4 + 7 x 3.4 = 32.2 us)
    let lat = 32.2e-6;
    let t = with_engine(json!({"type": "fsdp", "fsdp_version": 2}));
    let fsdp = 7.0 / 8.0 * (e + layer) * (2.0 + 4.0) / 450e9 + 4.0 * lat;
    assert!(close(term(&t, "data_parallel"), fsdp), "{t:?} {fsdp}");
    // torchao float8 (precision fp8) keeps fp32 weights but computes in bf16: FSDP's
    // policy gathers bf16 and reduces fp32 (torchtitan mixed_precision_param /
    // mixed_precision_reduce), the same bytes as AMP, not the fp32 weights' 4 + 4
    let mut v = base.clone();
    v["training"]["precision"] = json!("fp8");
    v["engine"] = json!({"type": "fsdp", "fsdp_version": 2});
    let t = time_of(v);
    assert!(close(term(&t, "data_parallel"), fsdp), "{t:?} {fsdp}");
    // DDP: the last bucket holds the embedding's fp32 gradient (AMP keeps fp32 parameters),
    // all-reduced (2 x 7/8) after backward, one collective (ring: 8.4 + 14 x 3.4 = 56 us;
    // a tree: 8.4 + 2 x 7 x 4.0 = 64.4 us)
    let t = with_engine(json!({"type": "ddp"}));
    let ddp = 2.0 * 7.0 / 8.0 * e * 4.0 / 450e9 + 56e-6;
    assert!(close(term(&t, "data_parallel"), ddp), "{t:?} {ddp}");
    // ZeRO-3: the embedding and the first layer fetched before the forward (bf16), the
    // open bucket's embedding gradient reduce-scattered after backward (bf16 communication)
    // (the embedding and the first layer's 7 linear modules, each one all-gather; the
    // norms' 2048 elements stay whole under the 1e5 persistence threshold; one
    // reduce-scatter)
    let t = with_engine(json!({"type": "deepspeed", "zero_stage": 3}));
    let zero3 = 7.0 / 8.0 * ((e + layer) * 2.0 + e * 2.0) / 450e9 + (8.0 + 1.0) * lat;
    assert!(close(term(&t, "data_parallel"), zero3), "{t:?} {zero3}");
    // ZeRO-2 with overlap_comm: the gradient buckets hide under backward but the last
    // (the embedding's, bf16) and the all-gather of the updated bf16 parameters, which runs
    // inside the optimizer step, over all P = 1 235 814 400 parameters
    let t = with_engine(json!({"type": "deepspeed", "zero_stage": 2, "overlap_comm": true}));
    // (one reduce-scatter; the all-gather one collective per parameter group, 2)
    let zero2 = 7.0 / 8.0 * (e * 2.0 + 1_235_814_400.0 * 2.0) / 450e9 + (1.0 + 2.0) * lat;
    assert!(close(term(&t, "data_parallel"), zero2), "{t:?} {zero2}");
}

#[test]
fn data_parallel_traffic_hides_only_behind_its_own_pass() {
    // Llama-3.2-1B on 8 H100 in a node, FSDP2 without resharding after forward, b 1, s 512,
    // pure bf16 (e = 2 B): each unit is all-gathered once, before its forward, and its
    // gradients reduce-scattered in its backward (both bf16). Every unit's gather:
    // c = 7/8 x P x 2 B / 450e9 + 17 units x 32.2 us (P = 1 235 814 400; ring latency over
    // 8 ranks in a node 8.4 + 7 x 3.4 us), the reduction the same bytes and collectives.
    let t = time_of(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "seq_len": 512, "precision": "bf16"},
        "engine": {"type": "fsdp", "fsdp_version": 2, "reshard_after_forward": false},
        "hardware": {"gpu": "h100-80gb", "num_gpus": 8}
    }));
    let lat = 32.2e-6;
    let c = 7.0 / 8.0 * 1_235_814_400.0 * 2.0 / 450e9 + 17.0 * lat;
    // the forward it can hide behind: matmuls 2 x 1 235 746 816 FLOPs per token at
    // 989e12 x 0.6, attention 16 layers x 2 x 32 heads x 128 x (512 + 1)/2 keys per token
    // at 989e12 x 0.35, the elementwise kernels' forward bytes per token (as in
    // elementwise_kernels_by_hand: 16 x 313 344 + the loss's 128 256 x 14) at 3.35e12 B/s
    let tokens = 512.0;
    let fwd = tokens
        * (2.0 * 1_235_746_816.0 / (989e12 * 0.6)
            + 16.0 * 2.0 * 32.0 * 128.0 * 256.5 / (989e12 * 0.35)
            + (16.0 * 313_344.0 + 128_256.0 * 14.0) / 3350e9);
    // the backward (twice the matmuls, 2.5 x attention, 16 x 450 560 + 128 256 x 22 bytes:
    // 5.9 ms) outlasts the reduction (5.4 ms), which hides but for its edge (the root's and
    // the first layer's gradients, reduced after the last backward computation: 2
    // collectives of E + L elements, as in the_ends_of_a_micro_batch_stay_exposed); the
    // forward is
    // shorter than the gather (3.2 against 4.8 + 0.5 ms), which is exposed by the
    // difference: data parallel = c - fwd + edge = 3.5 ms. (Pooled over both passes, the
    // 10.7 ms of traffic against 9.1 ms of compute would expose 1.6 ms.)
    let edge = 7.0 / 8.0 * (262_668_288.0 + 10_485_760.0 + 50_331_648.0 + 4_224.0) * 2.0 / 450e9
        + 2.0 * lat;
    let expected = c - fwd + edge;
    assert!(
        close(term(&t, "data_parallel"), expected),
        "{t:?} {expected}"
    );
}

#[test]
fn float8_all_gather_sends_the_linear_weights_in_one_byte() {
    // Under torchao float8 (precision fp8, param and reduce dtype bf16) on 16 H100 in two
    // nodes, FSDP2 without resharding after forward, b 1, s 512, with and without FSDP2's
    // float8 all-gather (engine.float8_all_gather), the decoder layers' linear weights are
    // gathered in 1 B instead of 2:
    // * Llama-3.2-1B: 16 x 60 817 408 = 973 078 528 elements (P = 1 235 814 400 less the
    //   root's 262 670 336 and the norms' 16 x 4 096).
    // * Qwen2.5-0.5B (24 layers, hidden 896, 14 heads and 2 KV heads of 64, MLP 4864): q
    //   and o 896 x 896 = 802 816 each, k and v 896 x 128 = 114 688 each, gate, up and down
    //   3 x 896 x 4864 = 13 074 432; 14 909 440 a layer, x 24 = 357 826 560. Its q, k and v
    //   biases (1 152 a layer) stay in bf16, as memory's placement holds them
    //   (ParamGroup::float8_linear: the weight only; the step-time rule before 2026-11-25
    //   counted their 27 648 bytes too).
    // The ring spans the nodes (50e9 B/s per GPU): even the float8 gather (Llama: 15/16 x
    // (2 P - 973 078 528) B / 50e9 = 28 ms) outlasts the forward (under 4 ms): exposed but
    // for the forward either way (the edge is part of it), so the whole saving, 15/16 x the
    // float8 elements in B / 50e9 (18.2 and 6.71 ms), leaves the data-parallel time, less
    // what the forward gains: without the float8 all-gather the forward casts the gathered
    // weights itself (torchao `Float8Linear.forward`: amax reads 2 B, the cast reads 2 and
    // writes 1: 5 B per element at 3.35e12 B/s, 1.45 and 0.53 ms), and the longer forward
    // hides that much more of the gather. The reduction (bf16 gradients either way), the
    // collectives' latencies and the compute are unchanged.
    for (preset, float8_elements) in [
        ("llama-3.2-1b", 973_078_528.0),
        ("qwen2.5-0.5b", 357_826_560.0),
    ] {
        let run = |float8_all_gather: bool| {
            time_of(json!({
                "model": {"preset": preset},
                "training": {"micro_batch_size": 1, "seq_len": 512, "precision": "fp8"},
                "engine": {"type": "fsdp", "fsdp_version": 2, "reshard_after_forward": false,
                           "param_dtype": "bf16", "reduce_dtype": "bf16",
                           "float8_all_gather": float8_all_gather},
                "hardware": {"gpu": "h100-80gb", "num_gpus": 16}
            }))
        };
        let (bf16, float8) = (run(false), run(true));
        let saved = 15.0 / 16.0 * float8_elements / 50e9 - float8_elements * 5.0 / 3.35e12;
        let dp = |t: &StepTime| term(t, "data_parallel");
        assert!(
            close(dp(&bf16) - dp(&float8), saved),
            "{preset}: {} {} {saved}",
            dp(&bf16),
            dp(&float8)
        );
        assert!(close(term(&bf16, "compute"), term(&float8, "compute")));
    }
}

#[test]
fn float8_runs_the_converted_linears_in_float8() {
    // Qwen3-30B-A3B (48 MoE layers, hidden 2048, 32 heads and 4 KV heads of 128, 128
    // experts of 768, 8 per token, untied vocabulary 151 936) on one H100, b 1, s 1024,
    // precision fp8, no recomputation. Per layer and token: q and o 2048 x 4096 =
    // 8 388 608 each, k and v 2048 x 512 = 1 048 576 each (18 874 368: the nn.Linear weights
    // torchao converts); the router 2048 x 128 = 262 144 and 8 active experts of 3 x 2048 x
    // 768 = 37 748 736 (38 010 880: not nn.Linear or filtered, bf16). Head 151 936 x 2048 =
    // 311 164 928 (bf16). Forward 2 FLOPs each, backward 4, at 0.6 of 1979e12 (fp8) or
    // 989e12 (bf16). Attention as in the dense test below: 48 layers x 2 x 32 heads x 256
    // head dims x 512.5 keys, 3.5 times with backward, at 989e12 x 0.35.
    let run = |engine: Value| {
        time_of(json!({
            "model": {"preset": "qwen3-30b-a3b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "fp8"},
            "engine": engine,
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        }))
    };
    let (converted, other, head) = (48.0 * 18_874_368.0, 48.0 * 38_010_880.0, 311_164_928.0);
    let mm = |fp8: f64, bf16: f64| 6.0 * 1024.0 * (fp8 / 1979e12 + bf16 / 989e12) / 0.6;
    let attn = 3.5 * 48.0 * 2.0 * 32.0 * 256.0 * 512.5 * 1024.0 / (989e12 * 0.35);
    // transformers' modules (FSDP2): the converted linears in float8, the rest in bf16
    let fsdp = run(json!({"type": "fsdp", "fsdp_version": 2}));
    let expected = mm(converted, other + head) + attn;
    assert!(
        close(term(&fsdp, "compute"), expected),
        "{fsdp:?} {expected}"
    );
    // Megatron-Core's Transformer Engine layers: every decoder GEMM in fp8, grouped
    // experts and router too; the head in bf16
    let megatron = run(json!({"type": "megatron"}));
    let expected = mm(converted + other, head) + attn;
    assert!(
        close(term(&megatron, "compute"), expected),
        "{megatron:?} {expected}"
    );
    // GPT-2's projections are Conv1D, not nn.Linear: under transformers' modules nothing
    // runs in float8, and fp8 computes exactly as bf16; Megatron's GPT layers do
    let gpt2 = |engine: Value, precision: &str| {
        let t = time_of(json!({
            "model": {"preset": "gpt2"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": precision},
            "engine": engine,
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        }));
        term(&t, "compute")
    };
    let fsdp = json!({"type": "fsdp", "fsdp_version": 2});
    assert!(close(gpt2(fsdp.clone(), "fp8"), gpt2(fsdp, "bf16")));
    let megatron = json!({"type": "megatron"});
    assert!(gpt2(megatron.clone(), "fp8") < 0.9 * gpt2(megatron, "bf16"));
}

#[test]
fn the_dense_compute_term_follows_the_flop_count() {
    // Llama-3.2-1B on one H100, b 1, s 1024, bf16, no recomputation. Matmul parameters per
    // token: 16 layers x (attention 2048 x (2048 + 2 x 512 + 2048) + MLP 3 x 2048 x 8192)
    // = 16 x (10 485 760 + 50 331 648) = 973 078 528, plus the head 128 256 x 2048 =
    // 262 668 288. Forward 2 FLOPs each, backward 4: 6 x 1 235 746 816 per token at
    // 989e12 x 0.6. Attention: 16 layers x 2 FLOPs x 32 heads x (64 + 64) head dims (scores
    // and values) x (1024 + 1)/2 keys per token forward, 3.5 times with backward, at
    // 989e12 x 0.35.
    let t = time_of(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "bf16"},
        "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
    }));
    let mm = 6.0 * 1_235_746_816.0 * 1024.0 / (989e12 * 0.6);
    let attn = 3.5 * 16.0 * 2.0 * 32.0 * 128.0 * 512.5 * 1024.0 / (989e12 * 0.35);
    assert!(close(term(&t, "compute"), mm + attn), "{t:?} {}", mm + attn);
}

#[test]
fn eager_attention_moves_its_scores_at_memory_bandwidth() {
    use calc_core::precision::ModelCode;
    use calc_core::steptime::eager_score_bytes;
    // bytes per score element (e = 2), forward and backward, by (code, autocast, fp16,
    // attention dropout)
    for (code, autocast, fp16, p, expected) in [
        // Megatron with attention dropout: forward softmax 2e + dropout (2e + 1) = 9,
        // backward dropout (2e + 1) + softmax (3e) = 11
        (ModelCode::Megatron, false, true, 0.1, (9.0, 11.0)),
        // ... without dropout: 4 and 6
        (ModelCode::Megatron, false, false, 0.0, (4.0, 6.0)),
        // transformers, bf16 without autocast: scaling 2e, mask add (e + e), fp32 copy
        // (e + 4) and fp32 softmax (4 + 4), half copy (4 + e) = 28; backward the half
        // copy's (e + 4), softmax's (4 + 4 + 4), the fp32 copy's (4 + e), scaling's 2e = 28
        (ModelCode::Transformers, false, false, 0.0, (28.0, 28.0)),
        // under autocast the fp32 mask promotes the sum: scaling 4, add (2 + 4), softmax
        // (4 + 4), half copy (4 + 2), dropout 0.1 (2 + 2 + 1) = 29; backward dropout 5, half
        // copy 6, softmax 12, the sum's gradient cast back (4 + 2), scaling 4 = 33
        (ModelCode::Transformers, true, false, 0.1, (29.0, 33.0)),
    ] {
        assert_eq!(
            eager_score_bytes(code, 2.0, autocast, fp16, p),
            expected,
            "{code:?} autocast {autocast} fp16 {fp16} dropout {p}"
        );
    }

    // Llama-3.2-1B on one H100, b 1, s 1024, bf16, as the dense compute test below but with
    // eager attention: 16 layers x 32 heads x 1024 x 1024 scores; each matmul kernel is
    // memory-bound (2 B per score at 3.35 TB/s > 2 x 64 FLOPs at 989e12 x 0.6), two forward
    // and four backward, plus the 28 + 28 elementwise bytes
    let t = time_of(json!({
        "model": {"preset": "llama-3.2-1b"},
        "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "bf16", "attention": "eager"},
        "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
    }));
    let mm = 6.0 * 1_235_746_816.0 * 1024.0 / (989e12 * 0.6);
    let scores = 16.0 * 32.0 * 1024.0 * 1024.0;
    let kernel = (2.0 / 3350e9f64).max(2.0 * 64.0 / (989e12 * 0.6));
    let attn = scores * (6.0 * kernel + (28.0 + 28.0) / 3350e9);
    assert!(close(term(&t, "compute"), mm + attn), "{t:?} {}", mm + attn);
}

#[test]
fn sdpa_given_the_sliding_mask_visits_every_key() {
    // Mistral-7B v0.1 (32 layers, 32 heads of 128, window 4096) on one H100, b 1, s 4096,
    // bf16: the sequence reaches the window, so transformers hands SDPA the window as a
    // mask and its memory-efficient kernel visits all 4096 keys per query; flash attention
    // (a window as long as the sequence is causal attention) skips the masked half, (4096 +
    // 1) / 2 keys on average. Attention time: 3.5 x 32 layers x 2 x 32 heads x (128 + 128) x keys x 4096
    // tokens at 989e12 x 0.35; the rest is the same.
    let time = |attention: &str, seq: u64| {
        time_of(json!({
            "model": {"preset": "mistral-7b-v0.1"},
            "training": {"micro_batch_size": 1, "seq_len": seq, "precision": "bf16", "attention": attention},
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        }))
    };
    let per_key = 3.5 * 32.0 * 2.0 * 32.0 * 256.0 * 4096.0 / (989e12 * 0.35);
    let (sdpa, flash) = (time("sdpa", 4096), time("flash", 4096));
    let diff = term(&sdpa, "compute") - term(&flash, "compute");
    assert!(
        (diff - per_key * 2047.5).abs() <= 1e-9 * diff,
        "{diff} {}",
        per_key * 2047.5
    );
    // one token short of the window: no mask, SDPA's flash kernel, (4095 + 1) / 2 keys
    let (sdpa, flash) = (time("sdpa", 4095), time("flash", 4095));
    assert!(close(term(&sdpa, "compute"), term(&flash, "compute")));
}

#[test]
fn triton_flash_attention_by_hand() {
    // Mistral-7B v0.1 (32 layers, 32 heads of 128) on one H100, b 1, s 4095 (below the
    // window: causal, (4095 + 1) / 2 keys per query on average), bf16. FlashAttention-2's
    // forward: 32 layers x 2 matmuls x 32 heads x 2 x 128 x 2048 keys x 4095 tokens at
    // 989e12 x 0.35, its backward 2.5 times that; the Triton kernel (MPT's `attn_impl:
    // triton`) 1.4 times the forward and 2 times the backward (FlashAttention-2 paper Sec.
    // 4.1): (1.4 + 5) - (1 + 2.5) = 2.9 forwards more. Nothing else changes, its memory
    // included.
    let doc = |attention: &str| {
        json!({
            "model": {"preset": "mistral-7b-v0.1"},
            "training": {"micro_batch_size": 1, "seq_len": 4095, "precision": "bf16", "attention": attention},
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        })
    };
    let (flash, triton) = (time_of(doc("flash")), time_of(doc("flash_triton")));
    let fwd = 32.0 * 2.0 * 32.0 * 2.0 * 128.0 * 2048.0 * 4095.0 / (989e12 * 0.35);
    let diff = term(&triton, "compute") - term(&flash, "compute");
    assert!(
        (diff - 2.9 * fwd).abs() <= 1e-9 * diff,
        "{diff} {}",
        2.9 * fwd
    );
    for name in ["elementwise", "recomputation", "optimizer_step"] {
        assert_eq!(term(&triton, name), term(&flash, name), "{name}");
    }
    let peak = |attention: &str| {
        calc_core::estimate(&config(doc(attention)))
            .unwrap()
            .peak_allocated_bytes
    };
    assert_eq!(peak("flash_triton"), peak("flash"));
    assert_ne!(peak("eager"), peak("flash"));
    // axolotl has no flag for it: exporting says so instead of writing FlashAttention-2
    let c = config(doc("flash_triton"));
    assert!(calc_core::formats::export(&c, calc_core::formats::Format::Axolotl).is_err());
}

#[test]
fn published_throughput_within_the_stated_errors() {
    // tests/reference/throughput_cases.json: torchtitan's and Megatron-LM's published tokens/s
    // per GPU. ACCURACY.md reports each case; this asserts what holds today, so that a change
    // that worsens it fails: every case resolves and is within a factor 2.1, the Megatron-LM
    // README's cases within 10 %, the Megatron-LM paper's PTD-P runs (Tables 1 and 2, added
    // after the step-time model was written; eager attention's time, added 2026-11-24 when
    // the step time began to read the attention implementation, brought the 1.7B and 3.6B
    // runs from +32 % and +24 % to +6 % and +5 %) within 13 %, its ZeRO-3 runs within 50 %,
    // Megatron-LM's CI runs of a 7B (added
    // the same way: +37 % and +25 % on 2026-11-24) within 40 %, torchtitan's runs on
    // standard H200s (added 2026-11-24: +11.6 % and +11.9 %) within 20 %, MosaicML
    // llm-foundry's MPT runs (added 2026-11-24: -57.9 % to +90.9 %) within 95 %.
    // The elementwise kernels' time (2026-11-24) moved the README's 70B from -5.0 to
    // -10.3 % and the paper's 529.6B and 1008B from -11.7 and -12.1 % to -14.2 and -14.1 %
    // (bounds 12 % and 15 % since), the CI runs to +22 % and +12 % (bound 25 %), the H200
    // runs to -0.7 and +0.9 % (bound 5 %) and the MPT runs to -57.9 to +81.6 % (bound 85 %).
    // Each collective's fixed latency (NCCL's ring and tree model, 2026-11-24) brought the
    // paper's ZeRO-3 runs from +18..+45 % to +12..+32 % (bound 35 %) and its TP x PP runs
    // from -14.2..+2.0 % to -14.6..-0.8 %, the README's 70B to -11.1 %. torchao's float8
    // casts (2026-11-29) moved the H200 runs to -4.9 and -3.4 % (bound 5 %); ZeRO-3's
    // re-gathers under full recomputation (2026-11-29) the paper's ZeRO-3 runs from
    // +11.5..+32.0 % to -6.2..+18.4 % (bound 20 %). The MPT runs timed with their Triton
    // attention kernel (2026-11-29): -58.6 to +32.9 % (bound 60 %). The paper's ZeRO-3 runs
    // timed with DeepSpeed's fetch as it was before 0.6 (engine.stage3_blocking_fetch,
    // 2026-11-29): -7.4..+8.9 % (bound 10 %).
    let v: Value =
        serde_json::from_str(include_str!("../../tests/reference/throughput_cases.json")).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 40);
    let mut tokens = std::collections::HashMap::new();
    for c in cases {
        let id = c["id"].as_str().unwrap();
        let t = time_of(c["config"].clone());
        let published = c["tokens_per_second_per_gpu"].as_f64().unwrap();
        let err = t.tokens_per_second_per_gpu / published - 1.0;
        assert!(err.abs() < 1.1, "{id}: {err}");
        let bound = match id {
            _ if id.starts_with("MG") => 0.12,
            _ if id.starts_with("MC") => 0.25,
            _ if id.starts_with("TH") => 0.05,
            _ if id.starts_with("MF") => 0.60,
            _ if id.starts_with("NA-T2-ZeRO-3") => 0.10,
            // the paper's tensor x pipeline runs: -11.9 to +5.7 % since the Table 1 rows run
            // the authors' scripts and Megatron-LM's scatter/gather sends (2026-11-29)
            _ if id.starts_with("NA") => 0.13,
            // torchtitan's H100 runs: +1.5 to +88.0 % since TT-5a/b's micro-batches were
            // read from torchtitan's source (2026-11-29; +87.0 % before)
            _ => 0.9,
        };
        assert!(err.abs() < bound, "{id}: {err}");
        // the paper's teraFLOP/s converted by its Eq. 3: 96 l h^2 (1 + s/6h + V/16lh) per token
        if let Some(x) = c["published_model_tflops_per_gpu"].as_f64() {
            let m = &c["config"]["model"]["hf_config"];
            let (l, h) = (
                m["n_layer"].as_f64().unwrap(),
                m["n_embd"].as_f64().unwrap(),
            );
            let per_token =
                96.0 * l * h * h * (1.0 + 2048.0 / (6.0 * h) + 51200.0 / (16.0 * l * h));
            assert!((x * 1e12 / per_token - published).abs() <= 0.05, "{id}");
        }
        tokens.insert(id.to_string(), t.tokens_per_second_per_gpu);
    }
    // the paper's Table 2: PTD-P beats ZeRO-3 at every size (published 107 vs 100 tokens/s
    // per GPU on 384 GPUs, 104 vs 61 on 768, 98 vs 31 on 1536, ...); at micro-batch 4 (384
    // and 640 GPUs) only since DeepSpeed's blocking fetch is modelled (before it, 103 vs 113
    // and 36.2 vs 38.0 estimated)
    for (ptdp, zero) in [
        ("NA-T2-PTD-P-174.6B-384", "NA-T2-ZeRO-3-174.6B-384"),
        ("NA-T2-PTD-P-529.6B-560", "NA-T2-ZeRO-3-529.6B-640"),
        ("NA-T2-PTD-P-174.6B-768", "NA-T2-ZeRO-3-174.6B-768"),
        ("NA-T2-PTD-P-174.6B-1536", "NA-T2-ZeRO-3-174.6B-1536"),
        ("NA-T2-PTD-P-529.6B-1120", "NA-T2-ZeRO-3-529.6B-1120"),
        ("NA-T2-PTD-P-529.6B-2240", "NA-T2-ZeRO-3-529.6B-2240"),
    ] {
        assert!(tokens[ptdp] > tokens[zero], "{ptdp} vs {zero}");
    }
    // torchtitan: FSDP over 8 GPUs (one node) beats FSDP over 128 (5762 vs 5605): the
    // root's and first layer's gather and reduce-scatter at the ends of the step cross the
    // nodes' NICs (50 GB/s) instead of NVLink (450 GB/s)
    assert!(tokens["TT-1a"] > tokens["TT-3a"]);
    // torchtitan 405B: interleaved 1F1B beats 1F1B (128 vs 100): 2 virtual stages halve
    // the bubble of 7 micro-batch times in 8 (TT-5b's uneven chunks approximated)
    assert!(tokens["TT-5b"] > tokens["TT-5a"]);
    // Megatron-LM's CI, GPT 7B on one DGX H100: TP 4 beats PP 4 with 8 virtual stages (7348
    // vs 7122 tokens/s per GPU, golden iteration times)
    assert!(tokens["MC-7B-TP4"] > tokens["MC-7B-PP4"]);
    // torchtitan on H200, Llama 3.1 8B under FSDP: 32 GPUs beat 64 (10938 vs 10753
    // tokens/s per GPU): the gathers and reduce-scatters span twice the ranks over the same
    // 50 GB/s NICs
    assert!(tokens["TH-8B-32"] > tokens["TH-8B-64"]);
}

#[test]
fn held_out_throughput_within_budget() {
    // the held-out part of tests/reference/throughput_cases.json (30 % of each source by
    // scripts/throughput_split.py's seeded shuffle): the step-time model is not developed
    // against these; calc_core::accuracy's throughput budgets are asserted on them
    let v: Value =
        serde_json::from_str(include_str!("../../tests/reference/throughput_cases.json")).unwrap();
    let mut errs = Vec::new();
    for c in v["cases"].as_array().unwrap() {
        let split = c["split"].as_str().unwrap();
        assert!(split == "train" || split == "heldout", "{split}");
        if split == "heldout" {
            let t = time_of(c["config"].clone());
            let published = c["tokens_per_second_per_gpu"].as_f64().unwrap();
            errs.push(t.tokens_per_second_per_gpu / published - 1.0);
        }
    }
    // 30 % of 17 torchtitan (H100), 2 Megatron-LM README, 22 Megatron-LM paper, 2 Megatron-LM
    // CI, 2 torchtitan H200 and 129 llm-foundry MPT cases, rounded
    assert_eq!(errs.len(), 5 + 1 + 7 + 1 + 1 + 39);
    let s = calc_core::accuracy::error_stats(&errs);
    assert!(
        s.median <= calc_core::accuracy::THROUGHPUT_HELDOUT_MEDIAN,
        "median {:.4}",
        s.median
    );
    assert!(
        s.max <= calc_core::accuracy::THROUGHPUT_HELDOUT_MAX,
        "max {:.4}",
        s.max
    );
}

fn request(model: &str, gpu: &str, n: u64, seq: u64, batch: u64) -> PlanRequest {
    PlanRequest {
        config: config(json!({
            "model": {"preset": model},
            "training": {"seq_len": seq},
            "hardware": {"gpu": gpu}
        })),
        num_gpus: Some(n),
        global_batch_sequences: Some(batch),
        ..Default::default()
    }
}

fn same_top(a: &PlanResult, b: &PlanResult) {
    let key = |r: &PlanResult| {
        r.plans
            .iter()
            .map(|p| (p.summary.clone(), p.total_bytes, p.step.seconds.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(a), key(b));
}

#[test]
fn pruned_search_returns_the_exhaustive_top_ten() {
    for (model, gpu, n, seq, batch, engines) in [
        (
            "llama-3.2-1b",
            "rtx4090-24gb",
            4,
            2048,
            8,
            vec!["ddp", "deepspeed", "fsdp"],
        ),
        (
            "llama-3.1-8b",
            "a100-40gb",
            8,
            4096,
            16,
            vec!["fsdp", "megatron"],
        ),
        ("qwen3-30b-a3b", "h100-80gb", 8, 2048, 16, vec!["megatron"]),
    ] {
        let req = PlanRequest {
            engines: engines.iter().map(|s| s.to_string()).collect(),
            ..request(model, gpu, n, seq, batch)
        };
        let fast = plan(&req).unwrap();
        let all = plan_exhaustive(&req).unwrap();
        assert_eq!(fast.plans.len(), 10, "{model}: {}", fast.message);
        same_top(&fast, &all);
        // the pruned search estimated fewer candidates
        assert!(fast.estimates < all.estimates, "{model}");
        // ranked by step time
        assert!(
            fast.plans
                .windows(2)
                .all(|w| w[0].step.seconds <= w[1].step.seconds)
        );
        // each plan's document estimates to the plan's bytes, and fits with 5 % headroom
        for p in &fast.plans {
            let e = calc_core::estimate(&p.config).unwrap();
            assert_eq!(e.total_bytes, p.total_bytes);
            assert!(p.total_bytes as f64 <= 0.95 * p.gpu_memory_bytes as f64);
        }
    }
}

#[test]
fn two_gpus_list_every_layout() {
    // Llama-3.2-1B (16 layers, 32 heads, 8 KV heads), 2 GPUs, global batch 2, s 2048,
    // Megatron only (2 variants: with and without the distributed optimizer), no
    // recomputation. Layouts of 2 GPUs: DP 2 (local batch 1: micro-batch 1), TP 2, CP 2
    // (local batch 2: micro-batch 1 or 2), PP 2 with 1, 2 or 4 virtual stages (8 layers
    // each divisible; micro-batch 1 or 2): 1 + 2 + 2 + 3 x 2 = 11 per variant, 22 in all.
    let req = PlanRequest {
        engines: vec!["megatron".into()],
        recompute: vec![Recompute::None],
        top: 100,
        ..request("llama-3.2-1b", "h100-80gb", 2, 2048, 2)
    };
    let r = plan(&req).unwrap();
    assert_eq!(r.candidates, 22);
    // all of them fit a 1B model on 80 GB
    assert_eq!(r.plans.len(), 22, "{}", r.message);
    // fewer than the 100 asked: the search saw every candidate, so 22 is all that fit
    assert!(
        r.message.starts_with("22 plans fit; fastest: "),
        "{}",
        r.message
    );
    let all = plan_exhaustive(&req).unwrap();
    same_top(&r, &all);
    // as many as asked: more may fit, and the message says only that these are the fastest
    let three = plan(&PlanRequest { top: 3, ..req }).unwrap();
    assert_eq!(three.plans.len(), 3);
    assert!(
        three
            .message
            .starts_with("the 3 fastest plans that fit (more may fit); fastest: "),
        "{}",
        three.message
    );
}

#[test]
fn fp8_plans_try_fsdp2_float8_all_gather() {
    // Llama-3.2-1B on 2 H100, global batch 2, s 2048, FSDP only, no recomputation. Under
    // torchao float8 (precision fp8) each FSDP2 variant is tried with and without its float8
    // all-gather (engine.float8_all_gather): twice the candidates of amp_bf16.
    let req = |precision: &str| PlanRequest {
        config: config(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"seq_len": 2048, "precision": precision},
            "hardware": {"gpu": "h100-80gb"}
        })),
        engines: vec!["fsdp".into()],
        recompute: vec![Recompute::None],
        top: 100,
        num_gpus: Some(2),
        global_batch_sequences: Some(2),
        ..Default::default()
    };
    let bf16 = plan(&req("amp_bf16")).unwrap();
    let fp8 = plan(&req("fp8")).unwrap();
    assert_eq!(fp8.candidates, 2 * bf16.candidates);
    assert!(bf16.plans.iter().all(|p| !p.summary.contains("float8")));
    // each float8 plan beside its twin (the same plan without the float8 all-gather)
    let mut twins = 0;
    for p in fp8.plans.iter().filter(|p| p.summary.contains("float8")) {
        let plain = p.summary.replace(" + float8 all-gather", "");
        let q = fp8.plans.iter().find(|q| q.summary == plain).unwrap();
        assert!(p.total_bytes < q.total_bytes, "{}", p.summary);
        assert!(p.step.seconds <= q.step.seconds, "{}", p.summary);
        twins += 1;
        // DP 2 without resharding after forward: at the forward's last layer the 16 layers'
        // unsharded weights are kept and the last one's flat all-gather buffer is not yet
        // freed (foreach_all_gather_copy_out): 17 x 60 817 408 linear-weight elements
        // (2048 x (2048 + 2 x 512 + 2048) + 3 x 2048 x 8192 each) in 1 B instead of 2
        if p.summary
            .starts_with("FSDP2 (no reshard after forward) + float8 all-gather, DP 2,")
        {
            assert_eq!(
                q.total_bytes - p.total_bytes,
                17 * 60_817_408,
                "{}",
                p.summary
            );
        }
    }
    assert!(twins > 4, "{twins}");
}

#[test]
fn uneven_splits_take_virtual_stages() {
    // Llama-3.2-1B (16 layers, 32 heads) on 3 GPUs, global batch 3, s 2048, Megatron only
    // (with and without the distributed optimizer), no recomputation. TP 3 does not divide
    // the heads and CP 3 not the sequence (2048 / 6), so: DP 3 (micro-batch 1), or PP 3 with
    // an uneven split (micro-batch 1 or 3). Its virtual stages cut every stage into equal
    // chunks: v 1 splits 5 / 6 / 5; v 2 rounds the middle's ceil(16 / 3) = 6 to a multiple
    // of 2 (6) and the ends share 10 in pairs, 4 / 6 / 6; v 3 does not divide 16; v 4 takes
    // 8 in the middle, 4 / 8 / 4. (1 + 3 x 2) x 2 = 14 candidates.
    let req = PlanRequest {
        engines: vec!["megatron".into()],
        recompute: vec![Recompute::None],
        top: 100,
        ..request("llama-3.2-1b", "h100-80gb", 3, 2048, 3)
    };
    let r = plan(&req).unwrap();
    assert_eq!(r.candidates, 14);
    let splits: std::collections::BTreeSet<_> = r
        .plans
        .iter()
        .map(|p| {
            let par = &p.config.parallelism;
            (
                par.virtual_pipeline_parallel_size.unwrap_or(1),
                par.first_pipeline_stage_layers,
                par.last_pipeline_stage_layers,
            )
        })
        .collect();
    let want = [
        (1, None, None),
        (1, Some(5), Some(5)),
        (2, Some(4), Some(6)),
        (4, Some(4), Some(4)),
    ];
    assert_eq!(splits, want.into_iter().collect(), "{}", r.message);
    // each plan names its split: an uneven one with its stages' layers
    assert!(
        r.plans
            .iter()
            .any(|p| p.summary.contains("PP 3 (4 / 6 / 6 layers), VP 2, DP 1")),
        "{:?}",
        r.plans.iter().map(|p| &p.summary).collect::<Vec<_>>()
    );
    same_top(&r, &plan_exhaustive(&req).unwrap());
}

#[test]
fn plans_are_layouts_their_engine_runs() {
    // Llama-3.1-70B on 64 H100, 488 sequences of 8192 (4M tokens): the 50 fastest plans.
    // Megatron-DeepSpeed runs a pipeline as DeepSpeed's PipelineEngine (no virtual stages)
    // and refuses Megatron's sequence parallelism beside Ulysses (context parallelism);
    // Megatron-Core takes both. No candidate the config validation rejects is estimated.
    let mut req = request("llama-3.1-70b", "h100-80gb", 64, 8192, 488);
    req.top = 50;
    let r = plan(&req).unwrap();
    assert_eq!(r.invalid, 0, "{}", r.message);
    let (mut megds_cp, mut megatron_sp_cp) = (0, 0);
    for p in &r.plans {
        let l = &p.layout;
        let sp_cp = l.sequence_parallel && l.context_parallel_size > 1;
        if p.engine.starts_with("Megatron-DeepSpeed") {
            assert_eq!(l.virtual_pipeline_parallel_size, 1, "{}", p.summary);
            assert!(!sp_cp, "{}", p.summary);
            megds_cp += usize::from(l.context_parallel_size > 1);
        } else if p.engine.starts_with("Megatron") {
            megatron_sp_cp += usize::from(sp_cp);
        }
    }
    // both rules were exercised
    assert!(
        megds_cp > 0 && megatron_sp_cp > 0,
        "{megds_cp} {megatron_sp_cp}"
    );
}

#[test]
fn only_tensor_times_pipeline_fits() {
    // Llama-3.1-70B on 32 H100 under Megatron with full recomputation, s 4096, batch 64.
    // Without PP a rank holds 1/TP of 70.6B parameters: at TP 8, 8.8B x (2 B bf16 + 4 B fp32
    // main_grad) = 53 GB before the fp32 master weights and Adam states (12 B), which even
    // the distributed optimizer over DP 4 only cuts to 26 GB: 79 GB > 76 GB usable. Without
    // TP a stage of PP 32 holds 2-3 layers of 856M parameters x 18 B plus the 1 GB embedding
    // or head at 18 B... and PP alone cannot exceed 80 layers: every fitting plan splits both.
    let req = PlanRequest {
        engines: vec!["megatron".into()],
        recompute: vec![Recompute::Full],
        ..request("llama-3.1-70b", "h100-80gb", 32, 4096, 64)
    };
    let r = plan(&req).unwrap();
    assert!(!r.plans.is_empty(), "{}", r.message);
    for p in &r.plans {
        assert!(
            p.layout.tensor_parallel_size > 1 && p.layout.pipeline_parallel_size > 1,
            "{}",
            p.summary
        );
    }
}

#[test]
fn zero3_beats_tensor_parallelism_where_both_fit() {
    // Llama-2-13B on 8 A100-40GB in one node, s 4096, batch 32, full recomputation.
    // ZeRO-1/2 keep whole bf16 weights (26 GB) plus shards: over 40 GB. ZeRO-3 holds 1/8 of
    // 16 B per parameter (26 GB) plus the layer gathered at a time: its gathers and
    // reduce-scatter (3 x 7/8 x 26 GB / 300 GB/s = 0.23 s per micro-batch) hide under the
    // micro-batch's compute (6 x 13B x 4096 / 187 TFLOP/s = 1.7 s). TP 8 fits too but its
    // 6 all-reduces per layer (40 layers x 6 x 7/4 x 42 MB / 300 GB/s = 58 ms per
    // micro-batch) are exposed.
    let req = PlanRequest {
        engines: vec!["deepspeed".into(), "megatron".into()],
        recompute: vec![Recompute::Full],
        ..request("llama-2-13b", "a100-40gb", 8, 4096, 32)
    };
    let r = plan(&req).unwrap();
    let best = &r.plans[0];
    assert_eq!(best.engine, "ZeRO-3", "{}", r.message);
    assert_eq!(best.layout.tensor_parallel_size, 1);
    let tp = plan(&PlanRequest {
        engines: vec!["megatron".into()],
        ..req.clone()
    })
    .unwrap();
    let tp_best = tp.plans.iter().find(|p| p.layout.tensor_parallel_size > 1);
    let tp_best = tp_best.expect("a tensor-parallel plan fits");
    assert!(tp_best.step.seconds > best.step.seconds);
}

#[test]
fn more_gpus_never_slow_the_best_plan_beyond_communication() {
    // the same global batch on 8 and 16 GPUs: the best plan on 16 is no slower per step than
    // the best on 8 plus its own communication terms
    for (model, seq, batch) in [("llama-3.1-8b", 4096, 64), ("llama-3.2-3b", 2048, 64)] {
        let best = |n: u64| {
            plan(&request(model, "h100-80gb", n, seq, batch))
                .unwrap()
                .plans[0]
                .clone()
        };
        let (a, b) = (best(8), best(16));
        let comm: f64 = b
            .step
            .terms
            .iter()
            .filter(|t| {
                !matches!(
                    t.name.as_str(),
                    "compute" | "elementwise" | "recomputation" | "optimizer_step"
                )
            })
            .map(|t| t.seconds)
            .sum();
        assert!(
            b.step.seconds <= a.step.seconds + comm,
            "{model}: {} vs {}",
            b.summary,
            a.summary
        );
    }
}

#[test]
fn plan_requests_are_checked() {
    let mut req = request("llama-3.2-1b", "h100-80gb", 8, 2048, 16);
    req.engines = vec!["horovod".into()];
    req.min_headroom = 2.0;
    let e = plan(&req).unwrap_err();
    let fields: Vec<&str> = e.iter().map(|x| x.field.as_str()).collect();
    assert!(fields.contains(&"engines[0]"), "{fields:?}");
    assert!(fields.contains(&"min_headroom"), "{fields:?}");
    // no global batch
    let mut req = request("llama-3.2-1b", "h100-80gb", 8, 2048, 16);
    req.global_batch_sequences = None;
    let e = plan(&req).unwrap_err();
    assert_eq!(e[0].field, "global_batch_sequences");
    // a custom GPU has no datasheet rates
    let mut req = request("llama-3.2-1b", "h100-80gb", 8, 2048, 16);
    req.config.hardware.gpu = None;
    req.config.hardware.gpu_memory_gb = Some(calc_core::units::GbInput(80_000_000_000));
    let e = plan(&req).unwrap_err();
    assert_eq!(e[0].field, "hardware.gpu");
    // tokens are rounded to whole sequences: 4M tokens of 8192 = 488.28 -> 488
    let mut req = request("llama-3.2-1b", "h100-80gb", 8, 8192, 1);
    req.global_batch_sequences = None;
    req.global_batch_tokens = Some(4_000_000);
    assert_eq!(plan(&req).unwrap().global_batch_sequences, 488);
}

/// The closed-form layer counts step time uses equal the per-layer rules they replace, on
/// every preset (DeepSeek's first dense layers, Qwen's sparse step, sliding windows) and on
/// a Qwen MoE with every other layer sparse and a repeated `mlp_only_layers` entry, over
/// every range of layers.
#[test]
fn closed_form_layer_counts_equal_the_per_layer_rules() {
    use calc_core::arch::FfnKind;
    let mut archs: Vec<calc_core::ModelArch> = calc_core::presets::model_presets()
        .iter()
        .map(|p| {
            let spec = calc_core::config::ModelSpec::preset(&p.id);
            calc_core::resolve::resolve_model(&spec.0, &mut Vec::new()).unwrap()
        })
        .collect();
    let mut odd = archs
        .iter()
        .find(|a| a.moe.as_ref().is_some_and(|m| m.qwen_layer_rule))
        .expect("a Qwen MoE preset")
        .clone();
    if let Some(m) = &mut odd.moe {
        m.moe_layer_freq = 2;
        m.mlp_only_layers = vec![1, 3, 3, 4, 7];
    }
    archs.push(odd);
    for a in &archs {
        let layers = a.num_hidden_layers;
        for start in 0..=layers {
            for end in start..=layers {
                let moe = (start..end)
                    .filter(|&i| a.ffn_kind(i) == FfnKind::Moe)
                    .count() as u64;
                let sliding = (start..end).filter(|&i| a.is_sliding(i)).count() as u64;
                assert_eq!(
                    a.moe_layers_in(start, end),
                    moe,
                    "{} {start}..{end}",
                    a.model_type
                );
                assert_eq!(
                    a.sliding_layers_in(start, end),
                    sliding,
                    "{} {start}..{end}",
                    a.model_type
                );
            }
        }
    }
}

/// A batch in tokens that rounds to a prime number of sequences (4 000 000 tokens of 4096
/// = 976.6 -> 977) still runs on every data-parallel size: each layout rounds it to whole
/// sequences per rank. DP 64 takes round(4 000 000 / (4096 x 64)) = round(15.26) = 15 per
/// rank, 960 sequences; DP 32 takes round(30.52) = 31, 992 sequences. Given in sequences
/// (977), only DP 1 divides it.
#[test]
fn a_batch_in_tokens_is_rounded_per_data_parallel_size() {
    let mut req = request("llama-3.1-8b", "h100-80gb", 64, 4096, 977);
    req.engines = vec!["fsdp".into()];
    req.recompute = vec![Recompute::Full];
    let exact = plan(&req).unwrap();
    assert_eq!(exact.global_batch_sequences, 977);
    assert!(!exact.plans.is_empty());
    for p in &exact.plans {
        assert_eq!(p.layout.data_parallel_size, 1, "{}", p.summary);
        assert_eq!(p.global_batch_sequences, 977);
    }
    req.global_batch_sequences = None;
    req.global_batch_tokens = Some(4_000_000);
    let r = plan(&req).unwrap();
    assert_eq!(r.global_batch_sequences, 977);
    let by_dp = |dp: u64| r.plans.iter().find(|p| p.layout.data_parallel_size == dp);
    let dp64 = by_dp(64).expect("FSDP over 64 ranks fits an 8B model");
    assert_eq!(dp64.global_batch_sequences, 960);
    assert_eq!(dp64.micro_batch_size * dp64.gradient_accumulation_steps, 15);
    // the document says the same batch
    let t = &dp64.config.training;
    assert_eq!(t.micro_batch_size * t.gradient_accumulation_steps * 64, 960);
    // ranked by step time per sequence: plans with different batches compare per sequence
    let per_seq: Vec<f64> = r
        .plans
        .iter()
        .map(|p| p.step.seconds / p.global_batch_sequences as f64)
        .collect();
    assert!(
        per_seq.windows(2).all(|w| w[0] <= w[1] * (1.0 + 1e-12)),
        "{per_seq:?}"
    );
    // the DP 64 plan runs 64x the ranks of DP 1 on nearly the same batch: far faster
    // the rounding opens the data-parallel layouts: the best plan beats the DP 1 plans
    // the exact batch leaves
    assert!(
        r.plans[0].step.tokens_per_second_per_gpu > exact.plans[0].step.tokens_per_second_per_gpu,
        "{} vs {}",
        r.plans[0].summary,
        exact.plans[0].summary
    );
    if let Some(dp32) = by_dp(32) {
        assert_eq!(dp32.global_batch_sequences, 992);
    }
}

#[test]
fn float8_casts_by_hand() {
    // torchao's float8 casts (steptime float8_cast_bytes): Llama-3.2-1B (16 layers, hidden
    // 2048, 32 heads and 8 KV heads of 64, MLP 8192) on one H100 (3.35e12 B/s), b 1, s 1024,
    // no recomputation; precision fp8 against amp_bf16 (2 B activations either way), so the
    // elementwise terms differ by the casts alone. Per layer and token:
    // * inputs: the normed hidden state once for q, k, v and once for gate, up (2 x 2048)
    //   and o's and down's own (2048 + 8192): 14 336 elements, forward 2e + 1 = 5 B each
    //   (amax, cast), backward 2 B (the column-major copy): 71 680 + 28 672 B;
    // * output gradients: q 2048, k 512, v 512, gate 8192, up 8192, o 2048, down 2048:
    //   23 552 elements, 2e + 3 = 7 B each (amax, cast, transpose): 164 864 B.
    //   265 216 B a layer and token, x 16 layers x 1024 tokens = 4 345 298 944 B.
    // * weights, once per micro-batch: 16 x 60 817 408 = 973 078 528 elements, cast in the
    //   forward (5 B) and copied column-major in backward (2 B): 6 811 549 696 B.
    // 11 156 848 640 B / 3.35e12 B/s = 3.330 ms.
    let run = |precision: &str, tp: u64| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": precision,
                         "activation_checkpointing": "none"},
            "parallelism": {"tensor_parallel_size": tp, "sequence_parallel": tp > 1},
            "engine": {"type": "fsdp", "fsdp_version": 2},
            "hardware": {"gpu": "h100-80gb", "num_gpus": tp}
        }))
    };
    let casts =
        |tp: u64| term(&run("fp8", tp), "elementwise") - term(&run("amp_bf16", tp), "elementwise");
    let expected = 11_156_848_640.0 / 3.35e12;
    assert!(
        (casts(1) - expected).abs() < 1e-9 * expected,
        "{} {expected}",
        casts(1)
    );
    // TP 2 with sequence parallelism halves every tensor a rank casts: the hidden-sized
    // ones by the sequence, the others and the weights by the split
    assert!(
        (casts(2) - expected / 2.0).abs() < 1e-9 * expected,
        "{} {expected}",
        casts(2)
    );
    // LoRA's frozen base computes no weight gradients: no copies for them, the output
    // gradients' amax and cast only (2e + 1 = 5 B: 117 760 B a layer and token in place of
    // 28 672 + 164 864), the weights' cast and their copy for the input gradient as before:
    // (71 680 + 117 760) x 16 x 1024 + 6 811 549 696 = 9 915 334 656 B / 3.35e12 B/s
    let lora = |precision: &str| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": precision,
                         "activation_checkpointing": "none", "lora": {"rank": 16}},
            "engine": {"type": "fsdp", "fsdp_version": 2},
            "hardware": {"gpu": "h100-80gb", "num_gpus": 1}
        }))
    };
    let casts = term(&lora("fp8"), "elementwise") - term(&lora("amp_bf16"), "elementwise");
    let expected = 9_915_334_656.0 / 3.35e12;
    assert!(
        (casts - expected).abs() < 1e-9 * expected,
        "{casts} {expected}"
    );
}

#[test]
fn zero3_regathers_what_recomputation_releases() {
    // DeepSpeed ZeRO-3 under full recomputation (steptime regathered): Llama-3.2-1B on 16
    // H100 in two nodes, b 1, s 1024, AMP bf16, overlap_comm off (every collective counted).
    // A layer's sub-modules in forward order, elements: q 4 194 304, k 1 048 576, v 1 048 576,
    // o 4 194 304, gate, up, down 16 777 216 each (the norms' 2048 persist under the 1e5
    // threshold). With stage3_max_reuse_distance 5e7, a sub-module is released after its
    // recomputed forward when twice the elements after it reach 5e7: down (0) and up
    // (2 x 16 777 216 = 33 554 432) stay; gate (67 108 864), o, v, k and q are gathered
    // again for their backward: 27 262 976 elements and 5 all-gathers a layer, x 16 =
    // 436 207 616 elements and 80 collectives. Each over 16 ranks across the nodes' 50e9 B/s
    // NICs: 15/16 x 2 B x 436 207 616 / 50e9 = 16.36 ms, plus NCCL's ring latency of 8.4 +
    // 14 x 3.4 + 14 = 70 us each (5.6 ms). The default 1e9 keeps every sub-module (at most
    // 2 x 48.2M elements after one).
    let run = |reuse: u64, checkpointing: &str| {
        time_of(json!({
            "model": {"preset": "llama-3.2-1b"},
            "training": {"micro_batch_size": 1, "seq_len": 1024, "precision": "amp_bf16",
                         "activation_checkpointing": checkpointing},
            "engine": {"type": "deepspeed", "zero_stage": 3, "overlap_comm": false,
                       "stage3_max_reuse_distance": reuse},
            "hardware": {"gpu": "h100-80gb", "num_gpus": 16}
        }))
    };
    let dp = |t: &StepTime| term(t, "data_parallel");
    let expected = 15.0 / 16.0 * 2.0 * 436_207_616.0 / 50e9 + 80.0 * 70e-6;
    let extra = dp(&run(50_000_000, "full")) - dp(&run(1_000_000_000, "full"));
    assert!((extra - expected).abs() < 1e-9, "{extra} {expected}");
    // without recomputation the backward's one gather is the only one either way
    assert!(close(
        dp(&run(50_000_000, "none")),
        dp(&run(1_000_000_000, "none"))
    ));
}
