//! The estimate: memory of the most loaded GPU, by component and by phase.
//!
//! For each candidate pipeline stage (first and last) the model computes three phases of a
//! steady-state training step and keeps the stage and phase with the highest allocation:
//!
//! * **forward**: the larger of the end of the forward pass (model states, every saved
//!   activation of every in-flight micro-batch, the loss's log-softmax) and a layer's own
//!   working set while it runs (`activations::forward_transient`);
//! * **backward**: the largest of its start (all activations plus the loss gradients), the
//!   last layer's backward (its temporaries and the output layer's weight gradient) and its
//!   end (all gradients, the first layer's saved tensors and temporaries; under full
//!   recomputation its recomputed activations);
//! * **optimizer step**: model states, gradients and the optimizer's temporaries. The first
//!   step, where the optimizer allocates its states while the gradients exist, is this
//!   same phase; its forward and backward run without optimizer states, so the first step
//!   never peaks above the steady state (so measured in all 60 training probe records,
//!   `first_step` in `tests/reference/probe_records.jsonl`).
//!
//! Fixed overheads (CUDA context, cuBLAS workspace, NCCL buffers, allocator reserve) are
//! reported apart: `peak_allocated_bytes` excludes them, `total_bytes` includes them.

use crate::activations::{self, ActCtx};
use crate::config::{
    Attention, Config, Engine, LossImpl, Offload, OptimizerImpl, Precision, Recompute,
    ShardingStrategy,
};
use crate::error::FieldError;
use crate::model::{FfnKind, ModelArch, ParamCounts, ParamGroup, Part, Shape, TpSplit};
use crate::optimizer::{self, StateLayout};
use crate::precision::{self, Framework};
use crate::resolve::{self, GpuSpec, Layout, Resolved};
use crate::units::{MIB, fmt_gib};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Component names, in display order. Every estimate reports all of them (zero when absent).
pub const COMPONENTS: &[&str] = &[
    "weights",
    "gradients",
    "master_weights",
    "optimizer_states",
    "activations",
    "logits",
    "gathered_parameters",
    "autocast_weight_copies",
    "communication_buffers",
    "optimizer_temporaries",
    "forward_temporaries",
    "backward_temporaries",
    "adapter_weights",
    "dequantization_buffers",
    "kv_cache",
];

/// Overhead names, in display order.
pub const OVERHEADS: &[&str] = &[
    "cuda_context",
    "cublas_workspace",
    "nccl_buffers",
    "allocator_reserve",
];

/// Memory at one phase of a training step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PhaseEstimate {
    /// `forward`, `backward` or `optimizer_step`.
    pub phase: String,
    /// Bytes per component (all of [`COMPONENTS`]).
    pub components: IndexMap<String, u64>,
    /// Sum of the components, bytes.
    pub allocated_bytes: u64,
}

/// How one component was computed: the formula with the numbers substituted, and its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComponentDetail {
    pub name: String,
    pub bytes: u64,
    pub formula: String,
    pub source: String,
}

/// One evaluated pipeline stage (a GPU of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StageEstimate {
    /// Pipeline stage index (0 = first).
    pub stage: u64,
    /// Decoder layers on the stage.
    pub layers: u64,
    /// Parameters held by a GPU of the stage before data-parallel sharding.
    pub params_on_gpu: u64,
    /// Its highest allocation and the phase where it occurs.
    pub peak_allocated_bytes: u64,
    pub peak_phase: String,
}

/// The result of [`estimate`]. All sizes in bytes, for the most loaded GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Estimate {
    /// The resolved model architecture.
    pub model: ModelArch,
    /// Exact parameter counts of the model.
    pub params: ParamCounts,
    /// The parallel layout after defaults.
    pub layout: Layout,
    /// The GPU the estimate is for.
    pub gpu: GpuSpec,
    /// Which GPU is the most loaded ("pipeline stage 0 of 4", or "every GPU").
    pub most_loaded: String,
    /// Parameters held by the most loaded GPU before data-parallel sharding
    /// (after tensor, pipeline and expert parallelism).
    pub params_on_gpu: u64,
    /// The pipeline stages evaluated (first, second, last), the most loaded among them.
    pub stages: Vec<StageEstimate>,
    /// Bytes per component at the peak phase (all of [`COMPONENTS`]).
    pub components: IndexMap<String, u64>,
    /// Every phase.
    pub phases: Vec<PhaseEstimate>,
    /// The phase with the highest allocation.
    pub peak_phase: String,
    /// Highest memory allocated by tensors (`torch.cuda.max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Fixed overheads outside the tensors (all of [`OVERHEADS`]).
    pub overheads: IndexMap<String, u64>,
    /// `peak_allocated_bytes` plus all overheads: what the GPU must hold.
    pub total_bytes: u64,
    /// The GPU's capacity.
    pub gpu_memory_bytes: u64,
    /// `total_bytes <= gpu_memory_bytes`.
    pub fits: bool,
    /// `total_bytes / gpu_memory_bytes`.
    pub utilization: f64,
    /// `gpu_memory_bytes - total_bytes` (negative when it does not fit).
    pub headroom_bytes: i64,
    /// CPU memory per node for offloaded states (DeepSpeed offload, FSDP CPU offload); 0 without.
    pub cpu_memory_bytes: u64,
    /// NVMe space per node for states offloaded to NVMe (ZeRO-Infinity); 0 without.
    pub nvme_bytes: u64,
    /// Formula and source of each component at the peak, and of each overhead.
    pub details: Vec<ComponentDetail>,
    /// Notes on the input (e.g. sequence longer than the model's context).
    pub warnings: Vec<String>,
    /// `training` or `inference`.
    pub mode: String,
    /// Trainable parameters (all of them, or the LoRA adapters).
    pub trainable_params: u64,
    /// vLLM serving capacity (inference with engine `vllm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<ServingEstimate>,
}

/// vLLM-style serving capacity for one GPU (vllm/v1/worker/gpu_worker.py
/// `determine_available_memory`, vllm/v1/core/kv_cache_utils.py).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServingEstimate {
    pub gpu_memory_utilization: f64,
    /// GPU memory x utilization: what vLLM may use.
    pub budget_bytes: u64,
    pub weights_bytes: u64,
    /// Peak activation of the profiling run (forward of max_num_batched_tokens, sampler).
    pub peak_activation_bytes: u64,
    /// Memory allocated outside PyTorch after start-up (kernels, NCCL).
    pub non_torch_bytes: u64,
    /// Budget minus the above (negative: no room for a KV cache).
    pub kv_cache_bytes: i64,
    /// KV-cache bytes per token (all layers of this GPU).
    pub kv_bytes_per_token: u64,
    /// Tokens the KV cache holds.
    pub kv_cache_tokens: u64,
    pub max_model_len: u64,
    /// Sequences of `max_model_len` tokens that fit at once (vLLM "Maximum concurrency").
    pub max_concurrency: f64,
    /// The KV cache holds at least one sequence of `max_model_len` tokens.
    pub fits: bool,
    /// What vLLM would report.
    pub message: String,
}

/// Estimates memory per GPU for a config.
///
/// Errors: every invalid field, as [`FieldError`]s (see [`resolve::resolve`]).
pub fn estimate(config: &Config) -> Result<Estimate, Vec<FieldError>> {
    let r = resolve::resolve(config)?;
    Ok(match config.effective_mode() {
        crate::config::Mode::Training => estimate_resolved(&r),
        crate::config::Mode::Inference => crate::inference::estimate_inference(&r),
    })
}

/// Parameter tensors held by one GPU of a pipeline stage.
#[derive(Debug, Default, Clone)]
struct RankParams {
    /// Elements not in routed experts.
    dense: u64,
    /// Elements of routed experts.
    expert: u64,
    /// Elements of linear-layer weight matrices (autocast copies, fp8 caches).
    linear: u64,
    /// Elements of the tied embedding matrix when it also serves as the output layer here.
    tied_head: u64,
    /// Linear-weight elements outside the decoder layers (an untied LM head).
    root_linear: u64,
    /// Linear-weight elements of the largest decoder layer.
    layer_linear: u64,
    /// Largest single module (ZeRO-3 gathers module by module).
    largest_module: u64,
    /// Largest decoder layer (an FSDP unit).
    largest_layer: u64,
    /// Embeddings, final norm and LM head (the FSDP root unit).
    root: u64,
    /// Tensors below ZeRO-3's persistence threshold (kept whole).
    small: u64,
    /// Optimizer-state bytes of dense and expert tensors, unsharded.
    opt_dense: u64,
    opt_expert: u64,
}

pub(crate) struct Stage {
    pub index: u64,
    pub dense_layers: u64,
    pub moe_layers: u64,
    pub has_embedding: bool,
    pub has_head: bool,
    /// Micro-batches whose activations the stage holds at once, as a rational
    /// (numerator, denominator) to keep the interleaved penalty exact.
    inflight: (u64, u64),
}

/// Element shapes (rows, cols) of one copy of a group on one tensor-parallel rank.
pub(crate) fn rank_tensors(g: &ParamGroup, tp: u64) -> Vec<(u64, u64)> {
    let split = |n: u64| n.div_ceil(tp.max(1));
    match (g.tp, g.shape) {
        (
            TpSplit::Column | TpSplit::Vocab,
            Shape::Linear {
                in_features,
                out_features,
                bias,
            },
        ) => {
            let mut v = vec![(split(out_features), in_features)];
            if bias {
                v.push((split(out_features), 1));
            }
            v
        }
        (
            TpSplit::Row,
            Shape::Linear {
                in_features,
                out_features,
                bias,
            },
        ) => {
            let mut v = vec![(out_features, split(in_features))];
            if bias {
                v.push((out_features, 1));
            }
            v
        }
        (
            _,
            Shape::Linear {
                in_features,
                out_features,
                bias,
            },
        ) => {
            let mut v = vec![(out_features, in_features)];
            if bias {
                v.push((out_features, 1));
            }
            v
        }
        (_, Shape::Norm { size, bias }) => {
            if bias {
                vec![(size, 1), (size, 1)]
            } else {
                vec![(size, 1)]
            }
        }
        (TpSplit::Vocab, Shape::Embedding { rows, cols }) => vec![(split(rows), cols)],
        (_, Shape::Embedding { rows, cols }) => vec![(rows, cols)],
    }
}

/// The candidate most loaded stages: the first (embedding, most in-flight micro-batches),
/// the second (the fullest middle stage) and the last (final norm, LM head, loss).
pub(crate) fn stages(r: &Resolved) -> Vec<Stage> {
    let l = &r.layout;
    let pp = l.pipeline_parallel_size;
    let ga = r.config.training.gradient_accumulation_steps;
    let mut candidates: Vec<u64> = vec![0, 1.min(pp - 1), pp - 1];
    candidates.dedup();
    candidates
        .into_iter()
        .map(|s| {
            let (start, end) = l.stage_layers.range(s, pp);
            let moe_layers = (start..end)
                .filter(|&i| r.arch.ffn_kind(i) == FfnKind::Moe)
                .count() as u64;
            // 1F1B: stage s holds min(pp - s, micro-batches) micro-batches; the interleaved
            // schedule multiplies stage 0's by 1 + (pp - 1) / (pp * vpp)
            // (Narayanan et al. 2021, Sec. 2.2; Megatron theoretical_memory_usage.py).
            let vpp = l.virtual_pipeline_parallel_size;
            let inflight = if pp == 1 {
                (1, 1)
            } else if vpp > 1 && s == 0 {
                (pp * vpp + pp - 1, vpp)
            } else {
                ((pp - s).min(ga), 1)
            };
            Stage {
                index: s,
                dense_layers: end - start - moe_layers,
                moe_layers,
                has_embedding: s == 0,
                has_head: s == pp - 1,
                inflight,
            }
        })
        .collect()
}

/// A parameter group held by the GPUs of a pipeline stage, with how many times the stage
/// holds it (its layer count) and which decoder-layer kind it belongs to (`None`:
/// embeddings, final norm, LM head).
pub(crate) struct StageGroup {
    pub group: ParamGroup,
    pub times: u64,
    pub layer: Option<FfnKind>,
}

/// Every parameter group of a pipeline stage.
pub(crate) fn stage_groups(r: &Resolved, stage: &Stage) -> Vec<StageGroup> {
    let a = &r.arch;
    let inv = a.inventory();
    let mut out = Vec::new();
    let mut push = |groups: &[ParamGroup], times: u64, layer: Option<FfnKind>| {
        if times > 0 {
            out.extend(groups.iter().map(|g| StageGroup {
                group: g.clone(),
                times,
                layer,
            }));
        }
    };
    push(&inv.dense_layer, stage.dense_layers, Some(FfnKind::Dense));
    push(&inv.moe_layer, stage.moe_layers, Some(FfnKind::Moe));
    let first: Vec<ParamGroup> = inv
        .model
        .iter()
        .filter(|g| g.part == Part::Embeddings)
        .cloned()
        .collect();
    let mut last: Vec<ParamGroup> = inv
        .model
        .iter()
        .filter(|g| g.part != Part::Embeddings)
        .cloned()
        .collect();
    if r.layout.pipeline_parallel_size > 1 && a.tie_word_embeddings {
        // Megatron keeps a copy of the tied word embedding on the last stage for the
        // output layer (its gradients are all-reduced with the first stage's).
        last.extend(first.iter().filter(|g| g.name != "wpe").cloned());
    }
    if stage.has_embedding {
        push(&first, 1, None);
    }
    if stage.has_head {
        push(&last, 1, None);
    }
    out
}

/// Copies of a group one GPU holds (routed experts are divided over expert parallelism).
pub(crate) fn copies_on_gpu(g: &ParamGroup, ep: u64) -> u64 {
    if g.part == Part::Experts {
        g.copies.div_ceil(ep)
    } else {
        g.copies
    }
}

/// Parameters held by one GPU of `stage`.
fn rank_params(r: &Resolved, stage: &Stage, tp: u64, persistence: u64) -> RankParams {
    let ep = r.layout.expert_parallel_size;
    let layout = optimizer_layout(r);
    let state = r.bytes.state;
    let mut p = RankParams::default();
    let mut layer_totals = [0u64; 2];
    let mut layer_linear = [0u64; 2];
    for sg in stage_groups(r, stage) {
        let (g, times) = (&sg.group, sg.times);
        let copies = copies_on_gpu(g, ep);
        let shapes = rank_tensors(g, tp);
        let one: u64 = shapes.iter().map(|(r, c)| r * c).sum();
        let n = one * copies;
        let is_expert = g.part == Part::Experts;
        if is_expert {
            p.expert += n * times;
        } else {
            p.dense += n * times;
        }
        if matches!(g.shape, Shape::Linear { .. }) {
            let lin = shapes[0].0 * shapes[0].1 * copies;
            p.linear += lin * times;
            match sg.layer {
                Some(FfnKind::Dense) => layer_linear[0] += lin,
                Some(FfnKind::Moe) => layer_linear[1] += lin,
                None => p.root_linear += lin * times,
            }
        }
        // transformers 5 stores each MoE block's experts as one module
        let module = if is_expert { n } else { one };
        p.largest_module = p.largest_module.max(module);
        let small: u64 = shapes
            .iter()
            .map(|(r, c)| r * c)
            .filter(|n| *n < persistence)
            .sum();
        p.small += small * copies * times;
        let opt: u64 = shapes
            .iter()
            .map(|(r, c)| optimizer::state_bytes_for_tensor(layout, *r, *c, state))
            .sum();
        if is_expert {
            p.opt_expert += opt * copies * times;
        } else {
            p.opt_dense += opt * copies * times;
        }
        match sg.layer {
            Some(FfnKind::Dense) => layer_totals[0] += n,
            Some(FfnKind::Moe) => layer_totals[1] += n,
            None => p.root += n * times,
        }
    }
    p.largest_layer = layer_totals[0].max(layer_totals[1]);
    p.layer_linear = layer_linear[0].max(layer_linear[1]);
    if stage.has_head && r.arch.tie_word_embeddings {
        // the output layer multiplies by the tied embedding matrix: a linear weight too
        // (autocast casts it for the head's matmul)
        p.tied_head = r.arch.vocab_size.div_ceil(tp) * r.arch.hidden_size;
    }
    p
}

fn optimizer_layout(r: &Resolved) -> StateLayout {
    r.config.training.optimizer.info().layout
}

/// Model-state and buffer bytes of one GPU, by engine, with formulas.
#[derive(Debug, Default, Clone)]
struct States {
    weights: u64,
    gradients: u64,
    master: u64,
    optimizer: u64,
    gathered: u64,
    gathered_grads: u64,
    comm: u64,
    step_temporaries: u64,
    autocast: u64,
    /// Autocast copies alive during backward: all of them, or with full recomputation the
    /// head's and one recomputed layer's (the cache is cleared when forward leaves the
    /// autocast region; checkpointed layers re-cast their weights when recomputed).
    autocast_backward: u64,
    /// Gradient memory exists already in the forward pass of a step (persistent buffers).
    grads_persistent: bool,
    cpu: u64,
    nvme: u64,
    notes: Vec<(String, String, String)>,
}

fn div(n: u64, d: u64) -> u64 {
    n.div_ceil(d.max(1))
}

/// CPU and NVMe memory per node for DeepSpeed offload, bytes.
///
/// * CPU offload: DeepSpeed's documented CPU memory per node for offloaded model states
///   (deepspeed/runtime/zero: `estimate_zero2_model_states_mem_needs`,
///   `estimate_zero3_model_states_mem_needs` with `zero_init=True`,
///   `additional_buffer_factor` 1.5).
/// * NVMe offload (ZeRO-Infinity): the same states (without the 1.5 factor) on NVMe; CPU RAM
///   holds the swap buffers: for optimizer states `buffer_count` (4) buffers of one fp32
///   sub-group (`sub_group_size` elements, capped at the partition), for parameters
///   `buffer_count` (5) x `buffer_size` (1e8 elements) in half precision, per GPU.
fn deepspeed_offload_bytes(
    stage: u8,
    offload_opt: Offload,
    offload_param: Offload,
    total_params: u64,
    partition: u64,
    sub_group: u64,
    l: &Layout,
) -> (u64, u64) {
    let nodes = l.num_gpus.div_ceil(l.gpus_per_node).max(1) as f64;
    let gpus_here = l.num_gpus.min(l.gpus_per_node) as f64;
    let total_gpus = l.num_gpus as f64;
    let p = total_params as f64;
    let opt = offload_opt != Offload::None;
    let param = offload_param != Offload::None && stage == 3;
    let states = match stage {
        3 if param => p * 18.0 / nodes,
        3 if opt => p * 16.0 / nodes,
        1 | 2 if opt => p * (4.0 * total_gpus).max(16.0),
        _ => 0.0,
    };
    let nvme_opt = offload_opt == Offload::Nvme;
    let nvme_param = offload_param == Offload::Nvme && stage == 3;
    if !nvme_opt && !nvme_param {
        return ((states * 1.5) as u64, 0);
    }
    let opt_buffers = if nvme_opt {
        4.0 * 4.0 * partition.min(sub_group) as f64
    } else {
        0.0
    };
    let param_buffers = if nvme_param { 5.0 * 1e8 * 2.0 } else { 0.0 };
    let cpu_states = if nvme_opt {
        0.0
    } else if opt {
        p * 16.0 / nodes * 1.5
    } else {
        0.0
    };
    let cpu = cpu_states + gpus_here * (opt_buffers + param_buffers);
    let nvme = (if nvme_opt { p * 16.0 / nodes } else { 0.0 })
        + if nvme_param { p * 2.0 / nodes } else { 0.0 };
    (cpu as u64, nvme as u64)
}

fn states(r: &Resolved, p: &RankParams) -> States {
    let b = r.bytes;
    let l = &r.layout;
    let cfg = &r.config;
    let n = p.dense + p.expert;
    let info = cfg.training.optimizer.info();
    // ZeRO / the distributed optimizer / FSDP shard over every rank holding the same
    // weights: the data-parallel group times the context-parallel group (Megatron
    // `data_parallel_group_with_cp`, DeepSpeed Ulysses' sequence-data-parallel group,
    // torchtitan's `dp_shard_cp` mesh); routed experts over that group / EP.
    let dp = l.data_parallel_size * l.context_parallel_size;
    let edp = (dp / l.expert_parallel_size).max(1);
    let mut s = States::default();
    let in_bwd = cfg.training.optimizer_in_backward;
    // PyTorch optimizers default to the multi-tensor (foreach) implementation on CUDA,
    // which allocates its temporaries for all parameters at once; fused allocates none;
    // the for-loop implementation one tensor's worth.
    let foreach = |params: u64| {
        let span = match cfg.training.optimizer_impl {
            OptimizerImpl::Foreach => params,
            OptimizerImpl::Fused => 0,
            OptimizerImpl::ForLoop => params.min(p.largest_module),
        };
        // per-parameter-loop optimizers (HF Adafactor): fp32 work on the largest tensor
        let upcast = if info.loop_upcasts_half && b.weight < 4 {
            8
        } else {
            0
        };
        let looped =
            (info.loop_fp32_temporaries as u64 * 4 + upcast) * params.min(p.largest_module);
        info.foreach_temporaries as u64 * b.state * span + looped
    };
    // Apex/DeepSpeed/Megatron fused kernels allocate no temporaries.
    let fused_family = info.fused_kernel;
    let opt_all = p.opt_dense + p.opt_expert;
    match &cfg.engine {
        Engine::Ddp(d) => {
            s.weights = b.weight * n;
            s.gradients = (b.grad + b.grad_accum) * n;
            s.master = b.master * n;
            s.optimizer = opt_all;
            s.autocast = b.autocast_weight_copy * (p.linear + p.tied_head);
            s.autocast_backward = if cfg.training.activation_checkpointing == Recompute::Full {
                b.autocast_weight_copy * (p.root_linear + p.tied_head + p.layer_linear)
            } else {
                s.autocast
            };
            // DDP's Reducer allocates flat bucket tensors covering every gradient at
            // construction (torch/csrc/distributed/c10d/reducer.cpp initialize_buckets);
            // with gradient_as_bucket_view=False they are a second copy of the gradients:
            // pytorch/pytorch#41954 measured ~1 GB less peak on a ~1 GB-parameter model with
            // bucket views. bucket_cap_mb (25) only sets how the copy is split.
            if l.data_parallel_size * l.context_parallel_size > 1 && !d.gradient_as_bucket_view {
                s.comm = b.grad * n;
                s.notes.push((
                    "communication_buffers".into(),
                    format!("DDP gradient buckets: {} B x {} params (bucket_cap_mb {} per bucket; gradient_as_bucket_view=false)", b.grad, n, d.bucket_cap_mb),
                    "PyTorch DDP Reducer::initialize_buckets; pytorch/pytorch#41954 (bucket views saved ~1 GB on a ~1 GB-parameter model)".into(),
                ));
            }
            s.step_temporaries = foreach(n);
            s.grads_persistent = b.grad_accum > 0;
        }
        Engine::Deepspeed(z) => {
            zero_states(
                &mut s,
                r,
                p,
                z.zero_stage,
                z.offload_optimizer,
                z.offload_param,
                z.reduce_bucket_size,
                z.overlap_comm,
                Some(z),
                fused_family,
            );
        }
        Engine::MegatronDeepspeed(z) => {
            zero_states(
                &mut s,
                r,
                p,
                z.zero_stage,
                z.offload_optimizer,
                z.offload_param,
                500_000_000,
                false,
                None,
                fused_family,
            );
        }
        Engine::Fsdp(f) => {
            let group = match f.sharding_strategy {
                ShardingStrategy::FullShard | ShardingStrategy::ShardGradOp => dp,
                ShardingStrategy::NoShard => 1,
                ShardingStrategy::HybridShard => f
                    .hybrid_shard_group_size
                    .unwrap_or(l.gpus_per_node)
                    .min(dp)
                    .max(1),
            };
            // FSDP keeps the FlatParameter shard in the loaded dtype (fp32 under AMP) and
            // all-gathers units in MixedPrecision param_dtype (2 bytes under AMP / bf16).
            let compute = if r.config.training.precision == Precision::Fp32 {
                4
            } else {
                2
            };
            let sharded = |x: u64| div(x, group);
            if f.cpu_offload {
                // CPUOffload(offload_params=True): the shards of parameters, gradients and
                // optimizer states of each GPU of the node live in CPU memory
                let gpus_here = l.num_gpus.min(l.gpus_per_node);
                s.cpu = gpus_here * sharded((b.weight + b.grad + b.master) * n + opt_all);
            } else {
                s.weights = sharded(b.weight * n);
                s.gradients = sharded((b.grad + b.grad_accum) * n);
                s.master = sharded(b.master * n);
                s.optimizer = sharded(opt_all);
                s.step_temporaries = sharded(foreach(n));
            }
            s.gathered = match f.sharding_strategy {
                // root unit (embeddings, final norm, head) is not resharded after forward;
                // the current and the prefetched decoder-layer unit are unsharded
                ShardingStrategy::FullShard | ShardingStrategy::HybridShard => {
                    compute * (p.root + 2 * p.largest_layer)
                }
                // SHARD_GRAD_OP keeps every unit unsharded from forward to backward
                ShardingStrategy::ShardGradOp => compute * n,
                ShardingStrategy::NoShard => 0,
            };
            if group > 1 {
                // unsharded gradients of the unit being reduce-scattered
                s.gathered_grads = compute * p.largest_layer;
            }
            s.notes.push((
                "gathered_parameters".into(),
                format!(
                    "FSDP {:?}: shard group {group}; unsharded in {compute} B: root unit {} + 2 x largest layer {} params",
                    f.sharding_strategy, p.root, p.largest_layer
                ),
                "torch.distributed.fsdp (FSDP1): root unit not resharded after forward; BACKWARD_PRE prefetch of the next unit".into(),
            ));
        }
        Engine::Megatron(m) => {
            let shard = if m.distributed_optimizer {
                dp * l.context_parallel_size
            } else {
                1
            };
            let eshard = if m.distributed_optimizer { edp } else { 1 };
            s.weights = b.weight * n + b.fp8_weight_cache * p.linear;
            s.gradients = b.grad * n;
            s.master = div(b.master * p.dense, shard) + div(b.master * p.expert, eshard);
            s.optimizer = div(p.opt_dense, shard) + div(p.opt_expert, eshard);
            s.grads_persistent = true;
            s.notes.push((
                "optimizer_states".into(),
                format!(
                    "Megatron {} optimizer: master + states / {} (dense) and / {} (experts)",
                    if m.distributed_optimizer { "distributed" } else { "replicated" },
                    shard,
                    eshard
                ),
                "Megatron-LM theoretical_memory_usage.py: 18 B/param, or 6 + 12/DP with the distributed optimizer".into(),
            ));
        }
    }
    if in_bwd {
        // optimizer_in_backward: each parameter's step runs in its grad hook, so only the
        // largest tensor's gradient exists at a time (torchtune optimizer_in_bwd).
        s.gradients = s.gradients.min((b.grad + b.grad_accum) * p.largest_module);
        s.step_temporaries = s
            .step_temporaries
            .min(info.foreach_temporaries as u64 * b.state * p.largest_module);
    }
    s
}

#[allow(clippy::too_many_arguments)]
fn zero_states(
    s: &mut States,
    r: &Resolved,
    p: &RankParams,
    stage: u8,
    offload_opt: Offload,
    offload_param: Offload,
    reduce_bucket: u64,
    overlap_comm: bool,
    z3: Option<&crate::config::ZeroOptions>,
    fused: bool,
) {
    let b = r.bytes;
    let l = &r.layout;
    let n = p.dense + p.expert;
    let dp = l.data_parallel_size * l.context_parallel_size;
    let edp = (dp / l.expert_parallel_size).max(1);
    let info = r.config.training.optimizer.info();
    let opt = |x_dense: u64, x_exp: u64, shard: bool| {
        if shard {
            div(x_dense, dp) + div(x_exp, edp)
        } else {
            x_dense + x_exp
        }
    };
    let off_opt = offload_opt != Offload::None;
    let off_param = offload_param != Offload::None && stage == 3;
    let shard_os = stage >= 1;
    // master weights, optimizer states and the fp32 gradient partition built for the step
    if !off_opt {
        s.master = opt(b.master * p.dense, b.master * p.expert, shard_os);
        s.optimizer = opt(p.opt_dense, p.opt_expert, shard_os);
        // The step upcasts the gradient partition to fp32: whole per parameter group in
        // stage_1_and_2.py (`single_grad_partition`), one sub-group at a time in stage3.py
        // (`_prepare_fp32_grad_for_sub_group`, `sub_group_size` elements).
        let partition = if shard_os { div(n, dp) } else { n };
        let upcast = match (stage, z3) {
            (3, Some(z)) => partition.min(z.sub_group_size),
            (3, None) => partition.min(1_000_000_000),
            _ => partition,
        };
        let fp32_grads = if b.master > 0 { 4 * upcast } else { 0 };
        let temps = if fused {
            0
        } else {
            info.foreach_temporaries as u64 * b.state * upcast
        };
        s.step_temporaries = fp32_grads + temps;
    }
    // gradients in the weight dtype
    let ipg = reduce_bucket * b.grad * if overlap_comm { 2 } else { 1 };
    match stage {
        0 | 1 => {
            s.gradients = (b.grad + b.grad_accum) * n;
            s.grads_persistent = b.grad_accum > 0;
        }
        _ => {
            s.gradients = if off_opt { 0 } else { div(b.grad * n, dp) };
            // independent-partition gradient bucket (reduce_bucket_size elements)
            s.comm = ipg.min(b.grad * n);
            s.grads_persistent = true;
            s.notes.push((
                "communication_buffers".into(),
                format!("ZeRO reduce bucket: {} elements x {} B{}", reduce_bucket, b.grad, if overlap_comm { " x 2 (overlap_comm)" } else { "" }),
                "DeepSpeed stage_1_and_2.py / stage3.py ipg_buffer (reduce_bucket_size, default 5e8)".into(),
            ));
        }
    }
    // weights
    if stage == 3 {
        let z = z3.cloned().unwrap_or_default();
        let persistent = p.small;
        s.weights = if off_param {
            0
        } else {
            div(b.weight * n.saturating_sub(persistent), dp)
        } + b.weight * persistent;
        // ZeRO-3 gathers module by module: the module running plus the prefetch bucket,
        // bounded by stage3_max_live_parameters but never below one whole module.
        let live = (p.largest_module + z.stage3_prefetch_bucket_size)
            .min(z.stage3_max_live_parameters)
            .max(p.largest_module);
        s.gathered = b.weight * live.min(n);
        s.notes.push((
            "gathered_parameters".into(),
            format!(
                "ZeRO-3: {} B x max(largest module {}, min(largest module + prefetch {}, max_live {}))",
                b.weight, p.largest_module, z.stage3_prefetch_bucket_size, z.stage3_max_live_parameters
            ),
            "DeepSpeed ZeRO-3 (stage3.py, partitioned_param_coordinator.py): stage3_prefetch_bucket_size, stage3_max_live_parameters".into(),
        ));
    } else {
        s.weights = b.weight * n;
    }
    let sub_group = z3.map_or(1_000_000_000, |z| z.sub_group_size);
    (s.cpu, s.nvme) = deepspeed_offload_bytes(
        stage,
        offload_opt,
        offload_param,
        r.params.total,
        div(n, dp),
        sub_group,
        l,
    );
}

/// The activation context for a GPU.
fn act_ctx<'a>(r: &'a Resolved) -> ActCtx<'a> {
    let t = &r.config.training;
    let l = &r.layout;
    let b = &r.bytes;
    let fsdp = matches!(r.config.engine, Engine::Fsdp(_));
    let autocast = b.autocast_weight_copy > 0 && !fsdp;
    ActCtx {
        arch: &r.arch,
        b: t.micro_batch_size,
        s: t.seq_len / l.context_parallel_size,
        s_full: t.seq_len,
        tp: l.tensor_parallel_size,
        sp: l.sequence_parallel,
        ep: l.expert_parallel_size,
        framework: r.model_code,
        attention: t.attention,
        recompute: t.activation_checkpointing,
        act: b.activation,
        residual: if autocast { 4 } else { b.activation },
        linear_input: b.linear_input,
        autocast,
        fp16: matches!(t.precision, Precision::AmpFp16 | Precision::Fp16),
        lora: r.config.training.lora.as_ref(),
    }
}

struct ActivationResult {
    total: u64,
    transient: u64,
    /// Extra bytes while a layer runs its forward (see `activations::forward_transient`).
    forward_transient: u64,
    /// What one layer keeps for backward when it is not recomputed (its saved tensors
    /// stay alive while its own backward runs); 0 under full recomputation, where the
    /// backward transient holds the recomputed ones.
    layer_saved: u64,
    formula: String,
}

fn stage_activations(r: &Resolved, st: &Stage, c: &ActCtx) -> ActivationResult {
    let mut per = 0u64;
    let mut transient = 0u64;
    let mut forward_transient = 0u64;
    let mut layer_saved = 0u64;
    let mut parts = Vec::new();
    for (kind, count) in [
        (FfnKind::Dense, st.dense_layers),
        (FfnKind::Moe, st.moe_layers),
    ] {
        if count == 0 {
            continue;
        }
        let one = activations::layer_bytes(c, kind);
        per += one * count;
        transient = transient.max(activations::backward_transient(c, kind));
        forward_transient = forward_transient.max(activations::forward_transient(c, kind));
        if c.recompute != Recompute::Full {
            layer_saved = layer_saved.max(one);
        }
        parts.push(format!(
            "{count} {} layers x {}",
            if kind == FfnKind::Moe { "MoE" } else { "dense" },
            fmt_gib(one)
        ));
    }
    let tokens = c.b * c.s;
    if r.model_code != Framework::Megatron && r.arch.learned_position_embeddings == 0 {
        // rotary cos and sin (b x s x rotary dim each), computed once per forward in the
        // residual dtype and kept by every layer's rotary multiplications
        // (transformers LlamaRotaryEmbedding.forward / apply_rotary_pos_emb)
        let rotary_dim = r
            .arch
            .mla
            .as_ref()
            .map_or(r.arch.head_dim, |m| m.qk_rope_head_dim);
        per += 2 * tokens * rotary_dim * c.residual;
    }
    if st.has_embedding {
        // input ids (int64) and the embedding dropout mask (Megatron theoretical_memory_usage.py)
        per += 8 * tokens;
        if r.arch.hidden_dropout > 0.0 {
            per += tokens * r.arch.hidden_size / if c.sp { c.tp } else { 1 };
        }
    }
    if st.has_head {
        // final norm and the LM head input
        let h = r.arch.hidden_size;
        let head = match r.model_code {
            Framework::Megatron => 2 * tokens * h * c.act / if c.sp { c.tp } else { 1 },
            _ => {
                let norm = match r.arch.norm {
                    // frozen under LoRA: `weight * x` keeps only the weight
                    crate::model::NormKind::RmsNorm if c.lora.is_some() => {
                        tokens * h * 4 + tokens * 4
                    }
                    crate::model::NormKind::RmsNorm => tokens * h * (4 + c.residual) + tokens * 4,
                    crate::model::NormKind::LayerNorm => tokens * h * c.residual + 8 * tokens,
                };
                norm + tokens * h * c.linear_input
            }
        };
        per += head;
        parts.push(format!("final norm + head input {}", fmt_gib(head)));
    }
    let (num, den) = st.inflight;
    let total = (per as u128 * num as u128 / den as u128) as u64;
    let rec = match c.recompute {
        Recompute::None => "no recomputation",
        Recompute::Selective => "selective recomputation",
        Recompute::Full => "full recomputation (layer inputs only)",
    };
    let flight = if num == den {
        String::new()
    } else {
        format!(" x {} in-flight micro-batches", num as f64 / den as f64)
    };
    ActivationResult {
        total,
        transient,
        forward_transient,
        layer_saved,
        formula: format!("b={} s={} ({rec}): {}{flight}", c.b, c.s, parts.join(" + ")),
    }
}

/// Memory of the output head and loss on the last pipeline stage, in bytes per GPU.
struct LossMemory {
    /// Peak inside the loss computation at the end of forward.
    forward: u64,
    /// Peak while the loss is differentiated (first step of backward).
    backward: u64,
    /// What stays alive for the rest of backward (the returned logits a training loop
    /// holds through `loss.backward()`).
    kept: u64,
    formula: String,
}

/// Loss memory on the last stage; see [`LossMemory`].
fn logits_bytes(r: &Resolved, c: &ActCtx) -> LossMemory {
    let t = &r.config.training;
    let tokens = c.b * c.s;
    let v = r.arch.vocab_size.div_ceil(c.tp);
    let elems = tokens * v;
    let h = r.arch.hidden_size;
    let fp32 = r.bytes.activation == 4;
    match (t.loss, r.model_code) {
        (LossImpl::Fused, _) => {
            // Liger fused linear cross-entropy: gradient of the hidden states (b s h) and of
            // the head weight (V h, fp32) computed in forward; one (h tokens x V) fp32 chunk
            let chunk = h.min(tokens) * v * 4 * 2;
            let fwd = tokens * h * c.act + v * h * 4 + chunk;
            LossMemory {
                forward: fwd,
                backward: fwd,
                kept: 0,
                formula: format!(
                    "fused linear cross-entropy: {tokens} x {h} x {} + {v} x {h} x 4 + chunk",
                    c.act
                ),
            }
        }
        (LossImpl::Standard, Framework::Megatron) => {
            // vocab_parallel_cross_entropy: fp32 softmax kept in place (4 B), its bf16
            // gradient for the output layer (2 B)
            LossMemory {
                forward: elems * 4,
                backward: elems * (4 + c.act),
                kept: 0,
                formula: format!(
                    "{tokens} tokens x {v} vocab/TP x 4 B fp32 softmax (+ {} B gradient)",
                    c.act
                ),
            }
        }
        (LossImpl::Standard, _) => {
            // transformers ForCausalLMLoss: logits (kept by the returned output), their fp32
            // upcast (`logits.float()`, the same tensor in fp32 training) feeding log_softmax,
            // whose output is saved: the forward peak is inside the loss, with all three
            // alive; backward adds the nll gradient and the log_softmax gradient (4 B each).
            // The logits stay alive (held by the returned output) for all of backward.
            // Gemma-2's final softcapping keeps tanh(logits / cap) beside the logits.
            let logits = if fp32 { 4 } else { c.act };
            let upcast = if fp32 { 0 } else { 4 };
            let softcap = if r.arch.logit_softcapping() {
                logits
            } else {
                0
            };
            LossMemory {
                forward: elems * (logits + softcap + upcast + 4),
                backward: elems * (logits + softcap + 4 + 4 + 4),
                kept: elems * (logits + softcap),
                formula: format!(
                    "{tokens} tokens x {v} vocab x ({logits} B logits + 4 B log-softmax; backward + 8 B gradients)"
                ),
            }
        }
        (LossImpl::Chunked, _) => {
            // torchtune CEWithChunkedOutputLoss (8 chunks): half logits kept whole, fp32
            // work one chunk at a time
            let logits = if fp32 { 4 } else { c.act };
            LossMemory {
                forward: elems * (logits + 4),
                backward: elems * (logits + 4) + elems.div_ceil(8) * 8,
                kept: elems * logits,
                formula: format!("{tokens} x {v} x ({logits} + 4) B, fp32 gradients per 1/8 chunk"),
            }
        }
    }
}

pub(crate) fn component_map(values: &[(&str, u64)]) -> IndexMap<String, u64> {
    let mut m: IndexMap<String, u64> = COMPONENTS.iter().map(|c| (c.to_string(), 0)).collect();
    for (k, v) in values {
        *m.entry(k.to_string()).or_default() += v;
    }
    m
}

/// The weight shards of an engine: how many GPUs one copy of the weights is spread over.
fn weight_shard(r: &Resolved) -> u64 {
    let dp = r.layout.data_parallel_size * r.layout.context_parallel_size;
    match &r.config.engine {
        Engine::Deepspeed(z) if z.zero_stage == 3 => dp,
        Engine::Fsdp(f) => match f.sharding_strategy {
            ShardingStrategy::FullShard | ShardingStrategy::ShardGradOp => dp,
            ShardingStrategy::HybridShard => f
                .hybrid_shard_group_size
                .unwrap_or(r.layout.gpus_per_node)
                .min(dp)
                .max(1),
            ShardingStrategy::NoShard => 1,
        },
        _ => 1,
    }
}

/// Model states under LoRA: the engine's rules applied to the adapters (trainable, in
/// fp32 by default: PEFT `autocast_adapter_dtype=True`), plus the frozen base weights in
/// their format, sharded as the engine shards weights (no gradients, no optimizer states).
fn lora_states(
    r: &Resolved,
    st: &Stage,
    base: &RankParams,
    lora: &crate::config::Lora,
    persistence: u64,
) -> States {
    use crate::lora::{adapter_params, is_targeted};
    let tp = r.layout.tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let layout = optimizer_layout(r);
    let b = r.bytes;
    let adapter_bytes: u64 = if lora.adapters_fp32 || b.weight == 4 {
        4
    } else {
        2
    };
    let mut pa = RankParams::default();
    for sg in stage_groups(r, st) {
        let g = &sg.group;
        if !is_targeted(g, lora) {
            continue;
        }
        let copies = copies_on_gpu(g, ep) * sg.times;
        let one = adapter_params(g, lora.rank, tp);
        pa.dense += one * copies;
        pa.linear += one * copies;
        pa.largest_module = pa.largest_module.max(one);
        pa.largest_layer = pa.largest_layer.max(one);
        if one < persistence {
            pa.small += one * copies;
        }
        // A (r x in) and B (out x r)
        let (i, o) = match g.shape {
            Shape::Linear {
                in_features,
                out_features,
                ..
            } => (in_features, out_features),
            _ => (0, 0),
        };
        pa.opt_dense += copies
            * (optimizer::state_bytes_for_tensor(layout, lora.rank, i, adapter_bytes)
                + optimizer::state_bytes_for_tensor(layout, o, lora.rank, adapter_bytes));
    }
    let mut rl = r.clone();
    rl.bytes = precision::StateBytes {
        weight: adapter_bytes,
        grad: adapter_bytes,
        master: 0,
        state: adapter_bytes,
        grad_accum: 0,
        autocast_weight_copy: if b.autocast_weight_copy > 0 { 2 } else { 0 },
        fp8_weight_cache: 0,
        ..b
    };
    let mut s = states(&rl, &pa);
    let base_format = lora_base_format(r, lora);
    let frozen = crate::inference::stage_weight_bytes(r, st, base_format, 64, true, true);
    let shard = weight_shard(r);
    s.weights += frozen.div_ceil(shard);
    if shard > 1 {
        // the frozen base is gathered like full weights: per module under ZeRO-3, root
        // unit plus two layers under FSDP (in its stored format)
        let per_elem = frozen as f64 / (base.dense + base.expert).max(1) as f64;
        let live = match &r.config.engine {
            Engine::Fsdp(f) if f.sharding_strategy == ShardingStrategy::ShardGradOp => {
                base.dense + base.expert
            }
            Engine::Fsdp(_) => base.root + 2 * base.largest_layer,
            _ => base.largest_module + 50_000_000,
        };
        s.gathered = (live as f64 * per_elem) as u64;
    }
    s.notes.push((
        "weights".into(),
        format!(
            "frozen base in {:?} ({} B) + {} adapter params x {} B",
            base_format, frozen, pa.dense, adapter_bytes
        )
        .to_lowercase(),
        "PEFT LoRA (Hu et al. 2021): only A and B are trained".into(),
    ));
    s
}

/// The storage format of the frozen base weights under LoRA.
pub(crate) fn lora_base_format(
    r: &Resolved,
    lora: &crate::config::Lora,
) -> crate::config::WeightFormat {
    use crate::config::WeightFormat;
    lora.base_weight_format
        .unwrap_or(if r.config.training.precision == Precision::Fp32 {
            WeightFormat::Fp32
        } else {
            WeightFormat::Bf16
        })
}

struct StageResult {
    stage: u64,
    layers: u64,
    trainable: u64,
    params_on_gpu: u64,
    phases: Vec<PhaseEstimate>,
    peak: usize,
    states: States,
    act: ActivationResult,
    logits_formula: String,
}

fn evaluate_stage(r: &Resolved, st: &Stage) -> StageResult {
    let persistence = match &r.config.engine {
        Engine::Deepspeed(z) if z.zero_stage == 3 => z.stage3_param_persistence_threshold,
        _ => 0,
    };
    let p = rank_params(r, st, r.layout.tensor_parallel_size, persistence);
    let lora = r.config.training.lora.as_ref();
    let mut s = match lora {
        None => states(r, &p),
        Some(lo) => lora_states(r, st, &p, lo, persistence),
    };
    if r.config.training.optimizer.name().starts_with("paged_") && s.optimizer > 0 {
        // bitsandbytes paged optimizers allocate their states with cudaMallocManaged
        // (bitsandbytes/functional.py get_paged): outside PyTorch's allocator, so not in
        // max_memory_allocated / reserved, and evicted to CPU RAM when the GPU is full
        s.notes.push((
            "optimizer_states".into(),
            format!(
                "paged: {} in CUDA unified memory, outside the PyTorch peak (GPU when free, else CPU RAM)",
                fmt_gib(s.optimizer)
            ),
            "bitsandbytes get_paged (cudaMallocManaged)".into(),
        ));
        s.cpu += s.optimizer;
        s.optimizer = 0;
    }
    // QLoRA / quantized bases: bitsandbytes dequantizes each linear weight to 16 bits for its
    // matmul, forward and backward (MatMul4Bit): one layer's worth at a time
    let dequant = match lora {
        Some(lo)
            if !matches!(
                lora_base_format(r, lo),
                crate::config::WeightFormat::Bf16
                    | crate::config::WeightFormat::Fp16
                    | crate::config::WeightFormat::Fp32
            ) =>
        {
            2 * crate::inference::largest_quantized_matrix(r, st)
        }
        _ => 0,
    };
    let c = act_ctx(r);
    let act = stage_activations(r, st, &c);
    let loss = if st.has_head {
        logits_bytes(r, &c)
    } else {
        LossMemory {
            forward: 0,
            backward: 0,
            kept: 0,
            formula: String::new(),
        }
    };
    let ga = r.config.training.gradient_accumulation_steps;
    let grads_fwd = if ga > 1 || s.grads_persistent {
        s.gradients
    } else {
        0
    };
    let common = [
        ("weights", s.weights),
        ("master_weights", s.master),
        ("optimizer_states", s.optimizer),
        ("communication_buffers", s.comm),
    ];
    // forward: the larger of the loss computation at the end and a layer's own working
    // set while it runs (eager attention scores, the MLP under full recomputation)
    let (logits_fwd, fwd_temporaries) = if act.forward_transient > loss.forward {
        (0, act.forward_transient)
    } else {
        (loss.forward, 0)
    };
    let mut fwd: Vec<(&str, u64)> = common.to_vec();
    fwd.extend([
        ("gradients", grads_fwd),
        ("activations", act.total),
        ("logits", logits_fwd),
        ("forward_temporaries", fwd_temporaries),
        ("gathered_parameters", s.gathered),
        ("autocast_weight_copies", s.autocast),
        ("dequantization_buffers", dequant),
    ]);
    // backward: the largest of three moments. (1) The loss is differentiated: every
    // activation is still saved and the loss gradients are at their peak, before any layer
    // runs. (2) The last layer's backward: its temporaries on top of the saved activations,
    // the logits the caller still holds and the output layer's weight gradient. (3) The end:
    // every gradient written, plus the first layer's temporaries; with tied embeddings the
    // output layer's gradient waits in autograd's input buffer until the embedding's own
    // gradient arrives and is added to it in place (torch/csrc/autograd/input_buffer.cpp),
    // so one extra vocab x hidden gradient is alive there.
    let head_grad = if st.has_head && lora.is_none() && r.model_code != Framework::Megatron {
        r.arch.vocab_size.div_ceil(r.layout.tensor_parallel_size)
            * r.arch.hidden_size
            * r.bytes.weight
    } else {
        0
    };
    let tied_extra = if r.arch.tie_word_embeddings && st.has_embedding {
        head_grad
    } else {
        0
    };
    let held = act.total + s.autocast_backward + grads_fwd;
    let grads_last_layer = (grads_fwd + head_grad).min(s.gradients.max(grads_fwd));
    let candidates = [
        (held + loss.backward, loss.backward, 0, grads_fwd, true),
        (
            act.total + s.autocast_backward + grads_last_layer + loss.kept + act.transient,
            loss.kept,
            act.transient,
            grads_last_layer,
            true,
        ),
        (
            s.gradients + tied_extra + loss.kept + act.transient + act.layer_saved,
            loss.kept,
            act.transient + act.layer_saved,
            s.gradients + tied_extra,
            false,
        ),
    ];
    let (_, logits_bwd, temporaries, grads_bwd, saved) = candidates
        .into_iter()
        .max_by_key(|c| c.0)
        .unwrap_or(candidates[0]);
    let mut bwd: Vec<(&str, u64)> = common.to_vec();
    bwd.push(("gradients", grads_bwd));
    bwd.push(("logits", logits_bwd));
    if saved {
        bwd.extend([
            ("activations", act.total),
            ("autocast_weight_copies", s.autocast_backward),
        ]);
    }
    bwd.extend([
        ("gathered_parameters", s.gathered + s.gathered_grads),
        ("backward_temporaries", temporaries),
        ("dequantization_buffers", dequant),
    ]);
    let mut step: Vec<(&str, u64)> = common.to_vec();
    step.extend([
        ("gradients", s.gradients),
        ("optimizer_temporaries", s.step_temporaries),
    ]);
    let phases: Vec<PhaseEstimate> = [
        ("forward", fwd),
        ("backward", bwd),
        ("optimizer_step", step),
    ]
    .into_iter()
    .map(|(name, v)| {
        let components = component_map(&v);
        let allocated_bytes = components.values().sum();
        PhaseEstimate {
            phase: name.into(),
            components,
            allocated_bytes,
        }
    })
    .collect();
    let peak = (0..phases.len())
        .max_by_key(|&i| (phases[i].allocated_bytes, std::cmp::Reverse(i)))
        .unwrap_or(0);
    StageResult {
        stage: st.index,
        layers: st.dense_layers + st.moe_layers,
        params_on_gpu: p.dense + p.expert,
        trainable: match lora {
            Some(lo) => crate::lora::total_adapter_params(&r.arch, lo),
            None => r.params.total,
        },
        phases,
        peak,
        states: s,
        act,
        logits_formula: loss.formula,
    }
}

/// Number of NCCL communicators with more than one rank that this GPU belongs to.
fn process_groups(l: &Layout) -> u64 {
    [
        l.data_parallel_size,
        l.tensor_parallel_size,
        l.pipeline_parallel_size,
        l.context_parallel_size,
        l.expert_parallel_size,
    ]
    .iter()
    .filter(|&&n| n > 1)
    .count() as u64
}

/// Estimates a validated problem (no errors possible).
pub fn estimate_resolved(r: &Resolved) -> Estimate {
    let results: Vec<StageResult> = stages(r).iter().map(|st| evaluate_stage(r, st)).collect();
    let best = results
        .iter()
        .max_by_key(|x| (x.phases[x.peak].allocated_bytes, std::cmp::Reverse(x.stage)))
        .expect("at least one stage");
    let peak_phase = &best.phases[best.peak];
    let peak_allocated_bytes = peak_phase.allocated_bytes;

    // overheads
    let l = &r.layout;
    let gpu = &r.gpu;
    // cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG default ":4096:8" (8 x 4 MiB) on Hopper and
    // newer, ":4096:2:16:8" (2 x 4 MiB + 8 x 16 KiB) before (PyTorch CublasHandlePool.cpp).
    let cublas = if matches!(gpu.arch.as_str(), "hopper" | "blackwell") {
        32 * MIB
    } else {
        8 * MIB + 128 * 1024
    };
    // NCCL: per communicator, NCCL_BUFFSIZE (4 MiB) x 2 (send/recv) x 16 channels.
    let nccl = if l.num_gpus > 1 {
        process_groups(l) * 4 * MIB * 2 * 16
    } else {
        0
    };
    let reserve =
        (peak_allocated_bytes as f64 * r.config.overheads.allocator_reserve_fraction) as u64;
    let mut overheads = IndexMap::new();
    overheads.insert("cuda_context".to_string(), gpu.cuda_context_bytes);
    overheads.insert("cublas_workspace".to_string(), cublas);
    overheads.insert("nccl_buffers".to_string(), nccl);
    overheads.insert("allocator_reserve".to_string(), reserve);
    let total_bytes = peak_allocated_bytes + overheads.values().sum::<u64>();
    let gpu_memory_bytes = gpu.memory_bytes;

    // details of the peak
    let b = r.bytes;
    let fw = r.framework;
    let t = &r.config.training;
    let mut details = Vec::new();
    let comps = &peak_phase.components;
    let regime = precision::describe(t.precision, fw);
    let n = best.params_on_gpu;
    let mut detail = |name: &str, formula: String, source: &str| {
        let bytes = comps.get(name).copied().unwrap_or(0);
        if bytes > 0 {
            details.push(ComponentDetail {
                name: name.into(),
                bytes,
                formula,
                source: source.into(),
            });
        }
    };
    let note = |name: &str| {
        best.states
            .notes
            .iter()
            .find(|n| n.0 == name)
            .map(|n| (n.1.clone(), n.2.clone()))
    };
    detail(
        "weights",
        format!("{n} params on this GPU x {} B ({regime})", b.weight),
        "precision table (core/src/precision.rs)",
    );
    detail(
        "gradients",
        format!(
            "{n} params x {} B{}",
            b.grad,
            if b.grad_accum > 0 {
                format!(" + {} B fp32 accumulation", b.grad_accum)
            } else {
                String::new()
            }
        ),
        "precision table; sharded per ZeRO stage / FSDP strategy",
    );
    detail(
        "master_weights",
        format!("{n} params x {} B fp32 copy", b.master),
        "ZeRO paper Sec. 3.1 (mixed-precision Adam keeps fp32 parameters)",
    );
    let (of, os) = note("optimizer_states").unwrap_or_else(|| {
        (
            format!("{} x {} B per state element", t.optimizer.name(), b.state),
            t.optimizer.info().source.to_string(),
        )
    });
    detail("optimizer_states", of, &os);
    detail(
        "activations",
        best.act.formula.clone(),
        "Korthikanti et al. 2022, Table 2 (Megatron); transformers module internals (HF); core/src/activations.rs",
    );
    detail(
        "logits",
        best.logits_formula.clone(),
        "transformers ForCausalLMLoss / Megatron vocab_parallel_cross_entropy",
    );
    if let Some((f, s)) = note("gathered_parameters") {
        detail("gathered_parameters", f, &s);
    }
    detail(
        "autocast_weight_copies",
        format!(
            "{} B half copy of each linear weight, saved for backward",
            b.autocast_weight_copy
        ),
        "torch.autocast casts fp32 weights per matmul",
    );
    if let Some((f, s)) = note("communication_buffers") {
        detail("communication_buffers", f, &s);
    }
    detail(
        "optimizer_temporaries",
        format!(
            "{} foreach temporaries x {} B (+ fp32 gradient partition under ZeRO)",
            t.optimizer.info().foreach_temporaries,
            b.state
        ),
        "PyTorch _multi_tensor_* optimizers; DeepSpeed fp32 gradient partition",
    );
    detail(
        "forward_temporaries",
        "one layer's own working set while it runs forward (eager attention scores and softmax; \
         the MLP under full recomputation), when larger than the loss computation"
            .to_string(),
        "core/src/activations.rs forward_transient (transformers eager_attention_forward)",
    );
    detail(
        "backward_temporaries",
        format!(
            "one layer's gradient intermediates{}",
            if t.activation_checkpointing == Recompute::Full {
                " and its recomputed activations"
            } else {
                ""
            }
        ),
        "core/src/activations.rs backward_transient",
    );
    for (name, formula, source) in [
        (
            "cuda_context",
            format!("{} MiB on {}", gpu.cuda_context_bytes / MIB, gpu.name),
            "GPU preset (presets/gpus.json)".to_string(),
        ),
        (
            "cublas_workspace",
            format!("{} bytes", cublas),
            "PyTorch CublasHandlePool.cpp CUBLAS_WORKSPACE_CONFIG defaults".to_string(),
        ),
        (
            "nccl_buffers",
            format!(
                "{} communicators x 4 MiB x 2 x 16 channels",
                process_groups(l)
            ),
            "NCCL_BUFFSIZE default 4 MiB".to_string(),
        ),
        (
            "allocator_reserve",
            format!(
                "{} x peak allocated",
                r.config.overheads.allocator_reserve_fraction
            ),
            "overheads.allocator_reserve_fraction (user setting)".to_string(),
        ),
    ] {
        let bytes = overheads[name];
        if bytes > 0 {
            details.push(ComponentDetail {
                name: name.into(),
                bytes,
                formula,
                source,
            });
        }
    }

    let mut warnings = r.warnings.clone();
    if t.attention == Attention::Eager && t.seq_len >= 8192 {
        warnings
            .push("eager attention keeps b x heads x s^2 scores: consider sdpa or flash".into());
    }
    if t.optimizer.name().starts_with("paged_") {
        warnings.push("paged optimizer states live in CUDA unified memory (counted under CPU memory here): they use free GPU memory and spill to CPU RAM under pressure, slowing the step".into());
    }
    let most_loaded = if l.pipeline_parallel_size > 1 {
        format!(
            "pipeline stage {} of {}",
            best.stage, l.pipeline_parallel_size
        )
    } else {
        "every GPU".to_string()
    };
    Estimate {
        model: r.arch.clone(),
        params: r.params.clone(),
        layout: *l,
        gpu: gpu.clone(),
        most_loaded,
        params_on_gpu: best.params_on_gpu,
        stages: results
            .iter()
            .map(|x| StageEstimate {
                stage: x.stage,
                layers: x.layers,
                params_on_gpu: x.params_on_gpu,
                peak_allocated_bytes: x.phases[x.peak].allocated_bytes,
                peak_phase: x.phases[x.peak].phase.clone(),
            })
            .collect(),
        components: peak_phase.components.clone(),
        phases: best.phases.clone(),
        peak_phase: peak_phase.phase.clone(),
        peak_allocated_bytes,
        overheads,
        total_bytes,
        gpu_memory_bytes,
        fits: total_bytes <= gpu_memory_bytes,
        utilization: total_bytes as f64 / gpu_memory_bytes.max(1) as f64,
        headroom_bytes: gpu_memory_bytes as i64 - total_bytes as i64,
        cpu_memory_bytes: best.states.cpu,
        nvme_bytes: best.states.nvme,
        details,
        warnings,
        mode: "training".into(),
        trainable_params: best.trainable,
        serving: None,
    }
}
