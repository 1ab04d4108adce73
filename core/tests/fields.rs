//! The form's field table (`calc_core::fields`) against the schema and validation: every
//! bound the table states is the one validation enforces, and a field applies exactly where
//! the engine, runtime and weight format model it.

mod common;
use common::*;

use calc_core::fields::{Context, Kind, NumericInput, Origin, Task, fields, numeric_inputs};
use calc_core::limits;
use serde_json::{Value, json};

/// A valid document in which the form field or hardware size at `path` applies, with
/// `value` set at `path`.
fn doc_for(path: &str, value: Value) -> Value {
    let mut doc = if path.starts_with("inference.") {
        let runtime = match path {
            "inference.gpu_memory_utilization"
            | "inference.max_num_batched_tokens"
            | "inference.max_num_seqs"
            | "inference.max_model_len" => "vllm",
            "inference.mem_fraction_static" | "inference.chunked_prefill_size" => "sglang",
            _ => "hf",
        };
        // the longest context, so that a prompt or kept logits may reach their own bound
        let context = match path {
            "inference.prompt_len" | "inference.logits_to_keep" => limits::MAX_SEQ,
            _ => 4096,
        };
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
               "inference": {"engine": runtime, "weight_format": "int4", "context_len": context},
               "hardware": {"num_gpus": 1}})
    } else {
        let engine = match path {
            "engine.bucket_cap_mb" => json!({"type": "ddp"}),
            "engine.hybrid_shard_group_size" => {
                json!({"type": "fsdp", "fsdp_version": 1, "sharding_strategy": "HYBRID_SHARD"})
            }
            p if p.starts_with("engine.") => json!({"type": "deepspeed", "zero_stage": 3}),
            _ => json!({"type": "megatron"}),
        };
        json!({"model": {"preset": "llama-3.1-8b"}, "training": {"lora": null},
               "engine": engine, "hardware": {"num_gpus": 1}})
    };
    if path.starts_with("training.lora.") {
        doc["training"]["lora"] = json!({});
        doc["engine"] = json!({"type": "ddp"});
    }
    if path == "model.num_parameters" {
        doc["model"] = json!({});
    }
    set_at(&mut doc, path, value);
    doc
}

/// A `config.json` of a family that reads the model key `key`, with `value` at `key`, as
/// the document's `model.hf_config`; and the path the key has there. Other sizes are set so
/// that the key's own range is the only bound at its extremes (65 536 heads for the KV
/// heads, 65 536 experts for the experts per token, the largest image for the patch).
fn model_doc_for(key: &str, value: Value) -> (Value, String) {
    let (mut hf, section) = match key {
        "n_embd" | "n_layer" | "n_head" | "n_positions" | "n_inner" => {
            (json!({"model_type": "gpt2"}), None)
        }
        "num_layers"
        | "padded_vocab_size"
        | "seq_length"
        | "ffn_hidden_size"
        | "kv_channels"
        | "multi_query_group_num" => (
            json!({"model_type": "chatglm", "multi_query_attention": true,
                   "num_attention_heads": 65536, "kv_channels": 128}),
            None,
        ),
        "num_kv_heads" | "num_ln_in_parallel_attn" => (
            json!({"model_type": "falcon", "new_decoder_architecture": true,
                   "num_attention_heads": 65536, "hidden_size": 1048576}),
            None,
        ),
        "q_lora_rank"
        | "kv_lora_rank"
        | "qk_nope_head_dim"
        | "qk_rope_head_dim"
        | "v_head_dim"
        | "num_nextn_predict_layers"
        | "n_routed_experts"
        | "n_shared_experts"
        | "first_k_dense_replace"
        | "moe_layer_freq" => (json!({"model_type": "deepseek_v3"}), None),
        "num_local_experts" => (
            json!({"model_type": "deepseek_v2", "n_routed_experts": null}),
            None,
        ),
        "experts_per_token" => (
            json!({"model_type": "gpt_oss", "num_local_experts": 65536}),
            None,
        ),
        "num_experts"
        | "num_experts_per_tok"
        | "moe_intermediate_size"
        | "shared_expert_intermediate_size"
        | "decoder_sparse_step" => (
            json!({"model_type": "qwen2_moe", "num_experts": 65536}),
            None,
        ),
        "sliding_window" => (json!({"model_type": "mistral"}), None),
        "sliding_window_pattern" => (json!({"model_type": "gemma3_text"}), None),
        "max_window_layers" => (
            json!({"model_type": "qwen2", "use_sliding_window": true, "sliding_window": 4096}),
            None,
        ),
        "depth"
        | "in_channels"
        | "in_chans"
        | "spatial_patch_size"
        | "temporal_patch_size"
        | "spatial_merge_size"
        | "out_hidden_size" => (
            json!({"model_type": "qwen2_5_vl", "vision_config": {}}),
            Some("vision_config"),
        ),
        "image_size" | "patch_size" | "num_channels" => (
            json!({"model_type": "llava", "vision_config": {"image_size": limits::MAX_IMAGE_SIZE}}),
            Some("vision_config"),
        ),
        "num_key_value_heads" => (
            json!({"model_type": "llama", "num_attention_heads": 65536, "head_dim": 128}),
            None,
        ),
        _ => (json!({"model_type": "llama"}), None),
    };
    let at = match section {
        Some(s) => {
            hf[s][key] = value;
            format!("model.hf_config.{s}.{key}")
        }
        None => {
            hf[key] = value;
            format!("model.hf_config.{key}")
        }
    };
    let doc = json!({"model": {"hf_config": hf}, "engine": {"type": "ddp"},
                     "hardware": {"num_gpus": 1}});
    (doc, at)
}

/// The messages of the errors at `path` of the document with `value` at `path` (for a
/// model key: at the key in `model.hf_config`).
fn errors_at(input: &NumericInput, key: &str, value: Value) -> Vec<String> {
    let (doc, at) = match input.origin {
        Origin::ModelKey => model_doc_for(key, value),
        _ => (doc_for(&input.path, value), input.path.clone()),
    };
    errors_of(doc)
        .into_iter()
        .filter(|e| e.field == at)
        .map(|e| e.message)
        .collect()
}

/// A value of the input: a count as an integer, a memory size as bytes with a unit, any
/// other number as is.
fn number(input: &NumericInput, x: f64) -> Value {
    match (input.origin, input.whole) {
        (Origin::Hardware, _) => json!(format!("{}B", x as u64)),
        (_, true) => json!(x as u64),
        (_, false) => json!(x),
    }
}

#[test]
fn every_numeric_input_is_bounded_at_both_ends_and_one_past() {
    // every numeric field of the form is in the table (it has bounds)
    for f in fields() {
        if matches!(f.kind, Kind::Count | Kind::Number) {
            assert!(
                f.bounds.is_some(),
                "{} is numeric and has no bounds",
                f.path
            );
        }
    }
    let mut checked = 0;
    for input in numeric_inputs() {
        let b = input.bounds;
        let step = if input.whole { 1.0 } else { 1e-6 };
        let keys: Vec<&str> = match input.origin {
            Origin::ModelKey => std::iter::once(&input.path["model.".len()..])
                .chain(input.aliases.iter().copied())
                .collect(),
            _ => vec![input.path.as_str()],
        };
        for key in keys {
            // just outside each bound, or at an open bound: an error naming the input
            let below = if b.min_open { b.min } else { b.min - step };
            let above = if b.max_open { b.max } else { b.max + step };
            let below = if below < 0.0 {
                json!(-1)
            } else {
                number(&input, below)
            };
            assert!(
                !errors_at(&input, key, below.clone()).is_empty(),
                "{} ({key}) = {below} passes validation, below the table's bounds {b:?}",
                input.path
            );
            let above = number(&input, above);
            let errors = errors_at(&input, key, above.clone());
            assert!(
                !errors.is_empty(),
                "{} ({key}) = {above} passes validation, above the table's bounds {b:?}",
                input.path
            );
            // inside, at both ends: no error stating a range (other checks of the same
            // input may still apply at the extremes, e.g. a TP size that does not divide
            // the heads; they state no range)
            let lowest = if b.min_open { b.min + step } else { b.min };
            let highest = if b.max_open { b.max - step } else { b.max };
            for inside in [lowest, highest] {
                let v = number(&input, inside);
                let range_errors: Vec<String> = errors_at(&input, key, v.clone())
                    .into_iter()
                    .filter(|m| {
                        m.contains(" from ") || m.contains("at most") || m.contains("above")
                    })
                    .collect();
                assert!(
                    range_errors.is_empty(),
                    "{} ({key}) = {v} is inside the table's bounds {b:?}, but: {range_errors:?}",
                    input.path
                );
            }
            checked += 1;
        }
    }
    // 40 numeric form fields, 2 hardware sizes, the stated size, and 32 model keys read
    // under 51 names
    assert_eq!(checked, 94, "inputs checked");
}

#[test]
fn bounds_md_is_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../BOUNDS.md");
    let want = calc_core::fields::bounds_markdown();
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "BOUNDS.md differs from fields::numeric_inputs(); run GOLDEN_UPDATE=1 cargo test -p calc-core --test fields"
    );
}

#[test]
fn fields_apply_where_the_model_uses_them() {
    let ctx = |doc: Value| Context::of(&doc);
    let applies =
        |path: &str, doc: Value| calc_core::fields::field(path).unwrap().applies(&ctx(doc));
    // engine options follow the engine's option keys
    assert!(applies(
        "engine.zero_stage",
        json!({"engine": {"type": "megatron_deepspeed"}})
    ));
    assert!(!applies(
        "engine.zero_stage",
        json!({"engine": {"type": "fsdp"}})
    ));
    // FSDP's options follow its version: FSDP2 by default
    assert!(!applies(
        "engine.sharding_strategy",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(applies(
        "engine.reshard_after_forward",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(applies(
        "engine.sharding_strategy",
        json!({"engine": {"type": "fsdp", "fsdp_version": 1}})
    ));
    assert!(!applies(
        "engine.reshard_after_forward",
        json!({"engine": {"type": "fsdp", "fsdp_version": 1}})
    ));
    // an engine section that does not read still gives its version's options
    assert!(applies(
        "engine.sharding_strategy",
        json!({"engine": {"type": "fsdp", "fsdp_version": 1, "bogus": 1}})
    ));
    // parallel dimensions follow what the engine models, in training
    assert!(!applies(
        "parallelism.tensor_parallel_size",
        json!({"engine": {"type": "ddp"}})
    ));
    assert!(applies(
        "parallelism.sequence_parallel",
        json!({"engine": {"type": "megatron"}})
    ));
    assert!(applies(
        "parallelism.sequence_parallel",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(!applies(
        "parallelism.sequence_parallel",
        json!({"engine": {"type": "fsdp", "fsdp_version": 1}})
    ));
    assert!(applies(
        "parallelism.data_parallel_replicate_size",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(!applies(
        "parallelism.data_parallel_replicate_size",
        json!({"engine": {"type": "deepspeed"}})
    ));
    assert!(applies(
        "parallelism.expert_tensor_parallel_size",
        json!({"engine": {"type": "megatron"}})
    ));
    assert!(!applies(
        "parallelism.expert_tensor_parallel_size",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(applies(
        "parallelism.tensor_parallel_size",
        json!({"mode": "inference", "engine": {"type": "ddp"}})
    ));
    // runtimes and formats
    let vllm = json!({"mode": "inference", "inference": {"engine": "vllm"}});
    assert!(applies("inference.gpu_memory_utilization", vllm.clone()));
    assert!(!applies("inference.prompt_len", vllm.clone()));
    assert!(!applies("overheads.allocator_reserve_fraction", vllm));
    assert!(applies("overheads.allocator_reserve_fraction", json!({})));
    assert!(applies(
        "inference.group_size",
        json!({"mode": "inference", "inference": {"weight_format": "awq"}})
    ));
    assert!(!applies(
        "inference.group_size",
        json!({"mode": "inference"})
    ));
    // tasks
    assert_eq!(
        Context::of(&json!({"training": {"lora": {}}})).task,
        Task::FineTuning
    );
    assert!(applies(
        "training.lora.rank",
        json!({"training": {"lora": {}}})
    ));
    assert!(!applies("training.lora.rank", json!({})));
    // torch.optim settings only where torch.optim steps
    assert!(applies(
        "training.optimizer_impl",
        json!({"engine": {"type": "fsdp"}})
    ));
    assert!(!applies(
        "training.optimizer_impl",
        json!({"engine": {"type": "deepspeed"}})
    ));
}

#[test]
fn every_field_is_a_key_of_the_schema_and_every_choice_parses() {
    use calc_core::config::{Config, Engine};
    use calc_core::engines::ENGINES;
    for f in fields() {
        // a document with a value at the field's path (each choice, a bound, a sample)
        // parses: the path is a key of the schema and the choices are its values
        // every engine with its defaults, and FSDP1 (whose options differ from FSDP2's)
        let candidates: Vec<Value> = ENGINES
            .iter()
            .map(|k| json!({ "type": k }))
            .chain([json!({"type": "fsdp", "fsdp_version": 1})])
            .collect();
        let engine = f
            .path
            .strip_prefix("engine.")
            .and_then(|k| {
                candidates.iter().find(|doc| {
                    serde_json::from_value::<Engine>((*doc).clone())
                        .is_ok_and(|e| e.option_keys().contains(&k))
                })
            })
            .cloned()
            .unwrap_or(json!({"type": "deepspeed"}));
        let values: Vec<Value> = match f.kind {
            Kind::Choice(c) => c.list().into_iter().map(|c| c.value).collect(),
            Kind::Check => vec![json!(true)],
            Kind::Targets => vec![json!("all-linear")],
            Kind::Count | Kind::Number => {
                vec![f.bounds.map_or(json!(1), |b| json!(b.max.min(1e9) as u64))]
            }
        };
        for v in values {
            let mut doc = json!({"model": {"preset": "gpt2"}, "engine": engine.clone()});
            if f.path != "engine.type" {
                set_at(&mut doc, f.path, v.clone());
            }
            assert!(
                Config::from_value(doc.clone()).is_ok(),
                "{}: {v} does not parse: {doc}",
                f.path
            );
        }
    }
}

#[test]
fn every_unreadable_field_is_reported_at_once() {
    // serde stops at the first bad value; the reader leaves it out and reads again, so a
    // form with two unparseable fields flags both
    let errs = errors_of(json!({"model": {"preset": "llama-3.1-8b"},
        "training": {"micro_batch_size": "lots", "seq_len": "long"},
        "hardware": {"num_gpus": "many"}}));
    let mut fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "hardware.num_gpus",
            "training.micro_batch_size",
            "training.seq_len"
        ],
        "{errs:?}"
    );
}

#[test]
fn a_hidden_field_never_blocks_the_form() {
    use calc_core::fields::{parse_form, without_hidden};
    // TP 4 typed under Megatron, then the engine switched to DDP: the form hides TP
    let doc = json!({"model": {"preset": "llama-3.1-8b"},
        "parallelism": {"tensor_parallel_size": 4, "pipeline_parallel_size": 2},
        "engine": {"type": "ddp"}, "hardware": {"num_gpus": 8}});
    // read as written (a config file), DDP with TP is an error ...
    assert!(
        errors_of(doc.clone())
            .iter()
            .any(|e| e.field.starts_with("parallelism."))
    );
    // ... the form computes without the hidden fields, its task kept
    let c = parse_form(&doc).unwrap();
    assert_eq!(c.parallelism.tensor_parallel_size, 1);
    let shown = without_hidden(&doc);
    assert_eq!(shown["parallelism"], json!({}));
    assert_eq!(shown["mode"], json!("training"));
    // inference mode: the training section's fields are hidden, the task stays inference
    let inf = json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"},
        "training": {"micro_batch_size": 0}, "inference": {"context_len": 2048}});
    assert!(parse_form(&inf).is_ok());
    // with a training engine left in the document (its type is a training field)
    let mut inf2 = inf.clone();
    inf2["engine"] = json!({"type": "deepspeed", "zero_stage": 3});
    assert!(parse_form(&inf2).is_ok(), "{:?}", parse_form(&inf2));
    assert!(without_hidden(&inf2).get("engine").is_none());
    assert_eq!(without_hidden(&inf)["mode"], json!("inference"));
    // a number beyond any count is out of the field's range, not "not a whole number"
    let big = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"seq_len": 1e30}});
    let e = parse_form(&big).unwrap_err();
    assert_eq!(e[0].field, "training.seq_len");
    assert!(
        e[0].message.starts_with("must be a whole number from 1 to"),
        "{e:?}"
    );
}

#[test]
fn every_choice_shows_an_option_when_its_key_is_left_out() {
    // the form shows, for an absent key, the config's value (the export), else the
    // unwritten default, else the "default" option (null): one of them is always listed
    use calc_core::fields::Kind;
    let base = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"lora": {}},
        "inference": {}, "engine": {"type": "deepspeed", "zero_stage": 3}});
    let exported = serde_json::to_value(calc_core::Config::from_value(base).unwrap()).unwrap();
    for f in fields() {
        let Kind::Choice(c) = f.kind else { continue };
        let at = f
            .path
            .split('.')
            .try_fold(&exported, |cur, seg| cur.get(seg))
            .cloned();
        let shown = at
            .filter(|v| !v.is_null())
            .or_else(|| c.unwritten_default())
            .unwrap_or(Value::Null);
        let listed = c.list().iter().any(|o| o.value == shown)
            // engine options of other engines are not in this document
            || f.path.starts_with("engine.");
        assert!(listed, "{}: {shown} is not an option", f.path);
    }
}
