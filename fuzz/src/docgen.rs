//! Structured random config documents built from the form's field table
//! ([`calc_core::fields`]): the generator of the `estimate` fuzz target, also used by the
//! property tests in `core/tests/properties.rs` (included there with `#[path]`), so that
//! both explore the same space of documents.

use arbitrary::{Arbitrary, Unstructured};
use calc_core::fields::{Choices, Kind};
use serde_json::{Map, Value, json};

/// The config document the `hf_config` target estimates a pasted `config.json` in (also
/// timed by `core/examples/corpus_timing.rs`): the model as `model.hf_config`, 8 H100s.
pub fn hf_config_document(hf: Value) -> Value {
    json!({"model": {"hf_config": hf}, "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}})
}

/// Sets `v` at a dotted path of `doc`, creating objects on the way.
pub fn set_path(doc: &mut Map<String, Value>, path: &str, v: Value) {
    let mut parts = path.split('.').peekable();
    let mut cur = doc;
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            cur.insert(p.to_string(), v);
            return;
        }
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        cur = next.as_object_mut().expect("just made an object");
    }
}

/// A number for a field: in a hostile document, one in four is at or past its bounds or
/// hostile (huge, negative, fractional, a string with a suffix); otherwise a typical value
/// in its range (a small power of two for counts, sequence lengths from 128 to 8192 tokens,
/// parallel sizes 1-4).
fn number(
    u: &mut Unstructured,
    field: &calc_core::fields::Field,
    hostile: bool,
) -> arbitrary::Result<Value> {
    let (min, max) = field.bounds.map_or((0.0, 1e6), |b| (b.min, b.max));
    if hostile && u.ratio(1, 4)? {
        return Ok(match u.int_in_range(0..=7u8)? {
            0 => json!(min),
            1 => json!(max),
            2 => json!(max * 2.0 + 1.0),
            3 => json!(-1),
            4 => json!(u.arbitrary::<f64>()?),
            5 => json!(u.arbitrary::<u64>()?),
            6 => json!(format!("{}k", u.int_in_range(1..=512u32)?)),
            _ => json!(1e30),
        });
    }
    Ok(if matches!(field.kind, Kind::Number) {
        let t: f64 = u.int_in_range(1..=100u32)? as f64 / 100.0;
        json!(min + (max.min(1e6) - min) * t)
    } else {
        let tokens = [
            "seq_len",
            "context_len",
            "max_model_len",
            "prompt_len",
            "prefill_chunk",
        ]
        .iter()
        .any(|k| field.path.ends_with(k))
            || field.path.contains("batched_tokens")
            || field.path.contains("chunked_prefill");
        let k = if tokens {
            u.int_in_range(7..=13u32)?
        } else if field.path.starts_with("parallelism.") {
            u.int_in_range(0..=2u32)?
        } else {
            u.int_in_range(0..=6u32)?
        };
        json!((1u64 << k).clamp(min.max(1.0) as u64, max.max(1.0) as u64))
    })
}

/// Fields valid only together with others (set in one document in eight, or when hostile).
const RARELY_VALID: &[&str] = &[
    "parallelism.data_parallel_size",
    "parallelism.data_parallel_replicate_size",
    "parallelism.virtual_pipeline_parallel_size",
    "parallelism.first_pipeline_stage_layers",
    "parallelism.last_pipeline_stage_layers",
    "parallelism.pipeline_schedule",
    "parallelism.expert_parallel_size",
    "parallelism.expert_tensor_parallel_size",
    "engine.hybrid_shard_group_size",
    "training.activation_offloading",
    "training.lora.target_modules",
];

/// A value from a choice field's options (`None` when it has none).
fn choice(u: &mut Unstructured, c: Choices) -> arbitrary::Result<Option<Value>> {
    let list = c.list();
    if list.is_empty() {
        return Ok(None);
    }
    Ok(Some(u.choose(&list)?.value.clone()))
}

/// A config document built from the form's field table ([`calc_core::fields`]): a model
/// preset, a GPU preset, a task (training, LoRA fine-tuning, inference), a training engine
/// or an inference runtime, then a random subset of the fields that apply to that choice
/// (calc-core's rule, [`calc_core::fields::Field::applies`]) with values from their
/// options and bounds. One document in eight is hostile: values at and past the bounds,
/// hostile numbers, and fields that do not apply. So most documents are valid and the
/// estimator, not only the parser, is exercised.
#[derive(Debug)]
pub struct ArbitraryDoc(pub Value);

impl<'a> Arbitrary<'a> for ArbitraryDoc {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut doc = Map::new();
        let models = calc_core::presets::model_preset_ids();
        let gpus = calc_core::presets::gpu_preset_ids();
        set_path(&mut doc, "model.preset", json!(u.choose(&models)?));
        set_path(&mut doc, "hardware.gpu", json!(u.choose(&gpus)?));
        let num_gpus = 1u64 << u.int_in_range(0..=10u32)?;
        set_path(&mut doc, "hardware.num_gpus", json!(num_gpus));
        let hostile = u.ratio(1, 8)?;
        // the choices that decide which fields apply, first
        let mut set = vec!["model.preset", "hardware.gpu", "hardware.num_gpus"];
        let task = u.int_in_range(0..=2u8)?;
        match task {
            0 => set_path(&mut doc, "mode", json!("inference")),
            1 => set_path(&mut doc, "training.lora", json!({})),
            _ => {}
        }
        let deciding: &[&str] = if task == 0 {
            &["inference.engine", "inference.weight_format"]
        } else {
            &["engine.type", "engine.fsdp_version"]
        };
        for &path in deciding {
            if path == "engine.fsdp_version"
                && doc.get("engine").and_then(|e| e.get("type")) != Some(&json!("fsdp"))
            {
                continue;
            }
            let field = calc_core::fields::field(path).expect("a field of the table");
            if let Kind::Choice(c) = field.kind
                && let Some(v) = choice(u, c)?
            {
                // LoRA is modelled under the engines PEFT runs on
                if task == 1
                    && path == "engine.type"
                    && !hostile
                    && !["ddp", "deepspeed", "fsdp"].contains(&v.as_str().unwrap_or(""))
                {
                    continue;
                }
                set_path(&mut doc, path, v);
                set.push(path);
            }
        }
        let ctx = calc_core::fields::Context::of(&Value::Object(doc.clone()));
        for field in calc_core::fields::fields() {
            // settings that are valid only with others (an uneven pipeline split, virtual
            // stages, a data parallel size that must match the GPU count, ...): seldom
            let seldom = RARELY_VALID.contains(&field.path);
            if set.contains(&field.path)
                || !(field.applies(&ctx) || hostile && u.ratio(1, 8)?)
                || !u.ratio(1, 3)?
                || seldom && !(hostile || u.ratio(1, 8)?)
            {
                continue;
            }
            let v = match field.kind {
                Kind::Choice(c) => match choice(u, c)? {
                    Some(v) => v,
                    None => continue,
                },
                Kind::Check => json!(u.arbitrary::<bool>()?),
                Kind::Count | Kind::Number => number(u, field, hostile)?,
                Kind::Targets => json!("all-linear"),
            };
            set_path(&mut doc, field.path, v);
        }
        if !hostile {
            // the GPU count a layout of the chosen sizes needs: a multiple of its model
            // parallel sizes
            let size = |k: &str| {
                doc.get("parallelism")
                    .and_then(|p| p.get(k))
                    .and_then(Value::as_u64)
                    .unwrap_or(1)
            };
            let model_parallel = size("tensor_parallel_size")
                * size("pipeline_parallel_size")
                * size("context_parallel_size");
            let dp = 1u64 << u.int_in_range(0..=4u32)?;
            set_path(&mut doc, "hardware.num_gpus", json!(model_parallel * dp));
        }
        // one document in four overrides some of the preset's numeric config.json keys
        // (`limits::MODEL_KEYS`): typical sizes, or, when hostile, a bound, one past it, an
        // alias of another family or any number. Last, and off when the input is used up,
        // so that the documents of shorter inputs (the committed regressions) stay the same.
        if !u.ratio(3, 4)? {
            for _ in 0..u.int_in_range(1..=3u8)? {
                let row = u.choose(calc_core::limits::MODEL_KEYS)?;
                let key = if hostile {
                    *u.choose(row.keys)?
                } else {
                    row.keys[0]
                };
                let v = if hostile {
                    match u.int_in_range(0..=3u8)? {
                        0 => row.min,
                        1 => row.max,
                        2 => row.max.saturating_add(1),
                        _ => u.arbitrary::<u64>()?,
                    }
                } else {
                    (1u64 << u.int_in_range(0..=14u32)?).clamp(row.min.max(1), row.max)
                };
                set_path(&mut doc, &format!("model.{key}"), json!(v));
            }
        }
        Ok(ArbitraryDoc(Value::Object(doc)))
    }
}
