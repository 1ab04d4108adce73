//! The config document (API boundary): schema version 1, JSON via serde.
//!
//! ```json
//! {"schema_version": 1,
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
//! Documents without `schema_version` in the seed format are migrated ([`crate::seed`]).

use crate::error::FieldError;
use crate::hf::short;
use crate::optimizer::Optimizer;
use crate::units::{self, GbInput};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

fn one() -> u64 {
    1
}
fn schema_v1() -> u32 {
    SCHEMA_VERSION
}
fn default_seq_len() -> u64 {
    2048
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// A whole config document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Always 1 for this schema. Older documents are migrated on load.
    #[serde(default = "schema_v1")]
    pub schema_version: u32,
    /// `training` (default; with `training.lora` it is fine-tuning) or `inference`. When left
    /// out, a document with an `inference` section and no `training` section is inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// The model: a preset, a Hugging Face `config.json`, or HF-named fields. See [`ModelSpec`].
    #[serde(default)]
    pub model: ModelSpec,
    #[serde(default)]
    pub training: Training,
    /// Serving / generation settings (mode `inference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference: Option<Inference>,
    #[serde(default)]
    pub parallelism: Parallelism,
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub hardware: Hardware,
    /// Fixed overheads outside the tensors (CUDA context, workspaces, allocator reserve).
    #[serde(default)]
    pub overheads: Overheads,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            schema_version: SCHEMA_VERSION,
            mode: None,
            model: ModelSpec::preset("llama-3.1-8b"),
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
        match self.mode {
            Some(m) => m,
            None if self.inference.is_some() && self.training == Training::default() => {
                Mode::Inference
            }
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
}

fn default_context() -> u64 {
    4096
}
fn default_util() -> f64 {
    0.9
}
fn default_batched() -> u64 {
    8192
}
fn default_seqs() -> u64 {
    1024
}
fn default_group() -> u64 {
    128
}
fn yes() -> bool {
    true
}

/// The `inference` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Inference {
    /// Sequences generated together. Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub batch_size: u64,
    /// Tokens per sequence: prompt plus generated. Default 4096.
    #[serde(default = "default_context", deserialize_with = "units::de_count")]
    pub context_len: u64,
    /// Prompt tokens (the prefill). Default: `context_len`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_len: Option<u64>,
    /// Default `bf16`.
    #[serde(default)]
    pub weight_format: WeightFormat,
    /// Input channels per quantization group for `int4` / `awq` (default 128).
    #[serde(default = "default_group", deserialize_with = "units::de_count")]
    pub group_size: u64,
    /// Asymmetric quantization with zero points (`int4` / `awq`; default true).
    #[serde(default = "yes")]
    pub zero_point: bool,
    /// Double quantization of the NF4 absmax (bitsandbytes `bnb_4bit_use_double_quant`, default true).
    #[serde(default = "yes")]
    pub double_quant: bool,
    /// Default `auto`.
    #[serde(default)]
    pub kv_cache_dtype: KvCacheDtype,
    /// Default `sdpa`.
    #[serde(default)]
    pub attention: Attention,
    /// Prefill in chunks of this many tokens (chunked prefill). Default: the whole prompt.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prefill_chunk: Option<u64>,
    /// Positions whose logits are computed (transformers `logits_to_keep`). Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub logits_to_keep: u64,
    /// Default `hf`.
    #[serde(default)]
    pub engine: InferenceEngine,
    /// vLLM `gpu_memory_utilization` (default 0.9).
    #[serde(default = "default_util")]
    pub gpu_memory_utilization: f64,
    /// vLLM `max_model_len` (default: `context_len`).
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_model_len: Option<u64>,
    /// vLLM `max_num_batched_tokens` (default 8192).
    #[serde(default = "default_batched", deserialize_with = "units::de_count")]
    pub max_num_batched_tokens: u64,
    /// vLLM `max_num_seqs` (default 1024).
    #[serde(default = "default_seqs", deserialize_with = "units::de_count")]
    pub max_num_seqs: u64,
}

impl Default for Inference {
    fn default() -> Self {
        Inference {
            batch_size: 1,
            context_len: 4096,
            prompt_len: None,
            weight_format: WeightFormat::Bf16,
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

fn default_rank() -> u64 {
    8
}
fn default_alpha() -> f64 {
    16.0
}
fn default_targets() -> TargetModules {
    TargetModules::List(vec!["q_proj".into(), "v_proj".into()])
}

/// LoRA / QLoRA fine-tuning (PEFT `LoraConfig`): adapters `B (out x r) A (r x in)` on the
/// targeted modules; the base model is frozen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Lora {
    /// `r` (default 8).
    #[serde(default = "default_rank", deserialize_with = "units::de_count")]
    pub rank: u64,
    /// `lora_alpha` (default 16; no effect on memory).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Default `["q_proj", "v_proj"]`.
    #[serde(default = "default_targets")]
    pub target_modules: TargetModules,
    /// `lora_dropout` (default 0): a dropout mask and copy per targeted input when > 0.
    #[serde(default)]
    pub dropout: f64,
    /// Format of the frozen base weights: `bf16` (LoRA), `nf4` (QLoRA), `int8`, ...
    /// Default `bf16` (`fp32` under precision fp32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_weight_format: Option<WeightFormat>,
    /// Adapter weights in fp32 (PEFT's default `autocast_adapter_dtype=True`); false: in the
    /// training dtype.
    #[serde(default = "yes")]
    pub adapters_fp32: bool,
}

impl Default for Lora {
    fn default() -> Self {
        Lora {
            rank: 8,
            alpha: 16.0,
            target_modules: default_targets(),
            dropout: 0.0,
            base_weight_format: None,
            adapters_fp32: true,
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
    /// FP8 compute (NVIDIA Transformer Engine) with bf16 weights and fp32 master weights.
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

/// Which implementation of a PyTorch optimizer runs the step (`torch.optim` `foreach=` /
/// `fused=`). DeepSpeed and Megatron use their own fused Adam/LAMB kernels regardless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OptimizerImpl {
    /// Multi-tensor `_foreach_*` ops over all parameters at once: PyTorch's default on CUDA.
    /// Allocates the optimizer's temporaries for every parameter at once.
    #[default]
    Foreach,
    /// One fused kernel (`fused=True`; HF Trainer `adamw_torch_fused`, its default with
    /// torch >= 2.8): no temporaries.
    Fused,
    /// One parameter at a time (`foreach=False`): temporaries of the largest tensor only.
    ForLoop,
}

/// The `training` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Sequences per GPU per forward/backward pass (micro-batch). Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub micro_batch_size: u64,
    /// Tokens per sequence. Default 2048.
    #[serde(default = "default_seq_len", deserialize_with = "units::de_count")]
    pub seq_len: u64,
    /// Micro-batches accumulated before each optimizer step. Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub gradient_accumulation_steps: u64,
    /// Default `amp_bf16`.
    #[serde(default)]
    pub precision: Precision,
    /// Default `adamw`.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Default `foreach`.
    #[serde(default)]
    pub optimizer_impl: OptimizerImpl,
    /// Default `none`. Also accepts `true` (= full) and `false`.
    #[serde(default, deserialize_with = "de_recompute")]
    pub activation_checkpointing: Recompute,
    /// Default `sdpa`.
    #[serde(default)]
    pub attention: Attention,
    /// Default `standard`.
    #[serde(default)]
    pub loss: LossImpl,
    /// Accumulate gradients in an fp32 buffer (Megatron `main_grad`, DeepSpeed
    /// `data_types.grad_accum_dtype: fp32`). Default: what the engine does (Megatron yes
    /// with bf16; DeepSpeed bf16 with ZeRO 0-1 yes; otherwise no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulate_grads_in_fp32: Option<bool>,
    /// Apply the optimizer step inside backward, freeing each gradient at once
    /// (torchtune `optimizer_in_bwd`). Default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optimizer_in_backward: bool,
    /// LoRA / QLoRA fine-tuning. Default: full training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
            optimizer_in_backward: false,
            lora: None,
        }
    }
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
            _ => Err(D::Error::custom(format!(
                "unknown value {s:?}; expected \"none\", \"selective\" or \"full\""
            ))),
        },
        v => Err(D::Error::custom(format!(
            "expected \"none\", \"selective\", \"full\" or true/false, got {v}"
        ))),
    }
}

/// The `parallelism` section. Sizes multiply to the GPU count:
/// `data x tensor x pipeline x context = num_gpus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
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
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub tensor_parallel_size: u64,
    /// Pipeline-parallel size. Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub pipeline_parallel_size: u64,
    /// Megatron sequence parallelism (splits LayerNorm/dropout activations over TP). Default false.
    #[serde(default)]
    pub sequence_parallel: bool,
    /// Context-parallel size (Megatron CP, DeepSpeed-Ulysses `sequence_parallel_size`):
    /// splits the sequence. Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub context_parallel_size: u64,
    /// Expert-parallel size (MoE experts divided over EP ranks). Default 1.
    #[serde(default = "one", deserialize_with = "units::de_count")]
    pub expert_parallel_size: u64,
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
            virtual_pipeline_parallel_size: None,
            first_pipeline_stage_layers: None,
            last_pipeline_stage_layers: None,
        }
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

fn zero_bucket() -> u64 {
    500_000_000
}
fn prefetch_bucket() -> u64 {
    50_000_000
}
fn max_live() -> u64 {
    1_000_000_000
}
fn persistence() -> u64 {
    100_000
}
fn sub_group() -> u64 {
    1_000_000_000
}
fn bucket_mb() -> f64 {
    25.0
}

/// DeepSpeed ZeRO options (names as in `ds_config.json` `zero_optimization`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ZeroOptions {
    /// 0-3. Default 0.
    #[serde(default)]
    pub zero_stage: u8,
    #[serde(default)]
    pub offload_optimizer: Offload,
    #[serde(default)]
    pub offload_param: Offload,
    /// Elements per gradient reduce bucket (`reduce_bucket_size`, default 5e8).
    #[serde(default = "zero_bucket", deserialize_with = "units::de_count")]
    pub reduce_bucket_size: u64,
    /// Double-buffered reduce buckets (`overlap_comm`). Default false.
    #[serde(default)]
    pub overlap_comm: bool,
    /// Elements prefetched ahead by ZeRO-3 (`stage3_prefetch_bucket_size`, default 5e7).
    #[serde(default = "prefetch_bucket", deserialize_with = "units::de_count")]
    pub stage3_prefetch_bucket_size: u64,
    /// Most gathered parameter elements alive at once in ZeRO-3
    /// (`stage3_max_live_parameters`, default 1e9).
    #[serde(default = "max_live", deserialize_with = "units::de_count")]
    pub stage3_max_live_parameters: u64,
    /// Parameters smaller than this stay unsharded in ZeRO-3
    /// (`stage3_param_persistence_threshold`, default 1e5).
    #[serde(default = "persistence", deserialize_with = "units::de_count")]
    pub stage3_param_persistence_threshold: u64,
    /// Elements per optimizer sub-group in ZeRO-3: the step upcasts and updates one
    /// sub-group at a time (`sub_group_size`, default 1e9).
    #[serde(default = "sub_group", deserialize_with = "units::de_count")]
    pub sub_group_size: u64,
}

impl Default for ZeroOptions {
    fn default() -> Self {
        ZeroOptions {
            zero_stage: 0,
            offload_optimizer: Offload::None,
            offload_param: Offload::None,
            reduce_bucket_size: zero_bucket(),
            overlap_comm: false,
            stage3_prefetch_bucket_size: prefetch_bucket(),
            stage3_max_live_parameters: max_live(),
            stage3_param_persistence_threshold: persistence(),
            sub_group_size: sub_group(),
        }
    }
}

/// PyTorch DDP options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DdpOptions {
    /// Gradient bucket size in MiB (`bucket_cap_mb`, default 25).
    #[serde(default = "bucket_mb")]
    pub bucket_cap_mb: f64,
    /// Gradients are views into the buckets (`gradient_as_bucket_view`, default false:
    /// the buckets are a second copy of all gradients).
    #[serde(default)]
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

/// PyTorch FSDP options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FsdpOptions {
    #[serde(default)]
    pub sharding_strategy: ShardingStrategy,
    /// GPUs per shard group for HYBRID_SHARD. Default: `hardware.gpus_per_node`.
    #[serde(
        default,
        deserialize_with = "units::de_opt_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub hybrid_shard_group_size: Option<u64>,
    /// Parameters, gradients and optimizer states in CPU memory (`CPUOffload(offload_params=True)`).
    #[serde(default)]
    pub cpu_offload: bool,
}

/// Megatron-LM options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MegatronOptions {
    /// Shard fp32 master weights and optimizer states over DP (`--use-distributed-optimizer`).
    #[serde(default)]
    pub distributed_optimizer: bool,
}

/// Megatron-DeepSpeed options: Megatron model parallelism with DeepSpeed ZeRO over DP.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MegatronDeepspeedOptions {
    /// 0-3 (with pipeline parallelism at most 1). Default 1.
    #[serde(default)]
    pub zero_stage: u8,
    #[serde(default)]
    pub offload_optimizer: Offload,
    #[serde(default)]
    pub offload_param: Offload,
}

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

impl Engine {
    /// The `type` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            Engine::Ddp(_) => "ddp",
            Engine::Deepspeed(_) => "deepspeed",
            Engine::Fsdp(_) => "fsdp",
            Engine::Megatron(_) => "megatron",
            Engine::MegatronDeepspeed(_) => "megatron_deepspeed",
        }
    }
}

fn gpus_per_node() -> u64 {
    8
}

/// The `hardware` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default = "gpus_per_node", deserialize_with = "units::de_count")]
    pub gpus_per_node: u64,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            num_gpus: None,
            gpu: None,
            gpu_memory_gb: None,
            gpus_per_node: 8,
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

fn reserve_default() -> f64 {
    0.0
}

/// The `overheads` section: memory outside the tensors, reported apart from
/// `peak_allocated_bytes` and included in `total_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Overheads {
    /// CUDA context per GPU in MiB. Default: the GPU preset's measured value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_context_mib: Option<f64>,
    /// Fraction of the peak allocation the caching allocator holds on top
    /// (reserved / allocated - 1; fragmentation and rounding). Default 0.0.
    #[serde(default = "reserve_default")]
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
    /// Parses a config document from JSON text (schema 1, or the seed format, which is
    /// migrated). Errors: invalid JSON (field `""`), type errors and unknown keys, each
    /// naming the field path and the value.
    pub fn from_json_str(text: &str) -> Result<Config, Vec<FieldError>> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| vec![FieldError::new("", "", format!("invalid JSON: {e}"))])?;
        Config::from_value(v)
    }

    /// Parses a config document already read as JSON; see [`Config::from_json_str`].
    pub fn from_value(v: Value) -> Result<Config, Vec<FieldError>> {
        let Value::Object(map) = &v else {
            return Err(vec![FieldError::new(
                "",
                short(&v),
                "a config must be a JSON object",
            )]);
        };
        match map.get("schema_version") {
            None if crate::seed::looks_like_seed(map) => return crate::seed::migrate(map),
            None => {}
            Some(Value::Number(n)) if n.as_u64() == Some(SCHEMA_VERSION as u64) => {}
            Some(Value::Number(n)) if n.as_u64() == Some(0) => return crate::seed::migrate(map),
            Some(x) => {
                return Err(vec![FieldError::new(
                    "schema_version",
                    short(x),
                    format!("this build reads schema_version 0 (seed format) or {SCHEMA_VERSION}"),
                )]);
            }
        }
        from_value_typed(&v)
    }

    /// The document as pretty JSON (always `schema_version: 1`).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Deserializes a schema-1 document, turning the first serde error into a [`FieldError`]
/// with the field path and the offending value.
pub(crate) fn from_value_typed(v: &Value) -> Result<Config, Vec<FieldError>> {
    serde_path_to_error::deserialize::<_, Config>(v).map_err(|e| {
        let path = e.path().to_string();
        let mut path = if path == "." { String::new() } else { path };
        let msg = e.inner().to_string();
        // Internally tagged sections (`engine`) are buffered, so serde reports their unknown
        // keys at the section: point at the key itself.
        if let Some(key) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            let ends_with_key = path == key || path.ends_with(&format!(".{key}"));
            if !ends_with_key && lookup(v, &format!("{path}.{key}")).is_some() {
                path = format!("{path}.{key}");
            }
        }
        // serde reports an unknown key at the path of the key itself.
        let value = lookup(v, &path).map(short).unwrap_or_default();
        vec![FieldError::new(path, value, tidy(&msg))]
    })
}

/// Finds the value at a dotted path (`training.seq_len`).
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    let mut cur = v;
    for seg in path.split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// Makes serde's messages read as "what is allowed".
fn tidy(msg: &str) -> String {
    let m = msg
        .replace("unknown variant", "unknown value")
        .replace("unknown field", "unknown key");
    match m.split_once(" at line ") {
        Some((a, _)) => a.to_string(),
        None => m,
    }
}
