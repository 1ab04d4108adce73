//! Megatron-LM `pretrain_gpt.py` arguments (megatron/training/arguments.py), as a command
//! line (with `torchrun --nproc_per_node --nnodes` for the GPU count) or a YAML of the
//! arguments (`tensor_model_parallel_size: 2`): parallel sizes, virtual and uneven pipeline
//! stages, sequence parallelism, micro and global batch, sequence length, precision, the
//! distributed optimizer and recomputation; the model from its shape arguments when they
//! describe one of the families here (a GPT with LayerNorm, GeLU and learned positions; a
//! Llama-style decoder, dense or Mixtral-style MoE), else the base's (`--model`).

use super::{Format, Import, as_count, cannot, saturating_product, text};
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
                    &json!(n.saturating_mul(nnodes)),
                    "hardware.num_gpus",
                    json!(n.saturating_mul(nnodes)),
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
            (Some(n), Some(l))
                if pp
                    .checked_mul(n)
                    .is_some_and(|d| d > 0 && l.is_multiple_of(d)) =>
            {
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
    read_model(im, layers, tp);
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
        let dp = gpus / saturating_product([tp, pp, cp]).max(1);
        match (as_count(&v), mbs.checked_mul(dp).filter(|u| *u > 0)) {
            (Some(g), Some(unit)) if g > 0 && g.is_multiple_of(unit) => {
                im.put("--global-batch-size", &v, "training.gradient_accumulation_steps", json!(g / unit));
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
    // the shape arguments are read by read_model; these others change no tensor's size
    if matches!(
        key,
        "--rotary-base"
            | "--rotary-percent"
            | "--norm-epsilon"
            | "--use-rope-scaling"
            | "--rope-scaling-factor"
    ) {
        return "a model hyperparameter: no memory of its own".into();
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

/// Megatron-LM's model-shape arguments, read together.
const SHAPE_ARGS: &[&str] = &[
    "--hidden-size",
    "--num-attention-heads",
    "--ffn-hidden-size",
    "--group-query-attention",
    "--num-query-groups",
    "--kv-channels",
    "--max-position-embeddings",
    "--swiglu",
    "--normalization",
    "--position-embedding-type",
    "--use-rotary-position-embeddings",
    "--no-position-embedding",
    "--untie-embeddings-and-output-weights",
    "--disable-bias-linear",
    "--add-qkv-bias",
    "--vocab-size",
    "--padded-vocab-size",
    "--make-vocab-size-divisible-by",
    "--tokenizer-type",
    "--merge-file",
    "--num-experts",
    "--moe-router-topk",
    "--moe-ffn-hidden-size",
    "--moe-layer-freq",
    "--moe-shared-expert-intermediate-size",
];

/// The model of `pretrain_gpt.py`'s shape arguments (megatron/training/arguments.py), as
/// Hugging Face `config.json` keys of the family that builds the same tensors:
/// * `gpt2`: Megatron's defaults, LayerNorm, GeLU MLP, biases, learned absolute positions;
/// * `llama` (`mixtral` with `--num-experts`, every layer MoE): `--swiglu`,
///   `--normalization RMSNorm`, `--position-embedding-type rope`, `--disable-bias-linear`;
///   `qwen2` with `--add-qkv-bias` (dense).
///
/// Defaults as arguments.py sets them: `--ffn-hidden-size` 4 h, with `--swiglu`
/// int(8 h / 3 / 64) x 64; `--kv-channels` h / heads; query groups 1 with
/// `--group-query-attention`, else the heads; output layer tied to the embedding unless
/// `--untie-embeddings-and-output-weights`; the MoE FFN the dense one. The vocabulary is
/// `--padded-vocab-size`, else the tokenizer's (`--vocab-size`; GPT-2 BPE's 50257 for
/// `GPT2BPETokenizer` or a `--vocab-file`/`--merge-file` pair without a type;
/// `Llama2Tokenizer`'s 32000) padded to a multiple of `--make-vocab-size-divisible-by`
/// (128) x TP (megatron/core/tokenizers/utils/build_tokenizer.py vocab_size_with_padding).
/// Anything else (a tokenizer file of unknown size, a mix no family has) leaves the model
/// the base's and says why at each argument.
fn read_model(im: &mut Import, layers: Option<Value>, tp: u64) {
    let mut got: Vec<(&str, Value)> = Vec::new();
    for k in SHAPE_ARGS {
        if let Some(v) = im.take(k) {
            got.push((k, v));
        }
    }
    let vocab_file = im.input.keys.get("--vocab-file").cloned();
    let get = |k: &str| got.iter().find(|(g, _)| *g == k).map(|(_, v)| v.clone());
    let flag = |k: &str| get(k).is_some_and(|v| super::as_bool(&v) != Some(false));
    let count = |k: &str| get(k).and_then(|v| as_count(&v));
    let built = (|| -> Result<Vec<(String, Value, &'static str, Value)>, String> {
        let mut out: Vec<(String, Value, &'static str, Value)> = Vec::new();
        let req = |k: &str, v: Option<u64>| {
            v.filter(|n| *n > 0)
                .ok_or(format!("{k} is needed to build the model here"))
        };
        let l = req("--num-layers", layers.as_ref().and_then(as_count))?;
        let h = req("--hidden-size", count("--hidden-size"))?;
        let heads = req("--num-attention-heads", count("--num-attention-heads"))?;
        let swiglu = flag("--swiglu");
        let norm = get("--normalization")
            .map(|v| text(&v))
            .unwrap_or("LayerNorm".into());
        let rope = flag("--use-rotary-position-embeddings")
            || get("--position-embedding-type").is_some_and(|v| text(&v) == "rope");
        let pos = if rope {
            "rope".to_string()
        } else if flag("--no-position-embedding") {
            "none".to_string()
        } else {
            get("--position-embedding-type")
                .map(|v| text(&v))
                .unwrap_or("learned_absolute".into())
        };
        let no_bias = flag("--disable-bias-linear");
        let qkv_bias = flag("--add-qkv-bias");
        let experts = count("--num-experts").filter(|n| *n > 0);
        let family = match (
            swiglu,
            norm.as_str(),
            pos.as_str(),
            no_bias,
            qkv_bias,
            experts,
        ) {
            (false, "LayerNorm", "learned_absolute", false, _, None) => "gpt2",
            (true, "RMSNorm", "rope", true, false, None) => "llama",
            (true, "RMSNorm", "rope", true, true, None) => "qwen2",
            (true, "RMSNorm", "rope", true, false, Some(_)) => "mixtral",
            _ => {
                return Err(format!(
                    "no model family here has this mix (MLP {}, {norm}, positions {pos}, linear biases {}{}{})",
                    if swiglu { "SwiGLU" } else { "GeLU" },
                    if no_bias { "off" } else { "on" },
                    if qkv_bias { ", QKV bias" } else { "" },
                    if experts.is_some() { ", MoE" } else { "" },
                ));
            }
        };
        if get("--moe-layer-freq").is_some_and(|v| as_count(&v) != Some(1))
            || get("--moe-shared-expert-intermediate-size").is_some()
        {
            return Err(
                "MoE on some layers only, or shared experts: not a Mixtral-style model".into(),
            );
        }
        let ffn = count("--ffn-hidden-size").unwrap_or(if swiglu {
            // arguments.py: int((4 * h * 2 / 3) / 64) * 64
            (h.saturating_mul(8) / 3) / 64 * 64
        } else {
            h.saturating_mul(4)
        });
        let kv = if flag("--group-query-attention") {
            count("--num-query-groups").unwrap_or(1)
        } else {
            heads
        };
        // --kv-channels other than arguments.py's default h / heads
        let head_dim = count("--kv-channels").filter(|d| d.checked_mul(heads) != Some(h));
        if family == "gpt2" && head_dim.is_some() {
            return Err(
                "--kv-channels other than hidden / heads: the GPT family here derives it".into(),
            );
        }
        let max_pos = req(
            "--max-position-embeddings",
            count("--max-position-embeddings"),
        )?;
        let tokenizer = get("--tokenizer-type").map(|v| text(&v));
        let padded = count("--padded-vocab-size");
        let (vocab_from, orig) = if let Some(v) = padded {
            ("--padded-vocab-size".to_string(), Some(v))
        } else if let Some(v) = count("--vocab-size") {
            ("--vocab-size".to_string(), Some(v))
        } else {
            match tokenizer.as_deref() {
                Some("GPT2BPETokenizer") => (
                    "--tokenizer-type GPT2BPETokenizer (GPT-2 BPE: 50257)".into(),
                    Some(50_257),
                ),
                Some("Llama2Tokenizer") => (
                    "--tokenizer-type Llama2Tokenizer (32000)".into(),
                    Some(32_000),
                ),
                None if vocab_file.is_some() && get("--merge-file").is_some() => (
                    "--vocab-file, --merge-file (GPT-2 BPE: 50257)".into(),
                    Some(50_257),
                ),
                _ => ("".into(), None),
            }
        };
        let Some(orig) = orig.filter(|v| *v > 0) else {
            return Err("the vocabulary's size is the tokenizer file's: give --vocab-size, or the model (--model)".into());
        };
        let vocab = if padded.is_some() {
            orig
        } else {
            let multiple = count("--make-vocab-size-divisible-by")
                .unwrap_or(128)
                .saturating_mul(tp)
                .max(1);
            orig.div_ceil(multiple).saturating_mul(multiple)
        };
        let shown = |k: &str| get(k).unwrap_or(json!("absent"));
        out.push((
            "--swiglu, --normalization, --position-embedding-type, --disable-bias-linear".into(),
            json!(format!(
                "{}, {norm}, {pos}, biases {}",
                if swiglu { "SwiGLU" } else { "GeLU" },
                if no_bias { "off" } else { "on" }
            )),
            "model.model_type",
            json!(family),
        ));
        out.push((
            "--num-layers".into(),
            layers.clone().unwrap_or(Value::Null),
            "model.num_hidden_layers",
            json!(l),
        ));
        out.push((
            "--hidden-size".into(),
            shown("--hidden-size"),
            "model.hidden_size",
            json!(h),
        ));
        out.push((
            "--num-attention-heads".into(),
            shown("--num-attention-heads"),
            "model.num_attention_heads",
            json!(heads),
        ));
        out.push((
            "--group-query-attention, --num-query-groups".into(),
            shown("--num-query-groups"),
            "model.num_key_value_heads",
            json!(kv),
        ));
        if let Some(d) = head_dim {
            out.push((
                "--kv-channels".into(),
                shown("--kv-channels"),
                "model.head_dim",
                json!(d),
            ));
        }
        out.push((
            "--ffn-hidden-size".into(),
            shown("--ffn-hidden-size"),
            "model.intermediate_size",
            json!(count("--moe-ffn-hidden-size").unwrap_or(ffn)),
        ));
        out.push((
            "--max-position-embeddings".into(),
            shown("--max-position-embeddings"),
            "model.max_position_embeddings",
            json!(max_pos),
        ));
        out.push((
            format!("{vocab_from}, padded to --make-vocab-size-divisible-by x TP"),
            json!(orig),
            "model.vocab_size",
            json!(vocab),
        ));
        out.push((
            "--untie-embeddings-and-output-weights".into(),
            shown("--untie-embeddings-and-output-weights"),
            "model.tie_word_embeddings",
            json!(!flag("--untie-embeddings-and-output-weights")),
        ));
        if let Some(e) = experts {
            out.push((
                "--num-experts".into(),
                shown("--num-experts"),
                "model.num_local_experts",
                json!(e),
            ));
            out.push((
                "--moe-router-topk".into(),
                shown("--moe-router-topk"),
                "model.num_experts_per_tok",
                json!(count("--moe-router-topk").unwrap_or(2)),
            ));
        }
        Ok(out)
    })();
    match built {
        Ok(maps) => {
            im.reset("model", json!({}));
            for (from, v, to, set) in maps {
                im.put(&from, &v, to, set);
            }
            // read into the mappings above, or defaults they state
            for k in ["--vocab-file", "--tokenizer-model"] {
                if let Some(v) = im.take(k) {
                    im.ignore(k, format!("{}: a tokenizer file; the vocabulary is read as the mapping of model.vocab_size says", text(&v)));
                }
            }
        }
        Err(why) => {
            if let Some(v) = layers {
                got.insert(0, ("--num-layers", v));
            }
            for (k, v) in got {
                im.ignore(
                    k,
                    format!("{}: the model is the base's (--model): {why}", text(&v)),
                );
            }
        }
    }
}
