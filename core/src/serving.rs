//! vLLM serving capacity: KV-cache memory = total x `gpu_memory_utilization` - weights -
//! peak activation of the profiling run - non-torch memory (vllm/v1/worker/gpu_worker.py
//! `determine_available_memory`; reproduces the published logs: 79.18 x 0.9 - 14.99 -
//! 4.76 - 0.13 = 51.38 GiB for Llama-3.1-8B). The profiling run is a forward of
//! `max_num_batched_tokens` tokens and a sampler run over `max_num_seqs` rows with
//! top-k/top-p ([`vllm_sampler_bytes`]). SGLang is in `sglang.rs`.

use crate::arch::FfnKind;
use crate::config::{Attention, Mode};
use crate::inference::{
    InferStage, KV_SOURCE, forward_parts, forward_workspace, kv_bytes_per_token, storage,
};
use crate::model::ModelArch;
use crate::problem::{GpuSpec, Resolved};
use crate::report::{
    Component, Phase, PhaseName, ServingEstimate, StageOutcome, cublas_workspace, nccl_buffers,
};
use crate::term::{Num, Term};
use crate::units::GIB;
use crate::weights::stage_weights;

/// Bytes per element of vLLM's sampler pass (top-k = vocab - 1 and top-p = 0.9, as
/// `_dummy_sampler_run` sets them), at the larger of two moments of `apply_top_k_top_p`
/// (vllm/v1/sample/ops/topk_topp_sampler.py, native path):
///
/// * the sort: the bf16 logits (2 B), their fp32 copy (4), the sorted values (4) and int64
///   indices (8) being written, ATen's int64 reverse indices (8) and CUB's second buffer of
///   keys and values (4 + 8) (aten/src/ATen/native/cuda/SortStable.cu
///   `segmented_sort_pairs` -> `cub::DeviceSegmentedSort::SortPairs`): 38 B;
/// * the scatter: logits (2 + 4), sorted values and indices (12), the top-k mask (1), the
///   softmax of the sorted values (4, kept by the cumulative sum), the top-p mask (1) and the
///   scattered result (4): 28 B.
const SAMPLER_BYTES_PER_LOGIT: u64 = {
    let sort = 2 + 4 + (4 + 8) + 8 + (4 + 8);
    let scatter = 2 + 4 + (4 + 8) + 1 + 4 + 1 + 4;
    if sort > scatter { sort } else { scatter }
};

/// Bytes of vLLM's sampler pass over `rows` sequences and a `vocab` vocabulary during the
/// profiling run (see [`SAMPLER_BYTES_PER_LOGIT`]).
pub fn vllm_sampler_bytes(rows: u64, vocab: u64) -> u64 {
    rows * vocab * SAMPLER_BYTES_PER_LOGIT
}

/// Bytes per logit of vLLM 0.19's sampler pass in the profiling run: the model's half
/// logits (`compute_logits`), their fp32 copy (Sampler: `logits.to(torch.float32)`),
/// filtered in place by the Triton top-k / top-p kernel (vllm/v1/sample/ops/topk_topp_triton.py),
/// the softmax probabilities and the exponential noise `q` of `random_sample`
/// (`probs.div_(q).argmax()`): 2 + 4 + 4 + 4 with half logits.
fn sampler_bytes_v019(act: u64) -> u64 {
    act + 4 + 4 + 4
}

/// vLLM 0.19's non-torch memory per GPU after start-up, as its logs report it on one H100
/// node ("non-torch memory" in the memory-profiling line; published cases GT-65 to GT-79,
/// llm-d-planner accuracy/results/v0.19.0): 0.25 GiB on one GPU (CUDA kernels, cuBLAS), 2.1
/// GiB with tensor parallelism (NCCL communicators and the custom all-reduce buffers), 0.07
/// GiB per pipeline rank. Measured figures of the runtime, not derived: the published KV
/// checks on those logs are not independent of this term.
pub(crate) fn non_torch_v019<N: Num>(tp: u64, pp: u64) -> Term<N> {
    let n = N::n;
    const GIB_100: u64 = GIB / 100;
    let (hundredths, what) = if tp > 1 {
        (
            210,
            "with tensor parallelism (GT-67, GT-77, GT-79: 2.09-2.21 GiB)",
        )
    } else if pp > 1 {
        (7, "with pipeline parallelism only (GT-69: 0.07 GiB)")
    } else {
        (25, "on one GPU (GT-65, GT-73, GT-75: 0.24-0.27 GiB)")
    };
    Term::new(
        n(hundredths, "hundredths of a GiB") * n(GIB_100, "B"),
        crate::term::source!(N; "vLLM 0.19 non-torch memory measured {what}"),
    )
}

/// vLLM 0.19's fused-MoE workspace for a batch of `tokens` tokens, per GPU: the Triton
/// experts' `workspace_shapes` (fused_moe `TritonExperts`: workspace13 = tokens x top-k x
/// max(I, h), sharing one buffer with the (tokens, h) output, and workspace2 = tokens x
/// top-k x max(2I, h), I the expert intermediate size over TP), taken from the persistent
/// `WorkspaceManager` (vllm/v1/worker/workspace.py `get_simultaneous`, grown to the largest
/// request and never freed). The 256-byte alignment of each view is left out (< 512 B).
fn fused_moe_workspace<N: Num>(
    a: &ModelArch,
    m: &crate::arch::Moe,
    tokens: u64,
    act: u64,
    tp: u64,
) -> N {
    let (n, bytes) = (N::n, N::bytes);
    let h = a.hidden_size;
    let i = m.moe_intermediate_size.div_ceil(tp);
    let rows = tokens * m.num_experts_per_tok;
    let ws13 = (rows * i.max(h)).max(tokens * h);
    let ws2 = rows * (2 * i).max(h);
    (n(ws13, "workspace13 elements") + n(ws2, "workspace2 elements")) * bytes(act)
}

/// vLLM's cached rotary table: `max_position_embeddings x rotary_dim` in the model dtype,
/// one per model (vllm/model_executor/layers/rotary_embedding `cos_sin_cache`).
pub(crate) fn rotary_cache<N: Num>(a: &ModelArch, act: u64) -> N {
    let (n, bytes) = (N::n, N::bytes);
    if a.learned_position_embeddings > 0 {
        return N::zero();
    }
    let rotary_dim = a.mla.as_ref().map_or(a.head_dim, |m| m.qk_rope_head_dim);
    n(a.max_position_embeddings, "positions") * n(rotary_dim, "rotary dims") * bytes(act)
}

/// Memory allocated outside PyTorch by a vLLM worker after start-up (kernels loaded on first
/// use, cuBLAS/NCCL state): 0.13 GiB measured for Llama-3.1-8B on one H100
/// (llm-d empirical vLLM results, published_cases GT-45), plus this model's NCCL buffers
/// when the model is split over GPUs.
const VLLM_NON_TORCH_TP1: u64 = 139_586_437; // 0.13 GiB

/// The non-torch memory at start-up that replaces the cuBLAS workspace among the overheads.
fn non_torch_overhead<N: Num>(gpu: &GpuSpec) -> Term<N> {
    let n = N::n;
    let cublas: Term<N> = cublas_workspace(gpu);
    Term::new(
        N::max([
            n(VLLM_NON_TORCH_TP1, "B non-torch measured on one GPU"),
            cublas.expr.label(""),
        ]),
        "vLLM non-torch memory after start-up: 0.13 GiB measured for Llama-3.1-8B on one H100 (llm-d empirical vLLM results, published case GT-45), at least the cuBLAS workspace",
    )
}

/// The non-torch memory vLLM reports after start-up, by version: 0.19's measured table, or
/// the earlier measurement (at least the cuBLAS workspace). Reported among the overheads;
/// the budget also subtracts the NCCL buffers before 0.19 (0.19's table includes them).
fn non_torch<N: Num>(r: &Resolved, version: crate::config::VllmVersion) -> Term<N> {
    match version {
        crate::config::VllmVersion::V0_19 => non_torch_v019(
            r.layout.tensor_parallel_size,
            r.layout.pipeline_parallel_size,
        ),
        crate::config::VllmVersion::Legacy => non_torch_overhead(&r.gpu),
    }
}

/// Estimates vLLM serving (inference engine `vllm`).
pub(crate) fn estimate_vllm<N: Num>(r: &Resolved) -> crate::report::Assembly<'_, N> {
    let version = r
        .config
        .inference
        .as_ref()
        .map_or(Default::default(), |i| i.vllm_version);
    // 0.19's measured non-torch memory includes the communicators' buffers
    let nccl = (version == crate::config::VllmVersion::V0_19).then(|| {
        Term::new(
            N::zero(),
            "included in vLLM 0.19's measured non-torch memory",
        )
    });
    // every candidate stage's profiling run and room, once; under pipeline parallelism
    // vLLM gives every rank the fewest blocks any rank has room for
    // (vllm/v1/core/kv_cache_utils.py `get_kv_cache_configs`: `min_num_blocks`, each rank's
    // cache tensors shrunk to it), so that one block table serves every stage. The
    // candidate stages ([`crate::placement::stages`]: the first, the fullest middle one,
    // the last) include the one with the least room: the middle ones differ only in their
    // number of layers.
    let inf = r.config.inference.clone().unwrap_or_default();
    let mut profiles: Vec<(u64, Profile<N>)> = crate::placement::stages(r)
        .iter()
        .map(|st| {
            (
                st.index,
                profile(&crate::inference::infer_stage(r, st, &inf)),
            )
        })
        .collect();
    let shared = (r.layout.pipeline_parallel_size > 1)
        .then(|| profiles.iter().map(|(_, p)| p.room).min())
        .flatten();
    crate::inference::estimate_stages(
        r,
        |s| {
            let p = match profiles.iter().position(|(i, _)| *i == s.st.index) {
                Some(i) => profiles.swap_remove(i).1,
                None => profile(s),
            };
            vllm(s, p, shared)
        },
        Some(non_torch(r, version)),
        nccl,
    )
}

/// The weights a serving runtime holds on one stage: the stored weights and the rotary
/// `cos_sin_cache` (vLLM and SGLang cache it per model).
pub(crate) fn serving_weights<N: Num>(s: &InferStage) -> Term<N> {
    let stored: Term<N> = stage_weights(s.r, s.st, storage(s.inf));
    Term::new(
        stored.expr + rotary_cache(s.arch, s.act),
        crate::term::source!(N;
            "{}; the rotary cos_sin_cache (max_position_embeddings x rotary dim)",
            stored.source
        ),
    )
}

/// KV bytes of one token over the stage's layers, and the whole tokens `kv_bytes` holds
/// (0 when there is no room).
pub(crate) fn kv_pool<N: Num>(s: &InferStage, kv_bytes: i64) -> (N, u64) {
    let (start, end) = s.layers;
    let per_token = N::n(end - start, "layers")
        * kv_bytes_per_token::<N>(s.arch, s.inf.kv_cache_dtype, s.act, s.tp, s.inf.engine)
            .label("B per token per layer");
    let tokens = if kv_bytes > 0 {
        kv_bytes as u64 / per_token.to_u64().max(1)
    } else {
        0
    };
    (per_token, tokens)
}

/// vLLM's profiling run on one stage and what it leaves of the budget.
struct Profile<N: Num> {
    weights: Term<N>,
    /// Peak activation of the profiling run.
    peak_act: Term<N>,
    non_torch: N,
    /// GPU memory x `gpu_memory_utilization`.
    budget: N,
    /// The budget minus weights, peak activation and non-torch memory (may be negative).
    kv: N,
    /// KV bytes of one token over the stage's layers.
    per_token: N,
    /// The whole tokens `kv` holds: the stage's room.
    room: u64,
}

/// vLLM on one stage: the profiling run and the budget it leaves for the KV cache.
fn profile<N: Num>(s: &InferStage) -> Profile<N> {
    let (n, bytes, f) = (N::n, N::bytes, N::f);
    let InferStage {
        r,
        st,
        inf,
        arch: a,
        tp,
        layers: (start, end),
        act,
        fp16,
    } = *s;
    let l = &r.layout;
    let gpu = &r.gpu;
    let weights: Term<N> = serving_weights(s);
    let t = inf.max_num_batched_tokens;
    let rows = inf.max_num_seqs.min(t).max(1);
    let v019 = inf.vllm_version == crate::config::VllmVersion::V0_19;
    // 0.19's fused MoE draws its buffers from the persistent workspace: alive from the
    // first MoE layer of the profiling forward through the sampler run
    let kind = |k| (start..end).any(|i| a.ffn_kind(i) == k);
    let moe_ws = match &a.moe {
        Some(m) if v019 && kind(FfnKind::Moe) => Some(fused_moe_workspace::<N>(a, m, t, act, tp)),
        _ => None,
    };
    let fwd = match &moe_ws {
        Some(ws) => {
            let p: crate::inference::ForwardParts<N> =
                forward_parts(a, t, t / rows, rows, Attention::Flash, act, fp16, tp);
            // beside the attention, only dense MLPs run outside the workspace: a shared
            // expert's and the dense layers' (gate/up output, activation, product: 3 x
            // tokens x I)
            let dense_mlp = |inter: u64, what: &'static str| {
                n(t, "tokens") * n(inter.div_ceil(tp), what) * bytes(act) * n(3, "tensors")
            };
            let shared = a
                .moe
                .as_ref()
                .map_or(0, |m| m.shared_expert_intermediate_size);
            let dense =
                kind(FfnKind::Dense).then(|| dense_mlp(a.intermediate_size, "intermediate"));
            let parts = [p.attention, dense_mlp(shared, "shared intermediate")];
            p.hidden + crate::activations::max_bytes(parts.into_iter().chain(dense)) + ws.clone()
        }
        None => forward_workspace(a, t, t / rows, rows, Attention::Flash, act, fp16, tp),
    };
    let sampler = if st.has_head && v019 {
        // the whole batch's hidden states (still held by profile_run), the sampled rows'
        // hidden states and their random stand-in (`torch.rand_like`), and the sampler
        n(t, "tokens") * n(a.hidden_size, "hidden") * bytes(act)
            + n(2, "row hidden states") * n(rows, "rows") * n(a.hidden_size, "hidden") * bytes(act)
            + n(rows, "rows")
                * n(a.vocab_size, "vocab")
                * n(sampler_bytes_v019(act), "B per logit sampled")
    } else if st.has_head {
        n(t, "tokens") * n(a.hidden_size, "hidden") * bytes(act)
            + n(rows, "rows")
                * n(a.vocab_size, "vocab")
                * n(SAMPLER_BYTES_PER_LOGIT, "B per logit sampled")
    } else {
        N::zero()
    };
    let sampler = match moe_ws {
        Some(ws) if st.has_head => sampler + ws.label("fused-MoE workspace"),
        _ => sampler,
    };
    // a rank after the first receives its input in `intermediate_tensors`, allocated for
    // max_num_batched_tokens by the profiling run's first forward and kept
    // (gpu_model_runner.py _dummy_run: make_empty_intermediate_tensors(batch_size=
    // max_num_tokens, dtype=model dtype)); its keys are the model's: "hidden_states" and,
    // where RMSNorm adds the residual in place (fused_add_rms_norm: Llama, Qwen, Mistral,
    // Mixtral, Gemma, DeepSeek), "residual" too; LayerNorm models pass the hidden states
    // alone (GPT-2, GPT-NeoX, Falcon, Phi-2)
    let received = if l.pipeline_parallel_size > 1 && st.index > 0 {
        let keys = match a.norm {
            crate::model::NormKind::RmsNorm => n(2, "tensors hidden_states and residual"),
            crate::model::NormKind::LayerNorm => n(1, "tensor hidden_states"),
        };
        keys * n(t, "tokens") * n(a.hidden_size, "hidden") * bytes(act)
    } else {
        N::zero()
    };
    let peak_act = Term::new(
        received.label("pipeline intermediate_tensors")
            + crate::activations::max_bytes([fwd, sampler]),
        "vLLM profile run (gpu_model_runner.py profile_run): a forward of max_num_batched_tokens tokens (core/src/inference.rs forward_workspace) and the sampler over max_num_seqs rows (topk_topp_sampler.py, core/src/serving.rs); 0.19's fused-MoE workspace stays allocated through both (vllm/v1/worker/workspace.py); after the first pipeline stage, the received intermediate_tensors buffer (gpu_model_runner.py _dummy_run)",
    );
    let communicators = l.communicators(Mode::Inference);
    let non_torch = if v019 {
        non_torch::<N>(r, inf.vllm_version).expr
    } else {
        non_torch::<N>(r, inf.vllm_version).expr + nccl_buffers::<N>(communicators).expr
    };
    let budget = (n(gpu.memory_bytes, "B GPU memory")
        * f(inf.gpu_memory_utilization, "gpu_memory_utilization"))
    .floor();
    let kv = budget
        .clone()
        .label("budget")
        .minus(weights.expr.clone().label("weights"))
        .minus(peak_act.expr.clone().label("peak activation"))
        .minus(non_torch.clone().label("non-torch"));
    let (per_token, room) = kv_pool(s, kv.value().to_i64());
    Profile {
        weights,
        peak_act,
        non_torch,
        budget,
        kv,
        per_token,
        room,
    }
}

/// vLLM on one stage: its profiling run `p`, and the KV cache of its room or, under
/// pipeline parallelism, of the fewest tokens any stage has room for (`shared`).
fn vllm<N: Num>(s: &InferStage, p: Profile<N>, shared: Option<u64>) -> StageOutcome<N> {
    let inf = s.inf;
    let max_model_len = inf.max_model_len.unwrap_or(inf.context_len);
    let Profile {
        weights,
        peak_act,
        non_torch,
        budget,
        kv,
        per_token,
        room,
    } = p;
    let kv_value = kv.value().to_i64();
    let tokens = shared.map_or(room, |t| t.min(room));
    let per_token_bytes = per_token.to_u64();
    let fits = tokens >= max_model_len;
    let gib = |b: i64| b as f64 / GIB as f64;
    let (weights_bytes, act_bytes, budget_bytes) =
        (weights.bytes(), peak_act.bytes(), budget.to_u64());
    // the message is report text: a numeric estimate builds none
    let message = if !N::REPORT {
        String::new()
    } else if kv_value <= 0 {
        format!(
            "No available memory for the cache blocks: weights {:.2} GiB and activations {:.2} GiB exceed the {:.2} GiB budget. Try increasing gpu_memory_utilization or tensor parallelism.",
            gib(weights_bytes as i64),
            gib(act_bytes as i64),
            gib(budget_bytes as i64)
        )
    } else if !fits {
        format!(
            "To serve at least one request with max_model_len ({max_model_len}), {:.2} GiB KV cache is needed, which is larger than the available KV cache memory ({:.2} GiB). Based on the available memory, the estimated maximum model length is {tokens}.",
            gib((per_token_bytes * max_model_len) as i64),
            gib(kv_value)
        )
    } else {
        format!(
            "KV cache {:.2} GiB, {tokens} tokens{}; maximum concurrency for {max_model_len} tokens per request: {:.2}x",
            gib(kv_value),
            if shared.is_some() {
                " (the fewest any pipeline stage has room for)"
            } else {
                ""
            },
            tokens as f64 / max_model_len as f64
        )
    };
    let non_torch_bytes = non_torch.to_u64();
    let serving = ServingEstimate {
        engine: crate::config::InferenceEngine::Vllm,
        gpu_memory_utilization: inf.gpu_memory_utilization,
        budget_bytes,
        weights_bytes,
        peak_activation_bytes: act_bytes,
        non_torch_bytes,
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
    let mut profile = Phase::<N>::new(PhaseName::Profile);
    profile
        .put(Component::Weights, &weights)
        .put(Component::Activations, &peak_act);
    let mut serve = Phase::new(PhaseName::Serving);
    serve
        .set(Component::Weights, weights)
        .set(Component::Activations, peak_act)
        .set(
            Component::KvCache,
            match shared {
                None => Term::new(
                    N::max([kv, N::n(0, "")]),
                    crate::term::source!(N; "vLLM gpu_worker.py determine_available_memory: the budget (GPU memory x gpu_memory_utilization) minus weights, profiled activations and non-torch memory, at least 0; {KV_SOURCE}"),
                ),
                Some(_) => Term::new(
                    N::n(tokens, "tokens that every pipeline stage holds")
                        * per_token.label("B per token"),
                    crate::term::source!(N; "vLLM kv_cache_utils.py get_kv_cache_configs: every pipeline rank gets the smallest number of blocks any rank has room for (its room: the budget minus weights, profiled activations and non-torch memory), its cache tensors shrunk to it; {KV_SOURCE}"),
                ),
            },
        );
    s.outcome(smallvec::smallvec![profile, serve], Some(serving))
}
