//! The form's fields: one table ([`SECTIONS`]) of every input of the config schema but the
//! model and the GPU, with its label, unit, help, kind, the choices of a select (from the
//! schema's enums and tables), its default (from the schema's `Default`s), its bounds, and
//! which tasks, engines, runtimes and weight formats it applies to (from the engines' and
//! runtimes' own facts). The web app builds its form from this table and computes nothing
//! of its own; the bounds are the ones validation enforces (checked by a test).

use crate::config::VllmVersion;
use crate::config::{
    Attention, Config, Dtype, Engine, Inference, InferenceEngine, KvCacheDtype, Lora, LossImpl,
    Mode, Offload, PipelineSchedule, Precision, QuantizedModules, Recompute, ShardingStrategy,
    Training, WeightFormat,
};
use crate::engines::{ENGINES, Parallelism, zero::MAX_STAGE};
use crate::error::FieldError;
use crate::limits;
use crate::optimizer::{OPTIMIZERS, OptimizerImpl};
use serde::Serialize;
use serde_json::{Value, json};

/// What a document is for: the form's three tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// A training step, all parameters trained.
    Training,
    /// LoRA / QLoRA fine-tuning (training with `training.lora`).
    FineTuning,
    /// Generation or serving.
    Inference,
}

impl Task {
    /// The task's bit in [`Field::tasks`].
    pub const fn bit(self) -> u8 {
        match self {
            Task::Training => TRAINING,
            Task::FineTuning => FINE_TUNING,
            Task::Inference => INFERENCE,
        }
    }
}

/// Task bits.
pub const TRAINING: u8 = 1;
pub const FINE_TUNING: u8 = 2;
pub const INFERENCE: u8 = 4;
const TRAIN: u8 = TRAINING | FINE_TUNING;
const ALL: u8 = TRAINING | FINE_TUNING | INFERENCE;

impl Config {
    /// The task of this config: its mode, and fine-tuning when training has `lora`.
    pub fn task(&self) -> Task {
        match self.effective_mode() {
            Mode::Inference => Task::Inference,
            Mode::Training if self.training.lora.is_some() => Task::FineTuning,
            Mode::Training => Task::Training,
        }
    }
}

/// The task of a document that may not be valid, by the rule of
/// [`Config::effective_mode`]: `mode` if it says `inference` (any other value: training);
/// without it, inference when the document has an `inference` section and no training
/// settings; fine-tuning when training has a `training.lora` object.
pub fn task_of(doc: &Value) -> Task {
    let training = doc.get("training").filter(|t| !t.is_null());
    let mode = match doc.get("mode").and_then(Value::as_str) {
        Some(m) => serde_json::from_value::<Mode>(json!(m)).ok(),
        None => None,
    };
    let training_is_default = training.is_none_or(|t| {
        serde_json::from_value::<Training>(t.clone()).is_ok_and(|t| t == Training::default())
    });
    let has_inference = doc.get("inference").is_some_and(|v| !v.is_null());
    let mode = match (mode, doc.get("mode")) {
        (Some(m), _) => m,
        (None, Some(_)) => Mode::Training,
        (None, None) => Config::mode_rule(None, has_inference, training_is_default),
    };
    match mode {
        Mode::Inference => Task::Inference,
        Mode::Training
            if training
                .and_then(|t| t.get("lora"))
                .is_some_and(Value::is_object) =>
        {
            Task::FineTuning
        }
        Mode::Training => Task::Training,
    }
}

/// How a field is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number (also "7B", "8k"-style strings).
    Count,
    /// A decimal number.
    Number,
    /// One of [`Choices::list`].
    Choice(Choices),
    /// true / false.
    Check,
    /// LoRA target modules: "all-linear" or a list of module names.
    Targets,
}

/// The option lists of the selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choices {
    Precision,
    Optimizer,
    OptimizerImpl,
    Recompute,
    Attention,
    Loss,
    /// `accumulate_grads_in_fp32`: the engine's default, yes, no.
    EngineDefaultOrBool,
    Engine,
    ZeroStage,
    Offload,
    Sharding,
    /// `engine.fsdp_version`: 2 or 1.
    FsdpVersion,
    /// FSDP2 `reshard_after_forward`: default, yes, no.
    Reshard,
    /// A mixed-precision dtype, or the default.
    DtypeOrDefault,
    PipelineSchedule,
    /// The frozen base of LoRA (default: bf16) and QLoRA.
    LoraBase,
    WeightFormat,
    /// Which linear layers a quantized format covers.
    QuantizedModules,
    /// The vLLM release.
    VllmVersion,
    KvCacheDtype,
    Runtime,
}

/// One option: its JSON value and its label.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub value: Value,
    pub label: &'static str,
}

/// An optional boolean: unset (`null`, labelled `default`), yes, no.
fn default_yes_no(default: &'static str) -> Vec<Choice> {
    vec![
        Choice {
            value: Value::Null,
            label: default,
        },
        Choice {
            value: json!(true),
            label: "yes",
        },
        Choice {
            value: json!(false),
            label: "no",
        },
    ]
}

fn of<T: Serialize + Copy>(list: &[(T, &'static str)]) -> Vec<Choice> {
    list.iter()
        .map(|(v, label)| Choice {
            value: serde_json::to_value(v).unwrap_or(Value::Null),
            label,
        })
        .collect()
}

impl Choices {
    /// The value used when the document leaves the key out, where the schema does not write
    /// it back (`skip_serializing_if` its default) and no option stands for "default":
    /// what the form shows for an absent key. `None` where the absent key's option is
    /// listed (`null`) or the export writes the default.
    pub fn unwritten_default(self) -> Option<Value> {
        match self {
            Choices::QuantizedModules => serde_json::to_value(QuantizedModules::default()).ok(),
            Choices::VllmVersion => serde_json::to_value(VllmVersion::default()).ok(),
            _ => None,
        }
    }
    /// The options, in display order.
    pub fn list(self) -> Vec<Choice> {
        match self {
            Choices::Precision => of(Precision::CHOICES),
            Choices::Optimizer => OPTIMIZERS
                .iter()
                .map(|r| Choice {
                    value: json!(r.name),
                    label: r.label,
                })
                .collect(),
            Choices::OptimizerImpl => of(OptimizerImpl::CHOICES),
            Choices::Recompute => of(Recompute::CHOICES),
            Choices::Attention => of(Attention::CHOICES),
            Choices::Loss => of(LossImpl::CHOICES),
            Choices::EngineDefaultOrBool => default_yes_no("engine default"),
            Choices::Engine => ENGINES
                .iter()
                .filter_map(|k| Engine::of_kind(k))
                .map(|e| Choice {
                    value: json!(e.kind()),
                    label: e.label(),
                })
                .collect(),
            Choices::ZeroStage => (0..=MAX_STAGE)
                .map(|s| Choice {
                    value: json!(s),
                    label: ["0", "1", "2", "3"][usize::from(s.min(3))],
                })
                .collect(),
            Choices::Offload => of(Offload::CHOICES),
            Choices::Sharding => of(ShardingStrategy::CHOICES),
            Choices::FsdpVersion => vec![
                Choice {
                    value: json!(2),
                    label: "FSDP2 (fully_shard)",
                },
                Choice {
                    value: json!(1),
                    label: "FSDP1 (FullyShardedDataParallel)",
                },
            ],
            Choices::Reshard => default_yes_no("default (yes; no with pipeline parallelism)"),
            Choices::DtypeOrDefault => {
                let mut v = vec![Choice {
                    value: Value::Null,
                    label: "default",
                }];
                v.extend(of(Dtype::CHOICES));
                v
            }
            Choices::PipelineSchedule => {
                let mut v = vec![Choice {
                    value: Value::Null,
                    label: "default (1F1B; interleaved with virtual stages)",
                }];
                v.extend(of(PipelineSchedule::CHOICES));
                v
            }
            Choices::LoraBase => {
                let mut v = vec![Choice {
                    value: Value::Null,
                    label: "bf16 (LoRA)",
                }];
                v.extend(of(&[
                    (WeightFormat::Nf4, "NF4 (QLoRA)"),
                    (WeightFormat::Int8, "int8 (LLM.int8)"),
                    (WeightFormat::Fp32, "fp32"),
                ]));
                v
            }
            Choices::WeightFormat => of(WeightFormat::CHOICES),
            Choices::QuantizedModules => of(QuantizedModules::CHOICES),
            Choices::VllmVersion => of(VllmVersion::CHOICES),
            Choices::KvCacheDtype => of(KvCacheDtype::CHOICES),
            Choices::Runtime => of(InferenceEngine::CHOICES),
        }
    }
}

/// Where a field applies, beyond its tasks.
#[derive(Debug, Clone, Copy)]
pub enum Applies {
    Always,
    /// An option of the engine (`engine.<key>`): the engine's options have the key.
    EngineOption,
    /// The step is `torch.optim`'s (DDP, FSDP): DeepSpeed and Megatron run their own fused
    /// optimizers.
    TorchOptimizer,
    /// The model runs as PyTorch modules (DDP, FSDP, DeepSpeed engines), not Megatron's
    /// fused implementation.
    PyTorchModel,
    /// A parallel dimension: in training, the engine must model it.
    Parallel(fn(&Parallelism) -> bool),
    /// A setting of these inference runtimes (in training tasks: always).
    Runtime(&'static [InferenceEngine]),
    /// A setting of these weight formats only (inference).
    Formats(&'static [WeightFormat]),
}

/// Allowed values of a number, as validation enforces them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    pub min: f64,
    pub max: f64,
    /// `min` itself is not allowed.
    pub min_open: bool,
    /// `max` itself is not allowed.
    pub max_open: bool,
}

/// The closed range `[min, max]` of a whole number.
const fn closed(min: u64, max: u64) -> Bounds {
    Bounds {
        min: min as f64,
        max: max as f64,
        min_open: false,
        max_open: false,
    }
}

const fn range(min: u64, max: u64) -> Option<Bounds> {
    Some(closed(min, max))
}

/// One input of the form.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Dotted path in the config document (`training.seq_len`).
    pub path: &'static str,
    pub label: &'static str,
    /// Unit shown after the label.
    pub unit: &'static str,
    /// One line of help: what it is, in the frameworks' own terms.
    pub help: &'static str,
    pub kind: Kind,
    /// Empty means the default applies.
    pub optional: bool,
    /// The tasks it applies to ([`TRAINING`] | [`FINE_TUNING`] | [`INFERENCE`]).
    pub tasks: u8,
    pub applies: Applies,
    /// Allowed values of a number (where they do not depend on another field).
    pub bounds: Option<Bounds>,
}

/// A titled group of fields; `open` groups start expanded.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    pub title: &'static str,
    pub open: bool,
    pub tasks: u8,
    pub fields: &'static [Field],
}

#[allow(clippy::too_many_arguments)]
const fn f(
    path: &'static str,
    label: &'static str,
    unit: &'static str,
    kind: Kind,
    optional: bool,
    tasks: u8,
    applies: Applies,
    bounds: Option<Bounds>,
    help: &'static str,
) -> Field {
    Field {
        path,
        label,
        unit,
        help,
        kind,
        optional,
        tasks,
        applies,
        bounds,
    }
}

use Applies::{Always, EngineOption, Formats, PyTorchModel, Runtime, TorchOptimizer};
use Kind::{Check, Choice as C, Count, Number, Targets};

const fn par(dim: fn(&Parallelism) -> bool) -> Applies {
    Applies::Parallel(dim)
}

const GPUS: Option<Bounds> = range(1, limits::MAX_GPUS);
const FRACTION: Option<Bounds> = Some(Bounds {
    min: 0.0,
    max: 1.0,
    min_open: false,
    max_open: false,
});
const HF: Applies = Runtime(&[InferenceEngine::Hf]);
const VLLM: Applies = Runtime(&[InferenceEngine::Vllm]);
const SGLANG: Applies = Runtime(&[InferenceEngine::Sglang]);
const SERVING: Applies = Runtime(&[InferenceEngine::Vllm, InferenceEngine::Sglang]);

/// The fields of the form, grouped by section. Every input of the config schema except the
/// model and the GPU (which have pickers of their own).
#[rustfmt::skip]
pub const SECTIONS: &[Section] = &[
    Section { title: "Training", open: true, tasks: TRAIN, fields: &[
        f("training.micro_batch_size", "Micro-batch size", "sequences / GPU", Count, false, TRAIN, Always, range(1, limits::MAX_BATCH), "Sequences per GPU per forward pass (HF per_device_train_batch_size, Megatron --micro-batch-size)."),
        f("training.seq_len", "Sequence length", "tokens", Count, false, TRAIN, Always, range(1, limits::MAX_SEQ), "Tokens per sequence (Megatron --seq-length)."),
        f("training.gradient_accumulation_steps", "Gradient accumulation", "steps", Count, false, TRAIN, Always, range(1, limits::MAX_GRAD_ACCUM), "Micro-batches per optimizer step (HF gradient_accumulation_steps); pipeline micro-batches under Megatron."),
        f("training.precision", "Precision", "", C(Choices::Precision), false, TRAIN, Always, None, "Mixed precision keeps fp32 master weights; pure bf16 keeps everything in 16 bits (torchtune)."),
        f("training.optimizer", "Optimizer", "", C(Choices::Optimizer), false, TRAIN, Always, None, "Optimizer states per parameter follow the optimizer (AdamW: 2 states)."),
        f("training.optimizer_impl", "Optimizer implementation", "", C(Choices::OptimizerImpl), true, TRAIN, TorchOptimizer, None, "torch.optim foreach (PyTorch's default) allocates temporaries for all parameters; fused none. HF Trainer's default optim is adamw_torch_fused (fused) with torch >= 2.8, adamw_torch (foreach) before (transformers 5.23 training_args.py)."),
        f("training.activation_checkpointing", "Activation recomputation", "", C(Choices::Recompute), false, TRAIN, Always, None, "Gradient checkpointing (HF gradient_checkpointing; Megatron --recompute-granularity; selective_op: torchtitan's per-op policy, which keeps every other matmul output and the attention output)."),
        f("training.activation_offloading", "Activation offloading", "", Check, true, TRAIN, PyTorchModel, None, "Each checkpointed layer's saved input kept in pinned CPU memory, copied back in backward (transformers activation_checkpointing_enable(offload=True), torchtune enable_activation_offloading). Needs full or selective_op recomputation."),
        f("training.compile", "torch.compile", "", Check, true, TRAINING, PyTorchModel, None, "torch.compile of each decoder layer (torchtitan, torchtune): inductor recomputes elementwise ops in backward instead of saving their outputs. Dense models, SDPA / flash attention, recomputation none or full, no LoRA."),
        f("training.attention", "Attention", "", C(Choices::Attention), false, TRAIN, Always, None, "Eager attention stores b x heads x s^2 scores and moves them through memory each step (slower); SDPA/flash do not (HF attn_implementation). FlashAttention (Triton): flash-attn's Triton kernel (MPT attn_impl: triton), flash's memory, slower kernels."),
        f("training.loss", "Loss", "", C(Choices::Loss), false, TRAIN, Always, None, "How the vocabulary cross-entropy is computed (chunked: torchtune; fused: Liger)."),
        f("training.accumulate_grads_in_fp32", "fp32 gradient accumulation", "", C(Choices::EngineDefaultOrBool), true, TRAIN, Always, None, "Megatron main_grad / DeepSpeed data_types.grad_accum_dtype fp32."),
        f("training.optimizer_in_backward", "Optimizer step in backward", "", Check, true, TRAIN, TorchOptimizer, None, "torchtune optimizer_in_bwd: each gradient is freed as soon as its parameter is updated."),
    ]},
    Section { title: "LoRA / QLoRA", open: true, tasks: FINE_TUNING, fields: &[
        f("training.lora.rank", "Rank r", "", Count, false, FINE_TUNING, Always, range(1, limits::MAX_HIDDEN), "PEFT LoraConfig.r: A is r x in, B is out x r."),
        f("training.lora.alpha", "Alpha", "", Number, true, FINE_TUNING, Always, Some(Bounds { min: 0.0, max: limits::MAX_LORA_ALPHA, min_open: false, max_open: false }), "PEFT lora_alpha (scaling only; no memory)."),
        f("training.lora.target_modules", "Target modules", "", Targets, false, FINE_TUNING, Always, None, "Comma-separated module names (q_proj, v_proj, ...) or all-linear."),
        f("training.lora.dropout", "Dropout", "", Number, true, FINE_TUNING, Always, Some(Bounds { min: 0.0, max: 1.0, min_open: false, max_open: true }), "PEFT lora_dropout: a mask and a copy of each targeted input when > 0."),
        f("training.lora.base_quantized_modules", "Quantized base layers", "", C(Choices::QuantizedModules), true, FINE_TUNING, Always, None, "Which linear layers of the frozen base the base format covers: all, or the routed experts only."),
        f("training.lora.base_weight_format", "Base weights", "", C(Choices::LoraBase), true, FINE_TUNING, Always, None, "Frozen base model: bf16 (LoRA) or nf4 (QLoRA, bitsandbytes 4-bit)."),
        f("training.lora.adapters_fp32", "Adapters in fp32", "", Check, true, FINE_TUNING, Always, None, "PEFT autocast_adapter_dtype (default on)."),
    ]},
    Section { title: "Inference", open: true, tasks: INFERENCE, fields: &[
        f("inference.engine", "Runtime", "", C(Choices::Runtime), true, INFERENCE, Always, None, "transformers generate; vLLM (KV cache sized from gpu_memory_utilization after a profiling run); SGLang (KV pool sized from mem_fraction_static before any forward pass)."),
        f("inference.batch_size", "Batch size", "sequences", Count, true, INFERENCE, HF, range(1, limits::MAX_BATCH), "Sequences generated together (transformers generate)."),
        f("inference.context_len", "Context length", "tokens", Count, true, INFERENCE, HF, range(1, limits::MAX_SEQ), "Prompt plus generated tokens per sequence."),
        f("inference.prompt_len", "Prompt length", "tokens", Count, true, INFERENCE, HF, range(1, limits::MAX_SEQ), "Tokens prefilled at once. Empty: the whole context."),
        f("inference.weight_format", "Weights", "", C(Choices::WeightFormat), true, INFERENCE, Always, None, "Storage of the linear layers; embeddings, head and norms stay 16-bit."),
        f("inference.quantized_modules", "Quantized layers", "", C(Choices::QuantizedModules), true, INFERENCE, Formats(&[WeightFormat::Fp8, WeightFormat::Int8, WeightFormat::Int4, WeightFormat::Awq, WeightFormat::Nf4, WeightFormat::Mxfp4]), None, "Which linear layers the weight format covers: all of the decoder blocks' (GPTQ, AWQ, FP8 checkpoints) or the routed experts only (gpt-oss MXFP4: attention, router, embeddings and head in bf16)."),
        f("inference.group_size", "Quantization group", "inputs", Count, true, INFERENCE, Formats(&[WeightFormat::Int4, WeightFormat::Awq]), range(1, limits::MAX_HIDDEN), "GPTQ/AWQ group_size."),
        f("inference.zero_point", "Zero points", "", Check, true, INFERENCE, Formats(&[WeightFormat::Int4, WeightFormat::Awq]), None, "GPTQ/AWQ asymmetric quantization (sym=False): a 4-bit zero per group."),
        f("inference.double_quant", "Double quantization", "", Check, true, INFERENCE, Formats(&[WeightFormat::Nf4]), None, "bitsandbytes bnb_4bit_use_double_quant for NF4."),
        f("inference.kv_cache_dtype", "KV cache", "", C(Choices::KvCacheDtype), true, INFERENCE, Always, None, "vLLM kv_cache_dtype."),
        f("inference.logits_to_keep", "Logits kept", "positions", Count, true, INFERENCE, HF, range(0, limits::MAX_SEQ), "transformers logits_to_keep: positions whose logits the prefill computes (0: all of them)."),
        f("inference.max_model_len", "Max model length", "tokens", Count, true, INFERENCE, SERVING, range(1, limits::MAX_SEQ), "Tokens per request the runtime admits, prompt plus generated: vLLM max_model_len, SGLang context_length (the serving runtimes' one length field)."),
        f("inference.attention", "Attention", "", C(Choices::Attention), true, INFERENCE, HF, None, "Eager attention materializes the scores during the prefill."),
        f("inference.prefill_chunk", "Prefill chunk", "tokens", Count, true, INFERENCE, HF, range(1, limits::MAX_SEQ), "Chunked prefill: tokens per forward pass. Empty: the whole prompt."),
        f("inference.gpu_memory_utilization", "GPU memory utilization", "fraction", Number, true, INFERENCE, VLLM, Some(Bounds { min: 0.0, max: 1.0, min_open: true, max_open: false }), "vLLM gpu_memory_utilization."),
        f("inference.max_num_batched_tokens", "Max batched tokens", "tokens", Count, true, INFERENCE, VLLM, range(1, limits::MAX_SEQ), "vLLM max_num_batched_tokens: the profiling forward pass."),
        f("inference.max_num_seqs", "Max sequences", "", Count, true, INFERENCE, VLLM, range(1, limits::MAX_BATCH), "vLLM max_num_seqs: rows of the profiled sampler."),
        f("inference.mem_fraction_static", "Static memory fraction", "fraction", Number, true, INFERENCE, SGLANG, Some(Bounds { min: 0.0, max: 1.0, min_open: true, max_open: false }), "SGLang --mem-fraction-static: weights plus KV pool as a fraction of the memory free before loading. Empty: SGLang's default for this GPU and layout."),
        f("inference.chunked_prefill_size", "Chunked prefill", "tokens", Count, true, INFERENCE, SGLANG, range(1, limits::MAX_SEQ), "SGLang --chunked-prefill-size: tokens per prefill pass, outside the static pool. Empty: SGLang's default for this GPU's memory."),
        f("inference.vllm_version", "vLLM version", "", C(Choices::VllmVersion), true, INFERENCE, VLLM, None, "0.19: the profiling run's sampler filters in place (Triton top-k/top-p), non-torch memory as its logs report it; earlier: the sort-based sampler of the llm-d empirical results."),
    ]},
    Section { title: "Parallelism", open: true, tasks: ALL, fields: &[
        f("hardware.num_gpus", "GPUs", "", Count, true, ALL, Always, GPUS, "GPUs in the job (data x tensor x pipeline x context parallel)."),
        f("parallelism.data_parallel_size", "Data parallel", "", Count, true, TRAIN, Always, GPUS, "DP size; ZeRO and FSDP shard over it. Empty: GPUs / (TP x PP x CP)."),
        f("parallelism.data_parallel_replicate_size", "Data-parallel replicas", "", Count, true, TRAIN, par(|p| p.replicate), GPUS, "HSDP (FSDP2 2-D mesh): replicas of the shard group; torchtitan data_parallel_replicate_degree. The shard degree is data parallel / replicas."),
        f("parallelism.tensor_parallel_size", "Tensor parallel", "", Count, true, ALL, par(|p| p.tensor), GPUS, "Megatron --tensor-model-parallel-size."),
        f("parallelism.pipeline_parallel_size", "Pipeline parallel", "", Count, true, ALL, par(|p| p.pipeline), GPUS, "Megatron --pipeline-model-parallel-size."),
        f("parallelism.pipeline_schedule", "Pipeline schedule", "", C(Choices::PipelineSchedule), true, TRAIN, par(|p| p.pipeline), None, "torch.distributed.pipelining ScheduleGPipe / Schedule1F1B / ScheduleInterleaved1F1B (torchtitan pipeline_parallel_schedule): micro-batches each stage holds."),
        f("parallelism.sequence_parallel", "Sequence parallel", "", Check, true, TRAIN, par(|p| p.sequence), None, "Megatron --sequence-parallel; torchtitan enable_sequence_parallel (needs TP > 1)."),
        f("parallelism.loss_parallel", "Loss parallel", "", Check, true, TRAIN, par(|p| p.tensor), None, "Logits stay vocabulary-parallel over TP ranks (torchtitan loss_parallel; Megatron always). Off: every rank gathers the whole vocabulary."),
        f("parallelism.context_parallel_size", "Context parallel", "", Count, true, TRAIN, par(|p| p.context), GPUS, "Megatron --context-parallel-size / DeepSpeed-Ulysses sequence parallel size: splits the sequence."),
        f("parallelism.expert_parallel_size", "Expert parallel", "", Count, true, ALL, par(|p| p.expert), GPUS, "Megatron --expert-model-parallel-size: MoE experts divided over EP ranks."),
        f("parallelism.expert_tensor_parallel_size", "Expert tensor parallel", "", Count, true, TRAIN, par(|p| p.expert_tensor), GPUS, "Megatron-Core --expert-tensor-parallel-size (MoE parallel folding). Empty: the tensor-parallel size."),
        f("parallelism.virtual_pipeline_parallel_size", "Virtual pipeline stages", "per rank", Count, true, TRAIN, par(|p| p.virtual_pipeline), range(1, limits::MAX_LAYERS), "Megatron interleaved 1F1B schedule (--num-virtual-stages-per-pipeline-rank)."),
        f("parallelism.first_pipeline_stage_layers", "Layers on the first stage", "", Count, true, TRAIN, par(|p| p.uneven_pipeline), range(1, limits::MAX_LAYERS), "Megatron --decoder-first-pipeline-num-layers (uneven split). Empty: even."),
        f("parallelism.last_pipeline_stage_layers", "Layers on the last stage", "", Count, true, TRAIN, par(|p| p.uneven_pipeline), range(1, limits::MAX_LAYERS), "Megatron --decoder-last-pipeline-num-layers. Empty: even."),
    ]},
    Section { title: "Engine", open: true, tasks: TRAIN, fields: &[
        f("engine.type", "Engine", "", C(Choices::Engine), false, TRAIN, Always, None, "The training framework."),
        f("engine.zero_stage", "ZeRO stage", "", C(Choices::ZeroStage), true, TRAIN, EngineOption, None, "DeepSpeed zero_optimization.stage: 1 shards optimizer states, 2 also gradients, 3 also parameters."),
        f("engine.offload_optimizer", "Offload optimizer", "", C(Choices::Offload), true, TRAIN, EngineOption, None, "DeepSpeed zero_optimization.offload_optimizer.device."),
        f("engine.offload_param", "Offload parameters", "", C(Choices::Offload), true, TRAIN, EngineOption, None, "DeepSpeed zero_optimization.offload_param.device (ZeRO-3)."),
        f("engine.fsdp_version", "FSDP version", "", C(Choices::FsdpVersion), true, TRAIN, EngineOption, None, "FSDP2: torch fully_shard (torchtitan, accelerate fsdp_version 2, torchtune); FSDP1: FullyShardedDataParallel."),
        f("engine.sharding_strategy", "Sharding strategy", "", C(Choices::Sharding), true, TRAIN, EngineOption, None, "FSDP1 torch.distributed.fsdp.ShardingStrategy."),
        f("engine.reshard_after_forward", "Reshard after forward", "", C(Choices::Reshard), true, TRAIN, EngineOption, None, "FSDP2 fully_shard reshard_after_forward: free the gathered parameters after forward (an int: keep them sharded over that many GPUs; edit the JSON)."),
        f("engine.param_dtype", "Parameter dtype", "", C(Choices::DtypeOrDefault), true, TRAIN, EngineOption, None, "FSDP MixedPrecisionPolicy.param_dtype: gathered parameters and compute. Default: bf16 / fp16 under AMP, bf16 under fp8."),
        f("engine.reduce_dtype", "Reduce dtype", "", C(Choices::DtypeOrDefault), true, TRAIN, EngineOption, None, "FSDP MixedPrecisionPolicy.reduce_dtype: unsharded gradients and their reduce-scatter. Default: fp32 under AMP and fp8."),
        f("engine.float8_all_gather", "Float8 all-gather", "", Check, true, TRAIN, EngineOption, None, "torchao enable_fsdp_float8_all_gather (FSDP2 under fp8 precision): the float8 linear weights are all-gathered and held unsharded in 1 byte instead of param_dtype."),
        f("engine.distributed_optimizer", "Distributed optimizer", "", Check, true, TRAIN, EngineOption, None, "Megatron --use-distributed-optimizer: shards master weights and optimizer states over DP."),
        f("engine.scatter_gather_tensors_in_pipeline", "Pipeline scatter/gather (Megatron-LM before Core)", "", Check, true, TRAIN, EngineOption, None, "Megatron-LM --scatter-gather-tensors-in-pipeline (default before Megatron-Core, 2023): without sequence parallelism each TP rank sends 1/t of the stage's output and the receiver all-gathers it. Step time only."),
    ]},
    Section { title: "Engine tuning", open: false, tasks: TRAIN, fields: &[
        f("engine.reduce_bucket_size", "Reduce bucket", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed zero_optimization.reduce_bucket_size."),
        f("engine.overlap_comm", "Overlap communication", "", C(Choices::EngineDefaultOrBool), true, TRAIN, EngineOption, None, "DeepSpeed zero_optimization.overlap_comm (default: on at ZeRO-3): ZeRO 1-2 double-buffer the reduce bucket."),
        f("engine.stage3_prefetch_bucket_size", "ZeRO-3 prefetch bucket", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed stage3_prefetch_bucket_size."),
        f("engine.stage3_max_live_parameters", "ZeRO-3 max live parameters", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed stage3_max_live_parameters."),
        f("engine.stage3_max_reuse_distance", "ZeRO-3 max reuse distance", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed stage3_max_reuse_distance: parameters reused sooner stay gathered (the last layers of forward into backward)."),
        f("engine.stage3_param_persistence_threshold", "ZeRO-3 persistence threshold", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed stage3_param_persistence_threshold: smaller tensors stay unsharded."),
        f("engine.sub_group_size", "ZeRO-3 sub-group size", "elements", Count, true, TRAIN, EngineOption, range(0, limits::MAX_PARAMS), "DeepSpeed sub_group_size: the step updates one sub-group at a time (whole parameters, each sub-group filled to at least this many elements; 0: one parameter each)."),
        f("engine.stage3_blocking_fetch", "ZeRO-3 blocking fetch (DeepSpeed < 0.6)", "", Check, true, TRAIN, EngineOption, None, "DeepSpeed before 0.6.0 (2022): each ZeRO-3 sub-module's fetch waits for the device and the gathers in flight, so only the next stage3_prefetch_bucket_size elements are gathered while a sub-module computes. Step time only."),
        f("engine.hybrid_shard_group_size", "Hybrid shard group", "GPUs", Count, true, TRAIN, EngineOption, GPUS, "GPUs per shard group for HYBRID_SHARD (default: GPUs per node)."),
        f("engine.cpu_offload", "CPU offload", "", Check, true, TRAIN, EngineOption, None, "FSDP2 CPUOffloadPolicy / FSDP1 CPUOffload(offload_params=True)."),
        f("engine.bucket_cap_mb", "DDP bucket size", "MiB", Number, true, TRAIN, EngineOption, Some(Bounds { min: 0.0, max: 65536.0, min_open: true, max_open: false }), "DistributedDataParallel bucket_cap_mb."),
        f("engine.gradient_as_bucket_view", "Gradients as bucket views", "", Check, true, TRAIN, EngineOption, None, "DistributedDataParallel gradient_as_bucket_view: without it the buckets are a second copy of all gradients."),
    ]},
    Section { title: "Overheads", open: false, tasks: ALL, fields: &[
        f("hardware.gpus_per_node", "GPUs per node", "", Count, true, ALL, Always, range(1, 1024), "For NCCL and FSDP hybrid sharding."),
        f("overheads.cuda_context_mib", "CUDA context", "MiB", Number, true, ALL, Always, Some(Bounds { min: 0.0, max: 65536.0, min_open: false, max_open: false }), "Driver and kernel memory outside PyTorch's allocator. Empty: the GPU preset's measured value."),
        f("overheads.allocator_reserve_fraction", "Allocator reserve", "fraction of peak", Number, true, ALL, HF, FRACTION, "Caching-allocator fragmentation: max_memory_reserved / max_memory_allocated - 1 (e.g. 0.05)."),
    ]},
];

/// Every field, section by section.
pub fn fields() -> impl Iterator<Item = &'static Field> {
    SECTIONS.iter().flat_map(|s| s.fields.iter())
}

/// The field at a dotted path.
pub fn field(path: &str) -> Option<&'static Field> {
    fields().find(|f| f.path == path)
}

/// What else bounds a form field, beyond its own range (validation's messages say the same).
#[rustfmt::skip]
const RELATED: &[(&str, &str)] = &[
    ("inference.prompt_len", "at most inference.context_len"),
    ("inference.logits_to_keep", "at most inference.context_len; 0: every position"),
    ("inference.group_size", "divides the input size of every quantized layer (per GPU under tensor parallelism)"),
    ("hardware.num_gpus", "a multiple of tensor x pipeline x context parallel sizes"),
    ("parallelism.data_parallel_replicate_size", "divides data_parallel_size"),
    ("parallelism.tensor_parallel_size", "divides num_attention_heads and num_key_value_heads"),
    ("parallelism.pipeline_parallel_size", "divides num_hidden_layers, unless the first/last stage sizes are given"),
    ("parallelism.virtual_pipeline_parallel_size", "pipeline size x virtual stages divides num_hidden_layers; with an uneven split, divides the first, last and middle stages' layers"),
    ("parallelism.first_pipeline_stage_layers", "first + last stage layers at most num_hidden_layers, the rest split evenly over the middle stages"),
    ("parallelism.last_pipeline_stage_layers", "as first_pipeline_stage_layers"),
    ("parallelism.expert_parallel_size", "divides the number of experts and data x context parallel size"),
    ("parallelism.expert_tensor_parallel_size", "divides moe_intermediate_size"),
    ("engine.hybrid_shard_group_size", "divides data_parallel_size"),
];

/// Where the numeric inputs of [`numeric_inputs`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A field of the form ([`SECTIONS`]).
    Form,
    /// A size of the hardware, given in GB or with a unit (the pickers' custom sizes).
    Hardware,
    /// The model's stated size (`model.num_parameters`).
    Model,
    /// A numeric key of the model's `config.json` ([`limits::MODEL_KEYS`]).
    ModelKey,
}

/// One numeric input and its allowed range.
#[derive(Debug, Clone, Serialize)]
pub struct NumericInput {
    /// Dotted path in the config document; a model key as `model.<key>` (the same key
    /// under `model.hf_config`, a wrapper's `text_config` or `vision_config` has the
    /// same range).
    pub path: String,
    /// Other names the same input is read under (model keys of other families).
    pub aliases: &'static [&'static str],
    /// Unit of `bounds` (bytes for memory sizes given in GB).
    pub unit: &'static str,
    /// A whole number (a count) rather than any number.
    pub whole: bool,
    pub bounds: Bounds,
    /// What else bounds it (another field, the model), or what a special value means.
    pub note: &'static str,
    pub origin: Origin,
}

/// Every numeric input of the config document with its allowed range, the one table
/// validation enforces (checked field by field at both bounds and one past them by
/// `core/tests/fields.rs`) and `BOUNDS.md` shows: the form's fields, the hardware's memory
/// sizes, the model's stated size and every numeric `config.json` key a family reads.
pub fn numeric_inputs() -> Vec<NumericInput> {
    let mut out: Vec<NumericInput> = fields()
        // every Count and Number field has bounds (`core/tests/fields.rs`)
        .filter_map(|f| Some((f, f.bounds?)))
        .map(|(f, bounds)| NumericInput {
            path: f.path.to_string(),
            aliases: &[],
            unit: f.unit,
            whole: f.kind == Kind::Count,
            bounds,
            note: RELATED
                .iter()
                .find(|(p, _)| *p == f.path)
                .map_or("", |(_, n)| n),
            origin: Origin::Form,
        })
        .collect();
    out.extend([
        NumericInput {
            path: "hardware.gpu_memory_gb".into(),
            aliases: &[],
            unit: "bytes",
            whole: true,
            bounds: closed(1, limits::MAX_GPU_MEMORY),
            note: "given in GB (10^9 bytes) or with a unit (\"80GiB\"); default: the GPU preset's",
            origin: Origin::Hardware,
        },
        NumericInput {
            path: "hardware.cpu_memory_gb".into(),
            aliases: &[],
            unit: "bytes",
            whole: true,
            bounds: closed(1, limits::MAX_CPU_MEMORY),
            note: "per node; given in GB or with a unit (\"2TiB\"); default: the GPU preset's typical node",
            origin: Origin::Hardware,
        },
        NumericInput {
            path: "model.num_parameters".into(),
            aliases: &[],
            unit: "parameters",
            whole: true,
            bounds: closed(1, limits::MAX_PARAMS),
            note: "a count such as 7000000000 or \"7B\"; the architecture's own count has the same bound",
            origin: Origin::Model,
        },
    ]);
    out.extend(limits::MODEL_KEYS.iter().map(|k| NumericInput {
        path: format!("model.{}", k.keys[0]),
        aliases: &k.keys[1..],
        unit: "",
        whole: true,
        bounds: closed(k.min, k.max),
        note: k.note,
        origin: Origin::ModelKey,
    }));
    out
}

/// [`numeric_inputs`] as a Markdown document (`BOUNDS.md`).
pub fn bounds_markdown() -> String {
    fn num(x: f64) -> String {
        // exact for every bound in the table (integers below 2^53, fractions such as 0.0)
        if x.fract() == 0.0 && x.abs() < 1e16 {
            format!("{}", x as i64)
        } else {
            format!("{x}")
        }
    }
    let mut md = String::from(
        "# Bounds of every numeric input\n\n\
         Generated from `calc_core::fields::numeric_inputs()` (the form's field table, the \
         hardware sizes and `limits::MODEL_KEYS`) by \
         `GOLDEN_UPDATE=1 cargo test -p calc-core --test fields`; a test fails when this file \
         differs. Validation enforces each range with an error naming the field; \
         `core/tests/fields.rs` sets every input to both bounds and one past each (a whole \
         number: +-1; a number: +-10^-6, or the bound itself where it is open).\n\n\
         `[a, b]` includes both ends, `(a, b]` excludes `a`. Model keys are read the same in \
         the `model` section, in `model.hf_config` and in a wrapper's `text_config` / \
         `vision_config`.\n\n\
         | input | also read as | range | unit | also bounded by |\n\
         |---|---|---|---|---|\n",
    );
    for i in numeric_inputs() {
        let b = i.bounds;
        let range = format!(
            "{}{}, {}{}{}",
            if b.min_open { "(" } else { "[" },
            num(b.min),
            num(b.max),
            if b.max_open { ")" } else { "]" },
            if i.whole { " whole" } else { "" }
        );
        md.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            i.path,
            i.aliases
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
            range,
            i.unit,
            i.note
        ));
    }
    md
}

/// What a document's settings say that decides which fields apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    pub task: Task,
    /// The training engine (`engine.type`, default `ddp`), with its default options.
    pub engine: Engine,
    /// The inference runtime (`inference.engine`, default `hf`).
    pub runtime: InferenceEngine,
    pub weight_format: WeightFormat,
}

impl Context {
    /// Whether a `ds_config.json` can be exported ([`crate::export::deepspeed_config`]):
    /// training or fine-tuning under an engine that runs DeepSpeed ZeRO.
    pub fn exports_ds_config(&self) -> bool {
        self.task != Task::Inference && self.engine.zero_options().is_some()
    }

    /// The context of a document that may not be valid (unreadable settings count as
    /// their defaults).
    pub fn of(doc: &Value) -> Context {
        fn read<T: serde::de::DeserializeOwned + Default>(doc: &Value, path: &str) -> T {
            path.split('.')
                .try_fold(doc, |cur, seg| cur.get(seg))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default()
        }
        let kind: String = read(doc, "engine.type");
        // the engine with its options where they read (an FSDP engine's option keys follow
        // its fsdp_version), else the engine's defaults
        let engine = doc
            .get("engine")
            .and_then(|e| serde_json::from_value::<Engine>(e.clone()).ok())
            .or_else(|| {
                let version = doc
                    .get("engine")
                    .and_then(|e| e.get("fsdp_version"))
                    .cloned();
                let mut e = serde_json::json!({ "type": kind });
                if let Some(v) = version {
                    e["fsdp_version"] = v;
                }
                serde_json::from_value(e).ok()
            })
            .or_else(|| Engine::of_kind(&kind))
            .unwrap_or_default();
        Context {
            task: task_of(doc),
            engine,
            runtime: read(doc, "inference.engine"),
            weight_format: read(doc, "inference.weight_format"),
        }
    }
}

impl Field {
    /// Whether the field applies to a document in `ctx` (hidden otherwise).
    pub fn applies(&self, ctx: &Context) -> bool {
        if self.tasks & ctx.task.bit() == 0 {
            return false;
        }
        let training = ctx.task != Task::Inference;
        match self.applies {
            Always => true,
            EngineOption => {
                let key = self.path.strip_prefix("engine.").unwrap_or(self.path);
                ctx.engine.option_keys().contains(&key)
            }
            TorchOptimizer => ctx.engine.torch_optimizer(),
            PyTorchModel => {
                ctx.engine.model().model_code() == crate::precision::ModelCode::Transformers
            }
            Applies::Parallel(dim) => !training || dim(&ctx.engine.parallelism()),
            Runtime(list) => training || list.contains(&ctx.runtime),
            Formats(list) => list.contains(&ctx.weight_format),
        }
    }
}

impl Section {
    /// Whether the section applies to a document in `ctx`.
    pub fn applies(&self, ctx: &Context) -> bool {
        self.tasks & ctx.task.bit() != 0
    }
}

/// The document with every field that does not apply to it removed (a field the form
/// hides: tensor parallelism under DDP, ZeRO options under FSDP, training settings in
/// inference mode), its task kept explicit. What the form computes, saves and links: a
/// value left in a hidden field never blocks the result. (A config file is read as
/// written: there, such a value is an error.)
pub fn without_hidden(doc: &Value) -> Value {
    let ctx = Context::of(doc);
    let mut out = doc.clone();
    // a serving runtime has one length, max_model_len, which defaults to the context length
    // (`inference.context_len`, the field of transformers generate, then hidden): the
    // document keeps the length it computes with, written out
    if ctx.task == Task::Inference
        && ctx.runtime != InferenceEngine::Hf
        && let Some(inf) = out.get_mut("inference").and_then(Value::as_object_mut)
        && !inf.contains_key("max_model_len")
    {
        let len = inf
            .get("context_len")
            .cloned()
            .unwrap_or_else(|| json!(Inference::default().context_len));
        inf.insert("max_model_len".into(), len);
    }
    for sec in SECTIONS {
        for f in sec.fields {
            if !(sec.applies(&ctx) && f.applies(&ctx)) {
                crate::load::remove(&mut out, f.path);
            }
        }
    }
    if let Some(m) = out.as_object_mut() {
        // an engine whose type is hidden (inference) goes whole: its options mean nothing
        if m.get("engine").is_some_and(|e| e.get("type").is_none()) {
            m.remove("engine");
        }
        let mode = if ctx.task == Task::Inference {
            "inference"
        } else {
            "training"
        };
        m.insert("mode".into(), json!(mode));
    }
    out
}

/// Reads the form's document: [`without_hidden`], then [`Config::from_value`]; a whole
/// number too large for any count (1e30) is reported against the field's range.
/// Errors: every field error, each naming its path.
pub fn parse_form(doc: &Value) -> Result<Config, Vec<FieldError>> {
    Config::from_value(without_hidden(doc)).map_err(|errs| {
        errs.into_iter()
            .map(|mut e| {
                if e.message.contains("is too large")
                    && let Some(b) = field(&e.field).and_then(|f| f.bounds)
                {
                    e.message = format!("must be a whole number from {} to {}", b.min, b.max);
                }
                e
            })
            .collect()
    })
}

/// Every section filled in with its defaults: the values the schema assumes when a key is
/// left out (the engine's for `engine` options).
fn defaults(engine_kind: &str) -> Value {
    let config = Config {
        training: Training {
            lora: Some(Lora::default()),
            ..Training::default()
        },
        inference: Some(Inference::default()),
        engine: Engine::of_kind(engine_kind).unwrap_or_default(),
        ..Config::default()
    };
    serde_json::to_value(&config).unwrap_or(Value::Null)
}

/// The default at a dotted path, for a document whose engine is `engine_kind` (what the
/// schema assumes when the key is left out; `None` where the default depends on other
/// settings, such as `max_model_len` = the context length, which [`without_hidden`]
/// writes out for a serving runtime).
pub fn default_at(path: &str, engine_kind: &str) -> Option<Value> {
    path.split('.')
        .try_fold(&defaults(engine_kind), |cur, seg| cur.get(seg))
        .filter(|v| !v.is_null())
        .cloned()
}

/// The `training.lora` section a switch to fine-tuning starts from (the web form's
/// Fine-tuning tab): [`crate::config::Lora::default`], and `target_modules: "all-linear"`
/// where PEFT has no default for the model ([`crate::lora::peft_default_targets`] is `None`,
/// and PEFT would stop with "Please specify `target_modules`"), so that the first estimate is
/// of a configuration PEFT accepts and the form shows the targets it assumes. `"all-linear"`
/// is PEFT's shorthand for every linear layer but the LM head, the set QLoRA adapts (Dettmers
/// et al. 2023, Sec. 4). A model that does not resolve gets the defaults alone (its own error
/// says why).
pub fn starting_lora(model: &crate::config::ModelSpec) -> crate::config::Lora {
    let arch = crate::resolve::resolve_model(&model.0, &mut Vec::new());
    crate::config::Lora {
        target_modules: match arch {
            Ok(a) if crate::lora::peft_default_targets(&a).is_none() => {
                Some(crate::config::TargetModules::All("all-linear".into()))
            }
            _ => None,
        },
        ..crate::config::Lora::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_rule_is_the_schemas() {
        for (doc, task) in [
            (json!({}), Task::Training),
            (json!({"inference": {}}), Task::Inference),
            (json!({"inference": {}, "training": {}}), Task::Inference),
            (
                json!({"inference": {}, "training": {"seq_len": 8}}),
                Task::Training,
            ),
            (
                json!({"mode": "inference", "training": {"seq_len": 8}}),
                Task::Inference,
            ),
            (json!({"mode": "training", "inference": {}}), Task::Training),
            (json!({"training": {"lora": {}}}), Task::FineTuning),
            (json!({"mode": "bogus", "inference": {}}), Task::Training),
        ] {
            assert_eq!(task_of(&doc), task, "{doc}");
            let mut full = doc.clone();
            full["model"] = json!({"preset": "gpt2"});
            if let Ok(c) = Config::from_value(full) {
                assert_eq!(c.task(), task, "{doc}");
            }
        }
    }

    #[test]
    fn defaults_come_from_the_schema() {
        assert_eq!(default_at("inference.zero_point", "ddp"), Some(json!(true)));
        assert_eq!(
            default_at("inference.context_len", "ddp"),
            Some(json!(4096))
        );
        assert_eq!(default_at("training.lora.rank", "ddp"), Some(json!(8)));
        assert_eq!(
            default_at("engine.reduce_bucket_size", "deepspeed"),
            Some(json!(500_000_000))
        );
        assert_eq!(default_at("engine.reduce_bucket_size", "ddp"), None);
        assert_eq!(default_at("inference.max_model_len", "ddp"), None);
    }

    #[test]
    fn fine_tuning_starts_from_targets_peft_accepts() {
        let spec = |v: serde_json::Value| crate::config::ModelSpec(v.as_object().unwrap().clone());
        // PEFT's mapping has llama (q_proj, v_proj): the field is left to PEFT's default
        let llama = starting_lora(&spec(serde_json::json!({"preset": "llama-3.1-8b"})));
        assert_eq!(llama, crate::config::Lora::default());
        // phi3 and deepseek_v3 are not in it: every linear layer, as PEFT's "all-linear"
        for preset in ["phi-3-mini-4k-instruct", "deepseek-v3"] {
            let lo = starting_lora(&spec(serde_json::json!({ "preset": preset })));
            assert_eq!(
                lo.target_modules,
                Some(crate::config::TargetModules::All("all-linear".into())),
                "{preset}"
            );
            assert_eq!(lo.rank, crate::config::Lora::default().rank);
        }
        // a model that does not resolve: the defaults, its own error elsewhere
        let bad = starting_lora(&spec(serde_json::json!({"preset": "no-such-model"})));
        assert_eq!(bad, crate::config::Lora::default());
    }
}
