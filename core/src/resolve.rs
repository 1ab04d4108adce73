//! Validation: a [`Config`] document -> a [`Resolved`] problem with every default applied,
//! the model architecture parsed and the parallel layout checked. Every rejection is a
//! [`FieldError`] naming the field, the value and what is allowed.

use crate::config::{Config, Engine, InferenceEngine, Mode, PipelineSchedule};
use crate::engines::Sizes;
use crate::error::{Errors, FieldError, short};
use crate::hf;
use crate::limits;
use crate::model::ModelArch;
use crate::precision::ModelCode;
use crate::precision::{self, Framework, StateBytes};
use crate::presets;
use crate::units::{self, MIB};
use serde_json::{Map, Value, json};

pub use crate::problem::{GpuSpec, Layout, Resolved, StageLayers};

/// Default GPU when the config names none.
pub const DEFAULT_GPU: &str = "h100-80gb";

/// Keys of the `model` section that are not Hugging Face keys.
const MODEL_META_KEYS: &[&str] = &["preset", "hf_config", "name", "num_parameters"];

/// Resolves the `model` section to an architecture (see [`crate::config::ModelSpec`]).
/// Errors: unknown preset, both `preset` and `hf_config`, malformed `hf_config`, unknown
/// keys, out-of-range sizes.
pub fn resolve_model(
    spec: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Result<ModelArch, Vec<FieldError>> {
    let mut errors = Errors::default();
    let preset = match spec.get("preset") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => match presets::model_preset(id) {
            Some(p) => Some(p),
            None => {
                errors.add(
                    "model.preset",
                    format!("{id:?}"),
                    format!(
                        "unknown model preset; choose one of: {}",
                        presets::model_preset_ids().join(", ")
                    ),
                );
                None
            }
        },
        Some(v) => {
            errors.add("model.preset", short(v), "must be a preset id string");
            None
        }
    };
    let hf_config = match spec.get("hf_config") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => {
                errors.add(
                    "model.hf_config",
                    short(&json!(s)),
                    "must be a config.json object (or its JSON text)",
                );
                None
            }
        },
        Some(v) => {
            errors.add("model.hf_config", short(v), "must be a config.json object");
            None
        }
    };
    if preset.is_some() && hf_config.is_some() {
        errors.add(
            "model.hf_config",
            "{...}",
            "give either model.preset or model.hf_config, not both",
        );
    }
    let stated = match spec.get("num_parameters") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(Value::String(s)) => match units::parse_count(s) {
            Ok(n) => Some(n),
            Err(m) => {
                errors.add(
                    "model.num_parameters",
                    format!("{s:?}"),
                    format!("must be a count from 1 to 10^15 such as \"7B\" ({m})"),
                );
                None
            }
        },
        Some(v) => {
            errors.add(
                "model.num_parameters",
                short(v),
                "must be a count such as 7000000000 or \"7B\"",
            );
            None
        }
    };
    if let Some(n) = stated {
        errors.range("model.num_parameters", n, 1, limits::MAX_PARAMS);
    }
    if !errors.is_empty() {
        return Err(errors.0);
    }
    let base: Option<Value> = match (preset, &hf_config) {
        (Some(p), _) => presets::model_preset_config(&p.id),
        (None, Some(v)) => Some(v.clone()),
        (None, None) => None,
    };
    let overrides: Map<String, Value> = spec
        .iter()
        .filter(|(k, _)| !MODEL_META_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();

    let mut arch = match (&base, overrides.is_empty(), stated) {
        // the section is only a stated size: a Llama-style model of that size
        (None, true, Some(n)) => synthesize(n),
        (None, true, None) => {
            return Err(vec![FieldError::new(
                "model",
                "{}",
                "name a preset (model.preset), paste a config.json (model.hf_config) or give the architecture \
                 (hidden_size, num_hidden_layers, num_attention_heads, ...)",
            )]);
        }
        (Some(b), true, _) => {
            let prefix = if preset.is_some() {
                "model.preset"
            } else {
                "model.hf_config"
            };
            hf::parse_at(b, prefix)?
        }
        (b, false, _) => {
            let mut ov = overrides.clone();
            if b.is_none() && !ov.contains_key("intermediate_size") && llama_like(&ov) {
                // No config to take it from: the Llama rule, 2/3 of 4h rounded up to a
                // multiple of 256 (Meta llama/model.py FeedForward, multiple_of = 256).
                if let Some(h) = ov
                    .get("hidden_size")
                    .and_then(|v| v.as_u64())
                    .filter(|h| *h <= limits::MAX_HIDDEN)
                {
                    ov.insert(
                        "intermediate_size".into(),
                        json!((8 * h / 3).div_ceil(256) * 256),
                    );
                }
            }
            hf::parse_model_section(&ov, b.as_ref(), "model", &[])?
        }
    };
    if let Some(p) = preset {
        arch.name = p.name.clone();
    }
    if let Some(Value::String(n)) = spec.get("name") {
        arch.name = n.clone();
    }
    if arch.name.is_empty() {
        arch.name = "custom".into();
    }
    let total = arch.param_counts().total;
    if total > limits::MAX_PARAMS {
        return Err(vec![FieldError::new(
            "model",
            units::fmt_count(total),
            format!("the model has {total} parameters; at most 10^15 are supported"),
        )]);
    }
    if let Some(n) = stated {
        let off = (total as f64 - n as f64).abs() / n as f64;
        if off > 0.10 && !(base.is_none() && overrides.is_empty()) {
            warnings.push(format!(
                "model.num_parameters says {} but the architecture has {} parameters ({:+.0} %)",
                units::fmt_count(n),
                units::fmt_count(total),
                100.0 * (total as f64 - n as f64) / n as f64
            ));
        }
    }
    Ok(arch)
}

/// Whether a hand-entered section describes a gated-MLP (Llama-style) decoder, whose
/// intermediate size follows the Llama rule when it is not given (the family row's MLP).
fn llama_like(ov: &Map<String, Value>) -> bool {
    let model_type = ov
        .get("model_type")
        .and_then(|v| v.as_str())
        .unwrap_or("llama");
    crate::families::find(model_type).is_none_or(|f| f.mlp == crate::arch::MlpKind::Gated)
}

/// A Llama-style dense decoder with about `n` parameters: the closest dense preset if one
/// is within 5 %, else layers L = round((n / 196608)^(1/3)) (from n = 12 L h^2 with
/// h = 128 L, Llama-2's width-to-depth ratio), h = 128 L, 128-wide heads, the Llama
/// intermediate-size rule and a 32 000-token vocabulary.
pub fn synthesize(n: u64) -> ModelArch {
    let close = presets::model_presets()
        .iter()
        .filter_map(|p| {
            let a = hf::parse_hf_config(&presets::model_preset_config(&p.id)?).ok()?;
            if a.moe.is_some() || a.vision.is_some() {
                return None;
            }
            let c = a.param_counts().total;
            let off = (c as f64 - n as f64).abs() / n as f64;
            (off <= 0.05).then_some((off, a, p.name.clone()))
        })
        .min_by(|x, y| x.0.total_cmp(&y.0));
    if let Some((_, mut a, name)) = close {
        a.name = name;
        return a;
    }
    let layers = ((n as f64 / 196_608.0).cbrt().round() as u64).clamp(1, 200);
    let h = 128 * layers;
    let mut spec = Map::new();
    for (k, v) in [
        ("hidden_size", h),
        ("num_hidden_layers", layers),
        ("num_attention_heads", layers),
        ("num_key_value_heads", layers),
        ("intermediate_size", (8 * h / 3).div_ceil(256) * 256),
        ("vocab_size", 32000),
        ("max_position_embeddings", 4096),
    ] {
        spec.insert(k.into(), json!(v));
    }
    spec.insert("model_type".into(), json!("llama"));
    let mut a = hf::parse_hf_config(&Value::Object(spec)).expect("synthesized config is valid");
    a.name = format!("Llama-style {}", units::fmt_count(n));
    a
}

/// Splits `layers` decoder layers over `pp` stages: evenly, or with the first/last stage
/// sizes the config gives and the rest spread evenly over the middle stages (Megatron
/// `--decoder-first-pipeline-num-layers` / `--decoder-last-pipeline-num-layers`). With
/// `vpp` virtual stages each stage's layers must divide into `vpp` equal model chunks
/// (Megatron-Core `TransformerConfig.__post_init__`: the first, the last and every middle
/// stage's layers divisible by the virtual pipeline size).
pub(crate) fn split_layers(
    layers: u64,
    pp: u64,
    p: &crate::config::Parallelism,
    vpp: u64,
    e: &mut Errors,
) -> StageLayers {
    let even = layers / pp.max(1);
    let (first, last) = (p.first_pipeline_stage_layers, p.last_pipeline_stage_layers);
    if first.is_none() && last.is_none() {
        return StageLayers::new(even, even, even);
    }
    if pp < 2 {
        e.add(
            "parallelism.first_pipeline_stage_layers",
            first.or(last).unwrap_or(0),
            "an uneven split needs pipeline_parallel_size > 1",
        );
        return StageLayers::new(layers, 0, layers);
    }
    let middles = pp - 2;
    // unspecified ends take an even share of what the other end leaves
    let (f, l) = match (first, last) {
        (Some(f), Some(l)) => (f, l),
        (Some(f), None) => (f, layers.saturating_sub(f) / (pp - 1)),
        (None, Some(l)) => (layers.saturating_sub(l) / (pp - 1), l),
        (None, None) => (even, even),
    };
    // saturating: the stage sizes' own range errors are reported with the layout's
    let rest = layers.saturating_sub(f.saturating_add(l));
    let ok = f.saturating_add(l) <= layers
        && f >= 1
        && l >= 1
        && if middles == 0 {
            rest == 0
        } else {
            rest.is_multiple_of(middles) && rest > 0
        };
    if !ok {
        e.add(
            "parallelism.first_pipeline_stage_layers",
            f,
            format!(
                "with last_pipeline_stage_layers = {l} the other {} layers must split evenly over the {middles} middle stages (num_hidden_layers = {layers})",
                rest
            ),
        );
        return StageLayers::new(f.min(layers), 0, l.min(layers));
    }
    let split = StageLayers::new(f, rest.checked_div(middles).unwrap_or(0), l);
    if vpp > 1 {
        let stages = [
            ("first", split.first),
            ("middle", if middles > 0 { split.middle } else { 0 }),
            ("last", split.last),
        ];
        if let Some((which, n)) = stages.iter().find(|(_, n)| !n.is_multiple_of(vpp)) {
            e.add(
                "parallelism.virtual_pipeline_parallel_size",
                vpp,
                format!(
                    "must divide each pipeline stage's layers into equal model chunks; the {which} stage has {n} (first {}, middle {}, last {} of num_hidden_layers = {layers})",
                    split.first, split.middle, split.last
                ),
            );
        }
    }
    split
}

/// The layers of each pipeline stage as a serving runtime splits `layers` over `pp` stages
/// when they do not divide (and no partition is given in its environment variable): an
/// even share each, the remainder one by one to the stages just before the last in vLLM
/// (vllm/distributed/utils.py `get_pp_indices`: `partitions[-i] += 1` for `i` in
/// `2..remaining + 2`), to the last stages in SGLang
/// (sglang/srt/distributed/utils.py `get_pp_indices`: "the extra layers to the last
/// 'remainder' partitions").
pub(crate) fn serving_split(engine: InferenceEngine, layers: u64, pp: u64) -> Vec<u64> {
    let pp = pp.max(1);
    let (base, rem) = (layers / pp, layers % pp);
    (0..pp)
        .map(|s| {
            let extra = match engine {
                // the `rem` stages before the last: pp - 1 - rem ..= pp - 2
                InferenceEngine::Vllm => s + 1 + rem >= pp && s + 1 < pp,
                // the last `rem` stages
                _ => s + rem >= pp,
            };
            base + u64::from(extra)
        })
        .collect()
}

/// The serving runtime of an inference config that splits pipeline layers itself
/// ([`serving_split`]: vLLM, SGLang); `None` for training and transformers `generate`.
pub(crate) fn layer_splitting_runtime(config: &Config) -> Option<InferenceEngine> {
    if config.effective_mode() != Mode::Inference {
        return None;
    }
    config
        .inference
        .as_ref()
        .map(|i| i.engine)
        .filter(|e| matches!(e, InferenceEngine::Vllm | InferenceEngine::Sglang))
}

/// For messages: the runtime's name, the file of its [`serving_split`] and the environment
/// variable that overrides it.
fn split_facts(engine: InferenceEngine) -> (&'static str, &'static str, &'static str) {
    match engine {
        InferenceEngine::Sglang => (
            "SGLang",
            "sglang/srt/distributed/utils.py get_pp_indices",
            "SGLANG_PP_LAYER_PARTITION",
        ),
        _ => (
            "vLLM",
            "vllm/distributed/utils.py get_pp_indices",
            "VLLM_PP_LAYER_PARTITION",
        ),
    }
}

/// Per-stage layer counts as a [`StageLayers`]: when the middle stages hold the same
/// number of layers, or that number and one more on the last of them (the serving
/// runtimes' splits, [`serving_split`]).
fn as_stage_layers(counts: &[u64]) -> Option<StageLayers> {
    let (&first, rest) = counts.split_first()?;
    let Some((&last, middles)) = rest.split_last() else {
        return Some(StageLayers::new(first, first, first));
    };
    let middle = middles.first().copied().unwrap_or(first);
    // the middle stages that hold `middle` layers, then those that hold one more
    let lighter = middles.iter().take_while(|&&m| m == middle).count();
    let heavier = &middles[lighter..];
    heavier
        .iter()
        .all(|&m| m == middle + 1)
        .then_some(StageLayers {
            heavier_middles: heavier.len() as u64,
            ..StageLayers::new(first, middle, last)
        })
}

/// Checks the training engine against the layout: the parallel dimensions it models and
/// its own options ([`crate::engines::EngineModel::validate`]).
fn check_engine(config: &Config, e: &mut Errors, layout: Option<&Layout>, sizes: Sizes) {
    let engine = config.engine.model();
    let par = engine.parallelism();
    let kind = engine.kind();
    let p = &config.parallelism;
    if par == crate::engines::Parallelism::DATA_ONLY {
        for (f, v) in [
            ("parallelism.tensor_parallel_size", sizes.tp),
            ("parallelism.pipeline_parallel_size", sizes.pp),
            ("parallelism.context_parallel_size", sizes.cp),
            ("parallelism.expert_parallel_size", sizes.ep),
        ] {
            if v > 1 {
                e.add(f, v, format!("engine {kind} is data parallel only; use megatron, megatron_deepspeed or fsdp for model parallelism"));
            }
        }
    }
    if p.sequence_parallel && !par.sequence {
        e.add(
            "parallelism.sequence_parallel",
            "true",
            format!("engine {kind} does not model sequence parallelism; use megatron, megatron_deepspeed or fsdp (fsdp_version 2)"),
        );
    }
    if p.sequence_parallel && sizes.tp > 1 && sizes.cp > 1 && !par.sequence_with_context {
        e.add(
            "parallelism.sequence_parallel",
            "true",
            format!("engine {kind} cannot combine sequence parallelism with context parallelism (DeepSpeed-Ulysses, context_parallel_size {}): turn one off", sizes.cp),
        );
    }
    if p.data_parallel_replicate_size > 1 && !par.replicate {
        e.add(
            "parallelism.data_parallel_replicate_size",
            p.data_parallel_replicate_size,
            format!("engine {kind} has no replicated shard groups; HSDP is FSDP2's (fsdp, fsdp_version 2; FSDP1: sharding_strategy HYBRID_SHARD)"),
        );
    }
    if let Some(etp) = p
        .expert_tensor_parallel_size
        .filter(|etp| *etp != sizes.tp && !par.expert_tensor)
    {
        e.add(
            "parallelism.expert_tensor_parallel_size",
            etp,
            format!("engine {kind} splits experts like the other layers (tensor_parallel_size); an expert tensor-parallel size of its own is Megatron-Core's"),
        );
    }
    if p.pipeline_schedule == Some(crate::config::PipelineSchedule::Gpipe)
        && kind.starts_with("megatron")
    {
        e.add(
            "parallelism.pipeline_schedule",
            "gpipe",
            format!("engine {kind} runs 1F1B (interleaved with virtual stages)"),
        );
    }
    if let Some(v) = p
        .virtual_pipeline_parallel_size
        .filter(|v| *v > 1 && !par.virtual_pipeline)
    {
        e.add(
            "parallelism.virtual_pipeline_parallel_size",
            v,
            format!("engine {kind} has no interleaved pipeline schedule"),
        );
    }
    if !par.uneven_pipeline {
        for (f, v) in [
            (
                "parallelism.first_pipeline_stage_layers",
                p.first_pipeline_stage_layers,
            ),
            (
                "parallelism.last_pipeline_stage_layers",
                p.last_pipeline_stage_layers,
            ),
        ] {
            if let Some(v) = v {
                e.add(
                    f,
                    v,
                    if par.balanced_pipeline {
                        format!(
                            "engine {kind} splits the layers over the pipeline stages itself (DeepSpeed PipelineModule, partition_method 'type:transformer': the first num_hidden_layers % pipeline_parallel_size stages one layer more)"
                        )
                    } else {
                        format!("engine {kind} splits the layers evenly over the pipeline stages")
                    },
                );
            }
        }
    }
    if config.training.optimizer_in_backward && !engine.torch_optimizer() {
        e.add(
            "training.optimizer_in_backward",
            "true",
            format!("engine {kind} steps with its own optimizer; the step in backward is torch.optim's (torchtune optimizer_in_bwd: ddp or fsdp)"),
        );
    }
    engine.validate(sizes, layout, e);
    // FSDP2's float8 all-gather gathers torchao's float8 linear weights: other precisions
    // have none (FSDP1 is refused by the engine's own validation)
    if let crate::config::Engine::Fsdp(o) = &config.engine
        && o.float8_all_gather
        && o.fsdp_version == 2
        && config.training.precision != crate::config::Precision::Fp8
    {
        e.add(
            "engine.float8_all_gather",
            "true",
            "gathers torchao float8 linear weights: needs training.precision fp8",
        );
    }
}

/// Checks the `inference` section.
fn check_inference(config: &Config, arch: Option<&ModelArch>, tp: u64, e: &mut Errors) {
    use crate::config::WeightFormat;
    let inf = config.inference.clone().unwrap_or_default();
    e.range("inference.batch_size", inf.batch_size, 1, limits::MAX_BATCH);
    e.range("inference.context_len", inf.context_len, 1, limits::MAX_SEQ);
    // prompt and kept logits: at most the context (itself within its range)
    let context_bound = inf.context_len.clamp(1, limits::MAX_SEQ);
    if let Some(p) = inf.prompt_len {
        e.range("inference.prompt_len", p, 1, context_bound);
    }
    if let Some(c) = inf.prefill_chunk {
        e.range("inference.prefill_chunk", c, 1, limits::MAX_SEQ);
    }
    // transformers: 0 keeps every position's logits
    e.range(
        "inference.logits_to_keep",
        inf.logits_to_keep,
        0,
        context_bound,
    );
    e.range(
        "inference.group_size",
        inf.group_size,
        1,
        limits::MAX_HIDDEN,
    );
    if !(inf.gpu_memory_utilization > 0.0 && inf.gpu_memory_utilization <= 1.0) {
        e.add(
            "inference.gpu_memory_utilization",
            inf.gpu_memory_utilization,
            "must be a number above 0 and at most 1",
        );
    }
    if let Some(m) = inf.max_model_len {
        e.range("inference.max_model_len", m, 1, limits::MAX_SEQ);
    }
    if let Some(a) = arch {
        let size = ("batch_size", inf.batch_size, "context_len", inf.context_len);
        check_activation_size(e, "inference", size, inf.attention, a);
    }
    if let Some(fr) = inf.mem_fraction_static
        && !(fr > 0.0 && fr <= 1.0)
    {
        e.add(
            "inference.mem_fraction_static",
            fr,
            "must be a number above 0 and at most 1",
        );
    }
    if let Some(c) = inf.chunked_prefill_size {
        e.range("inference.chunked_prefill_size", c, 1, limits::MAX_SEQ);
    }
    e.range(
        "inference.max_num_batched_tokens",
        inf.max_num_batched_tokens,
        1,
        limits::MAX_SEQ,
    );
    e.range(
        "inference.max_num_seqs",
        inf.max_num_seqs,
        1,
        limits::MAX_BATCH,
    );
    // group-wise formats need every quantized input dimension (per TP rank) to split into
    // whole groups (GPTQ/AWQ kernels require in_features % group_size == 0)
    if let (Some(a), WeightFormat::Int4 | WeightFormat::Awq) = (arch, inf.weight_format) {
        let g = inf.group_size.max(1);
        let inv = a.inventory();
        for grp in inv.dense_layer.iter().chain(inv.moe_layer.iter()) {
            if !grp.is_quantized() {
                continue;
            }
            let cols = grp.rank_shapes(tp)[0].1;
            if !cols.is_multiple_of(g) {
                e.add(
                    "inference.group_size",
                    g,
                    format!("must divide the input size of every quantized layer; {} has {cols} inputs per GPU", grp.name),
                );
                break;
            }
        }
    }
}

/// Checks `training.lora` against the model and the engine.
fn check_lora(
    lora: &crate::config::Lora,
    arch: Option<&ModelArch>,
    engine: &crate::config::Engine,
    e: &mut Errors,
) {
    e.range("training.lora.rank", lora.rank, 1, limits::MAX_HIDDEN);
    if !(0.0..1.0).contains(&lora.dropout) {
        e.add(
            "training.lora.dropout",
            lora.dropout,
            "must be a number from 0 to below 1",
        );
    }
    e.frange(
        "training.lora.alpha",
        lora.alpha,
        0.0,
        limits::MAX_LORA_ALPHA,
    );
    if !engine.model().supports_lora() {
        e.add("training.lora", "{...}", "LoRA is modelled for the ddp, deepspeed and fsdp engines (PEFT on Hugging Face models)");
    }
    let Some(a) = arch else { return };
    match &crate::lora::effective_targets(a, lora) {
        None => e.add(
            "training.lora.target_modules",
            "(default)",
            format!(
                "PEFT has no default target modules for model_type {:?}: name them (\"all-linear\", or q_proj, v_proj, ...)",
                if a.vision.is_some() { "multimodal" } else { a.model_type.as_str() }
            ),
        ),
        Some(crate::config::TargetModules::All(s)) if s != "all-linear" => {
            e.add(
                "training.lora.target_modules",
                format!("{s:?}"),
                "must be \"all-linear\" or a list of module names",
            );
        }
        Some(crate::config::TargetModules::List(names)) => {
            if names.is_empty() {
                e.add(
                    "training.lora.target_modules",
                    "[]",
                    "must name at least one module",
                );
            }
            if let Some(why) = crate::lora::fused_target_error(a, lora) {
                e.add("training.lora.target_modules", format!("{names:?}"), why);
            }
            let linear = crate::lora::linear_module_names(a);
            for n in names {
                if !linear.iter().any(|m| crate::lora::matches(m, n)) {
                    e.add(
                        "training.lora.target_modules",
                        format!("{n:?}"),
                        format!(
                            "matches no linear layer of this model; its linear layers are {}",
                            linear.join(", ")
                        ),
                    );
                }
            }
        }
        _ => {}
    }
}

/// Validates a config and applies every default.
///
/// Errors: all field errors found (model, training, parallel layout, engine, hardware).
pub fn resolve(config: &Config) -> Result<Resolved, Vec<FieldError>> {
    resolve_given(config, None)
}

/// [`resolve`] for a document whose `model` section resolved to `known` (the same section,
/// resolved before): its architecture, parameter counts and inventory are reused instead of
/// parsed and counted again (the plan search resolves thousands of layouts of one model).
/// The model section's warnings (given when `known` was resolved) are not repeated in the
/// result's `warnings`.
pub(crate) fn resolve_given(
    config: &Config,
    known: Option<&Resolved>,
) -> Result<Resolved, Vec<FieldError>> {
    let mut warnings = Vec::new();
    let mut e = Errors::default();
    if config.schema_version != crate::config::SCHEMA_VERSION {
        e.add(
            "schema_version",
            config.schema_version,
            format!("must be {}", crate::config::SCHEMA_VERSION),
        );
    }
    let arch = match known {
        Some(k) => Some(k.arch.clone()),
        None => match resolve_model(&config.model.0, &mut warnings) {
            Ok(a) => Some(a),
            Err(errs) => {
                e.0.extend(errs);
                None
            }
        },
    };
    check_training(config, &mut e);
    let p = &config.parallelism;
    let sizes = Sizes {
        tp: p.tensor_parallel_size,
        pp: p.pipeline_parallel_size,
        cp: p.context_parallel_size,
        ep: p.expert_parallel_size,
    };
    let mut layout = resolve_layout(config, sizes, &mut e, &mut warnings);
    if let (Some(a), Some(l)) = (&arch, &mut layout) {
        check_layout_for_model(config, a, l, sizes, &mut e, &mut warnings);
    }
    // engine (training only: inference runs the model without a training framework)
    let inference = config.effective_mode() == Mode::Inference;
    let (framework, zero_stage) = if inference {
        check_inference(config, arch.as_ref(), sizes.tp, &mut e);
        (Framework::Torch, 0)
    } else {
        check_engine(config, &mut e, layout.as_ref(), sizes);
        if let Some(lora) = &config.training.lora {
            check_lora(lora, arch.as_ref(), &config.engine, &mut e);
        }
        check_compile(config, arch.as_ref(), &mut e);
        config.engine.model().precision()
    };
    let gpu = resolve_gpu(config, &mut e);
    if !e.is_empty() {
        return Err(e.0);
    }
    let (Some(arch), Some(layout), Some(gpu)) = (arch, layout, gpu) else {
        return Err(vec![FieldError::new("", "", "invalid config")]);
    };
    let t = &config.training;
    let bytes = if inference {
        precision::state_bytes(
            t.precision,
            framework,
            t.accumulate_grads_in_fp32,
            zero_stage,
        )
    } else {
        training_bytes(t, &config.engine)
    };
    let (params, inventory) = match known {
        Some(k) => (k.params.clone(), k.inventory.clone()),
        None => (arch.param_counts(), arch.inventory()),
    };
    let mut config = config.clone();
    if arch.gpt_oss_blocks() {
        // transformers' gpt-oss has no SDPA path (attention sinks; GptOssPreTrainedModel
        // `_supports_sdpa = False`): eager is what runs where SDPA was asked for
        use crate::config::Attention;
        let asked = |a: &mut Attention| {
            if *a == Attention::Sdpa {
                *a = Attention::Eager;
                true
            } else {
                false
            }
        };
        let t = asked(&mut config.training.attention);
        let i = config
            .inference
            .as_mut()
            .is_some_and(|inf| asked(&mut inf.attention));
        if (t && !inference) || (i && inference) {
            warnings.push("gpt-oss has no SDPA attention in transformers (attention sinks): estimated with eager attention; set attention to \"flash\" for a kernel with sinks".into());
        }
    }
    let model_code = if inference {
        ModelCode::Transformers
    } else {
        config.engine.model().model_code()
    };
    // only training reads them (and validated `training.lora` above); inference ignores
    // the training section
    let lora_targets = (!inference)
        .then_some(config.training.lora.as_ref())
        .flatten()
        .map(|lo| crate::lora::Targets::with_inventory(&arch, &inventory, lo));
    Ok(Resolved {
        config,
        inventory,
        lora_targets,
        arch,
        params,
        layout,
        framework,
        model_code,
        bytes,
        gpu,
        warnings,
    })
}

/// Bytes per element of each model state and activation for training `t` under `engine`:
/// the precision regime's ([`precision::state_bytes`], by the engine's framework and ZeRO
/// stage), with activations and matmul inputs in the dtype the engine computes in where it
/// casts parameters itself (FSDP `param_dtype`).
pub(crate) fn training_bytes(
    t: &crate::config::Training,
    engine: &crate::config::Engine,
) -> StateBytes {
    let (framework, zero_stage) = engine.model().precision();
    let mut bytes = precision::state_bytes(
        t.precision,
        framework,
        t.accumulate_grads_in_fp32,
        zero_stage,
    );
    if let Some(compute) = engine.model().compute_bytes(t.precision, bytes.weight) {
        // the engine casts parameters to another dtype for compute (FSDP param_dtype):
        // activations and matmul inputs follow it
        bytes.activation = compute;
        bytes.linear_input = compute;
    }
    bytes
}

/// The recomputation choice against the engine and the rest of the training set-up (also
/// the plan search's filter of its recomputation options: the same checks).
pub(crate) fn check_recompute(t: &crate::config::Training, engine: &Engine, e: &mut Errors) {
    if t.activation_checkpointing == crate::config::Recompute::SelectiveOp {
        if engine.model().model_code() == crate::precision::ModelCode::Megatron {
            e.add(
                "training.activation_checkpointing",
                "\"selective_op\"",
                "torchtitan's per-op policy runs on PyTorch models (ddp, fsdp, deepspeed engines); Megatron recomputes with \"selective\" or \"full\"",
            );
        }
        if t.lora.is_some() {
            e.add(
                "training.activation_checkpointing",
                "\"selective_op\"",
                "per-op selective checkpointing with LoRA is not modelled (the adapters' matmuls change which outputs the policy saves); use \"full\" or \"none\"",
            );
        }
    }
    if t.activation_offloading {
        if !t.activation_checkpointing.checkpoints_layers() {
            e.add(
                "training.activation_offloading",
                "true",
                "offloads what checkpointed layers save: set activation_checkpointing to \"full\" or \"selective_op\"",
            );
        }
        if engine.model().model_code() == crate::precision::ModelCode::Megatron {
            e.add(
                "training.activation_offloading",
                "true",
                "is modelled for PyTorch models (ddp, fsdp, deepspeed engines), not Megatron's",
            );
        }
    }
}

/// Ranges of the `training` section.
fn check_training(config: &Config, e: &mut Errors) {
    let t = &config.training;
    e.range(
        "training.micro_batch_size",
        t.micro_batch_size,
        1,
        limits::MAX_BATCH,
    );
    e.range("training.seq_len", t.seq_len, 1, limits::MAX_SEQ);
    e.range(
        "training.gradient_accumulation_steps",
        t.gradient_accumulation_steps,
        1,
        limits::MAX_GRAD_ACCUM,
    );
    check_recompute(t, &config.engine, e);
    if t.optimizer_in_backward && t.gradient_accumulation_steps > 1 {
        e.add(
            "training.optimizer_in_backward",
            "true",
            "cannot be combined with gradient_accumulation_steps > 1 (the step runs inside backward)",
        );
    }
}

/// `training.compile`: what the compiled-layer model covers (core/src/activations.rs
/// `compiled_saved`): PyTorch models, dense layers, SDPA / flash, recomputation none or
/// full, no LoRA, no offloading.
fn check_compile(config: &Config, arch: Option<&ModelArch>, e: &mut Errors) {
    use crate::config::{Attention, Recompute};
    let t = &config.training;
    if !t.compile {
        return;
    }
    let refuse = |e: &mut Errors, why: &str| e.add("training.compile", "true", why);
    if config.engine.model().model_code() == crate::precision::ModelCode::Megatron {
        refuse(
            e,
            "is modelled for PyTorch models (ddp, fsdp, deepspeed engines); Megatron runs its own fused kernels",
        );
    }
    if t.lora.is_some() {
        refuse(
            e,
            "with LoRA is not modelled (PEFT's adapter modules change the compiled graph); use compile false",
        );
    }
    if t.attention == Attention::Eager {
        refuse(
            e,
            "with eager attention is not modelled; use attention \"sdpa\" or \"flash\"",
        );
    }
    if matches!(
        t.activation_checkpointing,
        Recompute::Selective | Recompute::SelectiveOp
    ) {
        refuse(
            e,
            "is modelled with activation_checkpointing \"none\" or \"full\"",
        );
    }
    if t.activation_offloading {
        refuse(e, "with activation offloading is not modelled");
    }
    if let Some(a) = arch
        && (a.moe.is_some() || a.mla.is_some() || a.gpt_oss_blocks())
    {
        refuse(
            e,
            "is modelled for dense models with standard attention; MoE routing and MLA under torch.compile are not modelled yet",
        );
    }
}

/// The GPU count and the data-parallel size from the parallel sizes; `None` when a size is
/// out of range. The layer split is filled in by [`check_layout_for_model`].
fn resolve_layout(
    config: &Config,
    s: Sizes,
    e: &mut Errors,
    warnings: &mut Vec<String>,
) -> Option<Layout> {
    let p = &config.parallelism;
    let hw = &config.hardware;
    let mut ok = true;
    for (f, v) in [
        ("parallelism.tensor_parallel_size", s.tp),
        ("parallelism.pipeline_parallel_size", s.pp),
        ("parallelism.context_parallel_size", s.cp),
        ("parallelism.expert_parallel_size", s.ep),
    ] {
        ok &= e.range(f, v, 1, limits::MAX_GPUS);
    }
    if let Some(d) = p.data_parallel_size {
        ok &= e.range("parallelism.data_parallel_size", d, 1, limits::MAX_GPUS);
    }
    if let Some(n) = hw.num_gpus {
        ok &= e.range("hardware.num_gpus", n, 1, limits::MAX_GPUS);
    }
    ok &= e.range("hardware.gpus_per_node", hw.gpus_per_node, 1, 1024);
    // layer counts: their relation to the model's layers is checked with the model
    for (f, v) in [
        (
            "parallelism.virtual_pipeline_parallel_size",
            p.virtual_pipeline_parallel_size,
        ),
        (
            "parallelism.first_pipeline_stage_layers",
            p.first_pipeline_stage_layers,
        ),
        (
            "parallelism.last_pipeline_stage_layers",
            p.last_pipeline_stage_layers,
        ),
    ] {
        if let Some(v) = v {
            e.range(f, v, 1, limits::MAX_LAYERS);
        }
    }
    if !ok {
        return None;
    }
    let model_par = s.tp.saturating_mul(s.pp).saturating_mul(s.cp);
    let (num_gpus, dp) = match (hw.num_gpus, p.data_parallel_size) {
        (Some(n), Some(d)) => (n, d),
        (Some(n), None) => {
            if n % model_par != 0 {
                e.add(
                    "hardware.num_gpus",
                    n,
                    format!("must be a multiple of tensor x pipeline x context parallel size = {model_par}"),
                );
            }
            (n, (n / model_par).max(1))
        }
        (None, Some(d)) => (d.saturating_mul(model_par), d),
        (None, None) => (model_par, 1),
    };
    if dp.saturating_mul(model_par) != num_gpus {
        e.add(
            "parallelism.data_parallel_size",
            dp,
            format!(
                "data x tensor x pipeline x context parallel sizes ({dp} x {} x {} x {} = {}) must equal hardware.num_gpus ({num_gpus})",
                s.tp,
                s.pp,
                s.cp,
                dp.saturating_mul(model_par)
            ),
        );
    }
    if num_gpus > limits::MAX_GPUS {
        e.add(
            "hardware.num_gpus",
            num_gpus,
            format!("must be at most {}", limits::MAX_GPUS),
        );
    }
    if p.sequence_parallel && s.tp == 1 {
        warnings.push("sequence_parallel has no effect with tensor_parallel_size 1".into());
    }
    let replicate = p.data_parallel_replicate_size;
    if e.range(
        "parallelism.data_parallel_replicate_size",
        replicate,
        1,
        limits::MAX_GPUS,
    ) && !dp.is_multiple_of(replicate)
    {
        e.add(
            "parallelism.data_parallel_replicate_size",
            replicate,
            format!("must divide data_parallel_size ({dp})"),
        );
    }
    let etp = p.expert_tensor_parallel_size.unwrap_or(s.tp);
    e.range(
        "parallelism.expert_tensor_parallel_size",
        etp,
        1,
        limits::MAX_GPUS,
    );
    let vpp = p.virtual_pipeline_parallel_size.unwrap_or(1);
    let schedule = p.pipeline_schedule.unwrap_or(if vpp > 1 {
        PipelineSchedule::Interleaved1F1B
    } else {
        PipelineSchedule::OneFOneB
    });
    match (schedule, vpp > 1) {
        (PipelineSchedule::Interleaved1F1B, false) if s.pp > 1 => e.add(
            "parallelism.pipeline_schedule",
            "interleaved_1f1b",
            "needs virtual_pipeline_parallel_size > 1 (model chunks per pipeline rank)",
        ),
        (PipelineSchedule::Gpipe | PipelineSchedule::OneFOneB, true) => e.add(
            "parallelism.pipeline_schedule",
            if schedule == PipelineSchedule::Gpipe {
                "gpipe"
            } else {
                "1f1b"
            },
            "virtual pipeline stages need the interleaved_1f1b schedule",
        ),
        _ => {}
    }
    Some(Layout {
        num_gpus,
        data_parallel_size: dp,
        tensor_parallel_size: s.tp,
        pipeline_parallel_size: s.pp,
        context_parallel_size: s.cp,
        expert_parallel_size: s.ep,
        virtual_pipeline_parallel_size: vpp,
        pipeline_schedule: schedule,
        sequence_parallel: p.sequence_parallel && s.tp > 1,
        data_parallel_replicate_size: replicate.max(1),
        expert_tensor_parallel_size: etp.max(1),
        loss_parallel: p.loss_parallel,
        gpus_per_node: hw.gpus_per_node,
        stage_layers: StageLayers::new(0, 0, 0),
    })
}

/// The checks of the layout that need the model (heads, layers, experts, context), and the
/// split of the layers over the pipeline stages.
fn check_layout_for_model(
    config: &Config,
    a: &ModelArch,
    l: &mut Layout,
    s: Sizes,
    e: &mut Errors,
    warnings: &mut Vec<String>,
) {
    let p = &config.parallelism;
    let t = &config.training;
    let (tp, pp, cp, ep) = (s.tp, s.pp, s.cp, s.ep);
    l.stage_layers = split_layers(
        a.num_hidden_layers,
        pp,
        p,
        l.virtual_pipeline_parallel_size,
        e,
    );
    if !a.num_attention_heads.is_multiple_of(tp) {
        e.add(
            "parallelism.tensor_parallel_size",
            tp,
            format!(
                "must divide num_attention_heads ({})",
                a.num_attention_heads
            ),
        );
    } else if a.mla.is_none()
        && !a.num_key_value_heads.is_multiple_of(tp)
        // inference engines replicate KV heads when TP exceeds them (vLLM)
        && !(config.effective_mode() == Mode::Inference && tp % a.num_key_value_heads == 0)
    {
        e.add(
            "parallelism.tensor_parallel_size",
            tp,
            format!(
                "must divide num_key_value_heads ({}) (Megatron num_query_groups % TP == 0)",
                a.num_key_value_heads
            ),
        );
    }
    if config.effective_mode() == Mode::Training
        && let Some(why) = config.engine.ulysses_heads_error(a, tp, cp)
    {
        e.add("parallelism.context_parallel_size", cp, why);
    }
    let runtime = layer_splitting_runtime(config);
    if p.first_pipeline_stage_layers.is_some() || p.last_pipeline_stage_layers.is_some() {
        // checked by split_layers
    } else if let (Some(engine), false) = (runtime, a.num_hidden_layers.is_multiple_of(pp)) {
        // vLLM and SGLang split the layers themselves
        let counts = serving_split(engine, a.num_hidden_layers, pp);
        match as_stage_layers(&counts) {
            Some(split) => l.stage_layers = split,
            None => {
                let (name, source, env) = split_facts(engine);
                let shown: Vec<String> = counts.iter().map(u64::to_string).collect();
                e.add(
                    "parallelism.pipeline_parallel_size",
                    pp,
                    format!(
                        "{name} splits the {} layers over {pp} stages as {} ({source}); only splits whose middle stages hold the same number of layers are modelled: choose another pipeline_parallel_size, or give such a split (first_pipeline_stage_layers / last_pipeline_stage_layers, with {env} to match)",
                        a.num_hidden_layers,
                        shown.join(" / "),
                    ),
                );
            }
        }
    } else if !a.num_hidden_layers.is_multiple_of(pp)
        && config.effective_mode() == Mode::Training
        && config.engine.parallelism().balanced_pipeline
    {
        // DeepSpeed's PipelineModule splits the layers itself
        if pp > a.num_hidden_layers {
            e.add(
                "parallelism.pipeline_parallel_size",
                pp,
                format!(
                    "must be at most num_hidden_layers ({})",
                    a.num_hidden_layers
                ),
            );
        } else {
            l.stage_layers = StageLayers::balanced(a.num_hidden_layers, pp);
        }
    } else if !a.num_hidden_layers.is_multiple_of(pp) {
        e.add(
            "parallelism.pipeline_parallel_size",
            pp,
            format!(
                "must divide num_hidden_layers ({}), or choose an uneven split with first_pipeline_stage_layers / last_pipeline_stage_layers",
                a.num_hidden_layers
            ),
        );
    } else if l.virtual_pipeline_parallel_size > 1 {
        let v = l.virtual_pipeline_parallel_size;
        if pp == 1 {
            e.add(
                "parallelism.virtual_pipeline_parallel_size",
                v,
                "needs pipeline_parallel_size > 1",
            );
        } else if !a.num_hidden_layers.is_multiple_of(pp.saturating_mul(v)) {
            e.add(
                "parallelism.virtual_pipeline_parallel_size",
                v,
                format!(
                    "pipeline x virtual stages ({}) must divide num_hidden_layers ({})",
                    u128::from(pp) * u128::from(v),
                    a.num_hidden_layers
                ),
            );
        }
    }
    match &a.moe {
        Some(m) if m.num_experts % ep != 0 => e.add(
            "parallelism.expert_parallel_size",
            ep,
            format!("must divide the number of experts ({})", m.num_experts),
        ),
        None if ep > 1 => e.add(
            "parallelism.expert_parallel_size",
            ep,
            "needs a mixture-of-experts model",
        ),
        _ => {}
    }
    // Megatron-Core MoE parallel folding (parallel_state.py initialize_model_parallel):
    // expert-tensor x expert x expert-data parallel = tensor x context x data parallel
    let etp = l.expert_tensor_parallel_size;
    // saturating: an out-of-range size is reported above, and validation goes on with it
    let folded = l.shard_group().saturating_mul(tp);
    if ep > 1 || etp != tp {
        if !folded.is_multiple_of(etp.saturating_mul(ep)) {
            e.add(
                "parallelism.expert_parallel_size",
                ep,
                format!(
                    "expert x expert-tensor parallel sizes ({ep} x {etp}) must divide tensor x context x data parallel size ({folded})"
                ),
            );
        } else if ep > 1
            && !config.engine.parallelism().expert_tensor
            && !l.shard_group().is_multiple_of(ep)
        {
            e.add(
                "parallelism.expert_parallel_size",
                ep,
                format!(
                    "must divide data x context parallel size ({}): expert parallelism borrows data-parallel ranks (torchtitan, transformers, DeepSpeed-MoE)",
                    l.shard_group()
                ),
            );
        }
        if let Some(m) = &a.moe
            && !(m.moe_intermediate_size.is_multiple_of(etp))
        {
            e.add(
                "parallelism.expert_tensor_parallel_size",
                etp,
                format!(
                    "must divide the experts' moe_intermediate_size ({})",
                    m.moe_intermediate_size
                ),
            );
        }
    }
    if config.effective_mode() == Mode::Training {
        let multiple = config.engine.parallelism().sequence_multiple(cp);
        if !t.seq_len.is_multiple_of(multiple) {
            e.add(
                "training.seq_len",
                t.seq_len,
                if multiple == cp {
                    format!("must be divisible by context_parallel_size ({cp})")
                } else {
                    format!(
                        "must be divisible by 2 x context_parallel_size ({multiple}): load-balanced ring attention splits the sequence into 2 chunks per context-parallel rank (Megatron-Core get_batch_on_this_cp_rank, torchtitan seq_len_divisor)"
                    )
                },
            );
        }
    } else if !t.seq_len.is_multiple_of(cp) {
        e.add(
            "training.seq_len",
            t.seq_len,
            format!("must be divisible by context_parallel_size ({cp})"),
        );
    }
    if t.seq_len > a.max_position_embeddings {
        warnings.push(format!(
            "training.seq_len ({}) exceeds the model's max_position_embeddings ({})",
            t.seq_len, a.max_position_embeddings
        ));
    }
    if config.effective_mode() == Mode::Training {
        let size = ("micro_batch_size", t.micro_batch_size, "seq_len", t.seq_len);
        check_activation_size(e, "training", size, t.attention, a);
    }
}

/// The per-token width of what attention keeps that grows with the sequence, and what it
/// is: under eager attention the `heads x seq` scores, under SDPA with a sliding window the
/// `seq`-wide mask row that each sliding layer keeps (`activations::sliding_mask_bytes`);
/// else none.
fn attention_row(
    seq: u64,
    a: &ModelArch,
    attention: crate::config::Attention,
) -> (u128, &'static str) {
    use crate::config::Attention;
    match attention {
        Attention::Eager => (
            u128::from(a.num_attention_heads) * u128::from(seq),
            "; eager attention keeps a heads x seq x seq score matrix",
        ),
        Attention::Sdpa if a.sliding_window.is_some() => (
            u128::from(seq),
            "; SDPA with a sliding-window mask keeps a seq x seq mask per sliding layer",
        ),
        _ => (0, ""),
    }
}

/// An upper bound of the elements one micro-batch's tensors span over all layers:
/// `batch x seq` tokens times the widest per-token tensor (hidden, intermediate, the
/// routed experts' intermediates, the vocabulary's logits, the attention row `scores` of
/// [`attention_row`]) times the layers, in `u128` (saturating).
fn activation_elems_bound(batch: u64, seq: u64, a: &ModelArch, scores: u128) -> u128 {
    let experts = a.moe.as_ref().map_or(0, |m| {
        u128::from(m.moe_intermediate_size) * u128::from(m.num_experts_per_tok)
    });
    let width = [
        u128::from(a.hidden_size),
        u128::from(a.intermediate_size),
        u128::from(a.vocab_size),
        experts,
        scores,
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    // saturating: inputs past their bounds still reach this check (their range errors are
    // reported too)
    [
        u128::from(seq),
        width,
        u128::from(a.num_hidden_layers.max(1)),
    ]
    .into_iter()
    .fold(u128::from(batch), u128::saturating_mul)
}

/// A field error at `<section>.<sequence key>` when one (micro-)batch's tensors, bounded by
/// [`activation_elems_bound`], exceed [`limits::MAX_ACTIVATION_ELEMS`]: past what the
/// memory model's u64 activation arithmetic holds. `size`: (batch key, batch, sequence key,
/// sequence).
fn check_activation_size(
    e: &mut Errors,
    section: &str,
    size: (&str, u64, &str, u64),
    attention: crate::config::Attention,
    a: &ModelArch,
) {
    let (batch_key, batch, seq_key, seq) = size;
    let (scores, why) = attention_row(seq, a, attention);
    let n = activation_elems_bound(batch, seq, a, scores);
    if n > limits::MAX_ACTIVATION_ELEMS {
        e.add(
            format!("{section}.{seq_key}"),
            seq,
            format!(
                "{batch_key} {batch} x {seq_key} {seq} is past what the memory model computes: one {}batch's tensors would span about 2^{} elements (the bound is 2^56){}",
                if section == "training" { "micro-" } else { "" },
                127 - n.leading_zeros(),
                why
            ),
        );
    }
}

/// The GPU: a preset, a custom capacity, or the default preset; the overheads' ranges.
fn resolve_gpu(config: &Config, e: &mut Errors) -> Option<GpuSpec> {
    let hw = &config.hardware;
    // the node's CPU memory: the user's, else the preset's typical node (the default
    // preset's for a custom GPU)
    let node_default = |g: Option<&presets::GpuPreset>| {
        g.or_else(|| presets::gpu_preset(DEFAULT_GPU))
            .map_or(0, |g| g.node_cpu_memory_gib.saturating_mul(units::GIB))
    };
    let cpu_memory =
        |g: Option<&presets::GpuPreset>| hw.cpu_memory_gb.map_or_else(|| node_default(g), |m| m.0);
    let from_preset = |g: &presets::GpuPreset, memory: Option<u64>| GpuSpec {
        id: g.id.clone(),
        name: g.name.clone(),
        memory_bytes: memory.unwrap_or(g.capacity_bytes()),
        cuda_context_bytes: (g.cuda_context_mib * MIB as f64) as u64,
        arch: g.arch.clone(),
        node_cpu_memory_bytes: cpu_memory(Some(g)),
    };
    let gpu = match (&hw.gpu, hw.gpu_memory_gb) {
        (Some(id), mem) => match presets::gpu_preset(id) {
            Some(g) => Some(from_preset(g, mem.map(|m| m.0))),
            None => {
                e.add(
                    "hardware.gpu",
                    format!("{id:?}"),
                    format!(
                        "unknown GPU preset; choose one of: {}",
                        presets::gpu_preset_ids().join(", ")
                    ),
                );
                None
            }
        },
        (None, Some(mem)) => Some(GpuSpec {
            id: "custom".into(),
            name: format!("GPU with {}", units::fmt_gb(mem.0)),
            memory_bytes: mem.0,
            // the A100 measurement (published case GT-31) for an unknown card
            cuda_context_bytes: 911 * MIB,
            arch: "unknown".into(),
            node_cpu_memory_bytes: cpu_memory(None),
        }),
        (None, None) => presets::gpu_preset(DEFAULT_GPU).map(|g| from_preset(g, None)),
    };
    if let Some(g) = &gpu {
        e.range(
            "hardware.gpu_memory_gb",
            g.memory_bytes,
            1,
            limits::MAX_GPU_MEMORY,
        );
        let cpu = g.node_cpu_memory_bytes;
        if hw.cpu_memory_gb.is_some() && !(1..=limits::MAX_CPU_MEMORY).contains(&cpu) {
            e.add(
                "hardware.cpu_memory_gb",
                units::fmt_gb(cpu),
                format!(
                    "must be more than 0 and at most {} GB",
                    limits::MAX_CPU_MEMORY / units::GB
                ),
            );
        }
    }
    let o = &config.overheads;
    e.frange(
        "overheads.allocator_reserve_fraction",
        o.allocator_reserve_fraction,
        0.0,
        1.0,
    );
    if let Some(c) = o.cuda_context_mib {
        e.frange("overheads.cuda_context_mib", c, 0.0, 65536.0);
    }
    gpu.map(|mut g| {
        if let Some(c) = o.cuda_context_mib {
            g.cuda_context_bytes = (c * MIB as f64) as u64;
        }
        g
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_runtimes_split_the_layers_as_their_get_pp_indices() {
        use InferenceEngine::{Sglang, Vllm};
        // vLLM: an even share, the remainder to the stages just before the last
        // (partitions[-2], partitions[-3], ...); SGLang: to the last stages
        assert_eq!(serving_split(Vllm, 32, 4), [8, 8, 8, 8]);
        assert_eq!(serving_split(Vllm, 61, 2), [31, 30]);
        assert_eq!(serving_split(Sglang, 61, 2), [30, 31]);
        assert_eq!(serving_split(Vllm, 32, 3), [11, 11, 10]);
        assert_eq!(serving_split(Sglang, 32, 3), [10, 11, 11]);
        assert_eq!(serving_split(Vllm, 61, 4), [15, 15, 16, 15]);
        assert_eq!(serving_split(Sglang, 61, 4), [15, 15, 15, 16]);
        assert_eq!(serving_split(Vllm, 80, 6), [13, 13, 13, 14, 14, 13]);
        assert_eq!(serving_split(Sglang, 80, 6), [13, 13, 13, 13, 14, 14]);
        // first / middle / last, the last middle stages with one layer more; and back
        let sl = |first, middle, last, heavier_middles| StageLayers {
            heavier_middles,
            ..StageLayers::new(first, middle, last)
        };
        let cases: [(&[u64], StageLayers); 7] = [
            (&[31, 30], sl(31, 31, 30, 0)),
            (&[11, 11, 10], sl(11, 11, 10, 0)),
            (&[15, 15, 15, 16], sl(15, 15, 16, 0)),
            (&[15, 15, 16, 15], sl(15, 15, 15, 1)),
            (&[13, 13, 13, 14, 14, 13], sl(13, 13, 13, 2)),
            (&[13, 13, 13, 13, 14, 14], sl(13, 13, 14, 1)),
            (&[16, 16, 16, 15], sl(16, 16, 15, 0)),
        ];
        for (counts, split) in cases {
            assert_eq!(as_stage_layers(counts), Some(split), "{counts:?}");
            let pp = counts.len() as u64;
            let back: Vec<u64> = (0..pp)
                .map(|s| split.range(s, pp))
                .map(|(a, b)| b - a)
                .collect();
            assert_eq!(back, counts);
            assert_eq!(split.range(pp - 1, pp).1, counts.iter().sum::<u64>());
        }
        // middle stages that are not one run and one run of one layer more
        assert_eq!(as_stage_layers(&[10, 12, 11, 10]), None);
        assert_eq!(as_stage_layers(&[10, 11, 10, 11, 10]), None);
        // the fullest middle stage: the first of the heavier ones
        assert_eq!(sl(13, 13, 13, 2).first_heavier_middle(6), Some(3));
        assert_eq!(sl(15, 15, 15, 1).first_heavier_middle(4), Some(2));
        assert_eq!(sl(15, 15, 16, 0).first_heavier_middle(4), None);
    }
}
