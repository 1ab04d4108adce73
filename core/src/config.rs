//! The config document (API boundary): schema version 1, JSON via serde.
//!
//! ```json
//! {"schema_version": 2,
//!  "model": {"preset": "llama-2-7b"},
//!  "training": {"micro_batch_size": 4, "seq_len": 4096, "gradient_accumulation_steps": 4,
//!               "precision": "amp_bf16", "optimizer": "adamw",
//!               "activation_checkpointing": "full", "attention": "flash"},
//!  "parallelism": {"data_parallel_size": 8},
//!  "engine": {"type": "deepspeed", "zero_stage": 3},
//!  "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}}
//! ```
//!
//! Every section may be left out and takes the defaults documented on its type (one GPU,
//! no model parallelism, `ddp`). Unknown keys are rejected, naming the key. Counts accept
//! numbers or strings with decimal suffixes ("7B"); memory sizes accept "80GB"/"80GiB".
//! Documents without `schema_version` in the seed format are migrated ([`crate::seed`]), and
//! schema 1 documents ([`crate::load`]: `fsdp` meant FSDP1, now `fsdp_version: 1`).

use crate::optimizer::Optimizer;
pub use crate::optimizer::OptimizerImpl;
use crate::units::{self, GbInput};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 2;

fn is_false(b: &bool) -> bool {
    !*b
}

/// Implements `CHOICES` (every value with its display label, in display order) for an
/// enum of the schema; the private `listed` match fails to compile when a variant is
/// missing from the list.
macro_rules! choices {
    ($t:ty { $($v:ident => $label:expr),* $(,)? }) => {
        impl $t {
            /// Every value with its label, in display order (the web form's options).
            pub const CHOICES: &'static [($t, &'static str)] = &[$((<$t>::$v, $label)),*];
            /// The display label.
            #[allow(dead_code)]
            pub fn label(self) -> &'static str {
                match self {
                    $(<$t>::$v => $label),*
                }
            }
        }
    };
}
pub(crate) use choices;

/// A whole config document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Always 2 for this schema. Older documents (1, the seed format) are migrated on load.
    pub schema_version: u32,
    /// `training` (default; with `training.lora` it is fine-tuning) or `inference`. When left
    /// out, a document with an `inference` section and no `training` section is inference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The model: a preset, a Hugging Face `config.json`, or HF-named fields. See [`ModelSpec`].
    pub model: ModelSpec,
    pub training: Training,
    /// Serving / generation settings (mode `inference`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<Inference>,
    pub parallelism: Parallelism,
    pub engine: Engine,
    pub hardware: Hardware,
    /// Fixed overheads outside the tensors (CUDA context, workspaces, allocator reserve).
    pub overheads: Overheads,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schema_version: SCHEMA_VERSION,
            mode: None,
            model: ModelSpec::default(),
            training: Training::default(),
            inference: None,
            parallelism: Parallelism::default(),
            engine: Engine::default(),
            hardware: Hardware::default(),
            overheads: Overheads::default(),
        }
    }
}

/// The `model` section: a JSON object with
/// * `"preset": "<id>"`: a built-in model (see `gpu-mem-calc presets`), and/or
/// * `"hf_config": { ... }`: a Hugging Face `config.json` pasted whole (extra keys ignored), and/or
/// * Hugging Face `config.json` keys (`hidden_size`, `num_hidden_layers`,
///   `num_attention_heads`, `num_key_value_heads`, `intermediate_size`, `vocab_size`,
///   `tie_word_embeddings`, `model_type`, ...) that override the preset / pasted config or,
///   alone, describe the model (a Llama-style decoder unless `model_type` says otherwise).
///   Keys the family does not read are rejected.
/// * `"name"`: a display name; `"num_parameters"`: a stated size ("7B"), checked against
///   the architecture (a warning if more than 10 % off) or, with no architecture given,
///   used to size a Llama-style model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct ModelSpec(pub Map<String, Value>);

impl ModelSpec {
    /// `{"preset": id}`.
    pub fn preset(id: &str) -> Self {
        let mut m = Map::new();
        m.insert("preset".into(), Value::from(id));
        ModelSpec(m)
    }
    /// `{"hf_config": config}`.
    pub fn hf_config(config: Value) -> Self {
        let mut m = Map::new();
        m.insert("hf_config".into(), config);
        ModelSpec(m)
    }
}

/// What is being estimated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A training step (full training, or LoRA/QLoRA fine-tuning with `training.lora`).
    #[default]
    Training,
    /// Generation: prefill and decode with a KV cache, or vLLM-style serving capacity.
    Inference,
}

impl Config {
    /// The mode in effect (see [`Config::mode`]).
    pub fn effective_mode(&self) -> Mode {
        Config::mode_rule(
            self.mode,
            self.inference.is_some(),
            self.training == Training::default(),
        )
    }
    /// The mode rule: `mode` when given, else inference for a document with an `inference`
    /// section and no training settings.
    pub(crate) fn mode_rule(
        mode: Option<Mode>,
        has_inference: bool,
        default_training: bool,
    ) -> Mode {
        match mode {
            Some(m) => m,
            None if has_inference && default_training => Mode::Inference,
            None => Mode::Training,
        }
    }
}

/// How weights are stored. Quantized formats apply to the linear layers of the decoder
/// blocks; embeddings, the LM head, norms, biases and MoE routers stay in 16 bits, as
/// GPTQ, AWQ, bitsandbytes and compressed-tensors checkpoints keep them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WeightFormat {
    Fp32,
    #[default]
    Bf16,
    Fp16,
    /// FP8 E4M3 with one fp32 scale per output channel (compressed-tensors FP8-dynamic).
    Fp8,
    /// LLM.int8 (bitsandbytes 8-bit): int8 weights, one fp32 scale per row (`SCB`).
    Int8,
    /// GPTQ 4-bit: packed weights, fp16 scales and 4-bit zero points per group of
    /// `group_size` input channels, int32 `g_idx` per input channel.
    Int4,
    /// AWQ 4-bit: as GPTQ without `g_idx`.
    Awq,
    /// bitsandbytes NF4 (QLoRA): one absmax per 64 weights, 8-bit with double quantization.
    Nf4,
    /// OCP MXFP4: 4-bit weights, one 8-bit (E8M0) scale per 32.
    Mxfp4,
}

/// Which linear layers a quantized weight format covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuantizedModules {
    /// Every linear layer of the decoder blocks (GPTQ, AWQ, bitsandbytes, FP8 checkpoints).
    #[default]
    AllLinear,
    /// The routed experts only; attention, routers and shared experts stay 16-bit (gpt-oss's
    /// MXFP4 checkpoints: `quantization_config.modules_to_not_convert` lists self_attn, the
    /// router, the embeddings and the LM head).
    Experts,
}

/// KV-cache element type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum KvCacheDtype {
    /// The activation dtype (bf16/fp16: 2 bytes).
    #[default]
    Auto,
    Fp8,
    /// int8 with an fp16 scale and zero point per token and head.
    Int8,
    /// int4 with an fp16 scale and zero point per token and head.
    Int4,
}

/// The runtime generating tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InferenceEngine {
    /// transformers `generate`: the prompt prefilled at once, a dense KV cache.
    #[default]
    Hf,
    /// vLLM: paged KV cache sized from `gpu_memory_utilization` after a profiling run
    /// (`max_num_batched_tokens` tokens, `max_num_seqs` sampled rows); MLA as latents.
    Vllm,
    /// SGLang: a token pool sized from `mem_fraction_static` of the memory free before the
    /// weights load (sglang/srt/model_executor/model_runner.py `profile_max_num_token`).
    Sglang,
}

/// The `inference` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Inference {
    /// Sequences generated together. Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub batch_size: u64,
    /// Tokens per sequence: prompt plus generated. Default 4096.
    #[serde(deserialize_with = "units::de_count")]
    pub context_len: u64,
    /// Prompt tokens (the prefill). Default: `context_len`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_len: Option<u64>,
    /// Default `bf16`.
    pub weight_format: WeightFormat,
    /// The linear layers `weight_format` quantizes (default `all_linear`).
    #[serde(skip_serializing_if = "is_default")]
    pub quantized_modules: QuantizedModules,
    /// Input channels per quantization group for `int4` / `awq` (default 128).
    #[serde(deserialize_with = "units::de_count")]
    pub group_size: u64,
    /// Asymmetric quantization with zero points (`int4` / `awq`; default true).
    pub zero_point: bool,
    /// Double quantization of the NF4 absmax (bitsandbytes `bnb_4bit_use_double_quant`, default true).
    pub double_quant: bool,
    /// Default `auto`.
    pub kv_cache_dtype: KvCacheDtype,
    /// Default `sdpa`.
    pub attention: Attention,
    /// Prefill in chunks of this many tokens (chunked prefill). Default: the whole prompt.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prefill_chunk: Option<u64>,
    /// Positions whose logits the prefill computes (transformers `logits_to_keep`; 0 = every
    /// position of the prompt, or of the prefill chunk). Default 1, as `generate` sets it.
    #[serde(deserialize_with = "units::de_count")]
    pub logits_to_keep: u64,
    /// Default `hf`.
    pub engine: InferenceEngine,
    /// vLLM `gpu_memory_utilization` (default 0.9).
    pub gpu_memory_utilization: f64,
    /// vLLM `max_model_len` (default: `context_len`).
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_model_len: Option<u64>,
    /// vLLM `max_num_batched_tokens` (default 8192).
    #[serde(deserialize_with = "units::de_count")]
    pub max_num_batched_tokens: u64,
    /// vLLM `max_num_seqs` (default 1024).
    #[serde(deserialize_with = "units::de_count")]
    pub max_num_seqs: u64,
    /// The vLLM release whose memory profile is modelled (default `0.19`).
    #[serde(skip_serializing_if = "is_default")]
    pub vllm_version: VllmVersion,
    /// SGLang `--mem-fraction-static`: weights plus the KV pool as a fraction of the GPU
    /// memory free before the weights load. Default: SGLang's heuristic
    /// (server_args.py `_handle_gpu_memory_settings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_fraction_static: Option<f64>,
    /// SGLang `--chunked-prefill-size`: tokens per prefill forward pass. Default: SGLang's
    /// by GPU memory (2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else 16384).
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub chunked_prefill_size: Option<u64>,
}

/// vLLM releases whose start-up memory differs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum VllmVersion {
    /// vLLM 0.19: the profiling run's sampler filters top-k / top-p in place (Triton kernel,
    /// vllm/v1/sample/ops/topk_topp_triton.py) before sampling with exponential noise; the
    /// non-torch memory measured per layout in its logs.
    #[default]
    #[serde(rename = "0.19")]
    V0_19,
    /// Earlier vLLM V1 releases whose dummy sampler run sorted the logits for top-k / top-p
    /// (the llm-d empirical results, published cases GT-45 / 49 / 51; their vLLM version is
    /// not stated).
    #[serde(rename = "legacy")]
    Legacy,
}

impl Default for Inference {
    fn default() -> Self {
        Inference {
            batch_size: 1,
            context_len: 4096,
            prompt_len: None,
            weight_format: WeightFormat::Bf16,
            quantized_modules: QuantizedModules::AllLinear,
            group_size: 128,
            zero_point: true,
            double_quant: true,
            kv_cache_dtype: KvCacheDtype::Auto,
            attention: Attention::Sdpa,
            prefill_chunk: None,
            logits_to_keep: 1,
            engine: InferenceEngine::Hf,
            gpu_memory_utilization: 0.9,
            max_model_len: None,
            max_num_batched_tokens: 8192,
            max_num_seqs: 1024,
            vllm_version: VllmVersion::V0_19,
            mem_fraction_static: None,
            chunked_prefill_size: None,
        }
    }
}

/// Which linear modules get LoRA adapters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum TargetModules {
    /// `"all-linear"`: every linear layer of the decoder blocks (PEFT), not the LM head.
    All(String),
    /// Module names as in transformers (`q_proj`, `v_proj`, `down_proj`, `c_attn`, ...):
    /// a module is targeted when its name ends with one of them (PEFT suffix matching).
    List(Vec<String>),
}

/// LoRA / QLoRA fine-tuning (PEFT `LoraConfig`): adapters `B (out x r) A (r x in)` on the
/// targeted modules; the base model is frozen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Lora {
    /// `r` (default 8).
    #[serde(deserialize_with = "units::de_count")]
    pub rank: u64,
    /// `lora_alpha` (default 16; no effect on memory).
    pub alpha: f64,
    /// Default: PEFT's for the model's `model_type` ([`crate::lora::peft_default_targets`]:
    /// `q_proj`, `v_proj` for Llama, Mistral, Mixtral, Qwen2/3, Gemma 1/2; `c_attn` for GPT-2;
    /// `query_key_value` for ChatGLM and Falcon; `q_proj`, `v_proj`, `fc1`, `fc2` for Phi).
    /// PEFT has none for other model types and asks for them; so does validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_modules: Option<TargetModules>,
    /// `lora_dropout` (default 0): a dropout mask and copy per targeted input when > 0.
    pub dropout: f64,
    /// Format of the frozen base weights: `bf16` (LoRA), `nf4` (QLoRA), `int8`, ...
    /// Default `bf16` (`fp32` under precision fp32).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_weight_format: Option<WeightFormat>,
    /// Adapter weights in fp32 (PEFT's default `autocast_adapter_dtype=True`); false: in the
    /// training dtype.
    pub adapters_fp32: bool,
    /// The linear layers `base_weight_format` quantizes (default `all_linear`).
    #[serde(skip_serializing_if = "is_default")]
    pub base_quantized_modules: QuantizedModules,
}

impl Default for Lora {
    fn default() -> Self {
        Lora {
            rank: 8,
            alpha: 16.0,
            target_modules: None,
            dropout: 0.0,
            base_weight_format: None,
            adapters_fp32: true,
            base_quantized_modules: QuantizedModules::AllLinear,
        }
    }
}

/// Numeric precision regime of training (see [`crate::precision`] for bytes per parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Everything in fp32.
    Fp32,
    /// Mixed precision, bf16 compute with fp32 master weights (torch autocast / DeepSpeed
    /// `bf16` / Megatron `--bf16`).
    #[default]
    AmpBf16,
    /// Mixed precision, fp16 compute with fp32 master weights and loss scaling.
    AmpFp16,
    /// Pure bf16: weights, gradients and optimizer states in bf16 (torchtune `dtype: bf16`).
    Bf16,
    /// Pure fp16.
    Fp16,
    /// FP8 compute: NVIDIA Transformer Engine under Megatron and DeepSpeed (bf16 weights
    /// and fp32 master weights), torchao float8 under DDP and FSDP (fp32 weights); under
    /// transformers' modules only the converted `nn.Linear` weights
    /// ([`crate::model::ParamGroup::float8_linear`]).
    Fp8,
}

/// Activation recomputation (gradient checkpointing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Keep all activations.
    #[default]
    None,
    /// Recompute the attention core only (Korthikanti et al. 2022, Sec. 5; Megatron
    /// `--recompute-activations`).
    Selective,
    /// Keep only each layer's input; recompute the layer in backward (HF
    /// `gradient_checkpointing`, Megatron `--recompute-granularity full`).
    Full,
    /// torchtitan's per-op selective checkpointing (`selective_ac_option = "op"`): each
    /// layer is checkpointed, but the outputs of its matmuls (every other `mm` in forward
    /// order), of the SDPA kernel and of `max` are saved, the rest recomputed (PyTorch
    /// `create_selective_checkpoint_contexts`). Hugging Face / torchtitan models only.
    SelectiveOp,
}

impl Recompute {
    /// Each decoder layer is checkpointed (recomputed in backward, wholly or in part).
    pub fn checkpoints_layers(self) -> bool {
        matches!(self, Recompute::Full | Recompute::SelectiveOp)
    }
}

/// Attention implementation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Attention {
    /// Materializes the `b x a x s x s` scores and probabilities (HF `attn_implementation="eager"`).
    Eager,
    /// `torch.nn.functional.scaled_dot_product_attention` (memory-efficient / flash kernels).
    #[default]
    Sdpa,
    /// FlashAttention-2/3 (`attn_implementation="flash_attention_2"`).
    Flash,
    /// FlashAttention's Triton kernel (flash-attn `flash_attn_triton.py`, which MPT copies as
    /// `attn_impl: triton`, llm-foundry's benchmark default): the same tensors as
    /// [`Attention::Flash`] (its output and a log-sum-exp row), slower kernels (step time's
    /// `TRITON_FLASH_SLOWDOWN`).
    FlashTriton,
}

/// How the cross-entropy loss over the vocabulary is computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LossImpl {
    /// Full logits, upcast to fp32 in the loss (transformers `ForCausalLMLoss`).
    #[default]
    Standard,
    /// Logits computed and reduced in chunks (torchtune `CEWithChunkedOutputLoss`, 8 chunks).
    Chunked,
    /// Fused linear + cross-entropy that never materializes the logits (Liger kernel).
    Fused,
}

/// The `training` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Training {
    /// Sequences per GPU per forward/backward pass (micro-batch). Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub micro_batch_size: u64,
    /// Tokens per sequence. Default 2048.
    #[serde(deserialize_with = "units::de_count")]
    pub seq_len: u64,
    /// Micro-batches accumulated before each optimizer step. Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub gradient_accumulation_steps: u64,
    /// Default `amp_bf16`.
    pub precision: Precision,
    /// Default `adamw`.
    pub optimizer: Optimizer,
    /// Default `foreach`.
    pub optimizer_impl: OptimizerImpl,
    /// Default `none`. Also accepts `true` (= full) and `false`.
    #[serde(deserialize_with = "de_recompute")]
    pub activation_checkpointing: Recompute,
    /// Keep each checkpointed layer's saved input in pinned host memory instead of on the
    /// GPU (`torch.autograd.graph.save_on_cpu` around the layer's checkpoint: transformers
    /// `activation_checkpointing_enable(offload=True)`, torchtune
    /// `enable_activation_offloading` with checkpointing); backward copies it back one layer
    /// at a time. Needs `activation_checkpointing` `full` or `selective_op`. Default false.
    #[serde(skip_serializing_if = "is_false")]
    pub activation_offloading: bool,
    /// `torch.compile` of each decoder layer (torchtitan `apply_compile`, torchtune
    /// `compile_model`): inductor's partitioner (`min_cut_rematerialization_partition`)
    /// decides what a layer saves for backward, recomputing elementwise ops instead of
    /// keeping their outputs. Modelled for dense PyTorch models with SDPA / flash attention,
    /// recomputation `none` or `full`, without LoRA. Default false.
    #[serde(skip_serializing_if = "is_false")]
    pub compile: bool,
    /// Default `sdpa`.
    pub attention: Attention,
    /// Default `standard`.
    pub loss: LossImpl,
    /// Accumulate gradients in an fp32 buffer (Megatron `main_grad`, DeepSpeed
    /// `data_types.grad_accum_dtype: fp32`). Default: what the engine does (Megatron yes
    /// with bf16; DeepSpeed bf16 at ZeRO stage 0 yes; otherwise no).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accumulate_grads_in_fp32: Option<bool>,
    /// Apply the optimizer step inside backward, freeing each gradient at once
    /// (torchtune `optimizer_in_bwd`). Default false.
    #[serde(skip_serializing_if = "is_false")]
    pub optimizer_in_backward: bool,
    /// LoRA / QLoRA fine-tuning. Default: full training.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora: Option<Lora>,
}

impl Default for Training {
    fn default() -> Self {
        Training {
            micro_batch_size: 1,
            seq_len: 2048,
            gradient_accumulation_steps: 1,
            precision: Precision::default(),
            optimizer: Optimizer::default(),
            optimizer_impl: OptimizerImpl::default(),
            activation_checkpointing: Recompute::None,
            attention: Attention::default(),
            loss: LossImpl::default(),
            accumulate_grads_in_fp32: None,
            activation_offloading: false,
            compile: false,
            optimizer_in_backward: false,
            lora: None,
        }
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn de_recompute<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Recompute, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Bool(true) => Ok(Recompute::Full),
        Value::Bool(false) | Value::Null => Ok(Recompute::None),
        Value::String(s) => match s.as_str() {
            "none" => Ok(Recompute::None),
            "selective" => Ok(Recompute::Selective),
            "full" => Ok(Recompute::Full),
            "selective_op" => Ok(Recompute::SelectiveOp),
            _ => Err(D::Error::custom(format!(
                "unknown value {s:?}; expected \"none\", \"selective\", \"selective_op\" or \"full\""
            ))),
        },
        v => Err(D::Error::custom(format!(
            "expected \"none\", \"selective\", \"selective_op\", \"full\" or true/false, got {v}"
        ))),
    }
}

/// The `parallelism` section. Sizes multiply to the GPU count:
/// `data x tensor x pipeline x context = num_gpus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Parallelism {
    /// Data-parallel size (the ZeRO / FSDP sharding group). Default: `num_gpus / (tensor x
    /// pipeline x context)`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub data_parallel_size: Option<u64>,
    /// Tensor-parallel size (Megatron TP). Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub tensor_parallel_size: u64,
    /// Pipeline-parallel size. Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub pipeline_parallel_size: u64,
    /// Megatron sequence parallelism (splits LayerNorm/dropout activations over TP). Default false.
    pub sequence_parallel: bool,
    /// Context-parallel size (Megatron CP, DeepSpeed-Ulysses `sequence_parallel_size`):
    /// splits the sequence. Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub context_parallel_size: u64,
    /// Expert-parallel size (MoE experts divided over EP ranks). Default 1.
    #[serde(deserialize_with = "units::de_count")]
    pub expert_parallel_size: u64,
    /// HSDP: data-parallel replicas, each sharding over `data_parallel_size /
    /// data_parallel_replicate_size` ranks (FSDP2 on a 2-D mesh: torchtitan
    /// `data_parallel_replicate_degree`; the shard degree is `data_parallel_shard_degree`).
    /// Default 1 (every data-parallel rank in one shard group).
    #[serde(deserialize_with = "units::de_count")]
    pub data_parallel_replicate_size: u64,
    /// The logits stay sharded on the vocabulary over tensor-parallel ranks and the
    /// cross-entropy is computed on the shards (torchtitan `loss_parallel`, Megatron's
    /// vocab-parallel cross-entropy); `false` gathers every rank's logits whole. Default true.
    pub loss_parallel: bool,
    /// Expert tensor-parallel size: routed experts split over this many ranks instead of
    /// `tensor_parallel_size` (Megatron-Core `--expert-tensor-parallel-size`, MoE parallel
    /// folding). Default: `tensor_parallel_size`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub expert_tensor_parallel_size: Option<u64>,
    /// Pipeline schedule (`torch.distributed.pipelining`: `ScheduleGPipe`, `Schedule1F1B`,
    /// `ScheduleInterleaved1F1B`; Megatron's is 1F1B, interleaved with virtual stages).
    /// Default: `interleaved_1f1b` with virtual stages, else `1f1b`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_schedule: Option<PipelineSchedule>,
    /// Virtual pipeline stages per rank (Megatron interleaved schedule). Default none.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub virtual_pipeline_parallel_size: Option<u64>,
    /// Layers on the first pipeline stage, for an uneven split (Megatron
    /// `--decoder-first-pipeline-num-layers`). Default: an even split.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_pipeline_stage_layers: Option<u64>,
    /// Layers on the last pipeline stage (Megatron `--decoder-last-pipeline-num-layers`).
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_pipeline_stage_layers: Option<u64>,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            data_parallel_size: None,
            tensor_parallel_size: 1,
            pipeline_parallel_size: 1,
            sequence_parallel: false,
            context_parallel_size: 1,
            expert_parallel_size: 1,
            data_parallel_replicate_size: 1,
            loss_parallel: true,
            expert_tensor_parallel_size: None,
            pipeline_schedule: None,
            virtual_pipeline_parallel_size: None,
            first_pipeline_stage_layers: None,
            last_pipeline_stage_layers: None,
        }
    }
}

/// A pipeline schedule: how many micro-batches each stage holds activations for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PipelineSchedule {
    /// All forwards, then all backwards: every stage holds every micro-batch
    /// (`ScheduleGPipe`).
    Gpipe,
    /// One forward, one backward: stage `s` of `pp` holds `pp - s` micro-batches
    /// (`Schedule1F1B`, Megatron without virtual stages).
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// 1F1B over virtual stages (`ScheduleInterleaved1F1B`, Megatron with
    /// `virtual_pipeline_parallel_size`).
    #[serde(rename = "interleaved_1f1b")]
    Interleaved1F1B,
}

/// A tensor dtype of a mixed-precision policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    Bf16,
    Fp16,
    Fp32,
}

impl Dtype {
    /// Bytes per element.
    pub const fn bytes(self) -> u64 {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp32 => 4,
        }
    }
}

/// FSDP2 `reshard_after_forward`: free the unsharded parameters after forward (`true`), keep
/// them until backward (`false`), or keep a copy sharded over a smaller group of this many
/// ranks (an int dividing the shard group, torch `fully_shard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ReshardAfterForward {
    Always(bool),
    /// Ranks of the smaller group.
    Group(u64),
}

impl Default for ReshardAfterForward {
    fn default() -> Self {
        ReshardAfterForward::Always(true)
    }
}

/// Where DeepSpeed offloads optimizer states or parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    #[default]
    None,
    Cpu,
    Nvme,
}

/// FSDP sharding strategy (`torch.distributed.fsdp.ShardingStrategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ShardingStrategy {
    /// Parameters, gradients and optimizer states sharded (ZeRO-3 like).
    #[default]
    FullShard,
    /// Gradients and optimizer states sharded; parameters kept unsharded between forward
    /// and backward (ZeRO-2 like).
    ShardGradOp,
    /// Nothing sharded (DDP like).
    NoShard,
    /// FULL_SHARD within a node, replicated across nodes.
    HybridShard,
}

impl ShardingStrategy {
    /// The name as written in the config and in PyTorch (`FULL_SHARD`).
    pub const fn name(self) -> &'static str {
        match self {
            ShardingStrategy::FullShard => "FULL_SHARD",
            ShardingStrategy::ShardGradOp => "SHARD_GRAD_OP",
            ShardingStrategy::NoShard => "NO_SHARD",
            ShardingStrategy::HybridShard => "HYBRID_SHARD",
        }
    }
}

/// DeepSpeed ZeRO options (names as in `ds_config.json` `zero_optimization`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ZeroOptions {
    /// 0-3. Default 0.
    pub zero_stage: u8,
    pub offload_optimizer: Offload,
    pub offload_param: Offload,
    /// Elements per gradient reduce bucket (`reduce_bucket_size`, default 5e8).
    #[serde(deserialize_with = "units::de_count")]
    pub reduce_bucket_size: u64,
    /// Double-buffered reduce buckets (`overlap_comm`). Default as DeepSpeed's
    /// (`zero/config.py overlap_comm_valid`): true at stage 3, false otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_comm: Option<bool>,
    /// Elements prefetched ahead by ZeRO-3 (`stage3_prefetch_bucket_size`, default 5e7).
    #[serde(deserialize_with = "units::de_count")]
    pub stage3_prefetch_bucket_size: u64,
    /// Most gathered parameter elements alive at once in ZeRO-3
    /// (`stage3_max_live_parameters`, default 1e9).
    #[serde(deserialize_with = "units::de_count")]
    pub stage3_max_live_parameters: u64,
    /// Parameters smaller than this stay unsharded in ZeRO-3
    /// (`stage3_param_persistence_threshold`, default 1e5).
    #[serde(deserialize_with = "units::de_count")]
    pub stage3_param_persistence_threshold: u64,
    /// Gathered parameters whose next use is fewer than this many fetched elements away
    /// stay gathered (`stage3_max_reuse_distance`, default 1e9).
    #[serde(deserialize_with = "units::de_count")]
    pub stage3_max_reuse_distance: u64,
    /// Elements per optimizer sub-group in ZeRO-3: the step upcasts and updates one
    /// sub-group at a time (`sub_group_size`, default 1e9). Sub-groups hold whole
    /// parameters, each filled until it reaches this size; 0 makes every parameter one.
    #[serde(deserialize_with = "units::de_count")]
    pub sub_group_size: u64,
    /// ZeRO-3 as DeepSpeed ran it before 0.6.0 (2022-03; the fetch path PR #1453 rewrote):
    /// every sub-module's fetch that finds its parameters being gathered waits for the
    /// device (`_synchronize_communication`: `torch.cuda.synchronize()`), and every
    /// parameter's all-gather is issued after another (`_allgather_param`), so only the
    /// next `stage3_prefetch_bucket_size` elements are gathered while a sub-module computes
    /// (DeepSpeed v0.3.15 `runtime/zero/stage3.py` `fetch_sub_module`,
    /// `prefetch_next_sub_modules`, `partition_parameters.py` `_allgather_param`). Step
    /// time only ([`crate::engines::Collectives::Modules`]' `blocking`). Default `false`
    /// (DeepSpeed 0.6 and later).
    pub stage3_blocking_fetch: bool,
}

impl Default for ZeroOptions {
    fn default() -> Self {
        ZeroOptions {
            zero_stage: 0,
            offload_optimizer: Offload::None,
            offload_param: Offload::None,
            reduce_bucket_size: 500_000_000,
            overlap_comm: None,
            stage3_prefetch_bucket_size: 50_000_000,
            stage3_max_live_parameters: 1_000_000_000,
            stage3_param_persistence_threshold: 100_000,
            stage3_max_reuse_distance: 1_000_000_000,
            sub_group_size: 1_000_000_000,
            stage3_blocking_fetch: false,
        }
    }
}

impl ZeroOptions {
    /// `overlap_comm` as DeepSpeed resolves it: the config's, else true at stage 3.
    pub fn overlap_comm(&self) -> bool {
        self.overlap_comm.unwrap_or(self.zero_stage == 3)
    }
}

/// PyTorch DDP options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct DdpOptions {
    /// Gradient bucket size in MiB (`bucket_cap_mb`, default 25).
    pub bucket_cap_mb: f64,
    /// Gradients are views into the buckets (`gradient_as_bucket_view`, default false:
    /// the buckets are a second copy of all gradients).
    pub gradient_as_bucket_view: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: 25.0,
            gradient_as_bucket_view: false,
        }
    }
}

/// PyTorch FSDP options: FSDP2 (`fully_shard`, per-parameter DTensor shards; torchtitan,
/// accelerate `fsdp_version: 2`, torchtune) or FSDP1 (`FullyShardedDataParallel`, flat
/// parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FsdpOptions {
    /// 2 (`fully_shard`, default) or 1 (`FullyShardedDataParallel`).
    pub fsdp_version: u8,
    /// FSDP1 `ShardingStrategy`. Default `FULL_SHARD`. (FSDP2: `reshard_after_forward` and
    /// `parallelism.data_parallel_replicate_size` say the same.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding_strategy: Option<ShardingStrategy>,
    /// FSDP1: GPUs per shard group for HYBRID_SHARD. Default: `hardware.gpus_per_node`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub hybrid_shard_group_size: Option<u64>,
    /// FSDP2 `reshard_after_forward` (default true; false under pipeline parallelism, as
    /// torchtitan). See [`ReshardAfterForward`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reshard_after_forward: Option<ReshardAfterForward>,
    /// `MixedPrecisionPolicy.param_dtype` (FSDP1 `MixedPrecision.param_dtype`): the dtype
    /// parameters are all-gathered and computed in. Default: bf16 / fp16 under AMP, bf16
    /// under `fp8` (torchao float8 computes in bf16), the weights' dtype otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_dtype: Option<Dtype>,
    /// `MixedPrecisionPolicy.reduce_dtype`: the dtype gradients are reduce-scattered in.
    /// Default: fp32 under AMP and `fp8`, `param_dtype` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_dtype: Option<Dtype>,
    /// Parameters, gradients and optimizer states in CPU memory (FSDP2 `CPUOffloadPolicy`,
    /// FSDP1 `CPUOffload(offload_params=True)`).
    pub cpu_offload: bool,
    /// FSDP2 under torchao float8 (`precision: fp8`): the float8 linear layers' weights are
    /// cast to float8 before the all-gather, so they are gathered and held unsharded in 1
    /// byte per element instead of `param_dtype` (torchao `Float8LinearConfig`
    /// `enable_fsdp_float8_all_gather`, `float8/fsdp_utils.py`
    /// `WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather`; torchtitan
    /// `float8.enable_fsdp_float8_all_gather`). Default false. Errors: set with FSDP1 or
    /// another precision.
    pub float8_all_gather: bool,
}

impl Default for FsdpOptions {
    fn default() -> Self {
        FsdpOptions {
            fsdp_version: 2,
            sharding_strategy: None,
            hybrid_shard_group_size: None,
            reshard_after_forward: None,
            param_dtype: None,
            reduce_dtype: None,
            cpu_offload: false,
            float8_all_gather: false,
        }
    }
}

/// Megatron-LM options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct MegatronOptions {
    /// Shard fp32 master weights and optimizer states over DP (`--use-distributed-optimizer`).
    pub distributed_optimizer: bool,
    /// Megatron-LM's scatter/gather optimization of the pipeline's sends
    /// (`--scatter-gather-tensors-in-pipeline`, on by default in `megatron/p2p_communication.py`
    /// until the pipeline moved into Megatron-Core, commit 3c92fa93 of 2023-03, whose
    /// `p2p_communication.py` sends the whole tensor): without sequence parallelism each
    /// tensor-parallel rank sends `1/t` of the activation or gradient to the next stage and
    /// the receiver all-gathers it over NVLink (Narayanan et al. 2021 Sec. 4.1). Step time
    /// only. Default `false` (Megatron-Core).
    pub scatter_gather_tensors_in_pipeline: bool,
}

/// Megatron-DeepSpeed options: Megatron model parallelism with DeepSpeed ZeRO over DP;
/// the same `zero_optimization` options as `deepspeed` (with pipeline parallelism, ZeRO
/// stage 0 or 1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct MegatronDeepspeedOptions(pub ZeroOptions);

/// The `engine` section, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Engine {
    /// PyTorch DistributedDataParallel (also: a single GPU).
    Ddp(DdpOptions),
    /// DeepSpeed with ZeRO.
    Deepspeed(ZeroOptions),
    /// PyTorch Fully Sharded Data Parallel.
    Fsdp(FsdpOptions),
    /// Megatron-LM / Megatron-Core.
    Megatron(MegatronOptions),
    /// Megatron-DeepSpeed.
    MegatronDeepspeed(MegatronDeepspeedOptions),
}

impl Default for Engine {
    fn default() -> Self {
        Engine::Ddp(DdpOptions::default())
    }
}

/// The `hardware` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Hardware {
    /// GPUs in the job. Default: the product of the parallel sizes, else 1.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub num_gpus: Option<u64>,
    /// A GPU preset id (`h100-80gb`, `a100-80gb`, ...). Default `h100-80gb` unless
    /// `gpu_memory_gb` is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Memory per GPU: a number of GB (10^9 bytes) or a string with a unit ("80GB",
    /// "80GiB"). Overrides the preset's capacity.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_gb"
    )]
    pub gpu_memory_gb: Option<GbInput>,
    /// GPUs per node (NCCL topology, FSDP hybrid shard group). Default 8.
    #[serde(deserialize_with = "units::de_count")]
    pub gpus_per_node: u64,
    /// CPU memory per node: a number of GB (10^9 bytes) or a string with a unit ("2TiB").
    /// Offloaded and paged states must fit in it. Default: the GPU preset's typical node
    /// (`presets/gpus.json`, `node_cpu_memory_gib`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_gb"
    )]
    pub cpu_memory_gb: Option<GbInput>,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            num_gpus: None,
            gpu: None,
            gpu_memory_gb: None,
            gpus_per_node: 8,
            cpu_memory_gb: None,
        }
    }
}

fn ser_gb<S: Serializer>(v: &Option<GbInput>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        // Written back as exact bytes with a unit so that the value round-trips.
        Some(GbInput(b)) if b % units::GB == 0 => s.serialize_u64(b / units::GB),
        Some(GbInput(b)) => s.serialize_str(&format!("{b}B")),
        None => s.serialize_none(),
    }
}

/// The `overheads` section: memory outside the tensors, reported apart from
/// `peak_allocated_bytes` and included in `total_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Overheads {
    /// CUDA context per GPU in MiB. Default: the GPU preset's measured value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_context_mib: Option<f64>,
    /// Fraction of the peak allocation the caching allocator holds on top
    /// (reserved / allocated - 1; fragmentation and rounding). Default 0.0.
    pub allocator_reserve_fraction: f64,
}

impl Default for Overheads {
    fn default() -> Self {
        Overheads {
            cuda_context_mib: None,
            allocator_reserve_fraction: 0.0,
        }
    }
}

impl Config {
    /// The document as pretty JSON (always the current `schema_version`).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

choices!(Precision {
    AmpBf16 => "AMP bf16 (fp32 master weights)",
    AmpFp16 => "AMP fp16 (fp32 master weights)",
    Bf16 => "pure bf16",
    Fp16 => "pure fp16",
    Fp32 => "fp32",
    Fp8 => "fp8 (Transformer Engine / torchao float8)",
});
choices!(VllmVersion {
    V0_19 => "0.19",
    Legacy => "earlier (sort-based sampler)",
});
choices!(QuantizedModules {
    AllLinear => "all linear layers",
    Experts => "routed experts only",
});
choices!(Recompute {
    None => "none",
    Selective => "selective",
    SelectiveOp => "selective per op (torchtitan)",
    Full => "full",
});
choices!(Attention {
    Sdpa => "SDPA",
    Flash => "FlashAttention-2",
    FlashTriton => "FlashAttention (Triton)",
    Eager => "eager",
});
choices!(LossImpl {
    Standard => "standard",
    Chunked => "chunked (8)",
    Fused => "fused linear CE",
});
choices!(Offload {
    None => "none",
    Cpu => "CPU",
    Nvme => "NVMe",
});
choices!(PipelineSchedule {
    OneFOneB => "1F1B",
    Interleaved1F1B => "interleaved 1F1B",
    Gpipe => "GPipe",
});
choices!(Dtype {
    Bf16 => "bf16",
    Fp16 => "fp16",
    Fp32 => "fp32",
});
choices!(ShardingStrategy {
    FullShard => "FULL_SHARD",
    ShardGradOp => "SHARD_GRAD_OP",
    HybridShard => "HYBRID_SHARD",
    NoShard => "NO_SHARD",
});
choices!(WeightFormat {
    Bf16 => "bf16",
    Fp16 => "fp16",
    Fp8 => "FP8 (per-channel scales)",
    Int8 => "int8 (LLM.int8)",
    Int4 => "int4 GPTQ",
    Awq => "int4 AWQ",
    Nf4 => "NF4 (bitsandbytes)",
    Mxfp4 => "MXFP4",
    Fp32 => "fp32",
});
choices!(KvCacheDtype {
    Auto => "model dtype",
    Fp8 => "fp8",
    Int8 => "int8",
    Int4 => "int4",
});
choices!(InferenceEngine {
    Hf => "transformers generate",
    Vllm => "vLLM serving",
    Sglang => "SGLang serving",
});
