//! The config document being edited: a JSON value addressed by dotted paths, and the
//! table of form fields. Nothing here computes memory; validation and estimates come
//! from `calc_core`.

use serde_json::{Map, Value};

/// The value at a dotted path (`training.seq_len`).
pub fn get<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |cur, seg| cur.get(seg))
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
const ZERO_ENGINES: Engines = Some(&["deepspeed", "megatron_deepspeed"]);
const MODEL_PARALLEL: Engines = Some(&["megatron", "megatron_deepspeed", "fsdp", "deepspeed"]);

/// The fields of the training form, grouped by section title.
pub const SECTIONS: &[(&str, &[FieldSpec])] = &[
    (
        "Training",
        &[
            FieldSpec {
                path: "training.micro_batch_size",
                label: "Micro-batch size",
                unit: "sequences / GPU",
                help: "Sequences per GPU per forward pass (HF per_device_train_batch_size, Megatron --micro-batch-size).",
                kind: Kind::Number,
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.seq_len",
                label: "Sequence length",
                unit: "tokens",
                help: "Tokens per sequence (Megatron --seq-length).",
                kind: Kind::Number,
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.gradient_accumulation_steps",
                label: "Gradient accumulation",
                unit: "steps",
                help: "Micro-batches per optimizer step (HF gradient_accumulation_steps).",
                kind: Kind::Number,
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.precision",
                label: "Precision",
                unit: "",
                help: "Mixed precision keeps fp32 master weights; pure bf16 keeps everything in 16 bits (torchtune).",
                kind: Kind::Select(PRECISIONS),
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.optimizer",
                label: "Optimizer",
                unit: "",
                help: "Optimizer states per parameter follow the optimizer (AdamW: 2 states).",
                kind: Kind::Optimizer,
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.optimizer_impl",
                label: "Optimizer implementation",
                unit: "",
                help: "torch.optim foreach (PyTorch default) allocates temporaries for all parameters; fused (HF Trainer adamw_torch_fused) none.",
                kind: Kind::Select(OPT_IMPL),
                optional: true,
                engines: Some(&["ddp", "fsdp"]),
            },
            FieldSpec {
                path: "training.activation_checkpointing",
                label: "Activation recomputation",
                unit: "",
                help: "Gradient checkpointing (HF gradient_checkpointing; Megatron --recompute-granularity).",
                kind: Kind::Select(RECOMPUTE),
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.attention",
                label: "Attention",
                unit: "",
                help: "Eager attention stores b x heads x s^2 scores; SDPA/flash do not (HF attn_implementation).",
                kind: Kind::Select(ATTENTION),
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "training.loss",
                label: "Loss",
                unit: "",
                help: "How the vocabulary cross-entropy is computed (chunked: torchtune; fused: Liger).",
                kind: Kind::Select(LOSS),
                optional: false,
                engines: None,
            },
        ],
    ),
    (
        "Parallelism",
        &[
            FieldSpec {
                path: "hardware.num_gpus",
                label: "GPUs",
                unit: "",
                help: "GPUs in the job (data x tensor x pipeline x context parallel).",
                kind: Kind::Number,
                optional: true,
                engines: None,
            },
            FieldSpec {
                path: "parallelism.data_parallel_size",
                label: "Data parallel",
                unit: "",
                help: "DP size; ZeRO and FSDP shard over it. Empty: GPUs / (TP x PP x CP).",
                kind: Kind::Number,
                optional: true,
                engines: None,
            },
            FieldSpec {
                path: "parallelism.tensor_parallel_size",
                label: "Tensor parallel",
                unit: "",
                help: "Megatron --tensor-model-parallel-size.",
                kind: Kind::Number,
                optional: true,
                engines: MODEL_PARALLEL,
            },
            FieldSpec {
                path: "parallelism.pipeline_parallel_size",
                label: "Pipeline parallel",
                unit: "",
                help: "Megatron --pipeline-model-parallel-size.",
                kind: Kind::Number,
                optional: true,
                engines: MODEL_PARALLEL,
            },
            FieldSpec {
                path: "parallelism.sequence_parallel",
                label: "Sequence parallel",
                unit: "",
                help: "Megatron --sequence-parallel (needs TP > 1).",
                kind: Kind::Check,
                optional: true,
                engines: Some(&["megatron", "megatron_deepspeed"]),
            },
        ],
    ),
    (
        "Engine",
        &[
            FieldSpec {
                path: "engine.type",
                label: "Engine",
                unit: "",
                help: "The training framework.",
                kind: Kind::Select(ENGINES),
                optional: false,
                engines: None,
            },
            FieldSpec {
                path: "engine.zero_stage",
                label: "ZeRO stage",
                unit: "",
                help: "DeepSpeed zero_optimization.stage: 1 shards optimizer states, 2 also gradients, 3 also parameters.",
                kind: Kind::Select(ZERO),
                optional: true,
                engines: ZERO_ENGINES,
            },
            FieldSpec {
                path: "engine.offload_optimizer",
                label: "Offload optimizer",
                unit: "",
                help: "DeepSpeed zero_optimization.offload_optimizer.device.",
                kind: Kind::Select(OFFLOAD),
                optional: true,
                engines: ZERO_ENGINES,
            },
            FieldSpec {
                path: "engine.offload_param",
                label: "Offload parameters",
                unit: "",
                help: "DeepSpeed zero_optimization.offload_param.device (ZeRO-3).",
                kind: Kind::Select(OFFLOAD),
                optional: true,
                engines: ZERO_ENGINES,
            },
            FieldSpec {
                path: "engine.sharding_strategy",
                label: "Sharding strategy",
                unit: "",
                help: "torch.distributed.fsdp.ShardingStrategy.",
                kind: Kind::Select(SHARDING),
                optional: true,
                engines: Some(&["fsdp"]),
            },
            FieldSpec {
                path: "engine.distributed_optimizer",
                label: "Distributed optimizer",
                unit: "",
                help: "Megatron --use-distributed-optimizer: shards master weights and optimizer states over DP.",
                kind: Kind::Check,
                optional: true,
                engines: Some(&["megatron"]),
            },
        ],
    ),
];

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
