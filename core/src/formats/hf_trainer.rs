//! Hugging Face `TrainingArguments` as JSON (transformers/training_args.py): the batch,
//! accumulation, `bf16` / `fp16`, `optim`, `gradient_checkpointing`, `torch_compile`, and the
//! engine: `fsdp` + `fsdp_config`, `deepspeed` (an inline ds_config; a path is not followed),
//! else DDP (`ddp_bucket_cap_mb`).

use super::{Format, Import, as_bool, cannot, text};
use crate::config::{Config, Engine, OptimizerImpl, Precision, ShardingStrategy};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Map, Value, json};

/// Our keys TrainingArguments have no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.seq_len",
    "training.attention",
    "training.loss",
    "training.lora",
    "training.activation_offloading",
    "training.optimizer_in_backward",
    "training.accumulate_grads_in_fp32",
    "parallelism",
    "hardware",
    "overheads",
];

/// TrainingArguments' defaults (transformers/training_args.py) of the keys the estimate
/// reads, for a Trainer script's command line that leaves them out.
pub(super) fn flag_defaults() -> [(&'static str, Value); 6] {
    [
        ("per_device_train_batch_size", json!(8)),
        ("gradient_accumulation_steps", json!(1)),
        ("bf16", json!(false)),
        ("fp16", json!(false)),
        ("gradient_checkpointing", json!(false)),
        ("optim", json!("adamw_torch")),
    ]
}

/// HF `optim` names (transformers/training_args.py `OptimizerNames`) and ours.
pub(super) const OPTIM: &[(&str, &str, OptimizerImpl)] = &[
    ("adamw_torch_fused", "adamw", OptimizerImpl::Fused),
    ("adamw_torch", "adamw", OptimizerImpl::Foreach),
    ("adamw_hf", "adamw", OptimizerImpl::Foreach),
    ("adamw_apex_fused", "adamw", OptimizerImpl::Fused),
    ("adafactor", "adafactor", OptimizerImpl::Foreach),
    ("adamw_bnb_8bit", "adamw_8bit", OptimizerImpl::Foreach),
    ("adamw_8bit", "adamw_8bit", OptimizerImpl::Foreach),
    (
        "paged_adamw_8bit",
        "paged_adamw_8bit",
        OptimizerImpl::Foreach,
    ),
    ("lion_8bit", "lion_8bit", OptimizerImpl::Foreach),
    ("lion_32bit", "lion", OptimizerImpl::Foreach),
    ("adamw_torch_4bit", "adamw_4bit", OptimizerImpl::Foreach),
    ("sgd", "sgd", OptimizerImpl::Foreach),
    ("adagrad", "adagrad", OptimizerImpl::Foreach),
    ("rmsprop", "rmsprop", OptimizerImpl::Foreach),
];

/// Reads an HF `optim` name (`key`) into our optimizer and its implementation.
pub(super) fn read_optim(im: &mut Import, key: &str) {
    let Some(v) = im.take(key) else { return };
    let name = text(&v).to_ascii_lowercase();
    match OPTIM.iter().find(|(h, _, _)| *h == name) {
        Some((_, ours, imp)) => {
            im.put(key, &v, "training.optimizer", json!(ours));
            im.put(
                key,
                &v,
                "training.optimizer_impl",
                serde_json::to_value(imp).unwrap_or(Value::Null),
            );
        }
        None => im.fail(
            key,
            &v,
            format!(
                "an optimizer the estimate does not model; known: {}",
                OPTIM.iter().map(|o| o.0).collect::<Vec<_>>().join(", ")
            ),
        ),
    }
}

/// The HF `optim` name of our optimizer and implementation.
pub(super) fn optim_name(config: &Config, format: Format) -> Result<&'static str, Vec<FieldError>> {
    let t = &config.training;
    OPTIM
        .iter()
        .find(|(_, o, imp)| *o == t.optimizer.name() && (*imp == t.optimizer_impl || *o != "adamw"))
        .filter(|(_, o, _)| *o == "adamw" || t.optimizer_impl == OptimizerImpl::Foreach)
        .map(|(h, _, _)| *h)
        .ok_or_else(|| {
            cannot(
                "training.optimizer",
                format!("{} ({:?})", t.optimizer.name(), t.optimizer_impl),
                format,
                "no HF optim name runs this optimizer this way",
            )
        })
}

/// Reads an FSDP option string (`"full_shard auto_wrap offload"`, or a list of them) and an
/// `fsdp_config` (`prefix` its key) into our fsdp engine; the FSDP version is the first of
/// `version_keys` present (else 1). Under FSDP2 the strategy words say what
/// `reshard_after_forward` says (`full_shard`: true, `shard_grad_op`: false).
pub(super) fn read_fsdp(
    im: &mut Import,
    key: &str,
    v: &Value,
    config_prefix: &str,
    version_keys: &[&str],
) {
    let words: Vec<String> = match v {
        Value::Array(a) => a.iter().map(text).collect(),
        v => text(v).split_whitespace().map(str::to_string).collect(),
    };
    im.reset("engine", json!({"type": "fsdp", "fsdp_version": 1}));
    im.put(key, v, "engine.type", json!("fsdp"));
    let version = im.fsdp_version(version_keys).unwrap_or(1);
    for w in &words {
        match w.to_ascii_lowercase().as_str() {
            "full_shard" => im.put(key, v, "engine.sharding_strategy", json!("FULL_SHARD")),
            "shard_grad_op" => im.put(key, v, "engine.sharding_strategy", json!("SHARD_GRAD_OP")),
            "hybrid_shard" => im.put(key, v, "engine.sharding_strategy", json!("HYBRID_SHARD")),
            "no_shard" => im.put(key, v, "engine.sharding_strategy", json!("NO_SHARD")),
            "offload" => im.put(key, v, "engine.cpu_offload", json!(true)),
            "auto_wrap" => {}
            _ => im.fail(key, v, format!("unknown FSDP option {w:?}")),
        }
    }
    if version == 2 {
        match im.ours("engine.sharding_strategy").and_then(Value::as_str) {
            Some("SHARD_GRAD_OP") => im.put(key, v, "engine.reshard_after_forward", json!(false)),
            Some("FULL_SHARD") | None => {}
            Some(s) => im.fail(key, v, format!("{s} is an FSDP1 strategy; FSDP2 replicates with parallelism.data_parallel_replicate_size")),
        }
        im.reset("engine.sharding_strategy", Value::Null);
    }
    let c = |s: &str| format!("{config_prefix}{s}");
    for name in ["reshard_after_forward", "fsdp_reshard_after_forward"] {
        if let Some(v) = im.take(&c(name)) {
            read_reshard(im, &c(name), &v);
        }
    }
    for name in ["activation_checkpointing", "fsdp_activation_checkpointing"] {
        im.recompute_flag(&c(name));
    }
    for name in ["offload_params", "fsdp_offload_params", "cpu_offload"] {
        im.flag_into(&c(name), "engine.cpu_offload");
    }
}

/// FSDP2 `reshard_after_forward` (a bool or a group size); FSDP1's strategy name under the
/// same key (accelerate writes `FULL_SHARD` there for version 1).
pub(super) fn read_reshard(im: &mut Import, key: &str, v: &Value) {
    if let Some(b) = as_bool(v) {
        let v1 = im.ours("engine.fsdp_version").and_then(Value::as_u64) == Some(1);
        if v1 {
            let s = if b { "FULL_SHARD" } else { "SHARD_GRAD_OP" };
            im.put(key, v, "engine.sharding_strategy", json!(s));
        } else {
            im.put(key, v, "engine.reshard_after_forward", json!(b));
        }
        return;
    }
    if let Some(n) = super::as_count(v) {
        im.put(key, v, "engine.reshard_after_forward", json!(n));
        return;
    }
    let s = text(v).to_ascii_uppercase();
    if [
        "FULL_SHARD",
        "SHARD_GRAD_OP",
        "NO_SHARD",
        "HYBRID_SHARD",
        "HYBRID_SHARD_ZERO2",
    ]
    .contains(&s.as_str())
    {
        let s = if s == "HYBRID_SHARD_ZERO2" {
            "HYBRID_SHARD".to_string()
        } else {
            s
        };
        im.put(key, v, "engine.sharding_strategy", json!(s));
    } else {
        im.fail(
            key,
            v,
            "must be true, false, a group size or an FSDP1 sharding strategy",
        );
    }
}

/// Reads TrainingArguments keys.
pub(super) fn read(im: &mut Import) {
    // a Trainer script's model argument (not a TrainingArguments key)
    if let Some(v) = im.take("model_name_or_path") {
        im.model_from_hf_id("model_name_or_path", &v);
    }
    im.count("per_device_train_batch_size", "training.micro_batch_size");
    im.count(
        "gradient_accumulation_steps",
        "training.gradient_accumulation_steps",
    );
    // bf16 / fp16 turn on autocast over fp32 weights
    im.half_flags(["amp_bf16", "amp_fp16"], false, false);
    read_optim(im, "optim");
    im.recompute_flag("gradient_checkpointing");
    im.flag_into("torch_compile", "training.compile");
    let fsdp = im.take("fsdp").filter(|v| match v {
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Bool(b) => *b,
        _ => false,
    });
    let deepspeed_inline = im.input.keys.keys().any(|k| k.starts_with("deepspeed."));
    if let Some(v) = fsdp {
        let v = if v == Value::Bool(true) {
            json!("full_shard")
        } else {
            v
        };
        read_fsdp(
            im,
            "fsdp",
            &v,
            "fsdp_config.",
            &["fsdp_config.fsdp_version", "fsdp_config.version"],
        );
    } else if deepspeed_inline {
        super::deepspeed::read_at(im, "deepspeed.");
    } else if let Some(v) = im.take("deepspeed").filter(|v| !v.is_null()) {
        im.ignore(
            "deepspeed",
            format!(
                "{} is a path: import that ds_config.json itself; the engine is the base's",
                text(&v)
            ),
        );
    } else {
        im.reset("engine", json!({"type": "ddp"}));
        if let Some(v) = im.take("ddp_bucket_cap_mb").filter(|v| !v.is_null()) {
            match super::as_f64(&v) {
                Some(x) => im.put("ddp_bucket_cap_mb", &v, "engine.bucket_cap_mb", json!(x)),
                None => im.fail("ddp_bucket_cap_mb", &v, "must be a number"),
            }
        }
    }
}

/// Why a TrainingArguments key is not read.
pub(super) fn reason(key: &str) -> String {
    if key.contains("learning_rate")
        || key.contains("lr_scheduler")
        || key.contains("warmup")
        || key.contains("weight_decay")
        || key.starts_with("adam_")
        || key == "max_grad_norm"
        || key == "num_train_epochs"
        || key == "max_steps"
        || key == "seed"
    {
        return "a hyperparameter: no memory of its own".into();
    }
    if key.contains("eval")
        || key.contains("save")
        || key.contains("logging")
        || key.contains("report_to")
        || key.contains("output_dir")
        || key.contains("hub")
        || key.contains("push_to")
        || key.starts_with("run_name")
    {
        return "evaluation, logging or checkpointing: not the training step's memory".into();
    }
    if key.starts_with("dataloader")
        || key.contains("group_by_length")
        || key.contains("remove_unused_columns")
    {
        return "data loading: CPU-side".into();
    }
    "not a TrainingArguments setting the estimate reads".into()
}

/// The precision as HF's `bf16` / `fp16` flags.
pub(super) fn amp_flags(config: &Config, format: Format) -> Result<(bool, bool), Vec<FieldError>> {
    match config.training.precision {
        Precision::AmpBf16 => Ok((true, false)),
        Precision::AmpFp16 => Ok((false, true)),
        Precision::Fp32 => Ok((false, false)),
        p => Err(cannot(
            "training.precision",
            super::precision_id(p),
            format,
            "its bf16 / fp16 flags turn on autocast with fp32 weights (amp_bf16, amp_fp16); pure 16-bit or FP8 training is not a flag",
        )),
    }
}

/// FSDP options as HF's `fsdp` words and `fsdp_config`.
pub(super) fn fsdp_words(
    config: &Config,
    format: Format,
) -> Result<(String, Map<String, Value>), Vec<FieldError>> {
    let Engine::Fsdp(f) = &config.engine else {
        return Ok((String::new(), Map::new()));
    };
    let mut words = vec![match f.sharding_strategy.unwrap_or_default() {
        ShardingStrategy::FullShard => "full_shard",
        ShardingStrategy::ShardGradOp => "shard_grad_op",
        ShardingStrategy::HybridShard => "hybrid_shard",
        ShardingStrategy::NoShard => "no_shard",
    }];
    if f.cpu_offload {
        words.push("offload");
    }
    words.push("auto_wrap");
    let mut c = Map::new();
    c.insert("fsdp_version".into(), json!(f.fsdp_version));
    if let Some(r) = f.reshard_after_forward {
        c.insert("reshard_after_forward".into(), json!(r));
    }
    if f.param_dtype.is_some() || f.reduce_dtype.is_some() || f.hybrid_shard_group_size.is_some() {
        return Err(cannot(
            "engine",
            "param_dtype / reduce_dtype / hybrid_shard_group_size",
            format,
            "mixed-precision dtypes follow the bf16 / fp16 flag; the hybrid group is the node",
        ));
    }
    Ok((words.join(" "), c))
}

/// TrainingArguments JSON of a training config.
pub(super) fn write(config: &Config, _r: &Resolved) -> Result<Value, Vec<FieldError>> {
    let t = &config.training;
    let (bf16, fp16) = amp_flags(config, Format::HfTrainer)?;
    let mut m = Map::new();
    m.insert("output_dir".into(), json!("output"));
    m.insert(
        "per_device_train_batch_size".into(),
        json!(t.micro_batch_size),
    );
    m.insert(
        "gradient_accumulation_steps".into(),
        json!(t.gradient_accumulation_steps),
    );
    m.insert("bf16".into(), json!(bf16));
    m.insert("fp16".into(), json!(fp16));
    m.insert(
        "optim".into(),
        json!(optim_name(config, Format::HfTrainer)?),
    );
    m.insert(
        "gradient_checkpointing".into(),
        json!(t.activation_checkpointing == crate::config::Recompute::Full),
    );
    if !matches!(
        t.activation_checkpointing,
        crate::config::Recompute::None | crate::config::Recompute::Full
    ) {
        return Err(cannot(
            "training.activation_checkpointing",
            "selective",
            Format::HfTrainer,
            "gradient_checkpointing recomputes whole layers",
        ));
    }
    m.insert("torch_compile".into(), json!(t.compile));
    match &config.engine {
        Engine::Ddp(d) => {
            if d.gradient_as_bucket_view {
                return Err(cannot(
                    "engine.gradient_as_bucket_view",
                    true,
                    Format::HfTrainer,
                    "the Trainer has no argument for it",
                ));
            }
            m.insert("ddp_bucket_cap_mb".into(), json!(d.bucket_cap_mb));
        }
        Engine::Fsdp(_) => {
            let (words, c) = fsdp_words(config, Format::HfTrainer)?;
            m.insert("fsdp".into(), json!(words));
            m.insert("fsdp_config".into(), Value::Object(c));
        }
        Engine::Deepspeed(_) => {
            m.insert("deepspeed".into(), super::deepspeed::write(config, _r)?);
        }
        e => {
            return Err(cannot(
                "engine.type",
                e.kind(),
                Format::HfTrainer,
                "the Trainer runs DDP, FSDP or DeepSpeed",
            ));
        }
    }
    Ok(Value::Object(m))
}
