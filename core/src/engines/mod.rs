//! Training engines: what each framework shards, gathers and buffers, behind one trait.
//!
//! [`EngineModel`] is everything the rest of the model asks of an engine: its validation
//! against the parallel layout, the parallel dimensions it models, its precision
//! conventions, the model states of one GPU ([`States`], every field a [`Term`] with its
//! formula and source), how its weights are sharded and gathered (LoRA's frozen base), and
//! a few flags. [`crate::config::Engine::model`] is the one `match` over engines; adding an
//! engine is one file here, one [`crate::config::Engine`] variant and one arm there.

mod ddp;
mod fsdp;
mod fsdp1;
mod fsdp2;
mod megatron;
pub(crate) mod zero;

use crate::activations::ModelCode;
use crate::arch::ModelArch;
use crate::config::Engine;
use crate::error::Errors;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Num, Term, Value};

/// Gathered parameters and gradient buffers of an engine that all-gathers unit by unit
/// (FSDP2), at each moment of a step the estimate evaluates. Each term holds everything
/// unsharded at that moment: parameters, all-gather and reduce-scatter buffers, unsharded
/// gradients (the sharded ones are `States::gradients`).
#[derive(Debug, Clone)]
pub(crate) struct GatherMoments<N: Num> {
    /// Forward, when the first decoder layer is all-gathered (before any activation).
    pub forward_start: Term<N>,
    /// The end of forward (the loss).
    pub forward_end: Term<N>,
    /// The start of backward (the loss differentiated).
    pub backward_start: Term<N>,
    /// Before the loss is differentiated, a root resharded after forward is all-gathered
    /// again (FSDP2 with an int `reshard_after_forward`).
    pub regather: Option<Term<N>>,
    /// A decoder layer's backward.
    pub layer_backward: Term<N>,
    /// The end of backward (the root unit's reduce-scatter).
    pub backward_end: Term<N>,
    /// Gradients accumulated unsharded over earlier micro-batches (pipeline parallelism
    /// without gradient sync), alive at every moment once the first backward has run.
    pub accumulated: Term<N>,
}

/// Model-state and buffer memory of one GPU, as an engine keeps it.
#[derive(Debug, Clone)]
pub(crate) struct States<N: Num = Expr> {
    pub weights: Term<N>,
    pub gradients: Term<N>,
    pub master: Term<N>,
    pub optimizer: Term<N>,
    /// Unsharded parameters alive at once (ZeRO-3, FSDP).
    pub gathered: Term<N>,
    /// Unsharded gradients of the unit being reduce-scattered (FSDP), during backward.
    pub gathered_grads: Term<N>,
    /// Per-moment gathered memory (FSDP2), replacing `gathered` and `gathered_grads`.
    pub gather_moments: Option<Box<GatherMoments<N>>>,
    pub comm: Term<N>,
    /// The gradients at the optimizer step when they differ from `gradients` (DeepSpeed
    /// ZeRO-1 keeps whole gradients through backward, its partition for the step).
    pub step_gradients: Option<Term<N>>,
    /// Buffers alive at the end of backward only (DeepSpeed ZeRO-1's gradient partition
    /// built by the epilogue).
    pub end_of_backward: Term<N>,
    /// Buffers alive during backward only (DeepSpeed ZeRO 1-2 gradient buckets).
    pub backward_buffers: Term<N>,
    pub step_temporaries: Term<N>,
    /// Gradient memory exists already in the forward pass of a step (persistent buffers).
    pub grads_persistent: bool,
    /// Across micro-batches the engine accumulates unsharded gradients (counted in its
    /// gather moments) instead of the sharded ones (FSDP2 without gradient sync).
    pub unsharded_accumulation: bool,
    /// What this engine does that users do not expect, with what to change (shown next to
    /// the result).
    pub warnings: Vec<String>,
    /// CPU memory per node.
    pub cpu: Term<N>,
    /// NVMe space per node.
    pub nvme: Term<N>,
}

impl<N: Num> Default for States<N> {
    fn default() -> Self {
        States {
            weights: Term::zero(),
            gradients: Term::zero(),
            master: Term::zero(),
            optimizer: Term::zero(),
            gathered: Term::zero(),
            gathered_grads: Term::zero(),
            gather_moments: None,
            comm: Term::zero(),
            step_gradients: None,
            end_of_backward: Term::zero(),
            backward_buffers: Term::zero(),
            step_temporaries: Term::zero(),
            grads_persistent: false,
            unsharded_accumulation: false,
            warnings: Vec::new(),
            cpu: Term::zero(),
            nvme: Term::zero(),
        }
    }
}

/// Parallel dimensions an engine models (the others are rejected by validation and not
/// shown by the web form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    pub tensor: bool,
    pub pipeline: bool,
    pub context: bool,
    pub expert: bool,
    /// Megatron sequence parallelism.
    pub sequence: bool,
    /// Interleaved pipeline schedule (virtual stages).
    pub virtual_pipeline: bool,
    /// Uneven first/last pipeline stages (the user's split).
    pub uneven_pipeline: bool,
    /// The engine splits layers the stages do not divide itself, the first
    /// `layers % pp` stages one layer more ([`crate::problem::StageLayers::balanced`]).
    pub balanced_pipeline: bool,
    /// HSDP replicas of the shard group (FSDP2 2-D mesh).
    pub replicate: bool,
    /// An expert tensor-parallel size of its own (Megatron-Core MoE parallel folding).
    pub expert_tensor: bool,
    /// Context parallelism is DeepSpeed-Ulysses: an all-to-all that scatters the attention
    /// heads over the context-parallel ranks (so they must divide the heads, see
    /// [`Engine::ulysses_heads_error`]), not Megatron-Core's or torchtitan's ring attention.
    pub ulysses: bool,
    /// Sequence parallelism combines with context parallelism. Megatron-DeepSpeed refuses
    /// both (`megatron/initialize.py`: "sequence_parallel_size > 1 enables DeepSpeed's
    /// sequence parallel, which is not compatible with Megatron-LM's sequence parallel").
    pub sequence_with_context: bool,
    /// Without sequence parallelism, the activations and gradients a pipeline stage sends
    /// the next are split over the tensor-parallel ranks (each sends `1/t` of the tensor
    /// they all hold) and all-gathered over the tensor-parallel group at the receiver:
    /// DeepSpeed's PipelineEngine (`pipe_partitioned`, `grad_partitioned`) and Megatron-LM's
    /// pre-Megatron-Core scatter/gather optimization (Narayanan et al. 2021 Sec. 4.1).
    /// Step time only.
    pub pipeline_partitioned: bool,
}

impl Parallelism {
    /// `true` where the engine runs Megatron sequence parallelism on a layout of `tp`
    /// tensor- and `cp` context-parallel ranks, as the plan search and the solvers set it:
    /// with tensor parallelism, where the engine models it and combines it with `cp`.
    pub fn sequence_parallel(&self, tp: u64, cp: u64) -> bool {
        tp > 1 && self.sequence && (cp == 1 || self.sequence_with_context)
    }
    /// What a training sequence must be a multiple of on `cp` context-parallel ranks: 1
    /// without context parallelism; `cp` under DeepSpeed-Ulysses (one chunk per rank); else
    /// `2 cp`, the load-balanced ring's chunks, two per rank (Megatron-Core
    /// `get_batch_on_this_cp_rank`: `view(.., 2 * cp_size, seq // (2 * cp_size), ..)`;
    /// torchtitan `ParallelDims.seq_len_divisor`: "Context Parallel requires that seq_len be
    /// divisible by 2 * CP degree, when load balancing is enabled (by default)").
    pub fn sequence_multiple(&self, cp: u64) -> u64 {
        match cp {
            0 | 1 => 1,
            _ if self.ulysses => cp,
            _ => 2 * cp,
        }
    }
    /// Data parallel only.
    pub const DATA_ONLY: Parallelism = Parallelism {
        tensor: false,
        pipeline: false,
        context: false,
        expert: false,
        sequence: false,
        virtual_pipeline: false,
        uneven_pipeline: false,
        balanced_pipeline: false,
        replicate: false,
        expert_tensor: false,
        ulysses: false,
        sequence_with_context: false,
        pipeline_partitioned: false,
    };
    /// Every dimension.
    pub const ALL: Parallelism = Parallelism {
        tensor: true,
        pipeline: true,
        context: true,
        expert: true,
        sequence: true,
        virtual_pipeline: true,
        uneven_pipeline: true,
        balanced_pipeline: false,
        replicate: true,
        expert_tensor: true,
        ulysses: false,
        sequence_with_context: true,
        pipeline_partitioned: false,
    };
}

/// The parallel sizes a config asks for, before the layout is complete.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
}

/// What the model asks of a training engine.
pub(crate) trait EngineModel {
    /// The `engine.type` tag.
    fn kind(&self) -> &'static str;
    /// Display name.
    fn label(&self) -> &'static str;
    /// Keys of the engine's options in the `engine` section (besides `type`), as the
    /// options struct's serde names them.
    fn option_keys(&self) -> &'static [&'static str];
    /// Whose precision conventions apply, and the ZeRO stage (DeepSpeed's bf16 default).
    fn precision(&self) -> (Framework, u8);
    /// Whose model code runs (Megatron's or transformers').
    fn model_code(&self) -> ModelCode;
    /// Grouped-query attention's keys and values are repeated to every query head before
    /// the attention kernel, which saves them so (Megatron-DeepSpeed); else the kernel
    /// takes them as they are (Megatron-Core's Transformer Engine, transformers' SDPA and
    /// flash paths model their own, [`crate::activations`]).
    fn repeats_kv(&self) -> bool {
        false
    }
    /// The parallel dimensions modelled.
    fn parallelism(&self) -> Parallelism;
    /// Checks the engine's options against the layout (`layout` is `None` when the GPU
    /// count could not be resolved).
    fn validate(&self, sizes: Sizes, layout: Option<&Layout>, e: &mut Errors);
    /// Model states of one GPU holding `p`, with `b` bytes per element, for the report
    /// (each engine writes them once, generic over [`Num`]; [`EngineNum::states`] picks
    /// this or [`EngineModel::states_value`]).
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Expr>;
    /// The same states on the numeric path.
    fn states_value(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value>;
    /// GPUs one copy of the weights is spread over.
    fn weight_shard(&self, l: &Layout) -> u64;
    /// Parameter elements gathered at once when the weights are sharded (LoRA's frozen
    /// base is gathered like full weights), for the report.
    fn gathered_elements(&self, p: &RankParams) -> Expr;
    /// The same elements on the numeric path.
    fn gathered_elements_value(&self, p: &RankParams) -> Value;
    /// Bytes per element of activations when the engine computes in another dtype than the
    /// precision regime's (FSDP `param_dtype`); `None`: the regime's.
    fn compute_bytes(
        &self,
        _precision: crate::config::Precision,
        _weight_bytes: u64,
    ) -> Option<u64> {
        None
    }
    /// Tensors under this many elements stay whole (ZeRO-3 persistence threshold).
    fn persistence_threshold(&self) -> u64 {
        0
    }
    /// The model runs under `torch.autocast` with fp32 weights, each matmul casting its
    /// weight (DDP); FSDP's MixedPrecision casts the parameters itself instead.
    fn autocast(&self) -> bool;
    /// PEFT LoRA on this engine is modelled.
    fn supports_lora(&self) -> bool;
    /// The optimizer step is `torch.optim`'s (`optimizer_impl` and `optimizer_in_backward`
    /// apply); DeepSpeed and Megatron step with their own fused optimizers.
    fn torch_optimizer(&self) -> bool;
    /// DeepSpeed's ZeRO options, for engines that run DeepSpeed (a `ds_config.json` exists).
    fn zero_options(&self) -> Option<&crate::config::ZeroOptions> {
        None
    }
    /// What the engine sends over the data-parallel group in one optimizer step, for step
    /// time ([`crate::steptime`]); `precision` and `b` give the dtypes.
    fn traffic(&self, l: &Layout, precision: crate::config::Precision, b: StateBytes) -> DpTraffic;
}

/// How gradients are reduced over the data-parallel group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradReduce {
    /// Every rank gets the whole reduced gradient (DDP, ZeRO-0, Megatron without the
    /// distributed optimizer, FSDP `NO_SHARD`).
    AllReduce,
    /// Every rank gets its shard (ZeRO 1-3, FSDP, Megatron's distributed optimizer).
    ReduceScatter,
}

/// Host transfers of an offloading engine, over PCIe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTransfers {
    None,
    /// The gradient shard goes to the host and the updated parameter shard comes back once
    /// per step (ZeRO-Offload `offload_optimizer`).
    Optimizer,
    /// Also the parameter shard comes to the GPU before each all-gather and gradients go
    /// back every micro-batch (ZeRO-Infinity `offload_param`, FSDP CPU offload).
    OptimizerAndParams,
}

/// An engine's data-parallel traffic per optimizer step (see [`EngineModel::traffic`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpTraffic {
    /// Ranks gradients are reduced over and parameters sharded over (one replica's shard
    /// group under HSDP).
    pub group: u64,
    /// HSDP replicas: the reduced gradient shards are all-reduced across them.
    pub replicas: u64,
    pub grad_reduce: GradReduce,
    /// Gradients are reduced after every micro-batch (ZeRO-2 and -3, FSDP) rather than once
    /// at the gradient-accumulation boundary (DDP `no_sync`, ZeRO-1, Megatron).
    pub reduce_every_micro_batch: bool,
    /// Parameter all-gathers per micro-batch: 2 when resharded after forward (ZeRO-3,
    /// FSDP `FULL_SHARD`), 1 when kept (FSDP2 `reshard_after_forward=False`,
    /// `SHARD_GRAD_OP`), 0 when whole.
    pub gathers_per_micro_batch: u64,
    /// Parameters all-gathered once per step: after the step (ZeRO 1-2, Megatron's
    /// distributed optimizer), or before the first forward and kept over the micro-batches
    /// (FSDP2 under a pipeline schedule).
    pub gather_after_step: bool,
    /// The once-per-step gather runs under the next forward (Megatron
    /// `--overlap-param-gather`; FSDP2's per-unit gathers under a pipeline schedule) rather
    /// than inside the optimizer step, which waits for it (DeepSpeed ZeRO-1/2:
    /// `all_gather_dp_groups` in `runtime/zero/stage_1_and_2.py` `step`, whatever
    /// `overlap_comm` says).
    pub step_gather_overlapped: bool,
    /// Collectives run on their own stream under the compute (DDP buckets, FSDP and ZeRO-3
    /// prefetch, DeepSpeed `overlap_comm`, Megatron `--overlap-grad-reduce` /
    /// `--overlap-param-gather`).
    pub overlapped: bool,
    /// Bytes per gradient element on the wire.
    pub grad_bytes: u64,
    /// Bytes per parameter element on the wire (all-gathers).
    pub param_bytes: u64,
    /// Optimizer states and master weights sharded over `group` (the step touches a shard).
    pub states_sharded: bool,
    pub host: HostTransfers,
    /// What of the traffic no compute can hide, at the ends of a micro-batch (see
    /// [`DpEdges`]).
    pub edges: DpEdges,
    /// How many collectives one pass of parameter all-gathers is issued as (each pays the
    /// collective's fixed latency, [`crate::steptime::nccl_latency`]).
    pub gather_ops: Collectives,
    /// How many collectives one gradient reduction is issued as.
    pub reduce_ops: Collectives,
    /// The decoder layers' linear weights are all-gathered in float8, 1 byte per element,
    /// the rest in `param_bytes` (FSDP2 `float8_all_gather`, torchao
    /// `fsdp_pre_all_gather`).
    pub float8_gather: bool,
}

/// How many collectives a pass of data-parallel traffic over a stage's parameters is
/// issued as: NCCL runs each with a fixed latency besides its bytes
/// ([`crate::steptime::nccl_latency`]), so many small collectives cost more than one large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collectives {
    /// One per FSDP unit: each decoder layer and the root (FSDP2 `foreach_all_gather` and
    /// `foreach_reduce`, one collective per `fully_shard` module, torch
    /// `_fully_shard/_fsdp_collectives.py`; FSDP1 one flat parameter per wrapped module).
    Units,
    /// One per sub-module holding a parameter of more elements than the threshold
    /// (DeepSpeed ZeRO-3 `stage3_param_persistence_threshold`: smaller parameters stay
    /// whole and are never gathered): `fetch_sub_module` all-gathers a module's partitioned
    /// parameters as one coalesced collective (`runtime/zero/partitioned_param_coordinator.py`,
    /// `partition_parameters.py` `_all_gather_params`). `reuse_distance`
    /// (`stage3_max_reuse_distance`, elements): under full recomputation a sub-module
    /// released after its recomputed forward stays gathered for its backward only when
    /// fewer elements of fetches lie between the two uses (the recomputed forward's later
    /// sub-modules and their backward); else it is all-gathered again
    /// (`partitioned_param_coordinator.py` `__params_to_release`). FSDP's units, by
    /// contrast, stay gathered from the recomputed forward into their backward.
    ///
    /// `blocking`: DeepSpeed before 0.6 (`ZeroOptions::stage3_blocking_fetch`), with its
    /// `stage3_prefetch_bucket_size`: a sub-module's fetch waits for the device and every
    /// gather in flight, and the prefetch that follows gathers the next sub-modules of the
    /// recorded order until this many elements are on the way (at least one), one
    /// parameter's all-gather after another, so only those overlap the sub-module's compute
    /// (v0.3.15 `stage3.py` `fetch_sub_module`, `_synchronize_communication`,
    /// `prefetch_next_sub_modules`; `partition_parameters.py` `_allgather_param` synchronizes
    /// before each all-gather). `None`: DeepSpeed 0.6 and later, whose fetches queue the
    /// gathers on their own stream without waiting for the device.
    Modules {
        persistence_threshold: u64,
        reuse_distance: u64,
        blocking: Option<u64>,
    },
    /// One per bucket of this many elements (DDP `bucket_cap_mb`, DeepSpeed
    /// `reduce_bucket_size`, Megatron-Core's `bucket_size`).
    Buckets { elements: u64 },
    /// One per optimizer parameter group, whatever their size (DeepSpeed ZeRO-1/2's
    /// all-gather of the updated parameters, `all_gather_into_tensor_dp_groups`).
    ParamGroups(u64),
}

/// The data-parallel traffic at the ends of a micro-batch that no compute can hide: the
/// parameters gathered before its first forward computes anything, and the gradients
/// produced by its last backward computation, reduced after it. Step time counts them
/// exposed however much compute the rest of the traffic hides behind
/// ([`crate::steptime`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpEdges {
    /// FSDP units (one per decoder layer plus the root: embeddings, final norm, LM head).
    /// The root is all-gathered in the root's pre-forward and the first layer right after
    /// it (the embedding lookup between them is a gather, not compute); the first layer's
    /// gradients are reduce-scattered after its backward, the root's after the whole
    /// backward, in the final callback (torch `_fully_shard/_fsdp_state.py`
    /// `_root_pre_forward`, `_root_post_backward_final_callback`; FSDP1
    /// `_runtime_utils.py` `_post_backward_final_callback`).
    Units,
    /// DeepSpeed ZeRO-3: the first modules' parameters (the embedding, then the first
    /// layer's) are fetched before the forward computes; the gradient bucket still open when
    /// backward ends, which holds at least the embedding's gradient (the last one backward
    /// produces), is reduced in `independent_gradient_partition_epilogue`
    /// (`runtime/zero/stage3.py`, `partitioned_param_coordinator.py`).
    FirstModules,
    /// Gradient buckets (DDP's Reducer, DeepSpeed ZeRO-1/2, Megatron-Core's grad buffer):
    /// buckets are filled in reverse parameter order, so the last one holds the embedding,
    /// whose gradient backward produces last; its reduction starts when backward has
    /// finished (torch `nn/parallel/distributed.py` `_compute_bucket_assignment_by_size`,
    /// Megatron-Core `distributed/param_and_grad_buffer.py`). Counted as the embedding
    /// alone: a lower bound of the bucket.
    LastBucket,
}

impl Engine {
    /// The model runs under `torch.autocast` with fp32 weights: the precision keeps half
    /// copies of the linear weights (`bytes.autocast_weight_copy`) and the engine casts
    /// per matmul ([`EngineModel::autocast`]) rather than casting its parameters.
    pub(crate) fn runs_autocast(&self, bytes: &crate::precision::StateBytes) -> bool {
        bytes.autocast_weight_copy > 0 && self.model().autocast()
    }
    /// The engine's memory model (the one `match` over engines).
    pub(crate) fn model(&self) -> &dyn EngineModel {
        match self {
            Engine::Ddp(o) => o,
            Engine::Deepspeed(o) => o,
            Engine::Fsdp(o) => o,
            Engine::Megatron(o) => o,
            Engine::MegatronDeepspeed(o) => o,
        }
    }
    /// The `type` tag (`deepspeed`).
    pub fn kind(&self) -> &'static str {
        self.model().kind()
    }
    /// Display name ("DeepSpeed ZeRO").
    pub fn label(&self) -> &'static str {
        self.model().label()
    }
    /// The optimizer step is `torch.optim`'s (see [`EngineModel::torch_optimizer`]).
    pub fn torch_optimizer(&self) -> bool {
        self.model().torch_optimizer()
    }
    /// Keys of the engine's options (besides `type`).
    pub fn option_keys(&self) -> &'static [&'static str] {
        self.model().option_keys()
    }
    /// DeepSpeed's ZeRO options, for engines that run DeepSpeed.
    pub fn zero_options(&self) -> Option<&crate::config::ZeroOptions> {
        self.model().zero_options()
    }
    /// The engine of `type` `kind` with its default options.
    pub fn of_kind(kind: &str) -> Option<Engine> {
        serde_json::from_value(serde_json::json!({ "type": kind })).ok()
    }
    /// Whether LoRA / QLoRA (PEFT on a Hugging Face model) is modelled under this engine.
    pub fn supports_lora(&self) -> bool {
        self.model().supports_lora()
    }
    /// The parallel dimensions the engine models.
    pub fn parallelism(&self) -> Parallelism {
        self.model().parallelism()
    }
    /// Why DeepSpeed-Ulysses cannot split `a`'s attention over `cp` context-parallel ranks
    /// beside `tp` tensor-parallel ones, if it cannot (`None` where it can, and for engines
    /// with ring attention). Its all-to-all scatters the heads, so `cp` must divide them:
    ///
    /// * Megatron-DeepSpeed ([`EngineModel::repeats_kv`]): the query heads of one
    ///   tensor-parallel rank, the keys and values repeated to them first (`megatron/model/transformer.py`:
    ///   `repeat_kv`, then `DistributedAttention`; `deepspeed/sequence/layer.py`
    ///   `_generate_layout_params`: "Number of heads must be divisible by the sequence
    ///   parallel size");
    /// * transformers under DeepSpeed (ALST, `deepspeed/runtime/sequence_parallel/ulysses_sp.py`
    ///   `UlyssesSPAttentionHF`): the query heads, and the key/value heads divide `cp` or are
    ///   divided by it (fewer are replicated).
    pub fn ulysses_heads_error(&self, a: &ModelArch, tp: u64, cp: u64) -> Option<String> {
        let model = self.model();
        if !model.parallelism().ulysses || cp <= 1 {
            return None;
        }
        let (heads, kv_heads) = (a.num_attention_heads.max(1), a.num_key_value_heads.max(1));
        if model.repeats_kv() {
            let local = heads / tp.max(1);
            (!local.is_multiple_of(cp)).then(|| {
                format!(
                    "DeepSpeed-Ulysses scatters each tensor-parallel rank's {local} attention heads over the context-parallel ranks: must divide them"
                )
            })
        } else if !heads.is_multiple_of(cp) {
            Some(format!(
                "DeepSpeed-Ulysses scatters the {heads} attention heads over the context-parallel ranks: must divide them"
            ))
        } else if !(kv_heads.is_multiple_of(cp) || cp.is_multiple_of(kv_heads)) {
            Some(format!(
                "DeepSpeed-Ulysses needs the {kv_heads} key/value heads to divide the context-parallel size or be divided by it"
            ))
        } else {
            None
        }
    }
    /// `true` when the engine runs `a` on these parallel sizes as far as the sizes alone
    /// decide: Ulysses divides the heads ([`Engine::ulysses_heads_error`]) and the engine's
    /// own checks pass ([`EngineModel::validate`] without a layout: plain DeepSpeed's ZeRO-3
    /// with tensor parallelism, a ZeRO stage above 1 with pipeline parallelism). The plan
    /// search and the solvers skip the sizes the config validation would reject.
    pub(crate) fn runs_sizes(&self, a: &ModelArch, s: Sizes) -> bool {
        if self.ulysses_heads_error(a, s.tp, s.cp).is_some() {
            return false;
        }
        let mut e = Errors::default();
        self.model().validate(s, None, &mut e);
        e.is_empty()
    }
    /// The engine's data-parallel traffic (see [`EngineModel::traffic`]).
    pub fn traffic(
        &self,
        l: &Layout,
        precision: crate::config::Precision,
        b: StateBytes,
    ) -> DpTraffic {
        self.model().traffic(l, precision, b)
    }
}

/// Every `engine.type`, in display order.
pub const ENGINES: &[&str] = &["ddp", "deepspeed", "fsdp", "megatron", "megatron_deepspeed"];

/// The number types the engines' states are computed with ([`Num`]): each picks the
/// [`EngineModel`] method of its own (a trait object has no generic methods).
pub(crate) trait EngineNum: Num {
    /// [`EngineModel::states`] or [`EngineModel::states_value`].
    fn states(e: &dyn EngineModel, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Self>;
    /// [`EngineModel::gathered_elements`] or [`EngineModel::gathered_elements_value`].
    fn gathered_elements(e: &dyn EngineModel, p: &RankParams) -> Self;
}

impl EngineNum for Expr {
    fn states(e: &dyn EngineModel, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        e.states(r, p, b)
    }
    fn gathered_elements(e: &dyn EngineModel, p: &RankParams) -> Expr {
        e.gathered_elements(p)
    }
}

impl EngineNum for Value {
    fn states(e: &dyn EngineModel, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value> {
        e.states_value(r, p, b)
    }
    fn gathered_elements(e: &dyn EngineModel, p: &RankParams) -> Value {
        e.gathered_elements_value(p)
    }
}

/// `ceil(x / shards)`, the share of `x` one of `shards` GPUs holds, labelled.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
pub(crate) fn shard<N: Num>(x: N, shards: u64, label: &'static str) -> N {
    x.div_ceil(N::n(shards, label))
}

/// The source line of the precision regime's bytes per element.
pub(crate) fn regime_source<N: Num>(r: &Resolved) -> std::borrow::Cow<'static, str> {
    crate::term::source!(N;
        "precision table (core/src/precision.rs): {}",
        crate::precision::describe(r.config.training.precision, r.framework)
    )
}

/// Bytes per gradient element: the gradient dtype plus an fp32 accumulation buffer.
pub(crate) fn grad_bytes<N: Num>(b: StateBytes) -> N {
    let (n, bytes) = (N::n, N::bytes);
    if b.grad_accum > 0 {
        (bytes(b.grad) + n(b.grad_accum, "B fp32 accumulation")).label("")
    } else {
        bytes(b.grad)
    }
}

/// Optimizer-state bytes of the dense and of the expert tensors, unsharded.
pub(crate) fn optimizer_states<N: Num>(r: &Resolved, p: &RankParams, b: StateBytes) -> (N, N) {
    let layout = r.config.training.optimizer.info().layout;
    (
        p.opt_dense.expr(layout, b.state),
        p.opt_expert.expr(layout, b.state),
    )
}

/// The source of the optimizer's state sizes.
pub(crate) fn optimizer_source(r: &Resolved) -> &'static str {
    r.config.training.optimizer.info().source
}

/// The PyTorch optimizer step's temporaries over `params` elements (see
/// [`crate::optimizer::step_temporaries`]).
pub(crate) fn torch_step_temporaries<N: Num>(
    r: &Resolved,
    p: &RankParams,
    b: StateBytes,
    params: u64,
) -> N {
    let t = &r.config.training;
    crate::optimizer::step_temporaries(
        t.optimizer.info(),
        t.optimizer_impl,
        b.state,
        b.weight,
        params,
        p.largest_module,
    )
}

/// Source of the PyTorch step temporaries.
pub(crate) const TORCH_STEP_SOURCE: &str = "PyTorch torch/optim/_multi_tensor (foreach: temporaries for all parameters at once), fused (none) or the for-loop step (the largest tensor)";

#[cfg(test)]
mod tests {
    use super::*;

    /// The index of an engine in [`ENGINES`]; a new variant does not compile until listed.
    fn listed(e: &Engine) -> usize {
        let kind = match e {
            Engine::Ddp(_) => "ddp",
            Engine::Deepspeed(_) => "deepspeed",
            Engine::Fsdp(_) => "fsdp",
            Engine::Megatron(_) => "megatron",
            Engine::MegatronDeepspeed(_) => "megatron_deepspeed",
        };
        ENGINES
            .iter()
            .position(|k| *k == kind)
            .expect("listed in ENGINES")
    }

    #[test]
    fn every_engine_is_listed_with_its_options() {
        let mut seen = Vec::new();
        for kind in ENGINES {
            let e = Engine::of_kind(kind).unwrap();
            assert_eq!(e.kind(), *kind);
            seen.push(listed(&e));
            // every option key is one serde accepts, and no other is accepted
            for key in e.option_keys() {
                let v = serde_json::to_value(&e).unwrap();
                let default = v.get(*key).cloned().unwrap_or(serde_json::Value::Null);
                let doc = serde_json::json!({ "type": kind, *key: default });
                assert!(
                    serde_json::from_value::<Engine>(doc).is_ok(),
                    "{kind}.{key}"
                );
            }
            let keys: Vec<String> = serde_json::to_value(&e)
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "type")
                .cloned()
                .collect();
            for k in &keys {
                assert!(
                    e.option_keys().contains(&k.as_str()),
                    "{kind}: {k} not listed"
                );
            }
            let bogus = serde_json::json!({ "type": kind, "no_such_option": 1 });
            assert!(serde_json::from_value::<Engine>(bogus).is_err());
        }
        seen.sort();
        assert_eq!(seen, (0..ENGINES.len()).collect::<Vec<_>>());
    }
}
