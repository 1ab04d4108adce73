//! Megatron-LM `pretrain_gpt.py` arguments (megatron/training/arguments.py), as a command
//! line (with `torchrun --nproc_per_node --nnodes` for the GPU count) or a YAML of the
//! arguments (`tensor_model_parallel_size: 2`): parallel sizes, virtual and uneven pipeline
//! stages, sequence parallelism, micro and global batch, sequence length, precision, the
//! distributed optimizer and recomputation. Model-shape arguments are not read: the model is
//! the base's (`--model`).

use super::{Format, Import, as_count, cannot, text};
use crate::config::{Config, Engine, Precision, Recompute};
use crate::error::FieldError;
use crate::resolve::Resolved;
use serde_json::{Value, json};

/// Our keys Megatron-LM's arguments have no place for here.
pub(super) const FROM_BASE: &[&str] = &[
    "model",
    "training.attention",
    "training.loss",
    "training.lora",
    "training.optimizer_impl",
    "training.accumulate_grads_in_fp32",
    "parallelism.pipeline_schedule",
    "parallelism.data_parallel_replicate_size",
    "parallelism.loss_parallel",
    "hardware",
    "overheads",
];

/// Reads Megatron-LM arguments.
pub(super) fn read(im: &mut Import) {
    let engine_kind = match im.ours("engine.type").and_then(Value::as_str) {
        Some("megatron_deepspeed") => "megatron_deepspeed",
        _ => "megatron",
    };
    if engine_kind == "megatron" {
        im.reset("engine", json!({"type": "megatron"}));
    }
    let keep = |im: &Import, k: &str| im.ours(&format!("parallelism.{k}")).cloned();
    let (schedule, replicate, loss_parallel) = (
        keep(im, "pipeline_schedule"),
        keep(im, "data_parallel_replicate_size"),
        keep(im, "loss_parallel"),
    );
    im.reset("parallelism", json!({}));
    for (k, v) in [
        ("pipeline_schedule", schedule),
        ("data_parallel_replicate_size", replicate),
        ("loss_parallel", loss_parallel),
    ] {
        if let Some(v) = v {
            im.reset(&format!("parallelism.{k}"), v);
        }
    }
    // GPUs from the launcher
    let nproc = im.take_any(&["--nproc-per-node", "--nproc_per_node"]);
    let nnodes = im.take("--nnodes").and_then(|v| as_count(&v)).unwrap_or(1);
    if let Some((k, v)) = &nproc {
        match as_count(v) {
            Some(n) if n >= 1 => {
                im.put(k, v, "hardware.gpus_per_node", json!(n));
                im.put(
                    &format!("{k} x --nnodes"),
                    &json!(n * nnodes),
                    "hardware.num_gpus",
                    json!(n * nnodes),
                );
            }
            _ => im.fail(k, v, "must be a whole number"),
        }
    }
    let tp = im.degree(
        "--tensor-model-parallel-size",
        "parallelism.tensor_parallel_size",
    );
    let pp = im.degree(
        "--pipeline-model-parallel-size",
        "parallelism.pipeline_parallel_size",
    );
    let cp = im.degree(
        "--context-parallel-size",
        "parallelism.context_parallel_size",
    );
    im.degree(
        "--expert-model-parallel-size",
        "parallelism.expert_parallel_size",
    );
    if let Some((k, v)) = im.take_any(&["--expert-tensor-parallel-size"]) {
        im.count_value(&k, &v, "parallelism.expert_tensor_parallel_size");
    }
    if let Some(v) = im.take("--sequence-parallel") {
        im.put(
            "--sequence-parallel",
            &v,
            "parallelism.sequence_parallel",
            json!(super::as_bool(&v) != Some(false)),
        );
    }
    if let Some((k, v)) = im.take_any(&[
        "--num-virtual-stages-per-pipeline-rank",
        "--virtual-pipeline-model-parallel-size",
    ]) {
        im.count_value(&k, &v, "parallelism.virtual_pipeline_parallel_size");
    }
    let layers = im.take("--num-layers");
    if let Some(v) = im.take("--num-layers-per-virtual-pipeline-stage") {
        match (as_count(&v), layers.as_ref().and_then(as_count)) {
            (Some(n), Some(l)) if n > 0 && pp > 0 && l % (pp * n) == 0 => {
                im.put(
                    "--num-layers-per-virtual-pipeline-stage",
                    &v,
                    "parallelism.virtual_pipeline_parallel_size",
                    json!(l / (pp * n)),
                );
            }
            _ => im.fail(
                "--num-layers-per-virtual-pipeline-stage",
                &v,
                "needs --num-layers, a multiple of pipeline size x this",
            ),
        }
    }
    if let Some(v) = layers {
        im.ignore(
            "--num-layers",
            format!(
                "{}: the model's layers are the base's model's (--model)",
                text(&v)
            ),
        );
    }
    if let Some(v) = im.take("--decoder-first-pipeline-num-layers") {
        im.count_value(
            "--decoder-first-pipeline-num-layers",
            &v,
            "parallelism.first_pipeline_stage_layers",
        );
    }
    if let Some(v) = im.take("--decoder-last-pipeline-num-layers") {
        im.count_value(
            "--decoder-last-pipeline-num-layers",
            &v,
            "parallelism.last_pipeline_stage_layers",
        );
    }
    let mbs = im
        .count("--micro-batch-size", "training.micro_batch_size")
        .unwrap_or_else(|| im.ours_count("training.micro_batch_size"));
    if let Some(v) = im.take("--global-batch-size") {
        let gpus = im.ours_count("hardware.num_gpus");
        let dp = gpus / (tp * pp * cp).max(1);
        match as_count(&v) {
            Some(g) if dp >= 1 && g % (mbs * dp) == 0 && g > 0 => {
                im.put("--global-batch-size", &v, "training.gradient_accumulation_steps", json!(g / (mbs * dp)));
            }
            _ => im.fail("--global-batch-size", &v, format!("must be a multiple of --micro-batch-size x the data-parallel size ({mbs} x {dp})")),
        }
    }
    im.count("--seq-length", "training.seq_len");
    let fp8 = im.take("--fp8-format");
    let bf16 = im.take("--bf16");
    let fp16 = im.take("--fp16");
    let precision = if fp8.is_some() {
        "fp8"
    } else if bf16.is_some() {
        "amp_bf16"
    } else if fp16.is_some() {
        "amp_fp16"
    } else {
        "fp32"
    };
    let shown = fp8.or(bf16).or(fp16).unwrap_or(json!("absent"));
    im.put(
        "--fp8-format, --bf16, --fp16",
        &shown,
        "training.precision",
        json!(precision),
    );
    if engine_kind == "megatron" {
        let dist = im.take("--use-distributed-optimizer");
        let on = dist
            .as_ref()
            .is_some_and(|v| super::as_bool(v) != Some(false));
        im.put(
            "--use-distributed-optimizer",
            dist.as_ref().unwrap_or(&json!("absent")),
            "engine.distributed_optimizer",
            json!(on),
        );
    }
    let gran = im.take("--recompute-granularity");
    let act = im.take("--recompute-activations");
    let r = match (gran.as_ref().map(text).as_deref(), act.is_some()) {
        (Some("full"), _) => "full",
        (Some("selective"), _) | (None, true) => "selective",
        (None, false) => "none",
        (Some(_), _) => {
            im.fail(
                "--recompute-granularity",
                gran.as_ref().unwrap_or(&Value::Null),
                "must be full or selective",
            );
            "none"
        }
    };
    im.put(
        "--recompute-granularity, --recompute-activations",
        gran.as_ref().or(act.as_ref()).unwrap_or(&json!("absent")),
        "training.activation_checkpointing",
        json!(r),
    );
    if let Some(v) = im.take("--accumulate-allreduce-grads-in-fp32") {
        im.put(
            "--accumulate-allreduce-grads-in-fp32",
            &v,
            "training.accumulate_grads_in_fp32",
            json!(true),
        );
    }
    let opt = im.take("--optimizer");
    let o = match opt.as_ref().map(text).as_deref() {
        None | Some("adam") => "adamw",
        Some("sgd") => "sgd_momentum",
        Some(_) => {
            im.fail(
                "--optimizer",
                opt.as_ref().unwrap_or(&Value::Null),
                "must be adam or sgd",
            );
            "adamw"
        }
    };
    im.put(
        "--optimizer",
        opt.as_ref().unwrap_or(&json!("adam (default)")),
        "training.optimizer",
        json!(o),
    );
}

/// Why a Megatron-LM argument is not read.
pub(super) fn reason(key: &str) -> String {
    const SHAPE: &[&str] = &[
        "--hidden-size",
        "--ffn-hidden-size",
        "--num-attention-heads",
        "--num-query-groups",
        "--group-query-attention",
        "--kv-channels",
        "--max-position-embeddings",
        "--swiglu",
        "--normalization",
        "--position-embedding-type",
        "--untie-embeddings-and-output-weights",
        "--disable-bias-linear",
        "--vocab-size",
        "--num-experts",
        "--moe-router-topk",
        "--moe-ffn-hidden-size",
        "--rotary-base",
        "--make-vocab-size-divisible-by",
        "--norm-epsilon",
        "--use-rotary-position-embeddings",
        "--no-position-embedding",
    ];
    if SHAPE.contains(&key) {
        return "a model-shape argument: the model is the base's (--model)".into();
    }
    if key.starts_with("--moe-router-load-balancing") || key.starts_with("--moe-aux-loss") {
        return "the router's balancing loss: a hyperparameter, no memory of its own".into();
    }
    if key == "--moe-grouped-gemm" || key == "--moe-token-dispatcher-type" {
        return "an MoE kernel or token dispatcher choice: its buffers are not modelled".into();
    }
    if key.contains("lr")
        || key.contains("weight-decay")
        || key.contains("adam-")
        || key.contains("clip-grad")
        || key.contains("train-iters")
        || key.contains("train-samples")
        || key.contains("seed")
        || key.contains("init-method")
        || key.contains("dropout")
    {
        return "a hyperparameter: no memory of its own".into();
    }
    if key.contains("save")
        || key.contains("load")
        || key.contains("log")
        || key.contains("eval")
        || key.contains("tensorboard")
        || key.contains("wandb")
        || key.contains("data-path")
        || key.contains("tokenizer")
        || key.contains("vocab-file")
        || key.contains("merge-file")
        || key.contains("split")
    {
        return "data, logging or checkpoints: not the training step's memory".into();
    }
    if key.starts_with("--recompute-") {
        return "partial recomputation (method, layer count) is not modelled: every layer is recomputed".into();
    }
    if key.contains("overlap")
        || key.contains("fusion")
        || key.contains("fused")
        || key.contains("transformer-impl")
        || key.contains("attention-backend")
    {
        return "a kernel or overlap switch: not modelled".into();
    }
    "not a Megatron-LM argument the estimate reads".into()
}

/// A `torchrun ... pretrain_gpt.py ...` command line of a megatron config.
pub(super) fn write(config: &Config, r: &Resolved) -> Result<String, Vec<FieldError>> {
    let Engine::Megatron(m) = &config.engine else {
        return Err(cannot(
            "engine.type",
            config.engine.kind(),
            Format::Megatron,
            "these are Megatron-LM's arguments (megatron engine)",
        ));
    };
    let t = &config.training;
    let p = &config.parallelism;
    let l = &r.layout;
    let per_node = config.hardware.gpus_per_node.min(l.num_gpus).max(1);
    if !l.num_gpus.is_multiple_of(per_node) {
        return Err(cannot(
            "hardware.num_gpus",
            l.num_gpus,
            Format::Megatron,
            "torchrun starts the same number of processes on every node",
        ));
    }
    let mut w: Vec<String> = vec![
        "torchrun".into(),
        "--nproc_per_node".into(),
        per_node.to_string(),
        "--nnodes".into(),
        (l.num_gpus / per_node).to_string(),
        "pretrain_gpt.py".into(),
    ];
    let mut arg = |k: &str, v: Option<String>| {
        w.push(k.to_string());
        if let Some(v) = v {
            w.push(v);
        }
    };
    arg(
        "--tensor-model-parallel-size",
        Some(p.tensor_parallel_size.to_string()),
    );
    arg(
        "--pipeline-model-parallel-size",
        Some(p.pipeline_parallel_size.to_string()),
    );
    if p.context_parallel_size > 1 {
        arg(
            "--context-parallel-size",
            Some(p.context_parallel_size.to_string()),
        );
    }
    if p.expert_parallel_size > 1 {
        arg(
            "--expert-model-parallel-size",
            Some(p.expert_parallel_size.to_string()),
        );
    }
    if let Some(e) = p.expert_tensor_parallel_size {
        arg("--expert-tensor-parallel-size", Some(e.to_string()));
    }
    if let Some(v) = p.virtual_pipeline_parallel_size {
        arg(
            "--num-virtual-stages-per-pipeline-rank",
            Some(v.to_string()),
        );
    }
    if let Some(v) = p.first_pipeline_stage_layers {
        arg("--decoder-first-pipeline-num-layers", Some(v.to_string()));
    }
    if let Some(v) = p.last_pipeline_stage_layers {
        arg("--decoder-last-pipeline-num-layers", Some(v.to_string()));
    }
    if p.sequence_parallel {
        arg("--sequence-parallel", None);
    }
    arg("--micro-batch-size", Some(t.micro_batch_size.to_string()));
    arg(
        "--global-batch-size",
        Some(
            (t.micro_batch_size * t.gradient_accumulation_steps * l.data_parallel_size).to_string(),
        ),
    );
    arg("--seq-length", Some(t.seq_len.to_string()));
    match t.precision {
        Precision::AmpBf16 => arg("--bf16", None),
        Precision::AmpFp16 => arg("--fp16", None),
        Precision::Fp8 => {
            arg("--bf16", None);
            arg("--fp8-format", Some("hybrid".into()));
        }
        Precision::Fp32 => {}
        pr => {
            return Err(cannot(
                "training.precision",
                super::precision_id(pr),
                Format::Megatron,
                "Megatron-LM keeps fp32 master weights (--bf16, --fp16, --fp8-format or fp32)",
            ));
        }
    }
    if m.distributed_optimizer {
        arg("--use-distributed-optimizer", None);
    }
    match t.activation_checkpointing {
        Recompute::None => {}
        Recompute::Full => {
            arg("--recompute-granularity", Some("full".into()));
            arg("--recompute-method", Some("uniform".into()));
            arg("--recompute-num-layers", Some("1".into()));
        }
        Recompute::Selective => arg("--recompute-granularity", Some("selective".into())),
        Recompute::SelectiveOp => {
            return Err(cannot(
                "training.activation_checkpointing",
                "selective_op",
                Format::Megatron,
                "per-op checkpointing is torchtitan's",
            ));
        }
    }
    match t.optimizer.name() {
        "adamw" => arg("--optimizer", Some("adam".into())),
        "sgd_momentum" => arg("--optimizer", Some("sgd".into())),
        o => {
            return Err(cannot(
                "training.optimizer",
                o,
                Format::Megatron,
                "Megatron-LM builds adam (AdamW) or sgd with momentum",
            ));
        }
    }
    if t.accumulate_grads_in_fp32 == Some(true) {
        arg("--accumulate-allreduce-grads-in-fp32", None);
    }
    let model = config
        .model
        .0
        .get("preset")
        .and_then(Value::as_str)
        .unwrap_or("the model");
    Ok(format!(
        "# {model}: give the model to the import (--model); these arguments set the layout and the batch\n{}\n",
        wrap(&w, 6)
    ))
}

/// Words as one shell command: the first `head` words (the program) on the first line, then
/// one flag and its value per line.
pub(super) fn wrap(words: &[String], head: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if i > 0 {
            out.push_str(if i >= head && w.starts_with("--") {
                " \\\n    "
            } else {
                " "
            });
        }
        out.push_str(&shell_words::quote(w));
        if i >= head
            && w.starts_with("--")
            && i + 1 < words.len()
            && !words[i + 1].starts_with("--")
        {
            out.push(' ');
            out.push_str(&shell_words::quote(&words[i + 1]));
            i += 1;
        }
        i += 1;
    }
    out
}
