//! Inference: the KV cache, the forward pass's workspace, and transformers `generate`
//! (engine `hf`); vLLM serving, built on these, is in `serving.rs`.
//!
//! * **Weights** in their storage format ([`crate::weights`]).
//! * **KV cache** per token and layer: `2 x kv_heads x head_dim x bytes` (GQA/MQA; with
//!   TP each GPU holds `max(1, kv_heads / TP)` heads, vLLM replicating heads when TP
//!   exceeds them; Ainslie et al. 2023); MLA under vLLM caches the latent
//!   `kv_lora_rank + qk_rope_head_dim` once per token (DeepSeek-V2 paper, Sec. 2.1.2), and
//!   so does transformers 5; sliding-window layers hold at most `sliding_window` tokens.
//! * **Prefill workspace**: inference keeps no activations for backward; the peak is the
//!   largest set of tensors alive inside one layer (the gated MLP's gate/up output and its
//!   product, or the attention inputs and scores) plus the hidden state and residual.

use crate::config::{Attention, Inference, InferenceEngine, KvCacheDtype, Mode, WeightFormat};
use crate::model::{MlpKind, ModelArch};
use crate::placement::{Stage, rank_total, stages};
use crate::problem::Resolved;
use crate::report::{
    Component, Overheads, Phase, PhaseName, ServingEstimate, StageOutcome, assemble,
};
use crate::term::{Num, Term};
use crate::weights::{Storage, stage_weights};

/// Bytes of one KV-cache element, as `(numerator, denominator)`, and the constant bytes per
/// token per head of integer formats.
fn kv_element(dtype: KvCacheDtype, act: u64) -> (u64, u64, u64) {
    match dtype {
        KvCacheDtype::Auto => (act, 1, 0),
        KvCacheDtype::Fp8 => (1, 1, 0),
        // fp16 scale and zero point per token and head, for K and V each
        KvCacheDtype::Int8 => (1, 1, 4),
        KvCacheDtype::Int4 => (1, 2, 4),
    }
}

/// KV-cache bytes one GPU holds for one token in one decoder layer.
pub fn kv_bytes_per_token<N: Num>(
    arch: &ModelArch,
    dtype: KvCacheDtype,
    act: u64,
    tp: u64,
    engine: InferenceEngine,
) -> N {
    let (n, bytes) = (N::n, N::bytes);
    let (num, den, per_head) = kv_element(dtype, act);
    let den = || n(den, "");
    match (&arch.mla, engine) {
        // vLLM's MLA backends cache the compressed latent and the shared rope key, once
        // per token, on every TP rank; so does SGLang (model_runner.py cell_size:
        // `(kv_lora_rank + qk_rope_head_dim) x layers x element size`)
        (Some(m), InferenceEngine::Vllm | InferenceEngine::Sglang) => {
            (n(m.kv_lora_rank + m.qk_rope_head_dim, "latent dims") * bytes(num)).div_ceil(den())
                + bytes(per_head)
        }
        // transformers 5 (DeepseekV2Attention / DeepseekV3Attention) caches the latents too,
        // as two single-head tensors (`past_key_values.update(k_nope, k_pe)`) and expands
        // them with kv_b_proj at every step
        (Some(m), InferenceEngine::Hf) => {
            (n(m.kv_lora_rank + m.qk_rope_head_dim, "latent dims") * bytes(num)).div_ceil(den())
                + n(2, "tensors") * bytes(per_head)
        }
        (None, _) => {
            let kv = (arch.num_key_value_heads / tp).max(1);
            (n(2, "K and V") * n(kv, "KV heads") * n(arch.head_dim, "head dim") * bytes(num))
                .div_ceil(den())
                + n(2, "K and V") * n(kv, "KV heads") * bytes(per_head)
        }
    }
}

/// Tokens of a `context` that layer `i` keeps in its cache.
pub fn kv_tokens(arch: &ModelArch, i: u64, context: u64) -> u64 {
    match arch.sliding_window {
        Some(w) if arch.is_sliding(i) => context.min(w),
        _ => context,
    }
}

/// KV-cache bytes of `batch` sequences of `context` tokens over layers `[start, end)`.
pub(crate) fn kv_cache<N: Num>(
    arch: &ModelArch,
    layers: (u64, u64),
    batch: u64,
    context: u64,
    per_token: N,
) -> N {
    let n = N::n;
    let sliding = (layers.0..layers.1).filter(|&i| arch.is_sliding(i)).count() as u64;
    let full = layers.1 - layers.0 - sliding;
    let window = (layers.0..layers.1)
        .find(|&i| arch.is_sliding(i))
        .map_or(context, |i| kv_tokens(arch, i, context));
    n(batch, "sequences")
        * per_token.label("B per token per layer")
        * (n(full, "layers") * n(context, "tokens")
            + n(sliding, "sliding-window layers") * n(window, "tokens"))
        .label("")
}

/// KV-cache source line.
pub(crate) const KV_SOURCE: &str = "K and V per token and layer: GQA/MQA heads split by TP (Ainslie et al. 2023), MLA latents (DeepSeek-V2 Sec. 2.1.2); sliding-window layers keep the window";

/// Peak bytes of the intermediate tensors of one forward pass over `tokens` tokens with
/// no gradients kept (transformers decoder layers under `torch.no_grad`):
///
/// * three hidden states: the layer's input (still held by the model's layer loop), the
///   residual after attention and the normalized MLP input (3 x tokens x h);
/// * plus the larger of the MLP (a gated MLP holds act(gate), up and their product:
///   3 x tokens x I per GPU; `gelu_new` holds the fc1 output, `0.5 x`, `1 + tanh(..)` and
///   their product: 4 x; a fused activation 2 x; MoE: tokens x top-k routed rows, plus
///   their dispatched input, expert output and weighted output, 3 x h each) and the
///   attention (q, k, v and the output; eager adds the `heads x tokens x kv_len` scores:
///   `softmax(scores, dtype=float32)` converts half scores to an fp32 copy first unless
///   they are fp16 (ATen `SoftMax.cpp`), so the scores, that copy and the fp32 result are
///   alive at once, then the result and its half copy).
#[allow(clippy::too_many_arguments)]
pub fn forward_workspace<N: Num>(
    arch: &ModelArch,
    tokens: u64,
    kv_len: u64,
    batch_rows: u64,
    attention: Attention,
    act: u64,
    fp16: bool,
    tp: u64,
) -> N {
    let p: ForwardParts<N> =
        forward_parts(arch, tokens, kv_len, batch_rows, attention, act, fp16, tp);
    p.hidden + crate::activations::max_bytes([p.mlp, p.attention])
}

/// The three parts of [`forward_workspace`]: the hidden states alive through a layer, the
/// MLP's intermediates and the attention's.
pub(crate) struct ForwardParts<N: Num> {
    pub hidden: N,
    pub mlp: N,
    pub attention: N,
}

/// See [`forward_workspace`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn forward_parts<N: Num>(
    arch: &ModelArch,
    tokens: u64,
    kv_len: u64,
    batch_rows: u64,
    attention: Attention,
    act: u64,
    fp16: bool,
    tp: u64,
) -> ForwardParts<N> {
    let (n, bytes) = (N::n, N::bytes);
    let h = arch.hidden_size;
    let (inter, rows) = match &arch.moe {
        Some(m) => (
            m.moe_intermediate_size
                .max(m.shared_expert_intermediate_size),
            tokens * m.num_experts_per_tok,
        ),
        None => (arch.intermediate_size, tokens),
    };
    let inter = inter.div_ceil(tp);
    let mlp_tensors = match (arch.mlp, arch.hidden_act.as_str()) {
        (MlpKind::Gated, _) => 3,
        (MlpKind::Standard, "gelu_new") => 4,
        _ => 2,
    };
    let mut mlp =
        n(rows, "rows") * n(inter, "intermediate") * bytes(act) * n(mlp_tensors, "tensors");
    if arch.moe.is_some() {
        // the routed rows' dispatched input, expert output and weighted output (tokens x
        // top-k x h each), as the training model's `expert_inputs` / `expert_outputs`
        mlp = mlp + n(3, "tensors") * n(rows, "rows") * n(h.div_ceil(tp), "hidden") * bytes(act);
    }
    let heads = arch.num_attention_heads.div_ceil(tp);
    let kv = (arch.num_key_value_heads / tp).max(1);
    let qkv = match &arch.mla {
        // DeepseekV2Attention: q_proj output, its concatenated nope/rope query, kv_b_proj's
        // expansion of the cached latents (nope + v per head) and the assembled keys
        Some(m) => {
            n(tokens, "tokens")
                * n(heads, "heads")
                * n(
                    3 * arch.qk_head_dim() + m.qk_nope_head_dim + arch.v_head_dim(),
                    "dims",
                )
                * bytes(act)
        }
        None => {
            n(tokens, "tokens")
                * n(
                    heads * arch.qk_head_dim() + kv * (arch.qk_head_dim() + arch.v_head_dim()),
                    "dims of q k and v",
                )
                * bytes(act)
        }
    };
    // the attention output, and its (b, s, h, d) copy where rotary concatenates
    let copies = if arch.rotary_concatenates() { 2 } else { 1 };
    let out = n(tokens, "tokens")
        * n(heads, "heads")
        * n(arch.v_head_dim(), "head dim")
        * bytes(act)
        * n(copies, "copies");
    let scores = if attention == Attention::Eager {
        // per sequence: heads x (tokens / rows) x kv_len
        let per_seq = tokens / batch_rows.max(1);
        let converted = if act == 2 && !fp16 { 4 } else { 0 };
        let half = if act < 4 { act } else { 0 };
        // gpt-oss (eager_attention_forward with sinks): the scores, the sink-joined scores
        // less their row max, and their softmax in the same dtype are alive at once
        let per_score = if arch.gpt_oss_blocks() {
            3 * act
        } else {
            (act + converted + 4).max(act + 4 + half)
        };
        n(batch_rows, "sequences")
            * n(heads, "heads")
            * n(per_seq, "queries")
            * n(kv_len, "keys")
            * bytes(per_score)
    } else {
        N::zero()
    };
    ForwardParts {
        hidden: n(3, "hidden states") * n(tokens, "tokens") * n(h, "hidden") * bytes(act),
        mlp,
        attention: (qkv + out + scores).label(""),
    }
}

/// The activation dtype's bytes for a weight format: fp32 weights compute in fp32, the rest
/// in 16 bits (quantized formats dequantize to bf16).
pub(crate) fn activation_bytes(format: WeightFormat) -> u64 {
    if format == WeightFormat::Fp32 { 4 } else { 2 }
}

/// The storage of the weights being served.
pub(crate) fn storage(inf: &Inference) -> Storage {
    Storage {
        format: inf.weight_format,
        group: inf.group_size,
        zero_point: inf.zero_point,
        double_quant: inf.double_quant,
        experts_only: inf.quantized_modules == crate::config::QuantizedModules::Experts,
    }
}

/// One pipeline stage of an inference run, as the runtimes see it.
pub(crate) struct InferStage<'a> {
    pub r: &'a Resolved,
    pub st: &'a Stage,
    pub inf: &'a Inference,
    pub arch: &'a ModelArch,
    pub tp: u64,
    /// The stage's decoder layers, `[start, end)`.
    pub layers: (u64, u64),
    /// Bytes per activation element.
    pub act: u64,
    /// fp16 compute only for fp16 weights; quantized formats compute in bf16.
    pub fp16: bool,
}

impl InferStage<'_> {
    /// The stage's outcome with these phases.
    pub fn outcome<N: Num>(
        &self,
        phases: crate::report::Phases<N>,
        serving: Option<ServingEstimate>,
    ) -> StageOutcome<N> {
        StageOutcome {
            warnings: Vec::new(),
            stage: self.st.index,
            layers: self.st.layers(),
            params_on_gpu: rank_total(self.r, self.st),
            phases,
            cpu: Term::zero(),
            nvme: Term::zero(),
            serving,
        }
    }
}

/// An inference estimate from `per_stage`, the runtime's model of one pipeline stage
/// (transformers `generate` here, vLLM in [`crate::serving`], SGLang in [`crate::sglang`]):
/// every candidate stage, the runtime's warnings, the overheads (NCCL communicators of TP
/// and PP; a serving runtime replaces the cuBLAS workspace with `non_torch`, the NCCL
/// buffers with `nccl` where given, and has no allocator reserve).
pub(crate) fn estimate_stages<N: Num>(
    r: &Resolved,
    mut per_stage: impl FnMut(&InferStage) -> StageOutcome<N>,
    non_torch: Option<Term<N>>,
    nccl: Option<Term<N>>,
) -> crate::report::Assembly<'_, N> {
    let inf = r.config.inference.clone().unwrap_or_default();
    let l = &r.layout;
    // report text: a numeric estimate builds none
    let numeric = !N::REPORT;
    let mut warnings = if numeric {
        Vec::new()
    } else {
        r.warnings.clone()
    };
    let mut outcomes = crate::report::Outcomes::new();
    for st in stages(r) {
        let o = per_stage(&infer_stage(r, &st, &inf));
        if let Some(s) = o.serving.as_ref().filter(|s| !s.fits && !numeric) {
            warnings.push(s.message.clone());
        }
        outcomes.push(o);
    }
    if inf.context_len > r.arch.max_position_embeddings && !numeric {
        warnings.push(format!(
            "inference.context_len ({}) exceeds the model's max_position_embeddings ({})",
            inf.context_len, r.arch.max_position_embeddings
        ));
    }
    let communicators = l.communicators(Mode::Inference);
    let reserve = non_torch.is_none();
    assemble(
        r,
        Mode::Inference,
        outcomes,
        Overheads {
            communicators,
            non_torch,
            nccl,
            reserve,
        },
        0,
        warnings,
    )
}

/// The inference view of stage `st`.
pub(crate) fn infer_stage<'a>(
    r: &'a Resolved,
    st: &'a Stage,
    inf: &'a Inference,
) -> InferStage<'a> {
    let l = &r.layout;
    InferStage {
        r,
        st,
        inf,
        arch: &r.arch,
        tp: l.tensor_parallel_size,
        layers: l.stage_layers.range(st.index, l.pipeline_parallel_size),
        act: activation_bytes(inf.weight_format),
        fp16: inf.weight_format == WeightFormat::Fp16,
    }
}

/// Estimates transformers `generate` (inference engine `hf`).
pub(crate) fn estimate_generate<N: Num>(r: &Resolved) -> crate::report::Assembly<'_, N> {
    estimate_stages(r, generate, None, None)
}

/// transformers `generate` on one stage: the prefill of the prompt (or one chunk of it)
/// and a decode step with the whole cache.
fn generate<N: Num>(s: &InferStage) -> StageOutcome<N> {
    let (n, bytes) = (N::n, N::bytes);
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
    let prompt = inf
        .prompt_len
        .unwrap_or(inf.context_len)
        .min(inf.context_len);
    let chunk = inf.prefill_chunk.unwrap_or(prompt).min(prompt).max(1);
    let batch = inf.batch_size;
    let weights: Term<N> = stage_weights(r, st, storage(inf));
    let per_token = || kv_bytes_per_token::<N>(a, inf.kv_cache_dtype, act, tp, inf.engine);
    let workspace_source = "core/src/inference.rs forward_workspace: the largest set of intermediates alive in one layer (no activations kept without gradients)";
    // prefill: the prompt (or one chunk of it) through the stage, the cache filling up
    let ws: N = forward_workspace(
        a,
        batch * chunk,
        prompt,
        batch,
        inf.attention,
        act,
        fp16,
        tp,
    );
    // transformers' DynamicSlidingWindowLayer keeps its window as a slice of the prompt's
    // whole key/value tensors, so during the prefill every layer holds the whole prompt (the
    // window is copied out at the first decode step)
    let kv_prompt = n(batch, "sequences")
        * per_token().label("B per token per layer")
        * n(end - start, "layers")
        * n(prompt, "prompt tokens");
    // the embedding output stays referenced by the model's forward (`inputs_embeds`) for
    // the whole layer loop; GPT-2's position embeddings too
    let embeds = if st.has_embedding {
        let tables = 1 + u64::from(a.learned_position_embeddings > 0);
        n(tables, "embedding outputs")
            * n(batch * chunk, "tokens")
            * n(a.hidden_size, "hidden")
            * bytes(act)
    } else {
        N::zero()
    };
    // the attention masks transformers builds once per forward (masking_utils): eager gets
    // a float (b, 1, q, kv) mask per layer type; SDPA needs a boolean one only where the
    // mask is not plain causal (sliding-window layers)
    let sliding = (start..end).filter(|&i| a.is_sliding(i)).count() as u64;
    let mask_elems = || n(batch * chunk, "queries") * n(prompt, "keys");
    let masks = if inf.attention == Attention::Eager {
        let kinds = u64::from(sliding > 0) + u64::from(sliding < end - start);
        mask_elems() * bytes(act) * n(kinds, "mask kinds")
    } else if sliding > 0 {
        mask_elems() * bytes(1)
    } else {
        N::zero()
    };
    let kv_full = kv_cache(a, (start, end), batch, inf.context_len, per_token());
    // logits for logits_to_keep positions plus generate's fp32 copy of the last one
    let vocab = || n(a.vocab_size, "vocab");
    let logits_source =
        "transformers generate: logits of logits_to_keep positions and an fp32 copy for sampling";
    // modeling_*: `hidden_states[:, -logits_to_keep:]` (`slice(0, None)` for 0: every position
    // of this forward pass)
    let kept = match inf.logits_to_keep {
        0 => chunk,
        k => k.min(chunk),
    };
    let (logits_prefill, logits_decode) = if st.has_head {
        (
            n(batch, "sequences")
                * vocab()
                * (n(kept, "positions") * bytes(act) + bytes(4)).label(""),
            n(batch, "sequences") * vocab() * (bytes(act) + bytes(4) + bytes(4)).label(""),
        )
    } else {
        (N::zero(), N::zero())
    };
    let decode_ws: N = forward_workspace(
        a,
        batch,
        inf.context_len,
        batch,
        inf.attention,
        act,
        fp16,
        tp,
    );
    // The layer loop's workspace is freed before the LM head runs: the prefill's peak is the
    // larger of the layer loop and the head's moment (the final hidden states beside the
    // logits). Written as logits + max(loop - logits, final hidden) so that the logits stay
    // their own component.
    let final_hidden = if st.has_head {
        n(batch * chunk, "tokens") * n(a.hidden_size, "hidden") * bytes(act)
    } else {
        N::zero()
    };
    let prefill_activations = N::max([
        (ws + masks + embeds).minus(logits_prefill.clone().label("logits")),
        final_hidden.label("final hidden states"),
    ]);
    let mut prefill = Phase::<N>::new(PhaseName::Prefill);
    prefill
        .put(Component::Weights, &weights)
        .set(Component::KvCache, Term::new(kv_prompt, KV_SOURCE))
        .set(
            Component::Activations,
            Term::new(
                prefill_activations,
                crate::term::source!(N; "the larger of two moments beside the logits: the layer loop ({workspace_source}; attention masks, transformers masking_utils; the embedding output held by the layer loop) less the logits, which do not exist yet then; or, at the LM head, the final hidden states (modeling_*: `self.lm_head(hidden_states[:, slice_indices, :])` reads a view of them)"),
            ),
        )
        .set(Component::Logits, Term::new(logits_prefill, logits_source));
    let mut decode = Phase::new(PhaseName::Decode);
    decode
        .set(Component::Weights, weights)
        .set(Component::KvCache, Term::new(kv_full, KV_SOURCE))
        .set(
            Component::Activations,
            Term::new(decode_ws, workspace_source),
        )
        .set(Component::Logits, Term::new(logits_decode, logits_source));
    s.outcome(smallvec::smallvec![prefill, decode], None)
}
