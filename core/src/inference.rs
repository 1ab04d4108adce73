//! Inference: quantized weights, the KV cache, the prefill workspace, and vLLM-style
//! serving capacity.
//!
//! * **Weights** per linear layer in its [`WeightFormat`], with the quantization constants
//!   each format stores ([`matrix_bytes`]); embeddings, the LM head, norms, biases and MoE
//!   routers in 16 bits.
//! * **KV cache** per token and layer: `2 x kv_heads x head_dim x bytes` (GQA/MQA; with
//!   TP each GPU holds `max(1, kv_heads / TP)` heads, vLLM replicating heads when TP
//!   exceeds them); MLA under vLLM caches the latent `kv_lora_rank + qk_rope_head_dim`
//!   once per token (DeepSeek-V2 paper, Sec. 2.1.2), and so does transformers 5;
//!   sliding-window layers hold at most `sliding_window` tokens.
//! * **Prefill workspace**: inference keeps no activations for backward; the peak is the
//!   largest set of tensors alive inside one layer (the gated MLP's gate/up output and its
//!   product, or the attention inputs and scores) plus the hidden state and residual.
//! * **vLLM**: KV-cache memory = total x `gpu_memory_utilization` - weights - peak
//!   activation of the profiling run - non-torch memory (vllm/v1/worker/gpu_worker.py
//!   `determine_available_memory`; reproduces the published logs: 79.18 x 0.9 - 14.99 -
//!   4.76 - 0.13 = 51.38 GiB for Llama-3.1-8B). The profiling run is a forward of
//!   `max_num_batched_tokens` tokens and a sampler run over `max_num_seqs` rows with
//!   top-k/top-p ([`vllm_sampler_bytes`]).

use crate::config::{Attention, Inference, InferenceEngine, KvCacheDtype, WeightFormat};
use crate::estimate::{
    ComponentDetail, Estimate, PhaseEstimate, ServingEstimate, Stage, StageEstimate, component_map,
    copies_on_gpu, rank_tensors, stage_groups, stages,
};
use crate::model::{MlpKind, ModelArch, Part, Shape};
use crate::resolve::Resolved;
use crate::units::{GIB, MIB};
use indexmap::IndexMap;

/// Bytes of one `rows x cols` (out x in) weight matrix in `format`, with its quantization
/// constants.
///
/// * `fp32` 4 B, `bf16`/`fp16` 2 B per element;
/// * `fp8`: 1 B + one fp32 scale per output channel (compressed-tensors FP8 "channel");
/// * `int8` (LLM.int8): 1 B + one fp32 row scale `SCB` per output row (bitsandbytes `Int8Params`);
/// * `int4` (GPTQ): 4 bits per weight, per group of `group` input channels an fp16 scale
///   and (with zero points) a 4-bit packed zero per output channel, plus an int32 `g_idx`
///   per input channel (AutoGPTQ / GPTQModel `QuantLinear`);
/// * `awq`: as `int4` without `g_idx` (AutoAWQ `WQLinear_GEMM`);
/// * `nf4` (bitsandbytes): 4 bits per weight, one absmax per 64 weights: fp32, or with
///   double quantization an 8-bit absmax plus an fp32 absmax per 256 blocks, a 256-entry
///   fp32 code table and an fp32 offset; the NF4 code table (16 fp32) (bitsandbytes `QuantState`);
/// * `mxfp4`: 4 bits per weight and an 8-bit E8M0 scale per 32 (OCP Microscaling v1.0).
pub fn matrix_bytes(
    format: WeightFormat,
    rows: u64,
    cols: u64,
    group: u64,
    zero_point: bool,
    double_quant: bool,
) -> u64 {
    let n = rows * cols;
    match format {
        WeightFormat::Fp32 => 4 * n,
        WeightFormat::Bf16 | WeightFormat::Fp16 => 2 * n,
        WeightFormat::Fp8 => n + 4 * rows,
        WeightFormat::Int8 => n + 4 * rows,
        WeightFormat::Int4 | WeightFormat::Awq => {
            let groups = cols.div_ceil(group.max(1));
            let scales = 2 * groups * rows;
            let zeros = if zero_point {
                (groups * rows).div_ceil(2)
            } else {
                0
            };
            let g_idx = if format == WeightFormat::Int4 {
                4 * cols
            } else {
                0
            };
            n.div_ceil(2) + scales + zeros + g_idx
        }
        WeightFormat::Nf4 => {
            let blocks = n.div_ceil(64);
            let absmax = if double_quant {
                blocks + 4 * blocks.div_ceil(256) + 256 * 4 + 4
            } else {
                4 * blocks
            };
            n.div_ceil(2) + absmax + 16 * 4
        }
        WeightFormat::Mxfp4 => n.div_ceil(2) + n.div_ceil(32),
    }
}

/// Bytes per element of a 16-bit (or fp32) tensor kept unquantized next to `format` weights.
pub fn unquantized_bytes(format: WeightFormat) -> u64 {
    if format == WeightFormat::Fp32 { 4 } else { 2 }
}

/// `true` for the parameter groups a quantized checkpoint quantizes: linear layers of the
/// decoder blocks, not routers.
pub fn is_quantized(part: Part, shape: &Shape) -> bool {
    matches!(shape, Shape::Linear { .. })
        && matches!(
            part,
            Part::Attention | Part::Mlp | Part::Experts | Part::SharedExperts
        )
}

/// Bytes of one KV-cache element (and the per-token-per-head constants of integer formats).
fn kv_element(dtype: KvCacheDtype, act: u64) -> (u64, u64, u64) {
    // (numerator, denominator) bytes per element, constant bytes per token per head
    match dtype {
        KvCacheDtype::Auto => (act, 1, 0),
        KvCacheDtype::Fp8 => (1, 1, 0),
        // fp16 scale and zero point per token and head, for K and V each
        KvCacheDtype::Int8 => (1, 1, 4),
        KvCacheDtype::Int4 => (1, 2, 4),
    }
}

/// KV-cache bytes one GPU holds for one token in decoder layer `i`, and how many tokens
/// of a `context` that layer keeps (capped at the sliding window).
pub fn kv_bytes_per_token(
    arch: &ModelArch,
    i: u64,
    dtype: KvCacheDtype,
    act: u64,
    tp: u64,
    engine: InferenceEngine,
) -> u64 {
    let (num, den, per_head) = kv_element(dtype, act);
    match (&arch.mla, engine) {
        // vLLM's MLA backends cache the compressed latent and the shared rope key, once
        // per token, on every TP rank
        (Some(m), InferenceEngine::Vllm) => {
            ((m.kv_lora_rank + m.qk_rope_head_dim) * num).div_ceil(den) + per_head
        }
        // transformers 5 (DeepseekV2Attention / DeepseekV3Attention) caches the latents too,
        // as two single-head tensors (`past_key_values.update(k_nope, k_pe)`) and expands
        // them with kv_b_proj at every step
        (Some(m), InferenceEngine::Hf) => {
            ((m.kv_lora_rank + m.qk_rope_head_dim) * num).div_ceil(den) + 2 * per_head
        }
        (None, _) => {
            let kv = (arch.num_key_value_heads / tp).max(1);
            let _ = i;
            (2 * kv * arch.head_dim * num).div_ceil(den) + 2 * kv * per_head
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
#[allow(clippy::too_many_arguments)]
pub fn kv_cache_bytes(
    arch: &ModelArch,
    layers: (u64, u64),
    batch: u64,
    context: u64,
    dtype: KvCacheDtype,
    act: u64,
    tp: u64,
    engine: InferenceEngine,
) -> u64 {
    (layers.0..layers.1)
        .map(|i| kv_tokens(arch, i, context) * kv_bytes_per_token(arch, i, dtype, act, tp, engine))
        .sum::<u64>()
        * batch
}

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
pub fn forward_workspace(
    arch: &ModelArch,
    tokens: u64,
    kv_len: u64,
    batch_rows: u64,
    attention: Attention,
    act: u64,
    fp16: bool,
    tp: u64,
) -> u64 {
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
    let mut mlp = rows * inter * act * mlp_tensors;
    if arch.moe.is_some() {
        // the routed rows' dispatched input, expert output and weighted output (tokens x
        // top-k x h each), as the training model's `expert_inputs` / `expert_outputs`
        mlp += 3 * rows * h.div_ceil(tp) * act;
    }
    let heads = arch.num_attention_heads.div_ceil(tp);
    let kv = (arch.num_key_value_heads / tp).max(1);
    let qkv = match &arch.mla {
        // DeepseekV2Attention: q_proj output, its concatenated nope/rope query, kv_b_proj's
        // expansion of the cached latents (nope + v per head) and the assembled keys
        Some(m) => {
            tokens * heads * (3 * arch.qk_head_dim() + m.qk_nope_head_dim + arch.v_head_dim()) * act
        }
        None => {
            tokens
                * (heads * arch.qk_head_dim() + kv * (arch.qk_head_dim() + arch.v_head_dim()))
                * act
        }
    };
    // the attention output, and its (b, s, h, d) copy where rotary concatenates
    let copies = if arch.rotary_concatenates() { 2 } else { 1 };
    let out = tokens * heads * arch.v_head_dim() * act * copies;
    let scores = if attention == Attention::Eager {
        // per sequence: heads x (tokens / rows) x kv_len
        let per_seq = tokens / batch_rows.max(1);
        let converted = if act == 2 && !fp16 { 4 } else { 0 };
        let half = if act < 4 { act } else { 0 };
        batch_rows * heads * per_seq * kv_len * (act + converted + 4).max(act + 4 + half)
    } else {
        0
    };
    3 * tokens * h * act + mlp.max(qkv + out + scores)
}

/// Bytes of vLLM's sampler pass over `rows` sequences and a `vocab` vocabulary during the
/// profiling run (top-k = vocab - 1 and top-p = 0.9, as `_dummy_sampler_run` sets them),
/// per element at the larger of two moments of `apply_top_k_top_p`
/// (vllm/v1/sample/ops/topk_topp_sampler.py, native path):
///
/// * the sort: the bf16 logits (2 B), their fp32 copy (4), the sorted values (4) and int64
///   indices (8) being written, ATen's int64 reverse indices (8) and CUB's second buffer of
///   keys and values (4 + 8) (aten/src/ATen/native/cuda/SortStable.cu
///   `segmented_sort_pairs` -> `cub::DeviceSegmentedSort::SortPairs`): 38 B;
/// * the scatter: logits (2 + 4), sorted values and indices (12), the top-k mask (1), the
///   softmax of the sorted values (4, kept by the cumulative sum), the top-p mask (1) and the
///   scattered result (4): 28 B.
pub fn vllm_sampler_bytes(rows: u64, vocab: u64) -> u64 {
    let sort = 2 + 4 + (4 + 8) + 8 + (4 + 8);
    let scatter = 2 + 4 + (4 + 8) + 1 + 4 + 1 + 4;
    rows * vocab * sort.max(scatter)
}

/// Bytes of the weights one GPU of `stage` holds in `format` (quantization constants
/// included; see [`matrix_bytes`]).
pub(crate) fn stage_weight_bytes(
    r: &Resolved,
    st: &Stage,
    format: WeightFormat,
    group: u64,
    zero_point: bool,
    double_quant: bool,
) -> u64 {
    let tp = r.layout.tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let unq = unquantized_bytes(format);
    stage_groups(r, st)
        .iter()
        .map(|sg| {
            let g = &sg.group;
            let shapes = rank_tensors(g, tp);
            let one: u64 = if is_quantized(g.part, &g.shape) {
                let (rows, cols) = shapes[0];
                let bias: u64 = shapes[1..].iter().map(|(r, c)| r * c).sum();
                matrix_bytes(format, rows, cols, group, zero_point, double_quant) + bias * unq
            } else {
                shapes.iter().map(|(r, c)| r * c).sum::<u64>() * unq
            };
            one * copies_on_gpu(g, ep) * sg.times
        })
        .sum()
}

/// The largest quantized linear layer one GPU of `stage` holds (elements of its matrix).
pub(crate) fn largest_quantized_matrix(r: &Resolved, st: &Stage) -> u64 {
    let tp = r.layout.tensor_parallel_size;
    stage_groups(r, st)
        .iter()
        .filter(|sg| is_quantized(sg.group.part, &sg.group.shape))
        .map(|sg| {
            let (rows, cols) = rank_tensors(&sg.group, tp)[0];
            rows * cols
        })
        .max()
        .unwrap_or(0)
}

/// vLLM's cached rotary table: `max_position_embeddings x rotary_dim` in the model dtype,
/// one per model (vllm/model_executor/layers/rotary_embedding `cos_sin_cache`).
fn rotary_cache_bytes(a: &ModelArch, act: u64) -> u64 {
    if a.learned_position_embeddings > 0 {
        return 0;
    }
    let rotary_dim = a.mla.as_ref().map_or(a.head_dim, |m| m.qk_rope_head_dim);
    a.max_position_embeddings * rotary_dim * act
}

/// Memory allocated outside PyTorch by a vLLM worker after start-up (kernels loaded on first
/// use, cuBLAS/NCCL state): 0.13 GiB measured for Llama-3.1-8B on one H100
/// (llm-d empirical vLLM results, published_cases GT-45), plus this model's NCCL buffers
/// when the model is split over GPUs.
const VLLM_NON_TORCH_TP1: u64 = 139_586_437; // 0.13 GiB

/// Estimates inference: transformers `generate` (engine `hf`) phases, or vLLM serving
/// capacity (engine `vllm`).
pub(crate) fn estimate_inference(r: &Resolved) -> Estimate {
    let inf = r.config.inference.clone().unwrap_or_default();
    let a = &r.arch;
    let l = &r.layout;
    let tp = l.tensor_parallel_size;
    let pp = l.pipeline_parallel_size;
    // fp16 compute only for fp16 weights; quantized formats compute in bf16
    let fp16 = inf.weight_format == WeightFormat::Fp16;
    let act = if inf.weight_format == WeightFormat::Fp32 {
        4
    } else {
        2
    };
    let gpu = &r.gpu;
    let prompt = inf
        .prompt_len
        .unwrap_or(inf.context_len)
        .min(inf.context_len);
    let chunk = inf.prefill_chunk.unwrap_or(prompt).min(prompt).max(1);
    let batch = inf.batch_size;
    let vocab = a.vocab_size;
    let mut warnings = r.warnings.clone();

    // overheads: as for training (context, cuBLAS, NCCL when split); no allocator reserve
    // for vLLM, which sizes its KV cache from the budget
    let cublas = if matches!(gpu.arch.as_str(), "hopper" | "blackwell") {
        32 * MIB
    } else {
        8 * MIB + 128 * 1024
    };
    let groups = [tp, pp, l.data_parallel_size.min(1)]
        .iter()
        .filter(|&&n| n > 1)
        .count() as u64;
    let nccl = groups * 4 * MIB * 2 * 16;

    // (stage, phases, index of the peak phase, layers, serving)
    type StageOutcome = (u64, Vec<PhaseEstimate>, usize, u64, Option<ServingEstimate>);
    let mut best: Option<StageOutcome> = None;
    for st in stages(r) {
        let (start, end) = l.stage_layers.range(st.index, pp);
        let weights = stage_weight_bytes(
            r,
            &st,
            inf.weight_format,
            inf.group_size,
            inf.zero_point,
            inf.double_quant,
        );
        let (phases, serving) = match inf.engine {
            InferenceEngine::Hf => {
                // prefill: the prompt (or one chunk of it) through the stage, the cache
                // filling up; logits for logits_to_keep positions plus generate's fp32 copy
                // of the last one
                let ws = forward_workspace(
                    a,
                    batch * chunk,
                    prompt,
                    batch,
                    inf.attention,
                    act,
                    fp16,
                    tp,
                );
                // transformers' DynamicSlidingWindowLayer keeps its window as a slice of the
                // prompt's whole key/value tensors, so during the prefill every layer holds
                // the whole prompt (the window is copied out at the first decode step)
                let kv_prompt = (start..end)
                    .map(|i| {
                        prompt * kv_bytes_per_token(a, i, inf.kv_cache_dtype, act, tp, inf.engine)
                    })
                    .sum::<u64>()
                    * batch;
                // the attention masks transformers builds once per forward (masking_utils):
                // eager gets a float (b, 1, q, kv) mask per layer type; SDPA needs a boolean
                // one only where the mask is not plain causal (sliding-window layers)
                // the embedding output stays referenced by the model's forward
                // (`inputs_embeds`) for the whole layer loop; GPT-2's position embeddings too
                let embeds = if st.has_embedding {
                    let tables = 1 + u64::from(a.learned_position_embeddings > 0);
                    tables * batch * chunk * a.hidden_size * act
                } else {
                    0
                };
                let sliding = (start..end).filter(|&i| a.is_sliding(i)).count() as u64;
                let mask_elems = batch * chunk * prompt;
                let masks = if inf.attention == Attention::Eager {
                    let kinds = u64::from(sliding > 0) + u64::from(sliding < end - start);
                    mask_elems * act * kinds
                } else if sliding > 0 {
                    mask_elems
                } else {
                    0
                };
                let kv_full = kv_cache_bytes(
                    a,
                    (start, end),
                    batch,
                    inf.context_len,
                    inf.kv_cache_dtype,
                    act,
                    tp,
                    inf.engine,
                );
                let (logits_prefill, logits_decode) = if st.has_head {
                    (
                        batch * vocab * (inf.logits_to_keep * act + 4),
                        batch * vocab * (act + 4 + 4),
                    )
                } else {
                    (0, 0)
                };
                let decode_ws = forward_workspace(
                    a,
                    batch,
                    inf.context_len,
                    batch,
                    inf.attention,
                    act,
                    fp16,
                    tp,
                );
                let phases = vec![
                    phase(
                        "prefill",
                        &[
                            ("weights", weights),
                            ("kv_cache", kv_prompt),
                            ("activations", ws + masks + embeds),
                            ("logits", logits_prefill),
                        ],
                    ),
                    phase(
                        "decode",
                        &[
                            ("weights", weights),
                            ("kv_cache", kv_full),
                            ("activations", decode_ws),
                            ("logits", logits_decode),
                        ],
                    ),
                ];
                (phases, None)
            }
            InferenceEngine::Vllm => {
                let max_model_len = inf.max_model_len.unwrap_or(inf.context_len);
                let weights = weights + rotary_cache_bytes(a, act);
                let t = inf.max_num_batched_tokens;
                let rows = inf.max_num_seqs.min(t).max(1);
                let fwd = forward_workspace(a, t, t / rows, rows, Attention::Flash, act, fp16, tp);
                let sampler = if st.has_head {
                    t * a.hidden_size * act + vllm_sampler_bytes(rows, vocab)
                } else {
                    0
                };
                let peak_act = fwd.max(sampler);
                let non_torch = VLLM_NON_TORCH_TP1.max(cublas) + nccl;
                let budget = (gpu.memory_bytes as f64 * inf.gpu_memory_utilization) as u64;
                let kv = budget as i64 - weights as i64 - peak_act as i64 - non_torch as i64;
                let per_token: u64 = (start..end)
                    .map(|i| kv_bytes_per_token(a, i, inf.kv_cache_dtype, act, tp, inf.engine))
                    .sum();
                let tokens = if kv > 0 {
                    kv as u64 / per_token.max(1)
                } else {
                    0
                };
                let fits = tokens >= max_model_len;
                let gib = |b: i64| b as f64 / GIB as f64;
                let message = if kv <= 0 {
                    format!(
                        "No available memory for the cache blocks: weights {:.2} GiB and activations {:.2} GiB exceed the {:.2} GiB budget. Try increasing gpu_memory_utilization or tensor parallelism.",
                        gib(weights as i64),
                        gib(peak_act as i64),
                        gib(budget as i64)
                    )
                } else if !fits {
                    format!(
                        "To serve at least one request with max_model_len ({max_model_len}), {:.2} GiB KV cache is needed, which is larger than the available KV cache memory ({:.2} GiB). Based on the available memory, the estimated maximum model length is {tokens}.",
                        gib((per_token * max_model_len) as i64),
                        gib(kv)
                    )
                } else {
                    format!(
                        "KV cache {:.2} GiB, {tokens} tokens; maximum concurrency for {max_model_len} tokens per request: {:.2}x",
                        gib(kv),
                        tokens as f64 / max_model_len as f64
                    )
                };
                if !fits {
                    warnings.push(message.clone());
                }
                let serving = ServingEstimate {
                    gpu_memory_utilization: inf.gpu_memory_utilization,
                    budget_bytes: budget,
                    weights_bytes: weights,
                    peak_activation_bytes: peak_act,
                    non_torch_bytes: non_torch,
                    kv_cache_bytes: kv,
                    kv_bytes_per_token: per_token,
                    kv_cache_tokens: tokens,
                    max_model_len,
                    max_concurrency: tokens as f64 / max_model_len.max(1) as f64,
                    fits,
                    message,
                };
                let phases = vec![
                    phase(
                        "profile",
                        &[("weights", weights), ("activations", peak_act)],
                    ),
                    phase(
                        "serving",
                        &[
                            ("weights", weights),
                            ("activations", peak_act),
                            ("kv_cache", kv.max(0) as u64),
                        ],
                    ),
                ];
                (phases, Some(serving))
            }
        };
        let peak = (0..phases.len())
            .max_by_key(|&i| (phases[i].allocated_bytes, std::cmp::Reverse(i)))
            .unwrap_or(0);
        let v = phases[peak].allocated_bytes;
        if best.as_ref().is_none_or(|b| v > b.1[b.2].allocated_bytes) {
            best = Some((
                st.index,
                phases,
                peak,
                st.dense_layers + st.moe_layers,
                serving,
            ));
        }
    }
    let (stage, phases, peak, layers, serving) = best.expect("one stage");
    let peak_phase = phases[peak].clone();
    let peak_allocated_bytes = peak_phase.allocated_bytes;
    let non_torch = serving.as_ref().map_or(0, |s| s.non_torch_bytes);
    let mut overheads = IndexMap::new();
    overheads.insert("cuda_context".to_string(), gpu.cuda_context_bytes);
    overheads.insert(
        "cublas_workspace".to_string(),
        if serving.is_some() {
            non_torch - nccl
        } else {
            cublas
        },
    );
    overheads.insert("nccl_buffers".to_string(), nccl);
    let reserve = if serving.is_some() {
        0
    } else {
        (peak_allocated_bytes as f64 * r.config.overheads.allocator_reserve_fraction) as u64
    };
    overheads.insert("allocator_reserve".to_string(), reserve);
    let total_bytes = peak_allocated_bytes + overheads.values().sum::<u64>();
    let fits = total_bytes <= gpu.memory_bytes && serving.as_ref().is_none_or(|s| s.fits);
    let details = inference_details(r, &inf, &peak_phase, &serving);
    if inf.context_len > a.max_position_embeddings {
        warnings.push(format!(
            "inference.context_len ({}) exceeds the model's max_position_embeddings ({})",
            inf.context_len, a.max_position_embeddings
        ));
    }
    Estimate {
        model: a.clone(),
        params: r.params.clone(),
        layout: *l,
        gpu: gpu.clone(),
        most_loaded: if pp > 1 {
            format!("pipeline stage {stage} of {pp}")
        } else {
            "every GPU".into()
        },
        params_on_gpu: 0,
        stages: vec![StageEstimate {
            stage,
            layers,
            params_on_gpu: 0,
            peak_allocated_bytes,
            peak_phase: peak_phase.phase.clone(),
        }],
        components: peak_phase.components.clone(),
        peak_phase: peak_phase.phase.clone(),
        phases,
        peak_allocated_bytes,
        overheads,
        total_bytes,
        gpu_memory_bytes: gpu.memory_bytes,
        fits,
        utilization: total_bytes as f64 / gpu.memory_bytes.max(1) as f64,
        headroom_bytes: gpu.memory_bytes as i64 - total_bytes as i64,
        cpu_memory_bytes: 0,
        nvme_bytes: 0,
        details,
        warnings,
        mode: "inference".into(),
        trainable_params: 0,
        serving,
    }
}

fn phase(name: &str, values: &[(&str, u64)]) -> PhaseEstimate {
    let components = component_map(values);
    let allocated_bytes = components.values().sum();
    PhaseEstimate {
        phase: name.into(),
        components,
        allocated_bytes,
    }
}

fn inference_details(
    r: &Resolved,
    inf: &Inference,
    p: &PhaseEstimate,
    serving: &Option<ServingEstimate>,
) -> Vec<ComponentDetail> {
    let a = &r.arch;
    let mut d = Vec::new();
    let mut add = |name: &str, formula: String, source: &str| {
        let bytes = p.components.get(name).copied().unwrap_or(0);
        if bytes > 0 {
            d.push(ComponentDetail {
                name: name.into(),
                bytes,
                formula,
                source: source.into(),
            });
        }
    };
    add(
        "weights",
        format!(
            "linear layers in {:?}, embeddings/LM head/norms in 16 bits",
            inf.weight_format
        )
        .to_lowercase(),
        "GPTQ/AWQ/bitsandbytes/compressed-tensors storage formats (core/src/inference.rs matrix_bytes)",
    );
    let per = kv_bytes_per_token(
        a,
        0,
        inf.kv_cache_dtype,
        2,
        r.layout.tensor_parallel_size,
        inf.engine,
    );
    let kv_formula = match (&a.mla, inf.engine) {
        (Some(m), InferenceEngine::Vllm) => format!(
            "(kv_lora_rank {} + qk_rope_head_dim {}) per token per layer: {per} B",
            m.kv_lora_rank, m.qk_rope_head_dim
        ),
        _ => format!(
            "2 x {} KV heads x head_dim {} x bytes per token per layer: {per} B{}",
            a.num_key_value_heads,
            a.head_dim,
            a.sliding_window
                .map(|w| format!("; sliding-window layers keep {w} tokens"))
                .unwrap_or_default()
        ),
    };
    add(
        "kv_cache",
        kv_formula,
        "GQA (Ainslie et al. 2023), MLA (DeepSeek-V2 Sec. 2.1.2); vLLM paged KV cache",
    );
    add(
        "activations",
        match serving {
            Some(_) => format!("vLLM profile run: forward of {} tokens, sampler over {} rows", inf.max_num_batched_tokens, inf.max_num_seqs),
            None => "largest set of intermediates alive in one layer (no activations kept without gradients)".into(),
        },
        "core/src/inference.rs forward_workspace / vllm_sampler_bytes",
    );
    add(
        "logits",
        format!("{} vocab x (logits + fp32 copy for sampling)", a.vocab_size),
        "transformers generate (logits_to_keep)",
    );
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gptq_and_nf4_of_one_matrix() {
        // 4096 x 11008 GPTQ g128 with zero points: 22 544 384 B weights, 86 groups x 4096
        // rows: scales 704 512 B, zeros 176 128 B, g_idx 11008 x 4 = 44 032 B
        assert_eq!(
            matrix_bytes(WeightFormat::Int4, 4096, 11008, 128, true, true),
            22_544_384 + 704_512 + 176_128 + 44_032
        );
        // NF4 double-quant of 4096 x 4096: 8 388 608 B + 262 144 absmax bytes + 1024 second-level
        // absmax x 4 + code 1024 + offset 4 + NF4 code 64
        assert_eq!(
            matrix_bytes(WeightFormat::Nf4, 4096, 4096, 64, false, true),
            8_388_608 + 262_144 + 4096 + 1028 + 64
        );
        assert_eq!(
            matrix_bytes(WeightFormat::Mxfp4, 4096, 4096, 32, false, false),
            8_388_608 + 524_288
        );
    }
}
