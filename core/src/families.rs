//! The Hugging Face model families: one row each ([`FAMILIES`]).
//!
//! A row holds everything the model knows about a family: its configuration class's
//! defaults (transformers 5.23 `AutoConfig.for_model(model_type)`; ChatGLM from THUDM's
//! `configuration_chatglm.py`), the `config.json` key names it reads, the module names of
//! its layers (what LoRA targets match, what the inventory reports), the behaviour flags
//! the memory model needs (Gemma's fp32 norm scaling, Gemma-2's softcapping, rotary built by
//! concatenation), and a hook that reads the family's own structure keys (biases, norm
//! kind, fused projections, MLA, MoE). Adding a Llama-like family is one row; a family with
//! its own structure adds its hook function beside the row. The parser ([`crate::hf`]) and
//! the inventory ([`crate::model`]) read the row; nothing else matches on `model_type`.

use crate::arch::{Mla, MlpKind, ModelArch, Moe, NormKind};
use crate::reader::Reader;

/// Defaults a family's configuration class uses for a missing key.
///
/// `0` in `num_key_value_heads` means "= num_attention_heads"; `0` in `head_dim` means
/// "= hidden_size / num_attention_heads"; `0` in `intermediate_size` means "4 x hidden_size".
#[derive(Debug, Clone, Copy)]
pub struct FamilyDefaults {
    pub vocab_size: u64,
    pub hidden_size: u64,
    pub intermediate_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub max_position_embeddings: u64,
    pub tie_word_embeddings: bool,
    pub hidden_act: &'static str,
    /// Bias on q/k/v (`attention_bias`, or fixed by the family).
    pub qkv_bias: bool,
    /// Default `sliding_window` (0 = none).
    pub sliding_window: u64,
}

#[allow(clippy::too_many_arguments)] // one argument per column of the table
const fn fam(
    vocab_size: u64,
    hidden_size: u64,
    intermediate_size: u64,
    num_hidden_layers: u64,
    num_attention_heads: u64,
    num_key_value_heads: u64,
    head_dim: u64,
    max_position_embeddings: u64,
    tie_word_embeddings: bool,
    hidden_act: &'static str,
    qkv_bias: bool,
    sliding_window: u64,
) -> FamilyDefaults {
    FamilyDefaults {
        vocab_size,
        hidden_size,
        intermediate_size,
        num_hidden_layers,
        num_attention_heads,
        num_key_value_heads,
        head_dim,
        max_position_embeddings,
        tie_word_embeddings,
        hidden_act,
        qkv_bias,
        sliding_window,
    }
}

/// The `config.json` keys a family reads each size from, first present wins.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    pub hidden_size: &'static [&'static str],
    pub num_hidden_layers: &'static [&'static str],
    pub num_attention_heads: &'static [&'static str],
    pub vocab_size: &'static [&'static str],
    pub max_position_embeddings: &'static [&'static str],
    pub intermediate_size: &'static [&'static str],
    pub hidden_act: &'static [&'static str],
}

const KEYS: Keys = Keys {
    hidden_size: &["hidden_size"],
    num_hidden_layers: &["num_hidden_layers"],
    num_attention_heads: &["num_attention_heads"],
    vocab_size: &["vocab_size"],
    max_position_embeddings: &["max_position_embeddings"],
    intermediate_size: &["intermediate_size"],
    hidden_act: &["hidden_act"],
};

/// Module names of a family's layers, as transformers names them.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    pub q: &'static str,
    pub k: &'static str,
    pub v: &'static str,
    /// A fused q/k/v projection.
    pub qkv: &'static str,
    pub o: &'static str,
    pub gate: &'static str,
    pub up: &'static str,
    /// A fused gate/up projection.
    pub gate_up: &'static str,
    pub down: &'static str,
    /// The norms of a decoder layer with 1, 2 and 4 norms.
    pub norms: [&'static [&'static str]; 3],
    /// Per-head q and k norms.
    pub qk_norms: (&'static str, &'static str),
    pub embed: &'static str,
    pub final_norm: &'static str,
    pub lm_head: &'static str,
    /// The always-active shared experts of a MoE block.
    pub shared_experts: &'static str,
}

const NAMES: Names = Names {
    q: "q_proj",
    k: "k_proj",
    v: "v_proj",
    qkv: "qkv_proj",
    o: "o_proj",
    gate: "gate_proj",
    up: "up_proj",
    gate_up: "gate_up_proj",
    down: "down_proj",
    norms: [
        &["input_layernorm"],
        &["input_layernorm", "post_attention_layernorm"],
        &[
            "input_layernorm",
            "post_attention_layernorm",
            "pre_feedforward_layernorm",
            "post_feedforward_layernorm",
        ],
    ],
    qk_norms: ("q_norm", "k_norm"),
    embed: "embed_tokens",
    final_norm: "norm",
    lm_head: "lm_head",
    shared_experts: "shared_expert",
};

/// GPT-NeoX-style names (NeoX, Falcon, ChatGLM).
const NEOX_NAMES: Names = Names {
    q: "q",
    k: "k",
    v: "v",
    qkv: "query_key_value",
    o: "dense",
    gate: "gate",
    up: "dense_h_to_4h",
    gate_up: "dense_h_to_4h",
    down: "dense_4h_to_h",
    ..NAMES
};

/// How a family gives its key/value heads.
#[derive(Debug, Clone, Copy)]
pub enum KvHeads {
    /// `num_key_value_heads` (default: the family default, or the attention heads).
    Key,
    /// Falcon: `new_decoder_architecture` with `num_kv_heads`, else `multi_query` (1 head).
    Falcon,
    /// ChatGLM: `multi_query_attention` with `multi_query_group_num`.
    ChatGlm,
}

/// How a family gives its head dimension.
#[derive(Debug, Clone, Copy)]
pub enum HeadDim {
    /// Always `hidden_size / num_attention_heads` (the key is not read).
    Derived,
    /// These keys, else the family default, else `hidden_size / num_attention_heads`.
    Keys(&'static [&'static str]),
    /// MLA: `qk_nope_head_dim + qk_rope_head_dim`.
    Mla,
}

/// Which layers use sliding-window attention (transformers' `layer_types`).
#[derive(Debug, Clone, Copy)]
pub enum Sliding {
    None,
    /// `sliding_window` (or the family default) on every layer (Mistral, Mixtral, Phi-3).
    AllLayers,
    /// Qwen: only with `use_sliding_window`, from layer `max_window_layers` on.
    Qwen,
    /// Gemma-2: every other layer, `(i + 1) % 2 != 0`.
    EveryOther,
    /// Gemma-3: all but every `sliding_window_pattern`-th layer (default 6).
    Pattern,
}

/// A multimodal wrapper: the language model comes from its text family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapper {
    /// LLaVA: `text_config` of any family and a CLIP vision tower.
    Llava,
    /// Qwen2.5-VL: `qwen2_5_vl_text` and its own vision transformer.
    Qwen2_5Vl,
    /// Gemma-3: `gemma3_text` and a SigLIP vision tower.
    Gemma3,
}

/// One Hugging Face model family.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// `model_type` in `config.json`.
    pub model_type: &'static str,
    pub defaults: FamilyDefaults,
    pub keys: Keys,
    pub names: Names,
    /// Gated (SwiGLU/GeGLU) or standard MLP.
    pub mlp: MlpKind,
    pub kv_heads: KvHeads,
    pub head_dim: HeadDim,
    pub sliding: Sliding,
    /// Reads the family's structure keys (biases, norm kind, fused projections, MLA, MoE)
    /// into the architecture; `None` after recording an error.
    pub(crate) structure: fn(&Reader, &mut ModelArch) -> Option<()>,
    /// Gemma's RMSNorm (`Gemma*RMSNorm.forward`) multiplies the normalized fp32 tensor by
    /// `1 + weight` in fp32 before casting back, so that mul keeps an fp32 copy where
    /// Llama's keeps the result in the input dtype.
    pub norm_scales_in_fp32: bool,
    /// Gemma-2 caps attention scores and final logits with `tanh(x / cap) * cap`
    /// (`attn_logit_softcapping` 50, `final_logit_softcapping` 30 in every Gemma-2
    /// config): autograd keeps each tanh output.
    pub logit_softcapping: bool,
    /// transformers builds the rotated q and k with `torch.cat` (partial rotary: Phi,
    /// Phi-3, GPT-NeoX, GLM; MLA's nope/rope halves): the result is contiguous in (batch,
    /// heads, seq, dim) order, so the attention kernel's output is too and
    /// `transpose(1, 2).contiguous()` before `o_proj` makes a copy. Elementwise rotary
    /// (Llama) keeps the projection's (batch, seq, heads, dim) layout.
    pub rotary_concatenates: bool,
    /// The MoE router runs in fp32 on fp32 copies of its input and weight
    /// (DeepSeek-V2/V3 `router_logits = F.linear(hidden_states.type(torch.float32),
    /// self.weight.type(torch.float32))`): autograd keeps both copies.
    pub router_fp32: bool,
    /// transformers converts this MoE family from its v4 checkpoint layout
    /// (`conversion_mapping._MODEL_TO_CONVERSION_PATTERN`: mixtral; qwen3_moe and
    /// deepseek_v2 / v3 through the qwen2_moe pattern), and PEFT maps LoRA targets named
    /// after the v4 modules to the fused experts and the router (see [`crate::lora`]).
    pub peft_moe_conversion: bool,
    /// gpt-oss: a learned sink logit per head (`self_attn.sinks`) joins every row of the
    /// eager attention scores (`torch.cat([attn_weights, sinks], -1)`), whose softmax runs
    /// in the scores' dtype (modeling_gpt_oss.py `eager_attention_forward`); the router has
    /// a bias; the experts' GLU clamps gate and up and computes `(up + 1) * gate *
    /// sigmoid(gate * alpha)` (`GptOssExperts._apply_gate`).
    pub gpt_oss_blocks: bool,
    /// The decoder layers' projections are transformers' `pytorch_utils.Conv1D` (GPT-2's
    /// `c_attn`, `c_proj`, `c_fc`: a weight stored `[in, out]`, `torch.addmm`), not
    /// `nn.Linear`: torchao's float8 conversion (`swap_linear_layers`: `isinstance(module,
    /// nn.Linear)`) and other `nn.Linear` swaps leave them as they are.
    pub conv1d: bool,
    /// A multimodal wrapper, and the family its language model's names and flags come from.
    pub wrapper: Option<(Wrapper, &'static str)>,
}

const fn row(model_type: &'static str, defaults: FamilyDefaults) -> Family {
    Family {
        model_type,
        defaults,
        keys: KEYS,
        names: NAMES,
        mlp: MlpKind::Gated,
        kv_heads: KvHeads::Key,
        head_dim: HeadDim::Keys(&["head_dim"]),
        sliding: Sliding::None,
        structure: plain,
        norm_scales_in_fp32: false,
        logit_softcapping: false,
        rotary_concatenates: false,
        router_fp32: false,
        peft_moe_conversion: false,
        gpt_oss_blocks: false,
        conv1d: false,
        wrapper: None,
    }
}

/// The family table: language families, then multimodal wrappers.
#[rustfmt::skip]
pub const FAMILIES: &[Family] = &[
    //                      vocab    hidden inter  layers heads kv  head_dim max_pos  tied   act                  qkv_bias sliding
    Family { structure: llama, ..row("llama",
                        fam(32000,   4096, 11008,  32,    32,   0,   0,      2048,    false, "silu",              false,   0)) },
    Family { sliding: Sliding::AllLayers, ..row("mistral",
                        fam(32000,   4096, 14336,  32,    32,   8,   0,      131072,  false, "silu",              false,   4096)) },
    Family { structure: mixtral, sliding: Sliding::AllLayers, peft_moe_conversion: true,
             names: Names { gate: "w1", up: "w3", down: "w2", ..NAMES }, ..row("mixtral",
                        fam(32000,   4096, 14336,  32,    32,   8,   0,      131072,  false, "silu",              false,   0)) },
    Family { structure: qwen2, sliding: Sliding::Qwen, ..row("qwen2",
                        fam(151936,  4096, 22016,  32,    32,   0,   0,      32768,   false, "silu",              true,    0)) },
    Family { structure: qwen2_moe, sliding: Sliding::Qwen, ..row("qwen2_moe",
                        fam(151936,  2048, 5632,   24,    16,   0,   0,      32768,   false, "silu",              true,    0)) },
    Family { structure: qwen3, sliding: Sliding::Qwen, ..row("qwen3",
                        fam(151936,  4096, 22016,  32,    32,   0,   128,    32768,   false, "silu",              false,   0)) },
    Family { structure: qwen3_moe, sliding: Sliding::Qwen, peft_moe_conversion: true, ..row("qwen3_moe",
                        fam(151936,  2048, 6144,   24,    32,   4,   0,      32768,   false, "silu",              false,   0)) },
    Family { structure: gpt_oss, sliding: Sliding::EveryOther, norm_scales_in_fp32: true, gpt_oss_blocks: true, ..row("gpt_oss",
                        fam(201088,  2880, 2880,   36,    64,   8,   64,     131072,  false, "silu",              true,    128)) },
    Family { structure: gemma, norm_scales_in_fp32: true,
             keys: Keys { hidden_act: &["hidden_activation", "hidden_act"], ..KEYS }, ..row("gemma",
                        fam(256000,  3072, 24576,  28,    16,   0,   256,    8192,    true,  "gelu_pytorch_tanh", false,   0)) },
    Family { structure: gemma2, sliding: Sliding::EveryOther, norm_scales_in_fp32: true, logit_softcapping: true,
             keys: Keys { hidden_act: &["hidden_activation", "hidden_act"], ..KEYS }, ..row("gemma2",
                        fam(256000,  2304, 9216,   26,    8,    4,   256,    8192,    true,  "gelu_pytorch_tanh", false,   4096)) },
    Family { structure: gemma3_text, sliding: Sliding::Pattern, norm_scales_in_fp32: true,
             keys: Keys { hidden_act: &["hidden_activation", "hidden_act"], ..KEYS }, ..row("gemma3_text",
                        fam(262208,  2304, 9216,   26,    8,    4,   256,    131072,  true,  "gelu_pytorch_tanh", false,   4096)) },
    Family { structure: phi, mlp: MlpKind::Standard, head_dim: HeadDim::Derived, rotary_concatenates: true,
             names: Names { qkv: "qkv", o: "dense", gate: "gate", up: "fc1", gate_up: "fc1", down: "fc2",
                            qk_norms: ("q_layernorm", "k_layernorm"), final_norm: "final_layernorm", ..NAMES }, ..row("phi",
                        fam(51200,   2048, 8192,   24,    32,   0,   0,      2048,    false, "gelu_new",          true,    0)) },
    Family { structure: phi3, sliding: Sliding::AllLayers, rotary_concatenates: true, ..row("phi3",
                        fam(32064,   3072, 8192,   32,    32,   0,   0,      4096,    false, "silu",              false,   0)) },
    Family { structure: gpt2, mlp: MlpKind::Standard, head_dim: HeadDim::Derived, conv1d: true,
             keys: Keys { hidden_size: &["n_embd", "hidden_size"], num_hidden_layers: &["n_layer", "num_hidden_layers"],
                          num_attention_heads: &["n_head", "num_attention_heads"],
                          max_position_embeddings: &["n_positions", "max_position_embeddings"],
                          intermediate_size: &["n_inner", "intermediate_size"], hidden_act: &["activation_function"], ..KEYS },
             names: Names { q: "q", k: "k", v: "v", qkv: "c_attn", o: "c_proj", gate: "gate", up: "c_fc", gate_up: "c_fc",
                            down: "c_proj", norms: [&["ln_1", "ln_2"], &["ln_1", "ln_2"], &["ln_1", "ln_2"]],
                            embed: "wte", final_norm: "ln_f", ..NAMES }, ..row("gpt2",
                        fam(50257,   768,  0,      12,    12,   0,   0,      1024,    true,  "gelu_new",          true,    0)) },
    Family { structure: gpt_neox, mlp: MlpKind::Standard, head_dim: HeadDim::Derived, rotary_concatenates: true,
             names: Names { embed: "embed_in", final_norm: "final_layer_norm", lm_head: "embed_out", ..NEOX_NAMES }, ..row("gpt_neox",
                        fam(50432,   6144, 24576,  44,    64,   0,   0,      2048,    false, "gelu",              true,    0)) },
    Family { structure: falcon, mlp: MlpKind::Standard, head_dim: HeadDim::Derived, kv_heads: KvHeads::Falcon,
             keys: Keys { intermediate_size: &["ffn_hidden_size"], ..KEYS },
             names: Names { norms: [&["input_layernorm"], &["ln_attn", "ln_mlp"], NAMES.norms[2]],
                            embed: "word_embeddings", final_norm: "ln_f", ..NEOX_NAMES }, ..row("falcon",
                        fam(65024,   4544, 0,      32,    71,   0,   0,      2048,    true,  "gelu",              false,   0)) },
    Family { structure: deepseek_v2, head_dim: HeadDim::Mla, rotary_concatenates: true, router_fp32: true, peft_moe_conversion: true,
             names: Names { shared_experts: "shared_experts", ..NAMES }, ..row("deepseek_v2",
                        fam(102400,  4096, 11008,  32,    32,   0,   0,      2048,    false, "silu",              false,   0)) },
    Family { structure: deepseek_v3, head_dim: HeadDim::Mla, rotary_concatenates: true, router_fp32: true, peft_moe_conversion: true,
             names: Names { shared_experts: "shared_experts", ..NAMES }, ..row("deepseek_v3",
                        fam(129280,  7168, 18432,  61,    128,  0,   0,      4096,    false, "silu",              false,   0)) },
    Family { structure: chatglm, kv_heads: KvHeads::ChatGlm, head_dim: HeadDim::Keys(&["kv_channels", "head_dim"]),
             rotary_concatenates: true,
             keys: Keys { num_hidden_layers: &["num_layers", "num_hidden_layers"], vocab_size: &["padded_vocab_size", "vocab_size"],
                          max_position_embeddings: &["seq_length", "max_position_embeddings"],
                          intermediate_size: &["ffn_hidden_size", "intermediate_size"], ..KEYS },
             names: Names { embed: "word_embeddings", final_norm: "final_layernorm", lm_head: "output_layer", ..NEOX_NAMES }, ..row("chatglm",
                        fam(65024,   4096, 13696,  28,    32,   0,   128,    2048,    false, "swiglu",            false,   0)) },
    Family { structure: glm, rotary_concatenates: true, ..row("glm",
                        fam(151552,  4096, 13696,  40,    32,   2,   128,    131072,  false, "silu",              true,    0)) },
    Family { structure: glm4, rotary_concatenates: true,
             names: Names { norms: [NAMES.norms[0], NAMES.norms[1], &["input_layernorm", "post_attention_layernorm",
                            "post_self_attn_layernorm", "post_mlp_layernorm"]], ..NAMES }, ..row("glm4",
                        fam(151552,  4096, 13696,  40,    32,   2,   128,    131072,  false, "silu",              true,    0)) },
    Family { structure: qwen2, sliding: Sliding::Qwen, ..row("qwen2_5_vl_text",
                        fam(152064,  8192, 29568,  80,    64,   8,   0,      128000,  false, "silu",              true,    0)) },
    // multimodal wrappers: the language model of the text family, and a vision tower
    Family { wrapper: Some((Wrapper::Llava, "llama")), ..row("llava", FAMILIES_TEXT_DEFAULTS) },
    Family { wrapper: Some((Wrapper::Qwen2_5Vl, "qwen2_5_vl_text")), ..row("qwen2_5_vl", FAMILIES_TEXT_DEFAULTS) },
    Family { wrapper: Some((Wrapper::Gemma3, "gemma3_text")), ..row("gemma3", FAMILIES_TEXT_DEFAULTS) },
];

/// A wrapper row's own defaults are never read (its language model's family's are).
const FAMILIES_TEXT_DEFAULTS: FamilyDefaults = fam(0, 0, 0, 0, 0, 0, 0, 0, false, "", false, 0);

/// The row of a `model_type`.
pub fn find(model_type: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.model_type == model_type)
}

/// Every `model_type` the parser accepts (language families, then wrappers).
pub fn supported_families() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.model_type).collect()
}

impl ModelArch {
    /// The family row whose module names and flags apply to this architecture: its
    /// `model_type`'s (a wrapper's: its text family's). An architecture built by hand with
    /// an unknown `model_type` has the Llama row's.
    pub fn family(&self) -> &'static Family {
        let f = find(&self.model_type).unwrap_or(&FAMILIES[0]);
        match f.wrapper {
            Some((_, text)) => find(text).unwrap_or(f),
            None => f,
        }
    }
    /// See [`Family::norm_scales_in_fp32`].
    pub fn norm_scales_in_fp32(&self) -> bool {
        self.family().norm_scales_in_fp32
    }
    /// See [`Family::logit_softcapping`].
    pub fn logit_softcapping(&self) -> bool {
        self.family().logit_softcapping
    }
    /// See [`Family::gpt_oss_blocks`].
    pub fn gpt_oss_blocks(&self) -> bool {
        self.family().gpt_oss_blocks
    }
    /// See [`Family::router_fp32`].
    pub fn router_fp32(&self) -> bool {
        self.family().router_fp32
    }
    /// See [`Family::rotary_concatenates`] (learned position tables never rotate).
    pub fn rotary_concatenates(&self) -> bool {
        self.rotates_by_concatenation(self.family())
    }
    /// [`ModelArch::rotary_concatenates`] with the family row `f` looked up already.
    pub fn rotates_by_concatenation(&self, f: &Family) -> bool {
        self.learned_position_embeddings == 0 && f.rotary_concatenates
    }
    /// The family's module names.
    pub fn names(&self) -> &'static Names {
        &self.family().names
    }
}

// ------------------------------------------------------------------ structure hooks
// Each reads the keys its transformers configuration and modelling classes read.

fn plain(_: &Reader, _: &mut ModelArch) -> Option<()> {
    Some(())
}

fn attention_bias(r: &Reader, a: &mut ModelArch, default: bool) {
    a.qkv_bias = r.boolean("attention_bias", default);
    a.o_bias = a.qkv_bias;
}

fn llama(r: &Reader, a: &mut ModelArch) -> Option<()> {
    attention_bias(r, a, false);
    a.mlp_bias = r.boolean("mlp_bias", false);
    Some(())
}

fn mixtral(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.moe = Some(every_layer_moe(
        r.count_or(&["num_local_experts"], 8),
        r.count_or(&["num_experts_per_tok"], 2),
        a.intermediate_size,
    ));
    Some(())
}

/// Routed experts of width `inter` on every layer, no shared expert (Mixtral, gpt-oss).
fn every_layer_moe(num_experts: u64, num_experts_per_tok: u64, inter: u64) -> Moe {
    Moe {
        num_experts,
        num_experts_per_tok,
        moe_intermediate_size: inter,
        shared_expert_intermediate_size: 0,
        shared_expert_gate: false,
        first_k_dense_replace: 0,
        moe_layer_freq: 1,
        mlp_only_layers: Vec::new(),
        qwen_layer_rule: false,
    }
}

/// gpt-oss (transformers GptOssConfig / modeling_gpt_oss.py): biased q/k/v/o projections
/// (`attention_bias`, default true), `num_local_experts` experts with biases, top
/// `num_experts_per_tok` (the checkpoint's `experts_per_token`), expert width
/// `intermediate_size`.
fn gpt_oss(r: &Reader, a: &mut ModelArch) -> Option<()> {
    attention_bias(r, a, true);
    a.mlp_bias = true;
    a.moe = Some(every_layer_moe(
        r.count_or(&["num_local_experts"], 128),
        r.count_or(&["num_experts_per_tok", "experts_per_token"], 4),
        a.intermediate_size,
    ));
    Some(())
}

/// Qwen2Attention: q/k/v bias=True, o_proj bias=False (qwen2/modeling_qwen2.py).
fn qwen2(_: &Reader, a: &mut ModelArch) -> Option<()> {
    a.qkv_bias = true;
    Some(())
}

/// Qwen MoE blocks (Qwen2-MoE with a gated shared expert; Qwen3-MoE without).
fn qwen_moe(r: &Reader, a: &mut ModelArch, q2: bool) {
    let experts = r.count_or(&["num_experts"], if q2 { 60 } else { 128 });
    if experts > 0 {
        let shared = if q2 {
            r.count_or(&["shared_expert_intermediate_size"], 5632)
        } else {
            0
        };
        a.moe = Some(Moe {
            num_experts: experts,
            num_experts_per_tok: r.count_or(&["num_experts_per_tok"], if q2 { 4 } else { 8 }),
            moe_intermediate_size: r
                .count_or(&["moe_intermediate_size"], if q2 { 1408 } else { 768 }),
            shared_expert_intermediate_size: shared,
            shared_expert_gate: q2,
            first_k_dense_replace: 0,
            moe_layer_freq: r.count_or(&["decoder_sparse_step"], 1),
            mlp_only_layers: r.count_list("mlp_only_layers"),
            qwen_layer_rule: true,
        });
    }
}

fn qwen2_moe(r: &Reader, a: &mut ModelArch) -> Option<()> {
    qwen2(r, a)?;
    qwen_moe(r, a, true);
    Some(())
}

fn qwen3(r: &Reader, a: &mut ModelArch) -> Option<()> {
    attention_bias(r, a, false);
    a.qk_norm = true;
    Some(())
}

fn qwen3_moe(r: &Reader, a: &mut ModelArch) -> Option<()> {
    qwen3(r, a)?;
    qwen_moe(r, a, false);
    Some(())
}

fn gemma(r: &Reader, a: &mut ModelArch) -> Option<()> {
    attention_bias(r, a, false);
    Some(())
}

fn gemma2(r: &Reader, a: &mut ModelArch) -> Option<()> {
    attention_bias(r, a, false);
    a.norms_per_layer = 4;
    Some(())
}

fn gemma3_text(r: &Reader, a: &mut ModelArch) -> Option<()> {
    gemma2(r, a)?;
    a.qk_norm = true;
    Some(())
}

fn glm(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.qkv_bias = r.boolean("attention_bias", true);
    Some(())
}

fn glm4(r: &Reader, a: &mut ModelArch) -> Option<()> {
    glm(r, a)?;
    a.norms_per_layer = 4;
    Some(())
}

/// PhiAttention: q/k/v/dense with bias; PhiMLP fc1/fc2 with bias; one LayerNorm feeding
/// attention and MLP in parallel; lm_head with bias (phi/modeling_phi.py).
fn phi(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.norm = NormKind::LayerNorm;
    a.norms_per_layer = 1;
    a.qkv_bias = true;
    a.o_bias = true;
    a.mlp_bias = true;
    a.lm_head_bias = true;
    a.parallel_attention = true;
    a.qk_norm = r.boolean("qk_layernorm", false);
    a.hidden_dropout = r.float("resid_pdrop", 0.0);
    Some(())
}

/// Phi-3: fused `qkv_proj` and `gate_up_proj`.
fn phi3(_: &Reader, a: &mut ModelArch) -> Option<()> {
    a.fused_qkv = true;
    a.fused_gate_up = true;
    Some(())
}

fn gpt2(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.norm = NormKind::LayerNorm;
    a.fused_qkv = true;
    a.qkv_bias = true;
    a.o_bias = true;
    a.mlp_bias = true;
    a.learned_position_embeddings = a.max_position_embeddings;
    a.attention_dropout = r.float("attn_pdrop", 0.1);
    a.hidden_dropout = r.float("resid_pdrop", 0.1);
    Some(())
}

fn gpt_neox(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.norm = NormKind::LayerNorm;
    a.fused_qkv = true;
    attention_bias(r, a, true);
    a.mlp_bias = true;
    a.parallel_attention = r.boolean("use_parallel_residual", true);
    a.hidden_dropout = r.float("hidden_dropout", 0.0);
    Some(())
}

fn falcon(r: &Reader, a: &mut ModelArch) -> Option<()> {
    let bias = r.boolean("bias", false);
    let parallel = r.boolean("parallel_attn", true);
    let new_arch = r.boolean("new_decoder_architecture", false);
    let num_ln = r
        .count_any(&["num_ln_in_parallel_attn"])
        .unwrap_or(if new_arch { 2 } else { 1 });
    a.norm = NormKind::LayerNorm;
    a.fused_qkv = true;
    a.qkv_bias = bias;
    a.o_bias = bias;
    a.mlp_bias = bias;
    a.parallel_attention = parallel;
    a.norms_per_layer = if !parallel || num_ln == 2 { 2 } else { 1 };
    a.hidden_dropout = r.float("hidden_dropout", 0.0);
    Some(())
}

/// THUDM modeling_chatglm.py: query_key_value (bias = add_qkv_bias), dense
/// (bias = add_bias_linear), dense_h_to_4h -> 2 x ffn (SwiGLU), dense_4h_to_h.
fn chatglm(r: &Reader, a: &mut ModelArch) -> Option<()> {
    a.fused_qkv = true;
    a.fused_gate_up = true;
    a.qkv_bias = r.boolean("add_qkv_bias", false);
    let bias_linear = r.boolean("add_bias_linear", false);
    a.o_bias = bias_linear;
    a.mlp_bias = bias_linear;
    if !r.boolean("rmsnorm", true) {
        a.norm = NormKind::LayerNorm;
    }
    a.hidden_dropout = r.float("hidden_dropout", 0.0);
    Some(())
}

fn deepseek_v2(r: &Reader, a: &mut ModelArch) -> Option<()> {
    deepseek(r, a, false)
}

fn deepseek_v3(r: &Reader, a: &mut ModelArch) -> Option<()> {
    deepseek(r, a, true)
}

/// DeepSeek-V2/V3: multi-head latent attention (DeepSeek-V2 paper Sec. 2.1) and the
/// DeepSeek MoE (routed and shared experts, the first k layers dense).
fn deepseek(r: &Reader, a: &mut ModelArch, v3: bool) -> Option<()> {
    attention_bias(r, a, false);
    // An explicit `null` means no query compression (V2-Lite); absent means the default 1536.
    let q_lora_rank = match r.map.get("q_lora_rank") {
        None => Some(1536),
        Some(_) => r.count("q_lora_rank"),
    };
    let m = Mla {
        q_lora_rank,
        kv_lora_rank: r.count_or(&["kv_lora_rank"], 512),
        qk_rope_head_dim: r.count_or(&["qk_rope_head_dim"], 64),
        qk_nope_head_dim: r.count_or(&["qk_nope_head_dim"], 128),
        v_head_dim: r.count_or(&["v_head_dim"], 128),
    };
    // MLA: every head gets its own keys/values after the up-projection.
    a.num_key_value_heads = a.num_attention_heads;
    a.num_nextn_predict_layers = r.count_or(&["num_nextn_predict_layers"], 0);
    a.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
    a.mla = Some(m);
    let experts = r
        .count_any(&["n_routed_experts", "num_local_experts"])
        .unwrap_or(if v3 { 256 } else { 64 });
    if experts > 0 {
        let moe_inter = r.count_or(&["moe_intermediate_size"], if v3 { 2048 } else { 1407 });
        let shared = r.count_or(&["n_shared_experts"], if v3 { 1 } else { 2 });
        a.moe = Some(Moe {
            num_experts: experts,
            num_experts_per_tok: r.count_or(&["num_experts_per_tok"], if v3 { 8 } else { 6 }),
            moe_intermediate_size: moe_inter,
            shared_expert_intermediate_size: shared * moe_inter,
            shared_expert_gate: false,
            first_k_dense_replace: r.count_or(&["first_k_dense_replace"], if v3 { 3 } else { 0 }),
            moe_layer_freq: r.count_or(&["moe_layer_freq"], 1),
            mlp_only_layers: Vec::new(),
            qwen_layer_rule: false,
        });
    }
    Some(())
}
