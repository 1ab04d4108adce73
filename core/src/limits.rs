//! Upper bounds on inputs. They keep every product in the memory model far from integer
//! overflow and reject absurd values (10^20 parameters) with a clear message; each is far
//! above any model or cluster that exists.

/// `hidden_size` (and other per-token widths such as MLA ranks).
pub const MAX_HIDDEN: u64 = 1 << 20;
/// `num_hidden_layers`.
pub const MAX_LAYERS: u64 = 10_000;
/// `num_attention_heads`.
pub const MAX_HEADS: u64 = 1 << 16;
/// `head_dim`.
pub const MAX_HEAD_DIM: u64 = 1 << 16;
/// `intermediate_size`.
pub const MAX_INTERMEDIATE: u64 = 1 << 24;
/// `vocab_size`.
pub const MAX_VOCAB: u64 = 1 << 24;
/// Sequence length, context length and `max_position_embeddings` (2^30 tokens).
pub const MAX_SEQ: u64 = 1 << 30;
/// Routed experts per MoE layer.
pub const MAX_EXPERTS: u64 = 1 << 16;
/// Total parameters of a model (10^15).
pub const MAX_PARAMS: u64 = 1_000_000_000_000_000;
/// Micro-batch size and inference batch size.
pub const MAX_BATCH: u64 = 1 << 20;
/// Gradient accumulation steps.
pub const MAX_GRAD_ACCUM: u64 = 1 << 20;
/// GPUs in one job, and each parallel size.
pub const MAX_GPUS: u64 = 1 << 20;
/// Memory of one GPU in bytes (100 TB).
pub const MAX_GPU_MEMORY: u64 = 100_000_000_000_000;
/// CPU memory of one node in bytes (1 PB).
pub const MAX_CPU_MEMORY: u64 = 1_000_000_000_000_000;

/// Upper bound of an activation size (`resolve.rs` `activation_elems_bound`): 2^56 elements (2^57 bytes and more, far above
/// any GPU's or node's memory). The memory model's activation arithmetic is in `u64` and
/// multiplies such counts by bytes per element and small factors; under this bound every
/// product stays below 2^64 with 2^8 to spare. Found by the `estimate` fuzz target:
/// micro-batch 1 000 x a 2^30-token sequence under eager attention overflowed.
pub const MAX_ACTIVATION_ELEMS: u128 = 1 << 56;

/// LoRA `lora_alpha`: twice the largest rank ([`MAX_HIDDEN`]), the common alpha = 2r.
pub const MAX_LORA_ALPHA: f64 = 2.0 * MAX_HIDDEN as f64;
/// Side of a vision tower's input image, pixels (`image_size`).
pub const MAX_IMAGE_SIZE: u64 = 100_000;
/// Side of a vision patch, pixels (`patch_size`); a patch is also at most the image.
pub const MAX_PATCH_SIZE: u64 = 1 << 10;
/// Image channels (`num_channels`, `in_channels`), frames per temporal patch, and the
/// merge factor of Qwen2.5-VL's patch merger: small factors of the vision tower's products.
pub const MAX_VISION_FACTOR: u64 = 1 << 5;
/// Multi-token-prediction layers (DeepSeek-V3 `num_nextn_predict_layers`).
pub const MAX_NEXTN_LAYERS: u64 = 16;

/// The allowed range of one numeric key of a model's `config.json` (and of the `model`
/// section, which uses the same keys). `keys` are the names the families read it under,
/// the first the Hugging Face one; [`crate::reader::Reader`] checks every count it reads
/// against this table.
#[derive(Debug, Clone, Copy)]
pub struct ModelKey {
    pub keys: &'static [&'static str],
    pub min: u64,
    pub max: u64,
    /// Where the key is read and what else bounds it (empty: nothing else).
    pub note: &'static str,
}

const fn key(keys: &'static [&'static str], min: u64, max: u64, note: &'static str) -> ModelKey {
    ModelKey {
        keys,
        min,
        max,
        note,
    }
}

/// Every numeric key a model family reads (`families.rs`, `hf.rs`), with its range. The
/// bounds keep the parameter counts of the largest allowed model inside `u64` (the vision
/// towers' products are also computed in `u128` and saturate).
#[rustfmt::skip]
pub const MODEL_KEYS: &[ModelKey] = &[
    key(&["hidden_size", "n_embd"], 1, MAX_HIDDEN, "also vision_config.hidden_size"),
    key(&["num_hidden_layers", "n_layer", "num_layers"], 1, MAX_LAYERS, "also vision_config.num_hidden_layers"),
    key(&["num_attention_heads", "n_head"], 1, MAX_HEADS, "without head_dim it must divide hidden_size"),
    key(&["num_key_value_heads", "num_kv_heads", "multi_query_group_num"], 1, MAX_HEADS, "at most num_attention_heads, and divides it"),
    key(&["head_dim", "kv_channels"], 1, MAX_HEAD_DIM, "also hidden_size / num_attention_heads when not given"),
    key(&["intermediate_size", "ffn_hidden_size", "n_inner"], 1, MAX_INTERMEDIATE, "also vision_config.intermediate_size"),
    key(&["vocab_size", "padded_vocab_size"], 1, MAX_VOCAB, ""),
    key(&["max_position_embeddings", "n_positions", "seq_length"], 1, MAX_SEQ, ""),
    key(&["q_lora_rank"], 1, MAX_HIDDEN, "MLA (DeepSeek); null: no query compression"),
    key(&["kv_lora_rank"], 1, MAX_HIDDEN, "MLA (DeepSeek)"),
    key(&["qk_nope_head_dim"], 1, MAX_HEAD_DIM, "MLA; with qk_rope_head_dim the head_dim, at most the head_dim bound"),
    key(&["qk_rope_head_dim"], 1, MAX_HEAD_DIM, "MLA"),
    key(&["v_head_dim"], 1, MAX_HEAD_DIM, "MLA"),
    key(&["num_nextn_predict_layers"], 0, MAX_NEXTN_LAYERS, "DeepSeek-V3 multi-token prediction"),
    key(&["num_experts", "num_local_experts", "n_routed_experts"], 0, MAX_EXPERTS, "at least 1 in an MoE family; 0 (DeepSeek): a dense model"),
    key(&["num_experts_per_tok", "experts_per_token"], 1, MAX_EXPERTS, "at most the number of experts"),
    key(&["moe_intermediate_size"], 1, MAX_INTERMEDIATE, ""),
    key(&["shared_expert_intermediate_size"], 0, MAX_INTERMEDIATE, "Qwen2-MoE"),
    key(&["n_shared_experts"], 0, MAX_EXPERTS, "DeepSeek"),
    key(&["first_k_dense_replace"], 0, MAX_LAYERS, "DeepSeek: the first k layers are dense"),
    key(&["moe_layer_freq", "decoder_sparse_step"], 1, MAX_LAYERS, "every k-th layer is MoE"),
    key(&["sliding_window"], 0, MAX_SEQ, "0: no sliding window"),
    key(&["sliding_window_pattern"], 1, MAX_LAYERS, "Gemma 3: every n-th layer is global"),
    key(&["max_window_layers"], 0, MAX_LAYERS, "Qwen2: layers from this index on slide"),
    key(&["num_ln_in_parallel_attn"], 1, 2, "Falcon"),
    key(&["depth"], 1, MAX_LAYERS, "vision_config (Qwen2.5-VL)"),
    key(&["image_size"], 1, MAX_IMAGE_SIZE, "vision_config"),
    key(&["patch_size", "spatial_patch_size"], 1, MAX_PATCH_SIZE, "vision_config; at most image_size"),
    key(&["num_channels", "in_channels", "in_chans"], 1, MAX_VISION_FACTOR, "vision_config"),
    key(&["temporal_patch_size"], 1, MAX_VISION_FACTOR, "vision_config (Qwen2.5-VL)"),
    key(&["spatial_merge_size"], 1, MAX_VISION_FACTOR, "vision_config (Qwen2.5-VL)"),
    key(&["out_hidden_size"], 1, MAX_HIDDEN, "vision_config (Qwen2.5-VL)"),
];

/// The row of [`MODEL_KEYS`] that holds `key`.
pub fn model_key(key: &str) -> Option<&'static ModelKey> {
    MODEL_KEYS.iter().find(|k| k.keys.contains(&key))
}
