//! The config document being edited: a JSON value addressed by dotted paths, and the
//! table of form fields. Nothing here computes memory; validation and estimates come
//! from `calc_core`.

use serde_json::{Map, Value};

/// The value at a dotted path (`training.seq_len`).
pub fn get<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |cur, seg| cur.get(seg))
}

/// The schema's default at a dotted path (what calc-core assumes when the key is left out),
/// for showing checkboxes whose default is on. From `calc_core`'s own defaults: a config of
/// every optional section parsed and serialized.
pub fn default_at(path: &str) -> Option<Value> {
    use std::sync::OnceLock;
    static DEFAULTS: OnceLock<Value> = OnceLock::new();
    let all = DEFAULTS.get_or_init(|| {
        let mut v =
            serde_json::json!({"model": {"preset": "gpt2"}, "training": {"lora": {"rank": 8}}});
        if let Ok(c) = calc_core::Config::from_value(v.clone()) {
            v = serde_json::to_value(&c).unwrap_or(v);
        }
        let inf =
            serde_json::json!({"mode": "inference", "model": {"preset": "gpt2"}, "inference": {}});
        if let Some(iv) = calc_core::Config::from_value(inf)
            .ok()
            .and_then(|c| serde_json::to_value(&c).ok())
        {
            v["inference"] = iv["inference"].clone();
        }
        v
    });
    get(all, path).cloned()
}

/// Sets (or with `None` removes) the value at a dotted path, creating objects on the way.
pub fn set(doc: &mut Value, path: &str, value: Option<Value>) {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = doc;
    for seg in &segs[..segs.len() - 1] {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .expect("object")
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    let obj = cur.as_object_mut().expect("object");
    let last = segs[segs.len() - 1].to_string();
    match value {
        Some(v) => {
            obj.insert(last, v);
        }
        None => {
            obj.remove(&last);
        }
    }
}

/// The text an input shows for a JSON value.
pub fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// What the user typed, as the JSON value to store: a number when it reads as one, else the
/// text itself (so that `calc_core` reports it against the field); `None` for an empty
/// optional field (its default applies).
pub fn value_of(text: &str, optional: bool) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return if optional {
            None
        } else {
            Some(Value::String(String::new()))
        };
    }
    match serde_json::from_str::<serde_json::Number>(t) {
        Ok(n) => Some(Value::Number(n)),
        Err(_) => Some(Value::String(t.to_string())),
    }
}

/// How a field is entered.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    /// A number (or a string with a unit/suffix, parsed by `calc_core`).
    Number,
    /// A choice; each option is (JSON value literal, label).
    Select(&'static [(&'static str, &'static str)]),
    /// true / false.
    Check,
    /// A row of calc-core's optimizer table.
    Optimizer,
    /// LoRA target modules: "all-linear" or a comma-separated list.
    Targets,
}

/// Which engines a field applies to (`None` = all).
pub type Engines = Option<&'static [&'static str]>;

/// One form field.
#[derive(Clone, Copy)]
pub struct FieldSpec {
    pub path: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// Empty means "use the default".
    pub optional: bool,
    pub engines: Engines,
    /// The modes it applies to ([`TRAIN`] | [`TUNE`] | [`INFER`]).
    pub modes: u8,
}

/// Mode bits: full training, LoRA fine-tuning, inference.
pub const TRAIN: u8 = 1;
pub const TUNE: u8 = 2;
pub const INFER: u8 = 4;
pub const ALL_MODES: u8 = TRAIN | TUNE | INFER;

impl FieldSpec {
    /// The same field, shown only in `modes`.
    pub const fn only(self, modes: u8) -> FieldSpec {
        FieldSpec { modes, ..self }
    }
}

/// The mode a document is in, as a mode bit.
pub fn ui_mode(doc: &Value) -> u8 {
    let inference = match get(doc, "mode").and_then(|v| v.as_str()) {
        Some("inference") => true,
        Some(_) => false,
        None => get(doc, "inference").is_some() && get(doc, "training").is_none(),
    };
    if inference {
        INFER
    } else if get(doc, "training.lora").is_some_and(|v| v.is_object()) {
        TUNE
    } else {
        TRAIN
    }
}

const PRECISIONS: &[(&str, &str)] = &[
    ("\"amp_bf16\"", "AMP bf16 (fp32 master weights)"),
    ("\"amp_fp16\"", "AMP fp16 (fp32 master weights)"),
    ("\"bf16\"", "pure bf16"),
    ("\"fp16\"", "pure fp16"),
    ("\"fp32\"", "fp32"),
    ("\"fp8\"", "fp8 (Transformer Engine)"),
];
const OPT_IMPL: &[(&str, &str)] = &[
    ("\"foreach\"", "foreach (PyTorch default)"),
    ("\"fused\"", "fused"),
    ("\"for_loop\"", "for-loop"),
];
const RECOMPUTE: &[(&str, &str)] = &[
    ("\"none\"", "none"),
    ("\"selective\"", "selective"),
    ("\"full\"", "full"),
];
const ATTENTION: &[(&str, &str)] = &[
    ("\"sdpa\"", "SDPA"),
    ("\"flash\"", "FlashAttention-2"),
    ("\"eager\"", "eager"),
];
const LOSS: &[(&str, &str)] = &[
    ("\"standard\"", "standard"),
    ("\"chunked\"", "chunked (8)"),
    ("\"fused\"", "fused linear CE"),
];
const TRISTATE: &[(&str, &str)] = &[("null", "engine default"), ("true", "yes"), ("false", "no")];
const ENGINES: &[(&str, &str)] = &[
    ("\"ddp\"", "PyTorch DDP"),
    ("\"deepspeed\"", "DeepSpeed ZeRO"),
    ("\"fsdp\"", "PyTorch FSDP"),
    ("\"megatron\"", "Megatron-LM"),
    ("\"megatron_deepspeed\"", "Megatron-DeepSpeed"),
];
const ZERO: &[(&str, &str)] = &[("0", "0"), ("1", "1"), ("2", "2"), ("3", "3")];
const OFFLOAD: &[(&str, &str)] = &[
    ("\"none\"", "none"),
    ("\"cpu\"", "CPU"),
    ("\"nvme\"", "NVMe"),
];
const SHARDING: &[(&str, &str)] = &[
    ("\"FULL_SHARD\"", "FULL_SHARD"),
    ("\"SHARD_GRAD_OP\"", "SHARD_GRAD_OP"),
    ("\"HYBRID_SHARD\"", "HYBRID_SHARD"),
    ("\"NO_SHARD\"", "NO_SHARD"),
];
const ALL: Engines = None;
const BASE_FORMATS: &[(&str, &str)] = &[
    ("null", "bf16 (LoRA)"),
    ("\"nf4\"", "NF4 (QLoRA)"),
    ("\"int8\"", "int8 (LLM.int8)"),
    ("\"fp32\"", "fp32"),
];
const WEIGHT_FORMATS: &[(&str, &str)] = &[
    ("\"bf16\"", "bf16"),
    ("\"fp16\"", "fp16"),
    ("\"fp8\"", "FP8 (per-channel scales)"),
    ("\"int8\"", "int8 (LLM.int8)"),
    ("\"int4\"", "int4 GPTQ"),
    ("\"awq\"", "int4 AWQ"),
    ("\"nf4\"", "NF4 (bitsandbytes)"),
    ("\"mxfp4\"", "MXFP4"),
    ("\"fp32\"", "fp32"),
];
const KV_DTYPES: &[(&str, &str)] = &[
    ("\"auto\"", "model dtype"),
    ("\"fp8\"", "fp8"),
    ("\"int8\"", "int8"),
    ("\"int4\"", "int4"),
];
const RUNTIMES: &[(&str, &str)] = &[
    ("\"hf\"", "transformers generate"),
    ("\"vllm\"", "vLLM serving"),
];
const ZERO_ENGINES: Engines = Some(&["deepspeed", "megatron_deepspeed"]);
const DEEPSPEED: Engines = Some(&["deepspeed"]);
const MEGATRON: Engines = Some(&["megatron", "megatron_deepspeed"]);
const TORCH: Engines = Some(&["ddp", "fsdp"]);
const MODEL_PARALLEL: Engines = Some(&["megatron", "megatron_deepspeed", "fsdp", "deepspeed"]);

/// A titled group of fields; `open` groups start expanded.
pub struct Section {
    pub title: &'static str,
    pub open: bool,
    /// The modes the section applies to.
    pub modes: u8,
    pub fields: &'static [FieldSpec],
}

/// A field row: path, label, unit, kind, optional (empty = default), engines, help.
const fn f(
    path: &'static str,
    label: &'static str,
    unit: &'static str,
    kind: Kind,
    optional: bool,
    engines: Engines,
    help: &'static str,
) -> FieldSpec {
    FieldSpec {
        path,
        label,
        unit,
        help,
        kind,
        optional,
        engines,
        modes: ALL_MODES,
    }
}
use Kind::{Check, Number, Select};

/// The fields of the form, grouped by section title. Every input of the config schema
/// except the model and the GPU (which have pickers of their own).
#[rustfmt::skip]
pub const SECTIONS: &[Section] = &[
    Section { title: "Training", open: true, modes: TRAIN | TUNE, fields: &[
        f("training.micro_batch_size", "Micro-batch size", "sequences / GPU", Number, false, ALL, "Sequences per GPU per forward pass (HF per_device_train_batch_size, Megatron --micro-batch-size)."),
        f("training.seq_len", "Sequence length", "tokens", Number, false, ALL, "Tokens per sequence (Megatron --seq-length)."),
        f("training.gradient_accumulation_steps", "Gradient accumulation", "steps", Number, false, ALL, "Micro-batches per optimizer step (HF gradient_accumulation_steps); pipeline micro-batches under Megatron."),
        f("training.precision", "Precision", "", Select(PRECISIONS), false, ALL, "Mixed precision keeps fp32 master weights; pure bf16 keeps everything in 16 bits (torchtune)."),
        f("training.optimizer", "Optimizer", "", Kind::Optimizer, false, ALL, "Optimizer states per parameter follow the optimizer (AdamW: 2 states)."),
        f("training.optimizer_impl", "Optimizer implementation", "", Select(OPT_IMPL), true, TORCH, "torch.optim foreach (PyTorch default) allocates temporaries for all parameters; fused (HF Trainer adamw_torch_fused) none."),
        f("training.activation_checkpointing", "Activation recomputation", "", Select(RECOMPUTE), false, ALL, "Gradient checkpointing (HF gradient_checkpointing; Megatron --recompute-granularity)."),
        f("training.attention", "Attention", "", Select(ATTENTION), false, ALL, "Eager attention stores b x heads x s^2 scores; SDPA/flash do not (HF attn_implementation)."),
        f("training.loss", "Loss", "", Select(LOSS), false, ALL, "How the vocabulary cross-entropy is computed (chunked: torchtune; fused: Liger)."),
        f("training.accumulate_grads_in_fp32", "fp32 gradient accumulation", "", Select(TRISTATE), true, ALL, "Megatron main_grad / DeepSpeed data_types.grad_accum_dtype fp32."),
        f("training.optimizer_in_backward", "Optimizer step in backward", "", Check, true, TORCH, "torchtune optimizer_in_bwd: each gradient is freed as soon as its parameter is updated."),
    ]},
        Section { title: "LoRA / QLoRA", open: true, modes: TUNE, fields: &[
        f("training.lora.rank", "Rank r", "", Number, false, ALL, "PEFT LoraConfig.r: A is r x in, B is out x r."),
        f("training.lora.alpha", "Alpha", "", Number, true, ALL, "PEFT lora_alpha (scaling only; no memory)."),
        f("training.lora.target_modules", "Target modules", "", Kind::Targets, false, ALL, "Comma-separated module names (q_proj, v_proj, ...) or all-linear."),
        f("training.lora.dropout", "Dropout", "", Number, true, ALL, "PEFT lora_dropout: a mask and a copy of each targeted input when > 0."),
        f("training.lora.base_weight_format", "Base weights", "", Select(BASE_FORMATS), true, ALL, "Frozen base model: bf16 (LoRA) or nf4 (QLoRA, bitsandbytes 4-bit)."),
        f("training.lora.adapters_fp32", "Adapters in fp32", "", Check, true, ALL, "PEFT autocast_adapter_dtype (default on)."),
    ]},
    Section { title: "Inference", open: true, modes: INFER, fields: &[
        f("inference.engine", "Runtime", "", Select(RUNTIMES), true, ALL, "transformers generate, or vLLM (paged KV cache sized from gpu_memory_utilization)."),
        f("inference.batch_size", "Batch size", "sequences", Number, true, ALL, "Sequences generated together (transformers generate)."),
        f("inference.context_len", "Context length", "tokens", Number, true, ALL, "Prompt plus generated tokens per sequence (vLLM: max_model_len)."),
        f("inference.prompt_len", "Prompt length", "tokens", Number, true, ALL, "Tokens prefilled at once. Empty: the whole context."),
        f("inference.weight_format", "Weights", "", Select(WEIGHT_FORMATS), true, ALL, "Storage of the linear layers; embeddings, head and norms stay 16-bit."),
        f("inference.group_size", "Quantization group", "inputs", Number, true, ALL, "GPTQ/AWQ group_size (default 128)."),
        f("inference.zero_point", "Zero points", "", Check, true, ALL, "GPTQ/AWQ asymmetric quantization (sym=False): a 4-bit zero per group (default on)."),
        f("inference.double_quant", "Double quantization", "", Check, true, ALL, "bitsandbytes bnb_4bit_use_double_quant for NF4 (default on)."),
        f("inference.kv_cache_dtype", "KV cache", "", Select(KV_DTYPES), true, ALL, "vLLM kv_cache_dtype."),
        f("inference.logits_to_keep", "Logits kept", "positions", Number, true, ALL, "transformers logits_to_keep: positions whose logits the prefill computes (default 1)."),
        f("inference.max_model_len", "Max model length", "tokens", Number, true, ALL, "vLLM max_model_len. Empty: the context length."),
        f("inference.attention", "Attention", "", Select(ATTENTION), true, ALL, "Eager attention materializes the scores during the prefill."),
        f("inference.prefill_chunk", "Prefill chunk", "tokens", Number, true, ALL, "Chunked prefill: tokens per forward pass. Empty: the whole prompt."),
        f("inference.gpu_memory_utilization", "GPU memory utilization", "fraction", Number, true, ALL, "vLLM gpu_memory_utilization (default 0.9)."),
        f("inference.max_num_batched_tokens", "Max batched tokens", "tokens", Number, true, ALL, "vLLM max_num_batched_tokens: the profiling forward pass (default 8192)."),
        f("inference.max_num_seqs", "Max sequences", "", Number, true, ALL, "vLLM max_num_seqs: rows of the profiled sampler (default 1024)."),
    ]},
    Section { title: "Parallelism", open: true, modes: ALL_MODES, fields: &[
        f("hardware.num_gpus", "GPUs", "", Number, true, ALL, "GPUs in the job (data x tensor x pipeline x context parallel)."),
        f("parallelism.data_parallel_size", "Data parallel", "", Number, true, ALL, "DP size; ZeRO and FSDP shard over it. Empty: GPUs / (TP x PP x CP).").only(TRAIN | TUNE),
        f("parallelism.tensor_parallel_size", "Tensor parallel", "", Number, true, MODEL_PARALLEL, "Megatron --tensor-model-parallel-size."),
        f("parallelism.pipeline_parallel_size", "Pipeline parallel", "", Number, true, MODEL_PARALLEL, "Megatron --pipeline-model-parallel-size."),
        f("parallelism.sequence_parallel", "Sequence parallel", "", Check, true, MEGATRON, "Megatron --sequence-parallel (needs TP > 1).").only(TRAIN | TUNE),
        f("parallelism.context_parallel_size", "Context parallel", "", Number, true, MODEL_PARALLEL, "Megatron --context-parallel-size / DeepSpeed-Ulysses sequence parallel size: splits the sequence.").only(TRAIN | TUNE),
        f("parallelism.expert_parallel_size", "Expert parallel", "", Number, true, MODEL_PARALLEL, "Megatron --expert-model-parallel-size: MoE experts divided over EP ranks."),
        f("parallelism.virtual_pipeline_parallel_size", "Virtual pipeline stages", "per rank", Number, true, MEGATRON, "Megatron interleaved 1F1B schedule (--num-virtual-stages-per-pipeline-rank).").only(TRAIN | TUNE),
        f("parallelism.first_pipeline_stage_layers", "Layers on the first stage", "", Number, true, MEGATRON, "Megatron --decoder-first-pipeline-num-layers (uneven split). Empty: even.").only(TRAIN | TUNE),
        f("parallelism.last_pipeline_stage_layers", "Layers on the last stage", "", Number, true, MEGATRON, "Megatron --decoder-last-pipeline-num-layers. Empty: even.").only(TRAIN | TUNE),
    ]},
    Section { title: "Engine", open: true, modes: TRAIN | TUNE, fields: &[
        f("engine.type", "Engine", "", Select(ENGINES), false, ALL, "The training framework."),
        f("engine.zero_stage", "ZeRO stage", "", Select(ZERO), true, ZERO_ENGINES, "DeepSpeed zero_optimization.stage: 1 shards optimizer states, 2 also gradients, 3 also parameters."),
        f("engine.offload_optimizer", "Offload optimizer", "", Select(OFFLOAD), true, ZERO_ENGINES, "DeepSpeed zero_optimization.offload_optimizer.device."),
        f("engine.offload_param", "Offload parameters", "", Select(OFFLOAD), true, ZERO_ENGINES, "DeepSpeed zero_optimization.offload_param.device (ZeRO-3)."),
        f("engine.sharding_strategy", "Sharding strategy", "", Select(SHARDING), true, Some(&["fsdp"]), "torch.distributed.fsdp.ShardingStrategy."),
        f("engine.distributed_optimizer", "Distributed optimizer", "", Check, true, Some(&["megatron"]), "Megatron --use-distributed-optimizer: shards master weights and optimizer states over DP."),
    ]},
    Section { title: "Engine tuning", open: false, modes: TRAIN | TUNE, fields: &[
        f("engine.reduce_bucket_size", "Reduce bucket", "elements", Number, true, DEEPSPEED, "DeepSpeed zero_optimization.reduce_bucket_size (default 5e8)."),
        f("engine.overlap_comm", "Overlap communication", "", Check, true, DEEPSPEED, "DeepSpeed zero_optimization.overlap_comm: double-buffers the reduce bucket."),
        f("engine.stage3_prefetch_bucket_size", "ZeRO-3 prefetch bucket", "elements", Number, true, DEEPSPEED, "DeepSpeed stage3_prefetch_bucket_size (default 5e7)."),
        f("engine.stage3_max_live_parameters", "ZeRO-3 max live parameters", "elements", Number, true, DEEPSPEED, "DeepSpeed stage3_max_live_parameters (default 1e9)."),
        f("engine.stage3_param_persistence_threshold", "ZeRO-3 persistence threshold", "elements", Number, true, DEEPSPEED, "DeepSpeed stage3_param_persistence_threshold: smaller tensors stay unsharded (default 1e5)."),
        f("engine.sub_group_size", "ZeRO-3 sub-group size", "elements", Number, true, DEEPSPEED, "DeepSpeed sub_group_size: the step updates one sub-group at a time (default 1e9)."),
        f("engine.hybrid_shard_group_size", "Hybrid shard group", "GPUs", Number, true, Some(&["fsdp"]), "GPUs per shard group for HYBRID_SHARD (default: GPUs per node)."),
        f("engine.cpu_offload", "CPU offload", "", Check, true, Some(&["fsdp"]), "FSDP CPUOffload(offload_params=True)."),
        f("engine.bucket_cap_mb", "DDP bucket size", "MiB", Number, true, Some(&["ddp"]), "DistributedDataParallel bucket_cap_mb (default 25)."),
        f("engine.gradient_as_bucket_view", "Gradients as bucket views", "", Check, true, Some(&["ddp"]), "DistributedDataParallel gradient_as_bucket_view: without it the buckets are a second copy of all gradients."),
    ]},
    Section { title: "Overheads", open: false, modes: ALL_MODES, fields: &[
        f("hardware.gpus_per_node", "GPUs per node", "", Number, true, ALL, "For NCCL and FSDP hybrid sharding (default 8)."),
        f("overheads.cuda_context_mib", "CUDA context", "MiB", Number, true, ALL, "Driver and kernel memory outside PyTorch's allocator. Empty: the GPU preset's measured value."),
        f("overheads.allocator_reserve_fraction", "Allocator reserve", "fraction of peak", Number, true, ALL, "Caching-allocator fragmentation: max_memory_reserved / max_memory_allocated - 1 (e.g. 0.05).").only(TRAIN | TUNE),
    ]},
];

/// What the user typed in the LoRA targets field, as JSON.
pub fn targets_value(text: &str) -> Value {
    let t = text.trim();
    if t == "all-linear" || t.is_empty() {
        return Value::String(t.to_string());
    }
    Value::Array(
        t.split(',')
            .map(|x| x.trim())
            .filter(|x| !x.is_empty())
            .map(|x| Value::String(x.to_string()))
            .collect(),
    )
}

/// The targets field's text for a JSON value.
pub fn targets_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// The engine `type` of a document.
pub fn engine_type(doc: &Value) -> String {
    get(doc, "engine.type")
        .and_then(|v| v.as_str())
        .unwrap_or("ddp")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let mut d = json!({});
        set(&mut d, "training.seq_len", Some(json!(4096)));
        assert_eq!(get(&d, "training.seq_len"), Some(&json!(4096)));
        set(&mut d, "training.seq_len", None);
        assert_eq!(d, json!({"training": {}}));
        assert_eq!(value_of("12", false), Some(json!(12)));
        assert_eq!(value_of("abc", false), Some(json!("abc")));
        assert_eq!(value_of("", true), None);
        assert_eq!(value_of(" ", false), Some(json!("")));
    }
}

#[cfg(test)]
mod default_tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_schema() {
        assert_eq!(default_at("inference.zero_point"), Some(Value::Bool(true)));
        assert_eq!(
            default_at("inference.double_quant"),
            Some(Value::Bool(true))
        );
        assert_eq!(
            default_at("training.lora.adapters_fp32"),
            Some(Value::Bool(true))
        );
    }
}
