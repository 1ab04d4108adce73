//! The estimate (API boundary) and its assembly.
//!
//! [`Estimate`] and the types inside it are what every caller sees (the CLI's `--json`,
//! the wasm API, the web app): their JSON key names are stable. The estimators
//! (`training`, `inference`, `serving`) build [`Phase`]s of [`Term`]s per pipeline stage;
//! [`assemble`] picks the most loaded stage and its peak phase, adds the fixed overheads
//! and reports every term of the peak with its formula and source.

use crate::config::Mode;
use crate::model::{ModelArch, ParamCounts};
use crate::problem::{GpuSpec, Layout, Resolved};
pub use crate::term::ComponentDetail;
use crate::term::{Expr, Num, Term};
use crate::units::MIB;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What a GPU's allocated memory is made of. Every phase reports all of them (zero when
/// absent), by [`Component::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    Weights,
    Gradients,
    MasterWeights,
    OptimizerStates,
    Activations,
    Logits,
    GatheredParameters,
    AutocastWeightCopies,
    CommunicationBuffers,
    OptimizerTemporaries,
    ForwardTemporaries,
    BackwardTemporaries,
    AdapterWeights,
    DequantizationBuffers,
    KvCache,
}

impl Component {
    /// Every component, in display order.
    pub const ALL: [Component; 15] = [
        Component::Weights,
        Component::Gradients,
        Component::MasterWeights,
        Component::OptimizerStates,
        Component::Activations,
        Component::Logits,
        Component::GatheredParameters,
        Component::AutocastWeightCopies,
        Component::CommunicationBuffers,
        Component::OptimizerTemporaries,
        Component::ForwardTemporaries,
        Component::BackwardTemporaries,
        Component::AdapterWeights,
        Component::DequantizationBuffers,
        Component::KvCache,
    ];
    /// The JSON key.
    pub const fn name(self) -> &'static str {
        match self {
            Component::Weights => "weights",
            Component::Gradients => "gradients",
            Component::MasterWeights => "master_weights",
            Component::OptimizerStates => "optimizer_states",
            Component::Activations => "activations",
            Component::Logits => "logits",
            Component::GatheredParameters => "gathered_parameters",
            Component::AutocastWeightCopies => "autocast_weight_copies",
            Component::CommunicationBuffers => "communication_buffers",
            Component::OptimizerTemporaries => "optimizer_temporaries",
            Component::ForwardTemporaries => "forward_temporaries",
            Component::BackwardTemporaries => "backward_temporaries",
            Component::AdapterWeights => "adapter_weights",
            Component::DequantizationBuffers => "dequantization_buffers",
            Component::KvCache => "kv_cache",
        }
    }
    const fn index(self) -> usize {
        self as usize
    }
}

const COMPONENT_NAMES: [&str; 15] = {
    let mut a = [""; 15];
    let mut i = 0;
    while i < 15 {
        a[i] = Component::ALL[i].name();
        i += 1;
    }
    a
};

/// Component names, in display order (the keys of every `components` map).
pub const COMPONENTS: &[&str] = &COMPONENT_NAMES;

/// Fixed memory outside the tensors, reported apart from the peak allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overhead {
    CudaContext,
    CublasWorkspace,
    NcclBuffers,
    AllocatorReserve,
}

impl Overhead {
    pub const ALL: [Overhead; 4] = [
        Overhead::CudaContext,
        Overhead::CublasWorkspace,
        Overhead::NcclBuffers,
        Overhead::AllocatorReserve,
    ];
    /// The JSON key.
    pub const fn name(self) -> &'static str {
        match self {
            Overhead::CudaContext => "cuda_context",
            Overhead::CublasWorkspace => "cublas_workspace",
            Overhead::NcclBuffers => "nccl_buffers",
            Overhead::AllocatorReserve => "allocator_reserve",
        }
    }
}

const OVERHEAD_NAMES: [&str; 4] = [
    Overhead::ALL[0].name(),
    Overhead::ALL[1].name(),
    Overhead::ALL[2].name(),
    Overhead::ALL[3].name(),
];

/// Overhead names, in display order.
pub const OVERHEADS: &[&str] = &OVERHEAD_NAMES;

/// A moment of a training step or of inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    Forward,
    Backward,
    OptimizerStep,
    /// transformers `generate`: the prompt's forward pass.
    Prefill,
    /// transformers `generate`: one token with the whole KV cache.
    Decode,
    /// vLLM's profiling run (before the KV cache is allocated).
    Profile,
    /// vLLM serving: weights, profiled activations and the KV cache.
    Serving,
}

impl PhaseName {
    /// The JSON name (`optimizer_step`).
    pub const fn as_str(self) -> &'static str {
        match self {
            PhaseName::Forward => "forward",
            PhaseName::Backward => "backward",
            PhaseName::OptimizerStep => "optimizer_step",
            PhaseName::Prefill => "prefill",
            PhaseName::Decode => "decode",
            PhaseName::Profile => "profile",
            PhaseName::Serving => "serving",
        }
    }
}

impl std::fmt::Display for PhaseName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for PhaseName {
    fn eq(&self, o: &str) -> bool {
        self.as_str() == o
    }
}

impl PartialEq<&str> for PhaseName {
    fn eq(&self, o: &&str) -> bool {
        self.as_str() == *o
    }
}

impl Estimate {
    /// CPU memory per GPU, bytes: the node's ([`Estimate::cpu_memory_bytes`]) over the GPUs
    /// on the node (the offload terms are per-GPU shares times the GPUs on the node).
    pub fn cpu_memory_per_gpu_bytes(&self) -> u64 {
        self.cpu_memory_bytes
            .div_ceil(self.layout.gpus_on_node().max(1))
    }
    /// The offloaded and paged states fit in the node's CPU memory
    /// (`gpu.node_cpu_memory_bytes`, from `hardware.cpu_memory_gb` or the GPU preset's node).
    pub fn cpu_fits(&self) -> bool {
        self.cpu_memory_bytes <= self.gpu.node_cpu_memory_bytes
    }
}

/// Memory at one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PhaseEstimate {
    pub phase: PhaseName,
    /// Bytes per component (all of [`COMPONENTS`]).
    pub components: IndexMap<String, u64>,
    /// Sum of the components, bytes.
    pub allocated_bytes: u64,
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
    pub peak_phase: PhaseName,
}

/// The result of [`crate::estimate`]. All sizes in bytes, for the most loaded GPU.
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
    /// The pipeline stages evaluated (first, second, the first of the middle stages with
    /// one layer more under a serving runtime's split, last), the most loaded among them.
    pub stages: Vec<StageEstimate>,
    /// Bytes per component at the peak phase (all of [`COMPONENTS`]).
    pub components: IndexMap<String, u64>,
    /// Every phase of the most loaded stage.
    pub phases: Vec<PhaseEstimate>,
    /// The phase with the highest allocation.
    pub peak_phase: PhaseName,
    /// Highest memory allocated by tensors (`torch.cuda.max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Fixed overheads outside the tensors (all of [`OVERHEADS`]).
    pub overheads: IndexMap<String, u64>,
    /// `peak_allocated_bytes` plus all overheads: what the GPU must hold.
    pub total_bytes: u64,
    /// The GPU's capacity.
    pub gpu_memory_bytes: u64,
    /// `total_bytes <= gpu_memory_bytes`, the CPU memory per node within the node's
    /// (`gpu.node_cpu_memory_bytes`), and for vLLM / SGLang the KV cache holds one sequence
    /// of `max_model_len` tokens.
    pub fits: bool,
    /// `total_bytes / gpu_memory_bytes`.
    pub utilization: f64,
    /// `gpu_memory_bytes - total_bytes` (negative when it does not fit).
    pub headroom_bytes: i64,
    /// CPU memory per node for offloaded states (DeepSpeed offload, FSDP CPU offload, paged
    /// optimizer states); 0 without.
    pub cpu_memory_bytes: u64,
    /// NVMe space per node for states offloaded to NVMe (ZeRO-Infinity); 0 without.
    pub nvme_bytes: u64,
    /// Every non-zero term of the peak phase, the overheads, and the CPU and NVMe memory
    /// (`cpu_memory`, `nvme`): bytes, formula with the numbers substituted, source.
    pub details: Vec<ComponentDetail>,
    /// Notes on the input (e.g. sequence longer than the model's context).
    pub warnings: Vec<String>,
    pub mode: Mode,
    /// Trainable parameters (all of them, or the LoRA adapters; 0 for inference).
    pub trainable_params: u64,
    /// Training: the highest allocation of the first iteration, before the optimizer states
    /// exist (PyTorch optimizers create them in their first `step()`, `_init_group`): the
    /// forward and backward phases without the optimizer states, and the optimizer step as
    /// in every iteration. Equal to `peak_allocated_bytes` where the states exist from the
    /// start (DeepSpeed ZeRO's `initialize_optimizer_states` at `deepspeed.initialize`).
    /// `None` for inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_step_peak_bytes: Option<u64>,
    /// vLLM serving capacity (inference with engine `vllm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<ServingEstimate>,
}

/// A sum of bytes that stops at `u64::MAX` (18.4 EB): a term can reach it (eager attention
/// scores at a 2^30-token context are 2^65 bytes; found by the `estimate` fuzz target), and
/// a wrapped sum would read as a small number that fits. Summed in 128 bits and clamped
/// once (no branch per term): fewer than 2^64 terms cannot overflow 128 bits, and the
/// clamped wide sum equals the step-by-step saturating one.
pub fn saturating_sum(bytes: impl IntoIterator<Item = u64>) -> u64 {
    let wide: u128 = bytes.into_iter().map(u128::from).sum();
    u64::try_from(wide).unwrap_or(u64::MAX)
}

/// `capacity - total` in bytes, clamped to the `i64` range.
pub fn headroom(capacity: u64, total: u64) -> i64 {
    (i128::from(capacity) - i128::from(total)).clamp(i128::from(i64::MIN), i128::from(i64::MAX))
        as i64
}

fn vllm_engine() -> crate::config::InferenceEngine {
    crate::config::InferenceEngine::Vllm
}

/// Serving capacity for one GPU: vLLM (vllm/v1/worker/gpu_worker.py
/// `determine_available_memory`, vllm/v1/core/kv_cache_utils.py) or SGLang
/// (model_runner.py `profile_max_num_token`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServingEstimate {
    /// The serving engine (`vllm`, `sglang`; `vllm` in output written before SGLang).
    #[serde(default = "vllm_engine")]
    pub engine: crate::config::InferenceEngine,
    /// vLLM `gpu_memory_utilization`, or SGLang `mem_fraction_static` (given or SGLang's
    /// default).
    pub gpu_memory_utilization: f64,
    /// What the engine's static allocations may use: vLLM, GPU memory x utilization;
    /// SGLang, `mem_fraction_static` x the memory free before the weights load.
    pub budget_bytes: u64,
    pub weights_bytes: u64,
    /// Peak activation of the profiling run (vLLM: forward of max_num_batched_tokens,
    /// sampler; SGLang: a prefill chunk, outside the static budget).
    pub peak_activation_bytes: u64,
    /// Memory allocated outside PyTorch after start-up (vLLM: kernels, NCCL; SGLang: the
    /// process group's buffers before the weights load).
    pub non_torch_bytes: u64,
    /// Budget minus the above (negative: no room for a KV cache).
    pub kv_cache_bytes: i64,
    /// KV-cache bytes per token (all layers of this GPU).
    pub kv_bytes_per_token: u64,
    /// Tokens the KV cache holds. vLLM under pipeline parallelism: the fewest any stage
    /// has room for, which every stage holds (`get_kv_cache_configs`' `min_num_blocks`);
    /// `kv_cache_bytes` stays this stage's room, as vLLM logs it per rank.
    pub kv_cache_tokens: u64,
    pub max_model_len: u64,
    /// Sequences of `max_model_len` tokens that fit at once (vLLM "Maximum concurrency").
    pub max_concurrency: f64,
    /// The KV cache holds at least one sequence of `max_model_len` tokens.
    pub fits: bool,
    /// What vLLM would report.
    pub message: String,
    /// What one sequence of `max_model_len` tokens needs on this GPU: weights, profiled
    /// activations, non-torch memory and its KV cache (the sweep's y value).
    pub one_sequence_bytes: u64,
}

impl ServingEstimate {
    /// Fills the figures derived from the others (both serving engines build through this,
    /// with those two fields at zero): `max_concurrency` = `kv_cache_tokens /
    /// max_model_len`; `one_sequence_bytes` = weights + peak activation + non-torch memory
    /// + `kv_bytes_per_token x max_model_len`.
    pub(crate) fn with_derived(mut self) -> ServingEstimate {
        self.max_concurrency = self.kv_cache_tokens as f64 / self.max_model_len.max(1) as f64;
        self.one_sequence_bytes = self.weights_bytes
            + self.peak_activation_bytes
            + self.non_torch_bytes
            + self.kv_bytes_per_token * self.max_model_len;
        self
    }
}

/// The terms of one phase, one slot per [`Component`]: the bytes always, the terms
/// (formula and source) only for the report's number type ([`Num::REPORT`]), where the
/// report that shows them is built.
#[derive(Debug, Clone)]
pub(crate) struct Phase<N: Num = Expr> {
    pub name: PhaseName,
    bytes: [u64; 15],
    terms: Option<Box<[Option<Term<N>>; 15]>>,
}

impl<N: Num> Phase<N> {
    pub fn new(name: PhaseName) -> Phase<N> {
        Phase {
            name,
            bytes: [0; 15],
            terms: N::REPORT.then(Default::default),
        }
    }
    /// Records `t`'s bytes for component `c`, and returns the slot for its term where
    /// terms are kept and `t` is not zero (the slot cleared; zero terms are left out).
    fn record(&mut self, c: Component, t: &Term<N>) -> Option<&mut Option<Term<N>>> {
        let i = c.index();
        let zero = t.is_zero();
        self.bytes[i] = if zero { 0 } else { t.bytes() };
        let slot = &mut self.terms.as_mut()?[i];
        *slot = None;
        (!zero).then_some(slot)
    }
    /// Sets component `c` to `t` (zero terms are left out).
    pub fn set(&mut self, c: Component, t: Term<N>) -> &mut Phase<N> {
        if let Some(slot) = self.record(c, &t) {
            *slot = Some(t);
        }
        self
    }
    /// Sets component `c` to a copy of `t`, copied only where the terms are kept (outside
    /// report): as `set(c, t.clone())`. On the numeric path only the bytes are stored (a
    /// zero term's bytes are 0, as `record` writes them).
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    #[cfg_attr(target_arch = "wasm32", inline)]
    pub fn put(&mut self, c: Component, t: &Term<N>) -> &mut Phase<N> {
        if !N::REPORT || self.terms.is_none() {
            self.bytes[c.index()] = t.bytes();
            return self;
        }
        if let Some(slot) = self.record(c, t) {
            *slot = Some(t.clone());
        }
        self
    }
    /// Sets component `c` to the sum of `terms` (as `set(c, t0.clone() + t1.clone() + ..)`);
    /// where terms are not kept (the numeric path) only their bytes are added, and nothing is
    /// cloned. The terms are whole bytes, so the sum of their bytes is the sum's bytes
    /// (`core/tests/numeric.rs` checks both paths to the byte).
    pub fn put_sum<const K: usize>(&mut self, c: Component, terms: [&Term<N>; K]) -> &mut Phase<N> {
        if !N::REPORT || self.terms.is_none() {
            self.bytes[c.index()] = saturating_sum(terms.iter().map(|t| t.bytes()));
            return self;
        }
        let mut it = terms.into_iter();
        let Some(first) = it.next() else {
            return self.set(c, Term::zero());
        };
        let sum = it.fold(first.clone(), |a, t| a + t.clone());
        self.set(c, sum)
    }
    /// Bytes of component `c`.
    pub fn get(&self, c: Component) -> u64 {
        self.bytes[c.index()]
    }
    /// Sum of the components ([`saturating_sum`]).
    pub fn allocated(&self) -> u64 {
        saturating_sum(self.bytes.iter().copied())
    }
    fn estimate(&self) -> PhaseEstimate {
        let components: IndexMap<String, u64> = Component::ALL
            .iter()
            .map(|c| (c.name().to_string(), self.get(*c)))
            .collect();
        PhaseEstimate {
            phase: self.name,
            allocated_bytes: saturating_sum(components.values().copied()),
            components,
        }
    }
}

impl Phase {
    /// The non-zero terms with their formulas.
    fn details(&self) -> impl Iterator<Item = ComponentDetail> + '_ {
        Component::ALL.iter().filter_map(|c| {
            let t = self.terms.as_ref()?[c.index()].as_ref()?;
            Some(t.detail(c.name()))
        })
    }
}

/// The index of the peak phase (the first one on ties).
pub(crate) fn peak_phase<N: Num>(phases: &[Phase<N>]) -> usize {
    (0..phases.len())
        .max_by_key(|&i| (phases[i].allocated(), std::cmp::Reverse(i)))
        .unwrap_or(0)
}

/// A stage's phases (three at most: forward, backward, optimizer step; prefill and
/// decode; vLLM's profile and serving), held inline.
pub(crate) type Phases<N> = smallvec::SmallVec<[Phase<N>; 3]>;

/// The evaluated candidate stages ([`crate::placement::stages`]: four at most).
pub(crate) type Outcomes<N> = Vec<StageOutcome<N>>;

/// One pipeline stage evaluated by an estimator.
pub(crate) struct StageOutcome<N: Num> {
    pub stage: u64,
    pub layers: u64,
    pub params_on_gpu: u64,
    pub phases: Phases<N>,
    /// CPU memory per node (offloaded states, paged optimizer states).
    pub cpu: Term<N>,
    /// NVMe space per node.
    pub nvme: Term<N>,
    pub serving: Option<ServingEstimate>,
    /// The engine's warnings for this stage.
    pub warnings: Vec<String>,
}

impl<N: Num> StageOutcome<N> {
    fn peak(&self) -> u64 {
        self.phases
            .get(peak_phase(&self.phases))
            .map_or(0, Phase::allocated)
    }
}

/// How the runtime adds to the fixed overheads.
pub(crate) struct Overheads<N: Num> {
    /// Communicators with more than one rank that a GPU belongs to.
    pub communicators: u64,
    /// vLLM's non-torch memory after start-up, which replaces the cuBLAS workspace term.
    pub non_torch: Option<Term<N>>,
    /// The runtime's own figure for the communicators' memory, which replaces the NCCL
    /// buffers term (vLLM 0.19's non-torch table includes them; SGLang's process group).
    pub nccl: Option<Term<N>>,
    /// The allocator reserve applies (vLLM sizes its cache from a budget instead).
    pub reserve: bool,
}

/// The cuBLAS workspace of one GPU: `CUBLAS_WORKSPACE_CONFIG` default `:4096:8` (8 x 4 MiB)
/// on Hopper and newer, `:4096:2:16:8` (2 x 4 MiB + 8 x 16 KiB) before (PyTorch
/// `CublasHandlePool.cpp`).
pub(crate) fn cublas_workspace<N: Num>(gpu: &GpuSpec) -> Term<N> {
    let (n, bytes) = (N::n, N::bytes);
    let e = if matches!(gpu.arch.as_str(), "hopper" | "blackwell") {
        n(8, "workspaces") * bytes(4 * MIB)
    } else {
        n(2, "workspaces") * bytes(4 * MIB) + n(8, "workspaces") * bytes(16 * 1024)
    };
    Term::new(
        e,
        "PyTorch CublasHandlePool.cpp: CUBLAS_WORKSPACE_CONFIG default :4096:8 (Hopper, Blackwell) or :4096:2:16:8",
    )
}

/// NCCL's buffers: per communicator, NCCL_BUFFSIZE (4 MiB) x 2 (send/recv) x 16 channels.
pub(crate) fn nccl_buffers<N: Num>(communicators: u64) -> Term<N> {
    let (n, bytes) = (N::n, N::bytes);
    Term::new(
        n(communicators, "communicators") * bytes(4 * MIB) * n(2, "directions") * n(16, "channels"),
        "NCCL_BUFFSIZE default 4 MiB, send and receive, 16 channels per communicator",
    )
}

fn overhead_terms<N: Num>(r: &Resolved, peak: u64, o: &Overheads<N>) -> [Term<N>; 4] {
    let (n, bytes, f) = (N::n, N::bytes, N::f);
    let gpu = &r.gpu;
    let ctx = gpu.cuda_context_bytes;
    let context = if ctx.is_multiple_of(MIB) {
        n(ctx / MIB, "MiB") * n(MIB, "B per MiB")
    } else {
        bytes(ctx)
    };
    let context_source = if r.config.overheads.cuda_context_mib.is_some() {
        "overheads.cuda_context_mib (user setting)".into()
    } else if gpu.id == "custom" {
        "the A100 measurement (published case GT-31) for a GPU of custom size".into()
    } else {
        crate::term::source!(N;
            "{} preset (presets/gpus.json): measured CUDA context",
            gpu.name
        )
    };
    let cublas = match &o.non_torch {
        Some(t) => t.clone(),
        None => cublas_workspace(gpu),
    };
    let fraction = r.config.overheads.allocator_reserve_fraction;
    let reserve = if o.reserve {
        Term::new(
            (n(peak, "B peak allocated") * f(fraction, "")).floor(),
            "overheads.allocator_reserve_fraction (user setting): reserved / allocated - 1",
        )
    } else {
        Term::zero()
    };
    [
        Term::new(context, context_source),
        cublas,
        o.nccl
            .clone()
            .unwrap_or_else(|| nccl_buffers(o.communicators)),
        reserve,
    ]
}

/// The numbers of an estimate without its report (no formulas, maps or strings): what
/// the plan search needs per candidate. Every field equals the [`Estimate`] field of the
/// same name, which is built from this ([`crate::estimate_peak`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Peak {
    /// Highest memory allocated by tensors on the most loaded GPU, bytes.
    pub peak_allocated_bytes: u64,
    /// `peak_allocated_bytes` plus the fixed overheads, bytes.
    pub total_bytes: u64,
    /// The GPU's capacity, bytes.
    pub gpu_memory_bytes: u64,
    /// `total_bytes <= gpu_memory_bytes` (and, for serving, the KV cache holds a sequence).
    pub fits: bool,
    /// `gpu_memory_bytes - total_bytes`.
    pub headroom_bytes: i64,
    /// CPU memory per node for offloaded states, bytes.
    pub cpu_memory_bytes: u64,
    /// NVMe space per node, bytes.
    pub nvme_bytes: u64,
    /// Training: the first iteration's peak ([`Estimate::first_step_peak_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_step_peak_bytes: Option<u64>,
}

/// An estimator's evaluated stages before the report is built: [`Assembly::peak`] gives
/// the numbers, [`Assembly::report`] the full estimate with every term's formula.
pub(crate) struct Assembly<'a, N: Num> {
    r: &'a Resolved,
    mode: Mode,
    outcomes: Outcomes<N>,
    overheads: Overheads<N>,
    trainable_params: u64,
    warnings: Vec<String>,
}

/// The estimators' common last step: collects the stages they evaluated.
pub(crate) fn assemble<N: Num>(
    r: &Resolved,
    mode: Mode,
    outcomes: Outcomes<N>,
    overheads: Overheads<N>,
    trainable_params: u64,
    warnings: Vec<String>,
) -> Assembly<'_, N> {
    Assembly {
        r,
        mode,
        outcomes,
        overheads,
        trainable_params,
        warnings,
    }
}

impl<N: Num> Assembly<'_, N> {
    /// The index of the most loaded stage (the highest peak; the first stage on ties).
    fn best_index(&self) -> usize {
        let o = &self.outcomes;
        if o.len() == 1 {
            return 0;
        }
        (0..o.len())
            .max_by_key(|&i| (o[i].peak(), std::cmp::Reverse(o[i].stage)))
            .unwrap_or(0)
    }

    /// The most loaded stage's peak, the overhead terms and the numbers.
    fn numbers(&self, best: &StageOutcome<N>) -> ([Term<N>; 4], Peak) {
        let r = self.r;
        // each phase's allocation, summed once (a stage has three phases at most)
        debug_assert!(best.phases.len() <= 3);
        let mut allocated = [0u64; 3];
        for (a, p) in allocated.iter_mut().zip(&best.phases) {
            *a = p.allocated();
        }
        let phases = best.phases.len().min(3);
        // the peak phase: the first of the largest, as `peak_phase`
        let peak_allocated_bytes = allocated[..phases].iter().copied().max().unwrap_or(0);
        let terms = overhead_terms(r, peak_allocated_bytes, &self.overheads);
        let total_bytes = saturating_sum(
            std::iter::once(peak_allocated_bytes).chain(terms.iter().map(Term::bytes)),
        );
        let gpu_memory_bytes = r.gpu.memory_bytes;
        let serving_fits = best.serving.as_ref().is_none_or(|s| s.fits);
        let first_step_peak_bytes = (self.mode == Mode::Training).then(|| {
            let lazy_states = !matches!(
                r.config.engine,
                crate::config::Engine::Deepspeed(_) | crate::config::Engine::MegatronDeepspeed(_)
            );
            best.phases
                .iter()
                .zip(allocated)
                .map(|(p, all)| {
                    if lazy_states && p.name != PhaseName::OptimizerStep {
                        all - p.get(Component::OptimizerStates).min(all)
                    } else {
                        all
                    }
                })
                .max()
                .unwrap_or(0)
        });
        // offloaded and paged states must fit in the node's CPU memory (`hardware.cpu_memory_gb`)
        let cpu_fits = best.cpu.bytes() <= self.r.gpu.node_cpu_memory_bytes;
        let peak = Peak {
            peak_allocated_bytes,
            total_bytes,
            gpu_memory_bytes,
            fits: total_bytes <= gpu_memory_bytes && serving_fits && cpu_fits,
            headroom_bytes: headroom(gpu_memory_bytes, total_bytes),
            cpu_memory_bytes: best.cpu.bytes(),
            nvme_bytes: best.nvme.bytes(),
            first_step_peak_bytes,
        };
        (terms, peak)
    }

    /// The numbers of the most loaded stage's peak, without the report.
    pub(crate) fn peak(&self) -> Peak {
        match self.outcomes.get(self.best_index()) {
            Some(best) => self.numbers(best).1,
            None => unreachable!("every estimator evaluates at least one stage"),
        }
    }
}

impl Assembly<'_, Expr> {
    /// The most loaded stage's estimate: its peak phase, the overheads, every term of the
    /// peak.
    pub(crate) fn report(self) -> Estimate {
        let best_index = self.best_index();
        let Some(best) = self.outcomes.get(best_index) else {
            unreachable!("every estimator evaluates at least one stage")
        };
        let (terms, numbers) = self.numbers(best);
        let stages: Vec<StageEstimate> = self
            .outcomes
            .iter()
            .map(|o| {
                let p = peak_phase(&o.phases);
                StageEstimate {
                    stage: o.stage,
                    layers: o.layers,
                    params_on_gpu: o.params_on_gpu,
                    peak_allocated_bytes: o.phases.get(p).map_or(0, Phase::allocated),
                    peak_phase: o.phases.get(p).map_or(PhaseName::Forward, |p| p.name),
                }
            })
            .collect();
        let Assembly {
            r,
            mode,
            outcomes,
            trainable_params,
            warnings,
            ..
        } = self;
        let Some(best) = outcomes.into_iter().nth(best_index) else {
            unreachable!("every estimator evaluates at least one stage")
        };
        let peak = peak_phase(&best.phases);
        let mut overhead_map = IndexMap::new();
        for (o, t) in Overhead::ALL.iter().zip(&terms) {
            overhead_map.insert(o.name().to_string(), t.bytes());
        }
        let mut details: Vec<ComponentDetail> = best.phases[peak].details().collect();
        for (o, t) in Overhead::ALL.iter().zip(&terms) {
            if !t.is_zero() {
                details.push(t.detail(o.name()));
            }
        }
        for (name, t) in [("cpu_memory", &best.cpu), ("nvme", &best.nvme)] {
            if !t.is_zero() {
                details.push(t.detail(name));
            }
        }
        let Peak {
            peak_allocated_bytes,
            total_bytes,
            gpu_memory_bytes,
            fits,
            headroom_bytes,
            cpu_memory_bytes,
            nvme_bytes,
            first_step_peak_bytes,
        } = numbers;
        let l = &r.layout;
        Estimate {
            model: r.arch.clone(),
            params: r.params.clone(),
            layout: *l,
            gpu: r.gpu.clone(),
            most_loaded: if l.pipeline_parallel_size > 1 {
                format!(
                    "pipeline stage {} of {}",
                    best.stage, l.pipeline_parallel_size
                )
            } else {
                "every GPU".to_string()
            },
            params_on_gpu: best.params_on_gpu,
            stages,
            components: best.phases[peak].estimate().components,
            peak_phase: best.phases[peak].name,
            phases: best.phases.iter().map(Phase::estimate).collect(),
            peak_allocated_bytes,
            overheads: overhead_map,
            total_bytes,
            gpu_memory_bytes,
            fits,
            utilization: total_bytes as f64 / gpu_memory_bytes.max(1) as f64,
            headroom_bytes,
            cpu_memory_bytes,
            nvme_bytes,
            details,
            warnings,
            mode,
            trainable_params,
            first_step_peak_bytes,
            serving: best.serving,
        }
    }
}
