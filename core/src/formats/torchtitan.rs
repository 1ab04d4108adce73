//! torchtitan TOML job config (torchtitan/config/job_config.py): `[model]` name and flavor,
//! `[training]` local / global batch, `seq_len`, mixed-precision dtypes, `[parallelism]`
//! degrees, pipeline schedule and micro-batch, `fsdp_reshard_after_forward`, loss parallel,
//! `[activation_checkpoint]`, `[compile]`, Float8 converters and `[optimizer]`. torchtitan
//! always shards with FSDP2 (`fully_shard`); its TP is sequence-parallel.

use super::{Format, Import, as_count, cannot, saturating_product, text};
use crate::config::{
    Config, Dtype, Engine, PipelineSchedule, Precision, Recompute, ReshardAfterForward,
};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Map, Value, json};

/// Our keys a torchtitan job config has no place for.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.attention",
    "training.loss",
    "training.lora",
    "training.activation_offloading",
    "training.optimizer_in_backward",
    "training.accumulate_grads_in_fp32",
    "hardware.gpu",
    "hardware.gpus_per_node",
    "overheads",
];

/// torchtitan's model names and flavors with a preset.
const MODELS: &[(&str, &str, &str)] = &[
    ("llama3", "8B", "llama-3.1-8b"),
    ("llama3", "70B", "llama-3.1-70b"),
    ("llama3", "405B", "llama-3.1-405b"),
    ("deepseek_v3", "16B", "deepseek-v2-lite"),
    ("deepseek_v3", "671B", "deepseek-v3"),
    ("qwen3", "8B", "qwen3-8b"),
    ("qwen3", "30B-A3B", "qwen3-30b-a3b"),
];

fn dtype(im: &mut Import, key: &str) -> Option<&'static str> {
    let v = im.take(key)?;
    match text(&v).as_str() {
        "bfloat16" => Some("bf16"),
        "float16" => Some("fp16"),
        "float32" => Some("fp32"),
        _ => {
            im.fail(key, &v, "must be bfloat16, float16 or float32");
            None
        }
    }
}

/// Reads a torchtitan job config.
pub(super) fn read(im: &mut Import) {
    let name = im.take("model.name");
    let flavor = im.take("model.flavor");
    if let (Some(n), Some(f)) = (&name, &flavor) {
        match MODELS
            .iter()
            .find(|(mn, mf, _)| *mn == text(n) && mf.eq_ignore_ascii_case(&text(f)))
        {
            Some((_, _, p)) => im.put(
                "model.name, model.flavor",
                &json!(format!("{} {}", text(n), text(f))),
                "model",
                json!({"preset": p}),
            ),
            None => im.ignore(
                "model.name, model.flavor",
                "a model with no preset: the model is the base's (give it with --model)",
            ),
        }
    }
    im.reset("engine", json!({"type": "fsdp", "fsdp_version": 2}));
    im.reset("parallelism", json!({}));
    im.count("training.seq_len", "training.seq_len");
    let local = im.take_any(&["training.local_batch_size", "training.batch_size"]);
    let global = im.take("training.global_batch_size");
    // degrees; -1 for the data-parallel shard degree is "the rest of the GPUs"
    let tp = im.degree(
        "parallelism.tensor_parallel_degree",
        "parallelism.tensor_parallel_size",
    );
    let pp = im.degree(
        "parallelism.pipeline_parallel_degree",
        "parallelism.pipeline_parallel_size",
    );
    let cp = im.degree(
        "parallelism.context_parallel_degree",
        "parallelism.context_parallel_size",
    );
    im.degree(
        "parallelism.expert_parallel_degree",
        "parallelism.expert_parallel_size",
    );
    let rep = im.degree(
        "parallelism.data_parallel_replicate_degree",
        "parallelism.data_parallel_replicate_size",
    );
    im.reset("parallelism.sequence_parallel", json!(tp > 1));
    let gpus = im
        .ours("hardware.num_gpus")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let model_parallel = saturating_product([tp, pp, cp, rep]);
    let shard = match im.take("parallelism.data_parallel_shard_degree") {
        Some(v) if v.as_i64() == Some(-1) => {
            let rest = gpus / model_parallel.max(1);
            im.put(
                "parallelism.data_parallel_shard_degree",
                &v,
                "hardware.num_gpus",
                json!(gpus),
            );
            rest.max(1)
        }
        Some(v) => match as_count(&v) {
            Some(s) if s >= 1 => {
                im.put(
                    "parallelism.data_parallel_shard_degree",
                    &v,
                    "hardware.num_gpus",
                    json!(s.saturating_mul(model_parallel)),
                );
                s
            }
            _ => {
                im.fail(
                    "parallelism.data_parallel_shard_degree",
                    &v,
                    "must be -1 or a whole number",
                );
                1
            }
        },
        None => (gpus / model_parallel.max(1)).max(1),
    };
    let dp = shard.saturating_mul(rep);
    // micro-batches: the pipeline's micro-batch size splits the local batch; without a
    // pipeline the global batch over local x dp is gradient accumulation
    let local_n = local.as_ref().and_then(|(_, v)| as_count(v));
    if let Some((k, v)) = &local
        && local_n.is_none()
    {
        im.fail(k, v, "must be a whole number");
    }
    let mb_key = im.take("parallelism.pipeline_parallel_microbatch_size");
    if pp > 1 {
        let mb = mb_key.as_ref().and_then(as_count).unwrap_or(1);
        im.put(
            "parallelism.pipeline_parallel_microbatch_size",
            mb_key.as_ref().unwrap_or(&json!(1)),
            "training.micro_batch_size",
            json!(mb),
        );
        if let (Some((k, v)), Some(l)) = (&local, local_n) {
            if mb == 0 || l % mb != 0 {
                im.fail(
                    k,
                    v,
                    "must be a multiple of parallelism.pipeline_parallel_microbatch_size",
                );
            } else {
                im.put(k, v, "training.gradient_accumulation_steps", json!(l / mb));
            }
        }
    } else if let (Some((k, v)), Some(l)) = (&local, local_n) {
        im.put(k, v, "training.micro_batch_size", json!(l));
        let ga = match global.as_ref().and_then(|g| g.as_i64()) {
            Some(g) if g > 0 => {
                let per = l.saturating_mul(dp).max(1);
                if !(g as u64).is_multiple_of(per) {
                    im.fail(
                        "training.global_batch_size",
                        global.as_ref().unwrap_or(&Value::Null),
                        "must be a multiple of local_batch_size x the data-parallel degree",
                    );
                }
                (g as u64 / per).max(1)
            }
            _ => 1,
        };
        im.put(
            "training.global_batch_size",
            global.as_ref().unwrap_or(&json!(-1)),
            "training.gradient_accumulation_steps",
            json!(ga),
        );
    }
    if let Some(v) = im.take("parallelism.pipeline_parallel_schedule") {
        let s = match text(&v).as_str() {
            "1F1B" => Some("1f1b"),
            "GPipe" => Some("gpipe"),
            "Interleaved1F1B" => Some("interleaved_1f1b"),
            _ => None,
        };
        match s {
            Some(s) => im.put(
                "parallelism.pipeline_parallel_schedule",
                &v,
                "parallelism.pipeline_schedule",
                json!(s),
            ),
            None => im.fail(
                "parallelism.pipeline_parallel_schedule",
                &v,
                "the estimate models 1F1B, GPipe and Interleaved1F1B",
            ),
        }
    }
    if let Some(v) = im.take("parallelism.fsdp_reshard_after_forward") {
        match text(&v).as_str() {
            "default" => im.put(
                "parallelism.fsdp_reshard_after_forward",
                &v,
                "engine.reshard_after_forward",
                Value::Null,
            ),
            "always" => im.put(
                "parallelism.fsdp_reshard_after_forward",
                &v,
                "engine.reshard_after_forward",
                json!(true),
            ),
            "never" => im.put(
                "parallelism.fsdp_reshard_after_forward",
                &v,
                "engine.reshard_after_forward",
                json!(false),
            ),
            _ => im.fail(
                "parallelism.fsdp_reshard_after_forward",
                &v,
                "must be default, always or never",
            ),
        }
    }
    if let Some(v) = im.take("parallelism.disable_loss_parallel") {
        let b = super::as_bool(&v).unwrap_or(false);
        im.put(
            "parallelism.disable_loss_parallel",
            &v,
            "parallelism.loss_parallel",
            json!(!b),
        );
    }
    // precision: FSDP2 keeps fp32 parameters; param dtype bf16 is AMP, float8 linears fp8
    let param = dtype(im, "training.mixed_precision_param");
    let reduce = dtype(im, "training.mixed_precision_reduce");
    let converters: Vec<String> = ["model.converters", "quantize.linear.float8.converters"]
        .iter()
        .filter_map(|k| im.take(k))
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .map(|c| text(&c))
        .collect();
    let float8 = converters.iter().any(|c| c.contains("float8"));
    let precision = match (float8, param.unwrap_or("bf16")) {
        (true, _) => "fp8",
        (false, "fp32") => "fp32",
        (false, "fp16") => "amp_fp16",
        _ => "amp_bf16",
    };
    im.put(
        "training.mixed_precision_param, model.converters",
        &json!([param, converters]),
        "training.precision",
        json!(precision),
    );
    if let Some(r) = reduce
        && r != "fp32"
    {
        im.put(
            "training.mixed_precision_reduce",
            &json!(r),
            "engine.reduce_dtype",
            json!(r),
        );
    }
    // recomputation
    let mode = im.take("activation_checkpoint.mode");
    let option = im.take("activation_checkpoint.selective_ac_option");
    if let Some(m) = &mode {
        let r = match (text(m).as_str(), option.as_ref().map(text).as_deref()) {
            ("none", _) => Some("none"),
            ("full", _) => Some("full"),
            ("selective", Some("op") | None) => Some("selective_op"),
            _ => None,
        };
        match r {
            Some(r) => im.put(
                "activation_checkpoint.mode, selective_ac_option",
                m,
                "training.activation_checkpointing",
                json!(r),
            ),
            None => im.fail(
                "activation_checkpoint.selective_ac_option",
                option.as_ref().unwrap_or(m),
                "layer-interval selective checkpointing (every n-th layer) is not modelled; op is",
            ),
        }
    } else {
        im.put(
            "activation_checkpoint.mode (absent)",
            &json!("selective"),
            "training.activation_checkpointing",
            json!("selective_op"),
        );
    }
    let compile = im
        .take("compile.enable")
        .or_else(|| im.take("training.compile"));
    if let Some(v) = compile {
        im.put(
            "compile.enable",
            &v,
            "training.compile",
            json!(super::as_bool(&v) == Some(true)),
        );
    } else {
        im.put(
            "compile.enable (absent)",
            &json!(false),
            "training.compile",
            json!(false),
        );
    }
    if let Some(v) = im.take("optimizer.name") {
        match text(&v).as_str() {
            "AdamW" => im.put("optimizer.name", &v, "training.optimizer", json!("adamw")),
            "Adam" => im.put("optimizer.name", &v, "training.optimizer", json!("adam")),
            _ => im.fail(
                "optimizer.name",
                &v,
                "the estimate models torchtitan's AdamW and Adam",
            ),
        }
    }
    if let Some(v) = im.take("optimizer.implementation") {
        let i = match text(&v).as_str() {
            "fused" => Some("fused"),
            "foreach" => Some("foreach"),
            "for-loop" => Some("for_loop"),
            _ => None,
        };
        match i {
            Some(i) => im.put(
                "optimizer.implementation",
                &v,
                "training.optimizer_impl",
                json!(i),
            ),
            None => im.fail(
                "optimizer.implementation",
                &v,
                "must be fused, foreach or for-loop",
            ),
        }
    }
}

/// Why a torchtitan key is not read.
pub(super) fn reason(key: &str) -> String {
    let top = key.split('.').next().unwrap_or("");
    match top {
        "job" | "profiling" | "metrics" | "checkpoint" | "comm" | "fault_tolerance"
        | "validation" | "experimental" => {
            "logging, checkpoints, timeouts or profiling: not the training step's memory".into()
        }
        "optimizer" | "lr_scheduler" => "a hyperparameter: no memory of its own".into(),
        "float8" | "quantize" => {
            "a Float8 option beyond the converters (read as precision fp8)".into()
        }
        _ if key.ends_with("enable_async_tensor_parallel") => {
            "asynchronous TP: its symmetric-memory buffers are not modelled".into()
        }
        _ if key.starts_with("training.dataset")
            || key.starts_with("model.tokenizer")
            || key.starts_with("model.hf_assets") =>
        {
            "data loading: CPU-side".into()
        }
        _ => "not a torchtitan setting the estimate reads".into(),
    }
}

/// A torchtitan job config of a training config.
pub(super) fn write(config: &Config, r: &Resolved) -> Result<Value, Vec<FieldError>> {
    let t = &config.training;
    let p = &config.parallelism;
    let Engine::Fsdp(f) = &config.engine else {
        return Err(cannot(
            "engine.type",
            config.engine.kind(),
            Format::Torchtitan,
            "torchtitan shards with FSDP2",
        ));
    };
    if f.fsdp_version != 2
        || f.sharding_strategy.is_some()
        || f.cpu_offload
        || f.param_dtype.is_some()
        || f.hybrid_shard_group_size.is_some()
    {
        return Err(cannot(
            "engine",
            "fsdp options",
            Format::Torchtitan,
            "torchtitan runs FSDP2 without CPU offload; its param dtype follows mixed_precision_param",
        ));
    }
    let (param, float8) = match t.precision {
        Precision::AmpBf16 => ("bfloat16", false),
        Precision::AmpFp16 => ("float16", false),
        Precision::Fp32 => ("float32", false),
        Precision::Fp8 => ("bfloat16", true),
        pr => {
            return Err(cannot(
                "training.precision",
                super::precision_id(pr),
                Format::Torchtitan,
                "FSDP2 keeps fp32 parameters (mixed precision or fp32)",
            ));
        }
    };
    let mut model = Map::new();
    let preset = config.model.0.get("preset").and_then(Value::as_str);
    if let Some((n, fl, _)) = MODELS.iter().find(|(_, _, p)| Some(*p) == preset) {
        model.insert("name".into(), json!(n));
        model.insert("flavor".into(), json!(fl));
    }
    if float8 {
        model.insert("converters".into(), json!(["float8"]));
    }
    let l = &r.layout;
    let mut training = Map::new();
    let pp = p.pipeline_parallel_size;
    let dp = l.data_parallel_size;
    if pp > 1 {
        training.insert(
            "local_batch_size".into(),
            json!(t.micro_batch_size * t.gradient_accumulation_steps),
        );
    } else {
        training.insert("local_batch_size".into(), json!(t.micro_batch_size));
        training.insert(
            "global_batch_size".into(),
            json!(t.micro_batch_size * t.gradient_accumulation_steps * dp),
        );
    }
    training.insert("seq_len".into(), json!(t.seq_len));
    training.insert("mixed_precision_param".into(), json!(param));
    training.insert(
        "mixed_precision_reduce".into(),
        json!(match f.reduce_dtype {
            Some(Dtype::Bf16) => "bfloat16",
            Some(Dtype::Fp16) => "float16",
            _ => "float32",
        }),
    );
    let rep = p.data_parallel_replicate_size.max(1);
    let mut par = Map::new();
    par.insert("data_parallel_replicate_degree".into(), json!(rep));
    par.insert("data_parallel_shard_degree".into(), json!(dp / rep));
    par.insert(
        "tensor_parallel_degree".into(),
        json!(p.tensor_parallel_size),
    );
    par.insert("pipeline_parallel_degree".into(), json!(pp));
    par.insert(
        "context_parallel_degree".into(),
        json!(p.context_parallel_size),
    );
    par.insert(
        "expert_parallel_degree".into(),
        json!(p.expert_parallel_size),
    );
    if pp > 1 {
        par.insert(
            "pipeline_parallel_microbatch_size".into(),
            json!(t.micro_batch_size),
        );
        if let Some(s) = p.pipeline_schedule {
            par.insert(
                "pipeline_parallel_schedule".into(),
                json!(match s {
                    PipelineSchedule::OneFOneB => "1F1B",
                    PipelineSchedule::Gpipe => "GPipe",
                    PipelineSchedule::Interleaved1F1B => "Interleaved1F1B",
                }),
            );
        }
    }
    par.insert(
        "fsdp_reshard_after_forward".into(),
        json!(match f.reshard_after_forward {
            None => "default",
            Some(ReshardAfterForward::Always(true)) => "always",
            Some(ReshardAfterForward::Always(false)) => "never",
            Some(ReshardAfterForward::Group(_)) =>
                return Err(cannot(
                    "engine.reshard_after_forward",
                    "a group size",
                    Format::Torchtitan,
                    "fsdp_reshard_after_forward is default, always or never"
                )),
        }),
    );
    par.insert("disable_loss_parallel".into(), json!(!p.loss_parallel));
    let ac = match t.activation_checkpointing {
        Recompute::None => json!({"mode": "none"}),
        Recompute::Full => json!({"mode": "full"}),
        Recompute::SelectiveOp => json!({"mode": "selective", "selective_ac_option": "op"}),
        Recompute::Selective => {
            return Err(cannot(
                "training.activation_checkpointing",
                "selective",
                Format::Torchtitan,
                "torchtitan's selective checkpointing is per op or per layer interval",
            ));
        }
    };
    let optimizer = match t.optimizer.name() {
        "adamw" => "AdamW",
        "adam" => "Adam",
        o => {
            return Err(cannot(
                "training.optimizer",
                o,
                Format::Torchtitan,
                "torchtitan builds AdamW or Adam",
            ));
        }
    };
    let imp = match t.optimizer_impl {
        crate::config::OptimizerImpl::Fused => "fused",
        crate::config::OptimizerImpl::Foreach => "foreach",
        crate::config::OptimizerImpl::ForLoop => "for-loop",
    };
    let mut m = Map::new();
    m.insert(
        "job".into(),
        json!({"dump_folder": "./outputs", "description": "exported by gpu-mem-calc"}),
    );
    m.insert("model".into(), Value::Object(model));
    m.insert(
        "optimizer".into(),
        json!({"name": optimizer, "lr": 8e-4, "implementation": imp}),
    );
    m.insert("training".into(), Value::Object(training));
    m.insert("parallelism".into(), Value::Object(par));
    m.insert("activation_checkpoint".into(), ac);
    m.insert("compile".into(), json!({"enable": t.compile}));
    Ok(Value::Object(m))
}
