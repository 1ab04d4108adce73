//! Axolotl YAML (axolotl/utils/schemas/config.py `AxolotlInputConfig`): `base_model`,
//! `sequence_len`, `micro_batch_size`, `gradient_accumulation_steps`, `bf16` / `fp16`,
//! `optimizer` (HF `optim` names), `gradient_checkpointing`, the attention flags, `adapter`
//! (lora / qlora) with `lora_*` and `load_in_4bit` / `load_in_8bit`, `torch_compile`, `fsdp` /
//! `fsdp_config` / `fsdp_version`; `deepspeed` is a path to a ds_config.json, not followed.
//! With `bf16: true` Axolotl loads the model in bf16 (`torch_dtype`) and the Trainer runs
//! autocast over bf16 weights: pure bf16 training, precision `bf16`.

use super::{Format, Import, as_bool, cannot, text};
use crate::config::{Attention, Config, Engine, Precision, Recompute, TargetModules, WeightFormat};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Map, Value, json};

/// Our keys an Axolotl config has no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.loss",
    "training.activation_offloading",
    "training.optimizer_in_backward",
    "training.accumulate_grads_in_fp32",
    "parallelism",
    "hardware",
    "overheads",
];

/// Reads an Axolotl config.
pub(super) fn read(im: &mut Import) {
    if let Some(v) = im.take("base_model") {
        im.model_from_hf_id("base_model", &v);
    }
    im.count("sequence_len", "training.seq_len");
    im.count("micro_batch_size", "training.micro_batch_size");
    im.count(
        "gradient_accumulation_steps",
        "training.gradient_accumulation_steps",
    );
    // bf16 / fp16 (or auto) load the model in that dtype: pure 16-bit training
    im.half_flags(["bf16", "fp16"], true, true);
    super::hf_trainer::read_optim(im, "optimizer");
    if let Some(v) = im.take("gradient_checkpointing") {
        // true, false or "unsloth" / "offload" (checkpoints offloaded to CPU)
        let s = text(&v).to_ascii_lowercase();
        match (as_bool(&v), s.as_str()) {
            (Some(b), _) => im.put(
                "gradient_checkpointing",
                &v,
                "training.activation_checkpointing",
                json!(if b { "full" } else { "none" }),
            ),
            (None, "offload" | "unsloth") => {
                im.put(
                    "gradient_checkpointing",
                    &v,
                    "training.activation_checkpointing",
                    json!("full"),
                );
                im.put(
                    "gradient_checkpointing",
                    &v,
                    "training.activation_offloading",
                    json!(true),
                );
            }
            _ => im.fail(
                "gradient_checkpointing",
                &v,
                "must be true, false or offload",
            ),
        }
    }
    let flash = im.flag("flash_attention") == Some(true);
    let sdp = im.flag("sdp_attention") == Some(true);
    let eager = im.flag("eager_attention") == Some(true);
    let attention = if flash {
        "flash"
    } else if sdp {
        "sdpa"
    } else if eager {
        "eager"
    } else {
        "sdpa"
    };
    im.put(
        "flash_attention, sdp_attention, eager_attention",
        &json!([flash, sdp, eager]),
        "training.attention",
        json!(attention),
    );
    im.flag_into("torch_compile", "training.compile");
    // adapters
    let adapter = im
        .take("adapter")
        .map(|v| text(&v).to_ascii_lowercase())
        .filter(|s| !s.is_empty() && s != "null");
    let in4 = im.flag("load_in_4bit") == Some(true);
    let in8 = im.flag("load_in_8bit") == Some(true);
    match adapter.as_deref() {
        None => im.reset("training.lora", Value::Null),
        Some(a @ ("lora" | "qlora")) => {
            im.reset("training.lora", json!({}));
            let base = if a == "qlora" || in4 {
                "nf4"
            } else if in8 {
                "int8"
            } else {
                "bf16"
            };
            im.put(
                "adapter, load_in_4bit, load_in_8bit",
                &json!(a),
                "training.lora.base_weight_format",
                json!(base),
            );
            im.count("lora_r", "training.lora.rank");
            im.float_into("lora_alpha", "training.lora.alpha");
            im.float_into("lora_dropout", "training.lora.dropout");
            let linear = im.flag("lora_target_linear") == Some(true);
            let modules = im.take("lora_target_modules");
            if linear {
                im.put(
                    "lora_target_linear",
                    &json!(true),
                    "training.lora.target_modules",
                    json!("all-linear"),
                );
            } else if let Some(v) = modules {
                match &v {
                    Value::Array(a) => {
                        let list: Vec<String> = a.iter().map(text).collect();
                        im.put(
                            "lora_target_modules",
                            &v,
                            "training.lora.target_modules",
                            json!(list),
                        );
                    }
                    Value::String(s) => im.put(
                        "lora_target_modules",
                        &v,
                        "training.lora.target_modules",
                        json!(s),
                    ),
                    _ => im.fail("lora_target_modules", &v, "must be a list of module names"),
                }
            }
        }
        Some(a) => im.fail(
            "adapter",
            &json!(a),
            "the estimate models lora and qlora adapters",
        ),
    }
    // engine
    let fsdp = im
        .take("fsdp")
        .filter(|v| !v.is_null() && v != &json!([]) && v != &json!(""));
    let fsdp_config = im.input.keys.keys().any(|k| k.starts_with("fsdp_config."));
    if let Some(v) = im.take("deepspeed").filter(|v| !v.is_null()) {
        im.ignore(
            "deepspeed",
            format!(
                "{} is a path: import that ds_config.json itself; the engine is the base's",
                text(&v)
            ),
        );
    } else if fsdp.is_some() || fsdp_config {
        let v = fsdp.unwrap_or(json!("full_shard auto_wrap"));
        super::hf_trainer::read_fsdp(
            im,
            "fsdp",
            &v,
            "fsdp_config.",
            &["fsdp_version", "fsdp_config.fsdp_version"],
        );
    } else {
        im.reset("engine", json!({"type": "ddp"}));
        im.put(
            "deepspeed, fsdp (absent)",
            &json!(null),
            "engine.type",
            json!("ddp"),
        );
    }
}

/// Why an Axolotl key is not read.
pub(super) fn reason(key: &str) -> String {
    let top = key.split('.').next().unwrap_or("");
    match top {
        "learning_rate"
        | "lr_scheduler"
        | "warmup_steps"
        | "warmup_ratio"
        | "weight_decay"
        | "num_epochs"
        | "max_steps"
        | "seed"
        | "max_grad_norm"
        | "adam_beta1"
        | "adam_beta2"
        | "adam_epsilon"
        | "lr_scheduler_kwargs"
        | "cosine_min_lr_ratio" => "a hyperparameter: no memory of its own".into(),
        "datasets"
        | "dataset_prepared_path"
        | "val_set_size"
        | "sample_packing"
        | "pad_to_sequence_len"
        | "eval_sample_packing"
        | "chat_template"
        | "train_on_inputs"
        | "group_by_length"
        | "special_tokens"
        | "tokenizer_type"
        | "model_type"
        | "dataset_processes"
        | "shuffle_merged_datasets" => {
            "data preparation: CPU-side (packed samples are sequence_len tokens)".into()
        }
        "output_dir"
        | "wandb_project"
        | "wandb_entity"
        | "wandb_watch"
        | "wandb_name"
        | "wandb_log_model"
        | "logging_steps"
        | "saves_per_epoch"
        | "evals_per_epoch"
        | "save_steps"
        | "eval_steps"
        | "hub_model_id"
        | "save_total_limit"
        | "resume_from_checkpoint"
        | "local_rank"
        | "debug"
        | "strict"
        | "save_safetensors" => {
            "logging, evaluation or checkpointing: not the training step's memory".into()
        }
        "tf32" => "the matmul precision: no memory of its own".into(),
        _ => "not an Axolotl setting the estimate reads".into(),
    }
}

/// An Axolotl config of a training config.
pub(super) fn write(config: &Config, _r: &Resolved) -> Result<Value, Vec<FieldError>> {
    let t = &config.training;
    let mut m = Map::new();
    let model = super::hf_id_of(config).unwrap_or_else(|| "meta-llama/Llama-3.1-8B".into());
    m.insert("base_model".into(), json!(model));
    match t.precision {
        Precision::Bf16 => {
            m.insert("bf16".into(), json!(true));
            m.insert("fp16".into(), json!(false));
        }
        Precision::Fp16 => {
            m.insert("bf16".into(), json!(false));
            m.insert("fp16".into(), json!(true));
        }
        Precision::Fp32 => {
            m.insert("bf16".into(), json!(false));
            m.insert("fp16".into(), json!(false));
        }
        p => {
            return Err(cannot(
                "training.precision",
                super::precision_id(p),
                Format::Axolotl,
                "bf16 / fp16 load the model in that dtype (pure 16-bit); AMP over fp32 weights and FP8 are not settings",
            ));
        }
    }
    if let Some(l) = &t.lora {
        let adapter = match l.base_weight_format {
            Some(WeightFormat::Nf4) => "qlora",
            None
            | Some(
                WeightFormat::Bf16 | WeightFormat::Fp16 | WeightFormat::Fp32 | WeightFormat::Int8,
            ) => "lora",
            Some(f) => {
                return Err(cannot(
                    "training.lora.base_weight_format",
                    format!("{f:?}"),
                    Format::Axolotl,
                    "the base loads in 16 bits, 8 bits or 4-bit NF4",
                ));
            }
        };
        m.insert("adapter".into(), json!(adapter));
        if adapter == "qlora" {
            m.insert("load_in_4bit".into(), json!(true));
        }
        if l.base_weight_format == Some(WeightFormat::Int8) {
            m.insert("load_in_8bit".into(), json!(true));
        }
        m.insert("lora_r".into(), json!(l.rank));
        m.insert("lora_alpha".into(), json!(l.alpha));
        m.insert("lora_dropout".into(), json!(l.dropout));
        match &l.target_modules {
            Some(TargetModules::All(_)) => {
                m.insert("lora_target_linear".into(), json!(true));
            }
            Some(TargetModules::List(v)) => {
                m.insert("lora_target_modules".into(), json!(v));
            }
            None => {}
        }
    }
    m.insert("sequence_len".into(), json!(t.seq_len));
    m.insert("micro_batch_size".into(), json!(t.micro_batch_size));
    m.insert(
        "gradient_accumulation_steps".into(),
        json!(t.gradient_accumulation_steps),
    );
    m.insert(
        "optimizer".into(),
        json!(super::hf_trainer::optim_name(config, Format::Axolotl)?),
    );
    m.insert(
        "gradient_checkpointing".into(),
        match (t.activation_checkpointing, t.activation_offloading) {
            (Recompute::None, false) => json!(false),
            (Recompute::Full, false) => json!(true),
            (Recompute::Full, true) => json!("offload"),
            _ => {
                return Err(cannot(
                    "training.activation_checkpointing",
                    format!("{:?}", t.activation_checkpointing),
                    Format::Axolotl,
                    "gradient_checkpointing recomputes whole layers",
                ));
            }
        },
    );
    match t.attention {
        Attention::Flash => m.insert("flash_attention".into(), json!(true)),
        Attention::Sdpa => m.insert("sdp_attention".into(), json!(true)),
        Attention::Eager => m.insert("eager_attention".into(), json!(true)),
        Attention::FlashTriton => {
            return Err(cannot(
                "training.attention",
                "flash_triton",
                Format::Axolotl,
                "its attention flags select FlashAttention-2, SDPA or eager attention",
            ));
        }
    };
    if t.compile {
        m.insert("torch_compile".into(), json!(true));
    }
    match &config.engine {
        Engine::Ddp(d) if d.bucket_cap_mb == 25.0 && !d.gradient_as_bucket_view => {}
        Engine::Fsdp(f) => {
            let (words, c) = super::hf_trainer::fsdp_words(config, Format::Axolotl)?;
            m.insert("fsdp".into(), json!(words.split(' ').collect::<Vec<_>>()));
            m.insert("fsdp_version".into(), json!(f.fsdp_version));
            let c: Map<String, Value> =
                c.into_iter().filter(|(k, _)| k != "fsdp_version").collect();
            if !c.is_empty() {
                m.insert("fsdp_config".into(), Value::Object(c));
            }
        }
        e => {
            return Err(cannot(
                "engine.type",
                e.kind(),
                Format::Axolotl,
                "an Axolotl file runs DDP or FSDP here (its deepspeed key is a path to a ds_config.json: export that separately)",
            ));
        }
    }
    m.insert("output_dir".into(), json!("./outputs/out"));
    Ok(Value::Object(m))
}
