//! The seed document's config format ("schema version 0"), migrated to schema 1.
//!
//! A document without `schema_version` that uses any seed-only key is read as the seed
//! format. The mapping:
//!
//! | seed | schema 1 |
//! |---|---|
//! | `model.name` | `model.name`; if it names a preset (ignoring case and punctuation: `llama2-7b` = `llama-2-7b`), `model.preset` too, and the seed's architecture fields override the preset's |
//! | `model.num_parameters` ("7B") | `model.num_parameters` (checked against the architecture) |
//! | `model.num_layers` | `model.num_hidden_layers` |
//! | `model.hidden_size`, `num_attention_heads`, `num_key_value_heads`, `intermediate_size`, `vocab_size` | same names |
//! | `model.max_seq_len` | `training.seq_len` and `model.max_position_embeddings` |
//! | `training.batch_size` | `training.micro_batch_size` (per GPU) |
//! | `training.dtype`: `fp32` / `bf16` / `fp16` / `fp8` | `training.precision`: `fp32` / `amp_bf16` / `amp_fp16` / `fp8` (the seed's half types mean mixed precision with fp32 optimizer states) |
//! | `training.activation_checkpointing`: 0 / 1-4 | `none` / `full`. Level 1 is the on switch the seed's own example uses with DeepSpeed on a Hugging Face model, which has no selective recomputation (HF `gradient_checkpointing=True`); levels 2-4 add DeepSpeed's `partition_activations` / `cpu_checkpointing`, which only lower memory further and are estimated as full recomputation (an upper bound). Schema 1 writes `"selective"` explicitly |
//! | `training.optimizer`, `gradient_accumulation_steps` | same |
//! | `parallelism.*` | same names |
//! | `engine.type`: `ddp`, `pytorch`, `pytorch_ddp` / `deepspeed` / `fsdp` / `megatron`, `megatron_lm`, `megatron-lm` / `megatron_deepspeed`, `megatron-deepspeed` | `ddp` / `deepspeed` / `fsdp` / `megatron` / `megatron_deepspeed` |
//! | `engine.zero_stage`, `offload_optimizer`, `offload_param` | same |
//! | `hardware.num_gpus`, `gpu_memory_gb` | same |
//!
//! Error paths are reported with the seed's own key names.

use crate::error::{FieldError, short};
use crate::presets;
use serde_json::{Map, Value, json};

/// Keys that exist only in the seed format.
const SEED_MODEL_KEYS: &[&str] = &["num_layers", "max_seq_len"];
const SEED_TRAINING_KEYS: &[&str] = &["batch_size", "dtype"];
const SEED_ENGINE_TYPES: &[&str] = &[
    "pytorch",
    "pytorch_ddp",
    "megatron_lm",
    "megatron-lm",
    "megatron-deepspeed",
];

/// `true` if a document without `schema_version` uses the seed format.
pub fn looks_like_seed(doc: &Map<String, Value>) -> bool {
    let has = |section: &str, keys: &[&str]| {
        doc.get(section)
            .and_then(|s| s.as_object())
            .is_some_and(|m| keys.iter().any(|k| m.contains_key(*k)))
    };
    let int_checkpointing = doc
        .get("training")
        .and_then(|t| t.get("activation_checkpointing"))
        .is_some_and(|v| v.is_number());
    let seed_engine = doc
        .get("engine")
        .and_then(|e| e.get("type"))
        .and_then(|t| t.as_str())
        .is_some_and(|t| SEED_ENGINE_TYPES.contains(&t));
    has("model", SEED_MODEL_KEYS)
        || has("training", SEED_TRAINING_KEYS)
        || int_checkpointing
        || seed_engine
}

/// (schema-1 path, seed path) pairs used to report errors in the seed's names.
const RENAMES: &[(&str, &str)] = &[
    ("model.num_hidden_layers", "model.num_layers"),
    ("training.micro_batch_size", "training.batch_size"),
    ("training.precision", "training.dtype"),
    ("training.seq_len", "model.max_seq_len"),
];

/// The seed's name for a schema-1 field path (errors on a migrated document are reported
/// in the seed's key names).
pub fn seed_path(field: &str) -> Option<&'static str> {
    RENAMES
        .iter()
        .find(|(new, _)| *new == field)
        .map(|(_, old)| *old)
}

/// Migrates a seed-format document to a schema-1 document (a pure transform; the result is
/// then read like any schema-1 document).
/// Errors: unknown keys or values (with the seed's key names), as [`FieldError`]s.
pub fn migrate(doc: &Map<String, Value>) -> Result<Value, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut out = Map::new();
    // the version this migration produces
    out.insert("schema_version".into(), json!(1));
    let section = |name: &str| {
        doc.get(name)
            .and_then(|v| v.as_object())
            .cloned()
            .unwrap_or_default()
    };
    for key in doc.keys() {
        if ![
            "model",
            "training",
            "parallelism",
            "engine",
            "hardware",
            "schema_version",
        ]
        .contains(&key.as_str())
        {
            errors.push(FieldError::new(
                key.clone(),
                short(&doc[key]),
                format!("unknown key `{key}` in a seed-format config"),
            ));
        }
    }

    // model
    let m = section("model");
    let mut model = Map::new();
    let mut training = section("training");
    for (k, v) in &m {
        match k.as_str() {
            "name" => {
                if let Some(p) = v.as_str().and_then(presets::model_preset) {
                    model.insert("preset".into(), json!(p.id));
                }
                model.insert("name".into(), v.clone());
            }
            "num_layers" => {
                model.insert("num_hidden_layers".into(), v.clone());
            }
            "max_seq_len" => {
                model.insert("max_position_embeddings".into(), v.clone());
                training.entry("seq_len".to_string()).or_insert(v.clone());
            }
            _ => {
                model.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("model".into(), Value::Object(model));

    // training
    let mut t = Map::new();
    for (k, v) in training {
        match k.as_str() {
            "batch_size" => {
                t.insert("micro_batch_size".into(), v);
            }
            "dtype" => {
                let p = match v.as_str() {
                    Some("fp32" | "float32") => "fp32",
                    Some("bf16" | "bfloat16") => "amp_bf16",
                    Some("fp16" | "float16") => "amp_fp16",
                    Some("fp8") => "fp8",
                    _ => {
                        errors.push(FieldError::new(
                            "training.dtype",
                            short(&v),
                            "expected \"fp32\", \"bf16\", \"fp16\" or \"fp8\"",
                        ));
                        continue;
                    }
                };
                t.insert("precision".into(), json!(p));
            }
            "activation_checkpointing" => {
                let r = match &v {
                    Value::Number(n) => match n.as_u64() {
                        Some(0) => json!("none"),
                        Some(1..=4) => json!("full"),
                        _ => {
                            errors.push(FieldError::new(
                                "training.activation_checkpointing",
                                short(&v),
                                "expected a level from 0 to 4",
                            ));
                            continue;
                        }
                    },
                    other => other.clone(),
                };
                t.insert("activation_checkpointing".into(), r);
            }
            _ => {
                t.insert(k, v);
            }
        }
    }
    out.insert("training".into(), Value::Object(t));

    // parallelism and hardware keep their names
    for s in ["parallelism", "hardware"] {
        if let Some(v) = doc.get(s) {
            out.insert(s.into(), v.clone());
        }
    }

    // engine
    if let Some(Value::Object(e)) = doc.get("engine") {
        let mut e = e.clone();
        if let Some(Value::String(t)) = e.get("type") {
            let mapped = match t.as_str() {
                "ddp" | "pytorch" | "pytorch_ddp" => "ddp",
                "megatron" | "megatron_lm" | "megatron-lm" => "megatron",
                "megatron_deepspeed" | "megatron-deepspeed" => "megatron_deepspeed",
                other => other,
            }
            .to_string();
            e.insert("type".into(), json!(mapped));
        }
        out.insert("engine".into(), Value::Object(e));
    } else if let Some(v) = doc.get("engine") {
        out.insert("engine".into(), v.clone());
    }

    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Engine, Precision, Recompute};

    #[test]
    fn seed_example_migrates() {
        let text = presets::example_configs()
            .iter()
            .find(|(f, _)| *f == "llama2_7b_deepspeed.json")
            .unwrap()
            .1;
        let c = Config::from_json_str(text).unwrap();
        assert_eq!(c.schema_version, crate::config::SCHEMA_VERSION);
        assert_eq!(c.model.0["preset"], "llama-2-7b");
        assert_eq!(c.model.0["num_hidden_layers"], 32);
        assert_eq!(c.training.micro_batch_size, 4);
        assert_eq!(c.training.seq_len, 4096);
        assert_eq!(c.training.precision, Precision::AmpBf16);
        assert_eq!(c.training.activation_checkpointing, Recompute::Full);
        match &c.engine {
            Engine::Deepspeed(z) => {
                assert_eq!(z.zero_stage, 3);
                assert_eq!(z.offload_optimizer, crate::config::Offload::Cpu);
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(c.hardware.gpu_memory_gb.unwrap().0, 80_000_000_000);
    }

    #[test]
    fn seed_errors_use_seed_names() {
        let e = Config::from_json_str(r#"{"training": {"batch_size": -1}}"#).unwrap_err();
        assert_eq!(e[0].field, "training.batch_size");
        let e = Config::from_json_str(r#"{"training": {"dtype": "int3"}}"#).unwrap_err();
        assert_eq!(e[0].field, "training.dtype");
    }
}
