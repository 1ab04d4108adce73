//! The normalized model architecture: what every model source (preset, Hugging Face
//! `config.json`, manual fields) resolves to. Field names follow Hugging Face
//! `config.json` where one exists. Plain data; its parameter inventory is in
//! [`crate::model`], its family's facts in [`crate::families`].

use serde::{Deserialize, Serialize};

/// Normalization layer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NormKind {
    /// RMSNorm: one weight vector (Zhang & Sennrich 2019; Llama, Qwen, Mistral, Gemma).
    RmsNorm,
    /// LayerNorm: weight and bias vectors (GPT-2, Phi-2, GPT-NeoX, Falcon, CLIP).
    LayerNorm,
}

/// Feed-forward block type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MlpKind {
    /// Gated (SwiGLU / GeGLU, Shazeer 2020): gate, up and down projections.
    Gated,
    /// Two projections with an activation in between (GPT-2, Phi-2, GPT-NeoX, Falcon).
    Standard,
}

/// Multi-head latent attention (DeepSeek-V2 paper, Sec. 2.1), HF key names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Mla {
    /// Rank of the query down-projection; `None` = queries projected directly (V2-Lite).
    pub q_lora_rank: Option<u64>,
    /// Rank of the joint key/value latent (the cached vector, 512 for DeepSeek-V2/V3).
    pub kv_lora_rank: u64,
    /// Per-head dimension of the decoupled rotary key/query part (shared key: one per token).
    pub qk_rope_head_dim: u64,
    /// Per-head dimension of the non-rotary key/query part.
    pub qk_nope_head_dim: u64,
    /// Per-head value dimension.
    pub v_head_dim: u64,
}

/// Mixture-of-experts feed-forward layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Moe {
    /// Routed experts per MoE layer (`num_local_experts`, `num_experts`, `n_routed_experts`).
    pub num_experts: u64,
    /// Experts each token is routed to (`num_experts_per_tok`, top-k).
    pub num_experts_per_tok: u64,
    /// Intermediate size of one routed expert (`moe_intermediate_size`; Mixtral: `intermediate_size`).
    pub moe_intermediate_size: u64,
    /// Intermediate size of the always-active shared expert block (0 = none). DeepSeek:
    /// `n_shared_experts * moe_intermediate_size`; Qwen2-MoE: `shared_expert_intermediate_size`.
    pub shared_expert_intermediate_size: u64,
    /// A sigmoid gate (`Linear(hidden, 1)`) scales the shared expert (Qwen2-MoE).
    pub shared_expert_gate: bool,
    /// The first k layers use a dense MLP of `intermediate_size` (`first_k_dense_replace`).
    pub first_k_dense_replace: u64,
    /// Every n-th layer is MoE (`decoder_sparse_step` / `moe_layer_freq`; 1 = every layer).
    pub moe_layer_freq: u64,
    /// Layers that use a dense MLP regardless (`mlp_only_layers`, Qwen MoE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mlp_only_layers: Vec<u64>,
    /// `true` when the MoE layer index rule is Qwen's `(i + 1) % step == 0`; `false` for
    /// DeepSeek's `i >= first_k_dense_replace && i % moe_layer_freq == 0`.
    #[serde(default)]
    pub qwen_layer_rule: bool,
}

/// A vision tower of a multimodal model, counted and reported apart from the language model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VisionTower {
    /// `vision_config.model_type` (`clip_vision_model`, `siglip_vision_model`, `qwen2_5_vl`).
    pub model_type: String,
    pub hidden_size: u64,
    pub num_hidden_layers: u64,
    /// Parameters of the vision encoder.
    pub encoder_params: u64,
    /// Parameters of the projector into the language model's hidden size.
    pub projector_params: u64,
}

/// A model architecture, normalized from any source. All sizes are element counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelArch {
    /// Display name (preset name or `_name_or_path`).
    pub name: String,
    /// Hugging Face `model_type` of the language model (`llama`, `qwen2_moe`, ...).
    pub model_type: String,
    pub hidden_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    /// GQA key/value heads (`num_key_value_heads`); equal to heads for MHA, 1 for MQA.
    pub num_key_value_heads: u64,
    /// Per-head query/key/value dimension (`head_dim`, default hidden / heads).
    pub head_dim: u64,
    /// Intermediate size of a dense MLP (`intermediate_size`, `n_inner`, `ffn_hidden_size`).
    pub intermediate_size: u64,
    pub vocab_size: u64,
    pub max_position_embeddings: u64,
    /// The LM head shares the input embedding matrix (counted once).
    pub tie_word_embeddings: bool,
    /// Activation function name as in `hidden_act`.
    pub hidden_act: String,
    pub norm: NormKind,
    pub mlp: MlpKind,
    /// Norms of size `hidden_size` in each decoder layer (Llama 2, Gemma-2/3 and GLM-4 4,
    /// Phi-2 and Falcon-7B 1).
    pub norms_per_layer: u64,
    /// Per-head RMSNorm on queries and keys (`q_norm`/`k_norm`: Qwen3, Gemma-3; Phi `qk_layernorm`).
    pub qk_norm: bool,
    /// Biases on the q/k/v projections (`attention_bias`; Qwen2 `True`).
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    pub o_bias: bool,
    /// Biases on the MLP projections (`mlp_bias`; GPT-2, Phi-2 `True`).
    pub mlp_bias: bool,
    /// Bias on the LM head (Phi-2).
    pub lm_head_bias: bool,
    /// q, k and v are one fused linear module (GPT-2 `c_attn`, Phi-3 `qkv_proj`, NeoX/Falcon/ChatGLM `query_key_value`).
    pub fused_qkv: bool,
    /// gate and up are one fused module (Phi-3 `gate_up_proj`, ChatGLM `dense_h_to_4h`).
    pub fused_gate_up: bool,
    /// Attention and MLP read the same normalized input (GPT-J/Phi-2/Falcon parallel block).
    pub parallel_attention: bool,
    /// Rows of a learned absolute position table (GPT-2 `n_positions`); 0 for rotary models.
    pub learned_position_embeddings: u64,
    /// Dropout probability on attention probabilities (`attention_dropout`, `attn_pdrop`).
    pub attention_dropout: f64,
    /// Dropout probability on residual branches and embeddings (`resid_pdrop`, `hidden_dropout`).
    pub hidden_dropout: f64,
    /// Multi-head latent attention (DeepSeek-V2/V3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<Mla>,
    /// Mixture of experts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<Moe>,
    /// Sliding-window size of local attention layers (`sliding_window`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u64>,
    /// Which decoder layers use the sliding window, as transformers' `layer_types`
    /// (`true` = `"sliding_attention"`). Empty when `sliding_window` is `None`; one entry per
    /// layer otherwise (Mistral: all; Gemma-2: even layers; Gemma-3: 5 of every 6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sliding_layers: Vec<bool>,
    /// Vision tower of a multimodal wrapper (LLaVA, Qwen2.5-VL, Gemma-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<VisionTower>,
    /// Multi-token prediction modules after the last decoder layer
    /// (`num_nextn_predict_layers`, DeepSeek-V3: 1). transformers drops them when loading;
    /// Megatron-Core trains them (`--mtp-num-layers`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub num_nextn_predict_layers: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What kind of feed-forward block a decoder layer has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfnKind {
    Dense,
    Moe,
}

impl ModelArch {
    /// Query/key head dimension used by attention scores (MLA: nope + rope).
    pub fn qk_head_dim(&self) -> u64 {
        match &self.mla {
            Some(m) => m.qk_nope_head_dim + m.qk_rope_head_dim,
            None => self.head_dim,
        }
    }
    /// Value head dimension (MLA: `v_head_dim`).
    pub fn v_head_dim(&self) -> u64 {
        match &self.mla {
            Some(m) => m.v_head_dim,
            None => self.head_dim,
        }
    }

    /// Feed-forward kind of decoder layer `i` (0-based), following the family's rule:
    /// DeepSeek `i >= first_k_dense_replace && i % moe_layer_freq == 0`; Qwen MoE
    /// `i not in mlp_only_layers && (i + 1) % decoder_sparse_step == 0`; Mixtral every layer.
    pub fn ffn_kind(&self, i: u64) -> FfnKind {
        let Some(m) = &self.moe else {
            return FfnKind::Dense;
        };
        let freq = m.moe_layer_freq.max(1);
        let is_moe = if m.qwen_layer_rule {
            !m.mlp_only_layers.contains(&i) && (i + 1).is_multiple_of(freq)
        } else {
            i >= m.first_k_dense_replace && i.is_multiple_of(freq)
        };
        if is_moe { FfnKind::Moe } else { FfnKind::Dense }
    }

    /// Number of MoE layers.
    pub fn num_moe_layers(&self) -> u64 {
        self.moe_layers_in(0, self.num_hidden_layers)
    }

    /// Number of MoE layers among layers `start..end`: the count of `i` in the range with
    /// `ffn_kind(i) == Moe`, in closed form (the plan search times ~10^5 layouts).
    pub fn moe_layers_in(&self, start: u64, end: u64) -> u64 {
        let Some(m) = &self.moe else { return 0 };
        if start >= end {
            return 0;
        }
        let freq = m.moe_layer_freq.max(1);
        // multiples of `freq` in `a..b`
        let multiples = |a: u64, b: u64| {
            if a >= b {
                0
            } else {
                b.div_ceil(freq) - a.div_ceil(freq)
            }
        };
        if m.qwen_layer_rule {
            // (i + 1) % freq == 0, less the listed dense layers (each counted once)
            let listed = m
                .mlp_only_layers
                .iter()
                .enumerate()
                .filter(|&(k, &x)| {
                    (start..end).contains(&x)
                        && (x + 1).is_multiple_of(freq)
                        && !m.mlp_only_layers[..k].contains(&x)
                })
                .count() as u64;
            multiples(start + 1, end + 1) - listed
        } else {
            multiples(start.max(m.first_k_dense_replace), end)
        }
    }

    /// Number of sliding-window layers among layers `start..end` ([`ModelArch::is_sliding`]).
    pub fn sliding_layers_in(&self, start: u64, end: u64) -> u64 {
        if self.sliding_window.is_none() || start >= end {
            return 0;
        }
        let len = self.sliding_layers.len() as u64;
        let (a, b) = (start.min(len) as usize, end.min(len) as usize);
        self.sliding_layers[a..b].iter().filter(|&&x| x).count() as u64
    }

    /// `true` if decoder layer `i` uses sliding-window (local) attention.
    pub fn is_sliding(&self, i: u64) -> bool {
        self.sliding_window.is_some()
            && self
                .sliding_layers
                .get(i as usize)
                .copied()
                .unwrap_or(false)
    }
}
