//! accelerate config YAML (accelerate/commands/config/config_args.py `ClusterConfig`):
//! `distributed_type` (NO, MULTI_GPU, FSDP, DEEPSPEED), `num_processes`, `num_machines`,
//! `mixed_precision`, `fsdp_config` (FSDP1 / FSDP2 plugin), `deepspeed_config` (the DeepSpeed
//! plugin's ZeRO stage, offload devices and accumulation), `dynamo_config`.

use super::{Format, Import, as_count, cannot, text};
use crate::config::{Config, Engine, Offload, Precision, Recompute};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Map, Value, json};

/// Our keys an accelerate config has no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.micro_batch_size",
    "training.seq_len",
    "training.gradient_accumulation_steps",
    "training.optimizer",
    "training.optimizer_impl",
    "training.activation_checkpointing",
    "training.attention",
    "training.loss",
    "training.lora",
    "training.activation_offloading",
    "training.optimizer_in_backward",
    "training.accumulate_grads_in_fp32",
    "parallelism",
    "hardware.gpu",
    "hardware.gpus_per_node",
    "overheads",
];

/// Reads an accelerate config.
pub(super) fn read(im: &mut Import) {
    let procs = im.count("num_processes", "hardware.num_gpus");
    if let Some(v) = im.take("num_machines") {
        match (as_count(&v), procs) {
            (Some(1), Some(_)) => im.ignore(
                "num_machines",
                "one machine: the GPUs per node are the base's",
            ),
            (Some(m), Some(p)) if m >= 1 && p % m == 0 => {
                im.put("num_machines", &v, "hardware.gpus_per_node", json!(p / m))
            }
            (Some(_), None) => im.ignore(
                "num_machines",
                "without num_processes the GPUs per node stay the base's",
            ),
            _ => im.fail(
                "num_machines",
                &v,
                "must be a whole number dividing num_processes",
            ),
        }
    }
    if let Some(v) = im.take("mixed_precision") {
        let p = match text(&v).to_ascii_lowercase().as_str() {
            "bf16" => Some("amp_bf16"),
            "fp16" => Some("amp_fp16"),
            "fp8" => Some("fp8"),
            "no" | "false" => Some("fp32"),
            _ => None,
        };
        match p {
            Some(p) => im.put("mixed_precision", &v, "training.precision", json!(p)),
            None => im.fail("mixed_precision", &v, "must be no, fp16, bf16 or fp8"),
        }
    }
    if let Some(v) = im.take("dynamo_config.dynamo_backend") {
        let on = !matches!(text(&v).to_ascii_uppercase().as_str(), "NO" | "");
        im.put(
            "dynamo_config.dynamo_backend",
            &v,
            "training.compile",
            json!(on),
        );
    }
    let dt = im.take("distributed_type");
    let kind = dt
        .as_ref()
        .map(|v| text(v).to_ascii_uppercase())
        .unwrap_or_else(|| "NO".into());
    let dt = dt.unwrap_or(json!("NO"));
    match kind.as_str() {
        "NO" | "MULTI_GPU" | "MULTI_CPU" => {
            im.reset("engine", json!({"type": "ddp"}));
            im.put("distributed_type", &dt, "engine.type", json!("ddp"));
        }
        "FSDP" => {
            im.reset("engine", json!({"type": "fsdp", "fsdp_version": 1}));
            im.put("distributed_type", &dt, "engine.type", json!("fsdp"));
            im.fsdp_version(&["fsdp_config.fsdp_version"]);
            for key in ["fsdp_config.fsdp_sharding_strategy", "fsdp_config.fsdp_reshard_after_forward"] {
                if let Some(v) = im.take(key) {
                    // accelerate < 1.6 wrote the strategy as a number (1 = FULL_SHARD ...)
                    let v = match as_count(&v) {
                        Some(n) if key.ends_with("strategy") && (1..=5).contains(&n) => {
                            json!(["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"][n as usize - 1])
                        }
                        _ => v,
                    };
                    super::hf_trainer::read_reshard(im, key, &v);
                }
            }
            im.flag_into("fsdp_config.fsdp_offload_params", "engine.cpu_offload");
            im.recompute_flag("fsdp_config.fsdp_activation_checkpointing");
        }
        "DEEPSPEED" => {
            im.reset("engine", json!({"type": "deepspeed"}));
            im.put("distributed_type", &dt, "engine.type", json!("deepspeed"));
            if let Some(v) = im.take("deepspeed_config.deepspeed_config_file") {
                im.ignore("deepspeed_config.deepspeed_config_file", format!("{} is a path: import that ds_config.json itself", text(&v)));
            }
            im.zero_stage("deepspeed_config.zero_stage");
            im.offload_into("deepspeed_config.offload_optimizer_device", "engine.offload_optimizer", true);
            im.offload_into("deepspeed_config.offload_param_device", "engine.offload_param", true);
            im.count("deepspeed_config.gradient_accumulation_steps", "training.gradient_accumulation_steps");
        }
        _ => im.fail("distributed_type", &dt, "an accelerate distributed type the estimate does not model (NO, MULTI_GPU, FSDP and DEEPSPEED are)"),
    }
}

/// Why an accelerate key is not read.
pub(super) fn reason(key: &str) -> String {
    match key {
        "compute_environment"
        | "machine_rank"
        | "main_process_ip"
        | "main_process_port"
        | "rdzv_backend"
        | "same_network"
        | "main_training_function"
        | "tpu_env"
        | "tpu_use_cluster"
        | "tpu_use_sudo"
        | "use_cpu"
        | "gpu_ids"
        | "debug"
        | "enable_cpu_affinity" => "launcher and network settings: no GPU memory".into(),
        "downcast_bf16" => "TPU only".into(),
        k if k.contains("state_dict")
            || k.contains("cpu_ram_efficient_loading")
            || k.contains("sync_module_states") =>
        {
            "how checkpoints load and save: not the training step's memory".into()
        }
        k if k.contains("auto_wrap_policy")
            || k.contains("transformer_layer_cls")
            || k.contains("min_num_params") =>
        {
            "the wrap policy: the estimate wraps each decoder layer, as TRANSFORMER_BASED_WRAP does"
                .into()
        }
        k if k.contains("backward_prefetch")
            || k.contains("forward_prefetch")
            || k.contains("use_orig_params") =>
        {
            "an FSDP1 scheduling option the estimate does not model".into()
        }
        k if k.contains("zero3_init_flag") || k.contains("zero3_save_16bit_model") => {
            "how ZeRO-3 builds and saves the model: not the training step's memory".into()
        }
        _ => "not an accelerate setting the estimate reads".into(),
    }
}

/// accelerate config YAML of a training config.
pub(super) fn write(config: &Config, r: &Resolved) -> Result<Value, Vec<FieldError>> {
    let gpus = r.layout.num_gpus;
    let per_node = config.hardware.gpus_per_node.min(gpus).max(1);
    let machines = gpus.div_ceil(per_node);
    let mut m = Map::new();
    m.insert("compute_environment".into(), json!("LOCAL_MACHINE"));
    let precision = match config.training.precision {
        Precision::AmpBf16 => "bf16",
        Precision::AmpFp16 => "fp16",
        Precision::Fp8 => "fp8",
        Precision::Fp32 => "no",
        p => {
            return Err(cannot(
                "training.precision",
                super::precision_id(p),
                Format::Accelerate,
                "mixed_precision turns on autocast with fp32 weights; pure 16-bit training is not a setting",
            ));
        }
    };
    if config.training.compile {
        m.insert(
            "dynamo_config".into(),
            json!({"dynamo_backend": "INDUCTOR"}),
        );
    }
    match &config.engine {
        Engine::Ddp(_) => {
            m.insert(
                "distributed_type".into(),
                json!(if gpus > 1 { "MULTI_GPU" } else { "NO" }),
            );
        }
        Engine::Fsdp(f) => {
            m.insert("distributed_type".into(), json!("FSDP"));
            let mut c = Map::new();
            c.insert("fsdp_version".into(), json!(f.fsdp_version));
            c.insert(
                "fsdp_auto_wrap_policy".into(),
                json!("TRANSFORMER_BASED_WRAP"),
            );
            c.insert("fsdp_offload_params".into(), json!(f.cpu_offload));
            c.insert(
                "fsdp_activation_checkpointing".into(),
                json!(config.training.activation_checkpointing == Recompute::Full),
            );
            if f.fsdp_version == 1 {
                c.insert(
                    "fsdp_sharding_strategy".into(),
                    json!(f.sharding_strategy.unwrap_or_default().name()),
                );
            } else if let Some(rf) = f.reshard_after_forward {
                c.insert("fsdp_reshard_after_forward".into(), json!(rf));
            }
            c.insert("fsdp_state_dict_type".into(), json!("SHARDED_STATE_DICT"));
            m.insert("fsdp_config".into(), Value::Object(c));
        }
        Engine::Deepspeed(z) => {
            m.insert("distributed_type".into(), json!("DEEPSPEED"));
            let dev = |o: Offload| match o {
                Offload::None => "none",
                Offload::Cpu => "cpu",
                Offload::Nvme => "nvme",
            };
            m.insert(
                "deepspeed_config".into(),
                json!({
                    "gradient_accumulation_steps": config.training.gradient_accumulation_steps,
                    "offload_optimizer_device": dev(z.offload_optimizer),
                    "offload_param_device": dev(z.offload_param),
                    "zero3_init_flag": z.zero_stage == 3,
                    "zero_stage": z.zero_stage,
                }),
            );
        }
        e => {
            return Err(cannot(
                "engine.type",
                e.kind(),
                Format::Accelerate,
                "accelerate runs DDP, FSDP or DeepSpeed",
            ));
        }
    }
    m.insert("machine_rank".into(), json!(0));
    m.insert("main_training_function".into(), json!("main"));
    m.insert("mixed_precision".into(), json!(precision));
    m.insert("num_machines".into(), json!(machines));
    m.insert("num_processes".into(), json!(gpus));
    m.insert("rdzv_backend".into(), json!("static"));
    m.insert("same_network".into(), json!(true));
    m.insert("use_cpu".into(), json!(false));
    Ok(Value::Object(m))
}
