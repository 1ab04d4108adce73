//! torchtitan TOML job config (torchtitan/config/job_config.py): `[model]` name and flavor,
//! `[training]` local / global batch, `seq_len`, mixed-precision dtypes, `[parallelism]`
//! degrees, pipeline schedule, micro-batch and split over the stages
//! (`module_fqns_per_model_part`), `fsdp_reshard_after_forward`, loss parallel,
//! `[activation_checkpoint]`, `[compile]`, Float8 converters and FSDP float8 all-gather,
//! `[optimizer]`; the 2024 layout too (degrees in `[training]` and `[experimental]`, the
//! pipeline's micro-batch count, schedule and split points in `[experimental]` with
//! `generate_split_points`' default split, the `[float8]` switch). torchtitan always shards
//! with FSDP2 (`fully_shard`); its TP is sequence-parallel.

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
    // degrees; -1 for the data-parallel shard degree is "the rest of the GPUs". torchtitan
    // until early 2025 kept them in `[training]` (data parallel, tensor parallel) and
    // `[experimental]` (pipeline, context parallel): read as the same settings
    let tp = im.degree_any(
        &[
            "parallelism.tensor_parallel_degree",
            "training.tensor_parallel_degree",
        ],
        "parallelism.tensor_parallel_size",
    );
    // the pipeline in torchtitan's 2024 layout: counted micro-batches, split points and
    // generate_split_points' default split (torchtitan 9dec370 `parallelisms/pipeline_llama.py`)
    let legacy_pipeline = im.has("experimental.pipeline_parallel_degree");
    let pp = im.degree_any(
        &[
            "parallelism.pipeline_parallel_degree",
            "experimental.pipeline_parallel_degree",
        ],
        "parallelism.pipeline_parallel_size",
    );
    let cp = im.degree_any(
        &[
            "parallelism.context_parallel_degree",
            "experimental.context_parallel_degree",
        ],
        "parallelism.context_parallel_size",
    );
    im.degree(
        "parallelism.expert_parallel_degree",
        "parallelism.expert_parallel_size",
    );
    let rep = im.degree_any(
        &[
            "parallelism.data_parallel_replicate_degree",
            "training.data_parallel_replicate_degree",
        ],
        "parallelism.data_parallel_replicate_size",
    );
    im.reset("parallelism.sequence_parallel", json!(tp > 1));
    let gpus = im
        .ours("hardware.num_gpus")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let model_parallel = saturating_product([tp, pp, cp, rep]);
    let shard = match im.take_any(&[
        "parallelism.data_parallel_shard_degree",
        "training.data_parallel_shard_degree",
    ]) {
        Some((key, v)) if v.as_i64() == Some(-1) => {
            let rest = gpus / model_parallel.max(1);
            im.put(&key, &v, "hardware.num_gpus", json!(gpus));
            rest.max(1)
        }
        Some((key, v)) => match as_count(&v) {
            Some(s) if s >= 1 => {
                im.put(
                    &key,
                    &v,
                    "hardware.num_gpus",
                    json!(s.saturating_mul(model_parallel)),
                );
                s
            }
            _ => {
                im.fail(&key, &v, "must be -1 or a whole number");
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
    const MICROBATCHES: &str = "experimental.pipeline_parallel_microbatches";
    let microbatches = im.take(MICROBATCHES);
    let counted = pp > 1 && mb_key.is_none() && (legacy_pipeline || microbatches.is_some());
    if microbatches.is_some() && !counted {
        im.ignore(
            MICROBATCHES,
            if pp > 1 {
                "parallelism.pipeline_parallel_microbatch_size sets the micro-batches"
            } else {
                "no pipeline (pipeline_parallel_degree 1)"
            },
        );
    }
    if counted {
        // torchtitan 9dec370 `build_pipeline_schedule`: the local batch is split into
        // `pipeline_parallel_microbatches` micro-batches (default: the pipeline degree)
        let given = microbatches.clone().unwrap_or(json!(pp));
        match as_count(&given).filter(|&n| n >= 1) {
            None => im.fail(MICROBATCHES, &given, "must be a whole number of at least 1"),
            Some(n) => {
                let from = format!("{MICROBATCHES} (micro-batches per local batch)");
                im.put(
                    &from,
                    &given,
                    "training.gradient_accumulation_steps",
                    json!(n),
                );
                if let (Some((k, v)), Some(l)) = (&local, local_n) {
                    if l % n != 0 {
                        im.fail(
                            k,
                            v,
                            format!("must be a multiple of the {n} pipeline micro-batches"),
                        );
                    } else {
                        im.put(k, v, "training.micro_batch_size", json!(l / n));
                    }
                }
            }
        }
    } else if pp > 1 {
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
    let schedule = im.take_any(&[
        "parallelism.pipeline_parallel_schedule",
        "experimental.pipeline_parallel_schedule",
    ]);
    let legacy_split = legacy_pipeline.then(|| im.take(LEGACY_SPLIT));
    pipeline_split(
        im,
        pp,
        schedule.as_ref().map(|(_, v)| text(v)).as_deref(),
        legacy_split,
    );
    if let Some((key, v)) = schedule {
        let s = match text(&v).as_str() {
            "1F1B" => Some("1f1b"),
            "GPipe" => Some("gpipe"),
            "Interleaved1F1B" => Some("interleaved_1f1b"),
            _ => None,
        };
        match s {
            Some(s) => im.put(&key, &v, "parallelism.pipeline_schedule", json!(s)),
            None => im.fail(
                &key,
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
    // torchtitan before its converters (2024) switched float8 on in `[float8]`
    let switch = im.take("float8.enable_float8_linear");
    let float8 = converters.iter().any(|c| c.contains("float8"))
        || switch.as_ref().and_then(super::as_bool) == Some(true);
    let precision = match (float8, param.unwrap_or("bf16")) {
        (true, _) => "fp8",
        (false, "fp32") => "fp32",
        (false, "fp16") => "amp_fp16",
        _ => "amp_bf16",
    };
    // the precision from the param dtype and what switched float8 on: the converters, or
    // the `[float8]` switch of a file without them
    let by_switch = float8 && converters.is_empty();
    match &switch {
        Some(v) if by_switch => im.put(
            "training.mixed_precision_param, float8.enable_float8_linear",
            &json!([param, v]),
            "training.precision",
            json!(precision),
        ),
        _ => im.put(
            "training.mixed_precision_param, model.converters",
            &json!([param, converters]),
            "training.precision",
            json!(precision),
        ),
    }
    if switch.is_some() && !by_switch {
        im.ignore(
            "float8.enable_float8_linear",
            "float8 linears off, or switched on by the converters",
        );
    }
    // FSDP2's float8 all-gather of the Float8Linear weights (torchao
    // `enable_fsdp_float8_all_gather`): `[float8]` until mid-2025, then
    // `[quantize.linear.float8]`
    if let Some((key, v)) = im.take_any(&[
        "float8.enable_fsdp_float8_all_gather",
        "quantize.linear.float8.enable_fsdp_float8_all_gather",
    ]) {
        match super::as_bool(&v) {
            Some(true) if !float8 => im.ignore(
                &key,
                "applies to Float8Linear weights, and no float8 converter is on",
            ),
            Some(b) => im.put(&key, &v, "engine.float8_all_gather", json!(b)),
            None => im.fail(&key, &v, "must be true or false"),
        }
    }
    // float8 computes in the FSDP policy's param dtype, bf16 unless the file says otherwise
    if let Some(p) = param.filter(|p| float8 && *p != "bf16") {
        im.put(
            "training.mixed_precision_param",
            &json!(p),
            "engine.param_dtype",
            json!(p),
        );
    }
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
    if key.ends_with("enable_async_tensor_parallel") {
        return "asynchronous TP: its symmetric-memory buffers are not modelled".into();
    }
    if key.ends_with("pipeline_parallel_schedule_csv") {
        return "a pipeline schedule from a file: the estimate runs the named schedule's \
                bubble and in-flight micro-batches"
            .into();
    }
    if key.ends_with("enable_compiled_autograd") {
        return "compiled autograd: the backward's memory is modelled as eager".into();
    }
    match top {
        "job" | "profiling" | "metrics" | "checkpoint" | "comm" | "fault_tolerance"
        | "validation" | "experimental" => {
            "logging, checkpoints, timeouts or profiling: not the training step's memory".into()
        }
        "optimizer" | "lr_scheduler" => "a hyperparameter: no memory of its own".into(),
        _ if key.ends_with("precompute_float8_dynamic_scale_for_fsdp") => {
            "the float8 weights' scales computed after the step (one all-reduce of a scalar per \
             weight): no memory of its own"
                .into()
        }
        "float8" | "quantize" => {
            "a Float8 option beyond the converters (read as precision fp8)".into()
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
        // under float8 the param dtype is mixed_precision_param (below); otherwise the
        // precision says it
        || (f.param_dtype.is_some() && t.precision != Precision::Fp8)
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
        Precision::Fp8 => (
            match f.param_dtype {
                Some(Dtype::Fp32) => "float32",
                Some(Dtype::Fp16) => "float16",
                _ => "bfloat16",
            },
            true,
        ),
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
        // the estimate's split, written out: torchtitan's own (generate_llm_fqn_per_model_part)
        // lightens the first and last stage and gives the remainder to the first stages
        par.insert("module_fqns_per_model_part".into(), json!(layout_fqns(r)));
        // the layout's schedule (virtual stages imply Interleaved1F1B)
        par.insert(
            "pipeline_parallel_schedule".into(),
            json!(match l.pipeline_schedule {
                PipelineSchedule::OneFOneB => "1F1B",
                PipelineSchedule::Gpipe => "GPipe",
                PipelineSchedule::Interleaved1F1B => "Interleaved1F1B",
            }),
        );
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
    if f.float8_all_gather {
        m.insert(
            "float8".into(),
            json!({"enable_fsdp_float8_all_gather": true}),
        );
    }
    Ok(Value::Object(m))
}

/// The pipeline's split over its stages, read once the model's layers are known: the
/// file's `module_fqns_per_model_part`, else torchtitan's own split of the layers over
/// `pp x` the stages per rank (`pipeline_parallel_layers_per_stage`, else one for 1F1B and
/// GPipe and two for Interleaved1F1B: `pipeline_llm`), with the first and last stage
/// lightened by `pipeline_parallel_first_stage_less_layers` / `last_stage_less_layers`
/// (default 1 each). `legacy`: a file in torchtitan's 2024 layout (`Some`), with its
/// `experimental.pipeline_parallel_split_points` if given, split as that version did
/// ([`split_points`], else [`generated_split`]) unless the modules are named. A split the
/// schema cannot express is an error naming it.
fn pipeline_split(im: &mut Import, pp: u64, schedule: Option<&str>, legacy: Option<Option<Value>>) {
    const FQNS: &str = "parallelism.module_fqns_per_model_part";
    const PER_STAGE: &str = "parallelism.pipeline_parallel_layers_per_stage";
    const FIRST_LESS: &str = "parallelism.pipeline_parallel_first_stage_less_layers";
    const LAST_LESS: &str = "parallelism.pipeline_parallel_last_stage_less_layers";
    let fqns = im.take(FQNS);
    let per_stage = im.take(PER_STAGE);
    let less = [FIRST_LESS, LAST_LESS].map(|k| im.take(k).map(|v| (k, v)));
    // the keys the split is read from, beside the degree (named in the record)
    let less_keys: Vec<&str> = less
        .iter()
        .flatten()
        .map(|(k, _)| k.trim_start_matches("parallelism."))
        .collect();
    let legacy_given = matches!(legacy, Some(Some(_)));
    // the split is the 2024 layout's (its keys name it, and no later key is suggested)
    let from_2024 = fqns.is_none() && legacy.is_some();
    if pp <= 1 {
        let given = [
            (FQNS, fqns.is_some()),
            (PER_STAGE, per_stage.is_some()),
            (FIRST_LESS, less[0].is_some()),
            (LAST_LESS, less[1].is_some()),
            (LEGACY_SPLIT, legacy_given),
        ];
        for (k, _) in given.into_iter().filter(|(_, g)| *g) {
            im.ignore(k, "no pipeline (pipeline_parallel_degree 1)");
        }
        return;
    }
    // the other layout's split keys beside the one that decides
    if fqns.is_some() && legacy_given {
        im.ignore(LEGACY_SPLIT, "module_fqns_per_model_part names the split");
    }
    if from_2024 {
        let given = [
            (PER_STAGE, per_stage.is_some()),
            (FIRST_LESS, less[0].is_some()),
            (LAST_LESS, less[1].is_some()),
        ];
        for (k, _) in given.into_iter().filter(|(_, g)| *g) {
            im.ignore(
                k,
                "the 2024 layout (experimental.pipeline_parallel_degree) splits at \
                 pipeline_parallel_split_points, else by generate_split_points",
            );
        }
    }
    // torchtitan's single-stage schedules hold one model part per rank
    let multi = schedule == Some("Interleaved1F1B");
    let schedule = schedule.unwrap_or("1F1B").to_string();
    let mut weights = [1u64; 2];
    for (i, entry) in less.iter().enumerate() {
        if let Some((k, v)) = entry {
            match as_count(v) {
                Some(w) => weights[i] = w,
                None => im.fail(k, v, "must be a whole number"),
            }
        }
    }
    let per_stage = match per_stage {
        Some(v) => match as_count(&v) {
            Some(n) if n >= 1 => Some((v, n)),
            _ => {
                im.fail(PER_STAGE, &v, "must be a whole number of at least 1");
                None
            }
        },
        None => None,
    };
    im.with_layers(move |im, layers| {
        let (key, value, counts) = match (&fqns, legacy) {
            (Some(f), _) => (FQNS, f.clone(), fqn_split(f, layers)),
            // torchtitan's 2024 layout: split points, else generate_split_points
            (None, Some(Some(points))) => {
                let counts = split_points(&points, layers);
                (LEGACY_SPLIT, points, counts)
            }
            (None, Some(None)) => {
                let stages = pp.saturating_mul(if multi { 2 } else { 1 });
                let value = json!(pp);
                let key = "experimental.pipeline_parallel_degree";
                (key, value, generated_split(stages, layers))
            }
            (None, None) => {
                let stages = match &per_stage {
                    // pipeline_llm: ceil((layers + weights) / layers_per_stage) stages
                    Some((_, n)) => layers
                        .saturating_add(weights[0])
                        .saturating_add(weights[1])
                        .div_ceil(*n),
                    None => pp.saturating_mul(if multi { 2 } else { 1 }),
                };
                let (key, value) = match &per_stage {
                    Some((v, _)) => (PER_STAGE, v.clone()),
                    None => ("parallelism.pipeline_parallel_degree", json!(pp)),
                };
                (key, value, default_split(stages, layers, weights[0], weights[1]))
            }
        };
        let counts = match counts {
            Ok(c) => c,
            Err(e) => return im.fail(key, &value, e),
        };
        let per_rank = counts.len() as u64 / pp;
        if (counts.len() as u64).is_multiple_of(pp) && multi != (per_rank > 1) {
            return im.fail(
                key,
                &value,
                format!(
                    "{} model parts on {pp} ranks: {} holds {}",
                    counts.len(),
                    schedule,
                    if multi {
                        "at least two per rank"
                    } else {
                        "one per rank"
                    }
                ),
            );
        }
        let shown = |c: &[u64]| c.iter().map(u64::to_string).collect::<Vec<_>>().join(" / ");
        match split_as_layout(&counts, pp) {
            Ok((first, last, v)) => {
                let keys = if fqns.is_none() && !less_keys.is_empty() && !from_2024 {
                    format!("{key}, {}", less_keys.join(", "))
                } else {
                    key.to_string()
                };
                let from = format!("{keys} (layers per model part: {})", shown(&counts));
                im.put(&from, &value, "parallelism.first_pipeline_stage_layers", json!(first));
                im.put(&from, &value, "parallelism.last_pipeline_stage_layers", json!(last));
                if v > 1 {
                    im.put(&from, &value, "parallelism.virtual_pipeline_parallel_size", json!(v));
                }
            }
            Err(e) => {
                // torchtitan's own split with other end weights, where one fits the schema
                let stages = counts.len() as u64;
                let hint = if fqns.is_some() || from_2024 {
                    None
                } else {
                    (0..=4u64)
                        .flat_map(|a| (0..=4u64).map(move |b| (a, b)))
                        .filter_map(|(a, b)| {
                            let c = default_split(stages, layers, a, b).ok()?;
                            split_as_layout(&c, pp).ok().map(|_| (a, b, c))
                        })
                        // the nearest to torchtitan's default weights, then the most even
                        .min_by_key(|(a, b, c)| {
                            (a.abs_diff(1) + b.abs_diff(1), c.iter().max().copied())
                        })
                };
                let hint = match hint {
                    Some((a, b, c)) => format!(
                        "pipeline_parallel_first_stage_less_layers = {a} and pipeline_parallel_last_stage_less_layers = {b} give {}, or give module_fqns_per_model_part",
                        shown(&c)
                    ),
                    None if from_2024 => {
                        "give experimental.pipeline_parallel_split_points with a split of that form"
                            .into()
                    }
                    None => "give module_fqns_per_model_part with a split of that form".into(),
                };
                im.fail(
                    key,
                    &value,
                    format!(
                        "torchtitan splits the {layers} layers into {stages} model parts of {} layers: {e}; {hint}",
                        shown(&counts)
                    ),
                );
            }
        }
    });
}

/// Layers per virtual pipeline stage as torchtitan splits them when the job config names
/// no modules: `generate_llm_fqn_per_model_part` (torchtitan/distributed/pipeline_parallel.py)
/// counts the embedding as `input_weight` layers and the norm and output as `output_weight`,
/// gives each of `stages` stages `(layers + weights) / stages` (the first `remainder` stages
/// one more) and takes the weights off the first and last stage. Errors: torchtitan's own
/// (more stages than layers, a weight above the layers per stage).
pub(crate) fn default_split(
    stages: u64,
    layers: u64,
    input_weight: u64,
    output_weight: u64,
) -> Result<Vec<u64>, String> {
    if stages <= 1 {
        return Ok(vec![layers]);
    }
    let effective = layers
        .saturating_add(input_weight)
        .saturating_add(output_weight);
    if stages > effective {
        return Err(format!(
            "torchtitan: {stages} stages cannot be more than the {effective} effective layers ({layers} + first_stage_less_layers {input_weight} + last_stage_less_layers {output_weight})"
        ));
    }
    let (per, extra) = (effective / stages, effective % stages);
    if input_weight > per || output_weight > per {
        return Err(format!(
            "torchtitan: pipeline_parallel_first_stage_less_layers {input_weight} and last_stage_less_layers {output_weight} must not exceed the {per} layers per stage"
        ));
    }
    let mut left = layers;
    Ok((0..stages)
        .map(|s| {
            let mut n = per + u64::from(s < extra);
            if s == 0 {
                n -= input_weight;
            } else if s == stages - 1 {
                n -= output_weight;
            }
            let n = n.min(left);
            left -= n;
            n
        })
        .collect())
}

/// The 2024 layout's split points key (torchtitan 9dec370 `config_manager.py`).
const LEGACY_SPLIT: &str = "experimental.pipeline_parallel_split_points";

/// Layers per stage as torchtitan split them before `pipeline_parallel_layers_per_stage`
/// (9dec370 `parallelisms/pipelining_utils.py` `generate_split_points`): `layers / stages`
/// each, the remainder one more on each middle stage from the second on, the last stage
/// what is left. Errors: torchtitan's (more stages than layers).
pub(crate) fn generated_split(stages: u64, layers: u64) -> Result<Vec<u64>, String> {
    if stages <= 1 {
        return Ok(vec![layers]);
    }
    if stages > layers {
        return Err(format!(
            "torchtitan: {stages} stages cannot be more than the {layers} layers"
        ));
    }
    let (base, mut extra) = (layers / stages, layers % stages);
    let mut counts = Vec::with_capacity(stages as usize);
    let mut at = 0;
    for i in 0..stages - 1 {
        let n = if i > 0 && extra > 0 {
            extra -= 1;
            base + 1
        } else {
            base
        };
        counts.push(n);
        at += n;
    }
    counts.push(layers - at);
    Ok(counts)
}

/// Layers per stage of `experimental.pipeline_parallel_split_points` (torchtitan 9dec370
/// `pipeline_llama_manual_split`): each point, `layers.<i>`, starts a stage (a list, or one
/// comma-separated string); they must rise strictly within the decoder layers.
pub(crate) fn split_points(points: &Value, layers: u64) -> Result<Vec<u64>, String> {
    let names: Vec<String> = match points {
        Value::String(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
        Value::Array(a) => a
            .iter()
            .map(|p| p.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or("must be a list of module names")?,
        _ => return Err("must be a list of module names (layers.<i>)".into()),
    };
    let mut counts = Vec::with_capacity(names.len() + 1);
    let mut start = 0;
    for name in &names {
        match name.strip_prefix("layers.").map(str::parse::<u64>) {
            Some(Ok(at)) if at > start && at < layers => {
                counts.push(at - start);
                start = at;
            }
            _ => {
                return Err(format!(
                    "{name:?}: each split point must be layers.<i> above the previous one (layers.{start}) and below layers.{layers}, so that every stage holds a decoder layer"
                ));
            }
        }
    }
    counts.push(layers - start);
    Ok(counts)
}

/// Layers per virtual stage of `parallelism.module_fqns_per_model_part` (one list of module
/// names per model part, in stage order): each part's `layers.<i>`, which must run in order
/// over every layer, with `tok_embeddings` in the first part and `norm` and `output` in the
/// last (where the estimate places them).
pub(crate) fn fqn_split(parts: &Value, layers: u64) -> Result<Vec<u64>, String> {
    let parts = parts
        .as_array()
        .filter(|p| !p.is_empty())
        .ok_or("must be a list of lists of module names")?;
    let last = parts.len() - 1;
    let mut next = 0u64;
    let mut counts = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let names = part
            .as_array()
            .ok_or("must be a list of lists of module names")?;
        let mut count = 0;
        for name in names {
            let name = name.as_str().ok_or("module names must be strings")?;
            let at = |want: bool, module: &str| {
                if want {
                    Ok(())
                } else {
                    Err(format!(
                        "{module} is in model part {i}: the estimate places it in the {} part",
                        if module == "tok_embeddings" {
                            "first"
                        } else {
                            "last"
                        }
                    ))
                }
            };
            match name {
                "tok_embeddings" => at(i == 0, name)?,
                "norm" | "output" => at(i == last, name)?,
                _ => match name.strip_prefix("layers.").map(str::parse::<u64>) {
                    Some(Ok(l)) if l == next => {
                        next += 1;
                        count += 1;
                    }
                    _ => {
                        return Err(format!(
                            "{name:?} in model part {i}: expected layers.{next} (the parts must hold the decoder layers in order)"
                        ));
                    }
                },
            }
        }
        counts.push(count);
    }
    if next != layers {
        return Err(format!(
            "the parts hold {next} decoder layers, the model has {layers}"
        ));
    }
    Ok(counts)
}

/// A split over virtual stages as the estimate's layout: the first and last stage's layers
/// (`None` when every stage holds the same) and the virtual stages per rank. torchtitan runs
/// virtual stage `k` on rank `k mod pp` (`pipeline_module_split`, loop style), as Megatron
/// does; the schema needs every rank's chunks equal and the middle ranks' layers equal.
pub(crate) fn split_as_layout(
    counts: &[u64],
    pp: u64,
) -> Result<(Option<u64>, Option<u64>, u64), String> {
    let parts = counts.len() as u64;
    if pp <= 1 {
        return Ok((None, None, parts.max(1)));
    }
    if !parts.is_multiple_of(pp) {
        return Err(format!(
            "{parts} model parts do not divide over pipeline_parallel_degree {pp}"
        ));
    }
    let v = parts / pp;
    let pp_us = pp as usize;
    let mut stage = Vec::with_capacity(pp_us);
    for s in 0..pp_us {
        let chunk = counts[s];
        if (1..v as usize).any(|j| counts[s + j * pp_us] != chunk) {
            let held: Vec<String> = (0..v as usize)
                .map(|j| counts[s + j * pp_us].to_string())
                .collect();
            return Err(format!(
                "rank {s} would hold model parts of {} layers, where the estimate's virtual stages split each pipeline stage equally",
                held.join(" and ")
            ));
        }
        stage.push(chunk * v);
    }
    let (first, last) = (stage[0], stage[pp_us - 1]);
    let middle = &stage[1..pp_us - 1];
    if middle.windows(2).any(|w| w[0] != w[1]) || middle.contains(&0) || first == 0 || last == 0 {
        return Err(
            "the estimate's split is a first stage, a last stage and equal middle stages of at least one layer each".into(),
        );
    }
    let even = middle.first().is_none_or(|m| *m == first && *m == last) && first == last;
    Ok(if even {
        (None, None, v)
    } else {
        (Some(first), Some(last), v)
    })
}

/// The job config as TOML: `toml`'s pretty form, with `module_fqns_per_model_part` written
/// one model part per line (the pretty form puts every module name on a line of its own).
pub(super) fn to_toml(job: &Value) -> String {
    let mut job = job.clone();
    let parts = job
        .get_mut("parallelism")
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove("module_fqns_per_model_part"));
    let text = toml::to_string_pretty(&job).unwrap_or_default();
    let Some(Value::Array(parts)) = parts else {
        return text;
    };
    // module names are plain identifiers: a JSON string is the TOML basic string
    let lines: Vec<String> = parts
        .iter()
        .map(|p| format!("    {},\n", p.to_string().replace("\",\"", "\", \"")))
        .collect();
    let key = format!("module_fqns_per_model_part = [\n{}]\n", lines.concat());
    text.replacen("[parallelism]\n", &format!("[parallelism]\n{key}"), 1)
}

/// `module_fqns_per_model_part` of the layout: `pp x v` model parts in stage order, virtual
/// stage `j x pp + s` holding chunk `j` of stage `s` (an equal share of its layers).
pub(crate) fn layout_fqns(r: &Resolved) -> Vec<Vec<String>> {
    let l = &r.layout;
    let (pp, v) = (
        l.pipeline_parallel_size,
        l.virtual_pipeline_parallel_size.max(1),
    );
    (0..pp * v)
        .map(|k| {
            // the layers the estimate places in chunk k / pp of stage k mod pp
            let (a, b) = l
                .stage_layers
                .chunks(k % pp, pp, v)
                .nth((k / pp) as usize)
                .unwrap_or((0, 0));
            let mut names = Vec::new();
            if k == 0 {
                names.push("tok_embeddings".to_string());
            }
            names.extend((a..b).map(|i| format!("layers.{i}")));
            if k == pp * v - 1 {
                names.extend(["norm".to_string(), "output".to_string()]);
            }
            names
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchtitan_default_split() {
        // generate_llm_fqn_per_model_part's docstring: 2 stages, 3 layers, both weights 2:
        // 7 effective layers, 4 and 3, less 2 at each end
        assert_eq!(default_split(2, 3, 2, 2), Ok(vec![2, 1]));
        // Llama 3.1 405B on 8 stages: 128 / 8 = 16, less one at each end
        assert_eq!(
            default_split(8, 126, 1, 1),
            Ok(vec![15, 16, 16, 16, 16, 16, 16, 15])
        );
        // more stages than effective layers, a weight above the layers per stage
        assert!(default_split(9, 5, 1, 1).is_err());
        assert!(default_split(4, 8, 4, 1).is_err());
        // every rank's parts equal, middle stages equal: first and last stage layers
        assert_eq!(
            split_as_layout(&[8, 8, 8, 7, 8, 8, 8, 7], 4),
            Ok((Some(16), Some(14), 2))
        );
        assert_eq!(split_as_layout(&[8, 8, 8, 8], 2), Ok((None, None, 2)));
        assert!(split_as_layout(&[7, 8, 8, 8, 8, 8, 8, 7], 4).is_err());
        assert!(split_as_layout(&[8, 9, 8, 7], 4).is_err());
    }
}
