//! SGLang serving capacity (inference engine `sglang`).
//!
//! SGLang sizes its KV pool before any forward pass, from the memory free once the
//! process group exists and before the weights load (`min_per_gpu_memory`,
//! sglang/srt/model_executor/model_runner.py `init_torch_distributed`):
//!
//! `rest = free after loading - free before loading x (1 - mem_fraction_static)`
//! (`profile_max_num_token`), i.e. `mem_fraction_static x free before loading - weights`,
//! and `max_total_num_tokens = rest // cell_size` with `cell_size` the KV bytes of one token
//! over the GPU's layers. Activations, CUDA graphs and the sampler live in the remaining
//! `1 - mem_fraction_static`; they are not profiled, so a prefill chunk larger than that
//! slack runs out of memory at run time instead of shrinking the pool.
//!
//! Under pipeline parallelism the free memory before and after loading is the minimum over
//! the world group, so every rank's room is the budget less the heaviest stage's weights,
//! and the token count is the minimum over the ranks (`init_memory_pool`: each rank divides
//! the room by its own layers' bytes per token, then `all_reduce(MIN)`); see [`WorldPool`].

use crate::config::{Attention, Inference, Mode};
use crate::inference::{InferStage, KV_SOURCE, forward_workspace};
use crate::problem::{GpuSpec, Resolved};
use crate::report::{Component, Phase, PhaseName, ServingEstimate, StageOutcome, nccl_buffers};
use crate::serving::{kv_pool, non_torch_v019, serving_weights};
use crate::term::{Label, Num, Term};
use crate::units::{GIB, MIB};

/// SGLang's defaults that depend on the GPU's memory (server_args.py
/// `_handle_gpu_memory_settings`, CUDA buckets): `(chunked_prefill_size, cuda_graph_max_bs)`
/// for `gpu_mib` MiB of GPU memory and tensor parallel size `tp`.
fn memory_bucket(gpu_mib: u64, tp: u64) -> (u64, u64) {
    let small_tp = tp < 4;
    if gpu_mib < 20 * 1024 {
        (2048, 8)
    } else if gpu_mib < 35 * 1024 {
        (2048, if small_tp { 24 } else { 80 })
    } else if gpu_mib < 60 * 1024 {
        (4096, if small_tp { 32 } else { 160 })
    } else if gpu_mib < 160 * 1024 {
        (8192, if small_tp { 256 } else { 512 })
    } else {
        (16384, 512)
    }
}

/// The prefill chunk: `inference.chunked_prefill_size`, else SGLang's default for the GPU.
fn chunked_prefill_size(inf: &Inference, gpu: &GpuSpec, tp: u64) -> u64 {
    inf.chunked_prefill_size
        .unwrap_or_else(|| memory_bucket(gpu.memory_bytes / MIB, tp).0)
}

/// SGLang's default `mem_fraction_static` (server_args.py `_handle_gpu_memory_settings`,
/// no DP attention, no speculative decoding): `(gpu - reserved) / gpu` rounded to three
/// decimals, with `reserved` in MiB the sum of 512 (attention-backend metadata),
/// 1.5 x max(chunked prefill, 2048) (prefill activations), 2 x `cuda_graph_max_bs` (CUDA
/// graphs) and TP x PP / 8 x 1024; at least 10 GiB above 60 GiB of GPU memory. SGLang
/// reads the capacity from nvidia-smi; the GPU's CUDA total is used here (H100: 81 080 MiB
/// instead of 81 559, which moves the default by 0.001).
pub fn default_mem_fraction_static(gpu: &GpuSpec, inf: &Inference, tp: u64, pp: u64) -> f64 {
    let gpu_mib = gpu.memory_bytes / MIB;
    let (_, graph_bs) = memory_bucket(gpu_mib, tp);
    let chunk = chunked_prefill_size(inf, gpu, tp);
    let mut reserved = 512.0
        + chunk.max(2048) as f64 * 1.5
        + graph_bs as f64 * 2.0
        + (tp * pp) as f64 / 8.0 * 1024.0;
    if gpu_mib > 60 * 1024 {
        reserved = reserved.max(10.0 * 1024.0);
    }
    let g = gpu_mib.max(1) as f64;
    (((g - reserved) / g) * 1000.0).round() / 1000.0
}

/// The memory the process group takes before SGLang measures what is free: the NCCL
/// communicators (with their warm-up all-reduce, `PyNcclCommunicator.__init__`) and the
/// custom all-reduce buffers. Taken as what vLLM 0.19 measured with the same NCCL on H100
/// beyond its one-GPU figure (its non-torch table: 2.10 - 0.25 GiB with tensor
/// parallelism; the one-GPU part is kernels and cuBLAS, loaded after SGLang's measurement),
/// at least NCCL's default buffers per communicator ([`nccl_buffers`]); nothing on one GPU.
fn process_group<N: Num>(r: &Resolved) -> Term<N> {
    let (tp, pp) = (
        r.layout.tensor_parallel_size,
        r.layout.pipeline_parallel_size,
    );
    if tp == 1 && pp == 1 {
        return Term::zero();
    }
    let communicators = r.layout.communicators(Mode::Inference);
    Term::new(
        N::max([
            non_torch_v019::<N>(tp, pp)
                .expr
                .label("vLLM non-torch")
                .minus(non_torch_v019::<N>(1, 1).expr.label("one GPU")),
            nccl_buffers::<N>(communicators).expr.label("NCCL buffers"),
        ]),
        "the process group before loading: vLLM 0.19's measured non-torch memory beyond one GPU (NCCL communicators, custom all-reduce; published cases GT-65 to GT-79), at least NCCL_BUFFSIZE 4 MiB x 2 x 16 channels per communicator",
    )
}

/// Estimates SGLang serving (inference engine `sglang`).
pub(crate) fn estimate_sglang<N: Num>(r: &Resolved) -> crate::report::Assembly<'_, N> {
    let group: Term<N> = process_group(r);
    let shared = (r.layout.pipeline_parallel_size > 1).then(|| world_pool(r, &group));
    // after loading: CUDA kernels and cuBLAS as vLLM 0.19 measured them on one GPU; the
    // process group in place of the NCCL buffers
    crate::inference::estimate_stages(
        r,
        |s| sglang(s, &group, shared.as_ref()),
        Some(non_torch_v019(1, 1)),
        Some(group.clone()),
    )
}

/// The pool every rank allocates under pipeline parallelism. SGLang measures the memory
/// free after loading as the minimum over the world group (model_runner.py
/// `profile_max_num_token`: `get_available_gpu_memory` with `distributed` set when the
/// world group has more than one rank, over its CPU group), so every rank's room is the
/// budget less the heaviest stage's weights; each rank divides it by its own layers' KV
/// bytes per token, and `init_memory_pool` then takes the minimum token count over the
/// world ("different pp rank may have different num of layers": `all_reduce(...,
/// ReduceOp.MIN)`), the count of the stage with the most layers.
struct WorldPool<N: Num> {
    /// The weights of the stage that holds the most (the least free memory after loading).
    weights: Term<N>,
    /// The tokens every rank's pool holds.
    tokens: u64,
}

/// [`WorldPool`] over the candidate stages ([`crate::placement::stages`]: the first, the
/// fullest middle one, the last; the middle ones differ only in their number of layers, so
/// these include the heaviest and the one with the most layers).
fn world_pool<N: Num>(r: &Resolved, group: &Term<N>) -> WorldPool<N> {
    let inf = r.config.inference.clone().unwrap_or_default();
    let stages = crate::placement::stages(r);
    let views: Vec<InferStage> = stages
        .iter()
        .map(|st| crate::inference::infer_stage(r, st, &inf))
        .collect();
    let weights = views
        .iter()
        .map(serving_weights::<N>)
        .fold(
            Term::zero(),
            |a, w| if w.bytes() > a.bytes() { w } else { a },
        );
    let rest = views.first().map_or(0, |s| {
        room(static_budget(s, group), &weights, HEAVIEST)
            .value()
            .to_i64()
    });
    let tokens = views
        .iter()
        .map(|s| kv_pool::<N>(s, rest).1)
        .min()
        .unwrap_or(0);
    WorldPool { weights, tokens }
}

/// The static budget, bytes: [`fraction`] of the memory free before the weights load (the
/// capacity less the CUDA context and the process group's buffers, `group`), the same on
/// every rank.
fn static_budget<N: Num>(s: &InferStage, group: &Term<N>) -> N {
    let (n, f) = (N::n, N::f);
    let gpu = &s.r.gpu;
    let free_before = n(gpu.memory_bytes, "B GPU memory")
        .minus(n(gpu.cuda_context_bytes, "B CUDA context"))
        .minus(group.expr.clone().label("process group"));
    (free_before * f(fraction(s), "mem_fraction_static")).floor()
}

/// The label of the heaviest stage's weights in a pipeline's room.
const HEAVIEST: Label = "weights of the heaviest pipeline stage";

/// The room a rank's KV pool has: the static budget less `weights` (the rank's own, or
/// under pipeline parallelism the heaviest stage's), bytes; negative when they do not fit.
fn room<N: Num>(budget: N, weights: &Term<N>, label: Label) -> N {
    budget
        .label("static budget")
        .minus(weights.expr.clone().label(label))
}

/// `inference.mem_fraction_static`, else SGLang's default for the GPU and layout.
fn fraction(s: &InferStage) -> f64 {
    s.inf.mem_fraction_static.unwrap_or_else(|| {
        default_mem_fraction_static(&s.r.gpu, s.inf, s.tp, s.r.layout.pipeline_parallel_size)
    })
}

/// SGLang on one stage: the static pool (weights and KV cache) and a prefill chunk; under
/// pipeline parallelism the pool of [`WorldPool`] (`shared`).
fn sglang<N: Num>(
    s: &InferStage,
    group: &Term<N>,
    shared: Option<&WorldPool<N>>,
) -> StageOutcome<N> {
    let n = N::n;
    let InferStage {
        inf,
        arch: a,
        tp,
        act,
        fp16,
        ..
    } = *s;
    let gpu = &s.r.gpu;
    let max_model_len = inf.max_model_len.unwrap_or(inf.context_len);
    let fraction = fraction(s);
    let weights: Term<N> = serving_weights(s);
    let budget = static_budget(s, group);
    let kv = match shared {
        Some(w) => room(budget.clone(), &w.weights, HEAVIEST),
        None => room(budget.clone(), &weights, "weights"),
    };
    let kv_value = kv.value().to_i64();
    let (per_token, room) = kv_pool::<N>(s, kv_value);
    let tokens = shared.map_or(room, |w| w.tokens.min(room));
    let per_token_bytes = per_token.to_u64();
    // the pool SGLang allocates: whole tokens (page size 1)
    let pool = n(tokens, "tokens") * per_token;
    let chunk = chunked_prefill_size(inf, gpu, tp);
    let prefill = Term::new(
        forward_workspace(a, chunk, chunk, 1, Attention::Flash, act, fp16, tp),
        "a prefill chunk of chunked_prefill_size tokens (core/src/inference.rs forward_workspace), outside the static pool",
    );
    let fits = tokens >= max_model_len;
    let gib = |b: i64| b as f64 / GIB as f64;
    let (weights_bytes, act_bytes, budget_bytes) =
        (weights.bytes(), prefill.bytes(), budget.to_u64());
    // the message is report text: a numeric estimate builds none
    let message = if !N::REPORT {
        String::new()
    } else if kv_value <= 0 {
        format!(
            "Not enough memory: weights {:.2} GiB{} exceed the static budget {:.2} GiB (mem_fraction_static {fraction}). Increase mem_fraction_static or tensor parallelism.",
            gib(shared.map_or(weights_bytes, |w| w.weights.bytes()) as i64),
            if shared.is_some() {
                " (the heaviest pipeline stage's)"
            } else {
                ""
            },
            gib(budget_bytes as i64)
        )
    } else if !fits {
        format!(
            "KV pool {tokens} tokens ({:.2} GiB) is shorter than one request of {max_model_len} tokens; increase mem_fraction_static or tensor parallelism.",
            gib(kv_value)
        )
    } else {
        format!(
            "KV pool {tokens} tokens{} ({:.2} GiB, mem_fraction_static {fraction}); {:.2} requests of {max_model_len} tokens at once",
            if shared.is_some() {
                " (the fewest any pipeline stage has room for)"
            } else {
                ""
            },
            gib((tokens * per_token_bytes) as i64),
            tokens as f64 / max_model_len as f64
        )
    };
    let group_bytes = group.bytes();
    let serving = ServingEstimate {
        engine: crate::config::InferenceEngine::Sglang,
        gpu_memory_utilization: fraction,
        budget_bytes,
        weights_bytes,
        peak_activation_bytes: act_bytes,
        non_torch_bytes: group_bytes,
        kv_cache_bytes: kv_value,
        kv_bytes_per_token: per_token_bytes,
        kv_cache_tokens: tokens,
        max_model_len,
        max_concurrency: 0.0,
        fits,
        message,
        one_sequence_bytes: 0,
    }
    .with_derived();
    let mut serve = Phase::<N>::new(PhaseName::Serving);
    serve
        .set(Component::Weights, weights)
        .set(Component::Activations, prefill)
        .set(
            Component::KvCache,
            match shared {
                None => Term::new(
                    N::max([pool, n(0, "")]),
                    crate::term::source!(N; "SGLang model_runner.py profile_max_num_token: mem_fraction_static x the memory free before the weights load (capacity - CUDA context - process group) - weights, in whole tokens; {KV_SOURCE}"),
                ),
                Some(_) => Term::new(
                    pool,
                    crate::term::source!(N; "SGLang model_runner.py profile_max_num_token / init_memory_pool: every rank's room is mem_fraction_static x the memory free before the weights load less the least free memory after it over the world group (the heaviest stage's weights), in whole tokens of its own layers; the pool is the fewest tokens any rank has room for (all_reduce MIN over the world); {KV_SOURCE}"),
                ),
            },
        );
    s.outcome(smallvec::smallvec![serve], Some(serving))
}
