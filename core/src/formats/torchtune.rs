//! torchtune recipe YAML (recipes/configs/*): the model builder (`model._component_`, with its
//! LoRA arguments), `batch_size`, `gradient_accumulation_steps`, `dtype` (torchtune trains in
//! pure bf16 or fp32), the optimizer and loss components, activation checkpointing and
//! offloading, `compile`, `optimizer_in_bwd`, and the distributed recipes' FSDP2 options.
//! The file does not name its recipe: more than one GPU in the base means a distributed
//! recipe (FSDP2, `fully_shard` per layer), one GPU a single-device recipe.

use super::{Format, Import, as_bool, cannot, text};
use crate::config::{Config, Engine, LossImpl, OptimizerImpl, Precision, Recompute, TargetModules};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Map, Value, json};

/// Our keys a torchtune recipe config has no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.seq_len",
    "training.attention",
    "training.accumulate_grads_in_fp32",
    "parallelism",
    "hardware",
    "overheads",
];

/// Letters and digits of a name, lower case (`llama3_1_8b` and `llama-3.1-8b` are one).
pub(super) fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The preset of a torchtune builder (`torchtune.models.llama3_1.lora_llama3_1_8b`), and
/// whether it is a LoRA or QLoRA builder.
fn builder_preset(component: &str) -> (Option<String>, Option<&'static str>) {
    let name = component.rsplit('.').next().unwrap_or("");
    let (kind, base) = if let Some(b) = name.strip_prefix("qlora_") {
        (Some("qlora"), b)
    } else if let Some(b) = name.strip_prefix("lora_") {
        (Some("lora"), b)
    } else {
        (None, name)
    };
    let key = squash(base);
    let trimmed = key
        .trim_end_matches("base")
        .trim_end_matches("instruct")
        .to_string();
    let presets = crate::presets::model_presets();
    let preset = [key.clone(), trimmed.clone(), format!("{trimmed}instruct")]
        .iter()
        .find_map(|k| presets.iter().find(|p| squash(&p.id) == *k))
        .map(|p| p.id.clone());
    (preset, kind)
}

/// torchtune's builder of a preset: `llama-3.1-8b` -> `llama3_1.llama3_1_8b`.
fn builder_of(preset: &str) -> Option<(String, String)> {
    let mut parts = preset.split('-');
    let family = parts.next()?;
    let rest: Vec<&str> = parts.collect();
    let size = rest.last()?;
    let version: Vec<&str> = rest[..rest.len() - 1].to_vec();
    let mut module = family.replace('.', "_");
    for v in &version {
        module.push_str(&v.replace('.', "_"));
    }
    Some((
        module.clone(),
        format!("{module}_{}", size.replace('.', "_")),
    ))
}

/// torchtune's LoRA module names and transformers'.
const LORA_ATTN: &[(&str, &str)] = &[
    ("q_proj", "q_proj"),
    ("k_proj", "k_proj"),
    ("v_proj", "v_proj"),
    ("output_proj", "o_proj"),
];
const MLP: &[&str] = &["gate_proj", "up_proj", "down_proj"];

/// Reads a torchtune recipe config.
pub(super) fn read(im: &mut Import) {
    if let Some(v) = im.take("model._component_") {
        let (preset, kind) = builder_preset(&text(&v));
        match preset {
            Some(p) => im.put("model._component_", &v, "model", json!({ "preset": p })),
            None => im.ignore(
                "model._component_",
                "a builder with no model preset: the model is the base's (give it with --model)",
            ),
        }
        match kind {
            None => im.reset("training.lora", Value::Null),
            Some(k) => {
                im.reset("training.lora", json!({"adapters_fp32": false}));
                im.put(
                    "model._component_",
                    &v,
                    "training.lora.base_weight_format",
                    json!(if k == "qlora" { "nf4" } else { "bf16" }),
                );
                let mut targets: Vec<String> = Vec::new();
                if let Some(mods) = im.take("model.lora_attn_modules") {
                    for m in mods.as_array().cloned().unwrap_or_default() {
                        match LORA_ATTN.iter().find(|(t, _)| *t == text(&m)) {
                            Some((_, hf)) => targets.push(hf.to_string()),
                            None => im.fail(
                                "model.lora_attn_modules",
                                &m,
                                "must be q_proj, k_proj, v_proj or output_proj",
                            ),
                        }
                    }
                }
                if im.flag("model.apply_lora_to_mlp") == Some(true) {
                    targets.extend(MLP.iter().map(|s| s.to_string()));
                }
                if im.flag("model.apply_lora_to_output") == Some(true) {
                    targets.push("lm_head".into());
                }
                im.put(
                    "model.lora_attn_modules, apply_lora_to_mlp, apply_lora_to_output",
                    &json!(targets),
                    "training.lora.target_modules",
                    json!(targets),
                );
                im.count("model.lora_rank", "training.lora.rank");
                im.float_into("model.lora_alpha", "training.lora.alpha");
                im.float_into("model.lora_dropout", "training.lora.dropout");
            }
        }
    }
    im.count("batch_size", "training.micro_batch_size");
    im.count(
        "gradient_accumulation_steps",
        "training.gradient_accumulation_steps",
    );
    if let Some(v) = im.take("tokenizer.max_seq_len") {
        if v.is_null() {
            im.ignore(
                "tokenizer.max_seq_len",
                "null: the sequence length is the base's",
            );
        } else {
            im.count_value("tokenizer.max_seq_len", &v, "training.seq_len");
        }
    }
    if let Some(v) = im.take("dtype") {
        match text(&v).as_str() {
            "bf16" => im.put("dtype", &v, "training.precision", json!("bf16")),
            "fp32" => im.put("dtype", &v, "training.precision", json!("fp32")),
            _ => im.fail("dtype", &v, "torchtune trains in bf16 or fp32"),
        }
    }
    if let Some(v) = im.take("optimizer._component_") {
        let c = text(&v);
        let name = match c.rsplit('.').next().unwrap_or("") {
            "AdamW" if c.starts_with("torch.") => Some("adamw"),
            "Adam" if c.starts_with("torch.") => Some("adam"),
            "SGD" => Some("sgd"),
            "AdamW8bit" if c.starts_with("bitsandbytes") => Some("adamw_8bit"),
            "PagedAdamW8bit" => Some("paged_adamw_8bit"),
            "AdamW4bit" => Some("adamw_4bit"),
            "Lion8bit" => Some("lion_8bit"),
            _ => None,
        };
        match name {
            Some(n) => im.put("optimizer._component_", &v, "training.optimizer", json!(n)),
            None => im.fail(
                "optimizer._component_",
                &v,
                "an optimizer the estimate does not model",
            ),
        }
        let fused = im.flag("optimizer.fused");
        let foreach = im.flag("optimizer.foreach");
        let imp = match (fused, foreach) {
            (Some(true), _) => OptimizerImpl::Fused,
            (_, Some(false)) => OptimizerImpl::ForLoop,
            _ => OptimizerImpl::Foreach,
        };
        im.put(
            "optimizer.fused, optimizer.foreach",
            &json!([fused, foreach]),
            "training.optimizer_impl",
            serde_json::to_value(imp).unwrap_or(Value::Null),
        );
    }
    im.flag_into("optimizer_in_bwd", "training.optimizer_in_backward");
    if let Some(v) = im.take("loss._component_") {
        let c = text(&v);
        let l = match c.rsplit('.').next().unwrap_or("") {
            "CEWithChunkedOutputLoss" => Some("chunked"),
            "LinearCrossEntropyLoss" => Some("fused"),
            "CrossEntropyLoss" => Some("standard"),
            _ => None,
        };
        match l {
            Some(l) => im.put("loss._component_", &v, "training.loss", json!(l)),
            None => im.fail("loss._component_", &v, "a loss the estimate does not model"),
        }
    }
    im.recompute_flag("enable_activation_checkpointing");
    im.flag_into(
        "enable_activation_offloading",
        "training.activation_offloading",
    );
    if let Some(v) = im.take("compile") {
        // a bool, or a dict of components in newer configs
        let on = as_bool(&v).unwrap_or(v.is_object());
        im.put("compile", &v, "training.compile", json!(on));
    }
    let gpus = im
        .ours("hardware.num_gpus")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let fsdp_keys = im.has("fsdp_cpu_offload") || im.has("fsdp_reshard_after_forward");
    if gpus > 1 || fsdp_keys {
        im.reset("engine", json!({"type": "fsdp", "fsdp_version": 2}));
        im.put(
            "recipe (distributed: more than one GPU)",
            &json!(gpus),
            "engine.type",
            json!("fsdp"),
        );
        im.flag_into("fsdp_cpu_offload", "engine.cpu_offload");
        if let Some(v) = im.take("fsdp_reshard_after_forward") {
            super::hf_trainer::read_reshard(im, "fsdp_reshard_after_forward", &v);
        }
    } else {
        im.reset("engine", json!({"type": "ddp"}));
        im.put(
            "recipe (single device: one GPU)",
            &json!(gpus),
            "engine.type",
            json!("ddp"),
        );
    }
}

/// Why a torchtune key is not read.
pub(super) fn reason(key: &str) -> String {
    let top = key.split('.').next().unwrap_or("");
    match top {
        "optimizer"
        | "lr_scheduler"
        | "clip_grad_norm"
        | "seed"
        | "epochs"
        | "max_steps_per_epoch"
        | "shuffle" => "a hyperparameter: no memory of its own".into(),
        "checkpointer"
        | "output_dir"
        | "metric_logger"
        | "log_every_n_steps"
        | "log_peak_memory_stats"
        | "profiler"
        | "resume_from_checkpoint"
        | "save_adapter_weights_only"
        | "log_level" => "checkpoints, logging or profiling: not the training step's memory".into(),
        "tokenizer" | "dataset" | "collate_fn" => {
            "data loading: CPU-side (a packed dataset's length is tokenizer.max_seq_len)".into()
        }
        "device" => "the device: the GPU is the base's hardware".into(),
        _ => "not a torchtune setting the estimate reads".into(),
    }
}

/// A torchtune recipe config of a training config.
pub(super) fn write(config: &Config, _r: &Resolved) -> Result<Value, Vec<FieldError>> {
    let t = &config.training;
    let dtype = match t.precision {
        Precision::Bf16 => "bf16",
        Precision::Fp32 => "fp32",
        p => {
            return Err(cannot(
                "training.precision",
                super::precision_id(p),
                Format::Torchtune,
                "torchtune trains in pure bf16 or fp32 (dtype)",
            ));
        }
    };
    let preset = config.model.0.get("preset").and_then(Value::as_str);
    let (module, builder) = preset
        .and_then(builder_of)
        .unwrap_or_else(|| ("llama3_1".into(), "llama3_1_8b".into()));
    let mut model = Map::new();
    match &t.lora {
        None => {
            model.insert(
                "_component_".into(),
                json!(format!("torchtune.models.{module}.{builder}")),
            );
        }
        Some(l) => {
            let q = match l.base_weight_format {
                Some(crate::config::WeightFormat::Nf4) => "qlora_",
                None | Some(crate::config::WeightFormat::Bf16) => "lora_",
                Some(f) => {
                    return Err(cannot(
                        "training.lora.base_weight_format",
                        format!("{f:?}"),
                        Format::Torchtune,
                        "torchtune's builders are LoRA (bf16 base) or QLoRA (NF4 base)",
                    ));
                }
            };
            if l.adapters_fp32 {
                return Err(cannot(
                    "training.lora.adapters_fp32",
                    true,
                    Format::Torchtune,
                    "torchtune's adapters are in the model's dtype",
                ));
            }
            let targets: Vec<String> = match &l.target_modules {
                Some(TargetModules::List(v)) => v.clone(),
                Some(TargetModules::All(_)) => [
                    "q_proj",
                    "k_proj",
                    "v_proj",
                    "o_proj",
                    "gate_proj",
                    "up_proj",
                    "down_proj",
                ]
                .map(String::from)
                .to_vec(),
                None => ["q_proj", "v_proj"].map(String::from).to_vec(),
            };
            let attn: Vec<&str> = LORA_ATTN
                .iter()
                .filter(|(_, hf)| targets.iter().any(|t| t == hf))
                .map(|(tt, _)| *tt)
                .collect();
            let mlp = MLP
                .iter()
                .filter(|m| targets.iter().any(|t| t == *m))
                .count();
            let known = attn.len() + mlp + usize::from(targets.iter().any(|t| t == "lm_head"));
            if (mlp != 0 && mlp != 3) || known != targets.len() {
                return Err(cannot(
                    "training.lora.target_modules",
                    format!("{targets:?}"),
                    Format::Torchtune,
                    "torchtune adapts q/k/v/output projections, the whole MLP or nothing of it, and the output layer",
                ));
            }
            model.insert(
                "_component_".into(),
                json!(format!("torchtune.models.{module}.{q}{builder}")),
            );
            model.insert("lora_attn_modules".into(), json!(attn));
            model.insert("apply_lora_to_mlp".into(), json!(mlp == 3));
            model.insert(
                "apply_lora_to_output".into(),
                json!(targets.iter().any(|t| t == "lm_head")),
            );
            model.insert("lora_rank".into(), json!(l.rank));
            model.insert("lora_alpha".into(), json!(l.alpha));
            model.insert("lora_dropout".into(), json!(l.dropout));
        }
    }
    let optimizer = match t.optimizer.name() {
        "adamw" => "torch.optim.AdamW",
        "adam" => "torch.optim.Adam",
        "sgd" => "torch.optim.SGD",
        "adamw_8bit" => "bitsandbytes.optim.AdamW8bit",
        "paged_adamw_8bit" => "bitsandbytes.optim.PagedAdamW8bit",
        "adamw_4bit" => "torchao.optim.AdamW4bit",
        "lion_8bit" => "bitsandbytes.optim.Lion8bit",
        o => {
            return Err(cannot(
                "training.optimizer",
                o,
                Format::Torchtune,
                "no optimizer component for it",
            ));
        }
    };
    let mut opt = Map::new();
    opt.insert("_component_".into(), json!(optimizer));
    match t.optimizer_impl {
        OptimizerImpl::Fused => opt.insert("fused".into(), json!(true)),
        OptimizerImpl::ForLoop => opt.insert("foreach".into(), json!(false)),
        OptimizerImpl::Foreach => None,
    };
    opt.insert("lr".into(), json!(2e-5));
    let loss = match t.loss {
        LossImpl::Standard => "torch.nn.CrossEntropyLoss",
        LossImpl::Chunked => "torchtune.modules.loss.CEWithChunkedOutputLoss",
        LossImpl::Fused => "torchtune.modules.loss.LinearCrossEntropyLoss",
    };
    let ac = match t.activation_checkpointing {
        Recompute::None => false,
        Recompute::Full => true,
        r => {
            return Err(cannot(
                "training.activation_checkpointing",
                format!("{r:?}"),
                Format::Torchtune,
                "enable_activation_checkpointing checkpoints whole layers",
            ));
        }
    };
    let mut m = Map::new();
    m.insert("output_dir".into(), json!("/tmp/torchtune/output"));
    m.insert("model".into(), Value::Object(model));
    m.insert("tokenizer".into(), json!({"_component_": format!("torchtune.models.{module}.{}_tokenizer", module), "max_seq_len": t.seq_len}));
    m.insert("batch_size".into(), json!(t.micro_batch_size));
    m.insert(
        "gradient_accumulation_steps".into(),
        json!(t.gradient_accumulation_steps),
    );
    m.insert("optimizer".into(), Value::Object(opt));
    m.insert("optimizer_in_bwd".into(), json!(t.optimizer_in_backward));
    m.insert("loss".into(), json!({"_component_": loss}));
    m.insert("device".into(), json!("cuda"));
    m.insert("dtype".into(), json!(dtype));
    m.insert("enable_activation_checkpointing".into(), json!(ac));
    m.insert(
        "enable_activation_offloading".into(),
        json!(t.activation_offloading),
    );
    m.insert("compile".into(), json!(t.compile));
    match &config.engine {
        Engine::Fsdp(f) if f.fsdp_version == 2 => {
            m.insert("fsdp_cpu_offload".into(), json!(f.cpu_offload));
            if let Some(r) = f.reshard_after_forward {
                m.insert("fsdp_reshard_after_forward".into(), json!(r));
            }
        }
        Engine::Ddp(_) if config.hardware.num_gpus.unwrap_or(1) <= 1 => {}
        e => {
            return Err(cannot(
                "engine.type",
                e.kind(),
                Format::Torchtune,
                "torchtune's recipes run one GPU, or FSDP2 over several",
            ));
        }
    }
    Ok(Value::Object(m))
}
