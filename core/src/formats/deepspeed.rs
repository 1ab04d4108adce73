//! DeepSpeed `ds_config.json` (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py),
//! with `"auto"` values resolved as transformers' integration does
//! (transformers/integrations/deepspeed.py `HfTrainerDeepSpeedConfig.trainer_config_process`
//! and `trainer_config_finalize`): batch sizes and precision from the training arguments (our
//! base), `reduce_bucket_size` = hidden², `stage3_prefetch_bucket_size` = 0.9 hidden²,
//! `stage3_param_persistence_threshold` = 10 hidden.

use super::{Format, Import, as_count, cannot, is_auto, saturating_product, text};
use crate::config::{Config, Engine, Precision};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Value, json};

/// Our keys a ds_config.json has no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    // deepspeed, or megatron_deepspeed (Megatron-DeepSpeed reads the same file)
    "engine.type",
    "training.seq_len",
    "training.activation_checkpointing",
    "training.attention",
    "training.loss",
    "training.optimizer",
    "training.optimizer_impl",
    "training.lora",
    "training.compile",
    "parallelism",
    "hardware.gpu",
    "hardware.gpus_per_node",
    "overheads",
];

/// The hidden size of the base's model, for DeepSpeed's `"auto"` bucket sizes.
fn hidden_size(im: &Import) -> Option<u64> {
    let model = im.ours("model")?.clone();
    let spec: crate::config::ModelSpec = serde_json::from_value(model).ok()?;
    let mut w = Vec::new();
    crate::resolve::resolve_model(&spec.0, &mut w)
        .ok()
        .map(|a| a.hidden_size)
}

/// Reads the DeepSpeed keys of `prefix` (`""` for a ds_config.json, `"deepspeed."` for the
/// dict inside TrainingArguments) into our engine and training sections.
pub(super) fn read_at(im: &mut Import, prefix: &str) {
    let k = |s: &str| format!("{prefix}{s}");
    // the engine: deepspeed, or megatron_deepspeed when the base runs Megatron-DeepSpeed
    let kind = match im.ours("engine.type").and_then(Value::as_str) {
        Some("megatron_deepspeed") => "megatron_deepspeed",
        _ => "deepspeed",
    };
    im.reset("engine", json!({ "type": kind }));
    let mb = im.count(
        &k("train_micro_batch_size_per_gpu"),
        "training.micro_batch_size",
    );
    let ga = im.count(
        &k("gradient_accumulation_steps"),
        "training.gradient_accumulation_steps",
    );
    if let Some(v) = im.take(&k("train_batch_size")) {
        if is_auto(&v) {
            im.ignore(
                &k("train_batch_size"),
                "auto: micro-batch x accumulation x data-parallel size, from the other inputs",
            );
        } else if let Some(tbs) = as_count(&v) {
            let (mb, ga) = (
                mb.unwrap_or(im.ours_count("training.micro_batch_size")),
                ga.unwrap_or(im.ours_count("training.gradient_accumulation_steps")),
            );
            let per = mb.saturating_mul(ga).max(1);
            if tbs % per != 0 || tbs == 0 {
                im.fail(&k("train_batch_size"), &v, format!("must be train_micro_batch_size_per_gpu x gradient_accumulation_steps ({per}) x the data-parallel size (DeepSpeed asserts it)"));
            } else {
                let dp = tbs / per;
                let model_parallel = saturating_product(
                    [
                        "tensor_parallel_size",
                        "pipeline_parallel_size",
                        "context_parallel_size",
                    ]
                    .iter()
                    .map(|p| im.ours_count(&format!("parallelism.{p}"))),
                );
                im.put(
                    &k("train_batch_size"),
                    &v,
                    "hardware.num_gpus",
                    json!(dp.saturating_mul(model_parallel)),
                );
            }
        } else {
            im.fail(
                &k("train_batch_size"),
                &v,
                "must be a whole number or \"auto\"",
            );
        }
    }
    // precision: bf16 / fp16 sections (DeepSpeed keeps fp32 master weights in both)
    let bf16 = im.take(&k("bf16.enabled")).map(|v| (k("bf16.enabled"), v));
    let fp16 = im.take(&k("fp16.enabled")).map(|v| (k("fp16.enabled"), v));
    let is_on = |x: &Option<(String, Value)>| {
        x.as_ref()
            .is_some_and(|(_, v)| super::as_bool(v) == Some(true))
    };
    let auto = [&bf16, &fp16]
        .into_iter()
        .flatten()
        .find(|(_, v)| is_auto(v))
        .cloned();
    if is_on(&bf16) {
        let (key, v) = bf16.unwrap_or_default();
        im.put(&key, &v, "training.precision", json!("amp_bf16"));
    } else if is_on(&fp16) {
        let (key, v) = fp16.unwrap_or_default();
        im.put(&key, &v, "training.precision", json!("amp_fp16"));
    } else if let Some((key, v)) = auto {
        // auto: the training arguments' bf16 / fp16, i.e. the base's precision
        let p = im
            .ours("training.precision")
            .cloned()
            .unwrap_or(json!("amp_bf16"));
        im.put(&key, &v, "training.precision", p);
    } else if let Some((key, v)) = bf16.or(fp16) {
        im.put(&key, &v, "training.precision", json!("fp32"));
    } else if prefix.is_empty() {
        im.put(
            "bf16.enabled, fp16.enabled",
            &json!("absent"),
            "training.precision",
            json!("fp32"),
        );
    }
    for extra in [
        "fp16.loss_scale",
        "fp16.initial_scale_power",
        "fp16.loss_scale_window",
        "fp16.hysteresis",
        "fp16.min_loss_scale",
        "fp16.auto_cast",
    ] {
        if let Some(_v) = im.take(&k(extra)) {
            im.ignore(&k(extra), "loss scaling: no memory of its own");
        }
    }
    if let Some(v) = im.take(&k("data_types.grad_accum_dtype")) {
        let fp32 = text(&v).eq_ignore_ascii_case("fp32");
        im.put(
            &k("data_types.grad_accum_dtype"),
            &v,
            "training.accumulate_grads_in_fp32",
            json!(fp32),
        );
    }
    // ZeRO
    let z = "engine";
    im.zero_stage(&k("zero_optimization.stage"));
    im.offload_into(
        &k("zero_optimization.offload_optimizer.device"),
        "engine.offload_optimizer",
        false,
    );
    im.offload_into(
        &k("zero_optimization.offload_param.device"),
        "engine.offload_param",
        false,
    );
    // deprecated boolean form: cpu_offload
    if let Some(v) = im.take(&k("zero_optimization.cpu_offload"))
        && super::as_bool(&v) == Some(true)
    {
        im.put(
            &k("zero_optimization.cpu_offload"),
            &v,
            &format!("{z}.offload_optimizer"),
            json!("cpu"),
        );
    }
    let hidden = hidden_size(im);
    for (their, ours, auto) in [
        (
            "reduce_bucket_size",
            "reduce_bucket_size",
            hidden.map(|h| h * h),
        ),
        // int(0.9 * hidden * hidden), as transformers writes it
        (
            "stage3_prefetch_bucket_size",
            "stage3_prefetch_bucket_size",
            hidden.map(|h| (0.9 * (h * h) as f64) as u64),
        ),
        (
            "stage3_param_persistence_threshold",
            "stage3_param_persistence_threshold",
            hidden.map(|h| 10 * h),
        ),
        (
            "stage3_max_live_parameters",
            "stage3_max_live_parameters",
            None,
        ),
        (
            "stage3_max_reuse_distance",
            "stage3_max_reuse_distance",
            None,
        ),
        ("sub_group_size", "sub_group_size", None),
    ] {
        let key = k(&format!("zero_optimization.{their}"));
        let Some(v) = im.take(&key) else { continue };
        let to = format!("{z}.{ours}");
        match (is_auto(&v), auto, as_count(&v)) {
            (true, Some(a), _) => im.put(&key, &v, &to, json!(a)),
            (true, None, _) => im.ignore(
                &key,
                "auto without a model hidden size: DeepSpeed's default is used",
            ),
            (false, _, Some(n)) => im.put(&key, &v, &to, json!(n)),
            (false, _, None) => im.fail(&key, &v, "must be a whole number or \"auto\""),
        }
    }
    im.flag_into(&k("zero_optimization.overlap_comm"), "engine.overlap_comm");
    // the optimizer DeepSpeed builds (none: the client's, i.e. the base's)
    if let Some(v) = im.take(&k("optimizer.type")) {
        let name = text(&v);
        let found = crate::optimizer::OPTIMIZERS
            .iter()
            .find(|o| {
                o.deepspeed_name
                    .is_some_and(|d| d.eq_ignore_ascii_case(&name))
            })
            .or_else(|| match name.to_ascii_lowercase().as_str() {
                "onebitadam" | "zerooneadam" | "cpuadam" | "fusedadam" => {
                    crate::optimizer::OPTIMIZERS
                        .iter()
                        .find(|o| o.name == "adamw")
                }
                "onebitlamb" => crate::optimizer::OPTIMIZERS
                    .iter()
                    .find(|o| o.name == "lamb"),
                _ => None,
            });
        match found {
            Some(o) => im.put(
                &k("optimizer.type"),
                &v,
                "training.optimizer",
                json!(o.name),
            ),
            None => im.fail(
                &k("optimizer.type"),
                &v,
                "an optimizer DeepSpeed names that the estimate does not model",
            ),
        }
    }
}

/// Reads a ds_config.json.
pub(super) fn read(im: &mut Import) {
    read_at(im, "");
}

/// Why a key of a ds_config.json is not read.
pub(super) fn reason(key: &str) -> String {
    let top = key.split('.').next().unwrap_or("");
    match top {
        "optimizer" | "scheduler" => "a hyperparameter: no memory of its own".into(),
        "activation_checkpointing" => "how Megatron-style checkpointing partitions activations; whether layers are recomputed is the training script's (training.activation_checkpointing, from the base)".into(),
        "gradient_clipping" | "steps_per_print" | "wall_clock_breakdown" | "prescale_gradients" | "gradient_predivide_factor" | "communication_data_type" | "seed" => "does not change memory".into(),
        "flops_profiler" | "tensorboard" | "wandb" | "csv_monitor" | "comms_logger" | "monitor_config" | "checkpoint" => "logging, profiling or checkpoint files: no GPU memory".into(),
        "zero_optimization" => "a ZeRO option the estimate does not model (its memory is not a term)".into(),
        _ => "not a DeepSpeed setting the estimate reads".into(),
    }
}

/// The ds_config.json of a deepspeed / megatron_deepspeed config
/// ([`crate::export::deepspeed_config`] with the keys the import reads back).
pub(super) fn write(config: &Config, _r: &Resolved) -> Result<Value, Vec<FieldError>> {
    if !matches!(
        config.engine,
        Engine::Deepspeed(_) | Engine::MegatronDeepspeed(_)
    ) {
        return Err(cannot(
            "engine.type",
            config.engine.kind(),
            Format::Deepspeed,
            "a ds_config.json configures the deepspeed and megatron_deepspeed engines",
        ));
    }
    if matches!(
        config.training.precision,
        Precision::Bf16 | Precision::Fp16 | Precision::Fp8
    ) {
        return Err(cannot(
            "training.precision",
            super::precision_id(config.training.precision),
            Format::Deepspeed,
            "DeepSpeed's bf16 and fp16 modes keep fp32 master weights (amp_bf16, amp_fp16); pure 16-bit and FP8 training have no ds_config setting",
        ));
    }
    let mut v = crate::export::deepspeed_config(config)?;
    if let Some(b) = config.training.accumulate_grads_in_fp32
        && let Value::Object(m) = &mut v
    {
        m.insert(
            "data_types".into(),
            json!({"grad_accum_dtype": if b { "fp32" } else { "bf16" }}),
        );
    }
    Ok(v)
}
