//! Configs for other tools, derived from a [`Config`]: the DeepSpeed `ds_config.json`
//! fragment of a `deepspeed` / `megatron_deepspeed` run, and the per-GPU-preset fit table
//! ("which GPUs fit"). Pure functions; the web app and the CLI only display them.

use crate::config::{Offload, Precision};
use crate::error::FieldError;
use crate::estimate;
use crate::resolve::resolve;
use crate::{Config, presets};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

fn offload(o: Offload) -> Option<Value> {
    match o {
        Offload::None => None,
        Offload::Cpu => Some(json!({"device": "cpu", "pin_memory": true})),
        Offload::Nvme => Some(json!({"device": "nvme", "nvme_path": "/local_nvme"})),
    }
}

/// `zero_optimization`'s stage and offload devices (offloads only when not `none`).
fn zero_stage(zero: &mut Map<String, Value>, stage: u8, optimizer: Offload, param: Offload) {
    zero.insert("stage".into(), json!(stage));
    for (key, o) in [("offload_optimizer", optimizer), ("offload_param", param)] {
        if let Some(o) = offload(o) {
            zero.insert(key.into(), o);
        }
    }
}

/// The `ds_config.json` of the configuration, with DeepSpeed's own key names
/// (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py):
/// `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`, `train_batch_size`
/// (= micro-batch x accumulation x data-parallel size), `bf16` / `fp16`, `zero_optimization`
/// (stage, offload devices, buckets, ZeRO-3 prefetch / live-parameter / persistence / sub-group
/// sizes), `optimizer.type` for the optimizers DeepSpeed names, and
/// `activation_checkpointing` when layers are recomputed. `nvme_path` is a placeholder to edit.
///
/// Errors: field `mode` when the configuration is an inference one (a `ds_config.json`
/// configures training); field `engine.type` when the engine is not `deepspeed` or
/// `megatron_deepspeed`; any validation error of the config itself.
pub fn deepspeed_config(config: &Config) -> Result<Value, Vec<FieldError>> {
    let r = resolve(config)?;
    if config.effective_mode() == crate::config::Mode::Inference {
        return Err(vec![FieldError::new(
            "mode",
            "inference",
            "a ds_config.json configures DeepSpeed training; switch the mode to training",
        )]);
    }
    let t = &config.training;
    let Some(z) = config.engine.zero_options() else {
        return Err(vec![FieldError::new(
            "engine.type",
            config.engine.kind(),
            "a ds_config.json exists only for the deepspeed and megatron_deepspeed engines",
        )]);
    };
    let mut zero = Map::new();
    zero_stage(
        &mut zero,
        z.zero_stage,
        z.offload_optimizer,
        z.offload_param,
    );
    zero.insert("reduce_bucket_size".into(), json!(z.reduce_bucket_size));
    zero.insert("overlap_comm".into(), json!(z.overlap_comm()));
    if z.zero_stage == 3 {
        zero.insert(
            "stage3_prefetch_bucket_size".into(),
            json!(z.stage3_prefetch_bucket_size),
        );
        zero.insert(
            "stage3_max_live_parameters".into(),
            json!(z.stage3_max_live_parameters),
        );
        zero.insert(
            "stage3_param_persistence_threshold".into(),
            json!(z.stage3_param_persistence_threshold),
        );
        zero.insert(
            "stage3_max_reuse_distance".into(),
            json!(z.stage3_max_reuse_distance),
        );
        zero.insert("sub_group_size".into(), json!(z.sub_group_size));
    }
    let dp = r.layout.data_parallel_size;
    let mut ds = Map::new();
    ds.insert(
        "train_micro_batch_size_per_gpu".into(),
        json!(t.micro_batch_size),
    );
    ds.insert(
        "gradient_accumulation_steps".into(),
        json!(t.gradient_accumulation_steps),
    );
    ds.insert(
        "train_batch_size".into(),
        json!(t.micro_batch_size * t.gradient_accumulation_steps * dp),
    );
    match t.precision {
        Precision::AmpBf16 | Precision::Bf16 | Precision::Fp8 => {
            ds.insert("bf16".into(), json!({"enabled": true}));
        }
        Precision::AmpFp16 | Precision::Fp16 => {
            ds.insert(
                "fp16".into(),
                json!({"enabled": true, "loss_scale": 0, "initial_scale_power": 16}),
            );
        }
        Precision::Fp32 => {}
    }
    ds.insert("zero_optimization".into(), Value::Object(zero));
    if let Some(o) = t.optimizer.info().deepspeed_name {
        ds.insert("optimizer".into(), json!({"type": o}));
    }
    if t.activation_checkpointing != crate::config::Recompute::None {
        ds.insert(
            "activation_checkpointing".into(),
            json!({"partition_activations": false, "contiguous_memory_optimization": false}),
        );
    }
    Ok(Value::Object(ds))
}

/// One GPU preset in the "which GPUs fit" comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuFit {
    /// The preset id (`h100-80gb`).
    pub gpu: String,
    /// Display name.
    pub name: String,
    /// The estimate's `total_bytes` (peak allocated plus overheads) on that GPU, bytes.
    pub total_bytes: u64,
    /// The GPU's usable capacity, bytes.
    pub gpu_memory_bytes: u64,
    /// The estimate's verdict ([`crate::Estimate::fits`]): `total_bytes <= gpu_memory_bytes`,
    /// and for a serving runtime the KV cache holds one request of `max_model_len` tokens.
    pub fits: bool,
}

/// The configuration estimated on every GPU preset (same GPU count and layout), largest
/// capacity last. Presets on which the config does not validate are left out.
///
/// Errors: the config itself does not estimate (its field errors).
pub fn gpu_fits(config: &Config) -> Result<Vec<GpuFit>, Vec<FieldError>> {
    estimate(config)?;
    let mut out: Vec<GpuFit> = presets::gpu_presets()
        .iter()
        .filter_map(|g| {
            let mut c = config.clone();
            c.hardware.gpu = Some(g.id.clone());
            c.hardware.gpu_memory_gb = None;
            let e = estimate(&c).ok()?;
            Some(GpuFit {
                gpu: g.id.clone(),
                name: g.name.clone(),
                total_bytes: e.total_bytes,
                gpu_memory_bytes: e.gpu_memory_bytes,
                fits: e.fits,
            })
        })
        .collect();
    out.sort_by_key(|f| (f.gpu_memory_bytes, f.gpu.clone()));
    Ok(out)
}
