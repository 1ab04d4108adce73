//! Step time: how long one optimizer step takes on a layout, term by term, from the work
//! each GPU does and the bytes it sends, over the GPU's datasheet rates
//! ([`crate::presets::GpuPerf`]).
//!
//! The model (every term per optimizer step, on the slowest pipeline stage):
//!
//! | term | seconds | source |
//! |---|---|---|
//! | compute | `m x (F_fwd + F_bwd) / (peak x efficiency)` per GPU | FLOPs as Narayanan et al. 2021 (Megatron) eq. 3 and torchtitan `get_num_flop_per_token`: `2 N` per token forward for `N` matmul parameters, backward twice that; attention scores and values `4 H d` per token per key, over half the keys (causal kernels skip the masked blocks) or the sliding window (every key where transformers hands SDPA the window as a mask, which its memory-efficient kernel takes in place of `is_causal`), backward 2.5 times forward (FlashAttention-2's 5 matmuls to 2), at the attention kernel's own efficiency (FlashAttention's Triton kernel 1.4 times FlashAttention-2's time forward, 2 times backward: [`TRITON_FLASH_SLOWDOWN`]). Eager attention (materialized scores, [`crate::config::Attention::Eager`]): both matmuls over every key, each kernel the slower of its FLOPs at the GEMM efficiency and its score bytes at memory bandwidth (roofline), backward 4 such matmuls; its softmax, dropout and casts at memory bandwidth ([`eager_score_bytes`]: Megatron-LM's `FusedScaleMaskSoftmax`, transformers' `eager_attention_forward`; roofline: Williams et al. 2009) |
//! | elementwise | the memory-bound kernels between the matmuls (norms, rotary, activation, residual adds and dropout, the attention output's copy, the loss over the logits; under torchao's float8 the casts of the converted linears' inputs, output gradients and weights): the bytes each reads and writes per token, forward and backward, at memory bandwidth ([`elementwise_bytes`]; fused under Megatron-LM or `torch.compile`; [`float8_cast_bytes`]) | transformers `LlamaRMSNorm`, `apply_rotary_pos_emb`, `ForCausalLMLoss`; Megatron-LM `bias_swiglu`, `bias_dropout_add`, `VocabParallelCrossEntropy`; Transformer Engine norms and fused RoPE; inductor's pointwise fusion; torchao `float8_linear.py`, `float8_scaling_utils.py`, `float8_ops.py` |
//! | recomputation | forward again: full (all layers, their elementwise kernels too), selective (attention core), selective per op (every other matmul and every elementwise kernel, torchtitan `_save_list`) | Korthikanti et al. 2022, torchtitan `activation_checkpoint.py` |
//! | tensor-parallel communication | 4 all-reduces of `b s h` activations per layer (2 forward, 2 backward; +2 with full recomputation); with sequence parallelism the same bytes as all-gather + reduce-scatter; each collective also its fixed latency ([`nccl_latency`]) | Megatron-LM paper Sec. 3 (Shoeybi et al. 2019), Korthikanti et al. 2022 Sec. 4.2.2 |
//! | context-parallel exchange | ring attention passes K and V around `cp` ranks (`cp - 1` steps) in forward and K, V, dK, dV in backward, hidden behind the attention kernel where it is shorter; DeepSpeed-Ulysses (both DeepSpeed engines) instead all-to-alls the query, key, value and output, `(cp - 1) / cp` of each, forward (again when recomputed) and backward, not overlapped ([`ulysses_elements`]) | Megatron-Core / Transformer Engine `attn_forward_func_with_cp`, torchtitan context parallel; DeepSpeed `sequence/layer.py` `DistributedAttention`, `runtime/sequence_parallel/ulysses_sp.py` |
//! | expert all-to-all | dispatch and combine of `tokens x top_k x h` per MoE layer, forward and backward | Megatron-Core `MoEAlltoAllTokenDispatcher`, DeepSpeed-MoE |
//! | pipeline bubble | `(pp - 1) / v` micro-batch times (1F1B, interleaved with `v` virtual stages; GPipe the same) | Narayanan et al. 2021 Sec. 2.2 |
//! | pipeline send/recv | one activation and one gradient of `b s h` per micro-batch and virtual stage (`b s h / t` under sequence parallelism); where the engine partitions them over the `t` tensor-parallel ranks ([`crate::engines::Parallelism::pipeline_partitioned`]: DeepSpeed's PipelineEngine, Megatron-LM's scatter/gather before Megatron-Core) `b s h / t` over the link between stages plus an all-gather of `b s h` over the tensor-parallel group | Narayanan et al. 2021 Sec. 4.1; Megatron-LM `megatron/p2p_communication.py` (before 3c92fa93), DeepSpeed `runtime/pipe/engine.py` `PartitionedTensor` |
//! | data-parallel communication | the engine's [`crate::engines::DpTraffic`]: ring all-reduce `2 (g-1)/g x bytes`, reduce-scatter and all-gather `(g-1)/g x bytes`, over NVLink when the group stays in a node, else the GPU's NIC, and each collective the engine issues ([`crate::engines::Collectives`]: one per FSDP unit, per ZeRO-3 sub-module, per bucket) its fixed latency ([`nccl_latency`]: NCCL's ring and tree cost model, milliseconds over hundreds of ranks); only what outlasts the compute of the pass it runs in is counted (a micro-batch's first gather behind its forward; the backward's re-gather and its gradients' reduction behind its backward, which computes them; not the recomputation or the TP, CP and EP exchanges, which it also runs beside: counting those, tried 2026-11-24, made every changed published case more optimistic, all 45 then 25.1 -> 29.4 % median error; overlapped NCCL kernels slowing the compute have no term), apart from the ends of a micro-batch no compute hides ([`crate::engines::DpEdges`]: FSDP's root and first unit gathered before the first forward and reduced after the last backward, ZeRO-3's first modules and last bucket, the embedding's gradient bucket of DDP, ZeRO-1/2 and Megatron), and DeepSpeed ZeRO-1/2's parameter all-gather, which runs inside the optimizer step; under full recomputation ZeRO-3's sub-modules released after their recomputed forward (their backward more than `stage3_max_reuse_distance` elements of fetches away) gathered a third time, in backward (`Collectives::Modules`' `reuse_distance`, `regathered`); DeepSpeed before 0.6 (`Collectives::Modules`' `blocking`) hook by hook instead, where that exposes more: each fetch waits for the device and the collectives in flight, so a gather hides only behind the compute launched after it was issued ([`blocking_passes`], [`blocking_exposed`]; dense layers); parameters gathered in `param_dtype`, the decoder layers' linear weights in 1 byte under FSDP2's float8 all-gather (`DpTraffic::float8_gather`) | NCCL ring algorithm bandwidths (nccl-tests `PERFORMANCE.md`) and latencies (NCCL `src/graph/tuning.cc`); torch `_fsdp_state.py`, DeepSpeed `stage3.py`, torch `distributed.py` bucket assignment, DeepSpeed `stage_1_and_2.py` `step`, `partitioned_param_coordinator.py` `__params_to_release`, v0.3.15 `stage3.py` `fetch_sub_module` and `partition_parameters.py` `_allgather_param`; torchao `float8/fsdp_utils.py` `fsdp_pre_all_gather` |
//! | host transfers | offloaded gradient / parameter shards over PCIe | ZeRO-Offload (Ren et al. 2021) |
//! | optimizer step | the step reads weights, gradients, master weights and states and writes all but the gradients, at memory bandwidth | memory-bound elementwise kernels |
//!
//! Rates: the GPU's dense peak for the compute dtype (bf16/fp16 tensor cores; fp8 for the
//! decoder's linear layers under `fp8`, whose attention core and LM head stay bf16 as
//! Transformer Engine and torchao leave them: under transformers' modules only the
//! `nn.Linear` weights float8 training converts, [`crate::model::ParamGroup::float8_linear`],
//! not routed experts, routers or GPT-2's `Conv1D`; under Megatron-Core every decoder GEMM,
//! grouped experts too; fp32 without TF32) times one stated
//! efficiency, [`TimeAssumptions::compute_efficiency`]; memory-bound kernels (eager
//! attention's, the elementwise kernels, the optimizer step) at the datasheet memory
//! bandwidth. Links at their datasheet bandwidth. Each collective's latency by NCCL's own
//! model ([`nccl_latency`]); not counted for the CP, EP and pipeline exchanges
//! (point-to-point). Not modelled: kernel launch gaps, communication slowing concurrent
//! compute, `torch.compile` beyond its elementwise fusion, Transformer Engine's float8 casts
//! (fused into its norm, activation and cast-transpose kernels),
//! asynchronous TP and Megatron's TP communication overlap (`--tp-comm-overlap`, Transformer
//! Engine userbuffers), the CPU optimizer step of offloading engines, the vision tower.
//!
//! MFU follows the published convention (PaLM appendix B, torchtitan, Megatron): model
//! FLOPs `6 N + 12 L s H d` per token (attention over the whole sequence, no
//! recomputation) over the GPU's bf16 peak (fp32 peak for fp32 training).

use crate::config::{Attention, Precision, Recompute, Training};
use crate::engines::{Collectives, DpEdges, DpTraffic, GradReduce, HostTransfers};
use crate::model::{ModelArch, ParamCounts, Shape};
use crate::precision::{ModelCode, StateBytes};
use crate::presets::GpuPerf;
use crate::problem::Layout;
use serde::{Deserialize, Serialize};

/// Assumptions of the step-time model that are not facts of the GPU or the layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct TimeAssumptions {
    /// Fraction of the tensor-core peak the linear layers' GEMMs sustain (also eager
    /// attention's score matmuls, where their FLOPs rather than their score bytes bound
    /// them); the elementwise kernels between them are timed apart ([`elementwise_bytes`]).
    /// Default 0.6: a prior, not fitted to any run (cuBLAS reaches 0.80 of an H100 SXM's and
    /// 0.86 of an A100 SXM's peak at its best shape, S. Bekman's maximum achievable matmul
    /// FLOPS table in `ml-engineering`; a model's shapes, launch gaps and the kernels'
    /// interference less).
    pub compute_efficiency: f64,
    /// Fraction of the bf16 peak the attention kernel (FlashAttention-2, PyTorch SDPA's
    /// flash backend) sustains. Default: 0.35 on Hopper and later ("FlashAttention-2
    /// achieves only 35 % utilization on H100", Shah et al. 2024, FlashAttention-3 Sec. 1),
    /// 0.5 on earlier GPUs (FlashAttention-2 reaches 50-73 % on A100, Dao 2023 Sec. 4.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention_efficiency: Option<f64>,
}

impl Default for TimeAssumptions {
    fn default() -> Self {
        TimeAssumptions {
            compute_efficiency: 0.6,
            attention_efficiency: None,
        }
    }
}

/// Forward and backward time of FlashAttention's Triton kernel
/// ([`Attention::FlashTriton`]) over FlashAttention-2's: "FlashAttention-2 is around 1.3-1.5x
/// faster than FlashAttention in Triton in the forward pass and around 2x faster in the
/// backward pass" (Dao 2023, FlashAttention-2, Sec. 4.1; the forward's range taken at its
/// middle). The paper's Triton baseline is OpenAI Triton's fused attention
/// (`triton.ops.flash_attention`, flash-attn `benchmarks/benchmark_flash_attention.py`), the
/// kernel flash-attn's `flash_attn_triton.py` was built from.
pub const TRITON_FLASH_SLOWDOWN: (f64, f64) = (1.4, 2.0);

/// [`TimeAssumptions::attention_efficiency`]'s default for a GPU architecture.
pub fn default_attention_efficiency(arch: &str) -> f64 {
    match arch {
        "hopper" | "blackwell" | "cdna3" => 0.35,
        _ => 0.5,
    }
}

/// One term of a step's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TimeTerm {
    /// Snake-case key (`compute`, `pipeline_bubble`, ...), one of [`TIME_TERMS`].
    pub name: String,
    /// Seconds per optimizer step on the slowest GPU (exposed time only).
    pub seconds: f64,
}

/// Every step-time term, in the order reported.
pub const TIME_TERMS: &[(&str, &str)] = &[
    ("compute", "forward and backward"),
    (
        "elementwise",
        "memory-bound elementwise kernels (norms, activations, rotary, residual adds, loss)",
    ),
    ("recomputation", "activation recomputation"),
    ("tensor_parallel", "tensor-parallel communication"),
    (
        "context_parallel",
        "context-parallel K/V exchange (exposed)",
    ),
    ("expert_all_to_all", "expert all-to-all"),
    ("pipeline_bubble", "pipeline bubble"),
    ("pipeline_p2p", "pipeline send/recv"),
    ("data_parallel", "data-parallel communication (exposed)"),
    ("host_transfers", "offload transfers over PCIe"),
    ("optimizer_step", "optimizer step"),
];

/// The time of one optimizer step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StepTime {
    /// Seconds per optimizer step.
    pub seconds: f64,
    /// Tokens per second per GPU: global tokens per step / seconds / GPUs.
    pub tokens_per_second_per_gpu: f64,
    /// Model FLOPs utilization (see the module docs), 0-1.
    pub mfu: f64,
    /// Model FLOPs per second per GPU, 10^12.
    pub model_tflops_per_gpu: f64,
    /// Every term of [`TIME_TERMS`], in that order.
    pub terms: Vec<TimeTerm>,
    /// The largest term other than compute (the first thing to attack), or `compute`.
    pub limiter: String,
}

/// The numbers step time reads, apart from the layout: everything is a plain number so
/// that the plan search can fill it without building a config.
#[derive(Debug, Clone, Copy)]
pub struct TimeInputs<'a> {
    pub arch: &'a ModelArch,
    pub params: &'a ParamCounts,
    pub layout: &'a Layout,
    pub training: &'a Training,
    pub traffic: DpTraffic,
    pub bytes: StateBytes,
    pub perf: &'a GpuPerf,
    /// The GPU's architecture family (`hopper`, ...), for the attention kernel's default
    /// efficiency.
    pub gpu_arch: &'a str,
    pub assumptions: TimeAssumptions,
    /// What step time reads of the engine besides its traffic.
    pub engine: EngineTiming,
}

/// What step time reads of the training engine apart from its data-parallel traffic
/// ([`crate::engines::DpTraffic`]), read once per engine and state bytes
/// ([`EngineTiming::of`]: by [`step_time_with`], and by the plan search once per family of
/// candidates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineTiming {
    /// Whose modules run the layers: eager attention's kernels differ
    /// ([`eager_score_bytes`]).
    pub code: ModelCode,
    /// The model runs under `torch.autocast` with fp32 weights (transformers' eager
    /// attention then adds the fp32 causal mask to half scores, promoting them to fp32).
    pub autocast: bool,
    /// Context parallelism is DeepSpeed-Ulysses (the engine's
    /// [`crate::engines::Parallelism::ulysses`]): all-to-alls, not a ring exchange.
    pub ulysses: bool,
    /// Grouped keys and values are repeated to every query head before attention (the
    /// engine's `repeats_kv`, Megatron-DeepSpeed): Ulysses exchanges them so.
    pub repeats_kv: bool,
    /// What a pipeline stage sends is split over the tensor-parallel ranks and all-gathered
    /// at the receiver (the engine's
    /// [`crate::engines::Parallelism::pipeline_partitioned`]).
    pub pipeline_partitioned: bool,
}

impl EngineTiming {
    /// The facts of training engine `engine` whose states take `bytes` per element.
    pub fn of(engine: &crate::config::Engine, bytes: &StateBytes) -> EngineTiming {
        let parallelism = engine.parallelism();
        let model = engine.model();
        EngineTiming {
            code: model.model_code(),
            autocast: engine.runs_autocast(bytes),
            ulysses: parallelism.ulysses,
            repeats_kv: model.repeats_kv(),
            pipeline_partitioned: parallelism.pipeline_partitioned,
        }
    }
}

const TERA: f64 = 1e12;
const GIGA: f64 = 1e9;

/// Per-token FLOPs and parameters of one pipeline stage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct StageWork {
    /// Forward matmul FLOPs per token in the decoder layers (2 per active parameter).
    layer_mm: f64,
    /// Of `layer_mm`: the linear weights float8 training converts
    /// ([`crate::model::ParamGroup::float8_linear`]), which are the only ones that run in
    /// float8 under transformers' modules.
    layer_mm_float8: f64,
    /// Forward matmul FLOPs per token of the LM head (last stage).
    head_mm: f64,
    /// Attention score and value FLOPs per token as the kernels run them (causal: half the
    /// keys; sliding window: the window).
    attn_hw: f64,
    /// The same by the MFU convention (every key).
    attn_model: f64,
    /// `attn_hw` when SDPA gets transformers' sliding-window mask
    /// ([`crate::activations::sdpa_sliding_mask`]): the sliding layers over every key.
    attn_masked: f64,
    /// Parameters on one GPU of this stage: non-expert (after TP) + experts (after EP x ETP).
    params_rank: f64,
    /// Of `params_rank`: the embedding (first stage).
    embed_rank: f64,
    /// Of `params_rank`: the embedding (first stage) and the LM head (last stage), the FSDP
    /// root unit.
    root_rank: f64,
    /// Of `params_rank`: the stage's first decoder layer.
    first_layer_rank: f64,
    /// Of `params_rank`: the decoder layers' linear weights torchao's float8 converts
    /// ([`crate::model::ParamGroup::float8_linear`]: attention, dense MLP and shared-expert
    /// projections; not routers, routed experts or the LM head), gathered in 1 byte under
    /// FSDP2's float8 all-gather; their biases stay in `param_dtype`.
    float8_rank: f64,
    /// Of `first_layer_rank`: its float8 linear weights.
    first_layer_float8: f64,
    layers: u64,
    moe_layers: u64,
}

impl StageWork {
    /// Decoder layers of the stage without experts.
    fn dense_layers(&self) -> u64 {
        self.layers.saturating_sub(self.moe_layers)
    }
}

/// `n_moe`: the model's MoE layers (`arch.num_moe_layers()`, counted once per step);
/// `[dense_modules, moe_modules]`: [`layer_modules`] of one dense and of one MoE layer
/// (their float8 linear weights, on one tensor-parallel rank and whole).
fn stage_work(
    arch: &ModelArch,
    p: &ParamCounts,
    l: &Layout,
    s: f64,
    stage: u64,
    n_moe: u64,
    [dense_modules, moe_modules]: [&LayerModules; 2],
) -> StageWork {
    let layers = arch.num_hidden_layers.max(1);
    let n_dense = layers - n_moe.min(layers);
    let attn = p.attention as f64 / layers as f64;
    let norms = p.norms as f64 / layers as f64;
    let dense_mlp = if n_dense > 0 {
        p.mlp as f64 / n_dense as f64
    } else {
        0.0
    };
    let (moe_active, moe_dense_part, moe_experts) = match (&arch.moe, n_moe) {
        (Some(m), k) if k > 0 => {
            let experts = p.experts as f64 / k as f64;
            let dense = (p.shared_experts + p.router) as f64 / k as f64;
            let frac = m.num_experts_per_tok as f64 / m.num_experts.max(1) as f64;
            (experts * frac + dense, dense, experts)
        }
        _ => (0.0, 0.0, 0.0),
    };
    let heads = arch.num_attention_heads as f64;
    let dims = (arch.qk_head_dim() + arch.v_head_dim()) as f64;
    let (start, end) = l.stage_layers.range(stage, l.pipeline_parallel_size);
    // per-layer sums in closed form: every dense layer, MoE layer, sliding-window layer
    // and full-attention layer of the stage contributes the same
    let end = end.min(layers).max(start);
    let n = (end - start) as f64;
    let (moe, sliding) = l.stage_layer_kinds(arch, stage);
    let sliding = sliding as f64;
    let (moe_f, dense_f) = (moe as f64, n - moe as f64);
    let keys_full = (s + 1.0) / 2.0;
    let keys_sliding = match arch.sliding_window {
        Some(win) if (win as f64) < s => {
            let w = win as f64;
            w * (1.0 - w / (2.0 * s))
        }
        _ => keys_full,
    };
    let mut w = StageWork {
        layers: end - start,
        moe_layers: moe,
        attn_hw: 2.0 * heads * dims * (sliding * keys_sliding + (n - sliding) * keys_full),
        attn_masked: 2.0 * heads * dims * (sliding * s + (n - sliding) * keys_full),
        attn_model: 2.0 * heads * dims * s * n,
        layer_mm: dense_f * 2.0 * (attn + dense_mlp) + moe_f * 2.0 * (attn + moe_active),
        layer_mm_float8: 2.0 * (dense_f * dense_modules.float8 + moe_f * moe_modules.float8),
        ..Default::default()
    };
    // non-expert parameters of one dense and of one MoE layer
    let (dense_layer, moe_layer) = (attn + dense_mlp + norms, attn + moe_dense_part + norms);
    let mut dense_params = dense_f * dense_layer + moe_f * moe_layer;
    let expert_params = moe_f * moe_experts;
    let pp = l.pipeline_parallel_size;
    let head = (arch.vocab_size * arch.hidden_size) as f64;
    let embed = if stage == 0 { p.embeddings as f64 } else { 0.0 };
    let mut root = embed;
    if stage + 1 == pp {
        w.head_mm = 2.0 * head;
        // an untied head, or the tied embedding's copy on the last stage
        root += if p.lm_head > 0 {
            p.lm_head as f64
        } else if pp > 1 {
            head
        } else {
            0.0
        };
    }
    dense_params += root;
    let tp = l.tensor_parallel_size.max(1) as f64;
    let etp_ep = (l.expert_tensor_parallel_size * l.expert_parallel_size).max(1) as f64;
    w.params_rank = dense_params / tp + expert_params / etp_ep;
    w.embed_rank = embed / tp;
    w.root_rank = root / tp;
    let (dense_float8, moe_float8) = (dense_modules.float8_rank, moe_modules.float8_rank);
    w.float8_rank = dense_f * dense_float8 + moe_f * moe_float8;
    (w.first_layer_rank, w.first_layer_float8) = if end == start {
        (0.0, 0.0)
    } else if arch.moe_layers_in(start, start + 1) > 0 {
        (moe_layer / tp + moe_experts / etp_ep, moe_float8)
    } else {
        (dense_layer / tp, dense_float8)
    };
    w
}

/// Optimizer states per parameter in units of the regime's state dtype (a quantized state
/// counts its bits' share; Adafactor's factored second moment, a row and a column, nothing).
fn full_states(o: crate::optimizer::Optimizer) -> f64 {
    use crate::optimizer::StateLayout;
    match o.info().layout {
        StateLayout::Full(n) => n as f64,
        StateLayout::Quantized { states, bits, .. } => states as f64 * bits as f64 / 32.0,
        StateLayout::Factored { momentum } => momentum as f64,
    }
}

/// DeepSpeed-Ulysses' forward exchange per decoder layer: the elements one GPU sends for the
/// `tokens` of its sequence chunk (times the activation bytes over the link's bandwidth:
/// seconds). One all-to-all each for the query, key, value and attention
/// output, each sending `(cp - 1) / cp` of its tensor (an all-to-all's bytes on the wire as
/// nccl-tests `PERFORMANCE.md` counts them); not overlapped with compute (neither engine
/// passes a side stream: `sp_stream` unset). Backward runs the same all-to-alls on the
/// gradients (`_SeqAllToAll.backward`, `_DimZeroAllToAll.backward`).
///
/// * `repeats_kv` (Megatron-DeepSpeed): one tensor-parallel rank's query heads, the keys and
///   values repeated to them before the exchange (`megatron/model/transformer.py`
///   `repeat_kv`, then `deepspeed/sequence/layer.py` `DistributedAttention.forward`);
/// * else (transformers under DeepSpeed, ALST, `deepspeed/runtime/sequence_parallel/
///   ulysses_sp.py` `_combine_local_sequences`, `_partition_global_sequence`): the query
///   heads, and the key and value heads, replicated up to `cp` when fewer
///   (`kv_replication_factor`).
fn ulysses_elements(arch: &ModelArch, repeats_kv: bool, tp: u64, cp: u64, tokens: f64) -> f64 {
    let heads = (arch.num_attention_heads / tp).max(1);
    let kv_heads = if repeats_kv {
        heads
    } else {
        (arch.num_key_value_heads / tp).max(cp)
    };
    let (dqk, dv) = (arch.qk_head_dim(), arch.v_head_dim());
    let elems = heads * (dqk + dv) + kv_heads * (dqk + dv);
    tokens * elems as f64 * (cp - 1) as f64 / cp as f64
}

/// Ring all-reduce time: `2 (n-1)/n x bytes / bandwidth` (NCCL ring).
fn all_reduce(bytes: f64, n: u64, bw: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    2.0 * (n - 1) as f64 / n as f64 * bytes / bw
}

/// Ring reduce-scatter or all-gather of a `bytes` tensor: `(n-1)/n x bytes / bandwidth`.
fn gather(bytes: f64, n: u64, bw: f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    (n - 1) as f64 / n as f64 * bytes / bw
}

/// Bandwidth (B/s) of a group of `n` ranks `stride` apart: inside a node when the group
/// spans one ([`nodes_of`]), else the GPU's network link.
fn link(perf: &GpuPerf, l: &Layout, n: u64, stride: u64) -> f64 {
    if nodes_of(l, n, stride) == 1 {
        perf.intra_node_gbs * GIGA
    } else {
        perf.inter_node_gbs * GIGA
    }
}

/// A collective's kind, for its fixed latency ([`nccl_latency`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectiveKind {
    AllReduce,
    /// An all-gather or a reduce-scatter (the same ring steps).
    AllGather,
}

/// NCCL's per-collective constants, microseconds (`src/graph/tuning.cc`,
/// `ncclTunerConstantsDefaults`, the Simple protocol that large messages run): the base
/// latency of ring and tree, a ring step over NVLink, a tree step over NVLink, a step over
/// the network (ring and tree), and the floor of a ring step inside a node when the ring
/// crosses nodes (`3 x getNetOverhead`, 1 µs on Intel hosts).
const NCCL_BASE_US: f64 = 8.4;
const NCCL_RING_NVLINK_US: f64 = 3.4;
const NCCL_TREE_NVLINK_US: f64 = 4.0;
const NCCL_NET_US: f64 = 14.0;
const NCCL_NET_OVERHEAD_US: f64 = 3.0;

/// Fixed latency of one NCCL collective over `ranks` GPUs spread over `nodes` nodes,
/// seconds, by NCCL's own cost model (`src/graph/tuning.cc`: `latency + bytes / bandwidth`,
/// where this is the first part; the Simple protocol, which messages of megabytes run):
/// a ring all-gather or reduce-scatter takes `ranks - 1` steps, `nodes - 1` of them across
/// the network, an all-reduce twice as many; each step inside a node costs 3.4 µs (NVLink)
/// and each across nodes 14 µs, on top of an 8.4 µs base. An all-reduce may run as a tree
/// instead (8.4 µs + 2 x ((ranks per node - 1) x 4.0 µs + log2(nodes) x 14 µs), the
/// logarithm rounded down as NCCL's `log2i`); NCCL picks the faster algorithm, so the
/// smaller latency is taken. 0 for one rank. Not modelled:
/// NVLink SHARP (NVLS), PAT, CollNet, the LL and LL128 protocols of small messages.
pub fn nccl_latency(kind: CollectiveKind, ranks: u64, nodes: u64) -> f64 {
    if ranks <= 1 {
        return 0.0;
    }
    let nodes = nodes.clamp(1, ranks);
    let k = match kind {
        CollectiveKind::AllReduce => 2,
        CollectiveKind::AllGather => 1,
    };
    let steps = k * (ranks - 1);
    let inter = k * (nodes - 1);
    let intra = if nodes > 1 {
        NCCL_RING_NVLINK_US.max(NCCL_NET_OVERHEAD_US)
    } else {
        NCCL_RING_NVLINK_US
    };
    let ring = NCCL_BASE_US + (steps - inter) as f64 * intra + inter as f64 * NCCL_NET_US;
    let us = match kind {
        CollectiveKind::AllGather => ring,
        CollectiveKind::AllReduce => {
            // as tuning.cc: `nRanks / nNodes` and `log2i`, both rounded down
            let per_node = ranks / nodes;
            let tree = NCCL_BASE_US
                + 2.0
                    * ((per_node - 1) as f64 * NCCL_TREE_NVLINK_US
                        + nodes.ilog2() as f64 * NCCL_NET_US);
            ring.min(tree)
        }
    };
    us * 1e-6
}

/// Nodes that a group of `n` ranks `stride` apart spans.
fn nodes_of(l: &Layout, n: u64, stride: u64) -> u64 {
    let per_node = (l.gpus_per_node / stride.max(1)).max(1);
    n.div_ceil(per_node).max(1)
}

/// Collectives one pass of data-parallel traffic over stage `w`'s parameters is issued as
/// ([`Collectives`]); `modules`: the stage's sub-modules above the persistence threshold.
fn collective_count(c: Collectives, w: &StageWork, modules: f64) -> f64 {
    match c {
        Collectives::Units => (w.layers + 1) as f64,
        Collectives::Modules { .. } => modules,
        Collectives::Buckets { elements } => {
            (w.params_rank / elements.max(1) as f64).ceil().max(1.0)
        }
        Collectives::ParamGroups(n) => n.max(1) as f64,
    }
}

/// One decoder layer of `kind` on one of `tp` tensor-parallel ranks: the elements of the
/// largest parameter of each sub-module (what DeepSpeed ZeRO-3's persistence threshold
/// compares), and the elements of the linear weights torchao's float8 converts
/// ([`crate::model::ParamGroup::float8_linear`], the rule memory's placement reads:
/// gathered in 1 byte under FSDP2's float8 all-gather).
fn layer_modules(arch: &ModelArch, kind: crate::arch::FfnKind, tp: u64) -> LayerModules {
    let groups = arch.layer_groups(kind);
    let (mut float8, mut float8_whole) = (0u64, 0u64);
    let mut casts = Float8Casts::default();
    // the attention's and the MLP's projections that read the layer's normed hidden state
    let (mut attn_reads_hidden, mut mlp_reads_hidden) = (false, false);
    let h = arch.hidden_size;
    // the attention's output projection: the attention core runs just before it
    let attn_out = groups.iter().position(|g| {
        g.part == crate::model::Part::Attention && g.tp == crate::model::TpSplit::Row
    });
    let modules = groups
        .iter()
        .map(|g| {
            let shapes = g.rank_shapes(tp);
            if g.float8_linear() {
                // the weight, the first shape
                float8 += shapes[0].0 * shapes[0].1 * g.copies;
                if let Shape::Linear {
                    in_features,
                    out_features,
                    ..
                } = g.shape
                {
                    float8_whole += in_features * out_features * g.copies;
                    let (out_rank, in_rank) = shapes[0];
                    let n = g.copies as f64;
                    if g.tp == crate::model::TpSplit::Row {
                        // its own input (the attention output, the MLP intermediate), a
                        // shard; its output the hidden state
                        casts.inputs_other += n * in_rank as f64;
                        if out_features == h {
                            casts.grads_hidden += n;
                        } else {
                            casts.grads_other += n * out_rank as f64;
                        }
                    } else {
                        if in_features == h {
                            match g.part {
                                crate::model::Part::Attention => attn_reads_hidden = true,
                                _ => mlp_reads_hidden = true,
                            }
                        } else {
                            casts.inputs_other += n * in_features as f64;
                        }
                        casts.grads_other += n * out_rank as f64;
                    }
                }
            }
            let sizes = shapes
                .iter()
                .map(|&(r, c)| r.saturating_mul(c).saturating_mul(g.copies));
            SubModule {
                largest: sizes.clone().max().unwrap_or(0),
                numel: sizes.fold(0, u64::saturating_add),
            }
        })
        .collect();
    // q, k and v (gate and up) cast their shared input once: torchtitan's
    // `PrepareFloat8ModuleInput` under tensor parallelism, AOTAutograd's `fx_graph_cse` in a
    // compiled block; a parallel block's attention and MLP read the same normed input
    casts.inputs_hidden = match (arch.parallel_attention, attn_reads_hidden, mlp_reads_hidden) {
        (true, a, m) => (a || m) as u8 as f64,
        (false, a, m) => a as u8 as f64 + m as u8 as f64,
    };
    LayerModules {
        modules,
        attn_out,
        float8_rank: float8 as f64,
        float8: float8_whole as f64,
        casts,
    }
}

/// The activations one decoder layer's float8 linears cast to float8, per token on one
/// tensor-parallel rank (see [`float8_cast_bytes`]): hidden-sized tensors counted (a token
/// holds `h` of each, `h / tp` under sequence parallelism, where torchtitan's
/// `Float8ColwiseParallel` casts before the all-gather and the output gradient arrives
/// reduce-scattered), the others in elements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Float8Casts {
    /// Distinct hidden-sized linear inputs (the normed hidden state the attention's and the
    /// MLP's column-parallel projections read).
    pub inputs_hidden: f64,
    /// Elements of the other inputs (row-parallel projections' shards, MLA's low-rank
    /// inputs).
    pub inputs_other: f64,
    /// Hidden-sized output gradients (row-parallel projections').
    pub grads_hidden: f64,
    /// Elements of the other output gradients (column-parallel projections' shards).
    pub grads_other: f64,
}

/// Bytes torchao's float8 training (`convert_to_float8_training`, tensorwise dynamic
/// scaling, torchtitan's and accelerate's float8) moves per token to cast one layer's
/// activations (`casts`; `hid` elements in a hidden-sized tensor per token, `e` the
/// activation dtype's bytes), forward and backward, torchao `float8/float8_linear.py` at
/// v0.7 (`Float8Linear.forward`, `manual_float8_matmul_with_args_in_float8`),
/// `float8_scaling_utils.py` `hp_tensor_to_float8_dynamic`, `float8_ops.py`
/// `preprocess_addmm`:
/// * each input: its `amax` (`tensor_to_amax`, a reduction, reads `e`), then the scaled cast
///   to e4m3 (`hp_tensor_and_scale_to_float8`, reads `e`, writes 1), forward; in backward
///   the saved float8 input made column-major for the weight gradient's `_scaled_mm`
///   (`b_data.t().contiguous().t()`, 1 each way): `2e + 1` forward, `2` backward;
/// * each output gradient (`NoopFwToFloat8BwDynamic` to e5m2): `amax` and cast, then its
///   transpose made row-major for the weight gradient (`a_data.contiguous()`): `2e + 3`
///   backward.
///
/// Without weight gradients (`weight_grads` false: LoRA's frozen base) neither copy for the
/// weight gradient is made: the output gradient's amax and cast only, `2e + 1`.
///
/// Each kernel as `torch.compile` runs it (the reduction apart from the pointwise cast it
/// scales); eager's separate `abs`, `max`, multiply, clamp and cast kernels move more and
/// are not counted (torchao's float8 training is documented for compiled models).
pub fn float8_cast_bytes(casts: &Float8Casts, hid: f64, e: f64, weight_grads: bool) -> (f64, f64) {
    let inputs = casts.inputs_hidden * hid + casts.inputs_other;
    let grads = casts.grads_hidden * hid + casts.grads_other;
    let fwd = inputs * (2.0 * e + 1.0);
    if weight_grads {
        (fwd, inputs * 2.0 + grads * (2.0 * e + 3.0))
    } else {
        (fwd, grads * (2.0 * e + 1.0))
    }
}

/// One sub-module (a [`crate::model::ParamGroup`]) on one tensor-parallel rank, elements.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SubModule {
    /// Its largest parameter (what DeepSpeed ZeRO-3's persistence threshold compares).
    largest: u64,
    /// All its parameters.
    numel: u64,
}

/// [`layer_modules`]: one decoder layer's sub-modules and float8 linear weights.
struct LayerModules {
    /// Its sub-modules in forward order, on one tensor-parallel rank.
    modules: Vec<SubModule>,
    /// Of `modules`: the attention's output projection (the first row-parallel attention
    /// group), which the attention core runs just before.
    attn_out: Option<usize>,
    /// Elements of the float8 linear weights on one tensor-parallel rank.
    float8_rank: f64,
    /// Elements of the float8 linear weights of the whole layer (its float8 matmuls' FLOPs
    /// per token are twice these).
    float8: f64,
    /// The activations its float8 linears cast.
    casts: Float8Casts,
}

/// Sub-modules of stage `w` holding a parameter of more than `threshold` elements on one
/// rank (DeepSpeed ZeRO-3 fetches each as one all-gather), and of its first decoder layer.
fn fetched_modules(work: &LayoutWork, w: &StageWork, threshold: u64) -> (f64, f64) {
    let over =
        |modules: &[SubModule]| modules.iter().filter(|m| m.largest > threshold).count() as f64;
    let [dense, moe] = &work.modules;
    let dense = over(dense);
    let moe = if w.moe_layers > 0 { over(moe) } else { dense };
    let n_dense = w.dense_layers() as f64;
    let mut modules = n_dense * dense + w.moe_layers as f64 * moe;
    // the embedding (first stage) and the LM head (last stage; a tied head is the embedding)
    if w.embed_rank > 0.0 {
        modules += 1.0;
    }
    if w.root_rank > w.embed_rank {
        modules += 1.0;
    }
    let first = if w.moe_layers > 0 && n_dense == 0.0 {
        moe
    } else {
        dense
    };
    (modules, first)
}

/// DeepSpeed ZeRO-3 under full recomputation: the parameter elements of stage `w` gathered
/// a third time per micro-batch, and the sub-modules they are fetched as. Each decoder
/// layer's recomputed forward fetches its sub-modules `M1 .. Mk` and releases each after
/// use (`post_sub_module_forward_function`) unless its next use, its own backward, lies
/// less than `reuse_distance` elements of fetches ahead (`__params_to_release` walks the
/// recorded module order, summing every module's elements, persistent ones too): between
/// them run `M(i+1) .. Mk` recomputed and `Mk .. M(i+1)` in backward, `2 sum(n_j, j > i)`
/// elements. A released sub-module is all-gathered again for its backward; one under the
/// persistence threshold (`threshold`, its largest parameter) is never released. The
/// sub-modules are taken in [`ModelArch::layer_groups`]' order (norms first, persistent
/// under the default threshold, then attention and MLP in forward order).
fn regathered(work: &LayoutWork, w: &StageWork, reuse_distance: u64, threshold: u64) -> (f64, f64) {
    let layer = |modules: &[SubModule]| {
        let (mut after, mut elements, mut count) = (0u64, 0u64, 0u64);
        for m in modules.iter().rev() {
            if regathers(m, after, reuse_distance, threshold) {
                elements += m.numel;
                count += 1;
            }
            after = after.saturating_add(m.numel);
        }
        (elements as f64, count as f64)
    };
    let dense = layer(&work.modules[0]);
    let moe = if w.moe_layers > 0 {
        layer(&work.modules[1])
    } else {
        (0.0, 0.0)
    };
    let n_dense = w.dense_layers() as f64;
    let n_moe = w.moe_layers as f64;
    (
        n_dense * dense.0 + n_moe * moe.0,
        n_dense * dense.1 + n_moe * moe.1,
    )
}

/// [`regathered`]'s rule: sub-module `m`, followed in its layer by `after` elements of
/// sub-modules, is released after its recomputed forward and all-gathered again for its
/// backward.
fn regathers(m: &SubModule, after: u64, reuse_distance: u64, threshold: u64) -> bool {
    m.largest > threshold && after.saturating_mul(2) >= reuse_distance
}

/// One module hook of a ZeRO-3 pass in the order it runs ([`blocking_exposed`]): the
/// elements it all-gathers (`None`: nothing to gather: persistent parameters, parameters
/// still gathered, or no parameters), the seconds of compute launched after it, and the
/// gradient elements reduce-scattered once that compute has produced them (backward).
#[derive(Debug, Clone, Copy)]
struct Hook {
    gathers: Option<f64>,
    compute: f64,
    reduces: f64,
}

impl Hook {
    /// A hook that only computes (the attention core, the LM head and loss).
    fn compute(seconds: f64) -> Hook {
        Hook {
            gathers: None,
            compute: seconds,
            reduces: 0.0,
        }
    }
}

/// Seconds by which one pass of `hooks` outlasts its compute under DeepSpeed's blocking
/// ZeRO-3 fetch (before 0.6, [`crate::engines::Collectives::Modules`]' `blocking`), as
/// v0.3.15's hooks order it (`stage3.py` `pre_sub_module_forward_function` and
/// `pre_sub_module_backward_function`: fetch, then prefetch, then the module's kernels):
/// * a hook whose parameters are not gathered all-gathers them; one whose parameters are
///   on the way waits for every gather in flight and for the device
///   (`_synchronize_communication`);
/// * with nothing in flight, it prefetches the next hooks' parameters in the recorded order
///   until `bucket` elements are on the way (at least one module's); each all-gather is
///   issued after `torch.cuda.synchronize()` (`_allgather_param`), so it starts when the
///   compute launched so far and the gathers before it have finished;
/// * the gathers run one after another on one stream, each `gather(elements)` seconds;
/// * a backward hook's gradients are reduce-scattered (`reduce(elements)` seconds) once its
///   compute has produced them, on the reduction stream (`overlap_comm`) over the same
///   link, after the collectives before them; the device-wide synchronizations above wait
///   for them too (`torch.cuda.synchronize` waits for every stream).
///
/// Only the compute launched after a gather is issued hides it. The pass ends when its
/// compute and its collectives have.
fn blocking_exposed(
    hooks: &[Hook],
    bucket: f64,
    gather: impl Fn(f64) -> f64,
    reduce: impl Fn(f64) -> f64,
) -> f64 {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Released,
        InFlight,
        Gathered,
    }
    let mut state = vec![State::Released; hooks.len()];
    // the host's time at the hook, the end of the compute launched, of the gathers issued
    let (mut host, mut compute_end, mut comm_end) = (0.0f64, 0.0f64, 0.0f64);
    let mut in_flight: Vec<usize> = Vec::new();
    let mut computed = 0.0;
    // the hooks that gather, in order, and the first of them a prefetch may take
    let fetches: Vec<usize> = (0..hooks.len())
        .filter(|&i| hooks[i].gathers.is_some())
        .collect();
    let mut next = 0;
    for (i, hook) in hooks.iter().enumerate() {
        if let Some(n) = hook.gathers {
            if state[i] == State::Released {
                host = host.max(compute_end).max(comm_end);
                comm_end = host + gather(n);
                state[i] = State::InFlight;
                in_flight.push(i);
            }
            if state[i] == State::InFlight {
                host = host.max(compute_end).max(comm_end);
                for j in in_flight.drain(..) {
                    state[j] = State::Gathered;
                }
            }
        }
        if in_flight.is_empty() {
            let mut on_the_way = 0.0;
            while on_the_way < bucket {
                // the next hook still to gather (every one before it is on the way or done)
                while next < fetches.len()
                    && (fetches[next] <= i || state[fetches[next]] != State::Released)
                {
                    next += 1;
                }
                let Some(&j) = fetches.get(next) else {
                    break;
                };
                let n = hooks[j].gathers.unwrap_or(0.0);
                host = host.max(compute_end).max(comm_end);
                comm_end = host + gather(n);
                state[j] = State::InFlight;
                in_flight.push(j);
                on_the_way += n;
                next += 1;
            }
        }
        compute_end = compute_end.max(host) + hook.compute;
        computed += hook.compute;
        if hook.reduces > 0.0 {
            comm_end = comm_end.max(compute_end) + reduce(hook.reduces);
        }
    }
    (compute_end.max(comm_end) - computed).max(0.0)
}

/// What one micro-batch computes on a stage, per decoder layer, for [`blocking_passes`].
struct LayerCompute {
    /// Seconds of forward matmul per parameter element on the rank.
    per_element: f64,
    /// The attention core forward and backward (recomputed in backward under selective
    /// recomputation).
    attn: (f64, f64),
    /// Elementwise kernels forward and backward, per sub-module.
    elementwise: (f64, f64),
    /// The LM head and loss, forward and backward (last stage).
    head: (f64, f64),
    /// Backward's matmuls per forward one.
    mm_bwd: f64,
}

/// The hooks of a micro-batch's forward and of its backward (with the recomputed forward
/// under full recomputation) on a stage of `layers` dense decoder layers of `modules`
/// (forward order, `attn_out` the attention output projection), and [`blocking_exposed`]
/// of each. A sub-module gathers when its largest parameter exceeds `threshold`: in
/// forward, in the recomputed forward, and in backward where the recomputation released
/// it ([`regathers`]; every one without full recomputation). The attention core runs
/// between its input projections and `attn_out`; the elementwise kernels are shared
/// evenly among the sub-modules.
#[allow(clippy::too_many_arguments)]
fn blocking_passes(
    modules: &[SubModule],
    attn_out: Option<usize>,
    layers: u64,
    c: &LayerCompute,
    full_recompute: bool,
    (threshold, reuse_distance, bucket): (u64, u64, u64),
    gather: impl Fn(f64) -> f64,
    reduce: impl Fn(f64) -> f64,
) -> (f64, f64) {
    let share = 1.0 / modules.len().max(1) as f64;
    let gathers =
        |m: &SubModule, yes: bool| (yes && m.largest > threshold).then_some(m.numel as f64);
    let forward = |hooks: &mut Vec<Hook>| {
        for (k, m) in modules.iter().enumerate() {
            if attn_out == Some(k) {
                hooks.push(Hook::compute(c.attn.0));
            }
            hooks.push(Hook {
                gathers: gathers(m, true),
                compute: m.numel as f64 * c.per_element + c.elementwise.0 * share,
                reduces: 0.0,
            });
        }
    };
    let per_layer = modules.len() + 1;
    let mut hooks = Vec::with_capacity(layers as usize * per_layer + 1);
    for _ in 0..layers {
        forward(&mut hooks);
    }
    hooks.push(Hook::compute(c.head.0));
    let fwd = blocking_exposed(&hooks, bucket as f64, &gather, &reduce);
    hooks.clear();
    hooks.push(Hook::compute(c.head.1));
    for _ in 0..layers {
        if full_recompute {
            forward(&mut hooks);
        }
        let mut after = 0u64;
        for (k, m) in modules.iter().enumerate().rev() {
            let again = !full_recompute || regathers(m, after, reuse_distance, threshold);
            hooks.push(Hook {
                gathers: gathers(m, again),
                compute: c.mm_bwd * m.numel as f64 * c.per_element + c.elementwise.1 * share,
                // a persistent sub-module's few gradients ride in the next bucket
                reduces: gathers(m, true).unwrap_or(0.0),
            });
            if attn_out == Some(k) {
                hooks.push(Hook::compute(c.attn.1));
            }
            after = after.saturating_add(m.numel);
        }
    }
    (
        fwd,
        blocking_exposed(&hooks, bucket as f64, &gather, &reduce),
    )
}

/// Bytes that eager attention's elementwise kernels read and write per attention score
/// (one element of the `b x heads x s x s` scores), forward and backward, apart from the
/// two matmuls that write and read the scores (each timed by [`TimeInputs`]' roofline in
/// `numbers_with`). Every kernel reads its inputs and writes its output once; `e` is the
/// activation dtype's bytes, dropout (probability `p > 0`) keeps a 1-byte mask.
///
/// * Megatron-LM's core attention (`ParallelAttention` / `DotProductAttention`):
///   `baddbmm` scores, `FusedScaleMaskSoftmax` (one kernel, half in and out), attention
///   dropout, `bmm` with V. Forward: softmax `2e`, dropout `2e + 1`; backward: dropout
///   `2e + 1`, softmax backward (output and gradient in, gradient out) `3e`.
/// * transformers' `eager_attention_forward`: `matmul(q, k^T) * scaling` (`2e`), `+
///   causal_mask` (`e` in, the sum out: fp32 under autocast, where the mask is fp32), and
///   `softmax(dim=-1, dtype=float32).to(dtype)`: an fp32 copy of half scores first (ATen
///   `SoftMax.cpp`; CUDA fp16 converts inside the kernel), the fp32 softmax, the half copy;
///   dropout. The backward runs each in reverse (the promoted sum's gradient cast back to
///   the scores' dtype). Not counted: the causal mask, broadcast over the heads, and
///   `repeat_kv`'s copies of K and V (per token, not per score).
pub fn eager_score_bytes(
    code: ModelCode,
    e: f64,
    autocast: bool,
    fp16: bool,
    p: f64,
) -> (f64, f64) {
    let dropout = if p > 0.0 { 2.0 * e + 1.0 } else { 0.0 };
    match code {
        ModelCode::Megatron => (2.0 * e + dropout, dropout + 3.0 * e),
        ModelCode::Transformers => {
            // the scores after the mask is added
            let m = if autocast { 4.0 } else { e };
            let half_in = m < 4.0;
            let to_half = if e < 4.0 { 4.0 + e } else { 0.0 };
            let (softmax_fwd, softmax_bwd) = match (half_in, fp16) {
                // fp32 in, fp32 out; backward: output and gradient in, gradient out
                (false, _) => (8.0, 12.0),
                // CUDA fp16: the kernel reads half and writes fp32, its backward writes half
                (true, true) => (m + 4.0, 8.0 + m),
                // an fp32 copy, then the fp32 softmax; backward: the softmax's, then the
                // copy's gradient cast back
                (true, false) => (m + 4.0 + 8.0, 12.0 + 4.0 + m),
            };
            let promoted = if m != e { m + e } else { 0.0 };
            let fwd = 2.0 * e + (e + m) + softmax_fwd + to_half + dropout;
            let bwd = dropout + to_half + softmax_bwd + promoted + 2.0 * e;
            (fwd, bwd)
        }
    }
}

/// Bytes that the memory-bound elementwise kernels around the matmuls read and write per
/// token on one GPU: forward and backward of one dense decoder layer, of one MoE layer, and
/// of the LM head's loss (last stage). Every kernel reads each input and writes each output
/// once; a backward kernel reads the output gradient and what its formula needs and writes
/// one gradient per input; where two gradients of the residual stream meet, one add.
///
/// Unfused (transformers modules run eagerly), per element of the tensor named, `e` the
/// activation dtype's bytes:
/// * RMSNorm (`LlamaRMSNorm.forward`: `to(float32)`, `pow(2).mean(-1)`, `* rsqrt(..)`,
///   `to(input_dtype)`, `weight *`): forward `20 + 2e`, backward `36 + 4e`, plus `2 (e + 4)`
///   each way for the two casts when `e < 4`; LayerNorm (ATen's one `layer_norm` kernel):
///   forward `2e`, backward `5e` (`layer_norm_backward`'s input-gradient kernel `3e` and its
///   weight and bias reduction `2e`).
/// * Rotary embedding on every query and key element (`apply_rotary_pos_emb`: `q * cos +
///   rotate_half(q) * sin`, `rotate_half` a negation and a `cat`): forward `10e`, backward
///   `8e`; MLA rotates only its `qk_rope_head_dim` part.
/// * The attention output's `transpose(1, 2).contiguous()` before `o_proj`: `2e` each way.
/// * The MLP activation per intermediate element: gated `act(gate) * up` forward `5e`,
///   backward `9e`; standard `act(x)` forward `2e`, backward `3e`.
/// * Residual adds: `3e` each way, two per layer (one for a parallel block); hidden dropout
///   (`p > 0`, on the attention and MLP outputs) `2e + 1` each way (1-byte mask).
///
/// Fused (Megatron-LM / Transformer Engine kernels, or `torch.compile`, whose inductor turns
/// each chain of pointwise ops between two matmuls into one kernel): a norm forward `2e`,
/// backward `3e` (one kernel reads the gradient and the input, writes the gradient); rotary
/// `2e` each way (TE `fused_apply_rotary_pos_emb`); gated activation forward `3e`, backward
/// `5e` (Megatron `bias_swiglu`), standard forward `2e`, backward `3e` (`bias_gelu`);
/// residual add with its dropout forward `3e` (+1 with a mask, `bias_dropout_add`), backward
/// `3e` (+ `2e + 1` with dropout). Megatron's `[s, b, h]` layout needs no output copy.
///
/// Loss, per logit (vocabulary / TP): transformers `ForCausalLMLoss` (`logits.float()`,
/// `cross_entropy`'s log-softmax, its backward, the cast back): forward `e + 12`, backward
/// `20 + e` (fp32 logits: 8 and 16); Megatron `VocabParallelCrossEntropy` (`.float()`, max,
/// subtract, exp, sum, divide in fp32; backward one multiply and the cast back): forward
/// `e + 36`, backward `12 + e`; Liger's fused linear cross-entropy (`loss` `fused`): the
/// gradient is written in the forward, `2e`.
///
/// Not counted: autocast's fp32 promotion of `layer_norm` (its output is then fp32), MoE
/// token permutation copies, embedding lookups, Transformer Engine's float8 casts, QLoRA's
/// dequantization of its 4-bit weights, LoRA's adapter paths, the vision tower; composite
/// activations (`gelu_new`'s tanh formula) count as one kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ElementwiseBytes {
    /// One dense decoder layer, forward and backward, bytes per token on one GPU.
    pub dense: (f64, f64),
    /// One MoE decoder layer (its active experts' intermediate), bytes per token.
    pub moe: (f64, f64),
    /// The loss over the LM head's logits (last stage), bytes per token.
    pub loss: (f64, f64),
}

/// [`ElementwiseBytes`] of one GPU: `e` the activation dtype's bytes, `fused` for Megatron's
/// kernels or `torch.compile`, `tp` the tensor-parallel size; with sequence parallelism the
/// hidden-sized kernels (norms, residual adds) run on `1 / tp` of the tokens. Under
/// torchao's float8, `float8` gives the casts of a dense and of a MoE layer's converted
/// linears and whether their weight gradients are computed: their bytes
/// ([`float8_cast_bytes`]) join the layers'.
#[allow(clippy::too_many_arguments)]
pub fn elementwise_bytes(
    arch: &ModelArch,
    code: ModelCode,
    fused: bool,
    loss: crate::config::LossImpl,
    e: f64,
    tp: u64,
    sequence_parallel: bool,
    float8: Option<(&[Float8Casts; 2], bool)>,
) -> ElementwiseBytes {
    let tp = tp.max(1) as f64;
    let h = arch.hidden_size as f64;
    // hidden-sized tensors per token on this GPU
    let hid = if sequence_parallel { h / tp } else { h };
    let megatron = code == ModelCode::Megatron;
    let casts = if e < 4.0 { 2.0 * (e + 4.0) } else { 0.0 };
    let norm = match (fused, arch.norm) {
        (true, _) => (2.0 * e, 3.0 * e),
        (false, crate::arch::NormKind::RmsNorm) => (20.0 + 2.0 * e + casts, 36.0 + 4.0 * e + casts),
        (false, crate::arch::NormKind::LayerNorm) => (2.0 * e, 5.0 * e),
    };
    let norms = arch.norms_per_layer as f64;
    let adds = if arch.parallel_attention { 1.0 } else { 2.0 };
    let p = arch.hidden_dropout;
    let residual = match (fused, p > 0.0) {
        (_, false) => (3.0 * e, 3.0 * e),
        (true, true) => (3.0 * e + 1.0, 5.0 * e + 1.0),
        (false, true) => (5.0 * e + 1.0, 5.0 * e + 1.0),
    };
    // rotary on queries and keys (MLA: the rope part of every head's query and key)
    let rotated = if arch.learned_position_embeddings > 0 {
        0.0
    } else {
        let (heads, kv, d) = match &arch.mla {
            Some(m) => (
                arch.num_attention_heads,
                arch.num_attention_heads,
                m.qk_rope_head_dim,
            ),
            None => (
                arch.num_attention_heads,
                arch.num_key_value_heads,
                arch.head_dim,
            ),
        };
        ((heads + kv) * d) as f64 / tp
    };
    let rotary = if fused {
        (2.0 * e, 2.0 * e)
    } else {
        (10.0 * e, 8.0 * e)
    };
    let out_copy = if megatron {
        0.0
    } else {
        (arch.num_attention_heads * arch.v_head_dim()) as f64 / tp * 2.0 * e
    };
    let gated = arch.mlp == crate::arch::MlpKind::Gated;
    let act = match (fused, gated) {
        (_, false) => (2.0 * e, 3.0 * e),
        (true, true) => (3.0 * e, 5.0 * e),
        (false, true) => (5.0 * e, 9.0 * e),
    };
    // what every layer moves apart from its MLP activation, in one direction
    let common = |norm: f64, residual: f64, rotary: f64| {
        hid * (norms * norm + adds * residual) + rotated * rotary + out_copy
    };
    let (common_fwd, common_bwd) = (
        common(norm.0, residual.0, rotary.0),
        common(norm.1, residual.1, rotary.1),
    );
    let layer = |inter: f64| {
        (
            common_fwd + inter / tp * act.0,
            common_bwd + inter / tp * act.1,
        )
    };
    let mut dense = layer(arch.intermediate_size as f64);
    let mut moe = match &arch.moe {
        Some(m) => layer(
            (m.num_experts_per_tok * m.moe_intermediate_size + m.shared_expert_intermediate_size)
                as f64,
        ),
        None => dense,
    };
    if let Some(([dense_casts, moe_casts], weight_grads)) = float8 {
        for (bytes, casts) in [(&mut dense, dense_casts), (&mut moe, moe_casts)] {
            let (fwd, bwd) = float8_cast_bytes(casts, hid, e, weight_grads);
            *bytes = (bytes.0 + fwd, bytes.1 + bwd);
        }
    }
    let v = arch.vocab_size as f64 / tp;
    let loss = match (loss, megatron) {
        (crate::config::LossImpl::Fused, _) => (2.0 * e, 0.0),
        (_, true) => (e + 36.0, 12.0 + e),
        (_, false) if e < 4.0 => (e + 12.0, 20.0 + e),
        (_, false) => (8.0, 16.0),
    };
    ElementwiseBytes {
        dense,
        moe,
        loss: (v * loss.0, v * loss.1),
    }
}

/// One micro-batch on a stage, seconds.
#[derive(Clone, Copy, Default)]
struct StageTime {
    /// All of it.
    per_mb: f64,
    /// Forward + backward compute with its elementwise kernels (the window data-parallel
    /// traffic overlaps).
    compute: f64,
    /// The forward's part of `compute`.
    forward: f64,
    /// Elementwise kernels, recomputation, TP, CP and EP exchanges.
    rest: [f64; 5],
    /// Its matmuls and attention kernels.
    kernels: StageCompute,
}

/// The terms of one step, in [`TIME_TERMS`] order, and what MFU needs.
struct Numbers {
    values: [f64; TIME_TERMS.len()],
    /// Model FLOPs per token (MFU convention), summed over the stages.
    flops_per_token: f64,
    global_tokens: f64,
    gpus: f64,
    bf16_rate: f64,
}

impl Numbers {
    fn seconds(&self) -> f64 {
        self.values.iter().sum()
    }
}

/// The work of a layout's pipeline stages: what step time needs of the layout alone,
/// independent of the micro-batch, the accumulation, the engine and the recomputation
/// (the plan search computes it once per layout and times every candidate of the layout
/// with [`step_seconds_with`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutWork {
    /// Each stage's work, first to last, consecutive equal stages merged (a merged stage
    /// times the same, so the slowest is the same).
    stages: Vec<StageWork>,
    /// Model FLOPs per token summed over every stage (the MFU convention).
    flops_per_token: f64,
    seq_len: u64,
    /// [`layer_modules`]' sub-modules of a dense and of a MoE decoder layer (empty without
    /// MoE layers) in forward order, on one of the layout's tensor-parallel ranks.
    modules: [Vec<SubModule>; 2],
    /// Of `modules[0]`: the dense layer's attention output projection
    /// ([`LayerModules::attn_out`]).
    attn_out: Option<usize>,
    /// The activations a dense and a MoE decoder layer's float8 linears cast.
    float8_casts: [Float8Casts; 2],
}

/// [`LayoutWork`] of `layout` for sequences of `seq_len` tokens.
pub fn layout_work(
    arch: &ModelArch,
    params: &ParamCounts,
    layout: &Layout,
    seq_len: u64,
) -> LayoutWork {
    let s = seq_len as f64;
    let n_moe = arch.num_moe_layers();
    let tp = layout.tensor_parallel_size.max(1);
    let dense = layer_modules(arch, crate::arch::FfnKind::Dense, tp);
    let moe = if n_moe > 0 {
        layer_modules(arch, crate::arch::FfnKind::Moe, tp)
    } else {
        LayerModules {
            modules: Vec::new(),
            attn_out: None,
            float8_rank: 0.0,
            float8: 0.0,
            casts: Float8Casts::default(),
        }
    };
    let mut stages: Vec<StageWork> = Vec::new();
    let mut flops_per_token = 0.0;
    for stage in 0..layout.pipeline_parallel_size.max(1) {
        let w = stage_work(arch, params, layout, s, stage, n_moe, [&dense, &moe]);
        flops_per_token += 3.0 * (w.layer_mm + w.head_mm + w.attn_model);
        if stages.last() != Some(&w) {
            stages.push(w);
        }
    }
    LayoutWork {
        stages,
        flops_per_token,
        seq_len,
        float8_casts: [dense.casts, moe.casts],
        attn_out: dense.attn_out,
        modules: [dense.modules, moe.modules],
    }
}

/// The rates and kernel facts a micro-batch's compute on a stage runs at, worked out once
/// per step time (see [`numbers_with`]).
struct Compute {
    /// GEMM efficiency and the attention kernel's.
    eff: f64,
    attn_eff: f64,
    /// FLOP/s of the bf16 (fp32 under precision fp32) tensor cores, and of the layers'
    /// matmuls in the compute dtype.
    bf16_rate: f64,
    mm_rate: f64,
    /// Under float8 with transformers' modules only the converted linears run in float8.
    converted_only: bool,
    /// Bytes per activation element.
    act: f64,
    /// Tokens of a micro-batch one tensor-parallel group holds, and one GPU's share.
    tokens: f64,
    per_gpu: f64,
    /// Sequence length (eager attention's keys).
    s: f64,
    eager: bool,
    /// The attention kernel's forward and backward time over FlashAttention-2's
    /// ([`TRITON_FLASH_SLOWDOWN`] for the Triton kernel, else 1).
    attn_slowdown: (f64, f64),
    masked: bool,
    heads: f64,
    dqk: f64,
    dv: f64,
    mem_bw: f64,
    /// Eager attention's elementwise bytes per score, forward and backward.
    eager_bytes: (f64, f64),
    /// Backward's matmuls per forward one: input and weight gradients (LoRA's frozen base:
    /// input gradients only).
    mm_bwd: f64,
}

/// One micro-batch's compute on a stage, seconds: the layers' forward matmuls, the
/// attention kernels forward and backward, and the forward and backward passes (matmuls and
/// attention; elementwise kernels apart).
#[derive(Clone, Copy, Default)]
struct StageCompute {
    layer_mm_fwd: f64,
    attn_fwd: f64,
    attn_bwd: f64,
    fwd: f64,
    bwd: f64,
}

impl Compute {
    fn of(t: &TimeInputs) -> Compute {
        let (arch, l, tr) = (t.arch, t.layout, t.training);
        let eff = t.assumptions.compute_efficiency.clamp(0.01, 1.0);
        let attn_eff = t
            .assumptions
            .attention_efficiency
            .unwrap_or_else(|| default_attention_efficiency(t.gpu_arch))
            .clamp(0.01, 1.0);
        let fp32 = tr.precision == Precision::Fp32;
        let bf16_rate = if fp32 {
            t.perf.fp32_tflops
        } else {
            t.perf.bf16_tflops
        } * TERA;
        let mm_rate = match tr.precision {
            Precision::Fp8 => t.perf.fp8_tflops.unwrap_or(t.perf.bf16_tflops),
            Precision::Fp32 => t.perf.fp32_tflops,
            _ => t.perf.bf16_tflops,
        } * TERA;
        // Under float8 with transformers' modules only the converted linears run in float8
        // (torchao's `convert_to_float8_training` and Transformer Engine's swaps replace
        // `nn.Linear` modules: not routed experts, `Conv1D` or dims not divisible by 16);
        // Megatron-Core's Transformer Engine layers run every decoder GEMM in fp8, grouped
        // experts too
        let converted_only =
            tr.precision == Precision::Fp8 && t.engine.code == ModelCode::Transformers;
        let (tp, cp) = (
            l.tensor_parallel_size.max(1),
            l.context_parallel_size.max(1),
        );
        let (b, s) = (tr.micro_batch_size as f64, tr.seq_len as f64);
        let act = t.bytes.activation as f64;
        // tokens one GPU's (tensor-parallel group's) micro-batch holds
        let tokens = b * s / cp as f64;
        Compute {
            eff,
            attn_eff,
            bf16_rate,
            mm_rate,
            converted_only,
            act,
            tokens,
            per_gpu: tokens / tp as f64,
            s,
            // eager attention (materialized scores): its kernels' bytes per score element
            eager: tr.attention == Attention::Eager,
            attn_slowdown: if tr.attention == Attention::FlashTriton {
                TRITON_FLASH_SLOWDOWN
            } else {
                (1.0, 1.0)
            },
            // SDPA given a sliding-window mask visits every key of those layers
            masked: crate::activations::sdpa_sliding_mask(
                t.engine.code,
                tr.attention,
                arch,
                tr.seq_len,
            ),
            heads: arch.num_attention_heads as f64,
            dqk: arch.qk_head_dim() as f64,
            dv: arch.v_head_dim() as f64,
            mem_bw: t.perf.memory_gbs * GIGA,
            eager_bytes: eager_score_bytes(
                t.engine.code,
                act,
                t.engine.autocast,
                matches!(tr.precision, Precision::AmpFp16 | Precision::Fp16),
                arch.attention_dropout,
            ),
            mm_bwd: if tr.lora.is_some() { 1.0 } else { 2.0 },
        }
    }

    /// Seconds per token of a stage's layer matmuls at full rate (float8 where they run in
    /// it).
    fn layer_mm_seconds(&self, w: &StageWork) -> f64 {
        if self.converted_only {
            w.layer_mm_float8 / self.mm_rate
                + (w.layer_mm - w.layer_mm_float8).max(0.0) / self.bf16_rate
        } else {
            w.layer_mm / self.mm_rate
        }
    }

    /// One micro-batch's compute on the stage of work `w`.
    fn stage(&self, w: &StageWork) -> StageCompute {
        let (per_gpu, eff, bf16_rate, mem_bw) =
            (self.per_gpu, self.eff, self.bf16_rate, self.mem_bw);
        // forward: layer matmuls at the compute dtype's rate, head and attention at bf16
        let layer_mm_fwd = per_gpu * self.layer_mm_seconds(w) / eff;
        let mm_fwd = layer_mm_fwd + per_gpu * w.head_mm / bf16_rate / eff;
        let (attn_fwd, attn_bwd) = if self.eager {
            // materialized scores: every key of every query head, each matmul kernel the
            // slower of its FLOPs (2 d per score) and its score bytes (roofline), the
            // elementwise kernels at memory bandwidth
            let scores = per_gpu * self.heads * self.s * w.layers as f64;
            let kernel = |d: f64| (2.0 * d / (bf16_rate * eff)).max(self.act / mem_bw);
            let (k_qk, k_v) = (kernel(self.dqk), kernel(self.dv));
            let (eager_fwd, eager_bwd) = self.eager_bytes;
            (
                scores * (k_qk + k_v + eager_fwd / mem_bw),
                // dP and dV from the second matmul, dQ and dK from the first
                scores * (2.0 * (k_qk + k_v) + eager_bwd / mem_bw),
            )
        } else {
            // attention's backward runs 5 matmuls to forward's 2 (FlashAttention-2, Dao
            // 2023 Sec. 3.1.2)
            let hw = if self.masked {
                w.attn_masked
            } else {
                w.attn_hw
            };
            let f = per_gpu * hw / bf16_rate / self.attn_eff;
            let (fwd_slow, bwd_slow) = self.attn_slowdown;
            (f * fwd_slow, 2.5 * f * bwd_slow)
        };
        let fwd = mm_fwd + attn_fwd;
        // backward: input and weight gradients (LoRA's frozen base: input gradients only)
        let bwd = self.mm_bwd * mm_fwd + attn_bwd;
        StageCompute {
            layer_mm_fwd,
            attn_fwd,
            attn_bwd,
            fwd,
            bwd,
        }
    }
}

/// Seconds a micro-batch's recomputation runs on a stage whose layers' forward matmuls take
/// `layer_mm_fwd`, its attention kernels `attn_fwd` and its layers' forward elementwise
/// kernels `ew_fwd`: full recomputation runs the whole forward again, selective the
/// attention core (Korthikanti et al. 2022), torchtitan's per-op policy every other matmul
/// and every elementwise kernel (`activation_checkpoint.py` `_save_list` keeps matmul and
/// attention outputs only).
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn recomputed(rc: Recompute, layer_mm_fwd: f64, attn_fwd: f64, ew_fwd: f64) -> f64 {
    match rc {
        Recompute::None => 0.0,
        Recompute::Full => layer_mm_fwd + attn_fwd + ew_fwd,
        Recompute::Selective => attn_fwd,
        Recompute::SelectiveOp => 0.5 * layer_mm_fwd + ew_fwd,
    }
}

fn numbers(t: &TimeInputs) -> Numbers {
    numbers_with(
        t,
        &layout_work(t.arch, t.params, t.layout, t.training.seq_len),
    )
}

/// The slowest stage's micro-batch ([`StageTime`], and its work): its compute, elementwise
/// kernels, recomputation and tensor-, context- and expert-parallel exchanges (see
/// [`numbers_with`], whose terms take it).
fn slowest_stage(t: &TimeInputs, work: &LayoutWork, c: &Compute) -> (StageTime, StageWork) {
    let (arch, l, tr) = (t.arch, t.layout, t.training);
    let (act, tokens, per_gpu) = (c.act, c.tokens, c.per_gpu);
    let (tp, cp) = (
        l.tensor_parallel_size.max(1),
        l.context_parallel_size.max(1),
    );
    let h = arch.hidden_size as f64;
    // seconds per byte of memory traffic (a zero rate gives zero-time terms)
    let per_byte = if c.mem_bw > 0.0 { 1.0 / c.mem_bw } else { 0.0 };
    let tp_bw = link(t.perf, l, tp, 1);
    // each all-reduce's fixed latency; with sequence parallelism an all-gather and a
    // reduce-scatter in its place
    let tp_nodes = nodes_of(l, tp, 1);
    let tp_lat = if l.sequence_parallel {
        2.0 * nccl_latency(CollectiveKind::AllGather, tp, tp_nodes)
    } else {
        nccl_latency(CollectiveKind::AllReduce, tp, tp_nodes)
    };
    let cp_bw = link(t.perf, l, cp, tp);
    let ep = l.expert_parallel_size.max(1);
    let ep_bw = link(t.perf, l, ep, l.expert_tensor_parallel_size.max(1));

    let ew = elementwise_bytes(
        arch,
        t.engine.code,
        t.engine.code == ModelCode::Megatron || tr.compile,
        tr.loss,
        act,
        tp,
        l.sequence_parallel,
        // LoRA's frozen base computes no weight gradients
        c.converted_only
            .then_some((&work.float8_casts, tr.lora.is_none())),
    );

    let time_stage = |w: &StageWork| -> StageTime {
        // memory-bound elementwise kernels at memory bandwidth
        let (n_moe, n_dense) = (w.moe_layers as f64, w.dense_layers() as f64);
        let layers_ew = |dense: f64, moe: f64| tokens * (n_dense * dense + n_moe * moe) * per_byte;
        let (ew_fwd, ew_bwd) = (
            layers_ew(ew.dense.0, ew.moe.0),
            layers_ew(ew.dense.1, ew.moe.1),
        );
        let (loss_fwd, loss_bwd) = if w.head_mm > 0.0 {
            (tokens * ew.loss.0 * per_byte, tokens * ew.loss.1 * per_byte)
        } else {
            (0.0, 0.0)
        };
        // torchao's float8 casts of the converted linears' weights, once per micro-batch:
        // forward's cast (done before the all-gather under FSDP2's float8 all-gather) and
        // backward's column-major copy (the activations' casts are per token, in `ew`)
        let (ew_fwd, ew_bwd) = if c.converted_only {
            let weight_fwd = if t.traffic.float8_gather {
                0.0
            } else {
                2.0 * act + 1.0
            };
            (
                ew_fwd + w.float8_rank * weight_fwd * per_byte,
                ew_bwd + w.float8_rank * 2.0 * per_byte,
            )
        } else {
            (ew_fwd, ew_bwd)
        };
        let elementwise = ew_fwd + ew_bwd + loss_fwd + loss_bwd;
        let kernels = c.stage(w);
        let StageCompute {
            layer_mm_fwd,
            attn_fwd,
            attn_bwd,
            fwd,
            bwd,
        } = kernels;
        let recompute = recomputed(tr.activation_checkpointing, layer_mm_fwd, attn_fwd, ew_fwd);
        // the layers' exchanges run in every forward (twice under full recomputation) and in
        // backward
        let fwd_passes = if tr.activation_checkpointing == Recompute::Full {
            2.0
        } else {
            1.0
        };
        // tensor parallel: 2 all-reduce equivalents of b x s/cp x h per layer and pass
        let tp_count = 2.0 * (fwd_passes + 1.0);
        let tp_time =
            w.layers as f64 * tp_count * (all_reduce(tokens * h * act, tp, tp_bw) + tp_lat);
        // context parallel: DeepSpeed-Ulysses' all-to-alls, on the critical path
        let cp_time = if cp > 1 && t.engine.ulysses {
            w.layers as f64
                * (fwd_passes + 1.0)
                * ulysses_elements(arch, t.engine.repeats_kv, tp, cp, tokens)
                * act
                / cp_bw
        } else if cp > 1 {
            // ring attention: K and V chunks around the ring, hidden behind attention
            let kv_elems = if arch.mla.is_some() {
                arch.num_attention_heads as f64 * (arch.qk_head_dim() + arch.v_head_dim()) as f64
            } else {
                arch.num_key_value_heads as f64 * 2.0 * arch.head_dim as f64
            } / tp as f64;
            let per_layer_fwd = (cp - 1) as f64 * tokens * kv_elems.max(1.0) * act / cp_bw;
            let attn_fwd = attn_fwd / w.layers.max(1) as f64;
            w.layers as f64
                * (fwd_passes * (per_layer_fwd - attn_fwd).max(0.0)
                    + (2.0 * per_layer_fwd - attn_bwd / w.layers.max(1) as f64).max(0.0))
        } else {
            0.0
        };
        // expert parallel: dispatch + combine forward and backward per MoE layer
        let ep_time = if ep > 1 && w.moe_layers > 0 {
            let k = arch.moe.as_ref().map_or(1, |m| m.num_experts_per_tok) as f64;
            let local = if l.sequence_parallel { per_gpu } else { tokens };
            let one = local * k * h * act * (ep - 1) as f64 / ep as f64 / ep_bw;
            // dispatch and combine per pass
            w.moe_layers as f64 * 2.0 * (fwd_passes + 1.0) * one
        } else {
            0.0
        };
        StageTime {
            per_mb: fwd + bwd + elementwise + recompute + tp_time + cp_time + ep_time,
            compute: fwd + bwd + elementwise,
            forward: fwd + ew_fwd + loss_fwd,
            rest: [elementwise, recompute, tp_time, cp_time, ep_time],
            kernels,
        }
    };
    let mut slowest = (StageTime::default(), StageWork::default());
    for w in &work.stages {
        let st = time_stage(w);
        if st.per_mb >= slowest.0.per_mb {
            slowest = (st, *w);
        }
    }
    slowest
}

fn numbers_with(t: &TimeInputs, work: &LayoutWork) -> Numbers {
    debug_assert_eq!(
        work.seq_len, t.training.seq_len,
        "layout work of another length"
    );
    let (arch, l, tr) = (t.arch, t.layout, t.training);
    let c = Compute::of(t);
    let (bf16_rate, act, tokens) = (c.bf16_rate, c.act, c.tokens);
    let (tp, pp, cp) = (
        l.tensor_parallel_size.max(1),
        l.pipeline_parallel_size.max(1),
        l.context_parallel_size.max(1),
    );
    let v = l.virtual_pipeline_parallel_size.max(1) as f64;
    let (b, s, m) = (
        tr.micro_batch_size as f64,
        tr.seq_len as f64,
        tr.gradient_accumulation_steps.max(1) as f64,
    );
    let h = arch.hidden_size as f64;

    let pp_bw = link(t.perf, l, 2, tp * cp * l.data_parallel_size);
    let (
        StageTime {
            per_mb: t_mb,
            compute: t_compute_mb,
            forward: fwd_mb,
            rest: [t_ew, t_rc, t_tp, t_cp, t_ep],
            kernels: sc,
        },
        w,
    ) = slowest_stage(t, work, &c);
    let model_flops_token = work.flops_per_token;
    let compute = m * (t_compute_mb - t_ew);
    let bubble = if pp > 1 {
        (pp - 1) as f64 / v * t_mb
    } else {
        0.0
    };
    // one activation forward and one gradient backward per micro-batch and chunk, each
    // `tokens x h` (a sequence shard under sequence parallelism); split over the
    // tensor-parallel ranks and all-gathered at the receiver where the engine partitions
    // them (`pipeline_partitioned`: DeepSpeed's PipelineEngine, Megatron-LM's scatter/gather)
    let p2p = if pp > 1 {
        let message = tokens * h * act;
        let one = if l.sequence_parallel {
            message / tp as f64 / pp_bw
        } else if t.engine.pipeline_partitioned && tp > 1 {
            let tp_nodes = nodes_of(l, tp, 1);
            message / tp as f64 / pp_bw
                + gather(message, tp, link(t.perf, l, tp, 1))
                + nccl_latency(CollectiveKind::AllGather, tp, tp_nodes)
        } else {
            message / pp_bw
        };
        2.0 * m * v * one
    } else {
        0.0
    };

    // data parallel
    let d = t.traffic;
    let g = d.group.max(1);
    let dp_bw = link(t.perf, l, g, tp * cp);
    let rep_bw = link(t.perf, l, d.replicas.max(1), tp * cp * g);
    let pr = w.params_rank;
    // every collective's fixed latency (nccl_latency), times the collectives a pass is
    // issued as (the engine's Collectives)
    let dp_nodes = nodes_of(l, g, tp * cp);
    let gather_lat = nccl_latency(CollectiveKind::AllGather, g, dp_nodes);
    let reduce_lat = match d.grad_reduce {
        GradReduce::AllReduce => nccl_latency(CollectiveKind::AllReduce, g, dp_nodes),
        GradReduce::ReduceScatter => {
            let r = d.replicas.max(1);
            gather_lat + nccl_latency(CollectiveKind::AllReduce, r, nodes_of(l, r, tp * cp * g))
        }
    };
    let (modules, first_modules) = match d.gather_ops {
        Collectives::Modules {
            persistence_threshold,
            ..
        } if g > 1 => fetched_modules(work, &w, persistence_threshold),
        _ => (0.0, 0.0),
    };
    let gather_ops = collective_count(d.gather_ops, &w, modules);
    let reduce_ops = collective_count(d.reduce_ops, &w, modules);
    let reduce_of = |params: f64, ops: f64| {
        let grads = params * d.grad_bytes as f64;
        ops * reduce_lat
            + match d.grad_reduce {
                GradReduce::AllReduce => all_reduce(grads, g, dp_bw),
                GradReduce::ReduceScatter => {
                    gather(grads, g, dp_bw) + all_reduce(grads / g as f64, d.replicas, rep_bw)
                }
            }
    };
    let reduce = reduce_of(pr, reduce_ops);
    // `params` elements, `float8` of them gathered in 1 byte (FSDP2's float8 all-gather)
    let gather_of = |params: f64, float8: f64, ops: f64| {
        let float8 = if d.float8_gather { float8 } else { 0.0 };
        let bytes = (params - float8) * d.param_bytes as f64 + float8;
        ops * gather_lat + gather(bytes, g, dp_bw)
    };
    // one pass of parameter all-gathers over the stage
    let gather_pass = gather_of(pr, w.float8_rank, gather_ops);
    // ZeRO-3's sub-modules released after the recomputed forward and gathered again for
    // their backward (none without full recomputation or a persistence threshold)
    let (regathered_elements, regather) = match d.gather_ops {
        Collectives::Modules {
            persistence_threshold,
            reuse_distance,
            ..
        } if g > 1 && tr.activation_checkpointing == Recompute::Full => {
            let (elements, ops) = regathered(work, &w, reuse_distance, persistence_threshold);
            (elements, gather_of(elements, 0.0, ops))
        }
        _ => (0.0, 0.0),
    };
    let gathers = d.gathers_per_micro_batch as f64 * gather_pass + regather;
    let after_step = if d.gather_after_step {
        gather_pass
    } else {
        0.0
    };
    // the ends of a micro-batch no compute hides (DpEdges): parameters gathered before its
    // first forward computes, gradients of its last backward computation reduced after it
    // (each a part of the stage's parameters `pr`, and the collectives it is issued as)
    let ((edge_gathered, edge_gather_ops), (edge_reduced, edge_reduce_ops)) = match d.edges {
        DpEdges::Units => {
            let units = w.root_rank + w.first_layer_rank;
            ((units, 2.0), (units, 2.0))
        }
        DpEdges::FirstModules => (
            (w.embed_rank + w.first_layer_rank, 1.0 + first_modules),
            (w.embed_rank, 1.0),
        ),
        DpEdges::LastBucket => ((0.0, 0.0), (w.embed_rank, 1.0)),
    };
    // of the edge's gathered parameters, the first layer's float8 weights (the root has none)
    let edge_float8 = if edge_gathered > 0.0 {
        w.first_layer_float8
    } else {
        0.0
    };
    let edge_gather = gather_of(edge_gathered, edge_float8, edge_gather_ops);
    let edge_reduce = reduce_of(edge_reduced, edge_reduce_ops);
    let bwd_mb = t_compute_mb - fwd_mb;
    let dp = if d.overlapped {
        // hidden behind the compute of the pass it runs in, apart from the edges: a
        // micro-batch's first gather behind its forward; the backward's gather (resharded
        // parameters fetched again) and its gradients' reduction behind its backward (a
        // gradient is reduced only once computed, and an engine prefetches one unit or
        // bucket ahead, not into the other pass: torch `_fsdp_state.py` and
        // `_runtime_utils.py` prefetch, DeepSpeed `partitioned_param_coordinator.py`); the
        // boundary's reduction behind the last backward, the once-per-step gather behind the
        // forward after it
        let (fwd_comm, fwd_edges) = if d.gathers_per_micro_batch > 0 {
            (gather_pass, edge_gather)
        } else {
            (0.0, 0.0)
        };
        let mut bwd_comm =
            d.gathers_per_micro_batch.saturating_sub(1) as f64 * gather_pass + regather;
        let mut bwd_edges = 0.0;
        if d.reduce_every_micro_batch {
            bwd_comm += reduce;
            bwd_edges += edge_reduce;
        }
        let hidden = |comm: f64, edges: f64, under: f64| edges + (comm - edges - under).max(0.0);
        let (mut fwd_exposed, mut bwd_exposed) = (
            hidden(fwd_comm, fwd_edges, fwd_mb),
            hidden(bwd_comm, bwd_edges, bwd_mb),
        );
        // DeepSpeed before 0.6: each sub-module's gather hides only behind the compute
        // launched after it was issued (blocking_passes), never less than the above;
        // stages of dense layers (the MoE layers' experts compute a share of their elements)
        if let Collectives::Modules {
            persistence_threshold,
            reuse_distance,
            blocking: Some(bucket),
        } = d.gather_ops
        {
            let modules = &work.modules[0];
            let elements: u64 = modules.iter().map(|m| m.numel).sum();
            if g > 1
                && d.gathers_per_micro_batch > 0
                && w.moe_layers == 0
                && w.layers > 0
                && elements > 0
            {
                let layers = w.layers as f64;
                let ew_fwd = (fwd_mb - sc.fwd).max(0.0);
                let ew_bwd = (t_ew - ew_fwd).max(0.0);
                let attn_bwd = if tr.activation_checkpointing == Recompute::Selective {
                    sc.attn_bwd + sc.attn_fwd
                } else {
                    sc.attn_bwd
                };
                let lc = LayerCompute {
                    per_element: sc.layer_mm_fwd / (layers * elements as f64),
                    attn: (sc.attn_fwd / layers, attn_bwd / layers),
                    elementwise: (ew_fwd / layers, ew_bwd / layers),
                    head: (
                        (sc.fwd - sc.layer_mm_fwd - sc.attn_fwd).max(0.0),
                        (sc.bwd - c.mm_bwd * sc.layer_mm_fwd - sc.attn_bwd).max(0.0),
                    ),
                    mm_bwd: c.mm_bwd,
                };
                let (f, b) = blocking_passes(
                    modules,
                    work.attn_out,
                    w.layers,
                    &lc,
                    tr.activation_checkpointing == Recompute::Full,
                    (persistence_threshold, reuse_distance, bucket),
                    |n| gather_of(n, 0.0, 1.0),
                    |n| reduce_of(n, 1.0),
                );
                fwd_exposed = fwd_exposed.max(f);
                bwd_exposed = bwd_exposed.max(b);
            }
        }
        let boundary = if d.reduce_every_micro_batch {
            0.0
        } else {
            hidden(reduce, edge_reduce, bwd_mb)
        };
        let step_gather = if !d.gather_after_step {
            0.0
        } else if d.step_gather_overlapped {
            hidden(after_step, edge_gather, fwd_mb)
        } else {
            after_step
        };
        m * (fwd_exposed + bwd_exposed) + boundary + step_gather
    } else {
        let per_step = if d.reduce_every_micro_batch { m } else { 1.0 };
        m * gathers + per_step * reduce + after_step
    };
    let shard = if d.states_sharded { g as f64 } else { 1.0 };
    let pcie = t.perf.pcie_gbs * GIGA;
    let host = match d.host {
        HostTransfers::None => 0.0,
        HostTransfers::Optimizer => pr / shard * (d.grad_bytes + d.param_bytes) as f64 / pcie,
        HostTransfers::OptimizerAndParams => {
            pr / shard * (d.grad_bytes + d.param_bytes) as f64 / pcie
                + m * (d.gathers_per_micro_batch as f64 * pr + regathered_elements) / shard
                    * d.param_bytes as f64
                    / pcie
        }
    };
    let by = t.bytes;
    let optimizer = if d.host == HostTransfers::None {
        let states = full_states(tr.optimizer);
        let read = (by.weight + by.grad + by.master) as f64 + states * by.state as f64;
        let write = (by.weight + by.master) as f64 + states * by.state as f64;
        // sharded states step a shard; the weights a rank holds are rewritten either way
        (pr / shard) * (read + write) / (t.perf.memory_gbs * GIGA)
    } else {
        0.0
    };

    let values = [
        compute,
        m * t_ew,
        m * t_rc,
        m * t_tp,
        m * t_cp,
        m * t_ep,
        bubble,
        p2p,
        dp,
        host,
        optimizer,
    ];
    Numbers {
        values,
        // summed over the stages: every layer once, and the head
        flops_per_token: model_flops_token,
        global_tokens: b * s * m * l.data_parallel_size as f64,
        gpus: l.num_gpus.max(1) as f64,
        bf16_rate,
    }
}

/// Seconds per optimizer step of one layout: [`step_time`]'s `seconds`, without building
/// its report (the plan search times every candidate with this).
pub fn step_seconds(t: &TimeInputs) -> f64 {
    numbers(t).seconds()
}

/// [`step_seconds`] with the layout's [`LayoutWork`] computed once (for `t.layout` and
/// `t.training.seq_len`).
pub fn step_seconds_with(t: &TimeInputs, work: &LayoutWork) -> f64 {
    numbers_with(t, work).seconds()
}

/// A lower bound of [`step_seconds_with`] for `t`'s layout, engine and recomputation and
/// its sequences per data-parallel rank (`micro_batch_size x gradient_accumulation_steps`),
/// however they are split into micro-batches, given the split with the fewest micro-batches
/// (the largest micro-batch): step time counts, for every micro-batch, the slowest stage's
/// [`StageTime`] (compute, elementwise kernels, recomputation, TP, CP and EP exchanges;
/// the other terms are non-negative), each of them proportional to the micro-batch's tokens
/// but the TP collectives' fixed latency, which the fewest micro-batches pay least often.
/// Less 1e-9 of itself for the rounding of either sum. The plan search times a candidate
/// exactly only when this bound does not rank it behind the plans already found.
pub fn step_seconds_lower_bound(t: &TimeInputs, work: &LayoutWork) -> f64 {
    let m = t.training.gradient_accumulation_steps.max(1) as f64;
    let (slowest, _) = slowest_stage(t, work, &Compute::of(t));
    m * slowest.per_mb * (1.0 - 1e-9)
}

/// A cheaper, lower bound below [`step_seconds_lower_bound`] (whose conditions apply): of a
/// stage's micro-batch only its matmuls and attention kernels, forward, backward and
/// recomputed (what [`Compute`] works out), without the elementwise kernels and the
/// exchanges.
pub fn step_seconds_compute_bound(t: &TimeInputs, work: &LayoutWork) -> f64 {
    let c = Compute::of(t);
    let m = t.training.gradient_accumulation_steps.max(1) as f64;
    let most = work
        .stages
        .iter()
        .map(|w| {
            let x = c.stage(w);
            // the recomputation's matmuls and attention, without its elementwise kernels
            let recompute = recomputed(
                t.training.activation_checkpointing,
                x.layer_mm_fwd,
                x.attn_fwd,
                0.0,
            );
            x.fwd + x.bwd + recompute
        })
        .fold(0.0, f64::max);
    m * most * (1.0 - 1e-9)
}

/// Step time of one layout (see the module docs for every term and its source). Pure
/// arithmetic on positive inputs; never NaN (zero rates give zero-time terms).
pub fn step_time(t: &TimeInputs) -> StepTime {
    let n = numbers(t);
    let seconds = n.seconds();
    let compute = n.values[0];
    let terms = TIME_TERMS
        .iter()
        .zip(n.values)
        .map(|((name, _), seconds)| TimeTerm {
            name: (*name).to_string(),
            seconds,
        })
        .collect::<Vec<_>>();
    let limiter = terms
        .iter()
        .skip(1)
        .filter(|t| t.seconds > 0.0)
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .filter(|t| t.seconds > 0.1 * compute)
        .map_or("compute".to_string(), |t| t.name.clone());
    let (tps, mfu, tflops) = if seconds > 0.0 {
        let flops = n.flops_per_token * n.global_tokens;
        (
            n.global_tokens / seconds / n.gpus,
            flops / seconds / n.gpus / n.bf16_rate,
            flops / seconds / n.gpus / TERA,
        )
    } else {
        (0.0, 0.0, 0.0)
    };
    StepTime {
        seconds,
        tokens_per_second_per_gpu: tps,
        mfu,
        model_tflops_per_gpu: tflops,
        terms,
        limiter,
    }
}

/// The datasheet rates of the GPU a problem runs on. Errors: a custom GPU size (no preset),
/// named as `hardware.gpu`.
pub fn gpu_perf(gpu: &crate::problem::GpuSpec) -> Result<&'static GpuPerf, crate::FieldError> {
    crate::presets::gpu_preset(&gpu.id)
        .and_then(|g| g.perf.as_ref())
        .ok_or_else(|| {
            crate::FieldError::new(
                "hardware.gpu",
                &gpu.id,
                format!(
                    "step time needs a GPU preset with datasheet rates; choose one of: {}",
                    crate::presets::gpu_preset_ids().join(", ")
                ),
            )
        })
}

/// Step time of a resolved training problem (see [`step_time`]). Errors: as [`gpu_perf`].
pub fn step_time_of(
    r: &crate::problem::Resolved,
    assumptions: TimeAssumptions,
) -> Result<StepTime, crate::FieldError> {
    Ok(step_time_with(r, gpu_perf(&r.gpu)?, assumptions))
}

/// Step time of a resolved training problem on a GPU with rates `perf` (see [`step_time`]).
pub fn step_time_with(
    r: &crate::problem::Resolved,
    perf: &GpuPerf,
    assumptions: TimeAssumptions,
) -> StepTime {
    let t = &r.config.training;
    step_time(&TimeInputs {
        arch: &r.arch,
        params: &r.params,
        layout: &r.layout,
        training: t,
        traffic: r.config.engine.traffic(&r.layout, t.precision, r.bytes),
        bytes: r.bytes,
        perf,
        gpu_arch: &r.gpu.arch,
        assumptions,
        engine: EngineTiming::of(&r.config.engine, &r.bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::{Hook, blocking_exposed};

    #[test]
    fn blocking_fetch_timeline_by_hand() {
        // gathers take 1 s per 10 elements, reduce-scatters 1 s per 5; prefetch bucket 15
        let gather = |n: f64| n / 10.0;
        let reduce = |n: f64| n / 5.0;
        let hook = |gathers: Option<f64>, compute: f64, reduces: f64| Hook {
            gathers,
            compute,
            reduces,
        };
        let hooks = [
            // a norm: nothing to gather, nothing in flight, so it prefetches the next 10
            // elements (issued at 0, done at 1) and, 10 < 15, the next 30 after
            // `_allgather_param`'s synchronize waits for the first (issued at 1, done at 4);
            // its compute runs 1 -> 2
            hook(None, 1.0, 0.0),
            // in flight: waits for both gathers and the device (t = 4), prefetches the last
            // 10 (4 -> 5), computes 4 -> 9
            hook(Some(10.0), 5.0, 0.0),
            // gathered by the first prefetch: no wait; a gather in flight, no prefetch;
            // computes 9 -> 11
            hook(Some(30.0), 2.0, 0.0),
            // in flight (done at 5): waits for the device (t = 11), computes 11 -> 15, then
            // reduce-scatters its 10 gradient elements 15 -> 17
            hook(Some(10.0), 4.0, 10.0),
        ];
        // the pass ends at 17 with 12 s of compute: 5 s exposed
        assert_eq!(blocking_exposed(&hooks, 15.0, gather, reduce), 5.0);
        // a bucket of 10 prefetches one module at a time: the norm's prefetch gathers 10
        // (0 -> 1) under its compute (0 -> 1); the first module waits (t = 1), prefetches 30
        // (1 -> 4) under its compute (1 -> 6); the second waits (t = 6), prefetches 10
        // (6 -> 7) under its compute (6 -> 8); the third waits (t = 8), computes 8 -> 12 and
        // reduce-scatters 12 -> 14: 2 s exposed
        assert_eq!(blocking_exposed(&hooks, 10.0, gather, reduce), 2.0);
    }
}
