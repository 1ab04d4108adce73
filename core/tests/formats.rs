//! Other tools' files (`calc_core::formats`): every format's export imports back to the
//! same estimate, to the byte, for every engine it can express; real files published by the
//! frameworks (tests/fixtures/formats/, each with its source) import with the mapping
//! written out here.
#![cfg(feature = "formats")]

use calc_core::formats::{Format, base_for, export, import, recognise};
use calc_core::{Config, estimate};
use serde_json::{Value, json};

fn cfg(v: Value) -> Config {
    Config::from_value(v).unwrap()
}

/// The plans each format can express: (format, config).
fn plans() -> Vec<(Format, Config)> {
    let llama8 = json!({"preset": "llama-3.1-8b"});
    let train = |engine: Value, extra: Value| {
        let mut v = json!({
            "model": llama8,
            "training": {"micro_batch_size": 2, "seq_len": 4096, "gradient_accumulation_steps": 4,
                         "precision": "amp_bf16", "activation_checkpointing": "full", "attention": "flash"},
            "engine": engine,
            "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}
        });
        merge(&mut v, extra);
        cfg(v)
    };
    let mut out = Vec::new();
    for stage in 0..=3u8 {
        out.push((
            Format::Deepspeed,
            train(json!({"type": "deepspeed", "zero_stage": stage}), json!({})),
        ));
    }
    out.push((Format::Deepspeed, train(json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu", "stage3_max_live_parameters": 300000000}), json!({"training": {"precision": "amp_fp16"}}))));
    out.push((
        Format::Deepspeed,
        train(
            json!({"type": "megatron_deepspeed", "zero_stage": 1}),
            json!({"parallelism": {"tensor_parallel_size": 2}, "training": {"optimizer": "adam"}}),
        ),
    ));
    for engine in [
        json!({"type": "ddp"}),
        json!({"type": "fsdp", "fsdp_version": 2, "reshard_after_forward": false}),
        json!({"type": "fsdp", "fsdp_version": 1, "sharding_strategy": "SHARD_GRAD_OP", "cpu_offload": true}),
        json!({"type": "deepspeed", "zero_stage": 2}),
    ] {
        out.push((
            Format::HfTrainer,
            train(
                engine.clone(),
                json!({"training": {"optimizer_impl": "fused"}}),
            ),
        ));
        out.push((Format::Accelerate, train(engine.clone(), json!({}))));
    }
    out.push((Format::HfTrainer, train(json!({"type": "ddp", "bucket_cap_mb": 50.0}), json!({"training": {"optimizer": "paged_adamw_8bit", "lora": {"rank": 16, "base_weight_format": "nf4"}}}))));
    out.push((
        Format::Accelerate,
        train(
            json!({"type": "deepspeed", "zero_stage": 3, "offload_optimizer": "cpu"}),
            json!({"training": {"precision": "fp8"}, "hardware": {"num_gpus": 16}}),
        ),
    ));
    // torchtune: pure bf16, single device and FSDP2, LoRA and QLoRA
    let tt = |gpus: u64, engine: Value, extra: Value| {
        let mut v = json!({
            "model": llama8,
            "training": {"micro_batch_size": 2, "seq_len": 2048, "gradient_accumulation_steps": 8, "precision": "bf16",
                         "activation_checkpointing": "full", "loss": "chunked", "optimizer_impl": "fused"},
            "engine": engine, "hardware": {"num_gpus": gpus, "gpu": "a100-80gb"}
        });
        merge(&mut v, extra);
        cfg(v)
    };
    out.push((Format::Torchtune, tt(1, json!({"type": "ddp"}), json!({"training": {"lora": {"rank": 8, "alpha": 16, "adapters_fp32": false, "target_modules": ["q_proj", "v_proj", "o_proj"]}}}))));
    out.push((Format::Torchtune, tt(1, json!({"type": "ddp"}), json!({"training": {"optimizer": "paged_adamw_8bit", "optimizer_impl": "foreach", "lora": {"rank": 64, "alpha": 128, "adapters_fp32": false, "base_weight_format": "nf4", "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}}}))));
    out.push((Format::Torchtune, tt(8, json!({"type": "fsdp", "fsdp_version": 2, "cpu_offload": true}), json!({"training": {"optimizer_in_backward": true, "activation_offloading": true, "gradient_accumulation_steps": 1}}))));
    // Axolotl: LoRA / QLoRA / full with FSDP
    let ax = |engine: Value, extra: Value| {
        let mut v = json!({
            "model": {"preset": "mistral-7b-v0.1"},
            "training": {"micro_batch_size": 2, "seq_len": 4096, "gradient_accumulation_steps": 4, "precision": "bf16",
                         "activation_checkpointing": "full", "attention": "flash", "optimizer": "adamw_8bit"},
            "engine": engine, "hardware": {"num_gpus": 1, "gpu": "a100-80gb"}
        });
        merge(&mut v, extra);
        cfg(v)
    };
    out.push((Format::Axolotl, ax(json!({"type": "ddp"}), json!({"training": {"lora": {"rank": 32, "alpha": 16, "dropout": 0.05, "base_weight_format": "nf4", "target_modules": "all-linear"}}}))));
    out.push((
        Format::Axolotl,
        ax(
            json!({"type": "ddp"}),
            json!({"training": {"lora": {"rank": 16, "target_modules": ["q_proj", "v_proj"]}}}),
        ),
    ));
    out.push((Format::Axolotl, ax(json!({"type": "fsdp", "fsdp_version": 2}), json!({"training": {"optimizer": "adamw", "optimizer_impl": "fused"}, "hardware": {"num_gpus": 8}}))));
    // torchtitan: FSDP2 with TP, PP, CP
    let tt2 = |par: Value, extra: Value| {
        let mut v = json!({
            "model": {"preset": "llama-3.1-70b"},
            "training": {"micro_batch_size": 1, "seq_len": 8192, "gradient_accumulation_steps": 1, "precision": "amp_bf16",
                         "activation_checkpointing": "full"},
            "parallelism": par, "engine": {"type": "fsdp"}, "hardware": {"num_gpus": 64, "gpu": "h100-80gb"}
        });
        merge(&mut v, extra);
        cfg(v)
    };
    out.push((
        Format::Torchtitan,
        tt2(
            json!({"tensor_parallel_size": 8, "sequence_parallel": true}),
            json!({"training": {"precision": "fp8", "compile": true}}),
        ),
    ));
    // float8 with fp32 parameters gathered (mixed_precision_param = "float32"; bf16 is the
    // default under fp8)
    out.push((
        Format::Torchtitan,
        tt2(
            json!({"tensor_parallel_size": 8, "sequence_parallel": true}),
            json!({"training": {"precision": "fp8"}, "engine": {"param_dtype": "fp32"}}),
        ),
    ));
    // FSDP2's float8 all-gather (written as [float8] enable_fsdp_float8_all_gather)
    out.push((
        Format::Torchtitan,
        tt2(
            json!({"tensor_parallel_size": 8, "sequence_parallel": true}),
            json!({"training": {"precision": "fp8"}, "engine": {"float8_all_gather": true}}),
        ),
    ));
    out.push((Format::Torchtitan, tt2(json!({"tensor_parallel_size": 8, "sequence_parallel": true, "pipeline_parallel_size": 4, "pipeline_schedule": "1f1b"}), json!({"training": {"gradient_accumulation_steps": 8}}))));
    // an uneven split with virtual stages: written as module_fqns_per_model_part
    out.push((Format::Torchtitan, tt2(json!({"tensor_parallel_size": 8, "sequence_parallel": true, "pipeline_parallel_size": 8, "virtual_pipeline_parallel_size": 2, "first_pipeline_stage_layers": 16, "last_pipeline_stage_layers": 14}), json!({"model": {"preset": "llama-3.1-405b"}, "training": {"gradient_accumulation_steps": 32}, "hardware": {"num_gpus": 512}}))));
    out.push((Format::Torchtitan, tt2(json!({"context_parallel_size": 2}), json!({"model": {"preset": "llama-3.1-8b"}, "training": {"micro_batch_size": 2, "gradient_accumulation_steps": 2, "activation_checkpointing": "selective_op", "seq_len": 32768}, "hardware": {"num_gpus": 8}}))));
    // Megatron-LM
    let mg = |par: Value, extra: Value| {
        let mut v = json!({
            "model": {"preset": "llama-3.1-70b"},
            "training": {"micro_batch_size": 1, "seq_len": 8192, "gradient_accumulation_steps": 64, "precision": "fp8"},
            "parallelism": par, "engine": {"type": "megatron", "distributed_optimizer": true},
            "hardware": {"num_gpus": 64, "gpu": "h100-80gb"}
        });
        merge(&mut v, extra);
        cfg(v)
    };
    out.push((Format::Megatron, mg(json!({"tensor_parallel_size": 4, "pipeline_parallel_size": 8, "sequence_parallel": true, "virtual_pipeline_parallel_size": 5}), json!({}))));
    out.push((Format::Megatron, mg(json!({"tensor_parallel_size": 8, "context_parallel_size": 2, "sequence_parallel": true}), json!({"training": {"precision": "amp_bf16", "activation_checkpointing": "selective", "gradient_accumulation_steps": 32}, "engine": {"distributed_optimizer": false}}))));
    out.push((Format::Megatron, mg(json!({"tensor_parallel_size": 8, "pipeline_parallel_size": 8, "expert_parallel_size": 8, "first_pipeline_stage_layers": 7, "last_pipeline_stage_layers": 6}), json!({"model": {"preset": "deepseek-v3"}, "training": {"activation_checkpointing": "full", "precision": "amp_bf16", "gradient_accumulation_steps": 16}, "hardware": {"num_gpus": 512}}))));
    // serving
    let serve = |engine: &str, inf: Value, par: Value| {
        let mut i = json!({"engine": engine});
        merge(&mut i, inf);
        cfg(
            json!({"mode": "inference", "model": {"preset": "llama-3.1-70b"}, "inference": i, "parallelism": par, "hardware": {"gpu": "h100-80gb"}}),
        )
    };
    out.push((Format::Vllm, serve("vllm", json!({"weight_format": "fp8", "max_model_len": 16384, "gpu_memory_utilization": 0.92, "max_num_seqs": 256}), json!({"tensor_parallel_size": 2}))));
    out.push((
        Format::Vllm,
        serve(
            "vllm",
            json!({"kv_cache_dtype": "fp8", "max_model_len": 131072}),
            json!({"tensor_parallel_size": 4, "pipeline_parallel_size": 2}),
        ),
    ));
    out.push((
        Format::Sglang,
        serve(
            "sglang",
            json!({"max_model_len": 32768, "mem_fraction_static": 0.85}),
            json!({"tensor_parallel_size": 4}),
        ),
    ));
    out.push((
        Format::Sglang,
        serve(
            "sglang",
            json!({"weight_format": "awq", "chunked_prefill_size": 4096}),
            json!({"tensor_parallel_size": 2}),
        ),
    ));
    out
}

fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

#[test]
fn every_format_imports_its_export_to_the_same_estimate() {
    let plans = plans();
    for f in Format::ALL {
        assert!(plans.iter().any(|(g, _)| *g == f), "no plan for {f:?}");
    }
    let mut failed = Vec::new();
    for (i, (format, plan)) in plans.into_iter().enumerate() {
        let text = match export(&plan, format) {
            Ok(t) => t,
            Err(e) => {
                failed.push(format!("plan {i} {format:?}: {e:?}"));
                continue;
            }
        };
        assert_eq!(recognise(&text), Ok(format), "{text}");
        let back = import(&text, &base_for(&plan, format), None)
            .unwrap_or_else(|e| panic!("{format:?}: {e:?}\n{text}"));
        assert_eq!(back.format, format);
        let (a, b) = (estimate(&plan).unwrap(), estimate(&back.config).unwrap());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap(),
            "{format:?}\n{text}"
        );
        assert!(!back.read.is_empty());
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../tests/fixtures/formats/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Imports a fixture over `base`; checks its format, that every `(our key, value)` pair was
/// set, and that the config estimates.
fn check(
    name: &str,
    base: Value,
    format: Format,
    expect: &[(&str, Value)],
) -> calc_core::formats::Imported {
    let im = import(&fixture(name), &cfg(base), None).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    assert_eq!(im.format, format, "{name}");
    let doc = serde_json::to_value(&im.config).unwrap();
    for (path, v) in expect {
        let got = path.split('.').try_fold(&doc, |d, p| d.get(p));
        assert_eq!(got, Some(v), "{name}: {path}");
    }
    estimate(&im.config).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    im
}

fn ignored(im: &calc_core::formats::Imported, key: &str) -> bool {
    im.ignored.iter().any(|i| i.key == key)
}

/// `key` listed as not read, for a reason that says `why`.
fn ignored_because(im: &calc_core::formats::Imported, key: &str, why: &str) {
    assert!(
        im.ignored
            .iter()
            .any(|i| i.key == key && i.reason.contains(why)),
        "{key}: {:?}",
        im.ignored
    );
}

#[test]
fn deepspeed_files_as_published() {
    // accelerate's ZeRO-2 template: every batch size "auto" (the base's: transformers fills
    // them from TrainingArguments); reduce_bucket_size "auto" = hidden^2 = 4096^2 for
    // Llama-3.1-8B (transformers/integrations/deepspeed.py trainer_config_finalize)
    let base = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"micro_batch_size": 4}, "hardware": {"num_gpus": 8}});
    let im = check(
        "accelerate_zero_stage2_config.json",
        base.clone(),
        Format::Deepspeed,
        &[
            ("engine.type", json!("deepspeed")),
            ("engine.zero_stage", json!(2)),
            ("engine.reduce_bucket_size", json!(16_777_216)),
            ("engine.overlap_comm", json!(true)),
            ("training.micro_batch_size", json!(4)),
            ("training.gradient_accumulation_steps", json!(1)),
            ("training.precision", json!("amp_fp16")),
            ("training.optimizer", json!("adamw")),
            ("hardware.num_gpus", json!(8)),
        ],
    );
    assert!(
        ignored(&im, "train_batch_size")
            && ignored(&im, "scheduler.type")
            && ignored(&im, "zero_optimization.allgather_bucket_size")
    );
    // ZeRO-3 with CPU offload: prefetch "auto" = int(0.9 x 4096^2) = 15099494, persistence
    // "auto" = 10 x 4096 = 40960
    check(
        "accelerate_zero_stage3_offload_config.json",
        base,
        Format::Deepspeed,
        &[
            ("engine.zero_stage", json!(3)),
            ("engine.offload_optimizer", json!("cpu")),
            ("engine.offload_param", json!("cpu")),
            ("engine.reduce_bucket_size", json!(16_777_216)),
            ("engine.stage3_prefetch_bucket_size", json!(15_099_494)),
            ("engine.stage3_param_persistence_threshold", json!(40_960)),
            ("engine.sub_group_size", json!(1_000_000_000)),
            ("engine.stage3_max_live_parameters", json!(1_000_000_000)),
        ],
    );
    // transformers' test config writes 0 for the reduce and prefetch buckets, which
    // DeepSpeed accepts (runtime/zero/config.py: ge=0): no ipg buffer, every parameter
    // reduced alone, nothing prefetched
    let base6 = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"seq_len": 16}, "hardware": {"num_gpus": 6}});
    let im = check(
        "transformers_ds_config_zero3.json",
        base6,
        Format::Deepspeed,
        &[
            ("engine.zero_stage", json!(3)),
            ("engine.offload_optimizer", json!("cpu")),
            ("engine.offload_param", json!("cpu")),
            ("engine.reduce_bucket_size", json!(0)),
            ("engine.stage3_prefetch_bucket_size", json!(0)),
            ("engine.stage3_param_persistence_threshold", json!(0)),
            ("engine.stage3_max_live_parameters", json!(1_000_000_000)),
            ("engine.sub_group_size", json!(100_000_000_000_000u64)),
            ("training.precision", json!("amp_fp16")),
            ("training.optimizer", json!("adamw")),
        ],
    );
    // the file sets the optimizer: not listed as taken from the base
    assert!(!im.from_base.iter().any(|k| k == "training.optimizer"));
    assert!(im.from_base.iter().any(|k| k == "model"));
    // each parameter is a bucket of its own; reduce_scatter_coalesced flattens one only
    // when its elements do not divide over the 6 ranks. Llama-3.1-8B's largest such is an
    // MLP matrix: 14336 x 4096 = 58720256 elements, padded to 6 x ceil(58720256 / 6) =
    // 58720260, fp16 gradients: 117440520 B at the last layer's backward (seq 16: the loss
    // is small, so that moment is the peak). The embedding and LM head, 128256 x 4096,
    // divide by 6 (128256 = 6 x 21376) and are reduced in place.
    let est = estimate(&im.config).unwrap();
    let bwd = est
        .phases
        .iter()
        .find(|p| p.phase == calc_core::PhaseName::Backward)
        .unwrap();
    assert_eq!(bwd.components["communication_buffers"], 117_440_520);
}

#[test]
fn accelerate_files_as_published() {
    let base = json!({"model": {"preset": "llama-3.1-8b"}, "training": {"activation_checkpointing": "full"}});
    let im = check(
        "accelerate_fsdp.yaml",
        base.clone(),
        Format::Accelerate,
        &[
            ("engine.type", json!("fsdp")),
            ("engine.fsdp_version", json!(1)),
            ("engine.sharding_strategy", json!("FULL_SHARD")),
            ("engine.cpu_offload", json!(false)),
            ("training.precision", json!("amp_bf16")),
            ("training.activation_checkpointing", json!("none")),
            ("hardware.num_gpus", json!(2)),
        ],
    );
    assert!(ignored(&im, "fsdp_config.fsdp_backward_prefetch"));
    // the DeepSpeed plugin with a config file: the file is a path, not followed; the stage
    // stays the base's (0 by default)
    let im = check(
        "accelerate_deepspeed.yaml",
        base,
        Format::Accelerate,
        &[
            ("engine.type", json!("deepspeed")),
            ("hardware.num_gpus", json!(2)),
        ],
    );
    assert!(ignored(&im, "deepspeed_config.deepspeed_config_file"));
}

#[test]
fn torchtune_files_as_published() {
    // single device: the base has one GPU
    let im = check(
        "torchtune_llama3_1_8B_qlora_single_device.yaml",
        json!({"hardware": {"num_gpus": 1}}),
        Format::Torchtune,
        &[
            ("model.preset", json!("llama-3.1-8b")),
            ("engine.type", json!("ddp")),
            ("training.precision", json!("bf16")),
            ("training.micro_batch_size", json!(2)),
            ("training.gradient_accumulation_steps", json!(16)),
            ("training.lora.rank", json!(8)),
            ("training.lora.alpha", json!(16.0)),
            ("training.lora.base_weight_format", json!("nf4")),
            ("training.lora.adapters_fp32", json!(false)),
            (
                "training.lora.target_modules",
                json!([
                    "q_proj",
                    "v_proj",
                    "k_proj",
                    "o_proj",
                    "gate_proj",
                    "up_proj",
                    "down_proj"
                ]),
            ),
            ("training.optimizer", json!("adamw")),
            ("training.optimizer_impl", json!("fused")),
            ("training.loss", json!("chunked")),
            ("training.activation_checkpointing", json!("full")),
        ],
    );
    assert!(ignored(&im, "tokenizer.max_seq_len"));
    // the distributed full fine-tune on 4 GPUs (its launch line: --nproc_per_node 4)
    check(
        "torchtune_llama3_1_8B_full.yaml",
        json!({"hardware": {"num_gpus": 4}}),
        Format::Torchtune,
        &[
            ("engine.type", json!("fsdp")),
            ("engine.fsdp_version", json!(2)),
            ("training.optimizer_impl", json!("for_loop")),
            ("training.loss", json!("standard")),
            ("training.precision", json!("bf16")),
            ("training.micro_batch_size", json!(2)),
        ],
    );
}

#[test]
fn axolotl_files_as_published() {
    // NousResearch/Meta-Llama-3-8B is not a preset: the model is the base's
    let im = check(
        "axolotl_llama3_lora_8b.yml",
        json!({"model": {"preset": "llama-3.1-8b"}}),
        Format::Axolotl,
        &[
            ("training.seq_len", json!(4096)),
            ("training.micro_batch_size", json!(2)),
            ("training.gradient_accumulation_steps", json!(4)),
            ("training.precision", json!("bf16")),
            ("training.optimizer", json!("adamw_8bit")),
            ("training.attention", json!("flash")),
            ("training.activation_checkpointing", json!("full")),
            ("training.lora.base_weight_format", json!("int8")),
            ("training.lora.rank", json!(32)),
            ("training.lora.target_modules", json!("all-linear")),
            ("engine.type", json!("ddp")),
        ],
    );
    assert!(ignored(&im, "base_model"));
    check(
        "axolotl_llama3_qlora_fsdp_70b.yaml",
        json!({"model": {"preset": "llama-3.1-70b"}, "hardware": {"num_gpus": 2}}),
        Format::Axolotl,
        &[
            ("engine.type", json!("fsdp")),
            ("engine.fsdp_version", json!(1)),
            ("engine.cpu_offload", json!(true)),
            ("training.lora.base_weight_format", json!("nf4")),
            ("training.seq_len", json!(512)),
            ("training.optimizer", json!("adamw")),
        ],
    );
}

#[test]
fn torchtitan_files_as_published() {
    // 64 GPUs (the files' own note); the shard degree -1 takes the rest
    let base = json!({"hardware": {"num_gpus": 64, "gpu": "a100-80gb"}});
    check(
        "torchtitan_llama3_8b.toml",
        base.clone(),
        Format::Torchtitan,
        &[
            ("model.preset", json!("llama-3.1-8b")),
            ("engine.type", json!("fsdp")),
            ("engine.fsdp_version", json!(2)),
            ("training.micro_batch_size", json!(1)),
            ("training.seq_len", json!(8192)),
            ("training.activation_checkpointing", json!("selective_op")),
            ("training.precision", json!("amp_bf16")),
            ("hardware.num_gpus", json!(64)),
        ],
    );
    check(
        "torchtitan_llama3_70b.toml",
        base,
        Format::Torchtitan,
        &[
            ("model.preset", json!("llama-3.1-70b")),
            ("parallelism.tensor_parallel_size", json!(8)),
            ("parallelism.sequence_parallel", json!(true)),
            ("training.micro_batch_size", json!(8)),
            ("training.activation_checkpointing", json!("full")),
        ],
    );
}

/// A torchtitan job config for `model` (name, flavor) with a `[parallelism]` block.
fn titan(name: &str, flavor: &str, parallelism: &str) -> String {
    format!(
        "[model]\nname = \"{name}\"\nflavor = \"{flavor}\"\n[training]\nlocal_batch_size = 8\nseq_len = 8192\n[parallelism]\ndata_parallel_shard_degree = 8\ntensor_parallel_degree = 8\npipeline_parallel_microbatch_size = 1\n{parallelism}"
    )
}

#[test]
fn torchtitan_float8_all_gather_in_both_spellings() {
    let base = cfg(json!({"hardware": {"gpu": "h100-80gb"}}));
    let read = |extra: &str| {
        let text = format!("{}{extra}", titan("llama3", "8B", ""));
        import(&text, &base, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
    };
    let float8_all_gather = |im: &calc_core::formats::Imported| match &im.config.engine {
        calc_core::config::Engine::Fsdp(f) => f.float8_all_gather,
        e => panic!("{e:?}"),
    };
    // torchtitan at the end of 2024 (train_configs/llama3_405b.toml at 9dec370): float8
    // switched on and its all-gather in [float8]
    let im = read("[float8]\nenable_float8_linear = true\nenable_fsdp_float8_all_gather = true\n");
    assert_eq!(
        im.config.training.precision,
        calc_core::config::Precision::Fp8
    );
    assert!(float8_all_gather(&im));
    // ... whose degrees are in [training] and [experimental]: the same settings (that file
    // on the 128 GPUs it names: TP 8 x the rest as data-parallel shards)
    let legacy = "[model]\nname = \"llama3\"\nflavor = \"405B\"\n[training]\nbatch_size = 2\nseq_len = 8192\ndata_parallel_replicate_degree = 1\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 8\n[experimental]\ncontext_parallel_degree = 1\npipeline_parallel_degree = 1\nenable_async_tensor_parallel = true\n[float8]\nenable_float8_linear = true\nenable_fsdp_float8_all_gather = true\nprecompute_float8_dynamic_scale_for_fsdp = true\n";
    let base128 = cfg(json!({"hardware": {"gpu": "h100-80gb", "num_gpus": 128}}));
    let im = import(legacy, &base128, None).unwrap_or_else(|e| panic!("{e:?}"));
    let p = &im.config.parallelism;
    assert_eq!((p.tensor_parallel_size, p.pipeline_parallel_size), (8, 1));
    assert_eq!(im.config.hardware.num_gpus, Some(128));
    assert!(float8_all_gather(&im));
    assert!(
        im.read
            .iter()
            .any(|m| m.from == "training.tensor_parallel_degree"),
        "{:?}",
        im.read
    );
    // 2025: the converter and [quantize.linear.float8]; without a float8 converter there is
    // nothing to gather in float8: not read, and why
    let im = read("[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n");
    assert!(!float8_all_gather(&im));
    ignored_because(
        &im,
        "quantize.linear.float8.enable_fsdp_float8_all_gather",
        "no float8 converter",
    );
    let text = titan("llama3", "8B", "").replace(
        "flavor = \"8B\"\n",
        "flavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n",
    ) + "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n";
    let im = import(&text, &base, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(
        im.config.training.precision,
        calc_core::config::Precision::Fp8
    );
    assert!(float8_all_gather(&im));
}

#[test]
fn torchtitan_pipeline_split_as_torchtitan_runs_it() {
    let base = cfg(json!({"hardware": {"gpu": "h100-80gb"}}));
    let par = |im: &calc_core::formats::Imported| {
        let p = &im.config.parallelism;
        (
            p.first_pipeline_stage_layers,
            p.last_pipeline_stage_layers,
            p.virtual_pipeline_parallel_size,
        )
    };
    let ok = |text: &str| import(text, &base, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let err = |text: &str| {
        let e = import(text, &base, None).expect_err(text);
        (e[0].field.clone(), e[0].message.clone())
    };
    // no modules named: generate_llm_fqn_per_model_part counts the embedding and the
    // output as one layer each, 126 + 2 = 128 over 8 stages = 16, less one at each end
    let im = ok(&titan(
        "llama3",
        "405B",
        "pipeline_parallel_degree = 8\npipeline_parallel_schedule = \"1F1B\"\n",
    ));
    assert_eq!(par(&im), (Some(15), Some(15), None));
    // 32 + 2 = 34 over 2 stages: 17 - 1 = 16 each, an even split
    let im = ok(&titan("llama3", "8B", "pipeline_parallel_degree = 2\n"));
    assert_eq!(par(&im), (None, None, None));
    // 34 over 4: 9, 9, 8, 8 less the ends = 8 / 9 / 8 / 7, which the schema cannot hold;
    // first_stage_less_layers 1 and last 0 (33 over 4: 9, 8, 8, 8, less 1 first) can
    let (field, message) = err(&titan("llama3", "8B", "pipeline_parallel_degree = 4\n"));
    assert_eq!(field, "parallelism.pipeline_parallel_degree");
    assert!(
        message.contains("model parts of 8 / 9 / 8 / 7 layers"),
        "{message}"
    );
    assert!(
        message.contains("pipeline_parallel_first_stage_less_layers = 1 and pipeline_parallel_last_stage_less_layers = 0 give 8 / 8 / 8 / 8"),
        "{message}"
    );
    let im = ok(&titan(
        "llama3",
        "8B",
        "pipeline_parallel_degree = 4\npipeline_parallel_first_stage_less_layers = 1\npipeline_parallel_last_stage_less_layers = 0\n",
    ));
    assert_eq!(par(&im), (None, None, None));
    // Interleaved1F1B: two stages per rank, 128 over 16 = 8 less the ends: 7 / 8 x 14 / 7,
    // so rank 0 holds parts 0 and 8 of 7 and 8 layers (TT-5b's split)
    let (_, message) = err(&titan(
        "llama3",
        "405B",
        "pipeline_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\n",
    ));
    assert!(
        message.contains("rank 0 would hold model parts of 7 and 8 layers"),
        "{message}"
    );
    // pipeline_parallel_layers_per_stage 4: ceil(34 / 4) = 9 stages, not a multiple of 4
    // ranks; 17: 2 stages on 2 ranks, one each (1F1B)
    let (_, message) = err(&titan(
        "llama3",
        "8B",
        "pipeline_parallel_degree = 4\npipeline_parallel_layers_per_stage = 4\n",
    ));
    assert!(message.contains("9 model parts do not divide"), "{message}");
    // the modules named: 16 / 16 x 6 / 14 layers as 8-layer parts, 7 on the last rank
    let mut next = 0;
    let parts: Vec<Vec<String>> = (0..16u64)
        .map(|k| {
            // part k runs on rank k mod 8: 16 layers in two parts of 8, 14 in two of 7
            let len = if k % 8 == 7 { 7 } else { 8 };
            let mut names: Vec<String> =
                (next..next + len).map(|i| format!("layers.{i}")).collect();
            next += len;
            if k == 0 {
                names.insert(0, "tok_embeddings".into());
            }
            if k == 15 {
                names.extend(["norm".into(), "output".into()]);
            }
            names
        })
        .collect();
    assert_eq!(next, 126);
    let fqns = format!(
        "pipeline_parallel_degree = 8\npipeline_parallel_schedule = \"Interleaved1F1B\"\nmodule_fqns_per_model_part = {}\n",
        serde_json::to_string(&parts).unwrap()
    );
    let im = ok(&titan("llama3", "405B", &fqns));
    assert_eq!(par(&im), (Some(16), Some(14), Some(2)));
    // the same split exported writes the same parts
    let text = export(&im.config, Format::Torchtitan).unwrap();
    for (k, part) in parts.iter().enumerate() {
        assert!(
            text.contains(
                &serde_json::to_string(part)
                    .unwrap()
                    .replace("\",\"", "\", \"")
            ),
            "part {k}\n{text}"
        );
    }
    // sizes no file means are errors, not overflows
    for par in [
        "pipeline_parallel_degree = 8\npipeline_parallel_first_stage_less_layers = 18446744073709551615\n",
        "pipeline_parallel_degree = 8\npipeline_parallel_layers_per_stage = 1\npipeline_parallel_last_stage_less_layers = 18446744073709551615\n",
        "pipeline_parallel_degree = 9223372036854775807\npipeline_parallel_schedule = \"Interleaved1F1B\"\n",
    ] {
        err(&titan("llama3", "8B", par));
    }
    // a layer out of order, or the head before the last part, is refused
    let swapped = fqns.replacen("\"layers.8\"", "\"layers.9\"", 1);
    let (field, message) = err(&titan("llama3", "405B", &swapped));
    assert_eq!(field, "parallelism.module_fqns_per_model_part");
    assert!(message.contains("expected layers.8"), "{message}");
}

#[test]
fn torchtitan_2024_pipeline_keys() {
    // torchtitan until early 2025 (9dec370): the pipeline in [experimental], its local
    // batch (training.batch_size) split into pipeline_parallel_microbatches micro-batches
    // (default: the pipeline degree), stages started at pipeline_parallel_split_points or
    // cut by generate_split_points
    let base = cfg(json!({"hardware": {"gpu": "h100-80gb"}}));
    let legacy = |batch: u64, experimental: &str| {
        format!(
            "[model]\nname = \"llama3\"\nflavor = \"405B\"\n[training]\nbatch_size = {batch}\nseq_len = 8192\ndata_parallel_shard_degree = 8\ntensor_parallel_degree = 8\n[experimental]\npipeline_parallel_degree = 8\n{experimental}"
        )
    };
    let ok = |text: &str| import(text, &base, None).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let err = |text: &str| {
        let e = import(text, &base, None).expect_err(text);
        (e[0].field.clone(), e[0].message.clone())
    };
    let shape = |im: &calc_core::formats::Imported| {
        let (t, p) = (&im.config.training, &im.config.parallelism);
        (
            t.micro_batch_size,
            t.gradient_accumulation_steps,
            p.first_pipeline_stage_layers,
            p.last_pipeline_stage_layers,
            p.virtual_pipeline_parallel_size,
        )
    };
    // TT-5a's layout: FSDP 8 x TP 8 x PP 8 (512 GPUs), local batch 32 in 32 micro-batches;
    // generate_split_points: 126 layers over 8 stages, 15 each and the remainder, 6, one
    // more on stages 1-6: 15 / 16 x 6 / 15
    let im = ok(&legacy(
        32,
        "pipeline_parallel_microbatches = 32\npipeline_parallel_schedule = \"1F1B\"\n",
    ));
    assert_eq!(shape(&im), (1, 32, Some(15), Some(15), None));
    let p = &im.config.parallelism;
    assert_eq!((p.tensor_parallel_size, p.pipeline_parallel_size), (8, 8));
    assert_eq!(im.config.hardware.num_gpus, Some(512));
    assert!(
        im.read.iter().any(|m| m
            .from
            .starts_with("experimental.pipeline_parallel_microbatches")),
        "{:?}",
        im.read
    );
    // a later version's split key beside the 2024 layout is not read, and says why
    let mixed = legacy(32, "pipeline_parallel_microbatches = 32\n")
        + "[parallelism]\npipeline_parallel_first_stage_less_layers = 2\n";
    let im = ok(&mixed);
    assert_eq!(shape(&im), (1, 32, Some(15), Some(15), None));
    ignored_because(
        &im,
        "parallelism.pipeline_parallel_first_stage_less_layers",
        "2024 layout",
    );
    // without the count, as many micro-batches as stages: a local batch of 16 in 8 of 2
    let im = ok(&legacy(16, ""));
    assert_eq!(shape(&im).0, 2);
    assert_eq!(shape(&im).1, 8);
    // a local batch the micro-batches do not divide is torchtitan's error too
    let (field, message) = err(&legacy(2, ""));
    assert_eq!(field, "training.batch_size");
    assert!(message.contains("8 pipeline micro-batches"), "{message}");
    // Interleaved1F1B: 16 stages of 7, then 8 on stages 1-14, 7 left: rank 0 holds 7 and 8
    let interleaved = "pipeline_parallel_schedule = \"Interleaved1F1B\"\n";
    let (field, message) = err(&legacy(32, interleaved));
    assert_eq!(field, "experimental.pipeline_parallel_degree");
    assert!(
        message.contains("rank 0 would hold model parts of 7 and 8 layers")
            && message.contains("experimental.pipeline_parallel_split_points"),
        "{message}"
    );
    // split points the schema holds: 7, 8 x 7, 7, 8 x 7 (rank k runs stages k and k + 8):
    // rank 0 14 layers, the others 16; 8 micro-batches (the degree) of 4
    let counts = [7u64, 8, 8, 8, 8, 8, 8, 8, 7, 8, 8, 8, 8, 8, 8, 8];
    let points: Vec<String> = counts
        .iter()
        .scan(0, |at, n| {
            *at += n;
            Some(format!("layers.{at}"))
        })
        .take(15)
        .collect();
    let text = legacy(
        32,
        &format!(
            "{interleaved}pipeline_parallel_split_points = {}\n",
            serde_json::to_string(&points).unwrap()
        ),
    );
    assert_eq!(shape(&ok(&text)), (4, 8, Some(14), Some(16), Some(2)));
    // a point out of order names the key
    let (field, message) = err(&text.replace("\"layers.7\"", "\"layers.0\""));
    assert_eq!(field, "experimental.pipeline_parallel_split_points");
    assert!(message.contains("\"layers.0\""), "{message}");
}

#[test]
fn megatron_command_line_as_published() {
    // GPT-3 175B: TP 8 x PP 16 on 128 GPUs, so data-parallel 1 and 1536 micro-batches of 1;
    // the model from its shape arguments over the base's Llama
    let im = check(
        "megatron_gpt3_175b.sh",
        json!({"model": {"preset": "llama-3.1-8b"}, "hardware": {"gpu": "a100-80gb"}}),
        Format::Megatron,
        &[
            ("engine.type", json!("megatron")),
            ("engine.distributed_optimizer", json!(false)),
            ("hardware.num_gpus", json!(128)),
            ("hardware.gpus_per_node", json!(8)),
            ("parallelism.tensor_parallel_size", json!(8)),
            ("parallelism.pipeline_parallel_size", json!(16)),
            ("training.micro_batch_size", json!(1)),
            ("training.gradient_accumulation_steps", json!(1536)),
            ("training.seq_len", json!(2048)),
            ("training.precision", json!("amp_fp16")),
            ("training.activation_checkpointing", json!("none")),
            // Megatron's defaults: LayerNorm, GeLU, biases, learned positions, tied output
            ("model.model_type", json!("gpt2")),
            ("model.num_hidden_layers", json!(96)),
            ("model.hidden_size", json!(12288)),
            ("model.num_attention_heads", json!(96)),
            ("model.num_key_value_heads", json!(96)),
            ("model.intermediate_size", json!(4 * 12288)),
            ("model.max_position_embeddings", json!(2048)),
            // GPT-2 BPE (the --vocab-file/--merge-file pair): 50257 padded to a multiple of
            // 128 x TP 8 = 1024: 50 x 1024
            ("model.vocab_size", json!(51_200)),
            ("model.tie_word_embeddings", json!(true)),
        ],
    );
    assert!(ignored(&im, "--lr") && ignored(&im, "--vocab-file"));
    assert!(!im.from_base.iter().any(|k| k == "model"));
    // per layer 12 h^2 + 13 h (QKV 3h^2 + 3h, projection h^2 + h, MLP 8h^2 + 5h, two
    // LayerNorms 4h) = 1812099072 at h 12288, x 96; embedding 51200 h, positions 2048 h,
    // final LayerNorm 2h: 174615846912, the paper's "174.6B"
    let est = estimate(&im.config).unwrap();
    assert_eq!(est.params.total, 174_615_846_912);
    // given separately, the model wins and every shape argument says so
    let im = import(
        &fixture("megatron_gpt3_175b.sh"),
        &cfg(json!({})),
        Some(&calc_core::config::ModelSpec::preset("gpt3-175b")),
    )
    .unwrap();
    assert_eq!(
        im.config.model,
        calc_core::config::ModelSpec::preset("gpt3-175b")
    );
    assert!(im.read.iter().all(|m| !m.to.starts_with("model")));
    assert!(ignored(&im, "--hidden-size") && ignored(&im, "--num-layers"));
}

#[test]
fn megatron_shape_arguments_without_a_family_keep_the_base_model() {
    let base = cfg(json!({"model": {"preset": "llama-3.1-8b"}, "hardware": {"num_gpus": 8}}));
    let llama = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \
        --num-attention-heads 32 --max-position-embeddings 8192 --swiglu --normalization RMSNorm \
        --position-embedding-type rope --disable-bias-linear --seq-length 8192";
    let why = |im: &calc_core::formats::Imported, k: &str| {
        im.ignored
            .iter()
            .find(|i| i.key == k)
            .map(|i| i.reason.clone())
            .unwrap_or_default()
    };
    // a tokenizer file of unknown size: the base's model, said at every shape argument
    let im = import(
        &format!("{llama} --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/x"),
        &base,
        None,
    )
    .unwrap();
    assert_eq!(im.config.model, base.model);
    assert!(
        why(&im, "--hidden-size").contains("--vocab-size"),
        "{:?}",
        im.ignored
    );
    assert!(why(&im, "--num-layers").contains("the model is the base's"));
    // with --vocab-size it builds Llama-3.1-8B's shape: 128256 is a multiple of 128 x TP 1;
    // --ffn-hidden-size left out is int(8 x 4096 / 3 / 64) x 64 = 10880 (arguments.py)
    let im = import(
        &format!("{llama} --vocab-size 128256 --group-query-attention --num-query-groups 8"),
        &base,
        None,
    )
    .unwrap();
    let m = serde_json::to_value(&im.config.model).unwrap();
    assert_eq!(m["model_type"], "llama");
    assert_eq!(m["intermediate_size"], 10880);
    assert_eq!(m["num_key_value_heads"], 8);
    assert_eq!(m["vocab_size"], 128_256);
    // SwiGLU with LayerNorm: no family here has it
    let im = import("pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 128 --swiglu --vocab-size 1000", &base, None).unwrap();
    assert_eq!(im.config.model, base.model);
    assert!(
        why(&im, "--swiglu").contains("no model family here has this mix (MLP SwiGLU, LayerNorm"),
        "{:?}",
        im.ignored
    );
}

#[test]
fn trainer_script_command_lines_as_published() {
    // transformers' language-modeling README: run_clm.py on GPT-2 with no batch flags, so
    // TrainingArguments' defaults (per_device_train_batch_size 8, fp32, adamw_torch)
    let im = check(
        "hf_trainer_run_clm_gpt2.sh",
        json!({}),
        Format::HfTrainer,
        &[
            ("model.preset", json!("gpt2")),
            ("engine.type", json!("ddp")),
            ("training.micro_batch_size", json!(8)),
            ("training.gradient_accumulation_steps", json!(1)),
            ("training.precision", json!("fp32")),
            ("training.optimizer", json!("adamw")),
            ("training.optimizer_impl", json!("foreach")),
            ("training.activation_checkpointing", json!("none")),
        ],
    );
    assert!(ignored(&im, "dataset_name") && ignored(&im, "output_dir"));
    // transformers' DeepSpeed guide, single GPU: the ds_config is a path (not followed), T5 is
    // not a preset (the base's model)
    let im = check(
        "hf_trainer_run_translation_deepspeed.sh",
        json!({"model": {"preset": "llama-3.2-1b"}, "engine": {"type": "deepspeed", "zero_stage": 2}, "hardware": {"num_gpus": 1}}),
        Format::HfTrainer,
        &[
            ("model.preset", json!("llama-3.2-1b")),
            ("engine.type", json!("deepspeed")),
            ("engine.zero_stage", json!(2)),
            ("training.micro_batch_size", json!(1)),
            ("training.precision", json!("amp_fp16")),
        ],
    );
    assert!(ignored(&im, "deepspeed") && ignored(&im, "model_name_or_path"));
}

#[test]
fn megatron_moe_command_line_as_published() {
    // Mixtral 8x7B: PP 4 x EP 8 on 32 GPUs (4 nodes of 8), so data-parallel 8 and a global
    // batch of 256 = 1 x 8 x 32 micro-batches
    let im = check(
        "megatron_mixtral_8x7b.sh",
        json!({"model": {"preset": "llama-3.1-8b"}, "hardware": {"gpu": "h100-80gb"}}),
        Format::Megatron,
        &[
            ("engine.type", json!("megatron")),
            ("engine.distributed_optimizer", json!(true)),
            ("hardware.num_gpus", json!(32)),
            ("hardware.gpus_per_node", json!(8)),
            ("parallelism.tensor_parallel_size", json!(1)),
            ("parallelism.pipeline_parallel_size", json!(4)),
            ("parallelism.expert_parallel_size", json!(8)),
            ("parallelism.sequence_parallel", json!(true)),
            ("training.micro_batch_size", json!(1)),
            ("training.gradient_accumulation_steps", json!(32)),
            ("training.seq_len", json!(4096)),
            ("training.precision", json!("amp_bf16")),
            ("training.activation_checkpointing", json!("none")),
            // SwiGLU, RMSNorm, RoPE, no biases, 8 experts: Mixtral's own shape
            ("model.model_type", json!("mixtral")),
            ("model.num_hidden_layers", json!(32)),
            ("model.hidden_size", json!(4096)),
            ("model.num_key_value_heads", json!(8)),
            ("model.intermediate_size", json!(14336)),
            ("model.vocab_size", json!(32_000)),
            ("model.tie_word_embeddings", json!(false)),
            ("model.num_local_experts", json!(8)),
            ("model.num_experts_per_tok", json!(2)),
        ],
    );
    assert!(ignored(&im, "--moe-grouped-gemm") && ignored(&im, "--tokenizer-model"));
    // the same parameters as the Mixtral-8x7B preset (HF's config.json)
    let preset =
        cfg(json!({"model": {"preset": "mixtral-8x7b-v0.1"}, "hardware": {"num_gpus": 32}}));
    assert_eq!(
        estimate(&im.config).unwrap().params,
        estimate(&preset).unwrap().params
    );
    let why = |k: &str| {
        im.ignored
            .iter()
            .find(|i| i.key == k)
            .unwrap()
            .reason
            .clone()
    };
    assert!(why("--moe-router-load-balancing-type").contains("balancing loss"));
}

#[test]
fn serving_command_lines_as_published() {
    // vLLM's parallelism guide: "Eight GPUs total" (its comment line is skipped)
    let im = check(
        "vllm_gpt2_tp4_pp2.sh",
        json!({"mode": "inference"}),
        Format::Vllm,
        &[
            ("model.preset", json!("gpt2")),
            ("parallelism.tensor_parallel_size", json!(4)),
            ("parallelism.pipeline_parallel_size", json!(2)),
            ("hardware.num_gpus", json!(8)),
        ],
    );
    assert!(im.ignored.is_empty());
    // two nodes of 8: a model path, so the model is the base's
    let im = check(
        "vllm_tp8_pp2_two_nodes.sh",
        json!({"mode": "inference", "model": {"preset": "llama-3.1-70b"}}),
        Format::Vllm,
        &[
            ("model.preset", json!("llama-3.1-70b")),
            ("parallelism.tensor_parallel_size", json!(8)),
            ("parallelism.pipeline_parallel_size", json!(2)),
            ("hardware.num_gpus", json!(16)),
        ],
    );
    assert!(ignored(&im, "MODEL (positional)"));
    // SGLang's server arguments page: TP 4 over two nodes, and a smaller static fraction
    let im = check(
        "sglang_llama3_8b_tp4_two_nodes.sh",
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"}}),
        Format::Sglang,
        &[
            ("inference.engine", json!("sglang")),
            ("parallelism.tensor_parallel_size", json!(4)),
            ("hardware.num_gpus", json!(4)),
        ],
    );
    assert!(ignored(&im, "--model-path") && ignored(&im, "--nnodes"));
    check(
        "sglang_llama3_8b_mem_fraction.sh",
        json!({"mode": "inference", "model": {"preset": "llama-3.1-8b"}}),
        Format::Sglang,
        &[
            ("inference.engine", json!("sglang")),
            ("inference.mem_fraction_static", json!(0.7)),
            ("hardware.num_gpus", json!(1)),
        ],
    );
}

#[test]
fn command_lines_and_unknown_files() {
    // vLLM's documented distributed serving line (docs/serving/distributed_serving.md)
    let im = import(
        "vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 --pipeline-parallel-size 2",
        &Config::default(),
        None,
    )
    .unwrap();
    assert_eq!(im.format, Format::Vllm);
    let doc = serde_json::to_value(&im.config).unwrap();
    assert_eq!(doc["mode"], json!("inference"));
    assert_eq!(doc["model"]["preset"], json!("llama-3.1-70b"));
    assert_eq!(doc["hardware"]["num_gpus"], json!(8));
    // SGLang's documented launch (docs: --model-path ... --tp 2)
    let im = import(
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --tp 2 --port 30000",
        &Config::default(),
        None,
    )
    .unwrap();
    assert_eq!(im.format, Format::Sglang);
    assert!(ignored(&im, "--port"));
    let doc = serde_json::to_value(&im.config).unwrap();
    assert_eq!(doc["parallelism"]["tensor_parallel_size"], json!(2));
    // --model wins over the file's model
    let m = calc_core::config::ModelSpec(
        json!({"preset": "llama-3.1-8b"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let im = import(
        "vllm serve meta-llama/Llama-3.1-70B",
        &Config::default(),
        Some(&m),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&im.config).unwrap()["model"]["preset"],
        json!("llama-3.1-8b")
    );
    // what is not recognised says which formats are
    let e = recognise("hello: world").unwrap_err();
    assert_eq!(e.field, "file");
    assert!(
        e.message.contains("DeepSpeed ds_config.json"),
        "{}",
        e.message
    );
    // a value we cannot represent is fatal at the file's key
    let e = import(
        r#"{"zero_optimization": {"stage": 4}}"#,
        &Config::default(),
        None,
    )
    .unwrap_err();
    assert_eq!(e[0].field, "zero_optimization.stage");
}
